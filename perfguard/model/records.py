"""The run record's dataclasses, frozen: the device, a case's result and times, a verdict, the run.

What a measurement holds besides times is model/measured.py; what a baseline keeps, model/baseline.py."""

from __future__ import annotations

import dataclasses
import math
import statistics
import typing
from typing import Any, Literal

from perfguard.model.kinds import Regime, TimeMetric
from perfguard.model.measured import Counters, Memory, MemoryBreakdown, Metrics, Profile, Telemetry
from perfguard.model.verdicts import Verdict

# 2: a baseline entry keeps the summaries of several runs (`runs`), a verdict states the case's
# run-to-run noise instead of a rank test's p-value.
# 3: a case's times are one mapping, `timings`, from the kind of time (TimeMetric) to its summary and
# samples, in a result and in a baseline run alike; each kind is compared only with its own kind.
# 4: a verdict is data (model/verdicts.py): a reason code, its figures and its next steps, no words
# (report/words.py renders them); a baseline entry says why its series started (an accepted change).
# 5: a time's summary keeps its run's drift (`drift_pct`, of every sample), so far fewer raw samples are
# kept; a field at its default is not written; a baseline's runs are columns, their commit, card, host
# and date one row of the file's `sessions` table (model/layout.py; issue 34: a median case of 9.8 KB
# in the baseline and 4.7 KB in a record before).
# 6: a baseline keeps of its newest result what the gate reads (model/baseline.py's `kept`: no spread of a
# time, no clock or power before and after), its entries' commit, date and software versions are rows of
# `sessions` too, and a result leaves out its id and device, which the file says (a median case of 3.9 KB
# at schema 5). A record is written as at 5; a summary's spread may be absent.
# 7: a verdict is a small core and the evidence of its kind of figure (model/verdicts.py: `time`, with the
# noise estimate itself, `memory` or `counters`), not 40 flat fields; a baseline is written as at 6.
# perfguard reads the current version alone; `perfguard migrate` rewrites an older file (model/migration.py).
SCHEMA_VERSION = 7
SIGNIFICANT_DIGITS = 6
# Raw samples are written with 4: they feed a run's drift (the medians of 5 blocks, analysis/priors.py),
# a histogram and asv's quartiles, none of which sees 0.05%; an event timer's ticks (32 ns on an H200)
# stay exact below 10 µs. Summaries and run medians, which verdicts compare, keep SIGNIFICANT_DIGITS.
SAMPLE_DIGITS = 4
# Figures no verdict reads (a summary's spread, shown in the reports; what a case's set-up, measurement
# and passes took, for ab's round estimates and benchmarks/pass_split.py), written at SAMPLE_DIGITS too.
# A baseline run's clock (`sm_clock_mhz`) too: its drop is judged in percents.
SHOWN_ONLY = frozenset({"mean_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "iqr_ms", "setup_s", "wall_s", "passes_s",
                        "sm_clock_mhz"})
# Raw samples kept per kind of time in a record: its histogram and asv's quartiles read them, a baseline
# keeps some of them. The summary and the drift (`drift_pct`) are of every sample, taken before
# thinning. 1,000 until issue 34, then 200 (1.9 KB of a record's median case of 4.7 KB); 48 keep a
# record's median case (rms_norm on an H200) at 3.0 KB.
MAX_STORED_SAMPLES = 48
# Raw samples of the newest run kept per case in a baseline: enough for a rank test between two runs
# (DESIGN §5); its drift is in its summary.
MAX_BASELINE_SAMPLES = 32
# A run's drift within itself: the spread of the medians of DRIFT_BLOCKS consecutive blocks of its
# samples (analysis/priors.py raises the case's prior to it); none with fewer than 4 samples a block.
DRIFT_BLOCKS = 5


@dataclasses.dataclass(frozen=True, slots=True)
class DeviceInfo:
    """What a figure was measured on; `slug` names the baseline file (nvidia-h200, cpu-...)."""

    kind: str  # "cuda" or "cpu"
    name: str
    slug: str
    uuid: str | None = None
    index: int | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    triton: str | None = None
    python: str | None = None
    compute_capability: str | None = None
    memory_bytes: int | None = None
    bus_width_bits: int | None = None
    max_memory_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    peak_bandwidth_gbps: float | None = None
    sm_count: int | None = None
    l2_bytes: int | None = None
    cpu_count: int | None = None
    ecc_enabled: bool | None = None
    # Dense peak TFLOP/s by dtype ("bf16", "fp16", "tf32", "fp32", "fp64"): the compute roofs, from
    # the table of known GPUs (perfguard/analysis/peaks.py); None for a CPU or an unknown GPU.
    peak_tflops: dict[str, float] | None = None
    # This card's measured roofs (`perfguard calibrate`, stored with the baseline): what it reaches at
    # its real clocks and power limit. When present they replace the datasheet's in the roofline.
    calibrated_bandwidth_gbps: float | None = None
    calibrated_tflops: dict[str, float] | None = None
    # The machine the card is in: host-to-host offsets of a microsecond or so are absolute, so the
    # verdict widens the tolerance of tiny kernels only when the run comes from a host the baseline
    # has not seen.
    host: str | None = None

    def fingerprint(self) -> dict[str, str | None]:
        """The software versions a baseline is only comparable under."""
        return {"driver": self.driver, "cuda": self.cuda, "torch": self.torch, "triton": self.triton}

    def same_model(self, other: DeviceInfo) -> bool:
        """Whether `other` is this device's model as a baseline file names it: kind, name and slug alike."""
        return (self.kind, self.name, self.slug) == (other.kind, other.name, other.slug)


@dataclasses.dataclass(frozen=True, slots=True)
class TimeSummary:
    """Summary of the per-call samples, in milliseconds. CI is the 95% interval of the median."""

    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    n: int
    # "converged" (CI within target), "budget" (time ran out), "max_samples", or "counted" (the
    # busy time of each call of the counting pass)
    stop_reason: str
    # The spread, shown in the reports and read by no verdict: a record has it, a baseline keeps none
    # of it (model/baseline.py's `kept`).
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    iqr_ms: float | None = None
    # The run's drift within itself (`drift_pct` below), of every sample; None where a file of schema 4 or
    # older kept no samples to take it from.
    drift_pct: float | None = None

    @property
    def ci_half_width_pct(self) -> float:
        return 100.0 * (self.ci_high_ms - self.ci_low_ms) / 2.0 / self.median_ms if self.median_ms else math.inf


@dataclasses.dataclass(frozen=True, slots=True)
class Timing:
    """One kind of time of a case: its summary and its raw samples (thinned), in ms."""

    summary: TimeSummary
    samples_ms: tuple[float, ...] = ()


# Where the host, not the GPU, sets the pace of a call (a call that waits for the GPU itself, or a CPU's):
# where its judged time goes is the host's operators' (Counters.op_time, analysis/moved.py).
HOST_BOUND: tuple[Regime, ...] = ("caller", "host-clock")
# What each way of taking a case's judged figure (a Regime) is, for the reports.
REGIMES: dict[str, str] = {
    "device": "GPU time per call: calls queued behind a device-side wait, the host keeps ahead of the GPU",
    "enqueue-bound": "GPU time per call, each call queued whole behind a device-side wait: the host's "
                     "enqueue outruns the GPU, so the caller's time is judged too",
    "caller": "the caller's time per call, back-to-back on the host clock: the call waits for the GPU "
              "itself, so nothing can be queued ahead of it",
    "host-clock": "host time per call (no GPU)",
}

# What a case's run came to: measured, smoke-run once, errored, or skipped on this device.
CaseStatus = Literal["ok", "smoke", "error", "skipped"]
CASE_STATUSES: tuple[CaseStatus, ...] = typing.get_args(CaseStatus)


def judged_metric(regime: str) -> TimeMetric:
    """The time a case is judged by: the caller's where a call waits for the GPU itself, else the device's."""
    return "caller_time" if regime == "caller" else "gpu_time"


@dataclasses.dataclass(frozen=True, slots=True)
class CaseResult:
    """Everything measured for one case instance (one grid point) in one run."""

    id: str
    name: str
    status: CaseStatus
    nodeid: str = ""
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    device: str = ""  # the device slug
    device_uuid: str | None = None
    timer: str = ""  # "cuda-events", "cuda-graph", "caller" or "host-clock": what timed the judged figure
    # How the judged figure was taken (REGIMES); "" where nothing was measured.
    regime: Regime | Literal[""] = ""
    cache: str = "cold"
    mode: str = "eager"
    bytes: float | None = None
    flops: float | None = None
    threshold: float | None = None  # per-case overrides of the verdict thresholds, percent
    memory_threshold: float | None = None
    # The case's allowance for its work counters' growth per call (`counters=` on @perf_case): {"kernels": "2"}
    counter_allowance: dict[str, str] = dataclasses.field(default_factory=dict)
    # Each kind of time measured (TimeMetric): "gpu_time" (not in the "caller" regime), on a GPU
    # "caller_time" (each sample ~10 ms of back-to-back calls, synchronised at its end only:
    # timers.CallerTimer) and "busy_time" (from the counting pass).
    timings: dict[TimeMetric, Timing] = dataclasses.field(default_factory=dict)
    # Host time to enqueue one call, without waiting for the GPU (warm-up's median), ms.
    enqueue_ms: float | None = None
    # GPU samples dropped because the device reached a call before the host had queued all of it.
    dropped_samples: int = 0
    metrics: Metrics | None = None
    memory: Memory | None = None
    telemetry: Telemetry | None = None
    setup_s: float | None = None
    wall_s: float | None = None  # warm-up + sampling + memory pass, without setup
    # Each pass's wall time, s ("first_call", "warm_up", "samples", "caller_samples", "memory", "counters", ...):
    # where a case's cost goes (benchmarks/pass_split.py).
    passes_s: dict[str, float] = dataclasses.field(default_factory=dict)
    error: str | None = None
    profile: Profile | None = None  # only when --perfguard-profile chose the case
    memory_breakdown: MemoryBreakdown | None = None  # only for cases declared with memory_breakdown=True
    # What is known of the outputs timed: "checked" (the case's check= held on the first call),
    # "unchecked" (no check=: the figures time whatever the callable computes), "non-finite" (no
    # check=, and the first call's output held NaN or inf); None where the case errored.
    outputs: str | None = None
    # Global torch state the case changed and left changed ("default dtype float32 → float64"):
    # perfguard put it back after the case, so that later cases are measured as they would be alone.
    restored_state: tuple[str, ...] = ()
    # Child processes the case started and left running ("sleep (pid 4242)"), which run on beside every
    # later case (measure/children.py); perfguard does not end them.
    left_processes: tuple[str, ...] = ()
    # The work per call from one profiled pass (work counters); None where none was taken.
    counters: Counters | None = None
    # Why the counting pass took none; the case's other figures stand.
    counters_problem: str | None = None

    @property
    def judged_metric(self) -> TimeMetric:
        return judged_metric(self.regime)

    @property
    def judged_time(self) -> TimeSummary | None:
        """The judged figure's summary: GPU time, or the caller's time in the "caller" regime."""
        timing = self.timings.get(self.judged_metric)
        return timing.summary if timing else None

    @property
    def samples_ms(self) -> tuple[float, ...]:
        """The judged figure's samples (ms)."""
        timing = self.timings.get(self.judged_metric)
        return timing.samples_ms if timing else ()

    def median_of(self, metric: str) -> float | None:
        timing = self.timings.get(metric)  # type: ignore[call-overload]
        return timing.summary.median_ms if timing else None


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    """One run: the devices it used and every case's result."""

    created_at: str
    perfguard_version: str
    devices: tuple[DeviceInfo, ...] = ()
    results: tuple[CaseResult, ...] = ()
    commit: str | None = None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    verdicts: tuple[Verdict, ...] = ()  # empty when the run had no baseline to compare with
    # "complete"; "interrupted" (Ctrl-C: the results are the cases that finished, no baseline was
    # written); "unfinished" (written when the run starts: a process that died, or a record that
    # could not be written at the end, leaves this, never the previous run's record looking current).
    status: str = "complete"


def round_sig(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """`value` to `digits` significant digits, as a file keeps it (0 and non-finite values as they are)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def drift_pct(samples: typing.Sequence[float]) -> float:
    """Relative spread (%, one standard deviation) of the medians of DRIFT_BLOCKS consecutive blocks of a
    run's samples, about their median: what the run learns of its own drift for free (0 with too few
    samples to tell). Here, not in analysis/, because a file's migration takes it from the samples it kept."""
    n = len(samples)
    if n < 4 * DRIFT_BLOCKS:
        return 0.0
    size, extra = divmod(n, DRIFT_BLOCKS)  # numpy's array_split: the first `extra` blocks one longer
    bounds = [i * size + min(i, extra) for i in range(DRIFT_BLOCKS + 1)]
    medians = [statistics.median(samples[a:b]) for a, b in zip(bounds, bounds[1:])]
    centre = statistics.median(medians)
    return 100.0 * statistics.stdev(medians) / centre if centre > 0 else 0.0


def thin_samples(samples: typing.Sequence[float], limit: int = MAX_STORED_SAMPLES) -> tuple[float, ...]:
    """At most `limit` samples, taken evenly in time order so drift within the case stays visible."""
    if len(samples) <= limit:
        return tuple(samples)
    step = len(samples) / limit
    return tuple(samples[int(i * step)] for i in range(limit))


def thin_timings(timings: typing.Mapping[TimeMetric, Timing], limit: int = MAX_STORED_SAMPLES) -> dict[TimeMetric, Timing]:
    """Each kind of time with at most `limit` of its samples (`thin_samples`)."""
    return {m: dataclasses.replace(t, samples_ms=thin_samples(t.samples_ms, limit)) for m, t in timings.items()}
