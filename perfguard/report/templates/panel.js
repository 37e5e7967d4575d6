// A case's detail view, built from panels.py's data when the case is opened. Record text enters the
// DOM only as textContent or an attribute's value, never as markup: a case named like an image tag is
// shown as its characters.
var perfguardPanels = (function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(parent, tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(parent, tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  function text(parent, s) { parent.appendChild(document.createTextNode(s)); }

  function grid(parent, cls, head, rows) {
    var t = el(parent, "table", cls), tr = el(t, "tr");
    head.forEach(function (h) { el(tr, "th", "", h); });
    rows.forEach(function (r) {
      var row = el(t, "tr");
      r.forEach(function (v) { el(row, "td", "", v); });
    });
    return t;
  }

  function histogram(parent, h) {
    var fig = el(parent, "figure", "dist");
    var s = svg(fig, "svg", { "class": "hist", viewBox: "0 0 " + h.width + " " + h.height, width: h.width,
      height: h.height, role: "img", "aria-label": "samples" });
    svg(s, "rect", { "class": "ci", x: h.ci_x[0], width: Math.max(h.ci_x[1] - h.ci_x[0], 1), height: h.base });
    svg(s, "path", { "class": "bars", d: h.bars });
    svg(s, "path", { "class": "axis", d: "M0 " + h.base + "H" + h.width });
    svg(s, "path", { "class": "med", d: "M" + h.median_x + " 0V" + h.base });
    if (h.baseline_x !== null) svg(s, "path", { "class": "bl", d: "M" + h.baseline_x + " 0V" + h.base });
    svg(s, "text", { x: 1, y: h.height - 3 }, h.lo);
    svg(s, "text", { x: h.width - 1, y: h.height - 3, "text-anchor": "end" }, h.hi);
    var cap = el(fig, "figcaption");
    el(cap, "i", "k-med");
    text(cap, h.median);
    if (h.baseline) { el(cap, "i", "k-bl"); text(cap, h.baseline); }
    text(cap, h.rest);
  }

  function missing(parent, label, why) {
    var p = el(parent, "p", "extra");
    el(p, "b", "", label);
    text(p, " ");
    el(p, "span", "na", why);
  }

  function profile(parent, p) {
    if (p.profile) {
      el(parent, "h4", "", "profiler: top operators");
      grid(parent, "prof", p.profile[0], p.profile[1]);
    } else if (!p.profile_note) {
      missing(parent, "profiler, top operators:", "not captured (profile with --perfguard-profile)");
    }
    var n = p.profile_note;
    if (!n) return;
    var line = el(parent, "p", "extra prof-note");
    if (!p.profile) el(line, "b", "", "profiler: ");
    text(line, n.facts);
    // panels.py names a trace outside the report's folder (a `javascript:` one among them) without a link.
    if (n.trace) {
      text(line, (n.facts ? " · " : "") + "Chrome trace ");
      var a = el(line, "a", "", n.trace);
      a.setAttribute("href", n.trace);
      text(line, " (chrome://tracing or ui.perfetto.dev)");
    }
    if (n.problem) {
      text(line, n.facts || n.trace ? " " : "");
      el(line, "span", "warn", n.problem);
    }
  }

  // Where a time moved (details.where_tables): a table a person sorts by any column, a click on its
  // heading (again: the other way); cells sort by their figure, those without one last.
  function moved(parent, m) {
    el(parent, "h4", "", m.title);
    if (m.line) el(parent, "p", "extra", m.line);
    var t = el(parent, "table", "prof moved"), head = el(t, "tr");
    m.head.forEach(function (h, i) {
      var th = el(head, "th", "sortable", h);
      th.setAttribute("aria-sort", "none");
      th.addEventListener("click", function () { sortRows(t, i, th); });
    });
    m.rows.forEach(function (r) {
      var row = el(t, "tr", r[r.length - 1] ? "beyond" : "");
      r.slice(0, -1).forEach(function (c) {
        var td = el(row, "td", "", c[0]);
        td.setAttribute("data-sort", c[1] === null || c[1] === undefined ? "" : String(c[1]));
        if (c[2]) td.title = c[2];
      });
    });
  }

  function sortRows(t, i, th) {
    var dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;
    Array.prototype.forEach.call(t.rows[0].cells, function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(t.rows, 1);
    rows.sort(function (a, b) {
      var x = a.cells[i].getAttribute("data-sort"), y = b.cells[i].getAttribute("data-sort");
      if (x === "" || y === "") return (x === "") - (y === "");
      var nx = Number(x), ny = Number(y);
      return dir * (isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny);
    });
    rows.forEach(function (r) { r.parentNode.appendChild(r); });
  }

  function breakdown(parent, p) {
    if (!p.breakdown) { missing(parent, "memory at peak, by category:", p.breakdown_missing); return; }
    el(parent, "h4", "", "memory at peak, by category");
    var stack = el(parent, "div", "stack"), legend = el(parent, "p", "legend");
    p.breakdown.forEach(function (part, i) {
      var bar = el(stack, "span", "m" + (i % 9));
      bar.style.width = (100 * part[2]).toFixed(2) + "%";
      bar.title = part[0] + ": " + part[1];
      el(legend, "i", "m" + (i % 9));
      text(legend, part[0] + " " + part[1] + " (" + (100 * part[2]).toFixed(0) + "%) ");
    });
    if (p.breakdown_note) el(parent, "p", "extra", p.breakdown_note);
    if (p.breakdown_unnamed) el(parent, "p", "extra unnamed", p.breakdown_unnamed);
  }

  function panel(parent, p) {
    var box = el(parent, "div", "panel");
    if (p.device !== undefined) el(box, "h3", "", p.device);
    if (p.absent) { el(box, "p", "na", "not run on this device"); return; }
    var list = el(box, "ul", "verdicts");
    p.verdicts.forEach(function (v) {
      var li = el(list, "li");
      el(li, "span", "badge v-" + v[0], v[1] + " " + v[0]);
      text(li, " " + v[2]);
    });
    if (!p.verdicts.length) el(list, "li", "na", "no verdict: this record was not compared with a baseline");
    if (p.error) el(box, "pre", "err", p.error);
    el(box, "p", p.env[1] ? "env warn" : "env", "environment: " + p.env[0]);
    if (p.from) el(box, "p", "env", p.from);
    if (!p.sections) return;
    if (p.hist) histogram(box, p.hist);
    var metrics = el(box, "div", "metrics");
    p.sections.forEach(function (s) {
      var t = el(metrics, "table");
      el(t, "caption", "", s[0]);
      s[1].forEach(function (kv) {
        var tr = el(t, "tr");
        el(tr, "th", "", kv[0]);
        el(tr, "td", kv[1] === "n/a" ? "na" : "", kv[1]);
      });
    });
    if (p.kernels) {
      el(box, "h4", "", "work per call: " + p.kernels[0][0] + "s by name");
      grid(box, "prof", p.kernels[0], p.kernels[1]);
    }
    p.work.forEach(function (line) { el(box, "p", "extra", line); });
    (p.moved || []).forEach(function (m) { moved(box, m); });
    profile(box, p);
    breakdown(box, p);
  }

  // A case's panels (one per device) into `parent`.
  return function (parent, panels) {
    panels.forEach(function (p) { panel(parent, p); });
  };
})();
