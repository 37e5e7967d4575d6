"""GPU memory of a case (torch's caching allocator and NVML), and the L2 flush for cold-cache timing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from perfguard.measure import nvml
from perfguard.model import DeviceInfo, Memory

# Used only when the device does not report its L2 size.
FALLBACK_L2_BYTES = 64 * 2**20


@dataclasses.dataclass(frozen=True)
class Before:
    allocated: int
    nvml_used: int | None
    handle: Any


def l2_flusher(device: DeviceInfo) -> Callable[[], Any]:
    """Overwrite a buffer twice the size of the L2, so the next call finds none of its data cached."""
    size = 2 * (device.l2_bytes or FALLBACK_L2_BYTES)
    buf = torch.empty(size // 4, dtype=torch.int32, device="cuda")
    return buf.zero_


def before_setup(handle: Any | None) -> Before:
    """What is allocated (torch) and used (NVML, through the GPU's `handle`) before the case's setup."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    snap = nvml.snapshot(handle)
    return Before(torch.cuda.memory_allocated(), snap.memory_used_bytes if snap else None, handle)


def measure_call(fn: Callable[[], Any], before: Before) -> Memory:
    """Peak memory of one call, on top of what the case's setup left allocated."""
    torch.cuda.synchronize()
    setup_allocated = torch.cuda.memory_allocated() - before.allocated
    retries0 = torch.cuda.memory_stats().get("num_alloc_retries", 0)
    # Hand back blocks cached by earlier calls, so "reserved at peak" is what this call needed
    # and fragmentation measures the allocator's waste, not its cache.
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    live = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak_allocated = torch.cuda.max_memory_allocated()
    peak_reserved = torch.cuda.max_memory_reserved()
    retries = torch.cuda.memory_stats().get("num_alloc_retries", 0) - retries0
    snap = nvml.snapshot(before.handle)
    del out
    used_delta = (
        snap.memory_used_bytes - before.nvml_used
        if snap and snap.memory_used_bytes is not None and before.nvml_used is not None
        else None
    )
    return Memory(
        peak_allocated_bytes=peak_allocated - live,
        peak_reserved_bytes=peak_reserved,
        setup_allocated_bytes=setup_allocated,
        nvml_used_delta_bytes=used_delta,
        fragmentation=1 - peak_allocated / peak_reserved if peak_reserved else None,
        alloc_retries=retries,
    )
