"""Re-run a case under torch.profiler: its top operators, kernels per call and a Chrome trace.

Profiling is a look inside a case that was already measured, never a measurement: the profiler's
own overhead inflates every time it reports, so its figures explain a verdict and never make one.
`profile_case` always returns a Profile; whatever goes wrong (setup, the profiler, the trace file)
comes back as its one-line `problem`, and the case's verdict stands.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import DeviceType

from perfguard.case import CaseInstance
from perfguard.errors import ConfigError, MeasurementError, first_line
from perfguard.files import writable
from perfguard.measure import kineto
# The set-up, first call and clean-up a measured case goes through: a profiled case is set up, checked
# and freed as a measured one is, and fails with the same line.
from perfguard.measure.lifecycle import case_scope, first_call, guard, setup
from perfguard.model import CaseResult, DeviceInfo, Profile, ProfileOp, names

WARMUP_CALLS = 2
PROFILED_CALLS = 5
TOP_OPS = 10
TRACES = "traces"  # the traces' folder inside the report folder
# Kineto's rows that are not operators: allocator events, summed under one name.
NOT_OPERATORS = ("[memory]",)


def trace_name(case_id: str) -> str:
    """A file name for the case's trace: the id where it is safe, plus a hash of it where it was not."""
    safe = names.UNSAFE_FILE_CHARS.sub("_", case_id).strip("._")[:100] or "case"
    if safe == case_id:
        return f"{safe}.json"
    return f"{safe}-{hashlib.sha1(case_id.encode()).hexdigest()[:8]}.json"


def profiled(result: CaseResult, instance: CaseInstance, device: DeviceInfo, report_dir: Path | None) -> CaseResult:
    """`result` with the case's profile (`profile_case`)."""
    return dataclasses.replace(result, profile=profile_case(instance, device, report_dir))


def profile_case(instance: CaseInstance, device: DeviceInfo, report_dir: Path | None) -> Profile:
    """Set the case up afresh, warm it up, profile PROFILED_CALLS calls; the trace goes to
    `report_dir/traces/` (no trace when `report_dir` is None)."""
    where = instance.id
    with case_scope(where, device):
        try:
            # Inside the scope and the try: an error's frames (holding the case's tensors) are gone
            # before the scope frees the memory.
            return _profile(instance, device, report_dir)
        except MeasurementError as exc:
            problem = f"{where}: not profiled: {first_line(str(exc), 'no message').removeprefix(where + ': ')}"
        except Exception as exc:  # noqa: BLE001 - the profiler itself failing must not fail the case
            problem = f"{where}: not profiled: torch.profiler raised {type(exc).__name__}: {first_line(str(exc), 'no message')}"
    return Profile(sort_by=_clock(device), problem=problem)


def _profile(instance: CaseInstance, device: DeviceInfo, report_dir: Path | None) -> Profile:
    cuda = device.kind == "cuda"
    fn = setup(instance, device)
    first_call(instance, fn, device)

    def calls(n: int) -> None:
        for _ in range(n):
            fn()
        _sync(cuda)

    guard(instance.id, "warm-up", lambda: calls(WARMUP_CALLS))
    with kineto.quiet():
        with kineto.profiler(cuda, record_shapes=True, profile_memory=True) as prof:
            guard(instance.id, "the profiled calls", lambda: calls(PROFILED_CALLS))
        del fn, calls
        ops = _top_ops(prof, cuda, PROFILED_CALLS)
        kernels = _kernel_count(prof.function_events) / PROFILED_CALLS if cuda else None
        trace, problem = _save_trace(prof.export_chrome_trace, instance.id, report_dir)
    return Profile(ops=ops, sort_by=_clock(device), calls=PROFILED_CALLS, kernels_per_call=kernels, trace=trace,
                   problem=problem)


def _top_ops(prof: Any, cuda: bool, calls: int) -> tuple[ProfileOp, ...]:
    """The TOP_OPS rows with the most self time on the table's clock, per call.

    Self time, not total: the wrappers (aten::matmul around aten::mm) would otherwise head the table
    with time that is their callees'.
    """
    rows = [e for e in prof.key_averages(group_by_input_shape=True) if e.key not in NOT_OPERATORS]

    def self_us(e: Any) -> float:
        return e.self_device_time_total if cuda else e.self_cpu_time_total

    def total_us(e: Any) -> float:
        return e.device_time_total if cuda else e.cpu_time_total

    rows.sort(key=lambda e: (-self_us(e), -total_us(e), e.key))
    return tuple(
        ProfileOp(
            operator=e.key,
            calls=e.count / calls,
            total_ms=total_us(e) / 1e3 / calls,
            self_ms=self_us(e) / 1e3 / calls,
            input_shapes=str(e.input_shapes or []),
            self_memory_bytes=round((e.self_device_memory_usage if cuda else e.self_cpu_memory_usage) / calls),
        )
        for e in rows[:TOP_OPS]
    )


def _kernel_count(events: Any) -> int:
    """GPU kernels among the profiled events (copies and memsets are not kernels)."""
    count = 0
    for e in events:
        if e.device_type != DeviceType.CUDA:
            continue
        kind = getattr(e, "activity_type", None)  # kineto's activity name, where torch passes it on
        if kind:
            count += kind == "kernel"
        else:  # an older torch: a device event is a kernel unless it is a copy or a memset
            count += not e.name.startswith(("Memcpy", "Memset"))
    return count


def _save_trace(export: Callable[[str], Any], case_id: str, report_dir: Path | None) -> tuple[str | None, str | None]:
    """(trace path relative to `report_dir`, problem). Exported to a fresh temporary folder first: the
    exporter writes a path it cannot open without raising, and it exports only once."""
    if report_dir is None:
        return None, None
    name = trace_name(case_id)
    target = report_dir / TRACES / name
    with tempfile.TemporaryDirectory(prefix="perfguard-trace-") as tmp:
        staged = Path(tmp, name)
        export(str(staged))
        if not staged.is_file():
            return None, f"{case_id}: torch.profiler wrote no Chrome trace; the operator table is kept"
        try:
            target = writable(target)  # a `reports` (or `traces`) link out of the project, a trace linking out
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(staged, target)
        except ConfigError as exc:
            return None, f"{case_id}: no trace written: {exc}"
        except OSError as exc:
            return None, (f"{case_id}: cannot write the trace {target} ({exc.strerror or exc}); "
                          f"make {target.parent} a writable folder or choose another --perfguard-report")
    return f"{TRACES}/{name}", None


def _clock(device: DeviceInfo) -> str:
    return "cuda" if device.kind == "cuda" else "cpu"


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


