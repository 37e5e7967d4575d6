"""The HTML report: one self-contained file from jinja2 templates, opened offline from a CI artifact.

CSS, JavaScript and SVG are inline and a Content-Security-Policy forbids every fetch, so the page
works from a zip on a laptop with no network. The policy runs only the report's own script, named by
its hash: no inline script or event attribute anywhere else, and no `javascript:` link, would run.
Autoescaping is on for everything: a case id or parameter holding HTML is shown as text, and one
holding a bidi override or a zero-width character shows it as its escape (`inert.in_page`).

The header, the charts and what needs attention are markup. The table's rows and each case's detail
view are data packed into the page (`packed.py`, `panels.py`): report.js builds a page of rows at a
time, sorted and filtered over every case, and a case's detail view when it is opened, each string
as text (`textContent`), never as markup. At 5,280 cases the page went from 32 MB of markup that
Chromium parsed in 7-8 s to 1.6 MB, open in 0.3 s (docs/development.md).
Without scripts the page still says what needs attention and that the table needs JavaScript.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfguard import inert, units
from perfguard.analysis.decide import rank
from perfguard.errors import ReportError, first_line
from perfguard.model import RunRecord
from perfguard.report import charts, packed, view, words
from perfguard.report import notes as run_notes
from perfguard.report.advice import NAMED, ROUGH, case_lines, clock_line, launch_line, ranked_scalings, regime_line, rough, scaling_cells
from perfguard.report.commands import Invocation
from perfguard.report.panels import panel
from perfguard.report.view import Device, Entry

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

TEMPLATES = Path(__file__).with_name("templates")
SCRIPTS = ("panel.js", "report.js")  # one <script> element, as the policy names its hash: the builder of details first
PAGE_ROWS = 100  # rows report.js shows at a time: Chromium lays out 100 rows in milliseconds
DETAIL_CHUNK = 100  # cases per packed block of detail views: opening a case inflates its block only


@dataclasses.dataclass(frozen=True)
class Column:
    key: str
    label: str
    title: str
    numeric: bool = True


COLUMNS = (
    Column("verdict", "verdict", "the most pressing of the case's verdicts; click a row for all of them", False),
    Column("median", "median ± CI", "median latency and the half-width of its 95% confidence interval; lower is better"),
    Column("change", "Δ baseline", "change of the median latency against this device's baseline"),
    Column("detects", "detects", "the smallest slowdown the gate catches 19 times in 20, from the case's run-to-run "
           "noise over the baseline's runs (more runs narrow it); lower is better"),
    Column("gbps", "GB/s", "achieved bandwidth: declared bytes / median time; higher is better"),
    Column("util", "% peak BW", "achieved bandwidth over the device's theoretical peak"),
    Column("tflops", "TFLOP/s", "declared flops / median time; higher is better"),
    Column("memory", "peak mem", "peak memory allocated by one call over what was live before it; lower is better"),
    Column("footprint", "footprint", "the most the case held during a call, counted from before its setup: its tensors, "
           "what its calls keep for the next (gradients, caches) and the call's peak; with what a call retains for "
           "good, when it does (a leak); lower is better"),
    Column("bound", "bound", "roofline bound: memory, compute or launch (the host's launches set its time)", False),
)
ROUGH_TITLE = "timed on a CPU's host clock; its budget ran out before its interval settled: a rough figure"
# With several GPUs side by side, each gets the columns that compare across devices; the rest are
# in the case's detail view.
COMPACT = ("verdict", "median", "change", "gbps", "util")


@dataclasses.dataclass(frozen=True)
class Cell:
    text: str
    sort: str = ""  # what the column sorts by; empty sorts last
    cls: str = ""
    note: str = ""  # smaller text after the figure (the CI)
    title: str = ""
    badge: str = ""  # a verdict status: the cell is a coloured badge


@dataclasses.dataclass(frozen=True)
class Row:
    key: str  # DOM id of the case's <tbody>
    case_id: str
    name: str  # the id split for display: name, then the [parameters] part
    grid: str
    statuses: str
    search: str
    cells: list[Cell]
    panels: list[tuple[Device, Entry | None]]


def render_html(records: Sequence[RunRecord], fits: Sequence[Scaling] | None = None) -> str:
    """The report of one or more run records (merged as `view.merge` says), as one HTML document.
    `fits`: the records' scaling fits (`advice.ranked_scalings`) when the caller has them already.

    Any failure (a broken or missing template, a figure a template trips over) is a ReportError of
    one line, so that the caller can say so and carry on: the run record is never at stake.
    """
    try:
        return _render(records, fits)
    except ReportError:
        raise
    except Exception as exc:
        where = f" ({exc.filename}, line {exc.lineno})" if getattr(exc, "lineno", None) and getattr(exc, "filename", None) else ""
        raise ReportError(f"cannot render the HTML report: {type(exc).__name__}: {first_line(str(exc))}{where}") from exc


def _render(records: Sequence[RunRecord], fits: Sequence[Scaling] | None) -> str:
    merged = view.merge(records)
    devices = list(merged.devices.values())
    columns = [c for c in COLUMNS if len(devices) <= 1 or c.key in COMPACT]
    rows = [_row(i, case_id, by_device, devices, columns) for i, (case_id, by_device) in enumerate(merged.cases.items())]
    counts = merged.counts()
    headline = ", ".join(f"{n} {view.label(s)}" for s, n in counts.items()) or "no cases"
    notes = []
    if merged.records > 1:
        notes.append(f"merged from {merged.records} run records; per device and case the latest record wins")
    if merged.replaced:
        notes.append(f"{merged.replaced} result(s) replaced by a later record of the same device")
    notes += run_notes.run_lines(records)
    notes += run_notes.once([run_notes.unseen_card_line((v for r in records for v in r.verdicts),
                                                        Invocation.of(records[0].options if records else None))])
    notes += case_lines(e.result for e in merged.entries() if e.result)
    notes += [line for line in [regime_line(e.result for e in merged.entries() if e.result)] if line]
    advice, scaling = _advice(merged, devices, fits)
    clocks = clock_line(e.result for e in merged.entries() if e.result)
    cpu = run_notes.once([run_notes.cpu_note([e.result for e in merged.entries() if e.result], records)])
    multi, several = len(devices) > 1, merged.records > 1
    details = [packed.pack([[panel(d, e, multi=multi, several=several) for d, e in row.panels] for row in rows[i:i + DETAIL_CHUNK]])
               for i in range(0, len(rows), DETAIL_CHUNK)]
    context = {
        "headline": headline,
        "devices": devices,
        "columns": columns,
        "multi": multi,
        "cases": len(rows),
        "rows_packed": packed.pack([_row_data(row) for row in rows]),
        "details_packed": details,
        "page_rows": PAGE_ROWS,
        "detail_chunk": DETAIL_CHUNK,
        "counts": counts,
        "notes": notes,
        "rooflines": [_roofline(d, rows) for d in devices],
        "attention": _attention(rows, multi),
        "advice": advice,
        "clocks": clocks,
        "cpu": cpu,
        "scaling": scaling,
        "scaling_open": len(scaling) <= NAMED,
        "css": _static("report.css"),
        "js": _script(),
        "script_hash": _script_hash(),
    }
    return _template().render(context)


def prepare() -> None:
    """Load jinja2 and compile the report's template now (a fraction of a second), not at the run's end."""
    _template()


def _template() -> Any:
    return _environment().get_template("report.html.j2")


def _advice(merged: view.Merged, devices: list[Device], fits: Sequence[Scaling] | None) -> tuple[str | None, list[tuple[str, ...]]]:
    """The launch-bound line, and a row per scaling fit."""
    results = merged.results()
    if fits is None:
        fits = ranked_scalings(results, [d.info for d in devices])
    return launch_line(results), [scaling_cells(s) for s in fits]


def _row(index: int, case_id: str, by_device: Mapping[str, Entry], devices: list[Device], columns: list[Column]) -> Row:
    entries = [by_device.get(d.info.slug) for d in devices]
    present = [e for e in entries if e is not None]
    result = next((e.result for e in present if e.result is not None), None)
    name, bracket, rest = case_id.partition("[")
    search = " ".join([case_id, view.params_text(result), *(d.info.name for d, e in zip(devices, entries, strict=True) if e)])
    cells = [_cell(c, e) for e in entries for c in columns]
    return Row(f"case-{index}", case_id, name, bracket + rest, " ".join(sorted({e.status for e in present})),
               search.lower(), cells, list(zip(devices, entries, strict=True)))


def _row_data(row: Row) -> list[Any]:
    """A row as report.js reads it: [key, name, [parameters], statuses, search text, cells], each cell
    [text, sort, class, note, title, badge] without its trailing empty fields."""
    cells = []
    for c in row.cells:
        fields = [c.text, c.sort, c.cls, c.note, c.title, c.badge]
        while len(fields) > 1 and fields[-1] == "":
            fields.pop()
        cells.append(fields)
    return [row.key, row.name, row.grid, row.statuses, row.search, cells]


def _cell(column: Column, entry: Entry | None) -> Cell:
    if entry is None:
        return Cell("—", cls="na", title="not run on this device")
    r = entry.result
    key = column.key
    if key == "verdict":
        # The tooltip tells what moved without opening the case; `same` and `new` say nothing more.
        quiet = entry.status in ("same", "new", "measured")
        messages = "" if quiet else "\n".join(words.line(v) for v in entry.verdicts) or (r.error if r and r.error else "")
        return Cell(view.label(entry.status), str(rank(entry.status)), title=messages, badge=entry.status)
    if key == "median":
        ms = view.median(r)
        if r is not None and rough(r):  # a CPU's figure whose interval did not settle (advice.cpu_line)
            return Cell(ROUGH + units.duration(ms), _num(ms), note=view.ci_text(r), title=ROUGH_TITLE)
        return Cell(units.duration(ms), _num(ms), note=view.ci_text(r) if ms is not None else "")
    if key == "change":
        v = entry.judged()
        pct = v.change_pct if v else None
        return Cell(view.change(v), _num(pct), cls=f"chg-{v.status}" if v else "na")
    if key == "detects":
        v = entry.judged()
        pct = v.detectable_pct if v else None
        return Cell(view.detects(v), _num(pct), cls="" if pct is not None else "na")
    if key == "footprint":
        held = view.footprint(r)
        return Cell(units.size(held), _num(held), cls="" if held is not None else "na", note=view.retained_text(r))
    if key == "bound":
        bound = view.metric(r, "bound")
        return Cell(str(bound) if bound else "n/a", str(bound or ""), cls="" if bound else "na")
    value = {
        "gbps": (view.metric(r, "gbps"), units.number),
        "util": (view.metric(r, "bandwidth_util"), units.percent),
        "tflops": (view.metric(r, "tflops"), lambda x: units.number(x, 3 if x is not None and x < 10 else 1)),
        "memory": (view.peak_memory(r), units.size),
    }[key]
    return Cell(value[1](value[0]), _num(value[0]), cls="" if value[0] is not None else "na")


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def _roofline(device: Device, rows: list[Row]) -> tuple[Device, charts.Roofline | None, list[tuple[str, str]]]:
    plotted, off = [], []
    for row in rows:
        entry = next((e for d, e in row.panels if d is device), None)
        if entry is None or entry.result is None or entry.result.judged_time is None:
            continue
        ai, tflops = view.metric(entry.result, "arithmetic_intensity"), view.metric(entry.result, "tflops")
        if ai and tflops and ai > 0 and tflops > 0:
            plotted.append((row.key, row.case_id, entry.status, ai, tflops, view.metric(entry.result, "efficiency")))
        else:
            off.append((row.key, row.case_id))
    plotted.sort(key=lambda p: -rank(p[2]))  # drawn last, on top: the most pressing cases
    return device, charts.roofline(device.info, plotted), off


ATTENTION = ("error", "regressed", "unstable", "improved", "missing")
ATTENTION_ITEMS = 12
# Without scripts the table is not built: the page lists this many of what needs attention, in markup.
STATIC_ITEMS = 200

Item = tuple[str, str, str, str, list[str]]


def _attention(rows: list[Row], multi: bool) -> tuple[list[Item], list[Item], int]:
    """What needs a person, first: (key, case id, device, status, what moved: a line per verdict), at most
    ATTENTION_ITEMS; the next ones up to STATIC_ITEMS, for a page without scripts; and how many in all.
    Each verdict's whole line, "metric status:" and all: the badge says the case's status, not which
    of its figures moved."""
    items = []
    for row in rows:
        for device, e in row.panels:
            if e is None or e.status not in ATTENTION:
                continue
            said = [words.line(v) for v in e.verdicts if v.status == e.status]
            error = (e.result.error or "").strip().splitlines() if e.result is not None else []
            text = said or error[:1]
            items.append((rank(e.status), row.key, row.case_id, device.info.name if multi else "", e.status, text))
    items.sort(key=lambda item: item[0])
    ranked = [item[1:] for item in items[:STATIC_ITEMS]]
    return ranked[:ATTENTION_ITEMS], ranked[ATTENTION_ITEMS:], len(items)


@cache
def _script_hash() -> str:
    """The CSP source that lets report.js, and nothing else, run: the hash of the script element's text."""
    digest = hashlib.sha256(str(_script()).encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


@cache
def _script() -> Any:
    """The page's one script: the detail view's builder (panel.js), then the table's (report.js)."""
    from markupsafe import Markup

    return Markup("\n".join(_static(name) for name in SCRIPTS))


@cache
def _static(name: str) -> Any:
    from markupsafe import Markup

    return Markup((TEMPLATES / name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=inert.in_page,  # bidi overrides, zero-width and control characters shown as escapes
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.globals.update(
        label=view.label, when=view.when, versions=view.versions,
        by_rank=lambda statuses: sorted(set(statuses), key=rank),
    )
    return env
