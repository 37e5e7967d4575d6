"""How far a case's median moves between independent runs, and what change the gate can therefore see.

The run is the unit of evidence. Calls within one run share its clocks, card, host and process, so
their spread says nothing about the next run: on an H200, µs kernels sat 0.6-1.2 µs apart between two
hosts, compute-bound kernels under the power cap moved 1-3% between processes, memory-bound ones
0.1%, while every within-run interval was far narrower. So a case's tolerance comes from the medians
of the baseline's k runs (on the log scale, where a change is a ratio):

    s²   = (PRIOR_WEIGHT·s0² + (k-1)·s_runs²) / (PRIOR_WEIGHT + k-1)   the run-to-run spread
    sp   = √(s²·(1 + 1/k) + card²)                                      a new run against the runs' centre
    T    = max(threshold, t·sp + floor)                                  the tolerance: past it, the verdict moves
                                                                         (past decide's bound, nothing is decided)
    D    = T + Z_POWER·sp                                                the smallest slowdown caught 19 times in 20

- s0 is a prior per kind of case (priors.PRIOR_PCT, from the H200's A/A runs, by roofline bound), raised to
  the case's own drift within its newest run (the spread of the medians of consecutive blocks of its
  samples). With one run it is all there is; each run added moves s towards what the runs show.
- t is Student's quantile for a one-sided ALPHA at PRIOR_WEIGHT + k - 1 degrees of freedom: a spread
  estimated from few runs is itself uncertain, and the tolerance says so (wide with 1 run, narrowing
  as runs are added: the README's table).
- floor is an absolute offset (priors.ABS_FLOOR_MS), added when this run comes from a card (on a CPU, a host)
  that none of the baseline's runs came from: host-to-host offsets of tiny kernels are absolute (the
  gate's allowance; a run asking to join the series is judged without it: analysis/series.py).
- card is a prior for how cards of one model differ (priors.CARD_PCT), added when this run's card is not
  among the baseline's and the baseline's runs came from fewer than MIN_CARDS cards; runs from that
  many cards carry that spread themselves.

Whose runs: a card (on a CPU, a host) with OWN_RUNS runs of the case in the baseline is judged by
those alone (no card-to-card spread, the centre its own); any other by all of them, the fleet's.
Before the spread is taken, a run far from the others' median (far_runs: OUTLIER_Z of the scale the
others and the prior give) is left out, so one slow runner or one disturbed run cannot widen the
tolerance until the gate sees nothing.

Every kind of time (a TimeMetric: GPU time, the caller's time, GPU busy time) is judged the same
way, over the baseline runs that measured that kind; each kind's priors (analysis/priors.py) say
what differs: the host's speed for a host-bound caller's time, the number of kernels for busy time.

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

import collections
import functools
import math
import statistics
from collections.abc import Sequence

import numpy as np

from perfguard import units
from perfguard.analysis import decide, priors
from perfguard.model import BaselineEntry, CaseResult, LeftOut, Noise, RunSummary, TimeMetric
from perfguard.model.names import shown

ALPHA = 0.001  # one-sided, per comparison, before re-measurement
Z_POWER = 1.645  # one-sided 95%
PRIOR_WEIGHT = 3.0  # the prior counts as this many degrees of freedom of observed runs

# A card (a host, on a CPU) with this many runs in the baseline is judged by them alone. Three is the
# fewest whose spread says something of the card (with the prior worth PRIOR_WEIGHT runs), and the
# fewest among which one run far from the others can be told (far_runs).
OWN_RUNS = 3
# Cards (hosts, on a CPU) whose runs carry the card-to-card spread themselves, for a card none of them is.
MIN_CARDS = 3
# A run further than this many of its scale from the others' median is left out of the spread
# (far_runs). Ten, not five: with five, a case three times noisier between runs than its kind's prior
# lost a good run often enough to double its false-alarm rate (1,000 unchanged 5-run baselines at
# 1% spread, memory-bound: 0.9% -> 1.9%); with ten it was unchanged. A runner twice as slow still
# lies about 14 (a CPU's host clock) to 200 (memory-bound on a GPU) of them away.
OUTLIER_Z = 10.0
# For a run from a card (a host) none of the others came from, the card-to-card prior counts this many
# times, beside OUTLIER_Z of the run-to-run scale (in quadrature): it is a spread measured between
# cards, not one estimated from a handful of runs, and cards sat at most 4.4 (memory-bound) and 4.7
# (compute-bound) of it apart. At OUTLIER_Z it hid a runner twice as slow: a CPU host (5% run to run,
# 5% host to host) lay 9 of that scale away, was kept, and took a new host's tolerance from ±37.5% to
# ±125%. Now it is left out where the host-to-host offset (priors.ABS_FLOOR_MS, 0.02 ms) is under 8%
# of the case (a CPU case over 0.25 ms); the committed baselines' verdicts and left-out runs did not change.
CARD_Z = 5.0
MAD_TO_SIGMA = 1.4826  # the median absolute deviation of a normal sample, scaled to its standard deviation


def judges(est: Noise) -> str:
    """Whose runs: "this card's 5 runs", "the fleet's 10 runs on 3 cards"."""
    runs = units.plural(est.runs, "run")
    if est.judged_by == "own":
        return f"this {est.source}'s {runs}"
    return f"the fleet's {runs} on {units.plural(max(1, est.sources), est.source)}"


# The regimes whose judged figure is not the GPU's own time (the call keeps the GPU waiting on the
# host): there the GPU's busy time is judged beside it.
HOST_BOUND_REGIMES = ("caller", "enqueue-bound")


def judged_times(current: CaseResult, baseline: CaseResult) -> list[TimeMetric]:
    """The times a case is judged by, the judged figure first: the caller's own time too (a change that
    adds host work leaves the GPU time as it was), and where either side's call kept the GPU waiting
    on the host, the GPU's busy time, the GPU figure the host's speed does not move; and a compiled
    case's compile times, where both sides have them."""
    host_bound = current.regime in HOST_BOUND_REGIMES or baseline.regime in HOST_BOUND_REGIMES
    wanted = [current.judged_metric, "caller_time", *(("busy_time",) if host_bound else ()), "compile_cold", "compile_warm"]
    return [m for m in dict.fromkeys(wanted) if m in current.timings and (m == current.judged_metric or m in baseline.timings)]


def estimate(
    current: CaseResult,
    baseline: BaselineEntry,
    threshold_pct: float,
    *,
    host: str | None = None,
    metric: str = "gpu_time",
    unseen_offset: bool = True,
) -> Noise | None:
    """The noise of `current`'s case over `baseline`'s runs, its tolerance and what the gate can detect.
    `metric`: the kind of time (a TimeMetric); None when no baseline run measured that kind.
    `unseen_offset`: the absolute offset (floor) for a card or host none of the runs came from, which the
    gate allows; a run asking to join the series is not allowed it (analysis/series.py): a file can name
    any host.

    A card (on a CPU, a host) with OWN_RUNS runs in the baseline is judged by those alone: their centre,
    their spread, no card-to-card prior. Any other is judged by all the runs (the fleet's). Either way a
    run far from the others' median (`far_runs`) is left out of the spread and the centre."""
    runs = [r for r in baseline.runs if r.median_of(metric)]
    if not runs:
        return None
    mine = source_of(current, host)
    own = [r for r in runs if mine is not None and run_source(r) == mine]
    by_own = len(own) >= OWN_RUNS or (bool(own) and len(own) == len(runs))
    judged = own if by_own else runs
    prior = priors.prior_pct(current, baseline.result, metric)
    card_prior = priors.card_prior_pct(current, baseline.result, metric)
    medians = [float(r.median_of(metric)) for r in judged]
    far = far_runs(medians, [run_source(r) for r in judged], prior, card_prior, priors.absolute_ms(current, metric))
    kept = [r for i, r in enumerate(judged) if i not in far]
    medians = [m for i, m in enumerate(medians) if i not in far]
    k = len(kept)
    observed = _stdev([math.log(m) for m in medians]) * 100.0
    seen = mine is not None and mine in {run_source(r) for r in kept}
    sources = {run_source(r) for r in kept}
    # Runs from MIN_CARDS cards or more carry the card-to-card spread themselves; fewer cannot tell it
    # (two cards are one difference), so a card judged by the fleet's runs gets the prior, at least as
    # wide as the offsets measured between cards (priors.CARD_PCT): also a card with a run or two of
    # its own among them, whose centre is still the other cards' (on GPU-e5f9a3fc, 1.2% slower than
    # the one card before it, its second run failed at +3.2% against ±3.0%).
    card = 0.0 if by_own or len(sources) >= MIN_CARDS else card_prior
    spread = pooled_pct(prior, observed, k)
    predicted = math.sqrt(spread**2 * (1.0 + 1.0 / k) + card**2)
    centre = statistics.median(medians)
    floor = 0.0 if seen or not unseen_offset else 100.0 * priors.absolute_ms(current, metric) / centre
    tolerance = max(threshold_pct, alarm_quantile(k) * predicted + floor)
    tolerance, detectable, past = decide.bounded(tolerance, tolerance + Z_POWER * predicted, threshold_pct)
    return Noise(
        runs=k,
        spread_pct=spread,
        predicted_pct=predicted,
        floor_pct=floor,
        tolerance_pct=tolerance,
        detectable_pct=detectable,
        past_bound=past,
        centre_ms=centre,
        card_pct=card,
        judged_by="own" if by_own else "fleet",
        sources=max(1, len(sources)),
        source="card" if current.device_uuid else "host",
        left_out=tuple(LeftOut(judged[i].recorded_at, run_source(judged[i]),
                               100.0 * (float(judged[i].median_of(metric) or math.nan) / centre - 1.0)) for i in sorted(far)),
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
    their spread gives (pooled with the prior `prior` as the tolerance pools it). Far is more than
    OUTLIER_Z of that scale, and for a run from a source none of the others came from, CARD_Z of the
    card-to-card prior `card` beside it and the absolute offset `absolute` (ms) on top: one slow runner,
    one disturbed run, cannot widen every tolerance. With fewer than
    OWN_RUNS runs nothing is left out (two runs cannot say which of them is off).

    The others' spread is the larger of their median absolute deviation (scaled to a standard
    deviation) and their standard deviation without the one furthest from their median: the first
    alone is too unsteady over a handful of runs (it left out a good run of 1 baseline in 6 where the
    runs were three times noisier than the prior), the second alone is blind to a second bad run
    among the others. Both stay put when one or two of ten runs are bad."""
    n = len(medians)
    if n < OWN_RUNS:
        return set()
    # Every run's others at once, a row each (numpy): the runs the statistics module's code left out one
    # run at a time, in a quarter of its time at 18 runs (`perfguard baseline show` asks it of every case;
    # the same runs left out of 85,000 constructed series and every committed one).
    logs = np.array([math.log(m) for m in medians])
    others = logs[_others(n)]
    centres = _row_medians(others)
    deviations = np.abs(others - centres[:, None])
    trimmed = others
    if n - 1 >= 3:  # without the one furthest from the others' median (the first of equals)
        keep = np.ones(others.shape, dtype=bool)
        keep[np.arange(n), np.argmax(deviations, axis=1)] = False
        trimmed = others[keep].reshape(n, n - 2)
    stds = np.std(trimmed, axis=1, ddof=1) if trimmed.shape[1] >= 2 else np.zeros(n)
    observed = np.maximum(MAD_TO_SIGMA * _row_medians(deviations), stds) * 100.0
    times = collections.Counter(sources)
    scale = math.sqrt(1.0 + 1.0 / (n - 1))
    far = set()
    for i, (x, centre, spread) in enumerate(zip(logs.tolist(), centres.tolist(), observed.tolist())):
        unseen = sources[i] is None or times[sources[i]] == 1
        runs = OUTLIER_Z * pooled_pct(prior, spread, n - 1) * scale
        limit = math.hypot(runs, CARD_Z * card) if unseen else runs
        offset = 100.0 * absolute / math.exp(centre) if unseen else 0.0
        if abs(x - centre) * 100.0 > limit + offset:
            far.add(i)
    return far


@functools.cache
def _others(n: int) -> np.ndarray:
    """Row i: the indices of n runs but i."""
    return np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.intp)


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """Each row's median, as statistics.median takes it: the middle value, or the mean of the middle two."""
    s = np.sort(rows, axis=1)
    m = s.shape[1]
    return s[:, m // 2] if m % 2 else (s[:, m // 2 - 1] + s[:, m // 2]) / 2


def _stdev(xs: Sequence[float]) -> float:
    """The sample standard deviation (0 for fewer than two); statistics.stdev's exact fractions cost
    ten times as much, on every case of every comparison."""
    if len(xs) < 2:
        return 0.0
    mean = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def pooled_pct(prior: float, observed: float, k: int) -> float:
    """The run-to-run spread: the prior, worth PRIOR_WEIGHT runs, pooled with what k runs showed."""
    return math.sqrt((PRIOR_WEIGHT * prior**2 + (k - 1) * observed**2) / (PRIOR_WEIGHT + k - 1))


def run_source(run: RunSummary) -> str | None:
    """Where a run came from: its card (a GPU's UUID; hostnames of cloud machines repeat, "vm" on two
    H200 hosts), or on a CPU its host."""
    return run.device_uuid or run.host


def source_of(current: CaseResult, host: str | None) -> str | None:
    return current.device_uuid or host


def describe_run(run: RunSummary, metric: str, centre_ms: float) -> str:
    """A run as a line names it: when and where it was recorded, and how far it lies from the others."""
    where = run.device_uuid or run.host or "an unknown machine"
    median = run.median_of(metric) or math.nan
    return f"the run of {run.recorded_at} on {shown(where)} ({100.0 * (median / centre_ms - 1.0):+.1f}% from the others' median)"


@functools.lru_cache(maxsize=256)  # runs_needed asks for up to 100 of them per verdict
def alarm_quantile(runs: int) -> float:
    """Student's t for ALPHA at the spread's degrees of freedom (PRIOR_WEIGHT + runs - 1): scipy.stats.t.ppf's
    own function, from scipy.special, whose import takes a fifth of scipy.stats' (0.16 s against 0.8 s:
    most of `perfguard baseline show`'s time on a small baseline)."""
    from scipy.special import stdtrit

    return float(stdtrit(PRIOR_WEIGHT + runs - 1, 1.0 - ALPHA))
