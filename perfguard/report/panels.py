"""A case's detail view in the HTML report as plain data: what report.js builds when the case is opened.

The page carries this for every case, packed (`packed.py`), and builds a case's view only when a
person opens it: 5,280 detail views as markup were 31 MB, and Chromium took 8 s to parse them. The
data is lists and strings, each shown by the page as text (`textContent`), never as markup; the
one link (a profiler trace) is a path `details.profile_note` found inside the report's folder.
"""

from __future__ import annotations

from typing import Any

from perfguard import units
from perfguard.report import charts, view, words, work
from perfguard.report.details import (
    breakdown,
    breakdown_missing,
    breakdown_note,
    breakdown_unnamed,
    environment,
    message,
    profile_note,
    profile_table,
    sections,
    where_tables,
)
from perfguard.report.view import Device, Entry


def panel(device: Device, entry: Entry | None, *, multi: bool, several: bool) -> dict[str, Any]:
    """One device's view of a case; keys left out where there is nothing to show."""
    view_: dict[str, Any] = {"device": device.info.name} if multi else {}
    if entry is None:
        return {**view_, "absent": True}
    view_["verdicts"] = [[v.status, words.name(v).replace("_", " "), message(v)] for v in entry.verdicts]
    r = entry.result
    if r is not None and r.error:
        view_["error"] = r.error
    view_["env"] = list(environment(entry))
    if several:
        view_["from"] = f"from the run of {view.when(entry.created_at)}, commit {(entry.commit or 'n/a')[:12]}"
    if r is None:
        return view_
    hist = _histogram(entry)
    if hist is not None:
        view_["hist"] = hist
    view_["sections"] = [[title, [list(item) for item in items]] for title, items in sections(entry)]
    kernels = work.kernel_rows(entry)
    if kernels:
        view_["kernels"] = [kernels[0], kernels[1]]
    view_["work"] = work.changes(entry)
    moved = where_tables(entry)
    if moved:
        view_["moved"] = moved
    table, note = profile_table(entry), profile_note(entry)
    if table:
        view_["profile"] = [table[0], table[1]]
    if note:
        view_["profile_note"] = note
    parts = breakdown(entry)
    if parts:
        view_["breakdown"] = [[name, size, round(share, 4)] for name, size, share in parts]
        view_["breakdown_note"] = breakdown_note(entry)
        view_["breakdown_unnamed"] = breakdown_unnamed(entry)
    else:
        view_["breakdown_missing"] = breakdown_missing(entry)
    return view_


def _histogram(entry: Entry) -> dict[str, Any] | None:
    """The samples' histogram as the SVG's figures, and its caption's parts."""
    r = entry.result
    if r is None or r.judged_time is None:
        return None
    v = entry.judged()
    baseline = v.baseline if v is not None and v.status not in ("new", "missing") else None
    h = charts.histogram(r.samples_ms, r.judged_time.median_ms, (r.judged_time.ci_low_ms, r.judged_time.ci_high_ms), baseline)
    if h is None:
        return None
    rest = f" · shaded: 95% CI · {h.n} samples"
    if h.hidden:
        rest += f", {h.hidden} outside 1–99% not drawn"
    if h.log:
        rest += " · log time axis"
    return {"width": h.width, "height": h.height, "base": h.base, "bars": h.bars, "median_x": h.median_x,
            "ci_x": list(h.ci_x), "baseline_x": h.baseline_x, "lo": h.lo, "hi": h.hi,
            "median": f"median {units.duration(r.judged_time.median_ms)}",
            "baseline": f"baseline median {units.duration(baseline)}" if h.baseline_x is not None else None,
            "rest": rest}
