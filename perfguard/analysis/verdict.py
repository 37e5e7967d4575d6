"""Verdicts: did a case's latency or peak memory move past its threshold, beyond the noise?

Latency is a distribution, so a change counts only when a rank test says it is real *and* the
median moved by more than the threshold; a measurement too noisy to tell a threshold-sized change
from none is `unstable`, never a silent pass. Peak memory is deterministic, so its change is
compared with its threshold directly. Pure functions of the records: no files, no devices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from scipy import stats

from perfguard import units
from perfguard.errors import BaselineError
from perfguard.model import VERDICT_STATUSES, BaselineEntry, BaselineFile, CaseResult, RunRecord, Telemetry, Verdict

STATUSES = VERDICT_STATUSES

DEFAULT_THRESHOLD_PCT = 5.0
DEFAULT_MEMORY_THRESHOLD_PCT = 5.0
# Peak memory below this much change never flips a verdict: allocator rounding (512 B blocks, 2 MiB
# segments for large tensors) moves tiny cases by whole percents without anything having changed.
MEMORY_FLOOR_BYTES = 64 * 1024

# Significance of the two-sided rank test. A false alarm needs the test to reject (probability
# ALPHA when nothing changed, and only half of that in the slower direction) *and* the median to
# move past the threshold, so identically distributed A/A samples are flagged `regressed` less than
# ALPHA / 2 = 0.5% of the time: at most about one in 200 comparisons, within the project's 1%
# target. A smaller ALPHA would cost the power to confirm a 10% slowdown in a noisy CPU run of a few
# dozen samples; between two real runs that differ by more than noise (clock state, another
# process), it is the threshold, not ALPHA, that keeps small drifts from failing a build.
ALPHA = 0.01
INTERVAL_LEVEL = 0.95  # of the bootstrap interval of the ratio of medians
BOOTSTRAP_RESAMPLES = 1000  # percentile interval endpoints move by well under 1% beyond this
BOOTSTRAP_SEED = 20261129  # fixed: the same two runs always get the same verdict
MIN_SAMPLES = 5  # below this a rank test cannot reach ALPHA at all (5 vs 5 gives p >= 0.008)


def compare_case(
    current: CaseResult | None,
    baseline: BaselineEntry | CaseResult | None,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    current_fingerprint: Mapping[str, object] | None = None,
    baseline_fingerprint: Mapping[str, object] | None = None,
    baseline_file: str | None = None,
) -> list[Verdict]:
    """Verdicts for one case: latency (or new / missing), then peak memory when both sides have it.

    A case's own `threshold` / `memory_threshold` (from the current run when it ran) override the
    run-wide ones. A baseline entry's fingerprint is used unless `baseline_fingerprint` is given.
    """
    if isinstance(baseline, BaselineEntry):
        baseline_fingerprint = baseline.fingerprint if baseline_fingerprint is None else baseline_fingerprint
        baseline = baseline.result
    if baseline is not None and not _measured(baseline):
        baseline = None
    declared = current or baseline
    if declared is None:
        return []
    threshold = declared.threshold if declared.threshold is not None else threshold_pct
    where = baseline_file or "the baseline"
    if current is None or not _measured(current):
        if baseline is None:
            return []
        how = f"was not measured in this run (status {current.status})" if current else "did not run"
        return [_Context(declared.id, baseline_file).verdict(
            "latency", "missing", threshold, baseline=_median(baseline),
            detail=f"in {where} ({_duration(_median(baseline))}) but {how}")]
    if baseline is None:
        return [_Context(declared.id, baseline_file).verdict(
            "latency", "new", threshold, current=_median(current),
            detail=f"{_duration(_median(current))}, not in {where} yet", hint="record it with --perfguard-update")]
    ctx = _Context(declared.id, baseline_file, env_differences(baseline_fingerprint, current_fingerprint))
    verdicts = [_latency(ctx, current, baseline, threshold)]
    mem_threshold = declared.memory_threshold if declared.memory_threshold is not None else memory_threshold_pct
    memory = _peak_memory(ctx, current, baseline, mem_threshold)
    if memory is not None:
        verdicts.append(memory)
    return verdicts


def compare_to_baseline(
    results: Iterable[CaseResult],
    baseline: BaselineFile | None,
    *,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    current_fingerprint: Mapping[str, object] | None = None,
    baseline_file: str | None = None,
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
) -> list[Verdict]:
    """Verdicts between two run records, case by case, by the same rules as against a baseline file."""
    base_results = _by_id(base, baseline_file or "the base record")
    head_results = _by_id(head, head_file or "the head record")
    base_env, head_env = _environments(base), _environments(head)
    verdicts: list[Verdict] = []
    for case_id in sorted(set(base_results) | set(head_results)):
        old, new = base_results.get(case_id), head_results.get(case_id)
        verdicts += compare_case(
            new,
            old,
            threshold_pct=threshold_pct,
            memory_threshold_pct=memory_threshold_pct,
            current_fingerprint=head_env.get(new.device) if new else None,
            baseline_fingerprint=base_env.get(old.device) if old else None,
            baseline_file=baseline_file,
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


# --- the two metrics --------------------------------------------------------------------------


def _latency(ctx: _Context, current: CaseResult, baseline: CaseResult, threshold: float) -> Verdict:
    old, new = _median(baseline), _median(current)
    ratio = new / old if old > 0 else math.inf
    change = 100.0 * (ratio - 1.0)
    figures = f"{_duration(old)} → {_duration(new)} ({change:+.1f}%"
    sides = (("baseline", baseline.telemetry), ("this run", current.telemetry))
    throttled = [name for name, t in sides if t and t.throttled]
    if throttled:
        reasons = ", ".join(sorted({reason for _, t in sides if t for reason in t.throttle_reasons}))
        return ctx.verdict("latency", "unstable", threshold, old, new, change,
                           detail=f"{figures}) measured while throttled in {' and '.join(throttled)}"
                           f"{f' ({reasons})' if reasons else ''}", hint="rerun on an idle, cool GPU")
    b, c = np.asarray(baseline.samples_ms, dtype=float), np.asarray(current.samples_ms, dtype=float)
    if min(len(b), len(c)) < MIN_SAMPLES or not old > 0:
        return ctx.verdict("latency", "unstable", threshold, old, new, change,
                           detail=f"{figures}) from too few samples ({len(b)} and {len(c)}) to decide",
                           hint="raise --perfguard-budget")
    p = float(stats.mannwhitneyu(c, b, alternative="two-sided").pvalue)
    p = 1.0 if math.isnan(p) else p  # all samples tied: no evidence of a change
    low, high = _ratio_interval(c, b)
    stated = f"{figures}, p={p:.2g}, {_confidence(p)} confidence)"
    capped = [bool(t and t.power_capped) for _, t in sides]
    if capped[0] != capped[1] and abs(change) > threshold:
        # One run held down by the power cap and the other not: the change may be the card's power
        # state rather than the code (an attention kernel first after idle ran 8% faster uncapped).
        where_capped = sides[capped.index(True)][0]
        return ctx.verdict("latency", "unstable", threshold, old, new, change, p,
                           detail=f"{stated} with the power cap engaged only in {where_capped}",
                           hint="rerun on a GPU under the same load as when the baseline was recorded")
    clocks = _capped_clocks(baseline.telemetry, current.telemetry)
    if clocks and abs(change) > threshold and abs(100.0 * (ratio * clocks[1] / clocks[0] - 1.0)) <= threshold:
        # Both runs under the power cap, at different clocks, and the clock ratio accounts for the
        # change: on the H200 an attention kernel read +5.3% in an A/A rerun at a 5% lower mean clock.
        return ctx.verdict("latency", "unstable", threshold, old, new, change, p,
                           detail=f"{stated} while the power cap held the SM clock at {clocks[1]:.0f} MHz against "
                           f"{clocks[0]:.0f} MHz in the baseline, which accounts for the change",
                           hint="rerun on a GPU under the same load as when the baseline was recorded")
    if p < ALPHA and change > threshold:
        return ctx.verdict("latency", "regressed", threshold, old, new, change, p, detail=stated)
    if p < ALPHA and change < -threshold:
        return ctx.verdict("latency", "improved", threshold, old, new, change, p,
                           detail=stated, hint="run with --perfguard-update to make it the baseline")
    # Past the threshold but not significant, or an interval spanning both "no change" and a
    # threshold-sized slowdown: the noise hides what a person needs to know, so say so.
    if abs(change) > threshold or (low <= 1.0 and high >= 1.0 + threshold / 100.0):
        return ctx.verdict("latency", "unstable", threshold, old, new, change, p,
                           detail=f"{figures}, p={p:.2g}) too noisy to decide at this threshold "
                           f"(ratio {low:.3f}-{high:.3f} at {INTERVAL_LEVEL:.0%})",
                           hint="rerun on a quieter machine or raise --perfguard-budget")
    return ctx.verdict("latency", "same", threshold, old, new, change, p, detail=f"{figures}, p={p:.2g})")


def _capped_clocks(baseline: Telemetry | None, current: Telemetry | None) -> tuple[float, float] | None:
    """The mean SM clocks of both runs when the power cap held at least one of them down; else None."""
    if not (baseline and current) or not (baseline.power_capped or current.power_capped):
        return None
    if not (baseline.sm_clock_mhz_mean and current.sm_clock_mhz_mean):
        return None
    return baseline.sm_clock_mhz_mean, current.sm_clock_mhz_mean


def _peak_memory(ctx: _Context, current: CaseResult, baseline: CaseResult, threshold: float) -> Verdict | None:
    old = baseline.memory.peak_allocated_bytes if baseline.memory else None
    new = current.memory.peak_allocated_bytes if current.memory else None
    if old is None or new is None:  # a CPU run: no allocator to ask
        return None
    allowed = max(old * threshold / 100.0, MEMORY_FLOOR_BYTES)
    change = 100.0 * (new - old) / old if old else None
    status = "regressed" if new - old > allowed else "improved" if old - new > allowed else "same"
    shown = f"{change:+.1f}%" if change is not None else f"{units.size(new - old)}"
    hint = "run with --perfguard-update to make it the baseline" if status == "improved" else ""
    return ctx.verdict("peak_memory", status, threshold, float(old), float(new), change,
                       detail=f"{units.size(old)} → {units.size(new)} ({shown}, deterministic)", hint=hint)


# --- helpers ----------------------------------------------------------------------------------


class _Context:
    """What every verdict of one case shares, and how its message line is put together."""

    def __init__(self, case_id: str, baseline_file: str | None = None, env: tuple[str, ...] = ()):
        self.case_id, self.baseline_file, self.env = case_id, baseline_file, env

    def verdict(self, metric: str, status: str, threshold: float, baseline: float | None = None,
                current: float | None = None, change: float | None = None, p: float | None = None,
                *, detail: str, hint: str = "") -> Verdict:
        compared = status not in ("new", "missing")
        against = f" against {self.baseline_file}" if self.baseline_file and compared else ""
        bound = f" (threshold {threshold:g}%)" if compared else ""
        env = f"; environment differs from the baseline: {', '.join(self.env)}" if self.env else ""
        return Verdict(
            case_id=self.case_id,
            metric=metric,
            status=status,
            baseline=baseline,
            current=current,
            change_pct=change if change is None or math.isfinite(change) else None,
            p_value=p,
            confidence=None if p is None else 1.0 - p,
            threshold_pct=float(threshold),
            baseline_file=self.baseline_file,
            env_mismatch=self.env,
            message=f"{metric} {status}: {detail}{against}{bound}{f'; {hint}' if hint else ''}{env}",
        )


def _ratio_interval(current: np.ndarray, baseline: np.ndarray) -> tuple[float, float]:
    """Bootstrap interval of median(current) / median(baseline), the two samples resampled independently."""
    result = stats.bootstrap(
        (current, baseline),
        lambda c, b, axis: np.median(c, axis=axis) / np.median(b, axis=axis),
        vectorized=True,
        paired=False,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=INTERVAL_LEVEL,
        method="percentile",  # BCa fails on tied samples, which quantised GPU timers produce
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _confidence(p: float) -> str:
    # Truncated and capped, not rounded: a p of 3e-05 reads "99.99%", never an overclaiming "100.00%".
    return f"{min(math.floor((1.0 - p) * 10000) / 100, 99.99):.2f}%"


def _duration(ms: float) -> str:
    """Four significant digits ("1.234 ms", "987.6 µs"): enough to see a 0.1% move in a message."""
    for unit, scale in (("s", 1e3), ("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6)):
        if abs(ms) >= scale or unit == "ns":
            value = ms / scale
            if value:  # round first, so 9.99996 reads "10.00", not "10.000"
                value = round(value, 3 - math.floor(math.log10(abs(value))))
            decimals = max(0, 3 - math.floor(math.log10(abs(value)))) if value else 3
            return f"{value:.{decimals}f} {unit}"
    raise AssertionError("unreachable")


def _measured(result: CaseResult) -> bool:
    return result.status == "ok" and (result.latency is not None or bool(result.samples_ms))


def _median(result: CaseResult) -> float:
    # The summary's median uses every sample; a stored result may keep only a thinned subset.
    return result.latency.median_ms if result.latency else float(np.median(result.samples_ms))


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


def _environments(record: RunRecord) -> dict[str, dict[str, object]]:
    """Per device slug, what a result's figures depend on: the device model and software versions."""
    return {d.slug: {"device": d.name, **d.fingerprint()} for d in record.devices}
