"""What a case's noise is before its runs say: the priors of the run-to-run and card-to-card spread,
by kind of case and kind of time, and the absolute offset between hosts (analysis/noise.py pools
them with what the runs show).

Each figure is what fresh processes showed on an H200 (or a shared CPU host) for that kind; each is
a starting point the case's own runs overrule as they accumulate (noise.PRIOR_WEIGHT). Every kind of
time (a TimeMetric) has its row (KINDS): the caller's time is the host clock's, and where the host's
enqueue is over HOST_BOUND_SHARE of it the host's speed sets it (PRIOR_PCT_CALLER_HOST); GPU busy
time, a sum over the call's kernels, narrows with their number (BUSY_KERNEL_PCT). Pure functions.
"""

from __future__ import annotations

import dataclasses
import math

from perfguard.model import CaseResult, Timing, drift_pct

# Run-to-run relative spread (standard deviation of the median, %) before any runs say otherwise.
# H200, four fresh processes each: memory-bound median CV 0.08% (0.1-0.7% at worst), compute-bound
# under the power cap 1-3%. A CPU's host clock on a shared machine moves far more.
PRIOR_PCT = {"memory": 0.3, "launch": 1.0, "compute": 2.0, None: 1.0}
PRIOR_PCT_HOST_CLOCK = 5.0
# Absolute offset between hosts: every H200 kernel under ~20 µs was 0.6-1.2 µs slower on one host.
ABS_FLOOR_MS = {"cuda": 0.0015, "cpu": 0.02}
# How far cards of one model sit apart beyond that offset (%, one standard deviation of a case's
# per-card medians), the 90th percentile over each kind's cases of 20 µs and more (docs/gate.md's
# table: `python benchmarks/card_offsets.py`). GPU time over the old H200 baseline's six cards
# (2026-12-02): memory-bound 1.21%, compute-bound 3.45%, launch-bound 2.63%, undeclared 0.60%; over
# the re-recorded baseline's three cards: 0.75%, 4.49%, 1.71%, 0.37%. The caller's time, three cards:
# memory-bound 2.21%, compute-bound 1.35%. Over the H100 file's three cards (2026-12-07): GPU time
# memory-bound 1.54%, compute-bound 2.33%, launch-bound 2.56%, undeclared 0.37%; the caller's time of the
# undeclared cases that are not host-bound (the compiled and training-step cases) 1.46% (H200) and 1.02%.
# A prior at least as wide as what was measured on every model's committed file (tests/test_verdict.py
# holds it to them): two cards cannot tell the offset, and a narrower one failed unchanged runs on a card
# the baseline had not seen (issue 31: +2.7% against ±2.4%).
CARD_PCT = {"memory": 1.6, "launch": 2.6, "compute": 4.5, None: 1.0}
CARD_PCT_CALLER = {**CARD_PCT, "memory": 2.3, None: 1.5}
CARD_PCT_HOST_CLOCK = 5.0
# The caller's time of a call whose host work (its enqueue) is over HOST_BOUND_SHARE of it moves with
# the host's speed, which on a shared cloud VM is not steady: GPT-2 small's batch-1 forward (5 ms of
# Python and launches a call) read 4.3-9.2 ms as the caller sees it in 15 processes on one H200
# host, and 4.3-7.9 ms between half-second blocks of one process, the thread's CPU time alike; a
# probe of fixed host work did not track it. Such a caller's time is judged with a prior of that size,
# so the gate catches a call that takes twice as long, not 5% more Python (docs/method.md).
HOST_BOUND_SHARE = 0.5
PRIOR_PCT_CALLER_HOST = 20.0
# Between cards (and so hosts) such a caller's time moved further still: over the committed baseline's
# two cards with caller's times, the undeclared (model) cases' per-card medians sat 23.7% apart at the
# 90th percentile (benchmarks/card_offsets.py, 2026-12-02); over the H100 file's three hosts
# (2026-12-07) its host-bound cases 33.2% (a 1M-element sum's 15.4 µs a call on one host, 27.9 and
# 33.2 µs on the others).
CARD_PCT_CALLER_HOST = 35.0
ABS_FLOOR_CALLER_MS = 0.002


# GPU busy time is the sum of a call's kernels as the profiler (CUPTI) times them, 5 calls of one
# process. A single kernel's busy time jumps between processes while its CUDA-event time does not:
# H200, 8 fresh processes (2026-12-01), layer_norm 351 or 380 µs, rms_norm 154 or 167 µs, softmax 515
# or 570 µs (event times 0.1% apart), a 24 µs add 23.9-25.2 µs: about 4% (one standard deviation) a
# kernel. Over a call of many launches the jumps average out: nanoGPT's model.py and ResNet-50
# (128-697 launches), 3 fresh processes on each of two cards, moved 0.06-0.33% (median 0.16%),
# about 4% / √launches, and their cards sat 0.2-0.7% apart (the re-recorded baseline's three cards:
# 0.50-0.62% for the GPT-2 and training-step cases). So busy time's prior is
# BUSY_KERNEL_PCT / √(kernels launched per call), not below BUSY_FLOOR_PCT, and its card-to-card
# prior not below BUSY_CARD_PCT. A bound's prior would not do: model code declares no work (the
# unknown kind's 1% left a 5-run baseline blind to one extra elementwise op per transformer block),
# and its launch-bound label follows the caller's time, which busy time leaves out.
BUSY_KERNEL_PCT = 4.0
BUSY_FLOOR_PCT = 0.15
BUSY_CARD_PCT = 0.7
# A compile's time is the host's work (dynamo's tracing, Inductor's passes, Triton's and the C++
# compiler's), one figure a run: the host's speed and load set it, so it moves between processes and
# hosts by percents, not per mille: nanoGPT's compiled forward on one H200 host (GPU-8eac62e3,
# 2026-12-02, 4 processes) compiled in 6.5-10.2 s cold (19% one standard deviation), 1.4-2.0 s warm
# (21%). Before a baseline's runs say otherwise: COMPILE_PRIOR_PCT within a host, COMPILE_CARD_PCT
# between hosts (the H100 file's three hosts, 2026-12-07: 26.0% cold and 28.7% warm, one standard
# deviation of their medians), and COMPILE_FLOOR_MS for a compile of a few graphs.
COMPILE_PRIOR_PCT = 20.0
COMPILE_CARD_PCT = 30.0
COMPILE_FLOOR_MS = 50.0


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a kind of time brings to its noise."""

    host_timed: bool  # taken on the host clock around the call: the host's speed can set it
    abs_floor_ms: float  # the host-to-host offset of a tiny call (ABS_FLOOR_MS)
    sums_kernels: bool = False  # the sum of the call's kernels, whose jitter averages over them (BUSY_KERNEL_PCT)
    card_pct: dict[str | None, float] = dataclasses.field(default_factory=lambda: CARD_PCT)  # by bound
    prior_pct: float | None = None  # one prior whatever the case's bound (a compile's time)
    once_a_run: bool = False  # one figure a run, not samples: the run is the sample (DESIGN §5)


KINDS: dict[str, Kind] = {
    "gpu_time": Kind(host_timed=False, abs_floor_ms=ABS_FLOOR_MS["cuda"]),
    "caller_time": Kind(host_timed=True, abs_floor_ms=ABS_FLOOR_CALLER_MS, card_pct=CARD_PCT_CALLER),
    # The union of the call's kernel and copy intervals: the GPU's work, timed on the GPU's clock.
    "busy_time": Kind(host_timed=False, abs_floor_ms=ABS_FLOOR_MS["cuda"], sums_kernels=True),
    **{name: Kind(host_timed=True, abs_floor_ms=COMPILE_FLOOR_MS, card_pct={None: COMPILE_CARD_PCT},
                  prior_pct=COMPILE_PRIOR_PCT, once_a_run=True) for name in ("compile_cold", "compile_warm")},
}


def prior_pct(current: CaseResult, newest: CaseResult, metric: str = "gpu_time") -> float:
    """s0: the run-to-run spread a case of this kind has before its runs say otherwise, raised to the
    drift within the baseline's newest run (`newest`)."""
    if KINDS[metric].prior_pct is not None:
        return KINDS[metric].prior_pct
    if _host_bound(current, newest, metric):
        prior = PRIOR_PCT_CALLER_HOST
    elif _host_clock(current, metric):
        prior = PRIOR_PCT_HOST_CLOCK
    elif KINDS[metric].sums_kernels and _launches(current, newest):
        prior = _busy_pct(current, newest, BUSY_FLOOR_PCT)
    else:
        prior = PRIOR_PCT.get(_bound(current), PRIOR_PCT[None])
    stored = newest.timings.get(metric)  # type: ignore[call-overload]
    return max(prior, _drift(stored) if stored else 0.0)


def _drift(timing: Timing) -> float:
    """The run's drift within itself: its summary's, of every sample; else that of the samples kept."""
    drift = timing.summary.drift_pct
    return drift if drift is not None else drift_pct(timing.samples_ms)


def card_prior_pct(current: CaseResult, newest: CaseResult, metric: str = "gpu_time") -> float:
    """How far cards (on a CPU, hosts) of one model sit apart for a case of this kind, one standard deviation."""
    if KINDS[metric].prior_pct is not None:
        return KINDS[metric].card_pct[None]
    if _host_bound(current, newest, metric):
        return CARD_PCT_CALLER_HOST
    if _host_clock(current, metric):
        return CARD_PCT_HOST_CLOCK
    if KINDS[metric].sums_kernels and _launches(current, newest):
        return _busy_pct(current, newest, BUSY_CARD_PCT)
    by_bound = KINDS[metric].card_pct
    return by_bound.get(_bound(current), by_bound[None])


def absolute_ms(current: CaseResult, metric: str = "gpu_time") -> float:
    """The absolute offset between hosts of this kind of time, ms."""
    return ABS_FLOOR_MS["cpu"] if _host_clock(current, metric) else KINDS[metric].abs_floor_ms


def _host_bound(current: CaseResult, newest: CaseResult, metric: str) -> bool:
    return KINDS[metric].host_timed and max(host_share(current), host_share(newest)) > HOST_BOUND_SHARE


def _host_clock(current: CaseResult, metric: str) -> bool:
    return current.timer == "host-clock" and metric == "gpu_time"


def _bound(result: CaseResult) -> str | None:
    return result.metrics.bound if result.metrics else None


# What busy time sums (measure/counters.py: the union of these intervals), each of which jumps as a
# kernel does: a call of one copy and no kernel (device_copy) had the bound's GPU-time prior, 0.3%, and
# its busy time read +4.4% on an unchanged run on an H100 (2026-12-07), refused from its series.
BUSY_ACTIVITIES = ("kernels", "copies", "memsets")


def _launches(current: CaseResult, newest: CaseResult) -> float:
    """The GPU activities per call that busy time sums (kernels, copies, memsets), the fewer of this run's
    and the baseline's (0 where neither counted)."""
    counts = [sum(r.counters.total(k) for k in BUSY_ACTIVITIES) for r in (current, newest) if r.counters and r.counters.device]
    return min((n for n in counts if n > 0), default=0.0)


def _busy_pct(current: CaseResult, newest: CaseResult, least: float) -> float:
    """Busy time's prior: a kernel's BUSY_KERNEL_PCT averaged over the call's launches, at least `least`."""
    return max(least, BUSY_KERNEL_PCT / math.sqrt(_launches(current, newest)))


def host_share(result: CaseResult) -> float:
    """The host's enqueue time of a call over the caller's time of it (0 where either is unknown)."""
    caller = result.median_of("caller_time")
    return result.enqueue_ms / caller if result.enqueue_ms and caller else 0.0
