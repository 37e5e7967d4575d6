(function () {
  "use strict";
  // The table's rows are packed data (html.py): inflated once, then sorted and filtered over every
  // case and shown a page at a time, each case a <tbody> of its summary row and its detail row. A
  // 5,280-case table as markup took Chromium 8 s to open; a page of it takes milliseconds.
  var store = document.getElementById("report-data");
  var table = document.getElementById("cases");
  if (!store || !table) return;
  var PAGE = Number(store.getAttribute("data-page"));
  var CHUNK = Number(store.getAttribute("data-chunk"));
  var chunks = Array.prototype.map.call(store.querySelectorAll("data.details"), function (d) { return d.value; });
  var filter = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var expand = document.getElementById("expand");
  var pagers = Array.prototype.slice.call(document.querySelectorAll(".pager"));
  var chips = Array.prototype.slice.call(document.querySelectorAll(".chip[data-status]"));
  var wanted = {};  // verdict statuses picked with the chips; none picked: all
  var rows = [], byKey = {}, order = [], visible = [], page = 0;
  var opened = {};  // row index -> true: open, kept across pages, sorts and filters
  var inflated = {};  // detail chunk -> the promise of its cases' panels

  function unpack(packed) {
    var bytes = Uint8Array.from(atob(packed), function (c) { return c.charCodeAt(0); });
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }

  function say(message) {
    var status = document.getElementById("status");
    status.hidden = false;
    status.textContent = message;
  }

  function el(parent, tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // A row's <tbody>: [key, name, [parameters], statuses, search, cells], each cell
  // [text, sort, class, note, title, badge] (html.py's _row_data).
  function body(row) {
    var tb = el(null, "tbody");
    tb.id = row.key;
    tb.setAttribute("data-status", row.statuses);
    tb.row = row;
    var tr = el(tb, "tr", "case");
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", "false");
    var th = el(tr, "th");
    th.scope = "row";
    var id = el(th, "span", "id", row.name);
    el(id, "span", "grid", row.grid);
    row.cells.forEach(function (c) {
      var td = el(tr, "td", c[2] || "");
      td.setAttribute("data-sort", c[1] || "");
      if (c[4]) td.title = c[4];
      if (c[5]) { el(td, "span", "badge v-" + c[5], c[0]); return; }
      td.textContent = c[0];
      if (c[3]) { td.appendChild(document.createTextNode(" ")); el(td, "small", "", c[3]); }
    });
    var detail = el(tb, "tr", "detail");
    detail.hidden = true;
    el(detail, "td").colSpan = 1 + row.cells.length;
    if (opened[row.index]) toggle(tb, true);
    return tb;
  }

  // Details: built from the case's chunk of packed panels the first time it is opened.
  function toggle(tb, open) {
    var row = tb.rows[0], detail = tb.rows[1];
    var want = open === undefined ? row.getAttribute("aria-expanded") !== "true" : open;
    row.setAttribute("aria-expanded", want ? "true" : "false");
    detail.hidden = !want;
    if (want) opened[tb.row.index] = true; else delete opened[tb.row.index];
    if (!want || detail.hasAttribute("data-built")) return;
    detail.setAttribute("data-built", "");
    var n = tb.row.index, chunk = Math.floor(n / CHUNK);
    if (!inflated[chunk]) inflated[chunk] = unpack(chunks[chunk]);
    inflated[chunk].then(function (panels) {
      var box = el(detail.cells[0], "div", "panels");
      perfguardPanels(box, panels[n % CHUNK]);
      detail.setAttribute("data-built", "done");
    }).catch(function (e) { say("This case's details could not be read: " + e); });
  }

  function show() {
    var pages = Math.max(1, Math.ceil(visible.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    Array.prototype.slice.call(table.tBodies).forEach(function (tb) { table.removeChild(tb); });
    var part = document.createDocumentFragment();
    visible.slice(page * PAGE, (page + 1) * PAGE).forEach(function (row) { part.appendChild(body(row)); });
    table.appendChild(part);
    shown.textContent = visible.length + " of " + rows.length + " cases";
    var first = page * PAGE + 1, last = Math.min((page + 1) * PAGE, visible.length);
    pagers.forEach(function (nav) {
      nav.hidden = visible.length <= PAGE;
      nav.querySelector(".where").textContent = "rows " + first + "–" + last + " of " + visible.length +
        " (page " + (page + 1) + " of " + pages + ")";
      nav.querySelector("[data-step='-1']").disabled = page === 0;
      nav.querySelector("[data-step='1']").disabled = page === pages - 1;
    });
    expand.textContent = "expand all";
  }

  function apply() {
    var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    var picked = Object.keys(wanted);
    visible = order.filter(function (row) {
      return terms.every(function (t) { return row.search.indexOf(t) !== -1; }) &&
        (!picked.length || row.statuses.split(" ").some(function (s) { return wanted[s]; }));
    });
    page = 0;
    show();
  }

  function setup(data) {
    rows = data.map(function (r, i) {
      var row = { index: i, key: r[0], name: r[1], grid: r[2], statuses: r[3], search: r[4], cells: r[5] };
      byKey[row.key] = row;
      return row;
    });
    order = rows.slice();
    apply();
    filter.addEventListener("input", apply);
    chips.forEach(function (chip) {
      chip.addEventListener("click", function () {
        var s = chip.getAttribute("data-status");
        if (wanted[s]) delete wanted[s]; else wanted[s] = true;
        chip.setAttribute("aria-pressed", wanted[s] ? "true" : "false");
        apply();
      });
    });
    pagers.forEach(function (nav) {
      nav.addEventListener("click", function (e) {
        var button = e.target.closest("button[data-step]");
        if (!button) return;
        page += Number(button.getAttribute("data-step"));
        show();
        if (nav !== pagers[0]) table.scrollIntoView();
      });
    });
    sorting();
    table.setAttribute("data-state", "ready");
    performance.mark("perfguard-rows");  // benchmarks/report_scale.py's open time ends here
    if (location.hash) reveal(location.hash.slice(1));
  }

  // Sorting every case, not a page: by each cell's sort figure, numbers as numbers; cells without one
  // sort last either way. The case column sorts by its text.
  function sorting() {
    var heads = Array.prototype.slice.call(table.querySelectorAll("thead th[data-col]"));
    heads.forEach(function (th) {
      th.addEventListener("click", function () {
        var col = Number(th.getAttribute("data-col"));
        var numeric = th.getAttribute("data-type") === "num";
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        heads.forEach(function (h) { h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var keyed = order.map(function (row, i) {
          var raw = col === 0 ? row.name + row.grid : row.cells[col - 1][1] || "";
          var key = raw === "" ? null : (numeric ? Number(raw) : raw.toLowerCase());
          return { row: row, key: key, i: i };
        });
        keyed.sort(function (a, b) {
          if (a.key === null || b.key === null) return (a.key === null) - (b.key === null) || a.i - b.i;
          if (a.key < b.key) return -dir;
          if (a.key > b.key) return dir;
          return a.i - b.i;
        });
        order = keyed.map(function (k) { return k.row; });
        apply();
      });
    });
  }

  table.addEventListener("click", function (e) {
    var row = e.target.closest("tr.case");
    if (row) toggle(row.parentNode);
  });
  table.addEventListener("keydown", function (e) {
    var row = e.target.closest("tr.case");
    if (row && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); toggle(row.parentNode); }
  });
  expand.addEventListener("click", function () {
    var open = expand.textContent === "expand all";
    Array.prototype.forEach.call(table.tBodies, function (tb) { toggle(tb, open); });
    expand.textContent = open ? "collapse all" : "expand all";
  });

  // A roofline point or a link to #case-N shows that case's page, opens the case and scrolls to it;
  // a filter that hides it is cleared first.
  function reveal(key) {
    var row = byKey[key];
    if (!row) return;
    if (visible.indexOf(row) === -1) {
      filter.value = "";
      wanted = {};
      chips.forEach(function (chip) { chip.setAttribute("aria-pressed", "false"); });
      apply();
    }
    page = Math.floor(visible.indexOf(row) / PAGE);
    show();
    var tb = document.getElementById(key);
    toggle(tb, true);
    tb.scrollIntoView({ block: "center" });
  }
  document.querySelectorAll("circle[data-case]").forEach(function (c) {
    c.addEventListener("click", function () { reveal(c.getAttribute("data-case")); });
  });
  window.addEventListener("hashchange", function () { reveal(location.hash.slice(1)); });

  if (typeof DecompressionStream === "undefined") {
    table.setAttribute("data-state", "failed");
    say("This browser cannot unpack the table (it has no DecompressionStream: Chromium 80, Firefox 113 " +
        "and Safari 16.4 have it); what needs attention is listed above, and perfguard.md holds every case.");
    return;
  }
  unpack(store.querySelector("data.rows").value).then(setup).catch(function (e) {
    table.setAttribute("data-state", "failed");
    say("The table could not be read: " + e);
  });
})();
