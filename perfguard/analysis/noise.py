"""How far a case's median moves between independent runs, and what change the gate can therefore see.

The run is the unit of evidence. Calls within one run share its clocks, card, host and process, so
their spread says nothing about the next run: on an H200, µs kernels sat 0.6-1.2 µs apart between two
hosts, compute-bound kernels under the power cap moved 1-3% between processes, memory-bound ones
0.1%, while every within-run interval was far narrower. So a case's tolerance comes from the medians
of the baseline's k runs (on the log scale, where a change is a ratio):

    s²   = (PRIOR_WEIGHT·s0² + (k-1)·s_runs²) / (PRIOR_WEIGHT + k-1)   the run-to-run spread
    sp   = √(s²·(1 + 1/k) + card²)                                      a new run against the runs' centre
    T    = max(threshold, t·sp + floor)                                  the tolerance: past it, the verdict moves
    D    = T + Z_POWER·sp                                                the smallest slowdown caught 19 times in 20

- s0 is a prior per kind of case (PRIOR_PCT, from the H200's A/A runs, by roofline bound), raised to
  the case's own drift within its newest run (the spread of the medians of consecutive blocks of its
  samples). With one run it is all there is; each run added moves s towards what the runs show.
- t is Student's quantile for a one-sided ALPHA at PRIOR_WEIGHT + k - 1 degrees of freedom: a spread
  estimated from few runs is itself uncertain, and the tolerance says so (wide with 1 run, narrowing
  as runs are added: the README's table).
- floor is an absolute offset (ABS_FLOOR_MS), added when this run comes from a card (on a CPU, a host)
  that none of the baseline's runs came from: host-to-host offsets of tiny kernels are absolute.
- card is a prior for how cards of one model differ (CARD_PCT), added when this run's card is not
  among the baseline's and the baseline's runs came from a single card; runs from several cards
  carry that spread themselves.

Whose runs: a card (on a CPU, a host) with OWN_RUNS runs of the case in the baseline is judged by
those alone (no card-to-card spread, the centre its own); any other by all of them, the fleet's.
Before the spread is taken, a run far from the others' median (far_runs: OUTLIER_Z of the scale the
others and the prior give) is left out, so one slow runner or one disturbed run cannot widen the
tolerance until the gate sees nothing.

Every kind of time (a TimeMetric: GPU time, the caller's time, GPU busy time) is judged the same
way, over the baseline runs that measured that kind; each kind's own row (KINDS) says what differs:
the caller's time is the host clock's, and where the host's enqueue is over HOST_BOUND_SHARE of it,
the host's speed sets it, and the priors are the host's (PRIOR_PCT_CALLER_HOST, CARD_PCT_CALLER_HOST);
GPU busy time, a sum over the call's kernels, has priors that narrow with their number (BUSY_KERNEL_PCT).

The times are not normalised to the SM clock, not even for compute-bound cases: between two H200
hosts, scaling compute-bound medians by their mean SM clock (NVML, sampled between batches) widened
the card-to-card differences (p90 3.0% raw, 5.1% scaled; the worst 3.8% raw, 11.5% scaled).

ALPHA = 0.001 makes an unchanged case read "looks slower" about once in 1,000 comparisons when the
spread is right, a quarter of the time somewhere in a 250-case run; such a case is then measured
again (plugin), and fails only if every re-measurement agrees. This run's own precision (the
interval of its median) is the verdict's business, not part of the spread. Pure functions: no files,
no devices.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np

from perfguard.model import BaselineEntry, CaseResult, JudgedBy, RunSummary, TimeMetric
from perfguard.model.names import shown

ALPHA = 0.001  # one-sided, per comparison, before re-measurement
Z_POWER = 1.645  # one-sided 95%
PRIOR_WEIGHT = 3.0  # the prior counts as this many degrees of freedom of observed runs
# Run-to-run relative spread (standard deviation of the median, %) before any runs say otherwise.
# H200, four fresh processes each: memory-bound median CV 0.08% (0.1-0.7% at worst), compute-bound
# under the power cap 1-3%. A CPU's host clock on a shared machine moves far more.
PRIOR_PCT = {"memory": 0.3, "latency": 1.0, "compute": 2.0, None: 1.0}
PRIOR_PCT_HOST_CLOCK = 5.0
# Absolute offset between hosts: every H200 kernel under ~20 µs was 0.6-1.2 µs slower on one host.
ABS_FLOOR_MS = {"cuda": 0.0015, "cpu": 0.02}
# How far cards of one model sit apart beyond that offset (%, one standard deviation): between two
# H200 hosts, memory-bound medians over ~50 µs differed by up to 1.5-2.2%, compute-bound ones by up to 7%.
CARD_PCT = {"memory": 0.5, "latency": 1.0, "compute": 1.5, None: 1.0}
CARD_PCT_HOST_CLOCK = 5.0
# The caller's time of a call whose host work (its enqueue) is over HOST_BOUND_SHARE of it moves with
# the host's speed, which on a shared cloud VM is not steady: GPT-2 small's batch-1 forward (5 ms of
# Python and launches a call) read 4.3-9.2 ms as the caller sees it in 15 processes on one H200
# host, and 4.3-7.9 ms between half-second blocks of one process, the thread's CPU time alike; a
# probe of fixed host work did not track it. Such a caller's time is judged with a prior of that size,
# so the gate catches a call that takes twice as long, not 5% more Python (docs/method.md).
HOST_BOUND_SHARE = 0.5
PRIOR_PCT_CALLER_HOST = 20.0
CARD_PCT_CALLER_HOST = 10.0
ABS_FLOOR_CALLER_MS = 0.002
BLOCKS = 5  # blocks of consecutive samples whose medians show drift within a run


# A card (a host, on a CPU) with this many runs in the baseline is judged by them alone. Three is the
# fewest whose spread says something of the card (with the prior worth PRIOR_WEIGHT runs), and the
# fewest among which one run far from the others can be told (far_runs).
OWN_RUNS = 3
# A run further than this many of its scale from the others' median is left out of the spread
# (far_runs). Ten, not five: with five, a case three times noisier between runs than its kind's prior
# lost a good run often enough to double its false-alarm rate (1,000 unchanged 5-run baselines at
# 1% spread, memory-bound: 0.9% -> 1.9%); with ten it was unchanged. A runner twice as slow still
# lies about 14 (a CPU's host clock) to 200 (memory-bound on a GPU) of them away.
OUTLIER_Z = 10.0
MAD_TO_SIGMA = 1.4826  # the median absolute deviation of a normal sample, scaled to its standard deviation


# GPU busy time is the sum of a call's kernels as the profiler (CUPTI) times them, 5 calls of one
# process. A single kernel's busy time jumps between processes while its CUDA-event time does not:
# H200, 8 fresh processes (2026-12-01), layer_norm 351 or 380 µs, rms_norm 154 or 167 µs, softmax 515
# or 570 µs (event times 0.1% apart), a 24 µs add 23.9-25.2 µs: about 4% (one standard deviation) a
# kernel. Over a call of many launches the jumps average out: nanoGPT's model.py and ResNet-50
# (128-697 launches), 3 fresh processes on each of two cards, moved 0.06-0.33% (median 0.16%),
# about 4% / √launches, and their cards sat 0.2-0.7% apart. So busy time's prior is
# BUSY_KERNEL_PCT / √(kernels launched per call), not below BUSY_FLOOR_PCT, and its card-to-card
# prior not below BUSY_CARD_PCT. A bound's prior would not do: model code declares no work (the
# unknown kind's 1% left a 5-run baseline blind to one extra elementwise op per transformer block),
# and its launch-bound label follows the caller's time, which busy time leaves out.
BUSY_KERNEL_PCT = 4.0
BUSY_FLOOR_PCT = 0.15
BUSY_CARD_PCT = 0.5


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a kind of time brings to its noise."""

    host_timed: bool  # taken on the host clock around the call: the host's speed can set it
    abs_floor_ms: float  # the host-to-host offset of a tiny call (ABS_FLOOR_MS)
    sums_kernels: bool = False  # the sum of the call's kernels, whose jitter averages over them (BUSY_KERNEL_PCT)


KINDS: dict[str, Kind] = {
    "latency": Kind(host_timed=False, abs_floor_ms=ABS_FLOOR_MS["cuda"]),
    "caller_latency": Kind(host_timed=True, abs_floor_ms=ABS_FLOOR_CALLER_MS),
    # The union of the call's kernel and copy intervals: the GPU's work, timed on the GPU's clock.
    "busy_time": Kind(host_timed=False, abs_floor_ms=ABS_FLOOR_MS["cuda"], sums_kernels=True),
}


@dataclasses.dataclass(frozen=True)
class Noise:
    """A case's noise against its baseline, all relative figures in percent."""

    runs: int  # baseline runs behind it (those left out as far from the others not counted)
    spread_pct: float  # s: run-to-run standard deviation of the median
    predicted_pct: float  # sp: of this run's median against the runs' centre
    floor_pct: float  # the absolute host offset as a share of the median (0 on a card the baseline knows)
    tolerance_pct: float  # T
    detectable_pct: float  # D
    centre_ms: float  # the median of the baseline runs' medians
    card_pct: float  # the card-to-card prior in sp (0 on a card the baseline knows, or from several cards)
    judged_by: JudgedBy = "fleet"  # "own": this card's (a CPU's: this host's) runs alone; "fleet": all the runs
    sources: int = 1  # cards (hosts, on a CPU) the judged runs came from
    source: str = "card"  # what a run's source is: "card" (a GPU's UUID) or "host"
    left_out: tuple[str, ...] = ()  # the judged runs left out as far from the others, each described
    own_runs: int = 0  # the baseline's runs from this card (host)
    prior_pct: float = 0.0  # s0, the prior the spread was pooled with
    observed_pct: float = 0.0  # the spread the kept runs showed

    def describe(self) -> str:
        return f"judged by {self.judges()}, run-to-run spread ±{self.spread_pct:.2f}%{self.widened()}"

    def judges(self) -> str:
        """Whose runs: "this card's 5 runs", "the fleet's 10 runs on 3 cards"."""
        runs = _plural(self.runs, "run")
        if self.judged_by == "own":
            return f"this {self.source}'s {runs}"
        return f"the fleet's {runs} on {_plural(self.sources, self.source)}"

    def widened(self) -> str:
        other = f", ±{self.card_pct:.1f}% {self.source} to {self.source}" if self.card_pct else ""
        floor = f", +{self.floor_pct:.1f}% for a {self.source} it has not seen" if self.floor_pct else ""
        left = f", {_plural(len(self.left_out), 'run')} far from the others left out" if self.left_out else ""
        return other + floor + left


# The regimes whose judged figure is not the GPU's own time (the call keeps the GPU waiting on the
# host): there the GPU's busy time is judged beside it.
HOST_BOUND_REGIMES = ("caller", "enqueue-bound")


def judged_times(current: CaseResult, baseline: CaseResult) -> list[TimeMetric]:
    """The times a case is judged by, the judged figure first: the caller's own time too (a change that
    adds host work leaves the GPU time as it was), and where either side's call kept the GPU waiting
    on the host, the GPU's busy time, the GPU figure the host's speed does not move."""
    host_bound = current.regime in HOST_BOUND_REGIMES or baseline.regime in HOST_BOUND_REGIMES
    wanted = [current.judged_metric, "caller_latency", *(("busy_time",) if host_bound else ())]
    return [m for m in dict.fromkeys(wanted) if m in current.timings and (m == current.judged_metric or m in baseline.timings)]


def estimate(
    current: CaseResult,
    baseline: BaselineEntry,
    threshold_pct: float,
    *,
    host: str | None = None,
    metric: str = "latency",
) -> Noise | None:
    """The noise of `current`'s case over `baseline`'s runs, its tolerance and what the gate can detect.
    `metric`: the kind of time (a TimeMetric); None when no baseline run measured that kind.

    A card (on a CPU, a host) with OWN_RUNS runs in the baseline is judged by those alone: their centre,
    their spread, no card-to-card prior. Any other is judged by all the runs (the fleet's). Either way a
    run far from the others' median (`far_runs`) is left out of the spread and the centre."""
    runs = [r for r in baseline.runs if median_of(r, metric)]
    if not runs:
        return None
    mine = source_of(current, host)
    own = [r for r in runs if mine is not None and run_source(r) == mine]
    by_own = len(own) >= OWN_RUNS or (bool(own) and len(own) == len(runs))
    judged = own if by_own else runs
    prior = prior_pct(current, baseline.result, metric)
    card_prior = card_prior_pct(current, baseline.result, metric)
    medians = np.array([median_of(r, metric) for r in judged], dtype=float)
    far = far_runs(medians, [run_source(r) for r in judged], prior, card_prior, absolute_ms(current, metric))
    kept = [r for i, r in enumerate(judged) if i not in far]
    medians = np.delete(medians, sorted(far))
    k = len(kept)
    observed = float(np.std(np.log(medians), ddof=1)) * 100.0 if k > 1 else 0.0
    seen = mine is not None and mine in {run_source(r) for r in kept}
    sources = {run_source(r) for r in kept}
    card = 0.0 if seen or len(sources) > 1 else card_prior
    spread = pooled_pct(prior, observed, k)
    predicted = math.sqrt(spread**2 * (1.0 + 1.0 / k) + card**2)
    centre = float(np.median(medians))
    floor = 0.0 if seen else 100.0 * absolute_ms(current, metric) / centre
    tolerance = max(threshold_pct, alarm_quantile(k) * predicted + floor)
    return Noise(
        runs=k,
        spread_pct=spread,
        predicted_pct=predicted,
        floor_pct=floor,
        tolerance_pct=tolerance,
        detectable_pct=tolerance + Z_POWER * predicted,
        centre_ms=centre,
        card_pct=card,
        judged_by="own" if by_own else "fleet",
        sources=max(1, len(sources)),
        source="card" if current.device_uuid else "host",
        left_out=tuple(describe_run(judged[i], metric, centre) for i in sorted(far)),
        own_runs=len(own),
        prior_pct=prior,
        observed_pct=observed,
    )


def runs_needed(est: Noise, threshold_pct: float, most: int = 100) -> int | None:
    """The fewest runs (up to `most`) whose tolerance would be `threshold_pct`, if the runs went on
    showing the spread these showed; None when no number of them would."""
    for k in range(est.runs + 1, most + 1):
        spread = pooled_pct(est.prior_pct, est.observed_pct, k)
        predicted = math.sqrt(spread**2 * (1.0 + 1.0 / k) + est.card_pct**2)
        if alarm_quantile(k) * predicted + est.floor_pct <= threshold_pct:
            return k
    return None


def far_runs(medians: Sequence[float], sources: Sequence[str | None], prior: float, card: float,
             absolute: float = 0.0) -> set[int]:
    """The runs (indices) far from the others: each run against the median of the others, on the scale
    their spread gives (pooled with the prior `prior` as the tolerance pools it) and, for a run from a source none of the others came from, the
    card-to-card prior `card` and the absolute offset `absolute` (ms) give. Far is more than OUTLIER_Z
    of that scale: one slow runner, one disturbed run, cannot widen every tolerance. With fewer than
    OWN_RUNS runs nothing is left out (two runs cannot say which of them is off).

    The others' spread is the larger of their median absolute deviation (scaled to a standard
    deviation) and their standard deviation without the one furthest from their median: the first
    alone is too unsteady over a handful of runs (it left out a good run of 1 baseline in 6 where the
    runs were three times noisier than the prior), the second alone is blind to a second bad run
    among the others. Both stay put when one or two of ten runs are bad."""
    logs = np.log(np.asarray(medians, dtype=float))
    if len(logs) < OWN_RUNS:
        return set()
    far = set()
    for i, x in enumerate(logs):
        others = np.delete(logs, i)
        centre = float(np.median(others))
        observed = max(MAD_TO_SIGMA * float(np.median(np.abs(others - centre))), _trimmed_std(others, centre)) * 100.0
        unseen = sources[i] is None or sources[i] not in {s for j, s in enumerate(sources) if j != i}
        scale = math.sqrt(pooled_pct(prior, observed, len(others)) ** 2 * (1.0 + 1.0 / len(others)) + (card**2 if unseen else 0.0))
        offset = 100.0 * absolute / math.exp(centre) if unseen else 0.0
        if abs(x - centre) * 100.0 > OUTLIER_Z * scale + offset:
            far.add(i)
    return far


def _trimmed_std(logs: np.ndarray, centre: float) -> float:
    """The standard deviation of `logs` without the one furthest from `centre` (all of them when that
    would leave fewer than two)."""
    if len(logs) >= 3:
        logs = np.delete(logs, int(np.argmax(np.abs(logs - centre))))
    return float(np.std(logs, ddof=1)) if len(logs) > 1 else 0.0


def pooled_pct(prior: float, observed: float, k: int) -> float:
    """The run-to-run spread: the prior, worth PRIOR_WEIGHT runs, pooled with what k runs showed."""
    return math.sqrt((PRIOR_WEIGHT * prior**2 + (k - 1) * observed**2) / (PRIOR_WEIGHT + k - 1))


def prior_pct(current: CaseResult, newest: CaseResult, metric: str = "latency") -> float:
    """s0: the run-to-run spread a case of this kind has before its runs say otherwise, raised to the
    drift within the baseline's newest run (`newest`)."""
    if _host_bound(current, newest, metric):
        prior = PRIOR_PCT_CALLER_HOST
    elif _host_clock(current, metric):
        prior = PRIOR_PCT_HOST_CLOCK
    elif KINDS[metric].sums_kernels and _launches(current, newest):
        prior = max(BUSY_FLOOR_PCT, BUSY_KERNEL_PCT / math.sqrt(_launches(current, newest)))
    else:
        prior = PRIOR_PCT.get(_bound(current), PRIOR_PCT[None])
    stored = newest.timings.get(metric)  # type: ignore[call-overload]
    return max(prior, drift_pct(stored.samples_ms if stored else ()))


def card_prior_pct(current: CaseResult, newest: CaseResult, metric: str = "latency") -> float:
    """How far cards (on a CPU, hosts) of one model sit apart for a case of this kind, one standard deviation."""
    if _host_bound(current, newest, metric):
        return CARD_PCT_CALLER_HOST
    if _host_clock(current, metric):
        return CARD_PCT_HOST_CLOCK
    if KINDS[metric].sums_kernels and _launches(current, newest):
        return max(BUSY_CARD_PCT, BUSY_KERNEL_PCT / math.sqrt(_launches(current, newest)))
    return CARD_PCT.get(_bound(current), CARD_PCT[None])


def absolute_ms(current: CaseResult, metric: str = "latency") -> float:
    """The absolute offset between hosts of this kind of time, ms."""
    return ABS_FLOOR_MS["cpu"] if _host_clock(current, metric) else KINDS[metric].abs_floor_ms


def median_of(run: RunSummary, metric: str = "latency") -> float | None:
    """A run's median of the metric, ms (None where the run did not measure it)."""
    return run.median_of(metric)


def run_source(run: RunSummary) -> str | None:
    """Where a run came from: its card (a GPU's UUID; hostnames of cloud machines repeat, "vm" on two
    H200 hosts), or on a CPU its host."""
    return run.device_uuid or run.host


def source_of(current: CaseResult, host: str | None) -> str | None:
    return current.device_uuid or host


def describe_run(run: RunSummary, metric: str, centre_ms: float) -> str:
    """A run as a line names it: when and where it was recorded, and how far it lies from the others."""
    where = run.device_uuid or run.host or "an unknown machine"
    median = median_of(run, metric) or math.nan
    return f"the run of {run.recorded_at} on {shown(where)} ({100.0 * (median / centre_ms - 1.0):+.1f}% from the others' median)"


def _host_bound(current: CaseResult, newest: CaseResult, metric: str) -> bool:
    return KINDS[metric].host_timed and max(host_share(current), host_share(newest)) > HOST_BOUND_SHARE


def _host_clock(current: CaseResult, metric: str) -> bool:
    return current.timer == "host-clock" and metric == "latency"


def _bound(result: CaseResult) -> str | None:
    return result.metrics.bound if result.metrics else None


def _launches(current: CaseResult, newest: CaseResult) -> float:
    """Kernels launched per call, the fewer of this run's and the baseline's (0 where neither counted)."""
    counts = [r.counters.total("kernels") for r in (current, newest) if r.counters and r.counters.device]
    return min((n for n in counts if n > 0), default=0.0)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def host_share(result: CaseResult) -> float:
    """The host's enqueue time of a call over the caller's time of it (0 where either is unknown)."""
    caller = result.median_of("caller_latency")
    return result.enqueue_ms / caller if result.enqueue_ms and caller else 0.0


def drift_pct(samples: Sequence[float]) -> float:
    """Relative spread (%) of the medians of BLOCKS consecutive blocks of a run's samples: what the run
    learns of its own drift for free (0 with too few samples to tell)."""
    if len(samples) < 4 * BLOCKS:
        return 0.0
    blocks = np.array_split(np.asarray(samples, dtype=float), BLOCKS)
    medians = np.array([np.median(b) for b in blocks])
    centre = float(np.median(medians))
    return 100.0 * float(np.std(medians, ddof=1)) / centre if centre > 0 else 0.0


@functools.lru_cache(maxsize=256)  # runs_needed asks for up to 100 of them per verdict
def alarm_quantile(runs: int) -> float:
    """Student's t for ALPHA at the spread's degrees of freedom (PRIOR_WEIGHT + runs - 1)."""
    from scipy import stats

    return float(stats.t.ppf(1.0 - ALPHA, PRIOR_WEIGHT + runs - 1))
