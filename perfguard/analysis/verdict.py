"""Verdicts: did a case's times (TIME_METRICS) or its memory move past what its own noise allows?

Each kind of time is judged only against the same kind in the baseline: GPU time against GPU time,
the caller's time against the caller's, GPU busy time against busy time; when a case's regime
changed, each verdict says so. A time is judged run against runs: the change of this run's median from the centre of the
baseline's runs must pass the case's tolerance, which comes from how far its median moves between
independent runs (perfguard/analysis/noise.py) and is never below the threshold the user says
matters. Within-run samples only say how precise this run's median is; they never stand for
run-to-run evidence, so no verdict claims a p-value or a confidence. Memory (peak, footprint, retained
per call) is deterministic, so its change is compared with its threshold directly
(memory_verdicts.py). Pure functions of the records: no files, no devices.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from perfguard import defaults
from perfguard.analysis import counting, decide, noise, priors
from perfguard.analysis.across import OtherModel, env_differences, other_model
from perfguard.analysis.memory_verdicts import memory_verdicts
from perfguard.errors import BaselineError
from perfguard.model import (
    NextStep,
    Noise,
    BaselineEntry,
    BaselineFile,
    CaseResult,
    DeviceInfo,
    TimeSummary,
    RunRecord,
    Reason,
    RunSummary,
    TimeEvidence,
    TimeMetric,
    Verdict,
    VerdictStatus,
    run_summary,
)

# The change that matters when the user names none. It is a floor under each case's noise-derived
# tolerance, not the tolerance itself: stable memory-bound kernels repeat within 0.1-0.7% from run
# to run, and a 5% floor (the default before baselines kept several runs) hid 3-5% slowdowns the
# noise would have let the gate see; noisy cases get their wider tolerance from their runs.
DEFAULT_THRESHOLD_PCT = defaults.THRESHOLD_PCT
DEFAULT_MEMORY_THRESHOLD_PCT = defaults.MEMORY_THRESHOLD_PCT
MIN_SAMPLES = 5  # fewer samples than this give no median worth judging


def compare_case(
    current: CaseResult | None,
    baseline: BaselineEntry | CaseResult | None,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    current_fingerprint: Mapping[str, object] | None = None,
    baseline_fingerprint: Mapping[str, object] | None = None,
    baseline_file: str | None = None,
    host: str | None = None,
    counter_allowance: Mapping[str, str] | None = None,
    other: OtherModel | None = None,
) -> list[Verdict]:
    """Verdicts for one case: its times (or new / missing), peak memory when both sides have it, then its
    work counters (analysis/counting.py).

    A case's own `threshold` / `memory_threshold` (from the current run when it ran) override the
    run-wide ones. A baseline entry's fingerprint is used unless `baseline_fingerprint` is given; a
    bare result as the baseline counts as one run. `host` is the machine this run came from. `other`: the
    baseline is another GPU model's (analysis/across.py): its times read new, and only what does not depend
    on the model is judged, where nothing else differs.
    """
    entry = as_entry(baseline) if isinstance(baseline, CaseResult) else baseline
    if entry is not None and not measured(entry.result):
        entry = None
    if entry is not None and baseline_fingerprint is None:
        baseline_fingerprint = entry.fingerprint
    declared = current or (entry.result if entry else None)
    if declared is None:
        return []
    threshold = declared.threshold if declared.threshold is not None else threshold_pct
    mem_threshold = declared.memory_threshold if declared.memory_threshold is not None else memory_threshold_pct
    if current is None or not measured(current):
        if entry is None:
            return []
        metric = entry.result.judged_metric
        return [_Context(declared.id, baseline_file).verdict(
            metric, "missing", "not_measured" if current else "did_not_run", threshold,
            baseline=_centre(entry, metric), status_in=current.status if current else None,
            time=TimeEvidence(kind_of_time=entry.result.regime or None))]
    metric = current.judged_metric
    if entry is None:
        return [_Context(declared.id, baseline_file).verdict(
            metric, "new", "not_in_baseline", threshold, current=median_ms(current, metric),
            next_steps=(NextStep("record"),), time=TimeEvidence(kind_of_time=current.regime or None))]
    if other is not None:
        return _across(_Context(declared.id, baseline_file, model=other.model), current, entry, other, threshold,
                       mem_threshold, counter_allowance)
    ctx = _Context(declared.id, baseline_file, env_differences(baseline_fingerprint, current_fingerprint))
    verdicts = []
    for name in noise.judged_times(current, entry.result):
        verdict = _time(ctx, name, current, entry, threshold, host)
        if verdict is not None:
            verdicts.append(verdict)
    verdicts += memory_verdicts(ctx, current, entry.result, mem_threshold)
    return verdicts + counting.compare_counters(current, entry.result, allowance=counter_allowance, env=ctx.env,
                                                baseline_file=baseline_file)


def _across(ctx: _Context, current: CaseResult, entry: BaselineEntry, other: OtherModel, threshold: float,
            memory_threshold: float, allowance: Mapping[str, str] | None) -> list[Verdict]:
    """A case against another GPU model's figures: its time reads new, naming the model and what else
    differs; what does not depend on the model is judged where nothing else differs."""
    metric = current.judged_metric
    time = ctx.verdict(metric, "new", "other_model", threshold, current=median_ms(current, metric),
                       next_steps=(NextStep("record"),), time=TimeEvidence(kind_of_time=current.regime or None),
                       env_mismatch=other.differs)
    judged = [v for v in memory_verdicts(ctx, current, entry.result, memory_threshold) if other.judges(v.metric)]
    judged += [dataclasses.replace(v, baseline_model=other.model) for v in counting.compare_counters(
        current, entry.result, allowance=allowance, baseline_file=ctx.baseline_file) if other.judges(v.metric)]
    return [time, *judged]


def as_entry(result: CaseResult, recorded_at: str = "", host: str | None = None) -> BaselineEntry:
    """A single run's result as a baseline entry of one run (a record compared with a record)."""
    return BaselineEntry(recorded_at=recorded_at, commit=None, fingerprint={}, result=result,
                         runs=(run_summary(result, recorded_at, host=host),))


def compare_to_baseline(
    results: Iterable[CaseResult],
    baseline: BaselineFile | None,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    current_fingerprint: Mapping[str, object] | None = None,
    baseline_file: str | None = None,
    host: str | None = None,
    counter_allowance: Mapping[str, str] | None = None,
) -> list[Verdict]:
    """Every case of a run against a device's baseline file, plus `missing` for its cases that did not run."""
    current = {r.id: r for r in results}
    cases = baseline.cases if baseline else {}
    verdicts: list[Verdict] = []
    for case_id in sorted(set(current) | set(cases)):
        verdicts += compare_case(
            current.get(case_id),
            cases.get(case_id),
            threshold_pct=threshold_pct,
            memory_threshold_pct=memory_threshold_pct,
            current_fingerprint=current_fingerprint,
            baseline_file=baseline_file,
            host=host,
            counter_allowance=counter_allowance,
        )
    return verdicts


def compare_records(
    base: RunRecord,
    head: RunRecord,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    baseline_file: str | None = None,
    head_file: str | None = None,
    base_rounds: Sequence[RunRecord] = (),
    counter_allowance: Mapping[str, str] | None = None,
) -> list[Verdict]:
    """Verdicts between two run records, case by case, by the same rules as against a baseline file.
    `base_rounds`: the separate runs `base` pooled (perfguard ab), each a run of the baseline's."""
    base_results = _by_id(base, baseline_file or "the base record")
    rounds: dict[str, list[RunSummary]] = {}
    for record in base_rounds:
        for r in record.results:
            if measured(r):
                rounds.setdefault(r.id, []).append(run_summary(r, record.created_at, host=_host(record)))
    head_results = _by_id(head, head_file or "the head record")
    base_env, head_env = _environments(base), _environments(head)
    base_devices, head_devices = {d.slug: d for d in base.devices}, {d.slug: d for d in head.devices}
    base_host, head_host = _host(base), _host(head)
    verdicts: list[Verdict] = []
    for case_id in sorted(set(base_results) | set(head_results)):
        old, new = base_results.get(case_id), head_results.get(case_id)
        entry = as_entry(old, base.created_at, base_host) if old and measured(old) else None
        if entry is not None and rounds.get(case_id):
            entry = dataclasses.replace(entry, runs=tuple(rounds[case_id]))
        verdicts += compare_case(
            new,
            entry,
            threshold_pct=threshold_pct,
            memory_threshold_pct=memory_threshold_pct,
            current_fingerprint=head_env.get(new.device) if new else None,
            baseline_fingerprint=base_env.get(old.device) if old else None,
            baseline_file=baseline_file,
            host=head_host,
            counter_allowance=counter_allowance,
            other=_other(base_devices.get(old.device) if old else None, head_devices.get(new.device) if new else None),
        )
    return verdicts


def _other(base: DeviceInfo | None, head: DeviceInfo | None) -> OtherModel | None:
    """The base's model, where a case was measured on another model than the head's."""
    return other_model(base, head) if base is not None and head is not None else None


# --- times and memory -------------------------------------------------------------------------


def _time(ctx: _Context, metric: TimeMetric, current: CaseResult, entry: BaselineEntry, threshold: float,
          host: str | None) -> Verdict | None:
    """The verdict of one kind of time against the same kind in the baseline's runs."""
    was, now = entry.result.regime, current.regime
    # Between "device" and "enqueue-bound" the GPU time is timed alike; to or from "caller" there is
    # no GPU time on one side, and each figure is judged against its own kind, which the verdict says.
    regimes = (was, now) if was and now and was != now and "caller" in (was, now) else ()
    est = noise.estimate(current, entry, threshold, host=host, metric=metric)
    if est is None:
        if metric != current.judged_metric:
            return None
        return ctx.verdict(metric, "new", "kind_not_in_baseline", threshold, current=median_ms(current, metric),
                           time=TimeEvidence(regimes=regimes, kind_of_time=now or None), next_steps=(NextStep("record"),))
    summary, samples = _time_of(current, metric)
    old, new = est.centre_ms, median_ms(current, metric)
    change = 100.0 * (new / old - 1.0)
    throttled = tuple(name for name, t in (("baseline", entry.result.telemetry), ("run", current.telemetry))
                      if t and t.throttled)
    # A thermal or hardware slowdown lowers the clock; it can account for a slowdown up to the
    # clock's drop, not for a 3x one.
    drop = _clock_drop_pct(entry, current)
    explains = bool(throttled) and (drop is None or change <= 100.0 * ((1 + drop / 100.0) * (1 + est.tolerance_pct / 100.0) - 1.0))
    once = priors.KINDS[metric].once_a_run  # a compile's time: the run is its one sample
    own = 0.0 if once else _half_width(summary)
    status, reason = decide.decide(decide.Evidence(
        change_pct=change, tolerance_pct=est.tolerance_pct, reach_pct=reach(est, decide.GATE), threshold_pct=threshold,
        own_pct=own, enough_samples=once or len(samples) >= MIN_SAMPLES or (summary is not None and summary.n >= MIN_SAMPLES),
        throttle_explains=explains, past_bound=est.past_bound))
    if status == "regressed" and metric == "caller_time" and _compiled(current, entry.result):
        # A compiled call's host time (dynamo's guards and frame) moved 170-448 µs between processes
        # on an H200 while its GPU time stayed at 24.0-24.7 µs (issue 32): a few runs cannot bound it.
        # What a compiled call does more is judged by its GPU and busy time and its counters.
        status, reason = "inconclusive", "compiled_host"
    reasons = sorted({r for t in (entry.result.telemetry, current.telemetry) if t for r in t.throttle_reasons}) \
        if reason == "throttled" else []
    evidence = TimeEvidence(noise=est, own_half_width_pct=own, throttled_in=throttled if reason == "throttled" else (),
                            throttle_reasons=tuple(reasons), regimes=regimes, kind_of_time=now or None)
    return ctx.verdict(metric, status, reason, threshold, old, new, change, next_steps=_steps(status, reason, est, threshold),
                       time=evidence)


def _compiled(*results: CaseResult) -> bool:
    return any(r.counters is not None and r.counters.compiled for r in results)


def reach(est: Noise, rule: decide.Rule) -> float:
    """The change the gate catches with `rule`'s power (its `same` asks this be within the threshold)."""
    return est.tolerance_pct + statistics.NormalDist().inv_cdf(rule.same_power) * est.predicted_pct


def _steps(status: str, reason: str, est: Noise, threshold: float) -> tuple[NextStep, ...]:
    if status == "regressed":
        return (NextStep("accept"),)
    if status == "improved":
        return (NextStep("record"),)
    if reason == "few_samples":
        return (NextStep("raise_budget"),)
    if reason == "throttled":
        return (NextStep("rerun_idle"),)
    if reason == "imprecise":
        return (NextStep("rerun_quiet"),)
    if reason == "compiled_host":
        return ()
    if status == "inconclusive":
        return decidable(est, threshold)
    return ()


def decidable(est: Noise, threshold: float) -> tuple[NextStep, ...]:
    """What would let the gate see a change of `threshold` in an inconclusive case."""
    ways = []
    if est.judged_by == "fleet":
        ways.append(NextStep("own_runs", noise.OWN_RUNS))
    needed = noise.runs_needed(est, threshold)
    if needed is None and est.runs < noise.OWN_RUNS:  # too few runs to show their spread: enough that they do
        needed = noise.OWN_RUNS
    if needed is not None:
        ways.append(NextStep("more_runs", needed))
    ways.append(NextStep("ab"))
    if not est.past_bound:  # past the bound, no threshold decides it
        ways.append(NextStep("threshold", math.ceil(est.tolerance_pct)))
    return tuple(ways)


def _clock_drop_pct(entry: BaselineEntry, current: CaseResult) -> float | None:
    """How much slower this run's SM clock makes a clock-bound call than at the baseline's newest run's, %."""
    old = entry.runs[-1].sm_clock_mhz if entry.runs else None
    new = current.telemetry.sm_clock_mhz_mean if current.telemetry else None
    return 100.0 * (old / new - 1.0) if old and new else None


def _half_width(summary: TimeSummary | None) -> float:
    """This run's own 95% half-width of its median, %."""
    if summary is None:
        return 0.0
    half = summary.ci_half_width_pct
    return half if math.isfinite(half) else 100.0


# --- helpers ----------------------------------------------------------------------------------


class _Context:
    """What every verdict of one case shares."""

    def __init__(self, case_id: str, baseline_file: str | None = None, env: tuple[str, ...] = (),
                 model: str | None = None):
        self.case_id, self.baseline_file, self.env, self.model = case_id, baseline_file, env, model

    def verdict(self, metric: str, status: VerdictStatus, reason: Reason, threshold: float, baseline: float | None = None,
                current: float | None = None, change: float | None = None, **figures: Any) -> Verdict:
        return Verdict(
            case_id=self.case_id,
            metric=metric,
            status=status,
            baseline=baseline,
            current=current,
            change_pct=change if change is None or math.isfinite(change) else None,
            threshold_pct=float(threshold),
            baseline_file=self.baseline_file,
            reason=reason,
            baseline_model=self.model,
            **{"env_mismatch": self.env, **figures},
        )


def measured(result: CaseResult) -> bool:
    """Whether a result holds the figure it is judged by (a measured case, not a smoke run or an error)."""
    return result.status == "ok" and result.judged_metric in result.timings


def _centre(entry: BaselineEntry, metric: str) -> float:
    """The median of the baseline runs' medians: the figure a run is compared with (as noise.estimate's)."""
    medians = [m for m in (r.median_of(metric) for r in entry.runs) if m is not None]
    return statistics.median(medians) if medians else median_ms(entry.result, metric)


def _time_of(result: CaseResult, metric: str) -> tuple[TimeSummary | None, tuple[float, ...]]:
    """A time metric's summary and samples (None and none where the result has no such time)."""
    timing = result.timings.get(metric)  # type: ignore[call-overload]
    return (timing.summary, timing.samples_ms) if timing else (None, ())


def median_ms(result: CaseResult, metric: str) -> float:
    """The result's median of `metric`; NaN where it has none (no comparison with NaN is true)."""
    median = result.median_of(metric)
    return median if median is not None else math.nan


def _by_id(record: RunRecord, label: str) -> dict[str, CaseResult]:
    by_id: dict[str, CaseResult] = {}
    for r in record.results:
        if r.id in by_id:
            raise BaselineError(
                f"{label}: case {r.id!r} appears more than once (devices {by_id[r.id].device}, {r.device}); "
                "compare records of one device"
            )
        by_id[r.id] = r
    return by_id


def _host(record: RunRecord) -> str | None:
    hosts = {d.host for d in record.devices}
    return hosts.pop() if len(hosts) == 1 else None


def _environments(record: RunRecord) -> dict[str, dict[str, object]]:
    """Per device slug, what a result's figures depend on: the device model and software versions."""
    return {d.slug: {"device": d.name, **d.fingerprint()} for d in record.devices}
