"""The kinds of figure a case is judged by, each a closed set of names: its times, its memory and its work
counters, with the words a person reads for each. A verdict's `metric` is one of them (`Metric`)."""

from __future__ import annotations

import typing
from typing import Literal

# The kinds of time a case can have, each judged only against the same kind in its baseline:
# - "gpu_time": the device's time per call: GPU time between CUDA events (or per graph replay), or the
#   host clock on a CPU; absent where a call waits for the GPU itself (the "caller" regime);
# - "caller_time": the caller's time per call on a GPU, back-to-back calls on the host clock;
# - "busy_time": the GPU's busy time per call, the union of the call's kernel and copy intervals in
#   one profiled pass (perfguard/measure/counters.py): what the GPU did, whatever the host's speed.
# - "compile_cold", "compile_warm": a torch.compile'd case's first call, compile included, with empty
#   Inductor and Triton caches (cold) and with them filled by the cold one (warm): one figure a run,
#   never part of the timed calls (perfguard/measure/compiling.py).
TimeMetric = Literal["gpu_time", "caller_time", "busy_time", "compile_cold", "compile_warm"]
TIME_METRICS: tuple[TimeMetric, ...] = typing.get_args(TimeMetric)
# How a case's judged figure is taken (perfguard/measure/timers.py; records.REGIMES says each in words).
Regime = Literal["device", "enqueue-bound", "caller", "host-clock"]
# A kind of time as every surface names it, where how it was taken makes its key a wrong name: on a CPU
# (the regime "host-clock") the device's time is the host clock's time of a call, so it reads "host_time"
# ("host time": not "CPU time", which is the process's user + system time). Records, baselines and
# acceptance files keep the key "gpu_time" (a new key would be a schema, and a migration).
SHOWN_AS: dict[tuple[str, str], str] = {("gpu_time", "host-clock"): "host_time"}
TIME_LABELS: dict[str, str] = {
    "gpu_time": "GPU time",
    "host_time": "host time",
    "caller_time": "the caller's time",
    "busy_time": "GPU busy time",
    "compile_cold": "compile time (cold caches)",
    "compile_warm": "compile time (warm caches)",
}


def shown_metric(metric: str, regime: str | None) -> str:
    """A figure's name as it is shown, by how it was taken: "host_time" for a CPU's "gpu_time", else its key."""
    return SHOWN_AS.get((metric, regime or ""), metric)


def time_label(metric: str, regime: str | None) -> str:
    """A kind of time in words, by how it was taken: "GPU time", or on a CPU "host time"."""
    name = shown_metric(metric, regime)
    return TIME_LABELS.get(name, name)


# A case's memory, deterministic for one case on one software stack (analysis/memory_verdicts.py): a
# call's peak, the case's footprint counted from before its set-up, and what a call keeps for the next.
MemoryMetric = Literal["peak_memory", "footprint", "retained_memory"]
MEMORY_METRICS: tuple[MemoryMetric, ...] = typing.get_args(MemoryMetric)


# The work counters a case is judged by, each a kind of work per call (perfguard/measure/counters.py):
# deterministic on one software stack, whatever the host's or the card's speed.
# The last four are torch.compile's (perfguard/measure/compiling.py), counted over the whole case, not
# per call: what dynamo compiled, where it broke the graph, what made it compile again, and which
# frames it gave up on (run eagerly from then on).
CounterKind = Literal["kernels", "syncs", "copies", "copy_bytes", "memsets", "allocations", "segments", "aten_ops",
                      "graphs", "graph_breaks", "recompiles", "eager_frames"]
COUNTER_KINDS: tuple[CounterKind, ...] = typing.get_args(CounterKind)
COMPILE_KINDS: tuple[CounterKind, ...] = ("graphs", "graph_breaks", "recompiles", "eager_frames")
COUNTER_LABELS: dict[str, tuple[str, str]] = {  # (one, many): "1 sync", "3 syncs"
    "kernels": ("kernel", "kernels"),
    "syncs": ("host-device sync", "host-device syncs"),
    "copies": ("copy", "copies"),
    "copy_bytes": ("byte copied", "bytes copied"),
    "memsets": ("memset", "memsets"),
    "allocations": ("allocator call", "allocator calls"),
    "segments": ("new cudaMalloc segment", "new cudaMalloc segments"),
    "aten_ops": ("ATen operator", "ATen operators"),
    "graphs": ("compiled graph", "compiled graphs"),
    "graph_breaks": ("graph break", "graph breaks"),
    "recompiles": ("recompile", "recompiles"),
    "eager_frames": ("frame run eagerly", "frames run eagerly"),
}


# Every figure a verdict judges.
Metric = TimeMetric | MemoryMetric | CounterKind
