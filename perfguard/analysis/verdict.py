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

from perfguard import defaults, units
from perfguard.analysis import counting, noise
from perfguard.analysis.memory_verdicts import memory_verdicts
from perfguard.errors import BaselineError
from perfguard.model import (
    NEW_HINT,
    TIME_LABELS,
    VERDICT_STATUSES,
    BaselineEntry,
    BaselineFile,
    CaseResult,
    Latency,
    RunRecord,
    RunSummary,
    TimeMetric,
    Verdict,
    run_summary,
)

STATUSES = VERDICT_STATUSES

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
) -> list[Verdict]:
    """Verdicts for one case: its times (or new / missing), peak memory when both sides have it, then its
    work counters (analysis/counting.py).

    A case's own `threshold` / `memory_threshold` (from the current run when it ran) override the
    run-wide ones. A baseline entry's fingerprint is used unless `baseline_fingerprint` is given; a
    bare result as the baseline counts as one run. `host` is the machine this run came from.
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
    where = baseline_file or "the baseline"
    if current is None or not measured(current):
        if entry is None:
            return []
        metric = entry.result.judged_metric
        old = _centre(entry, metric)
        how = f"was not measured in this run (status {current.status})" if current else "did not run"
        return [_Context(declared.id, baseline_file).verdict(
            metric, "missing", threshold, baseline=old, baseline_runs=len(entry.runs),
            detail=f"in {where} ({units.precise_duration(old)}) but {how}")]
    metric = current.judged_metric
    if entry is None:
        return [_Context(declared.id, baseline_file).verdict(
            metric, "new", threshold, current=median_ms(current, metric),
            detail=f"{units.precise_duration(median_ms(current, metric))}, not in {where} yet",
            hint=NEW_HINT)]
    ctx = _Context(declared.id, baseline_file, env_differences(baseline_fingerprint, current_fingerprint))
    verdicts = []
    for name in noise.judged_times(current, entry.result):
        verdict = _time(ctx, name, current, entry, threshold, host)
        if verdict is not None:
            verdicts.append(verdict)
    mem_threshold = declared.memory_threshold if declared.memory_threshold is not None else memory_threshold_pct
    verdicts += memory_verdicts(ctx, current, entry.result, mem_threshold)
    return verdicts + counting.compare_counters(current, entry.result, allowance=counter_allowance, env=ctx.env,
                                                baseline_file=baseline_file)


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
        )
    return verdicts


def counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """How many verdicts of each status, every status present, in display order."""
    result = dict.fromkeys(STATUSES, 0)
    for v in verdicts:
        result[v.status] = result.get(v.status, 0) + 1
    return result


def ordered(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """Regressions first, then the rest in the order of STATUSES, by case."""
    rank = {s: i for i, s in enumerate(STATUSES)}
    return sorted(verdicts, key=lambda v: (rank.get(v.status, len(rank)), v.case_id, v.metric))


def env_differences(
    baseline: Mapping[str, object] | None, current: Mapping[str, object] | None
) -> tuple[str, ...]:
    """Each software version that differs, as "torch 2.11.0 → 2.12.0"; nothing when either side is unknown."""
    if not baseline or not current:
        return ()
    diffs = []
    for key in sorted(set(baseline) | set(current)):
        old, new = baseline.get(key), current.get(key)
        if old != new:
            diffs.append(f"{key} {old if old is not None else 'n/a'} → {new if new is not None else 'n/a'}")
    return tuple(diffs)


# --- times and memory -------------------------------------------------------------------------


def _time(ctx: _Context, metric: TimeMetric, current: CaseResult, entry: BaselineEntry, threshold: float,
          host: str | None) -> Verdict | None:
    """The verdict of one kind of time against the same kind in the baseline's runs."""
    was, now = entry.result.regime, current.regime
    # Between "device" and "enqueue-bound" the GPU time is timed alike; to or from "caller" there is
    # no GPU time on one side, and each figure is judged against its own kind, which the line says.
    changed = f"timed as {now} (the baseline: {was}), each figure judged against its own kind" \
        if was and now and was != now and "caller" in (was, now) else ""
    est = noise.estimate(current, entry, threshold, host=host, metric=metric)
    if est is None:
        if metric != current.judged_metric:
            return None
        new = median_ms(current, metric)
        return ctx.verdict(metric, "new", threshold, current=new, detail=(
            f"{TIME_LABELS[metric]} {units.precise_duration(new)}, {changed or 'timed as ' + now}: the baseline holds no "
            f"{TIME_LABELS[metric]} to compare it with"),
            hint="record it with `pytest --perfguard --perfguard-update` to judge this figure")
    summary, samples = _time_of(current, metric)
    old, new = est.centre_ms, median_ms(current, metric)
    change = 100.0 * (new / old - 1.0)
    tol = est.tolerance_pct
    figures = f"{units.precise_duration(old)} → {units.precise_duration(new)} ({change:+.1f}%)"
    if metric != "latency":
        figures = f"{TIME_LABELS[metric]} {figures}"
    if changed:
        figures += f", {changed}"
    noise_text = f"{est.describe()}; smallest detectable change {est.detectable_pct:.1f}%"
    judge = dict(baseline_runs=est.runs, noise_pct=est.spread_pct, tolerance_pct=tol, detectable_pct=est.detectable_pct,
                 judged_by=est.judged_by, judged_sources=est.sources)
    verdict = lambda status, detail, hint="": ctx.verdict(  # noqa: E731
        metric, status, threshold, old, new, change, detail=detail, hint=hint, **judge)
    if len(samples) < MIN_SAMPLES and (summary is None or summary.n < MIN_SAMPLES):
        return verdict("unstable", f"{figures} from too few samples to decide", "raise --perfguard-budget")
    throttled = [name for name, t in (("the baseline", entry.result.telemetry), ("this run", current.telemetry))
                 if t and t.throttled]
    if throttled and change > tol:
        # A thermal or hardware slowdown lowers the clock; it can account for a slowdown up to the
        # clock's drop, not for a 3x one.
        drop = _clock_drop_pct(entry, current)
        if drop is None or change <= 100.0 * ((1 + drop / 100.0) * (1 + tol / 100.0) - 1.0):
            reasons = sorted({r for t in (entry.result.telemetry, current.telemetry) if t for r in t.throttle_reasons})
            why = f" ({', '.join(reasons)})" if reasons else ""
            return verdict("unstable", f"{figures} measured while throttled in {' and '.join(throttled)}{why}, "
                           "which may account for it", "rerun on an idle, cool GPU")
    own = _half_width(summary)
    if change - own > tol:
        return verdict("regressed", f"{figures}, outside ±{tol:.1f}%: {noise_text}")
    if change + own < -tol:
        return verdict("improved", f"{figures}, outside ±{tol:.1f}%: {noise_text}",
                       "run with --perfguard-update to make it the baseline")
    if abs(change) + own > tol and own > tol / 2:
        # This run's own median is too imprecise to say on which side of the tolerance it lies.
        return verdict("unstable", f"{figures}, ±{own:.1f}% within this run against a tolerance of ±{tol:.1f}%: "
                       "too noisy to decide", "rerun on a quieter machine or raise --perfguard-budget")
    if change > tol:
        return verdict("regressed", f"{figures}, outside ±{tol:.1f}%: {noise_text}")
    if change < -tol:
        return verdict("improved", f"{figures}, outside ±{tol:.1f}%: {noise_text}",
                       "run with --perfguard-update to make it the baseline")
    if tol > threshold:
        # Within a tolerance wider than the change the user asked about: a change of that size would
        # have read the same, so "same" would claim more than the gate saw.
        return verdict("inconclusive", f"{figures}, within ±{tol:.1f}%, wider than the {threshold:g}% threshold, "
                       f"so a change of {threshold:g}% would pass unseen: {noise_text}", decidable(est, threshold))
    return verdict("same", f"{figures}, within ±{tol:.1f}%: {noise_text}")


def decidable(est: noise.Noise, threshold: float) -> str:
    """What would let the gate see a change of `threshold` in an inconclusive case."""
    ways = []
    if est.judged_by == "fleet":
        ways.append(f"{noise.OWN_RUNS} runs of this {est.source} in the baseline, which then judge it alone "
                    f"(it has {est.own_runs})")
    needed = noise.runs_needed(est, threshold)
    if needed is not None:
        ways.append(f"{needed} baseline runs (it has {est.runs})")
    ways.append("`perfguard ab`, base and head measured by turns on one card")
    ways.append(f"a threshold of {math.ceil(est.tolerance_pct)}% (`@perf_case(threshold=...)`) if that is the change that matters")
    return "to decide it: " + "; or ".join(ways)


def _clock_drop_pct(entry: BaselineEntry, current: CaseResult) -> float | None:
    """How much slower this run's SM clock makes a clock-bound call than at the baseline's newest run's, %."""
    old = entry.runs[-1].sm_clock_mhz if entry.runs else None
    new = current.telemetry.sm_clock_mhz_mean if current.telemetry else None
    return 100.0 * (old / new - 1.0) if old and new else None


def _half_width(summary: Latency | None) -> float:
    """This run's own 95% half-width of its median, %."""
    if summary is None:
        return 0.0
    half = summary.ci_half_width_pct
    return half if math.isfinite(half) else 100.0


# --- helpers ----------------------------------------------------------------------------------


class _Context:
    """What every verdict of one case shares, and how its message line is put together."""

    def __init__(self, case_id: str, baseline_file: str | None = None, env: tuple[str, ...] = ()):
        self.case_id, self.baseline_file, self.env = case_id, baseline_file, env

    def verdict(self, metric: str, status: str, threshold: float, baseline: float | None = None,
                current: float | None = None, change: float | None = None,
                *, detail: str, hint: str = "", bound: str | None = None, **judged: object) -> Verdict:
        """`bound`: what a change is held to, when it is not the threshold (said in the message)."""
        compared = status not in ("new", "missing")
        against = f" against {self.baseline_file}" if self.baseline_file and compared else ""
        bound = f" ({bound or f'threshold {threshold:g}%'})" if compared else ""
        env = f"; environment differs from the baseline: {', '.join(self.env)}" if self.env else ""
        return Verdict(
            case_id=self.case_id,
            metric=metric,
            status=status,
            baseline=baseline,
            current=current,
            change_pct=change if change is None or math.isfinite(change) else None,
            threshold_pct=float(threshold),
            baseline_file=self.baseline_file,
            env_mismatch=self.env,
            message=f"{metric} {status}: {detail}{against}{bound}{f'; {hint}' if hint else ''}{env}",
            **judged,  # type: ignore[arg-type]
        )


def measured(result: CaseResult) -> bool:
    """Whether a result holds the figure it is judged by (a measured case, not a smoke run or an error)."""
    return result.status == "ok" and result.judged_metric in result.timings


def _centre(entry: BaselineEntry, metric: str) -> float:
    """The median of the baseline runs' medians: the figure a run is compared with (as noise.estimate's)."""
    medians = [m for m in (r.median_of(metric) for r in entry.runs) if m is not None]
    return statistics.median(medians) if medians else median_ms(entry.result, metric)


def _time_of(result: CaseResult, metric: str) -> tuple[Latency | None, tuple[float, ...]]:
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
