"""GPU memory of a case (torch's caching allocator and NVML), and the L2 flush for cold-cache timing.

Three figures come from the allocator's own statistics, as PyTorch's CudaMemoryLeakCheck reads them:
the peak of a call over what was live before it; the footprint, the most the case held during a call
counted from before its setup (so that what a call keeps for the next, gradients or a cache, counts);
and the bytes retained from one call to the next (a leak). Libraries that keep a workspace for the
life of the process (cuBLAS and cuBLASLt, one per stream and thread) are made before every case's
setup, so that no case pays for them because it happened to run first.
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from perfguard.measure import nvml
from perfguard.measure.timers import capture_stream
from perfguard.model import DeviceInfo, Memory

# Used only when the device does not report its L2 size.
FALLBACK_L2_BYTES = 64 * 2**20
# Calls watched back to back for memory held from one call to the next: up to five steps between
# them, so that a step with a one-off allocation (a lazily made buffer, a cache's first entry) is
# outvoted; at least two (three calls) for a call so slow that more would pass MEMORY_PASS_S.
WATCHED_CALLS = (3, 6)
# Calls of the confirming pass, run only when the watched calls grew: an even number, so that a case
# that alternates between two buffers nets nothing; two for a slow call.
CONFIRM_CALLS = (2, 4)
MEMORY_PASS_S = 0.5


@dataclasses.dataclass(frozen=True)
class Before:
    allocated: int
    nvml_used: int | None
    handle: Any


@dataclasses.dataclass(frozen=True)
class _Call:
    """The allocator around one call: live before it, its peak, and what stayed once its output was dropped."""

    live: int
    peak: int
    after: int


def l2_flusher(device: DeviceInfo) -> Callable[[], Any]:
    """Overwrite a buffer twice the size of the L2, so the next call finds none of its data cached."""
    size = 2 * (device.l2_bytes or FALLBACK_L2_BYTES)
    buf = torch.empty(size // 4, dtype=torch.int32, device="cuda")
    return buf.zero_


def settle_libraries(graph: bool = False) -> None:
    """Make the workspaces cuBLAS keeps per stream, before the case's setup: on the current stream,
    and for a CUDA-graph case (`graph`) on the stream every such case is captured on.

    cuBLAS and cuBLASLt each keep a workspace (32 MiB apiece on a Hopper GPU) per handle and stream for
    the life of the process, made by the first matmul on that stream (and thread: a handle is per
    thread, so also in a backward pass). Without this, the first case of a
    process to multiply counts 64 MiB more than the same case run later. Made before every case's
    setup (after the first, at no cost: they exist), they are live at both ends of every figure and
    cancel out. They are not freed (torch._C._cuda_clearCublasWorkspaces, as PyTorch's own leak
    check does): a graph the user's code captured and keeps (torch.compile's CUDA graphs) may run on
    them. The tensors are made without the RNG, whose state the user's cases draw from.
    """
    streams = [torch.cuda.current_stream(), *([capture_stream()] if graph else [])]
    for stream in streams[1:]:
        stream.wait_stream(streams[0])
    try:
        for stream in streams:
            with torch.cuda.stream(stream), torch.enable_grad():
                _multiply()
                # cuBLAS's handles are per thread, and autograd runs a CUDA backward on a thread of its
                # own (measured: the first training step of a process held 32 MiB more than later ones).
                seed = torch.ones(1, device="cuda", requires_grad=True)
                _MultiplyInBackward.apply(seed).sum().backward()
    except RuntimeError:  # what a case's own settings refuse: the figures then carry the workspaces, no more
        pass
    torch.cuda.synchronize()


def _multiply() -> None:
    """A small GEMM through cuBLAS and one through cuBLASLt, in each dtype the GPU multiplies in."""
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        try:
            a = torch.ones(16, 16, device="cuda", dtype=dtype)
            bias = torch.ones(16, device="cuda", dtype=dtype)
            torch.mm(a, a)  # cuBLAS
            torch.addmm(bias, a, a)  # cuBLASLt (a GEMM with a bias epilogue)
        except RuntimeError:  # a dtype this GPU cannot multiply in: its library paths go unused too
            continue


class _MultiplyInBackward(torch.autograd.Function):
    """The identity, whose backward multiplies: on autograd's device thread."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        _multiply()
        return grad


def before_setup(handle: Any | None, graph: bool = False) -> Before:
    """What is allocated (torch) and used (NVML, through the GPU's `handle`) before the case's setup;
    `graph`: the case is timed by CUDA-graph replay."""
    settle_libraries(graph)
    torch.cuda.reset_peak_memory_stats()
    snap = nvml.snapshot(handle)
    return Before(torch.cuda.memory_allocated(), snap.memory_used_bytes if snap else None, handle)


def measure_calls(fn: Callable[[], Any], before: Before) -> Memory:
    """The memory pass: WATCHED_CALLS calls back to back, each with its own peak, after the case's samples
    (as many as fit in MEMORY_PASS_S, within the bounds).

    The peak is the largest of the calls' peaks over what was live before each; the footprint the
    largest peak over what was allocated before the case's setup; the retained bytes per call how much
    the allocated memory grows from one call to the next, outputs dropped (`_retained`).
    """
    torch.cuda.synchronize()
    setup_allocated = torch.cuda.memory_allocated() - before.allocated
    retries0 = torch.cuda.memory_stats().get("num_alloc_retries", 0)
    # Hand back blocks cached by earlier calls, so "reserved at peak" is what a call needed
    # and fragmentation measures the allocator's waste, not its cache.
    torch.cuda.empty_cache()
    start = time.perf_counter()
    first = _watch(fn)
    call_s = time.perf_counter() - start
    peak_reserved = torch.cuda.max_memory_reserved()
    snap = nvml.snapshot(before.handle)
    calls = [first, *(_watch(fn) for _ in range(_fitting(WATCHED_CALLS, call_s) - 1))]
    retained = _retained(fn, calls, _fitting(CONFIRM_CALLS, call_s))
    retries = torch.cuda.memory_stats().get("num_alloc_retries", 0) - retries0
    used_delta = (
        snap.memory_used_bytes - before.nvml_used
        if snap and snap.memory_used_bytes is not None and before.nvml_used is not None
        else None
    )
    return Memory(
        peak_allocated_bytes=max(c.peak - c.live for c in calls),
        peak_reserved_bytes=peak_reserved,
        setup_allocated_bytes=setup_allocated,
        nvml_used_delta_bytes=used_delta,
        fragmentation=1 - first.peak / peak_reserved if peak_reserved else None,
        alloc_retries=retries,
        footprint_bytes=max(c.peak for c in calls) - before.allocated,
        retained_bytes_per_call=retained,
    )


def _fitting(bounds: tuple[int, int], call_s: float) -> int:
    """The most calls of `bounds` if they fit in MEMORY_PASS_S, else the fewest: a 2 s training step is
    watched three times, not six."""
    fewest, most = bounds
    return most if most * call_s <= MEMORY_PASS_S else fewest


def _watch(fn: Callable[[], Any]) -> _Call:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    live = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del out  # what the caller would drop; what the call kept elsewhere stays
    return _Call(live, peak, torch.cuda.memory_allocated())


def _retained(fn: Callable[[], Any], calls: list[_Call], confirm: int = CONFIRM_CALLS[1]) -> int:
    """Bytes the allocated memory grows by per call, never below 0.

    The median step between the watched calls ignores a one-off allocation. When it shows growth,
    it is confirmed as PyTorch's leak check confirms one, after a garbage collection (tensors in
    reference cycles that only the collector frees grow and fall in a sawtooth, without leaking):
    `confirm` more calls between two collections. Growth then is the smaller of the median step
    and the net growth per call over them, so that neither a one-off nor a sawtooth reads as a leak.
    """
    steps = [b.after - a.after for a, b in zip(calls, calls[1:])]
    growth = statistics.median_low(steps)
    if growth <= 0:
        return 0
    gc.collect()
    start = torch.cuda.memory_allocated()
    afters = []
    for _ in range(confirm):
        out = fn()
        del out
        afters.append(torch.cuda.memory_allocated())
    gc.collect()
    net = (torch.cuda.memory_allocated() - start) // confirm
    confirmed = statistics.median_low(b - a for a, b in zip([start, *afters], afters))
    return max(0, min(growth, confirmed, net))
