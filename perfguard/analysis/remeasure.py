"""What re-measuring a case that looked regressed decides (DESIGN §5): a time regressed only when every
re-measurement from a fresh setup agrees, `unstable` when they disagree. Pure functions of verdicts."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence

from perfguard.analysis.verdict import median_ms
from perfguard.model import TIME_METRICS, CaseResult, Verdict


def settle(measured: Sequence[tuple[CaseResult, list[Verdict]]]) -> tuple[CaseResult, list[Verdict]]:
    """The verdict of a case that first looked regressed (`measured[0]`) and its re-measurements, each
    with its verdicts: a time regressed only when every re-measurement agrees; `unstable` when they
    disagree; otherwise what the middle one says. The case keeps the measurement with the middle
    median, and each time verdict that looked slower lists them all."""
    ordered_runs = sorted(measured, key=lambda m: median_ms(m[0], m[0].judged_metric))
    kept, verdicts = ordered_runs[len(ordered_runs) // 2]
    return kept, [_settle_time(v, measured, kept) if v.metric in TIME_METRICS else v for v in verdicts]


def _settle_time(verdict: Verdict, measured: Sequence[tuple[CaseResult, list[Verdict]]], kept: CaseResult) -> Verdict:
    metric = verdict.metric
    slower = [any(v.metric == metric and v.status == "regressed" for v in vs) for _, vs in measured]
    if not any(slower):
        return verdict
    figure = functools.partial(median_ms, metric=metric)
    moved = [100 * (figure(r) / verdict.baseline - 1) for r, _ in measured] if verdict.baseline else []
    changes = ", ".join(f"{c:+.1f}%" for c in moved)
    if all(slower[1:]):
        status, said = "regressed", f"confirmed by {len(measured) - 1} re-measurements (the {len(measured)} measurements: {changes})"
    elif any(slower[1:]) or verdict.status == "regressed":
        status, said = "unstable", f"not confirmed: {_straddle(moved, slower, verdict.tolerance_pct)}"
    else:
        status, said = verdict.status, f"a first measurement looked slower; not confirmed ({changes})"
    prefix = f"{metric} {verdict.status}: "
    message = f"{metric} {status}: {verdict.message.removeprefix(prefix)}; {said}"
    return dataclasses.replace(verdict, status=status, message=message, confirmed=status == "regressed",
                               remeasured_ms=tuple(figure(r) for r, _ in measured if r is not kept))


def _straddle(moved: Sequence[float], slower: Sequence[bool], tolerance_pct: float | None) -> str:
    """What a set of measurements that did not all read slower says: how many passed the tolerance, and
    whether they agree with each other (then the change sits at the tolerance's edge) or not."""
    changes = ", ".join(f"{c:+.1f}%" for c in moved)
    tolerance = f"the tolerance ±{tolerance_pct:.1f}%" if tolerance_pct is not None else "the tolerance"
    said = f"{sum(slower)} of the {len(slower)} measurements ({changes}) are outside {tolerance}"
    if not moved or tolerance_pct is None:
        return said
    if max(moved) - min(moved) < tolerance_pct:
        return (f"{said}; they agree with each other within {max(moved) - min(moved):.1f} points, so the change "
                "sits at the edge of what this case's noise allows (more baseline runs narrow the tolerance)")
    return f"{said}; they disagree with each other by {max(moved) - min(moved):.1f} points"


def latency_regressed(verdicts: Iterable[Verdict]) -> bool:
    """Whether a case's GPU or caller's time reads `regressed`: what a re-measurement must confirm."""
    return any(v.metric in TIME_METRICS and v.status == "regressed" for v in verdicts)


def note(verdicts: Iterable[Verdict], text: str) -> list[Verdict]:
    """The verdicts with `text` added to the first time verdict's message (the judged figure's)."""
    verdicts = list(verdicts)
    first = next((i for i, v in enumerate(verdicts) if v.metric in TIME_METRICS), None)
    if first is not None:
        verdicts[first] = dataclasses.replace(verdicts[first], message=f"{verdicts[first].message}; {text}")
    return verdicts
