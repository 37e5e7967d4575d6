"""`reports/perfguard.md`: the run in Markdown, for `$GITHUB_STEP_SUMMARY` and pull-request comments.

What needs a person comes first: errors and regressions, then improvements, new, unstable and
inconclusive cases, then a compact table of every case (folded in a <details>). The text stays under LIMIT_BYTES however
many cases there are: GitHub refuses a comment over 65,536 characters, so lines that do not fit are
left out and counted ("… and 812 more: see the HTML report"), the least pressing first.

Every string of a record (ids, names, messages, dates, versions, commits, operators) is record text,
and records come from pull requests' artifacts: each enters the text through the one function `_md`,
which cuts it (an id to FIELD_CHARS: a 100k-character one would otherwise push every later row past the
limit; a verdict's words, only past WORDS_CHARS and between words, so never in a figure) and
escaped for GitHub: a case named `<img src=x>` shows as text, and a URL or an `@name` in an error is
neither a link nor a mention (a zero-width space after the `@`, the `:` of `://`, `www` and the `#`
of `#123` breaks GitHub's autolinks, mentions and cross-references; code spans need none of that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from perfguard import inert, units
from perfguard.analysis.decide import rank
from perfguard.model import RunRecord
from perfguard.report import notes, view, words, work
from perfguard.report.advice import NAMED, ROUGH, case_lines, clock_line, compile_line, launch_line, ranked_scalings, regime_line, rough, scaling_lines
from perfguard.report.commands import Invocation
from perfguard.report.view import Device, Entry

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

LIMIT_BYTES = 60_000
RESERVE_BYTES = 2_000  # kept for headings, the "… and N more" lines and the closing tags
ITEM_CHARS = 400  # an error's message at most, escaped (its first line can be long)
FIELD_CHARS = 300  # one id, name or error at most, before escaping
# A verdict's words (and perfguard's other lines: notes, advice) are never cut in the figures: perfguard's longest (a counter's, five names and four
# version changes) is under 1,000 characters. Past this only record text inside them (a baseline's path)
# is hostile, and the cut falls between words.
WORDS_CHARS = 2_000
# cmark-gfm (GitHub's renderer) takes no run of more than 80 backticks for a code span's fence: the
# backticks are then text, and what the span held (`![x](…)`, `@name`) is rendered live. A value
# with a run this long or longer is written as escaped text instead; well under 80, so that a
# renderer with a lower limit is safe too.
CODE_TICKS = 16
# Where GitHub would make a link, a mention or a cross-reference out of plain text: `@name`,
# `user@host`, `scheme://`, `www.`, `#123`. A zero-width space goes at each of these points.
_AUTOLINKED = re.compile(r"(?<=@)(?=\w)|(?<=:)(?=//)|(?<=www)(?=\.)|(?<=#)(?=\d)", re.IGNORECASE)
_ZWSP = "\u200b"
LISTED = {"improved": 50, "new": 30, "unstable": 50, "inconclusive": 50, "missing": 30}  # longer lists belong in the HTML report
SECTIONS = (
    ("error", "Errors"),
    ("regressed", "Regressions"),
    ("improved", "Improvements"),
    ("new", "New cases"),
    ("unstable", "Unstable"),
    # Passes by default, but the gate could not have seen a change of the threshold's size: each line
    # says what would let it (more runs, this card's own runs, perfguard ab).
    ("inconclusive", "Inconclusive"),
    ("missing", "Missing"),
)


def render_markdown(records: Sequence[RunRecord], fits: Sequence[Scaling] | None = None) -> str:
    """The Markdown summary of one or more run records (merged as `view.merge` says); `fits` as in `render_html`."""
    merged = view.merge(records)
    out = _Budget(LIMIT_BYTES - RESERVE_BYTES)
    counts = merged.counts()
    devices = list(merged.devices.values())
    names = ", ".join(_md(d.info.name) for d in devices) or "no device"
    out.force(f"## perfguard: {', '.join(f'{n} {_md(view.label(s))}' for s, n in counts.items()) or 'no cases'} on {names}", "")
    for d in devices:
        out.force(_device_line(d))
    if merged.records > 1:
        out.force("", f"_Merged from {merged.records} run records; per device and case the latest record wins._")
    for line in notes.run_lines(records):
        out.force("", f"**{_md(line, limit=WORDS_CHARS)}**")
    # The gate's settings and what kept cases from being judged (plugin/strict.py), as the run printed them.
    gate = notes.gate_lines(records)
    unseen = notes.unseen_card_line((v for r in records for v in r.verdicts), Invocation.of(records[0].options if records else None))
    if unseen:
        out.force("", f"**{_md(unseen, limit=WORDS_CHARS)}**")
    if gate:
        out.force("", *(f"- {_md(line, limit=WORDS_CHARS)}" for line in gate))
    multi = len(devices) > 1
    entries = sorted(merged.entries(), key=lambda e: (rank(e.status), e.case_id, e.device))
    for status, title in SECTIONS:
        chosen = [e for e in entries if e.status == status]
        if not chosen:
            continue
        out.force("", f"### {title} ({len(chosen)})", "")
        cap = LISTED.get(status, len(chosen))
        shown = 0
        for e in chosen[:cap]:
            if not out.add(_item(e, merged.devices[e.device], multi)):
                break
            shown += 1
        if shown < len(chosen):
            out.force(f"- … and {len(chosen) - shown} more: see the HTML report")
    results = [e.result for e in entries if e.result is not None]
    for advice in (launch_line(results), regime_line(results), compile_line(results), clock_line(results),
                   notes.cpu_note(results, records)):
        if advice:
            out.force("", f"_{_md(advice, limit=WORDS_CHARS)}_")
    cases = case_lines(results)
    if cases:
        out.force("", *(f"- {_md(line, limit=WORDS_CHARS)}" for line in cases))
    if fits is None:
        fits = ranked_scalings(results, [d.info for d in devices])
    if fits:
        out.force("", f"### Scaling ({len(fits)})", "")
        for line in scaling_lines(fits, limit=NAMED):
            if not out.add(f"- {_md(line, limit=WORDS_CHARS)}"):
                break
    # The table keeps a case's devices together, in the order of its most pressing verdict.
    _table(out, [e for by_device in merged.cases.values() for e in by_device.values()], merged.devices, multi)
    return out.text()


def _device_line(d: Device) -> str:
    info = d.info
    facts = [f"**{_md(info.name)}**" + (f" ×{d.units}" if d.units > 1 else "")]
    facts += [f"{k} {_md(v)}" for k, v in view.versions(info) if k in ("driver", "CUDA", "torch", "triton", "peak BW")]
    if d.commit:
        facts.append(f"commit {_md(d.commit[:12], code=True)}")
    facts.append(_md(view.when(d.created_at)))
    return "- " + " · ".join(facts)


def _item(e: Entry, device: Device, multi: bool) -> str:
    """A case's list item: its first verdict's words in full on the item's line (with where a regression
    spends its time), each further one folded onto a line of its own below it, never cut."""
    where = f" on {_md(device.info.name)}" if multi else ""
    head = f"- {_md(e.case_id, code=True)}{where}"
    r = e.result
    if e.status == "error":
        # Only the message is clipped: a cut in the id's code span would leave it open, and its rest live.
        return f"{head}: {_clip(_md((r.error or 'errored').splitlines()[0] if r else 'errored'))}"
    if e.status == "new":
        gbps, tflops = view.metric(r, "gbps"), view.metric(r, "tflops")
        return (f"{head}: {units.duration(view.median(r))}" + (f", {units.number(gbps)} GB/s" if gbps else "")
                + (f", {tflops:.3g} TFLOP/s" if tflops else ""))
    shown = [v for v in e.verdicts if v.status == e.status] or list(e.verdicts)
    lines = [said for v in shown for said in (words.line(v), words.where_line(v)) if said]
    first, *more = [_md(m, limit=WORDS_CHARS) for m in lines]
    top = _top_operator(e) if e.status == "regressed" else ""
    return "\n".join([f"{head}: {first}{top}", *(f"  - {line}" for line in more)])


def _top_operator(e: Entry) -> str:
    """Where a profiled regression spends its time: the profiler's top operator, and its trace."""
    p = e.result.profile if e.result else None
    if p is None or not p.ops:
        return ""
    op, clock = p.ops[0], "CUDA" if p.sort_by == "cuda" else "CPU"
    text = f" · top operator {_md(op.operator, code=True)} {units.duration(op.self_ms)} self {clock} time per call"
    if p.kernels_per_call is not None:
        text += f", {p.kernels_per_call:g} kernels per call"
    return text + (f" (trace {_md(p.trace, code=True)})" if p.trace else "")


def _table(out: _Budget, entries: list[Entry], devices: dict[str, Device], multi: bool) -> None:
    if not entries:
        return
    cards = any(e.card for e in entries)  # cases of one model on several cards (xdist, perfguard ab -n)
    header = (["case"] + (["device"] if multi else []) + (["card"] if cards else [])
              + ["verdict", "median ± CI", "Δ", "detects", "kernels/syncs", "GB/s", "% peak BW", "footprint"])
    out.force("", f"<details><summary>All {len(entries)} case results</summary>", "",
              "| " + " | ".join(header) + " |", "|" + "---|" * (len(header) - 7) + "---:|" * 7)
    shown = 0
    for e in entries:
        r = e.result
        cells = [_md(e.case_id, table=True, code=True)] + ([_md(devices[e.device].info.name, table=True)] if multi else [])
        cells += [_md(e.card or "-", table=True)] if cards else []
        mark = ROUGH if r is not None and rough(r) else ""
        cells += [_md(view.label(e.status), table=True), f"{mark}{units.duration(view.median(r))} {view.ci_text(r)}",
                  view.change(e.judged()), view.detects(e.judged()), work.compact(r.counters if r else None),
                  units.number(view.metric(r, "gbps")),
                  units.percent(view.metric(r, "bandwidth_util")), view.footprint_text(r)]
        if not out.add("| " + " | ".join(cells) + " |"):
            break
        shown += 1
    if shown < len(entries):
        out.force("", f"… and {len(entries) - shown} more rows: see the HTML report.")
    out.force("", "</details>")


class _Budget:
    """Lines of text that stop growing at a byte limit; `force` lines (headings, notes) always go in."""

    def __init__(self, limit: int):
        self.limit, self.lines, self.size, self.full = limit, [], 0, False

    def add(self, line: str) -> bool:
        cost = len(line.encode("utf-8")) + 1
        if self.full or self.size + cost > self.limit:
            self.full = True
            return False
        self.lines.append(line)
        self.size += cost
        return True

    def force(self, *lines: str) -> None:
        for line in lines:
            self.lines.append(line)
            self.size += len(line.encode("utf-8")) + 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _clip(line: str) -> str:
    return line if len(line) <= ITEM_CHARS else line[: ITEM_CHARS - 1].rstrip("\\") + "…"


def _cut(s: object, limit: int = FIELD_CHARS) -> str:
    """`s` on one line, at most `limit` characters: past it, cut at the last space before it (a figure
    and its unit stay together unless one word is longer than the limit)."""
    s = inert.printable(str(s).replace("\r", " ").replace("\n", " "))
    if len(s) <= limit:
        return s
    kept = s[: limit - 1]
    space = kept.rfind(" ", 0, len(kept) - 1)
    return (kept[:space] if space > limit // 2 else kept).rstrip(" ;,") + "…"


def _md(value: object, *, code: bool = False, table: bool = False, limit: int = FIELD_CHARS) -> str:
    """The one way record text enters the Markdown: cut to `limit` on one line, control characters
    shown as escapes, then either as text (no HTML, no emphasis, no links, no mentions) or, `code`, as
    an inline code span that holds any text (HTML inside a code span is shown, not rendered; GitHub
    links and mentions nothing in it); `table`: also safe inside a table cell."""
    s = _cut(value, limit)
    out = _code(s) if code and _longest_run(s, "`") < CODE_TICKS else _text(s)
    return out.replace("|", "\\|") if table else out


def _code(s: str) -> str:
    """`s` as a code span: fenced by one backtick more than its longest run of them, so no run inside
    closes it. A space pads a span that holds a backtick or starts or ends with a space: GitHub strips
    one space from each end of a span that has one at both, so the pad is what goes."""
    ticks = "`" * (_longest_run(s, "`") + 1)
    pad = " " if ticks != "`" or s[:1] == " " or s[-1:] == " " else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _text(s: str) -> str:
    """`s` as plain text: no HTML, emphasis, link, image, autolink or mention in it."""
    out = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for c in "\\`*_[]~":
        out = out.replace(c, "\\" + c)
    return _AUTOLINKED.sub(_ZWSP, out)


def _longest_run(s: str, c: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(c)}+", s)), default=0)
