"""The passes of one case's measurement, in their order: set-up and warm-up, the judged samples (the GPU's
time, or the caller's), the caller's time, memory, the work counters, torch.compile's, the memory
breakdown, telemetry.

Each pass is a function that returns its part of the result, so what it holds goes as it returns: the
L2 flush buffer before the counters and the breakdown (they would count it), a captured graph's memory
pool before the caller's samples and the memory pass (which measure what is live).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from perfguard.analysis import roofline
from perfguard.analysis.stats import summarize
from perfguard.case import CaseInstance
from perfguard.measure import breakdown, compiling, counters, memory, nvml, telemetry
from perfguard.measure.lifecycle import first_call, guard, nvtx, setup
from perfguard.measure.timers import (
    CallEstimate,
    CallerTimer,
    CudaEventTimer,
    CudaGraphTimer,
    HostTimer,
    SamplingRule,
    Timer,
    check_finite,
    graph_calls,
    sample,
    warm_up,
)
from perfguard.model import HOST_BOUND, CaseResult, Counters, DeviceInfo, Timing, thin_samples

WARMUP_S = 0.025
# The GPU time's share of the budget, from the warm-up's start (the caller's: SamplingRule.caller_share).
GPU_SHARE = 0.55


def measured(instance: CaseInstance, device: DeviceInfo, rule: SamplingRule, base: CaseResult,
             session: compiling.Session) -> CaseResult:
    """`base` with what the case's passes measured, in their order."""
    cuda = device.kind == "cuda"
    handle = nvml.handle(device.uuid) if cuda else None
    case = _Case(instance, base, device, rule, session, telemetry.Watch(handle, device.max_sm_clock_mhz), Passes())
    fn, result = _timed(case, handle)
    # The work counters, from one profiled pass of a few calls, and the breakdown: outside wall_s (a
    # profiled call and the profiler's analysis take seconds, not the case's budget), and after the L2
    # flush buffer went with _timed (the breakdown would count it). A failure is a note, not a case error.
    with nvtx(f"{case.where}: counters", cuda), case.passes.timed("counters"):
        result = _counted(case, fn, result)
    result = _compiled(case, result)
    if instance.spec.memory_breakdown:
        with nvtx(f"{case.where}: memory breakdown", cuda), case.passes.timed("memory_breakdown"):
            result = dataclasses.replace(result, memory_breakdown=breakdown.measure(fn, device))
    return dataclasses.replace(result, status="ok", telemetry=case.watch.result(), passes_s=case.passes.seconds)


@dataclasses.dataclass(frozen=True)
class _Case:
    """What every pass of one case's measurement reads."""

    instance: CaseInstance
    base: CaseResult
    device: DeviceInfo
    rule: SamplingRule
    session: compiling.Session
    watch: telemetry.Watch
    passes: Passes

    @property
    def where(self) -> str:
        return self.instance.id

    @property
    def cuda(self) -> bool:
        return self.device.kind == "cuda"


def _timed(case: _Case, handle: Any) -> tuple[Callable[[], Any], CaseResult]:
    """Set-up to the memory pass, the case's wall time: the case's callable, and the result with these
    passes' part. perfguard's L2 flush buffer lives in this scope alone."""
    where, cuda, spec = case.where, case.cuda, case.instance.spec
    # Allocated before the memory baseline is taken: the case's memory does not count it.
    flush = memory.l2_flusher(case.device) if cuda and spec.cache == "cold" else None
    mem_before = memory.before_setup(handle, graph=spec.mode == "graph") if cuda else None
    t_setup = time.perf_counter()
    fn = compiling.wrap(setup(case.instance, case.device), spec.compile)
    setup_s = time.perf_counter() - t_setup
    warm = _warm(case, fn, flush)
    judged = _judged(case, fn, flush, warm)
    timings = {"caller_time" if judged.regime == "caller" else "gpu_time": judged.timing}
    mem = None
    if cuda:
        if judged.regime != "caller":
            timings["caller_time"] = _caller_time(case, fn, judged.per_call_s)
        with nvtx(f"{where}: memory", cuda), case.passes.timed("memory"):
            mem = guard(where, "memory pass", lambda: memory.measure_calls(fn, mem_before))
    wall_s = time.perf_counter() - warm.start
    return fn, dataclasses.replace(case.base, timer=judged.timer, regime=judged.regime, timings=timings,
                                   dropped_samples=judged.dropped, memory=mem, setup_s=setup_s, wall_s=wall_s,
                                   enqueue_ms=warm.estimate.host_s * 1e3 if cuda else None, outputs=warm.outputs)


@dataclasses.dataclass(frozen=True)
class _Warm:
    """The warm-up's part: the first call's outputs, the time per call, and when the case's wall time
    (`start`) and its sampling (`sampling`) began."""

    outputs: str
    estimate: CallEstimate
    start: float
    sampling: float


def _warm(case: _Case, fn: Callable[[], Any], flush: Callable[[], Any] | None) -> _Warm:
    where, passes, session = case.where, case.passes, case.session
    start = time.perf_counter()
    with nvtx(f"{where}: warm-up", case.cuda):
        with passes.timed("first_call"):
            outputs = session.first_call(lambda: first_call(case.instance, fn, case.device))
        if session.compiled:
            with passes.timed("compile_warm"):
                guard(where, "the warm compile", lambda: session.warm(fn))
            start = time.perf_counter()  # the case's wall time is its measurement's: the compiles are said apart
        # The budget is for sampling: a first call that compiles, picks kernels or creates cuBLAS
        # handles (a second, for a model's first forward in a process) must not eat the samples' share.
        # The warm-up is the first of the load that the GPU samples' minimum time counts.
        sampling = time.perf_counter()
        with passes.timed("warm_up"):
            estimate = guard(where, "warm-up",
                             lambda: warm_up(fn, flush, case.cuda, min(WARMUP_S, case.rule.budget_s / 10)))
    return _Warm(outputs, estimate, start, sampling)


@dataclasses.dataclass(frozen=True)
class _Judged:
    """The judged figure's part: its regime, the timer that took it and the samples it dropped, and the
    GPU's time per call that sizes the caller's samples (where the GPU's time is judged)."""

    regime: str
    timer: str
    dropped: int
    timing: Timing
    per_call_s: float | None = None


def _judged(case: _Case, fn: Callable[[], Any], flush: Callable[[], Any] | None, warm: _Warm) -> _Judged:
    """The judged figure: GPU time where calls can be queued ahead of the device, else the caller's."""
    queued = _queued(case, fn, flush, warm)
    if queued is not None:
        return queued
    # No call could be queued ahead of the device: its timer went with _queued (a captured graph's
    # memory pool with it), before the caller's samples.
    rule = case.rule
    with nvtx(f"{case.where}: samples", case.cuda), case.passes.timed("samples"):
        timer = CallerTimer(fn, warm.estimate.total_s, rule.caller_sample_s)
        # The judged figure now: its minimum time is the GPU samples', counted from the warm-up's start.
        samples, stop = _sample_caller(case, timer, warm.sampling + rule.budget_s * 0.9, rule.min_time_s,
                                       started=warm.sampling)
    return _Judged("caller", timer.name, timer.dropped, _timing(samples, stop, case.where))


def _queued(case: _Case, fn: Callable[[], Any], flush: Callable[[], Any] | None, warm: _Warm) -> _Judged | None:
    """The device's samples (a CPU's: the host clock's), or None where no call could be queued ahead of
    the device. The timer lives in this scope alone: a captured graph holds its own memory pool."""
    where, cuda, rule, base = case.where, case.cuda, case.rule, case.base
    timer, calls = _timer(case, fn, flush, warm.estimate)
    case.watch.tick()

    def take(k: int) -> list[float]:
        out = guard(where, "sampling", lambda: timer.take(k))
        case.watch.tick()
        if timer.outrun:
            raise _Outrun
        return out

    gpu_rule = rule
    if roofline.declared_wall(base.flops, base.bytes, case.device, base.params.get("dtype")) == "memory":
        gpu_rule = dataclasses.replace(rule, min_time_s=min(rule.min_time_s, rule.memory_min_time_s))
    regime, per_call_s = "host-clock", None
    with nvtx(f"{where}: samples", cuda), case.passes.timed("samples"):
        try:
            samples, stop = sample(take, warm.estimate.total_s, gpu_rule,
                                   warm.sampling + rule.budget_s * (GPU_SHARE if cuda else 0.9),
                                   calls_per_sample=calls, started=warm.sampling)
        except _Outrun:
            return None
        if isinstance(timer, CudaEventTimer):  # the device's timer also tells the regime
            regime = "enqueue-bound" if timer.enqueue_bound() else "device"
            per_call_s = max(warm.estimate.host_s, (timer.device_s or 0.0) / calls)  # set by every batch
    return _Judged(regime, timer.name, timer.dropped, _timing(samples, stop, where), per_call_s)


def _timer(case: _Case, fn: Callable[[], Any], flush: Callable[[], Any] | None,
           estimate: CallEstimate) -> tuple[Timer, int]:
    """The timer of the device's samples (a CPU's: the host clock), and the calls each sample spans."""
    if not case.cuda:
        return HostTimer(fn), 1
    clock_hz = (case.device.max_sm_clock_mhz or 2000) * 1e6
    if case.instance.spec.mode != "graph":
        return CudaEventTimer(fn, flush, estimate, clock_hz), 1
    calls = graph_calls(case.instance.spec.cache, estimate)
    return guard(case.where, "CUDA-graph capture", lambda: CudaGraphTimer(fn, flush, estimate, clock_hz, calls)), calls


def _caller_time(case: _Case, fn: Callable[[], Any], per_call_s: float | None) -> Timing:
    """The caller's time beside the GPU's: what the launch overhead is counted from."""
    rule = case.rule
    with nvtx(f"{case.where}: caller", case.cuda), case.passes.timed("caller_samples"):
        caller_end = time.perf_counter() + max(rule.budget_s * rule.caller_share, rule.caller_min_time_s)
        samples, stop = _sample_caller(case, CallerTimer(fn, per_call_s, rule.caller_sample_s), caller_end,
                                       rule.caller_min_time_s)
    return _timing(samples, stop, f"{case.where} (caller's time)")


def _counted(case: _Case, fn: Callable[[], Any], result: CaseResult) -> CaseResult:
    """`result` with the work counters of one profiled pass of a few calls and their busy time; a failure
    is a note (counters_problem), not a case error."""
    try:
        # Where the GPU sets the pace, the host's operators say nothing of its time: not split. A memory
        # breakdown says more of where the bytes went than the operators that allocated them.
        work, busy = counters.count(fn, case.cuda, operators=result.regime in HOST_BOUND,
                                    allocations=case.cuda and not case.instance.spec.memory_breakdown)
        if busy and min(busy) > 0:
            busy_time = Timing(summarize(busy, "counted"), tuple(busy))
            result = dataclasses.replace(result, timings={**result.timings, "busy_time": busy_time})
        return dataclasses.replace(result, counters=work)
    except Exception as exc:  # noqa: BLE001 - the profiler or the call failing must not fail the case
        return dataclasses.replace(result, counters_problem=counters.problem(case.where, exc))


def _compiled(case: _Case, result: CaseResult) -> CaseResult:
    """`result` with torch.compile's times, and its counters joined to the work counters (also where the
    profiled pass failed: calls 0); as it was where the case compiled nothing."""
    compiled = case.session.result()
    if compiled is None:
        return result
    timings = {**result.timings, "compile_cold": _once(compiled.cold_ms)}
    if compiled.warm_ms is not None:
        timings["compile_warm"] = _once(compiled.warm_ms)
    work = dataclasses.replace(result.counters or Counters(calls=0, device=False), compiled=True,
                               frames=compiled.frames, **compiled.counts)
    problem = result.counters_problem
    if compiled.problem:  # a torch whose dynamo lacks what a counter reads: said, not a failure
        problem = f"{problem}; {compiled.problem}" if problem else f"{case.where}: {compiled.problem}"
    return dataclasses.replace(result, timings=timings, counters=work, counters_problem=problem)


def _timing(samples: list[float], stop: str, where: str) -> Timing:
    """The samples' summary, once they are known to be finite and above the timer's resolution."""
    check_finite(samples, where)
    return Timing(summarize(samples, stop), thin_samples(samples))


class Passes:
    """Where a case's measurement spent its wall time, by pass (CaseResult.passes_s): what to make cheaper."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def _once(ms: float) -> Timing:
    """A figure taken once a run (a compile's time): a summary of its one sample."""
    return Timing(summarize([ms], "once"), (ms,))


class _Outrun(Exception):
    """Raised out of sampling when no call could be queued ahead of the device (timers.CudaEventTimer.outrun)."""


def _sample_caller(case: _Case, timer: CallerTimer, deadline: float, min_time_s: float,
                   started: float | None = None) -> tuple[list[float], str]:
    """The caller's time per call, under the same stopping rule with its own minimum time: after the GPU
    samples, `rule.caller_min_time_s` (they have already brought the clocks to where they settle)."""

    def take(k: int) -> list[float]:
        out = guard(case.where, "sampling the caller's time", lambda: timer.take(k))
        case.watch.tick()
        return out

    rule = dataclasses.replace(case.rule, min_time_s=min_time_s)
    return sample(take, rule.caller_sample_s, rule, deadline, started=started)  # a sample is ~caller_sample_s of calls
