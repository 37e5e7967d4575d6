"""`perfguard ab`'s verdicts: each side's rounds, paired round by round (perfguard/analysis/paired.py).

What a base revision and the working tree measured in the same rounds on one card judges the times
(the judged figure and the caller's); new and missing cases and peak memory (deterministic) are
judged as the baseline gate judges them (perfguard/analysis/verdict.py), on each side's rounds pooled.
Pure functions of records: no files, no devices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from perfguard.analysis import decide, paired, pooling, verdict
from perfguard.model import TIME_METRICS, CaseResult, NextStep, Noise, RunRecord, TimeEvidence, Verdict


@dataclasses.dataclass(frozen=True)
class Judged:
    """The verdicts of both sides' rounds, and what the round loop needs to know of them."""

    verdicts: tuple[Verdict, ...]
    paired: dict[tuple[str, str], paired.Paired]  # (case id, metric) -> its paired figures
    base: RunRecord  # each side's rounds pooled (samples not thinned)
    head: RunRecord

    def undecided(self, most_rounds: int) -> list[str]:
        """The cases that more rounds could decide: a time inconclusive, its spread not hopeless."""
        return sorted({case for (case, _), p in self.paired.items() if paired.needs_round(p, most_rounds)})


def judge_rounds(
    base_rounds: Sequence[RunRecord],
    head_rounds: Sequence[RunRecord],
    *,
    threshold_pct: float = verdict.DEFAULT_THRESHOLD_PCT,
    memory_threshold_pct: float = verdict.DEFAULT_MEMORY_THRESHOLD_PCT,
    baseline_file: str | None = None,
    head_file: str | None = None,
    most_rounds: int | None = None,
    counter_allowance: Mapping[str, str] | None = None,
) -> Judged:
    """Round k of the base is `base_rounds[k]`, measured next to `head_rounds[k]`; a round may hold only
    some cases (the ones still undecided). `most_rounds`: the rounds a case could still get, for
    the hint of an inconclusive one."""
    base, head = pooling.pool_records(base_rounds), pooling.pool_records(head_rounds)
    pooled = verdict.compare_records(base, head, threshold_pct=threshold_pct, memory_threshold_pct=memory_threshold_pct,
                                     baseline_file=baseline_file, head_file=head_file, base_rounds=base_rounds,
                                     counter_allowance=counter_allowance)
    heads = {r.id: r for r in head.results}
    figures: dict[tuple[str, str], paired.Paired] = {}
    verdicts = []
    for v in pooled:
        if v.metric not in TIME_METRICS or v.status in ("new", "missing"):
            verdicts.append(v)
            continue
        case = heads[v.case_id]
        threshold = v.threshold_pct
        medians = [(verdict.median_ms(b, v.metric), verdict.median_ms(h, v.metric)) for b, h in _pairs(v.case_id, base_rounds, head_rounds)]
        p = paired.judge([b for b, _ in medians], [h for _, h in medians], threshold,
                         bound=case.metrics.bound if case.metrics else None, host_clock=case.timer == "host-clock")
        if p is None:
            verdicts.append(dataclasses.replace(v, status="inconclusive", reason="no_spread", next_steps=(NextStep("more_rounds"),),
                                                time=TimeEvidence(paired=True, kind_of_time=v.kind_of_time)))
            continue
        figures[v.case_id, v.metric] = p
        verdicts.append(_verdict(v, p, base_rounds, head_rounds, most_rounds, gpu=case.device_uuid is not None))
    return Judged(tuple(verdicts), figures, base, head)


def _verdict(v: Verdict, p: paired.Paired, base_rounds: Sequence[RunRecord], head_rounds: Sequence[RunRecord],
             most_rounds: int | None, *, gpu: bool) -> Verdict:
    throttled = sorted({reason for record in (*base_rounds, *head_rounds) for r in record.results
                        if r.id == v.case_id and r.telemetry and r.telemetry.throttled
                        for reason in r.telemetry.throttle_reasons or ("throttled",)})
    status, reason = decide.decide(decide.Evidence(
        change_pct=p.change_pct, tolerance_pct=p.tolerance_pct, reach_pct=p.detectable_pct,
        threshold_pct=p.threshold_pct, throttle_explains=bool(throttled), past_bound=p.past_bound))
    steps: tuple[NextStep, ...] = ()
    if status == "regressed":
        steps = (NextStep("accept"),)
    elif reason == "throttled":
        steps = (NextStep("rerun_idle"),)
    elif status == "inconclusive":
        needed = paired.rounds_needed(p, 10 * (most_rounds or p.rounds))
        if needed and (most_rounds is None or needed <= most_rounds):
            steps = (NextStep("more_rounds", needed),)
        else:
            steps = (NextStep("lock_clocks" if gpu else "quieten"),) + ((NextStep("more_rounds", needed),) if needed else ())
    noise = Noise(runs=p.rounds, spread_pct=p.spread_pct, tolerance_pct=p.tolerance_pct, detectable_pct=p.detectable_pct,
                  floored=p.floored, past_bound=p.past_bound)
    evidence = TimeEvidence(noise=noise, paired=True, throttled_in=("rounds",) if reason == "throttled" else (),
                            throttle_reasons=tuple(throttled) if reason == "throttled" else (),
                            kind_of_time=v.kind_of_time)
    return dataclasses.replace(v, status=status, reason=reason, next_steps=steps, baseline=p.base_ms, current=p.head_ms,
                               change_pct=p.change_pct, threshold_pct=p.threshold_pct, time=evidence)


def _pairs(case_id: str, base_rounds: Sequence[RunRecord], head_rounds: Sequence[RunRecord]
           ) -> list[tuple[CaseResult, CaseResult]]:
    """The case's results in the rounds where both sides measured it."""
    out = []
    for base, head in zip(base_rounds, head_rounds):
        b = next((r for r in base.results if r.id == case_id and verdict.measured(r)), None)
        h = next((r for r in head.results if r.id == case_id and verdict.measured(r)), None)
        if b is not None and h is not None:
            out.append((b, h))
    return out
