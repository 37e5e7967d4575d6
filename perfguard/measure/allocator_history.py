"""The memory breakdown on CUDA, from the caching allocator's own history of one call.

The call runs with torch.cuda.memory._record_memory_history on (every alloc and free, with the
Python stack of each alloc) and under a PhaseTracker (perfguard/measure/phases.py), which labels
allocations through torch.cuda.memory._set_memory_metadata; a snapshot before the call gives the
blocks already live, one after it the trace. perfguard/analysis/attribution.py walks the trace.

The allocator sees every byte that `torch.cuda.memory_allocated` counts, so nothing falls between
categories the way the profiler's tensor tracking let 11.5 GiB of a GPT-2 step's 16 GiB peak fall
into "unknown" (autocast's casts, fused optimizers and SDPA make tensors its data-flow analysis
cannot place). Trace sizes are the sizes asked for, before the allocator rounds them up.

Private torch API, all of it: `available` says whether this torch has it (allocation labels,
`_set_memory_metadata`, are recent); anything that fails is reported by perfguard/measure/breakdown.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import torch

from perfguard.analysis import attribution
from perfguard.measure.phases import PhaseTracker
from perfguard.model import DeviceInfo, MemoryBreakdown

METHOD = "allocator history"
# perfguard's own folder, two up from this file: read off the path, not off the package's face, which
# stands above everything that measures.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Entries the history may keep: a GPT-2-small step makes some tens of thousands. A trace that fills
# the ring has lost its start, and the walk says so rather than guess.
MAX_ENTRIES = 2_000_000


def available(device: DeviceInfo) -> bool:
    """Whether this torch can label the allocations of the case's device."""
    memory = getattr(getattr(torch, "cuda", None), "memory", None)
    return (device.kind == "cuda" and torch.cuda.is_available()
            and all(hasattr(memory, f) for f in ("_set_memory_metadata", "_record_memory_history", "_snapshot")))


def measure(fn: Callable[[], Any], device: DeviceInfo) -> MemoryBreakdown:
    """The breakdown at the peak of one call of `fn` (already warmed up) on the current CUDA device."""
    memory = torch.cuda.memory
    index = torch.cuda.current_device()
    target = torch.device("cuda", index)
    torch.cuda.synchronize()
    # cuBLAS keeps a workspace per thread and stream (tens of MiB each on Hopper: the main thread's and
    # the autograd thread's), made before the call and tied to no tensor: `unknown` by 0.1 GiB on a
    # 1 GiB step. Handed back here, they are made again inside the call and counted where they are.
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    start = list(_live_blocks(memory._snapshot(), index))
    tracker = PhaseTracker(memory._set_memory_metadata, lambda: torch.empty(1, dtype=torch.uint8, device=target), target)
    _record(memory)
    try:
        with tracker:
            out = fn()
            torch.cuda.synchronize()
        del out
        snapshot = memory._snapshot()
    finally:
        memory._record_memory_history(enabled=None)
    traces = snapshot.get("device_traces") or []
    entries = traces[index] if index < len(traces) else []
    found = attribution.attribute(entries, start, tracker.labels, tracker.captures, tracker.token,
                                  max_entries=MAX_ENTRIES, library_dirs=_library_dirs())
    if found.error:
        return MemoryBreakdown(error=f"memory breakdown: {found.error}", method=METHOD)
    return MemoryBreakdown(**{k: found.bytes[k] for k in attribution.CATEGORIES},
                           peak_phase=found.peak_phase, peak_at=found.peak_at, unnamed_reason=found.unnamed_reason,
                           method=METHOD)


def _record(memory: Any) -> None:
    kwargs = {"enabled": "all", "context": "alloc", "stacks": "python", "max_entries": MAX_ENTRIES}
    try:  # an earlier recording's entries would read as this call's start
        memory._record_memory_history(**kwargs, clear_history=True)
    except TypeError:  # a torch whose history takes no clear_history
        memory._record_memory_history(**kwargs)


def _live_blocks(snapshot: dict, index: int) -> Iterator[tuple[int, int]]:
    """(address, bytes asked for) of the blocks allocated on device `index` when the snapshot was taken."""
    for segment in snapshot.get("segments", ()):
        if segment.get("device", index) != index:
            continue
        for block in segment.get("blocks", ()):
            if block.get("state") == "active_allocated":
                yield int(block["address"]), int(block.get("requested_size", block["size"]))


def _library_dirs() -> tuple[str, ...]:
    """Frames in these are torch's or ours, not the user's line the report should name."""
    return (os.path.dirname(torch.__file__) + os.sep, PACKAGE_DIR + os.sep)
