"""Bytes at a call's peak by what they hold (parameters, gradients, optimizer state, activations, ...).

One call of the case, already warmed up, is measured once more. On CUDA, where torch's allocator
takes labels, perfguard/measure/allocator_history.py reads the allocator's own history of the call;
elsewhere (a CPU, an older torch) perfguard/measure/profiler_history.py reads the PyTorch profiler's
memory events of it. Both label the call's phases and known tensors with one PhaseTracker
(perfguard/measure/phases.py) and walk what they read with perfguard/analysis/attribution.py.

The call is the case's own callable after warm-up and sampling, not a fresh setup: Adam creates its
state lazily at the first step, so only a later step shows the steady state a training loop runs in,
and parameters and optimizer state made before the call are sized from their storage (numel x
element size, exactly).

The allocator's history and the profiler's event tree are private torch APIs: any failure, a missing
API included, comes back as a MemoryBreakdown whose `error` says why, never as a case error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfguard.errors import first_line
from perfguard.measure import allocator_history, profiler_history
from perfguard.model import DeviceInfo, MemoryBreakdown


def measure(fn: Callable[[], Any], device: DeviceInfo) -> MemoryBreakdown:
    """The breakdown at the peak of one call of `fn` on the case's device; never raises."""
    source = allocator_history if allocator_history.available(device) else profiler_history
    try:
        return source.measure(fn, device)
    except Exception as exc:  # noqa: BLE001 - a private API, and the user's callable, may raise anything
        line = first_line(str(exc))
        reason = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
        return MemoryBreakdown(error=f"memory breakdown failed: {reason}", method=source.METHOD)
