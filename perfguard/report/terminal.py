"""The end-of-run table in the terminal (and `perfguard show`): regressions first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from perfguard import inert, units
from perfguard.analysis import counting
from perfguard.analysis.decide import by_case, case_status, rank
from perfguard.analysis.memory_verdicts import ACROSS_CALLS
from perfguard.model import COUNTER_KINDS, TIME_METRICS, CaseResult, DeviceInfo, RunRecord, Verdict, tally
from perfguard.report import fitting, notes, steps, words, work
from perfguard.report.commands import Invocation
from perfguard.report.advice import (NAMED, case_lines, clock_line, compile_line, launch_line, ranked_scalings, regime_line, run_line,
                                     scaling_lines)
from perfguard.report.advice import ROUGH, cpu_line, rough
from perfguard.report.view import card_names, footprint_text

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

# `change` is the judged figure's against the baseline, beside what the gate `detects` for the case; a
# `same` with a change larger than `detects` would be a contradiction, so both are always shown.
COLUMNS = ("case", "verdict", "median", "±CI", "change", "detects", "caller", "caller Δ", "GPU idle", "kernels/syncs",
           "GB/s", "% peak BW", "TFLOP/s", "bound", "peak mem", "footprint")
# What a new case needs, said once under the table however many cases are new (the record says it per case).
NEW_LINE = "{n} new case(s), not in the baseline yet: "
STYLE = {"regressed": {"red": True, "bold": True}, "unstable": {"yellow": True}, "inconclusive": {"yellow": True},
         "improved": {"green": True}}
# Inconclusive verdicts listed one a line up to this many; past it, one line counts them (every
# verdict's own line is in the Markdown, the HTML and the record).
LISTED_INCONCLUSIVE = 5


def table(results: Iterable[CaseResult], devices: Iterable[DeviceInfo] = (), verdicts: Iterable[Verdict] = (),
          width: int | None = None) -> list[str]:
    """The table of cases in `width` characters (None: the terminal's; report/fitting.py says what goes)."""
    verdicts, results = list(verdicts), list(results)
    grouped = by_case(verdicts)
    status = {case: case_status(vs) for case, vs in grouped.items()}
    judged = {r.id: r.judged_metric for r in results}
    gate = {v.case_id: v for v in verdicts if v.metric == judged.get(v.case_id)}
    caller = {v.case_id: v for v in verdicts if v.metric == "caller_time" and judged.get(v.case_id) != "caller_time"}
    devices = list(devices)
    cards = card_names(results, devices)  # a column only where cases of one model ran on several cards
    rows, errors = [], []
    for r in sorted(results, key=lambda r: (rank(status.get(r.id, "")), r.id)):
        if r.status == "error":
            errors.append(f"error: {(r.error or r.id).splitlines()[0]}")
            continue
        if r.judged_time is None:
            continue
        m = r.metrics
        rows.append(
            (
                r.id,
                _status(status.get(r.id, "-"), gate.get(r.id), grouped.get(r.id, [])),
                (ROUGH if rough(r) else "") + units.duration(r.judged_time.median_ms),
                f"±{r.judged_time.ci_half_width_pct:.2f}%",
                _change(gate.get(r.id)),
                _detects(gate.get(r.id)),
                units.duration(r.median_of("caller_time")) if r.judged_metric != "caller_time" else "-",
                _change(caller.get(r.id)),
                units.percent(m.launch_overhead_share if m else None),
                work.compact(r.counters),
                units.number(m.gbps if m else None),
                units.percent(m.bandwidth_util if m else None),
                units.number(m.tflops if m else None, 2),
                (m.bound if m else None) or "-",
                units.size(r.memory.peak_allocated_bytes if r.memory else None),
                footprint_text(r),
                *([cards.get(r.id, "-")] if cards else []),
            )
        )
    width = fitting.terminal_width() if width is None else width
    lines = wrapped((f"device: {d.name} ({d.slug})" for d in {d.slug: d for d in devices}.values()), width)
    if rows:
        lines += fitting.fit((*COLUMNS, "card") if cards else COLUMNS, rows, width).lines()
    return lines + wrapped(errors, width)


def wrapped(lines: Iterable[str], width: int | None = None, indent: str = "") -> list[str]:
    """Each of `lines` as shown (perfguard.inert: a line break in a record's text would start a line that
    passes for perfguard's own, `verdicts: 0 regressed`), after `indent`, and wrapped to `width` (None: the
    terminal's; fitting.wrap)."""
    return [part for line in lines for part in fitting.wrap(indent + inert.printable(line), width)]


def _status(status: str, gate: Verdict | None, verdicts: list[Verdict]) -> str:
    """The case's status, and where another metric than the time beside it gave it, which: the row's change
    is the time's, and a row that reads "regressed +7.8%" when a count failed it says the time did."""
    if gate is None or gate.status == status:
        return status
    by = [v.metric for v in verdicts if v.status == status and v is not gate]
    return f"{status}: {by[0]}" + (f" +{len(by) - 1}" if len(by) > 1 else "") if by else status


def _detects(verdict: Verdict | None) -> str:
    """The smallest change the gate catches; "1 run" where one baseline run judged it: its spread is the
    prior's, not measured, and a figure of hundreds of percent would read as measured (its line says more)."""
    n = verdict.noise if verdict is not None else None
    if n is None:
        return "-"
    if n.runs == 1 and not verdict.paired:
        return "1 run"
    return words.noise_pct(n.detectable_pct, n)


def _change(verdict: Verdict | None) -> str:
    return f"{verdict.change_pct:+.1f}%" if verdict is not None and verdict.change_pct is not None else "-"


def record_lines(record: RunRecord, fits: Sequence[Scaling] | None = None, width: int | None = None) -> list[str]:
    """A stored record's summary as plain lines (`perfguard show`, `perfguard ab`), its table in `width`."""
    return [line for line, _style in summary(record.results, record.devices, record, fits, width=width)]


def summary(
    results: Iterable[CaseResult], devices: Iterable[DeviceInfo], record: RunRecord | None,
    fits: Sequence[Scaling] | None = None, new_hint: bool = True, failed_above: bool = False, width: int | None = None,
) -> list[tuple[str, dict[str, bool]]]:
    """The table, then one line counting each verdict, then the line of every verdict that is not `same`;
    `fits` as in `html.render_html`. `new_hint=False` leaves out the line telling how to record the new
    cases, for a caller that says it itself (the pytest summary's gate lines, plugin/strict.py).
    `failed_above`: each regressed verdict's line is already in its case's failure (a pytest run that
    fails them), so a case's regressions are one line here, what moved and by how much. `width`: the
    terminal's (None: its own), which the table fits and every other line wraps to."""
    verdicts = record.verdicts if record else ()
    results, devices = list(results), list(devices)
    width = fitting.terminal_width() if width is None else width
    rows = [(line, {}) for line in table(results, devices, verdicts, width)]
    status = run_line(record) if record else None
    top = [(status, {"red": True, "bold": True})] if status else []
    lines: list[tuple[str, dict[str, bool]]] = []
    under: set[int] = set()  # the lines said under the one before them (a verdict's where), indented
    for advice in (launch_line(results), regime_line(results), compile_line(results)):
        if advice:
            lines.append((advice, {"cyan": True}))
    for warning in (clock_line(results), cpu_line(results, record.options if record else None)):
        if warning:
            lines.append((warning, {"yellow": True}))
    lines += [(line, {"yellow": True}) for line in case_lines(results)]
    if fits is None:
        fits = ranked_scalings(results, devices)
    lines += [(f"scaling: {line}", {}) for line in scaling_lines(fits, limit=NAMED)]
    if verdicts:
        run = Invocation.of(record.options if record else None)  # the commands a line prints: this run's folders
        lines.append((verdict_count(verdicts), {"bold": True}))
        listed = [v for v in verdicts
                  if v.status not in ("same", "new", "inconclusive") or (v.metric in COUNTER_KINDS and v.change_pct is not None)]
        if failed_above:
            lines += [(line, STYLE["regressed"]) for line in regressed_lines([v for v in listed if v.status == "regressed"])]
            listed = [v for v in listed if v.status != "regressed"]
        for v in sorted(listed, key=lambda v: (rank(v.status), v.case_id)):
            lines.append((f"{v.case_id}: {words.line(v, run)}", STYLE.get(v.status, {})))
            where = words.where_line(v)
            if where:
                under.add(len(lines))
                lines.append((where, {}))
        lines += [(line, STYLE["inconclusive"]) for line in inconclusive_lines(verdicts, run)]
        news = {v.case_id for v in verdicts if v.status == "new" and v.metric in TIME_METRICS}
        if news and new_hint:
            lines.append((NEW_LINE.format(n=len(news)) + steps.new_remedy(run), {"cyan": True}))
        figures = [v for v in verdicts if v.status == "new" and v.metric in ACROSS_CALLS and v.case_id not in news]
        if figures:  # a baseline recorded before perfguard measured them: judged from its next update
            names = ", ".join(sorted({v.metric for v in figures}))
            lines.append((f"{len({v.case_id for v in figures})} case(s) with figures their baseline does not hold "
                          f"yet ({names}): judged once `--perfguard-update` records them", {"cyan": True}))
        # A verdict that stands but under other software versions is shown too, once per difference.
        quiet = [v for v in verdicts if v.env_mismatch and v.status in ("same", "new")]
        for change in sorted({c for v in quiet for c in v.env_mismatch}):
            n = len({v.case_id for v in quiet if change in v.env_mismatch})
            lines.append((f"environment differs from the baseline for {n} more case(s): {change}", {"yellow": True}))
    return ([(part, style) for line, style in top for part in wrapped([line], width)] + rows
            + [(part, style) for n, (line, style) in enumerate(lines)
               for part in wrapped([line], width, fitting.HANG if n in under else "")])


def verdict_count(verdicts: Sequence[Verdict]) -> str:
    """"22 verdicts (one per metric) for 4 cases: 0 regressed, ...": a case has a verdict per figure it is
    judged by (its times, memory, each work counter), so the count is not the number of cases."""
    cases = units.plural(len({v.case_id for v in verdicts}), "case")
    return (f"{units.plural(len(verdicts), 'verdict')} (one per metric) for {cases}: "
            + ", ".join(f"{n} {s}" for s, n in tally(verdicts).items()))


def regressed_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """One line a case: "case: regressed: gpu_time +66.7%, copies 0 → 1 (each line in its failure above)"."""
    return [f"{case_id}: regressed: {', '.join(_moved(v) for v in moved)} (each line in its failure above)"
            for case_id, moved in sorted(by_case(verdicts).items())]


def _moved(v: Verdict) -> str:
    if v.change_pct is not None:
        return f"{words.name(v)} {v.change_pct:+.1f}%"
    if v.baseline is None or v.current is None:
        return words.name(v)
    return f"{v.metric} {counting.figure(v.metric, v.baseline)} → {counting.figure(v.metric, v.current)}"


def inconclusive_lines(verdicts: Iterable[Verdict], run: Invocation = Invocation()) -> list[str]:
    """The inconclusive verdicts: each one's line when there are a few, else one line that counts them,
    says what they could not see and what would let the gate see it."""
    verdicts = list(verdicts)
    unseen = notes.unseen_card_line(verdicts, run)
    said = {v.case_id for v in verdicts if notes.unseen_card(v)} if unseen else set()
    blind = [v for v in verdicts if v.status == "inconclusive" and not (v.case_id in said and v.metric in TIME_METRICS)]
    if unseen:
        return [unseen, *inconclusive_lines(blind, run)] if blind else [unseen]
    if len(blind) <= LISTED_INCONCLUSIVE:
        return [f"{v.case_id}: {words.line(v)}" for v in sorted(blind, key=lambda v: (v.case_id, v.metric))]
    detects = sorted(v.detectable_pct for v in blind if v.detectable_pct is not None)
    median = f" (median smallest detectable change {detects[len(detects) // 2]:.1f}%)" if detects else ""
    fleet = sum(bool(v.noise and v.noise.judged_by == "fleet") for v in blind)
    by_fleet = f"; {fleet} of them judged by the fleet's runs, not this card's own" if fleet else ""
    return [f"{len(blind)} inconclusive verdicts: their tolerance is wider than the threshold, so a change of its size "
            f"would pass unseen{median}{by_fleet}; more baseline runs, this card's own runs in the baseline, or "
            "`perfguard ab` would decide them (each one's line is in perfguard.md)"]
