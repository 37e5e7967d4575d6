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

Every kind of time (a TimeMetric: GPU time, the caller's time, GPU busy time) is judged the same
way, over the baseline runs that measured that kind; each kind's own row (KINDS) says what differs:
the caller's time is the host clock's, and where the host's enqueue is over HOST_BOUND_SHARE of it,
the host's speed sets it, and the priors are the host's (PRIOR_PCT_CALLER_HOST, CARD_PCT_CALLER_HOST).

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

from perfguard.model import BaselineEntry, CaseResult, RunSummary

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


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a kind of time brings to its noise."""

    host_timed: bool  # taken on the host clock around the call: the host's speed can set it
    abs_floor_ms: float  # the host-to-host offset of a tiny call (ABS_FLOOR_MS)


KINDS: dict[str, Kind] = {
    "latency": Kind(host_timed=False, abs_floor_ms=ABS_FLOOR_MS["cuda"]),
    "caller_latency": Kind(host_timed=True, abs_floor_ms=ABS_FLOOR_CALLER_MS),
    # The union of the call's kernel and copy intervals: the GPU's work, timed on the GPU's clock.
    "busy_time": Kind(host_timed=False, abs_floor_ms=ABS_FLOOR_MS["cuda"]),
}


@dataclasses.dataclass(frozen=True)
class Noise:
    """A case's noise against its baseline, all relative figures in percent."""

    runs: int  # baseline runs behind it
    spread_pct: float  # s: run-to-run standard deviation of the median
    predicted_pct: float  # sp: of this run's median against the runs' centre
    floor_pct: float  # the absolute host offset as a share of the median (0 on a card the baseline knows)
    tolerance_pct: float  # T
    detectable_pct: float  # D
    centre_ms: float  # the median of the baseline runs' medians
    card_pct: float  # the card-to-card prior in sp (0 on a card the baseline knows, or from several cards)

    def describe(self) -> str:
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        other = f", ±{self.card_pct:.1f}% card to card" if self.card_pct else ""
        floor = f", +{self.floor_pct:.1f}% for a card it has not seen" if self.floor_pct else ""
        return f"run-to-run spread ±{self.spread_pct:.2f}% over {runs}{other}{floor}"


def estimate(
    current: CaseResult,
    baseline: BaselineEntry,
    threshold_pct: float,
    *,
    host: str | None = None,
    metric: str = "latency",
) -> Noise | None:
    """The noise of `current`'s case over `baseline`'s runs, its tolerance and what the gate can detect.
    `metric`: the kind of time (a TimeMetric); None when no baseline run measured that kind."""
    kind = KINDS[metric]
    runs = tuple(r for r in baseline.runs if r.median_of(metric))
    if not runs:
        return None
    bound = current.metrics.bound if current.metrics else None
    medians = np.array([r.median_of(metric) for r in runs], dtype=float)
    logs = np.log(medians)
    k = len(runs)
    host_clock = current.timer == "host-clock" and metric == "latency"
    host_bound = kind.host_timed and max(host_share(current), host_share(baseline.result)) > HOST_BOUND_SHARE
    if host_bound:
        prior = PRIOR_PCT_CALLER_HOST
    else:
        prior = PRIOR_PCT_HOST_CLOCK if host_clock else PRIOR_PCT.get(bound, PRIOR_PCT[None])
    stored = baseline.result.timings.get(metric)  # type: ignore[call-overload]
    prior = max(prior, drift_pct(stored.samples_ms if stored else ()))
    observed = float(np.std(logs, ddof=1)) * 100.0 if k > 1 else 0.0
    spread = math.sqrt((PRIOR_WEIGHT * prior**2 + (k - 1) * observed**2) / (PRIOR_WEIGHT + k - 1))
    seen = _seen(runs, current, host)
    cards = {r.device_uuid for r in runs if r.device_uuid}
    if seen or len(cards) > 1:
        card = 0.0
    elif host_bound or host_clock:
        card = CARD_PCT_CALLER_HOST if host_bound else CARD_PCT_HOST_CLOCK
    else:
        card = CARD_PCT.get(bound, CARD_PCT[None])
    predicted = math.sqrt(spread**2 * (1.0 + 1.0 / k) + card**2)
    centre = float(np.median(medians))
    absolute = ABS_FLOOR_MS["cpu"] if host_clock else kind.abs_floor_ms
    floor = 0.0 if seen else 100.0 * absolute / centre
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
    )


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


@functools.lru_cache(maxsize=64)
def alarm_quantile(runs: int) -> float:
    """Student's t for ALPHA at the spread's degrees of freedom (PRIOR_WEIGHT + runs - 1)."""
    from scipy import stats

    return float(stats.t.ppf(1.0 - ALPHA, PRIOR_WEIGHT + runs - 1))


def _seen(runs: Sequence[RunSummary], current: CaseResult, host: str | None) -> bool:
    """Whether this run comes from where one of the baseline's runs came from: the same card (a GPU's
    UUID; hostnames of cloud machines repeat, "vm" on two H200 hosts), or on a CPU the same host."""
    if current.device_uuid:
        return current.device_uuid in {r.device_uuid for r in runs}
    return host is not None and host in {r.host for r in runs}
