"""What re-measuring a case that looked regressed decides (DESIGN §5): a time regressed only when every
re-measurement from a fresh setup agrees, `unstable` when they disagree. Pure functions of verdicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Literal

from perfguard.analysis.verdict import median_ms
from perfguard.model import TIME_METRICS, CaseResult, NextStep, TimeEvidence, Verdict


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
    others = tuple(median_ms(r, metric) for r, _ in measured if r is not kept)
    if all(slower[1:]):
        return dataclasses.replace(verdict, status="regressed", reason="outside", time=_time(verdict, confirmed=True,
                                                                                           remeasured_ms=others))
    if any(slower[1:]) or verdict.status == "regressed":
        return dataclasses.replace(verdict, status="unstable", reason="not_confirmed", next_steps=(NextStep("more_runs"),),
                                   time=_time(verdict, confirmed=False, remeasured_ms=others))
    # The middle measurement was not slower, though the first was: it stands, and says so.
    return dataclasses.replace(verdict, time=_time(verdict, confirmed=False, remeasured_ms=others))


def _time(verdict: Verdict, **changes: object) -> TimeEvidence:
    """The time verdict's evidence with `changes`."""
    return dataclasses.replace(verdict.time or TimeEvidence(), **changes)


def time_regressed(verdicts: Iterable[Verdict]) -> bool:
    """Whether a case's GPU or caller's time reads `regressed`: what a re-measurement must confirm."""
    return any(v.metric in TIME_METRICS and v.status == "regressed" for v in verdicts)


def note(verdicts: Iterable[Verdict], why: Literal["spent", "failed"], error: str | None = None) -> list[Verdict]:
    """The verdicts with why the case was not re-measured on the first time verdict (the judged figure's):
    the run's allowance is spent, or the re-measurement failed with `error`."""
    verdicts = list(verdicts)
    first = next((i for i, v in enumerate(verdicts) if v.metric in TIME_METRICS), None)
    if first is not None:
        verdicts[first] = dataclasses.replace(verdicts[first], time=_time(verdicts[first], not_remeasured=why,
                                                                           remeasure_error=error))
    return verdicts
