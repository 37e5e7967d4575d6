"""Bytes at a call's peak by what they hold (parameters, gradients, optimizer state, activations, ...).

One call of the case, already warmed up, is measured once more. On CUDA, where torch's allocator
takes labels, perfguard/measure/allocator_history.py reads the allocator's own history of the call;
elsewhere (a CPU, an older torch) the call runs under the PyTorch profiler with memory, shapes and
the Python tracer on, torch's memory profiler labels every tensor (it sees nn.Module parameters and
optimizer state through the Python tracer and tells gradients, activations and temporaries apart by
data flow), and this module walks its timeline to the moment the case's device held the most bytes.

The call is the case's own callable after warm-up and sampling, not a fresh setup: Adam creates its
state lazily at the first step, so only a later step shows the steady state a training loop runs in,
and parameters and optimizer state made before the profile starts are sized from their metadata
(numel x element size, exactly), not from allocator blocks.

torch.profiler._memory_profiler is private (it backs the deprecated `export_memory_timeline`), and so
is the allocator's history: any failure, a missing API included, comes back as a MemoryBreakdown
whose `error` says why, never as a case error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import torch

from perfguard.errors import first_line
from perfguard.measure import allocator_history, kineto
from perfguard.model import DeviceInfo, MemoryBreakdown

# torch's category name (torch.profiler._memory_profiler.Category) -> our field; None is "unknown":
# allocations the profiler could not tie to a tensor (e.g. an optimizer's foreach intermediates).
FIELDS = {
    "PARAMETER": "parameters",
    "GRADIENT": "gradients",
    "OPTIMIZER_STATE": "optimizer_state",
    "ACTIVATION": "activations",
    "TEMPORARY": "temporaries",
    "INPUT": "inputs",
    "AUTOGRAD_DETAIL": "autograd_detail",
}
UNKNOWN = "unknown"
METHOD = "profiler"


def measure(fn: Callable[[], Any], device: DeviceInfo) -> MemoryBreakdown:
    """The breakdown at the peak of one call of `fn` on the case's device; never raises."""
    history = allocator_history.available(device)
    try:
        return allocator_history.measure(fn, device) if history else _measure(fn, device)
    except Exception as exc:  # noqa: BLE001 - a private API, and the user's callable, may raise anything
        line = first_line(str(exc))
        reason = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
        return MemoryBreakdown(error=f"memory breakdown failed: {reason}", method=allocator_history.METHOD if history else METHOD)


def _measure(fn: Callable[[], Any], device: DeviceInfo) -> MemoryBreakdown:
    try:
        from torch.profiler import _memory_profiler as mp
    except ImportError:
        return MemoryBreakdown(error=f"memory breakdown needs torch.profiler._memory_profiler, which torch {torch.__version__} lacks",
                               method=METHOD)
    cuda = device.kind == "cuda"
    if cuda:
        torch.cuda.synchronize()
    with kineto.quiet(), torch.profiler.profile(
        activities=kineto.activities(cuda), record_shapes=True, profile_memory=True, with_stack=True
    ) as prof:
        out = fn()
        if cuda:
            torch.cuda.synchronize()
    del out
    profile = prof._memory_profile()
    target = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    return _at_peak(profile, mp, target)


def _at_peak(profile: Any, mp: Any, target: torch.device) -> MemoryBreakdown:
    """Walk the timeline as `MemoryProfileTimeline._coalesce_timeline` does, keeping the largest total.

    Events sharing a timestamp are applied together (the timeline orders a tensor's creation before
    another's destruction at the same instant, which would count a peak that never was).
    """
    categories = profile._categories
    live: dict[str, int] = dict.fromkeys((*FIELDS.values(), UNKNOWN), 0)
    best: dict[str, int] | None = None
    best_total = -1

    def field(key: Any, version: int) -> str:
        category = categories.get(key, version) if isinstance(key, mp.TensorKey) else None
        return FIELDS.get(category.name, UNKNOWN) if category is not None else UNKNOWN

    for _, events in itertools.groupby(profile.timeline, key=lambda e: e[0]):
        for _, action, (key, version), nbytes in events:
            if not _same_device(key.device, target):
                continue
            if action in (mp.Action.PREEXISTING, mp.Action.CREATE):
                live[field(key, version)] += nbytes
            elif action == mp.Action.INCREMENT_VERSION:  # an in-place op: the bytes may change category
                live[field(key, version)] -= nbytes
                live[field(key, version + 1)] += nbytes
            elif action == mp.Action.DESTROY:
                live[field(key, version)] -= nbytes
        total = sum(live.values())
        if total > best_total:
            best_total, best = total, dict(live)
    if best is None:
        return MemoryBreakdown(error=f"memory breakdown: the profiler saw no memory on {target}", method=METHOD)
    # A category can dip below zero where the profiler mislabels a version; no bytes are negative.
    return MemoryBreakdown(**{k: max(int(v), 0) for k, v in best.items()}, method=METHOD)


def _same_device(device: torch.device, target: torch.device) -> bool:
    if device.type != target.type:
        return False
    return target.type != "cuda" or (device.index or 0) == target.index
