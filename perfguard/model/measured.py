"""What a case's measurement holds besides its times, frozen: clocks and power (NVML), memory, the
memory breakdown, derived figures, the profiler's table, and the work counters of one call."""

from __future__ import annotations

import dataclasses

from perfguard.model.kinds import COMPILE_KINDS

POWER_CAP = "sw_power_cap"


@dataclasses.dataclass(frozen=True, slots=True)
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


@dataclasses.dataclass(frozen=True, slots=True)
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


@dataclasses.dataclass(frozen=True, slots=True)
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


@dataclasses.dataclass(frozen=True, slots=True)
class Metrics:
    """Figures derived from the median and the declared bytes and flops."""

    gbps: float | None = None  # achieved bandwidth, 1e9 bytes/s
    bandwidth_util: float | None = None  # achieved / theoretical peak bandwidth (0..1)
    tflops: float | None = None
    arithmetic_intensity: float | None = None  # flops per byte
    # The caller's time per call (CaseResult.caller's median): back-to-back calls on the host clock.
    caller_ms: float | None = None
    launch_overhead_ms: float | None = None  # the caller's time - the GPU time, never below 0
    # launch overhead / the caller's time: the share of a call the GPU sat idle, waiting for the host
    launch_overhead_share: float | None = None
    # The roofline (perfguard/analysis/roofline.py); None on a CPU or where the peaks are unknown.
    bound: str | None = None  # "memory", "compute" or "launch" (launch-bound)
    attainable_tflops: float | None = None  # the roofline's rate at this arithmetic intensity
    efficiency: float | None = None  # achieved / attainable (bytes only: GB/s / peak bandwidth)
    flop_util: float | None = None  # achieved TFLOP/s / the device's peak for the case's dtype
    copy_util: float | None = None  # achieved GB/s / this card's calibrated copy bandwidth
    roofs: str | None = None  # where the roofline's ceilings came from: "calibrated" or "datasheet"


@dataclasses.dataclass(frozen=True, slots=True)
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


@dataclasses.dataclass(frozen=True, slots=True)
class Profile:
    """The case re-run under torch.profiler (--perfguard-profile): its top operators and its Chrome trace."""

    ops: tuple[ProfileOp, ...] = ()
    sort_by: str = "cpu"  # "cuda": by self CUDA time; "cpu": by self CPU time (a CPU machine)
    calls: int = 0  # calls profiled; every figure is per call
    kernels_per_call: float | None = None  # GPU kernels launched per call; None on a CPU
    trace: str | None = None  # the Chrome trace, relative to the report folder
    problem: str | None = None  # why the profile is missing or partial (profiling never fails a case)


@dataclasses.dataclass(frozen=True, slots=True)
class TimeSplit:
    """Where one call's time went, from the counting pass: ms per call by name, each the median over the
    pass's calls. The names that make up 99% of the time, at most MAX_SPLIT_ROWS, most first; the rest
    summed in `other_ms`. A kernel (a copy, a memset) by its name as the counters compare it (Inductor's
    number stripped): its time on the GPU; an ATen operator: its self time on the host."""

    named_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    other_ms: float = 0.0

    def total_ms(self) -> float:
        return sum(self.named_ms.values()) + self.other_ms

    def sides(self) -> tuple[dict[str, float], float]:
        """Its named rows and its `other`, as every split gives them (analysis/moved.py)."""
        return self.named_ms, self.other_ms


@dataclasses.dataclass(frozen=True, slots=True)
class ByteSplit:
    """Where one call's allocations came from, from the counting pass's memory events (a GPU's): the bytes
    the caching allocator handed out per call by the outermost ATen operator that asked for them (what
    the user's code called: aten::linear, not the aten::empty inside it), each the median over the
    pass's calls; "outside any ATen operator" for the rest. Rows and `other_bytes` as TimeSplit's."""

    named_bytes: dict[str, float] = dataclasses.field(default_factory=dict)
    other_bytes: float = 0.0

    def sides(self) -> tuple[dict[str, float], float]:
        return self.named_bytes, self.other_bytes


MAX_SPLIT_ROWS = 40
SPLIT_SHARE = 0.99  # the share of the time (the bytes) the named rows make up


@dataclasses.dataclass(frozen=True, slots=True)
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
    # torch.compile's counters, over the whole case (COMPILE_KINDS): by graph (its function and file), by
    # graph break and by recompile (what dynamo said, and in which function), by frame given up on.
    graphs: dict[str, float] = dataclasses.field(default_factory=dict)
    graph_breaks: dict[str, float] = dataclasses.field(default_factory=dict)
    recompiles: dict[str, float] = dataclasses.field(default_factory=dict)
    eager_frames: dict[str, float] = dataclasses.field(default_factory=dict)
    compiled: bool = False  # whether the case compiled anything (its compile counters were taken)
    frames: dict[str, str] = dataclasses.field(default_factory=dict)  # a compile counter's name -> the user's file:line
    # Where a call's time went (analysis/moved.py reads them to say what moved): the GPU's time by kernel
    # (a copy as "copy HtoD", a memset as "memset"), and for a call the host sets the pace of (its regime
    # "caller" or "host-clock": model.HOST_BOUND) the ATen operators' self time on the host.
    kernel_time: TimeSplit | None = None
    op_time: TimeSplit | None = None
    # Where a call's memory came from, for a case on a GPU without a memory breakdown (whose breakdown by
    # what the bytes hold says more): the bytes allocated by operator (analysis/moved.py, a memory verdict).
    alloc_bytes: ByteSplit | None = None

    def total(self, kind: str) -> float:
        return float(sum(getattr(self, kind).values()))

    def counted(self, kind: str) -> bool:
        if kind in COMPILE_KINDS:
            return self.compiled
        # calls 0: the profiled pass failed and only the compile was counted
        return bool(self.calls) and (self.device or kind == "aten_ops")
