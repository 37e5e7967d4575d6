(function () {
  "use strict";
  // Each case is a <tbody>: its summary row and its (hidden) detail row move and hide together.
  var table = document.getElementById("cases");
  if (!table) return;
  var bodies = Array.prototype.slice.call(table.tBodies);
  var filter = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var chips = Array.prototype.slice.call(document.querySelectorAll(".chip[data-status]"));
  var wanted = {};  // verdict statuses picked with the chips; none picked: all

  function apply() {
    var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    var picked = Object.keys(wanted);
    var n = 0;
    bodies.forEach(function (tb) {
      var text = tb.getAttribute("data-search");
      var statuses = tb.getAttribute("data-status").split(" ");
      var ok = terms.every(function (t) { return text.indexOf(t) !== -1; }) &&
        (!picked.length || statuses.some(function (s) { return wanted[s]; }));
      tb.hidden = !ok;
      if (ok) n += 1;
    });
    shown.textContent = n + " of " + bodies.length + " cases";
  }
  filter.addEventListener("input", apply);
  chips.forEach(function (chip) {
    chip.addEventListener("click", function () {
      var s = chip.getAttribute("data-status");
      if (wanted[s]) delete wanted[s]; else wanted[s] = true;
      chip.setAttribute("aria-pressed", wanted[s] ? "true" : "false");
      apply();
    });
  });

  // Sorting: by each cell's data-sort, numbers as numbers; cells without a figure sort last either way.
  var heads = Array.prototype.slice.call(table.querySelectorAll("thead th[data-col]"));
  heads.forEach(function (th) {
    th.addEventListener("click", function () {
      var col = Number(th.getAttribute("data-col"));
      var numeric = th.getAttribute("data-type") === "num";
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      heads.forEach(function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
      var keyed = bodies.map(function (tb, i) {
        var cell = tb.rows[0].cells[col];
        var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
        var key = raw === "" || raw === null ? null : (numeric ? Number(raw) : raw.toLowerCase());
        return { tb: tb, key: key, i: i };
      });
      keyed.sort(function (a, b) {
        if (a.key === null || b.key === null) return (a.key === null) - (b.key === null) || a.i - b.i;
        if (a.key < b.key) return -dir;
        if (a.key > b.key) return dir;
        return a.i - b.i;
      });
      bodies = keyed.map(function (k) { table.appendChild(k.tb); return k.tb; });
    });
  });

  // Details: click or Enter on a case row opens the row below it.
  function toggle(tb, open) {
    var row = tb.rows[0];
    var want = open === undefined ? row.getAttribute("aria-expanded") !== "true" : open;
    row.setAttribute("aria-expanded", want ? "true" : "false");
    tb.rows[1].hidden = !want;
  }
  table.addEventListener("click", function (e) {
    var row = e.target.closest("tr.case");
    if (row) toggle(row.parentNode);
  });
  table.addEventListener("keydown", function (e) {
    var row = e.target.closest("tr.case");
    if (row && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); toggle(row.parentNode); }
  });
  var expand = document.getElementById("expand");
  expand.addEventListener("click", function () {
    var open = expand.textContent === "expand all";
    bodies.forEach(function (tb) { if (!tb.hidden) toggle(tb, open); });
    expand.textContent = open ? "collapse all" : "expand all";
  });

  // A roofline point or a link to #case-N opens that case and scrolls to it.
  function reveal(id) {
    var tb = document.getElementById(id);
    if (!tb || tb.tagName !== "TBODY") return;
    tb.hidden = false;
    toggle(tb, true);
    tb.scrollIntoView({ block: "center" });
  }
  document.querySelectorAll("circle[data-case]").forEach(function (c) {
    c.addEventListener("click", function () { reveal(c.getAttribute("data-case")); });
  });
  window.addEventListener("hashchange", function () { reveal(location.hash.slice(1)); });
  if (location.hash) reveal(location.hash.slice(1));
})();
