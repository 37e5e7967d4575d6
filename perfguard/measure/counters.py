"""Work counters: what one call does, counted in one profiled pass of a few calls after warm-up.

torch's profiler (Kineto, with CUPTI on a GPU: kineto.profiler) records the pass; its Chrome trace,
the format Kineto writes and every viewer reads, is read back for:

- kernels launched, by name; copies by direction and bytes; memsets (the GPU's activities);
- host-device syncs: the runtime's own blocking calls (cudaStreamSynchronize, cudaDeviceSynchronize,
  cudaEventSynchronize, a synchronous cudaMemcpy) inside the call, each named after the innermost
  ATen operator it happened in, and what that operator was doing (a copy's direction);
- GPU busy time per call: the union of the call's kernel, copy and memset intervals, on the GPU's
  clock: what the GPU did, however long the host took to ask for it;
- ATen operators per call, by name (also on a CPU, where nothing else is counted);
- where a call's time went: each kernel's (copy's, memset's) time on the GPU, and each ATen operator's
  self time on the host (its span less the operators it called), per call, the median over the calls
  (model.TimeSplit: what analysis/moved.py compares to say which kernels or operators moved);
- where a call's memory came from, where asked (`allocations`: the profiler records its memory events):
  the bytes the allocator handed out on the case's device, by the outermost ATen operator that asked
  (model.ByteSplit). Gross allocations, not the profiler table's net "self memory": a tensor is freed
  wherever its last reference drops, so a net figure charges the free to whatever operator runs then.

Each call runs inside a `record_function` range and is followed by a device synchronisation outside
it, so a call's GPU work lies between its start and the next call's, and perfguard's own sync is not
counted. The allocator's statistics (torch.cuda.memory_stats) around the pass give its allocation
calls and the cudaMalloc segments it had to add after warm-up. Counting never fails a case: any
problem comes back as the result's `counters_problem`.
"""

from __future__ import annotations

import bisect
import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from perfguard.analysis.counting import kernel_name
from perfguard.errors import first_line
from perfguard.measure import kineto
from perfguard.model import MAX_SPLIT_ROWS, SPLIT_SHARE, ByteSplit, Counters, TimeSplit

CALLS = 5  # profiled calls: enough for a busy time's median, few enough to cost little
WARMUP_CALLS = 1  # after the measurement's own warm-up: the profiler's first call pays for its start
CALL_RANGE = "perfguard::call"
SYNC_APIS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
             "cudaMemcpy2D", "cudaMemset")
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
# The allocator's cumulative statistics behind two counters (its retries are Memory.alloc_retries).
ALLOCATOR_STATS = {"allocations": "allocation.all.allocated", "segments": "segment.all.allocated"}
MEMORY_EVENT = "[memory]"
DEVICE_TYPES = {False: 0, True: 1}  # a memory event's "Device Type" (c10::DeviceType): CPU, CUDA
OUTSIDE_OPERATORS = "outside any ATen operator"
DIRECTIONS = {"HtoD": "host-to-device", "DtoH": "device-to-host", "DtoD": "device-to-device", "HtoH": "host-to-host",
              "PtoP": "peer-to-peer"}


_prepared = False


def prepare() -> None:
    """Start and stop the profiler once in this process, before any case's time limit runs: its first
    start (on a GPU, CUPTI's) is the process's cost, not a case's."""
    global _prepared
    if not _prepared:
        with kineto.quiet(), kineto.profiler(torch.cuda.is_available()):
            pass
        _prepared = True


def count(fn: Callable[[], Any], cuda: bool, calls: int = CALLS, operators: bool = True,
          allocations: bool = False) -> tuple[Counters, list[float]]:
    """The counters of `calls` calls of `fn` (per call), and the GPU busy time of each call in ms
    (empty on a CPU); `operators`: the operators' self times too (Counters.op_time), for a call the host
    sets the pace of; `allocations`: the bytes allocated by operator (Counters.alloc_bytes). Raises
    whatever the profiler or the call raises; the runner turns it into a note."""
    started = time.perf_counter()
    for _ in range(WARMUP_CALLS):
        fn()
    _sync(cuda)
    before = torch.cuda.memory_stats() if cuda else {}
    with tempfile.TemporaryDirectory(prefix="perfguard-count-") as tmp:
        trace = Path(tmp, "trace.json")
        with kineto.quiet():
            with kineto.profiler(cuda, profile_memory=allocations) as prof:
                for _ in range(calls):
                    with torch.profiler.record_function(CALL_RANGE):
                        fn()
                    _sync(cuda)
            after = torch.cuda.memory_stats() if cuda else {}
            prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text()).get("traceEvents", [])
    counters, busy = read_trace(events, calls, cuda, operators, allocations)
    allocator = {kind: (after.get(stat, 0) - before.get(stat, 0)) / calls for kind, stat in ALLOCATOR_STATS.items()}
    extra = {
        "allocations": {"caching allocator": allocator["allocations"]} if allocator["allocations"] else {},
        "segments": {"cudaMalloc": allocator["segments"]} if allocator["segments"] else {},
    }
    return Counters(**{**counters, **extra}, calls=calls, device=cuda,
                    wall_s=time.perf_counter() - started), busy


def read_trace(events: list[dict[str, Any]], calls: int, cuda: bool, operators: bool = True,
               allocations: bool = False) -> tuple[dict[str, Any], list[float]]:
    """The counters (as Counters' fields, per call) and each call's busy time (ms) from a Chrome trace's
    events. Pure: the tests feed it traces the profiler wrote."""
    spans = [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    ranges = sorted((e for e in spans if e.get("name") == CALL_RANGE and e.get("cat") == "user_annotation"),
                    key=lambda e: e["ts"])
    if len(ranges) != calls:
        raise RuntimeError(f"the profiler's trace holds {len(ranges)} of the {calls} calls profiled")
    # A call's window: from its start to the next call's (its GPU work ends before perfguard's sync returns).
    starts = [float(r["ts"]) for r in ranges]
    windows = list(zip(starts, [*starts[1:], float("inf")]))

    def call_of(ts: float) -> int | None:
        for i, (lo, hi) in enumerate(windows):
            if lo <= ts < hi:
                return i
        return None

    def inside_call(e: dict[str, Any]) -> bool:  # inside a call's own range, not perfguard's sync after it
        ts = float(e["ts"])
        return any(float(r["ts"]) <= ts <= float(r["ts"]) + float(r.get("dur", 0)) for r in ranges)

    ops = [e for e in spans if e.get("cat") == "cpu_op" and inside_call(e)]
    aten = Counter(e["name"] for e in ops if str(e.get("name", "")).startswith("aten::"))
    fields: dict[str, Any] = {"aten_ops": _per_call(aten, calls)}
    if operators:  # a walk of every operator (21 ms of nanoGPT's training step): only where it is read
        op_ms: list[Counter[str]] = [Counter() for _ in range(calls)]
        for op, self_us in _self_times(ops):
            i = call_of(float(op["ts"]))
            if i is not None and str(op["name"]).startswith("aten::"):
                op_ms[i][op["name"]] += self_us / 1e3
        fields["op_time"] = TimeSplit(*split(op_ms, _digits))
    if allocations:
        fields["alloc_bytes"] = ByteSplit(*split(_allocated(events, ops, call_of, calls, DEVICE_TYPES[cuda]), round))
    if not cuda:
        return fields, []
    device = [e for e in spans if e.get("cat") in DEVICE_CATEGORIES and call_of(float(e["ts"])) is not None]
    kernels = Counter(e["name"] for e in device if e["cat"] == "kernel")
    copies: Counter[str] = Counter()
    copy_bytes: Counter[str] = Counter()
    by_correlation: dict[Any, str] = {}
    for e in device:
        if e["cat"] == "gpu_memcpy":
            direction = _direction(e["name"])
            copies[direction] += 1
            copy_bytes[direction] += int((e.get("args") or {}).get("bytes", 0) or 0)
            by_correlation[(e.get("args") or {}).get("correlation")] = f"{direction} {e['name']}"
    memsets = Counter("memset" for e in device if e["cat"] == "gpu_memset")
    runtime = [e for e in spans if e.get("cat") == "cuda_runtime" and inside_call(e)]
    syncs: Counter[str] = Counter()
    causes: dict[str, str] = {}
    for e in runtime:
        if e["name"] not in SYNC_APIS:
            continue
        op = _innermost(ops, e)
        name = f"{e['name']} after {op['name']}" if op else f"{e['name']} outside any ATen operator"
        syncs[name] += 1
        if op is not None and name not in causes:
            cause = _cause(op, runtime, by_correlation)
            if cause:
                causes[name] = cause
    busy = [_union_ms([e for e in device if call_of(float(e["ts"])) == i]) for i in range(calls)]
    device_ms: list[Counter[str]] = [Counter() for _ in range(calls)]
    for e in device:
        name = {"kernel": kernel_name(e["name"]), "gpu_memcpy": f"copy {_direction(e['name'])}"}.get(e["cat"], "memset")
        device_ms[call_of(float(e["ts"]))][name] += float(e.get("dur", 0)) / 1e3  # type: ignore[index]
    fields.update(kernels=_per_call(kernels, calls), copies=_per_call(copies, calls),
                  copy_bytes=_per_call(copy_bytes, calls), memsets=_per_call(memsets, calls),
                  syncs=_per_call(syncs, calls), sync_causes=causes,
                  kernel_time=TimeSplit(*split(device_ms, _digits)))
    return fields, busy


def split(per_call: list[Counter[str]], rounded: Callable[[float], float]) -> tuple[dict[str, float], float]:
    """Each name's median figure per call (a call without it: 0), the names that make up SPLIT_SHARE of the
    total, at most MAX_SPLIT_ROWS, most first, and the rest summed: a split's rows and its `other`, each
    `rounded` (a time to 4 significant digits, judged against a noise of percents: analysis/moved.py)."""
    names = sorted(set().union(*per_call))
    medians = {name: statistics.median([call.get(name, 0.0) for call in per_call]) for name in names}
    total = sum(medians.values())
    named: dict[str, float] = {}
    for name, figure in sorted(medians.items(), key=lambda kv: (-kv[1], kv[0])):
        if figure <= 0 or len(named) == MAX_SPLIT_ROWS or sum(named.values()) >= SPLIT_SHARE * total:
            break
        named[name] = rounded(figure)
    return named, rounded(max(0.0, total - sum(named.values())))


def _allocated(events: list[dict[str, Any]], ops: list[dict[str, Any]], call_of: Callable[[float], int | None],
               calls: int, device_type: int) -> list[Counter[str]]:
    """Each call's bytes allocated on the device by the outermost ATen operator whose span holds the
    allocation, on its thread (the trace's memory events; a free is a negative one)."""
    outermost: dict[Any, tuple[list[float], list[dict[str, Any]]]] = {}  # by thread: starts, operators
    for thread in _threads([o for o in ops if str(o.get("name", "")).startswith("aten::")]):
        starts, top = outermost.setdefault(thread[0].get("tid"), ([], []))
        for op in thread:
            if not top or float(op["ts"]) >= float(top[-1]["ts"]) + float(top[-1].get("dur", 0)):
                starts.append(float(op["ts"]))
                top.append(op)
    per_call: list[Counter[str]] = [Counter() for _ in range(calls)]
    for e in events:
        args = e.get("args") or {}
        if e.get("name") != MEMORY_EVENT or args.get("Device Type") != device_type or not isinstance(e.get("ts"), (int, float)):
            continue
        nbytes, ts = args.get("Bytes"), float(e["ts"])
        i = call_of(ts)
        if i is None or not isinstance(nbytes, int) or nbytes <= 0:
            continue
        starts, top = outermost.get(e.get("tid"), ([], []))
        k = bisect.bisect_right(starts, ts) - 1
        holder = top[k] if k >= 0 and ts <= starts[k] + float(top[k].get("dur", 0)) else None
        per_call[i][holder["name"] if holder else OUTSIDE_OPERATORS] += nbytes
    return per_call


def problem(case_id: str, exc: BaseException) -> str:
    return f"{case_id}: no work counters: {type(exc).__name__}: {first_line(str(exc), 'no message')}"


def _per_call(counts: Counter[str], calls: int) -> dict[str, float]:
    return {name: n / calls for name, n in sorted(counts.items())}


def _direction(name: str) -> str:
    # Kineto names a copy "Memcpy HtoD (Pageable -> Device)".
    return next((d for d in DIRECTIONS if d in name), "other")


def _innermost(ops: list[dict[str, Any]], event: dict[str, Any]) -> dict[str, Any] | None:
    """The innermost ATen operator on the event's thread whose span holds it."""
    ts, tid = float(event["ts"]), event.get("tid")
    holding = [o for o in ops if o.get("tid") == tid and str(o.get("name", "")).startswith("aten::")
               and float(o["ts"]) <= ts <= float(o["ts"]) + float(o.get("dur", 0))]
    return max(holding, key=lambda o: (float(o["ts"]), -float(o.get("dur", 0))), default=None)


def _cause(op: dict[str, Any], runtime: list[dict[str, Any]], copies: dict[Any, str]) -> str:
    """What the operator that synchronised was doing: the copy it made, when it made one."""
    lo, hi = float(op["ts"]), float(op["ts"]) + float(op.get("dur", 0))
    for e in runtime:
        if e.get("tid") == op.get("tid") and lo <= float(e["ts"]) <= hi and e["name"].startswith("cudaMemcpy"):
            copy = copies.get((e.get("args") or {}).get("correlation"))
            if copy:
                direction, _, name = copy.partition(" ")
                source = " from pageable memory" if "Pageable" in name and direction == "HtoD" else \
                    " into pageable memory" if "Pageable" in name and direction == "DtoH" else ""
                return f"a {DIRECTIONS.get(direction, direction)} copy{source}"
    if op["name"] in ("aten::item", "aten::_local_scalar_dense"):
        return "the host reads a value computed on the GPU (.item(), float(), bool())"
    if op["name"] in ("aten::nonzero", "aten::unique", "aten::masked_select"):
        return "an output whose size depends on the data"
    return ""


def _threads(ops: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The operators by thread, each thread's by start, of two that start together the outer first: the
    order a walk of their nesting takes."""
    by_thread: dict[Any, list[dict[str, Any]]] = {}
    for op in ops:
        by_thread.setdefault(op.get("tid"), []).append(op)
    return [sorted(thread, key=lambda o: (float(o["ts"]), -float(o.get("dur", 0)))) for thread in by_thread.values()]


def _self_times(ops: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """Each operator with its self time (µs): its span less the spans of the operators directly inside it,
    on its thread."""
    out: list[tuple[dict[str, Any], float]] = []
    for thread in _threads(ops):
        open_: list[list[Any]] = []  # [op, its end, its self time so far]
        for op in thread:
            start, dur = float(op["ts"]), float(op.get("dur", 0))
            while open_ and open_[-1][1] <= start:
                done = open_.pop()
                out.append((done[0], max(0.0, done[2])))
            if open_:
                open_[-1][2] -= dur  # a direct child's time is not its parent's own
            open_.append([op, start + dur, dur])
        out.extend((o, max(0.0, rest)) for o, _, rest in reversed(open_))
    return out


def _digits(ms: float) -> float:
    return float(f"{ms:.4g}")


def _union_ms(events: list[dict[str, Any]]) -> float:
    """The length of the union of the events' intervals, ms (the trace's times are µs)."""
    total, end = 0.0, float("-inf")
    for lo, hi in sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in events):
        if hi <= end:
            continue
        total += hi - max(lo, end)
        end = hi
    return total / 1e3


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()
