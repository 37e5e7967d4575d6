"""Measure one case instance end to end (its passes: measure/passes.py), or smoke-run it.

`measure` and `smoke` always return a CaseResult: a case that cannot be measured comes back with
status "error" and a one-line reason (plus the user's traceback), its GPU memory freed, so the
caller can go on with the next case. A measured result is complete: its derived figures are made here
(analysis/metrics.py), against the roofs of the device the caller hands in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from perfguard.analysis import metrics
from perfguard.case import CaseInstance
from perfguard.errors import MeasurementError
from perfguard.measure import compiling, counters, passes, watchdog
from perfguard.measure.lifecycle import case_scope, first_call, setup, user_traceback
from perfguard.measure.timers import SamplingRule
from perfguard.model import CaseResult, DeviceInfo


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
        return passes.measured(instance, device, rule, base, session)


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
