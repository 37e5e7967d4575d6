"""The run record's dataclasses: what a run measured and what a baseline keeps, frozen."""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Literal

# 2: a baseline entry keeps the summaries of several runs (`runs`), a verdict states the case's
# run-to-run noise instead of a rank test's p-value.
# 3: a case's times are one mapping, `timings`, from the kind of time (TimeMetric) to its summary and
# samples, in a result and in a baseline run alike; each kind is compared only with its own kind.
# Version 1 and 2 files load and are migrated (model/migration.py, called by codec.py).
SCHEMA_VERSION = 3
SIGNIFICANT_DIGITS = 6
# Raw samples kept per case in a record: enough for its distribution and drift, small enough to ship.
MAX_STORED_SAMPLES = 1000
# Raw samples of the newest run kept per case in a baseline: enough to see its drift within the run
# (analysis/noise.py) and draw its distribution, few enough for a diff a reviewer can scroll through.
MAX_BASELINE_SAMPLES = 200


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class Latency:
    """Summary of the per-call samples, in milliseconds. CI is the 95% interval of the median."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    p10_ms: float
    p90_ms: float
    iqr_ms: float
    ci_low_ms: float
    ci_high_ms: float
    n: int
    # "converged" (CI within target), "budget" (time ran out), "max_samples", or "counted" (the
    # busy time of each call of the counting pass)
    stop_reason: str

    @property
    def ci_half_width_pct(self) -> float:
        return 100.0 * (self.ci_high_ms - self.ci_low_ms) / 2.0 / self.median_ms if self.median_ms else math.inf


# The kinds of time a case can have, each judged only against the same kind in its baseline:
# - "latency": the device's time per call: GPU time between CUDA events (or per graph replay), or the
#   host clock on a CPU; absent where a call waits for the GPU itself (the "caller" regime);
# - "caller_latency": the caller's time per call on a GPU, back-to-back calls on the host clock;
# - "busy_time": the GPU's busy time per call, the union of the call's kernel and copy intervals in
#   one profiled pass (perfguard/measure/counters.py): what the GPU did, whatever the host's speed.
TimeMetric = Literal["latency", "caller_latency", "busy_time"]
TIME_METRICS: tuple[TimeMetric, ...] = typing.get_args(TimeMetric)
TIME_LABELS: dict[str, str] = {
    "latency": "GPU time",
    "caller_latency": "the caller's time",
    "busy_time": "GPU busy time",
}


@dataclasses.dataclass(frozen=True)
class Timing:
    """One kind of time of a case: its summary and its raw samples (thinned), in ms."""

    summary: Latency
    samples_ms: tuple[float, ...] = ()


POWER_CAP = "sw_power_cap"


@dataclasses.dataclass(frozen=True)
class Telemetry:
    """Clock, temperature, power and throttle state around a case (NVML); null on a CPU."""

    sm_clock_mhz_before: int | None = None
    sm_clock_mhz_after: int | None = None
    sm_clock_mhz_mean: float | None = None
    temperature_c_before: int | None = None
    temperature_c_after: int | None = None
    power_w_before: float | None = None
    power_w_after: float | None = None
    throttle_reasons: tuple[str, ...] = ()  # NVML clock-event reasons seen while the case ran
    throttled: bool = False  # a thermal or hardware slowdown: the figure is not trustworthy
    power_capped: bool = False  # the software power cap held the mean SM clock below its maximum


@dataclasses.dataclass(frozen=True)
class Memory:
    """GPU memory of one call of the case, in bytes; null on a CPU."""

    peak_allocated_bytes: int | None = None  # max allocated during a call, minus what was live before it
    peak_reserved_bytes: int | None = None  # max reserved by the caching allocator during the call
    # allocated after the case's samples over before its setup: its inputs and parameters, and what its
    # calls keep (optimizer state made by the first step, gradients kept between steps)
    setup_allocated_bytes: int | None = None
    nvml_used_delta_bytes: int | None = None  # device memory used after the case minus before it
    fragmentation: float | None = None  # 1 - allocated/reserved at peak
    alloc_retries: int | None = None  # allocator cudaMalloc retries (a sign of fragmentation)
    # Across calls (perfguard/measure/memory.py); None in records written before they were measured.
    # The most the case held during a call, counted from before its setup: its inputs and parameters,
    # what its calls keep from one to the next (gradients, optimizer state, caches) and the call's peak.
    footprint_bytes: int | None = None
    # How much the allocated memory grows from one call to the next, outputs dropped (a leak); never below 0.
    retained_bytes_per_call: int | None = None


@dataclasses.dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes live on the case's device at the peak of one call, by what they hold.

    Taken for cases declared with `memory_breakdown=True` (perfguard/measure/breakdown.py). On CUDA,
    `method` "allocator history": the caching allocator's history of the call, each allocation
    labelled with the phase and module it was made in (perfguard/analysis/attribution.py); on a CPU,
    or under a torch whose allocator takes no labels, "profiler": the PyTorch profiler's memory
    events of the call, labelled and walked the same way (perfguard/measure/profiler_history.py). The byte fields sum to the
    peak. `error` says why none could be taken (they are 0); `unnamed_reason` what the `unknown` bytes
    are and why nothing names them.
    """

    parameters: int = 0
    buffers: int = 0  # modules' registered buffers
    gradients: int = 0  # the parameters' .grad
    optimizer_state: int = 0
    activations: int = 0  # made in a forward pass (or a recomputation) and still live when it ended
    temporaries: int = 0  # made in the call and freed within its pass, or made in backward or the optimizer step
    inputs: int = 0  # data fed to the model
    # Records before 2026-12-01 only (torch's memory-profiler categories): the backward's own bookkeeping.
    autograd_detail: int = 0
    unknown: int = 0  # live before the call and held no tensor the call named, or allocator rounding
    error: str | None = None
    peak_phase: str | None = None  # "forward", "backward", "recompute", "optimizer", "call" or "start"
    peak_at: str | None = None  # the module (or optimizer) and the user's line whose allocation reached the peak
    method: str | None = None  # "allocator history" or "profiler"; None in records written before it was said
    unnamed_reason: str | None = None  # why `unknown` is not 0, per reason; None when it is, or in older records

    @property
    def peak_bytes(self) -> int:
        return sum(getattr(self, name) for name in BREAKDOWN_BYTES)


# MemoryBreakdown's byte fields, in its order.
BREAKDOWN_BYTES = tuple(f.name for f in dataclasses.fields(MemoryBreakdown) if f.type in ("int", int))


@dataclasses.dataclass(frozen=True)
class Metrics:
    """Figures derived from the median and the declared bytes and flops."""

    gbps: float | None = None  # achieved bandwidth, 1e9 bytes/s
    bandwidth_util: float | None = None  # achieved / theoretical peak bandwidth (0..1)
    tflops: float | None = None
    arithmetic_intensity: float | None = None  # flops per byte
    # The caller's time per call (CaseResult.caller's median): back-to-back calls on the host clock.
    eager_latency_ms: float | None = None
    launch_overhead_ms: float | None = None  # the caller's time - the GPU time, never below 0
    # launch overhead / the caller's time: the share of a call the GPU sat idle, waiting for the host
    launch_overhead_share: float | None = None
    # The roofline (perfguard/analysis/roofline.py); None on a CPU or where the peaks are unknown.
    bound: str | None = None  # "memory", "compute" or "latency" (launch-bound)
    attainable_tflops: float | None = None  # the roofline's rate at this arithmetic intensity
    efficiency: float | None = None  # achieved / attainable (bytes only: GB/s / peak bandwidth)
    flop_util: float | None = None  # achieved TFLOP/s / the device's peak for the case's dtype
    copy_util: float | None = None  # achieved GB/s / this card's calibrated copy bandwidth
    roofs: str | None = None  # where the roofline's ceilings came from: "calibrated" or "datasheet"


@dataclasses.dataclass(frozen=True)
class ProfileOp:
    """One row of the profiler's operator table (grouped by operator and input shapes), per profiled call.

    Times are on the clock the table is sorted by (`Profile.sort_by`): CUDA time on a GPU, CPU time on a CPU.
    """

    operator: str  # "aten::mm", or a kernel's name on a GPU
    calls: float  # times it ran per call of the case
    total_ms: float  # including the operators it called
    self_ms: float
    input_shapes: str  # e.g. "[[4096, 4096], [4096, 4096]]"; "[]" when shapes were not recorded
    self_memory_bytes: int  # allocated minus freed by the operator itself (GPU memory on a GPU)


@dataclasses.dataclass(frozen=True)
class Profile:
    """The case re-run under torch.profiler (--perfguard-profile): its top operators and its Chrome trace."""

    ops: tuple[ProfileOp, ...] = ()
    sort_by: str = "cpu"  # "cuda": by self CUDA time; "cpu": by self CPU time (a CPU machine)
    calls: int = 0  # calls profiled; every figure is per call
    kernels_per_call: float | None = None  # GPU kernels launched per call; None on a CPU
    trace: str | None = None  # the Chrome trace, relative to the report folder
    problem: str | None = None  # why the profile is missing or partial (profiling never fails a case)


# The work counters a case is judged by, each a kind of work per call (perfguard/measure/counters.py):
# deterministic on one software stack, whatever the host's or the card's speed.
CounterKind = Literal["kernels", "syncs", "copies", "copy_bytes", "memsets", "allocations", "segments", "aten_ops"]
COUNTER_KINDS: tuple[CounterKind, ...] = typing.get_args(CounterKind)
COUNTER_LABELS: dict[str, tuple[str, str]] = {  # (one, many): "1 sync", "3 syncs"
    "kernels": ("kernel", "kernels"),
    "syncs": ("host-device sync", "host-device syncs"),
    "copies": ("host-device copy", "host-device copies"),
    "copy_bytes": ("byte copied between host and device", "bytes copied between host and device"),
    "memsets": ("memset", "memsets"),
    "allocations": ("allocator call", "allocator calls"),
    "segments": ("new cudaMalloc segment", "new cudaMalloc segments"),
    "aten_ops": ("ATen operator", "ATen operators"),
}


@dataclasses.dataclass(frozen=True)
class Counters:
    """The work of one call, counted in one profiled pass of `calls` calls after warm-up; every
    figure is per call. Each mapping is by name: a kernel's, an ATen operator's, a sync's ("cudaStreamSynchronize
    after aten::copy_"), a copy's direction ("HtoD", "DtoH", "DtoD"). On a CPU only `aten_ops` is counted."""

    calls: int
    kernels: dict[str, float] = dataclasses.field(default_factory=dict)
    syncs: dict[str, float] = dataclasses.field(default_factory=dict)
    copies: dict[str, float] = dataclasses.field(default_factory=dict)
    copy_bytes: dict[str, float] = dataclasses.field(default_factory=dict)
    memsets: dict[str, float] = dataclasses.field(default_factory=dict)
    # The caching allocator's own statistics (torch.cuda.memory_stats) around the pass: allocations
    # asked of it, and segments it had to cudaMalloc (after warm-up: allocator thrash), by pool.
    allocations: dict[str, float] = dataclasses.field(default_factory=dict)
    segments: dict[str, float] = dataclasses.field(default_factory=dict)
    aten_ops: dict[str, float] = dataclasses.field(default_factory=dict)
    # What a sync is for, by its name, where the trace says (a host-to-device copy from pageable memory).
    sync_causes: dict[str, str] = dataclasses.field(default_factory=dict)
    device: bool = False  # whether the GPU's side was counted (False on a CPU: aten_ops only)
    wall_s: float | None = None  # the pass's wall time, profiler and analysis included

    def total(self, kind: str) -> float:
        return float(sum(getattr(self, kind).values()))

    def counted(self, kind: str) -> bool:
        return self.device or kind == "aten_ops"


# How a case's judged figure is taken (perfguard/measure/timers.py), and what it is, for the reports.
Regime = Literal["device", "enqueue-bound", "caller", "host-clock"]
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
    return "caller_latency" if regime == "caller" else "latency"


@dataclasses.dataclass(frozen=True)
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
    # Each kind of time measured (TimeMetric): "latency" (not in the "caller" regime), on a GPU
    # "caller_latency" (each sample ~10 ms of back-to-back calls, synchronised at its end only:
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
    # The work per call from one profiled pass (work counters); None where none was taken.
    counters: Counters | None = None
    # Why the counting pass took none; the case's other figures stand.
    counters_problem: str | None = None

    @property
    def judged_metric(self) -> TimeMetric:
        return judged_metric(self.regime)

    @property
    def latency(self) -> Latency | None:
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


# Every verdict status, most pressing first: the order every renderer lists them in.
# "inconclusive": the change is within its tolerance, but the tolerance is wider than the threshold, so
# a change of the threshold's size could have hidden in the noise (against a baseline, or perfguard ab's
# rounds could not decide); `same` says it could not have, and none was seen.
VerdictStatus = Literal["regressed", "unstable", "inconclusive", "improved", "missing", "new", "same"]
VERDICT_STATUSES: tuple[VerdictStatus, ...] = typing.get_args(VerdictStatus)
# Whose runs judged a time verdict (Verdict.judged_by); None where no runs did.
JudgedBy = Literal["own", "fleet"]
JUDGED_BY: tuple[JudgedBy | None, ...] = (None, *typing.get_args(JudgedBy))
# What a case not in the baseline yet needs: in each new verdict's message, and once per run in the terminal.
NEW_HINT = "record it with `pytest --perfguard --perfguard-update` (several runs make its tolerance tight)"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """How one metric of one case compares with its baseline.

    status is one of VERDICT_STATUSES; figures are in the
    metric's unit (ms for latency, bytes for peak_memory); `message` is the one line shown to a person.
    The latency's tolerance comes from the case's run-to-run noise over the baseline's runs
    (perfguard/analysis/noise.py), never below the threshold; null for deterministic metrics.
    """

    case_id: str
    metric: str  # a TimeMetric, "peak_memory", "footprint" or "retained_memory"
    status: VerdictStatus
    baseline: float | None
    current: float | None
    change_pct: float | None
    threshold_pct: float
    baseline_file: str | None
    env_mismatch: tuple[str, ...]  # e.g. "torch 2.11.0 → 2.12.0"; shown, never decides the status
    message: str
    baseline_runs: int = 0  # independent runs the baseline holds for the case
    noise_pct: float | None = None  # the case's run-to-run spread (relative standard deviation, %)
    tolerance_pct: float | None = None  # a change past this is regressed / improved
    detectable_pct: float | None = None  # the smallest slowdown the gate catches 19 times in 20
    # Whose runs judged a time: "own" (this card's, a CPU's: this host's) or "fleet" (all the
    # baseline's, from `judged_sources` cards or hosts); None for other metrics and older records.
    judged_by: JudgedBy | None = None
    judged_sources: int = 0
    # Medians (ms) of the re-measurements of a case that first looked regressed; `confirmed` says
    # whether they agreed (None: not re-measured).
    remeasured_ms: tuple[float, ...] = ()
    confirmed: bool | None = None


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class RunTime:
    """One kind of time of one run, as a baseline keeps it."""

    median_ms: float
    n: int | None = None  # samples behind the median; None in a run migrated from schema 2 that did not keep it
    ci_half_pct: float | None = None  # the run's own 95% half-width of the median, percent


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One independent run of a case, as a baseline keeps it: the run, not the call, is the unit of
    evidence (calls within a run share its clocks, card and host; runs do not)."""

    recorded_at: str
    timings: dict[TimeMetric, RunTime] = dataclasses.field(default_factory=dict)
    sm_clock_mhz: float | None = None  # mean SM clock while it ran (NVML)
    power_capped: bool = False
    peak_allocated_bytes: int | None = None
    device_uuid: str | None = None
    host: str | None = None
    commit: str | None = None
    regime: Regime | Literal[""] = ""  # "" in a run migrated from schema 2, which did not keep it

    def median_of(self, metric: str) -> float | None:
        timing = self.timings.get(metric)  # type: ignore[call-overload]
        return timing.median_ms if timing else None


@dataclasses.dataclass(frozen=True)
class BaselineEntry:
    """One case in a baseline file: the summaries of its last runs (oldest first) and the newest
    run's result (samples capped), with when, where and under what that run was recorded."""

    recorded_at: str
    commit: str | None
    fingerprint: dict[str, Any]  # DeviceInfo.fingerprint() at recording time
    result: CaseResult
    runs: tuple[RunSummary, ...] = ()


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What `perfguard calibrate` measured on this GPU model: its copy bandwidth and matmul rates."""

    measured_at: str
    fingerprint: dict[str, Any]  # DeviceInfo.fingerprint() when measured
    copy_gbps: float  # a large device-to-device copy, read + write bytes over the median time
    copy_bytes: int  # the size of the copied buffer
    tflops: dict[str, float]  # median matmul rate by dtype ("bf16", "fp16", "tf32", "fp32", "fp64")
    matmul_n: dict[str, int]  # the n of the n×n×n matmul measured for each dtype

    def apply_to(self, device: DeviceInfo) -> DeviceInfo:
        """`device` with these roofs, which the roofline then uses instead of the datasheet's."""
        return dataclasses.replace(device, calibrated_bandwidth_gbps=self.copy_gbps, calibrated_tflops=dict(self.tflops))


@dataclasses.dataclass(frozen=True)
class BaselineFile:
    """`baselines/<device.slug>.json`: the accepted figures of one GPU (or CPU) model, by case id."""

    device: DeviceInfo
    cases: dict[str, BaselineEntry]
    schema_version: int = SCHEMA_VERSION
    calibration: Calibration | None = None


def thin_samples(samples: typing.Sequence[float], limit: int = MAX_STORED_SAMPLES) -> tuple[float, ...]:
    """At most `limit` samples, taken evenly in time order so drift within the case stays visible."""
    if len(samples) <= limit:
        return tuple(samples)
    step = len(samples) / limit
    return tuple(samples[int(i * step)] for i in range(limit))


def thin_timings(timings: typing.Mapping[TimeMetric, Timing], limit: int = MAX_STORED_SAMPLES) -> dict[TimeMetric, Timing]:
    """Each kind of time with at most `limit` of its samples (`thin_samples`)."""
    return {m: dataclasses.replace(t, samples_ms=thin_samples(t.samples_ms, limit)) for m, t in timings.items()}


def run_summary(result: CaseResult, recorded_at: str, commit: str | None = None, host: str | None = None) -> RunSummary:
    """What a baseline keeps of one measured run of a case."""
    telemetry, memory = result.telemetry, result.memory
    return RunSummary(
        recorded_at=recorded_at,
        timings={metric: _run_time(t) for metric, t in result.timings.items()},
        sm_clock_mhz=telemetry.sm_clock_mhz_mean if telemetry else None,
        power_capped=bool(telemetry and telemetry.power_capped),
        peak_allocated_bytes=memory.peak_allocated_bytes if memory else None,
        device_uuid=result.device_uuid,
        host=host,
        commit=commit,
        regime=result.regime,
    )


def _run_time(timing: Timing) -> RunTime:
    s = timing.summary
    half = s.ci_half_width_pct
    return RunTime(median_ms=s.median_ms, n=s.n, ci_half_pct=half if math.isfinite(half) else None)
