"""Measure one case instance end to end: setup, warm-up, GPU samples, the caller's time, memory, telemetry.

`measure` and `smoke` always return a CaseResult: a case that cannot be measured comes back with
status "error" and a one-line reason (plus the user's traceback), its GPU memory freed, so the
caller can go on with the next case. A measured result is complete: its derived figures are made here
(analysis/metrics.py), against the roofs of the device the caller hands in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from perfguard.analysis import metrics, roofline
from perfguard.analysis.stats import summarize
from perfguard.case import CaseInstance
from perfguard.errors import MeasurementError
from perfguard.measure import breakdown, compiling, counters, memory, nvml, telemetry, watchdog
from perfguard.measure.lifecycle import case_scope, first_call, guard, nvtx, setup, user_traceback
from perfguard.measure.timers import (
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
from perfguard.model import CaseResult, Counters, DeviceInfo, Timing, thin_samples

WARMUP_S = 0.025
# The GPU time's share of the budget, from the warm-up's start (the caller's: SamplingRule.caller_share).
GPU_SHARE = 0.55


def smoke(instance: CaseInstance, device: DeviceInfo, nodeid: str = "", timeout_s: float | None = None) -> CaseResult:
    """Run the callable once and its check: the case as a functional test, at almost no cost."""

    def once(base: CaseResult) -> CaseResult:
        fn = setup(instance, device)
        return _replace(base, status="smoke", outputs=first_call(instance, fn, device))

    return _run(instance, device, nodeid, timeout_s, once)


def measure(
    instance: CaseInstance, device: DeviceInfo, rule: SamplingRule, nodeid: str = "", timeout_s: float | None = None
) -> CaseResult:
    """The case measured, its derived figures included: bandwidth, FLOP/s and the roofline against
    `device`'s roofs, the calibrated ones where the caller's device carries them (BaselineFile.calibrated:
    the caller reads the baseline, measuring reads no file)."""
    counters.prepare()  # outside the case's time limit: the profiler's first start is the process's cost
    result = _run(instance, device, nodeid, timeout_s, lambda base: _measure(instance, device, rule, base))
    return metrics.complete(result, device)


def _run(
    instance: CaseInstance, device: DeviceInfo, nodeid: str, timeout_s: float | None,
    body: Callable[[CaseResult], CaseResult],
) -> CaseResult:
    """`body` in the case's scope and under its timeout; errors, a timeout included, make an error result."""
    base = _base_result(instance, device, nodeid)
    # The error is caught inside the scope: while it propagates, its traceback's frames still hold
    # the case's tensors, and the scope's exit must find them gone to hand the memory back.
    with watchdog.deadline(timeout_s) as stop_alarm, case_scope(instance.id, device) as left:
        try:
            try:
                result = body(base)
            finally:
                stop_alarm()
        except MeasurementError as exc:
            result = _replace(base, status="error", error=str(exc))
        except watchdog.CaseTimeout as exc:
            result = _replace(base, status="error", error=_timed_out(instance.id, timeout_s, exc))
    if left.settings or left.processes:
        result = _replace(result, restored_state=tuple(left.settings), left_processes=tuple(left.processes))
    return result


def _measure(instance: CaseInstance, device: DeviceInfo, rule: SamplingRule, base: CaseResult) -> CaseResult:
    session = compiling.Session(device.kind == "cuda", declared=instance.spec.compile is not None)
    with session.running():
        return _measured(instance, device, rule, base, session)


def _measured(instance: CaseInstance, device: DeviceInfo, rule: SamplingRule, base: CaseResult,
              session: compiling.Session) -> CaseResult:
    cuda = device.kind == "cuda"
    where = instance.id
    handle = nvml.handle(device.uuid) if cuda else None
    watch = telemetry.Watch(handle, device.max_sm_clock_mhz)
    # The flush buffer is perfguard's, not the case's: allocated before the memory baseline is taken.
    flush = memory.l2_flusher(device) if cuda and instance.spec.cache == "cold" else None
    mem_before = memory.before_setup(handle, graph=instance.spec.mode == "graph") if cuda else None

    t_setup = time.perf_counter()
    fn = compiling.wrap(setup(instance, device), instance.spec.compile)
    setup_s = time.perf_counter() - t_setup

    passes = Passes()
    start = time.perf_counter()
    with nvtx(f"{where}: warm-up", cuda):
        with passes.timed("first_call"):
            outputs = session.first_call(lambda: first_call(instance, fn, device))
        if session.compiled:
            with passes.timed("compile_warm"):
                guard(where, "the warm compile", lambda: session.warm(fn))
            start = time.perf_counter()  # the case's wall time is its measurement's: the compiles are said apart
        # The budget is for sampling: a first call that compiles, picks kernels or creates cuBLAS
        # handles (a second, for a model's first forward in a process) must not eat the samples' share.
        # The warm-up is the first of the load that the GPU samples' minimum time counts.
        sampling = time.perf_counter()
        with passes.timed("warm_up"):
            estimate = guard(where, "warm-up", lambda: warm_up(fn, flush, cuda, min(WARMUP_S, rule.budget_s / 10)))

    calls = 1
    events: CudaEventTimer | None = None  # on a GPU: the device's timer, which also tells the regime
    if not cuda:
        timer: Timer = HostTimer(fn)
    else:
        clock_hz = (device.max_sm_clock_mhz or 2000) * 1e6
        if instance.spec.mode == "graph":
            calls = graph_calls(instance.spec.cache, estimate)
            events = guard(where, "CUDA-graph capture", lambda: CudaGraphTimer(fn, flush, estimate, clock_hz, calls))
        else:
            events = CudaEventTimer(fn, flush, estimate, clock_hz)
        timer = events
    watch.tick()

    def take(k: int) -> list[float]:
        out = guard(where, "sampling", lambda: timer.take(k))
        watch.tick()
        if timer.outrun:
            raise _Outrun
        return out

    # The judged figure: GPU time where calls can be queued ahead of the device, else the caller's.
    regime = "host-clock" if not cuda else "device"
    gpu_rule = rule
    if roofline.declared_wall(base.flops, base.bytes, device, base.params.get("dtype")) == "memory":
        gpu_rule = dataclasses.replace(rule, min_time_s=min(rule.min_time_s, rule.memory_min_time_s))
    with nvtx(f"{where}: samples", cuda), passes.timed("samples"):
        try:
            samples, stop = sample(take, estimate.total_s, gpu_rule, sampling + rule.budget_s * (GPU_SHARE if cuda else 0.9),
                                   calls_per_sample=calls, started=sampling)
            if events is not None:
                regime = "enqueue-bound" if events.enqueue_bound() else "device"
                per_call_s = max(estimate.host_s, (events.device_s or 0.0) / calls)  # set by every batch
        except _Outrun:
            events = None  # done with: a captured graph's memory pool goes now, not after the caller's samples
            regime, timer = "caller", CallerTimer(fn, estimate.total_s, rule.caller_sample_s)
            # The judged figure now: its minimum time is the GPU samples', counted from the warm-up's start.
            samples, stop = _sample_caller(where, timer, rule, sampling + rule.budget_s * 0.9, watch,
                                           rule.min_time_s, started=sampling)
    check_finite(samples, where)
    latency = summarize(samples, stop)
    timer_name, dropped = timer.name, timer.dropped
    del timer, events  # a captured graph holds its own memory pool

    judged = "caller_time" if regime == "caller" else "gpu_time"
    timings = {judged: Timing(latency, thin_samples(samples))}
    mem = None
    if cuda:
        if regime != "caller":
            with nvtx(f"{where}: caller", cuda), passes.timed("caller_samples"):
                caller_end = time.perf_counter() + max(rule.budget_s * rule.caller_share, rule.caller_min_time_s)
                caller_samples, caller_stop = _sample_caller(where, CallerTimer(fn, per_call_s, rule.caller_sample_s), rule,
                                                              caller_end, watch, rule.caller_min_time_s)
            check_finite(caller_samples, f"{where} (caller's time)")
            timings["caller_time"] = Timing(summarize(caller_samples, caller_stop), thin_samples(caller_samples))
        with nvtx(f"{where}: memory", cuda), passes.timed("memory"):
            mem = guard(where, "memory pass", lambda: memory.measure_calls(fn, mem_before))
    wall_s = time.perf_counter() - start
    # After the memory pass, and outside wall_s: a profiled call and the profiler's analysis take
    # seconds, not the case's budget. A failure is a note on the breakdown, not a case error. The L2
    # flush buffer (twice the L2) is perfguard's: gone before the breakdown, which would count it.
    del flush
    # The work counters, from one profiled pass of a few calls: outside wall_s too (the profiler's
    # start and the trace's analysis are perfguard's), and a failure is a note, not a case error.
    work, counted = None, None
    with nvtx(f"{where}: counters", cuda), passes.timed("counters"):
        try:
            work, busy = counters.count(fn, cuda)
            if busy and min(busy) > 0:
                timings["busy_time"] = Timing(summarize(busy, "counted"), tuple(busy))
        except Exception as exc:  # noqa: BLE001 - the profiler or the call failing must not fail the case
            counted = counters.problem(where, exc)
    compiled = session.result()
    if compiled is not None:
        timings["compile_cold"] = _once(compiled.cold_ms)
        if compiled.warm_ms is not None:
            timings["compile_warm"] = _once(compiled.warm_ms)
        # torch.compile's counters join the work counters, also where the profiled pass failed (calls 0)
        work = dataclasses.replace(work or Counters(calls=0, device=False), compiled=True, frames=compiled.frames,
                                   **compiled.counts)
        if compiled.problem:  # a torch whose dynamo lacks what a counter reads: said, not a failure
            counted = f"{counted}; {compiled.problem}" if counted else f"{where}: {compiled.problem}"
    parts = None
    if instance.spec.memory_breakdown:
        with nvtx(f"{where}: memory breakdown", cuda), passes.timed("memory_breakdown"):
            parts = breakdown.measure(fn, device)
    del fn

    return _replace(
        base,
        status="ok",
        timer=timer_name,
        regime=regime,
        timings=timings,
        dropped_samples=dropped,
        enqueue_ms=estimate.host_s * 1e3 if cuda else None,
        memory=mem,
        telemetry=watch.result(),
        setup_s=setup_s,
        wall_s=wall_s,
        passes_s=passes.seconds,
        memory_breakdown=parts,
        counters=work,
        counters_problem=counted,
        outputs=outputs,
    )


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


def _sample_caller(where: str, timer: CallerTimer, rule: SamplingRule, deadline: float, watch: telemetry.Watch,
                   min_time_s: float, started: float | None = None) -> tuple[list[float], str]:
    """The caller's time per call, under the same stopping rule with its own minimum time: after the GPU
    samples, `rule.caller_min_time_s` (they have already brought the clocks to where they settle)."""

    def take(k: int) -> list[float]:
        out = guard(where, "sampling the caller's time", lambda: timer.take(k))
        watch.tick()
        return out

    rule = dataclasses.replace(rule, min_time_s=min_time_s)
    return sample(take, rule.caller_sample_s, rule, deadline, started=started)  # a sample is ~caller_sample_s of calls


def _base_result(instance: CaseInstance, device: DeviceInfo, nodeid: str) -> CaseResult:
    spec = instance.spec
    return CaseResult(
        id=instance.id,
        name=spec.name,
        status="error",
        nodeid=nodeid,
        params=instance.params_for_record(),
        device=device.slug,
        device_uuid=device.uuid,
        # What was done, not what was asked: a CPU has no L2 flush nor graph replay (the host clock
        # times each call as it comes).
        cache=spec.cache if device.kind == "cuda" else "none",
        mode=spec.mode if device.kind == "cuda" else "eager",
        bytes=instance.bytes_moved(device.kind),
        flops=instance.flop_count(device.kind),
        threshold=spec.threshold,
        memory_threshold=spec.memory_threshold,
        counter_allowance=dict(spec.counters),
    )


def _replace(result: CaseResult, **changes: Any) -> CaseResult:
    return dataclasses.replace(result, **changes)


def _timed_out(where: str, timeout_s: float | None, exc: BaseException) -> str:
    frames = user_traceback(exc)
    if compiling.was_compiling(exc):  # a compile the case did not declare counts against its default timeout
        return (f"{where}: still compiling after {timeout_s:g} s (torch.compile), stopped (--perfguard-timeout); "
                "declare it with @perf_case(compile=...) (600 s more for its compiles) or raise the timeout"
                + (f"\n{compiling.user_frames(frames)}" if frames else ""))
    return (f"{where}: still running after {timeout_s:g} s, stopped (--perfguard-timeout); make it finish sooner "
            "or raise the timeout" + (f"\n{frames}" if frames else ""))
