"""The memory breakdown where the allocator takes no labels (a CPU, a torch without allocation
metadata): the PyTorch profiler's memory events of one call, labelled and walked as on CUDA.

The call runs under torch.profiler with `profile_memory` (every allocation and free of the case's
device, with its address, size and time) and under the same PhaseTracker as on CUDA
(perfguard/measure/phases.py). Where CUDA's allocator takes a label, here each label is a
`record_function` event of the profiler named after it, on the same clock as the allocations, so the
events in time order are a trace of the shape perfguard/analysis/attribution.py walks: parameters,
buffers, gradients, optimizer state and inputs by identity, activations and temporaries by lifetime.

torch's own categories (torch.profiler._memory_profiler) left up to 38% of a bf16-autocast AdamW
step's peak unnamed: a tensor made by one operator and freed after another (single-tensor Adam's
`denom`, its `sqrt`) is neither its TEMPORARY (freed inside the operator that made it) nor anything
else, nor is an allocation it cannot tie to a TensorKey. By lifetime and phase they are temporaries
of the optimizer step, as the CUDA path calls them.

What the profiler cannot see: CPU's allocator reports only the frees of blocks allocated while a
profile was on, so a block made before the call is in the trace only if a capture names it (a
parameter, optimizer state, an input: sized from its storage, exactly) or if a profile saw it
allocated (then its free is in the trace with its size, and it counts as `unknown` until freed). A
block made before the call, freed in it and named by nothing is in no figure at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch._C._profiler import _EventType

from perfguard.analysis import attribution
from perfguard.measure import kineto
from perfguard.measure.phases import PhaseTracker
from perfguard.model import DeviceInfo, MemoryBreakdown

METHOD = "profiler"


class _Labels:
    """PhaseTracker's two callables: the label in force, and a profiler event that marks it."""

    def __init__(self) -> None:
        self.current = ""

    def set_label(self, text: str) -> None:
        self.current = text

    def marker(self) -> None:
        with torch.profiler.record_function(self.current):
            pass


def measure(fn: Callable[[], Any], device: DeviceInfo) -> MemoryBreakdown:
    """The breakdown at the peak of one call of `fn` (already warmed up) on the case's device."""
    cuda = device.kind == "cuda"
    target = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    labels = _Labels()
    tracker = PhaseTracker(labels.set_label, labels.marker, target)
    if cuda:
        torch.cuda.synchronize()
    with kineto.quiet(), kineto.profiler(cuda, profile_memory=True) as prof:
        with tracker:
            out = fn()
            if cuda:
                torch.cuda.synchronize()
    del out
    events = _events(prof.kineto_results.experimental_event_tree(), target)
    entries, freed_unseen = trace(events, tracker.token)
    start = {**freed_unseen, **predating(entries, tracker.captures, tracker.token)}
    found = attribution.attribute(entries, start.items(), tracker.labels, tracker.captures, tracker.token)
    if found.error:
        return MemoryBreakdown(error=f"memory breakdown: {found.error}", method=METHOD)
    return MemoryBreakdown(**{k: found.bytes[k] for k in attribution.CATEGORIES}, peak_phase=found.peak_phase,
                           peak_at=found.peak_at, unnamed_reason=found.unnamed_reason, method=METHOD)


def _events(roots: Iterable[Any], target: torch.device) -> list[tuple[int, str | None, int, int]]:
    """(time ns, marker text or None, address, signed bytes) of the call's allocations on `target`
    and of the record_function events that may be markers, in time order."""
    out = []
    todo = list(roots)
    while todo:
        event = todo.pop()
        todo.extend(event.children)
        kind, fields = event.typed
        if kind == _EventType.Allocation:
            if _same_device(fields.device, target) and fields.alloc_size:
                out.append((event.start_time_ns, None, int(fields.ptr), int(fields.alloc_size)))
        elif kind == _EventType.TorchOp and event.name.startswith(attribution.PREFIX):
            out.append((event.start_time_ns, event.name, 0, 0))
    # A marker and an allocation at one nanosecond: the marker first (it was entered before the
    # allocation could follow it); frees before allocations (an address handed straight back).
    out.sort(key=lambda e: (e[0], e[1] is None, e[3] > 0))
    return out


def trace(events: Iterable[tuple[int, str | None, int, int]], token: str) -> tuple[list[dict], dict[int, int]]:
    """The allocator-history trace the events make, and {address: bytes} of the blocks freed in it
    that it never saw allocated (a profile before this one saw them made, so their size is known)."""
    entries: list[dict] = []
    live: set[int] = set()
    freed_unseen: dict[int, int] = {}
    current = ""
    for n, (_, name, addr, nbytes) in enumerate(events):
        if name is not None:
            tag = attribution.parse(name, token)
            if tag and tag[1]:
                # Markers get addresses no allocation has (below 0): the walk leaves them out.
                entries.append({"action": "alloc", "addr": -1 - n, "size": 1, "user_metadata": name})
                current = attribution.label_text(token, tag[0])
        elif nbytes > 0:
            live.add(addr)
            entries.append({"action": "alloc", "addr": addr, "size": nbytes, "user_metadata": current})
        else:
            if addr not in live:
                freed_unseen.setdefault(addr, -nbytes)
            live.discard(addr)
            entries.append({"action": "free_requested", "addr": addr})
    return entries, freed_unseen


def predating(entries: Iterable[dict], captures: Iterable[attribution.Capture], token: str) -> dict[int, int]:
    """{address: bytes} of the captured tensors whose storage no block made in the call held when the
    capture saw them: they were allocated before it (parameters, optimizer state, the data)."""
    by_seq: dict[int, list[attribution.Capture]] = {}
    for capture in captures:
        by_seq.setdefault(capture.seq, []).append(capture)
    live: set[int] = set()
    out: dict[int, int] = {}
    for entry in entries:
        addr = entry["addr"]
        if entry["action"] != "alloc":
            live.discard(addr)
        elif addr >= 0:
            live.add(addr)
        else:
            tag = attribution.parse(entry["user_metadata"], token)
            for identity in _identities(by_seq.get(tag[0], ()) if tag else ()):
                if identity.ptr not in live and identity.ptr not in out:
                    out[identity.ptr] = identity.nbytes
    return out


def _identities(captures: Iterable[attribution.Capture]) -> Iterator[attribution.Identity]:
    for capture in captures:
        yield from capture.tensors


def _same_device(device: torch.device, target: torch.device) -> bool:
    if device.type != target.type:
        return False
    return target.type != "cuda" or (device.index or 0) == target.index
