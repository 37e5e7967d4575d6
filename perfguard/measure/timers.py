"""Timers and the sampling loop (DESIGN §3).

A timer takes a batch of samples and returns one time per call, in milliseconds:

- `CudaEventTimer`: each call between two CUDA events; the batch is queued behind a device-side
  wait (`torch.cuda._sleep`) long enough for the host to enqueue the whole batch, so host launch
  gaps never show up between the events, as nvbench's blocking kernel does. With a cold cache,
  a buffer of twice the L2 is overwritten before each call, outside the events.
- `CudaGraphTimer`: a batch of calls captured in a CUDA graph, each replay between events.
- `HostTimer`: `time.perf_counter_ns` around each call, for machines without CUDA.

`sample` runs a timer until the median's 95% confidence half-width is within the target, or the
time budget is spent (at least `min_samples` either way), and says which.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from collections.abc import Callable
from typing import Any

import torch

from perfguard.analysis.stats import ci_half_width_ratio

# A batch aims at this much device time: long enough to amortise the synchronisation, short
# enough to check the stopping rule often.
BATCH_TARGET_S = 0.01
MAX_BATCH = 256
# The device-side wait never exceeds this; a batch whose host enqueue takes longer is shortened.
MAX_HOLD_S = 0.05
MAX_SAMPLES = 200_000
EAGER_REPS = 20  # synchronised calls timed on the host for the eager latency, budget permitting


@dataclasses.dataclass(frozen=True)
class SamplingRule:
    budget_s: float = 0.5
    min_samples: int = 10
    target_ci: float = 0.005  # stop when the CI half-width of the median is under 0.5% of it
    # Sample for at least this much wall time even when the CI converged sooner: a heavy kernel's
    # clocks settle under sustained load (an 8192^3 bf16 matmul ran 13% faster in its first 15 ms
    # than in the 100 ms do_bench samples), and a figure must not depend on what ran before it.
    # Wall time, not summed device time: a 6 us kernel would need 17k samples to sum to 0.1 s.
    min_time_s: float = 0.1
    max_samples: int = MAX_SAMPLES


@dataclasses.dataclass
class CallEstimate:
    """What warm-up learnt about one call: host time to enqueue it, and its whole synchronised time."""

    host_s: float
    total_s: float


def sample(
    take: Callable[[int], list[float]],
    per_call_s: float,
    rule: SamplingRule,
    deadline: float,
    calls_per_sample: int = 1,
) -> tuple[list[float], str]:
    """Take batches until the stopping rule holds; samples are per call (ms), a sample may span calls."""
    samples: list[float] = []
    started = time.perf_counter()
    per_sample_s = max(per_call_s * calls_per_sample, 1e-7)
    batch = int(min(MAX_BATCH, max(1, BATCH_TARGET_S // per_sample_s)))
    while True:
        samples.extend(take(min(batch, rule.max_samples - len(samples))))
        if len(samples) < rule.min_samples:
            continue
        if time.perf_counter() - started >= rule.min_time_s and ci_half_width_ratio(samples) <= rule.target_ci:
            return samples, "converged"
        if len(samples) >= rule.max_samples:
            return samples, "max_samples"
        if time.perf_counter() >= deadline:
            return samples, "budget"


class HostTimer:
    name = "host-clock"

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn

    def take(self, k: int) -> list[float]:
        fn, clock = self.fn, time.perf_counter_ns
        out = []
        with _gc_paused():
            for _ in range(k):
                t0 = clock()
                fn()
                out.append((clock() - t0) / 1e6)
        return out


class CudaEventTimer:
    name = "cuda-events"

    def __init__(self, fn: Callable[[], Any], flush: Callable[[], Any] | None, estimate: CallEstimate, sm_clock_hz: float):
        self.fn = fn
        self.flush = flush
        self.estimate = estimate
        self.sm_clock_hz = sm_clock_hz
        self.device_s: float | None = None  # median device time of a sample in the last batch
        self.host_iter_s: float | None = None  # host time to enqueue one iteration of the last batch
        self.starts = [torch.cuda.Event(enable_timing=True) for _ in range(MAX_BATCH)]
        self.ends = [torch.cuda.Event(enable_timing=True) for _ in range(MAX_BATCH)]

    def _call(self) -> None:
        self.fn()

    def _scale(self) -> int:
        return 1

    def take(self, k: int) -> list[float]:
        # The hold must last until the host has enqueued the whole batch, or a host hiccup lets the
        # device catch up and the launch gap lands between a sample's events (a 6 us add read 10.7 us
        # with a hold sized from the mean lag). Only when one call keeps the device busy far longer
        # than the host needs to enqueue the next does the queue stay ahead by itself; then the hold
        # covers the first call alone, so the device runs back to back as it would in production
        # (a conv read 4% fast under a whole-batch hold: the idle device ran cooler and faster).
        host = max(self.estimate.host_s, self.host_iter_s or 0.0)
        if self.device_s is not None and self.device_s > 2 * host:
            hold_s = 1.25 * host + 20e-6
        else:  # never hold the device longer than MAX_HOLD_S: fewer calls for slow-to-launch ops
            k = max(1, min(k, int(MAX_HOLD_S / max(host, 1e-7))))
            hold_s = min(MAX_HOLD_S, 1.25 * k * host + 20e-6)
        starts, ends, flush, call = self.starts, self.ends, self.flush, self._call
        with _gc_paused():
            torch.cuda._sleep(int(hold_s * self.sm_clock_hz))
            t0 = time.perf_counter()
            for i in range(k):
                if flush is not None:
                    flush()
                starts[i].record()
                call()
                ends[i].record()
            self.host_iter_s = (time.perf_counter() - t0) / k  # the whole iteration: flush, events, call
            ends[k - 1].synchronize()
        scale = self._scale()
        times = [starts[i].elapsed_time(ends[i]) for i in range(k)]
        self.device_s = sorted(times)[k // 2] / 1e3  # per sample (a graph replay is one sample)
        return [t / scale for t in times]


class CudaGraphTimer(CudaEventTimer):
    """Replays of a graph of `calls` calls; each sample is one replay divided by `calls`."""

    name = "cuda-graph"

    def __init__(self, fn, flush, estimate, sm_clock_hz, calls: int):
        super().__init__(fn, flush, estimate, sm_clock_hz)
        self.calls = calls
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # capture needs the lazy init (cuBLAS handles...) done off-graph
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for _ in range(calls):
                fn()
        torch.cuda.synchronize()

    def _call(self) -> None:
        self.graph.replay()

    def _scale(self) -> int:
        return self.calls


def warm_up(fn: Callable[[], Any], flush: Callable[[], Any] | None, cuda: bool, warmup_s: float) -> CallEstimate:
    """Call until `warmup_s` has passed (at least twice), learning the host and total time per call."""
    host, total = [], []
    end = time.perf_counter() + warmup_s
    while len(total) < 2 or time.perf_counter() < end:
        if flush is not None:
            flush()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        if cuda:
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append(t1 - t0)
        total.append(t2 - t0)
    host.sort()
    total.sort()
    return CallEstimate(host_s=host[len(host) // 2], total_s=total[len(total) // 2])


def eager_latency(fn: Callable[[], Any], flush: Callable[[], Any] | None, deadline: float) -> float:
    """Median wall time of a synchronised call, as the caller of the operator sees it (ms)."""
    times = []
    # One call at least, more only while the budget lasts: a 20 ms call's launch overhead is noise.
    while not times or (len(times) < EAGER_REPS and time.perf_counter() < deadline):
        if flush is not None:
            flush()
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    times.sort()
    return times[len(times) // 2]


def graph_calls(cache: str, estimate: CallEstimate) -> int:
    """Calls per captured graph: one with a cold cache (each call must be flushed), else ~1 ms worth."""
    if cache == "cold":
        return 1
    return int(min(100, max(1, 1e-3 // max(estimate.total_s, 1e-7))))


class _gc_paused:
    """Keep the garbage collector from pausing the host mid-batch (timeit does the same)."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was:
            gc.enable()


def check_finite(samples: list[float], where: str) -> None:
    from perfguard.errors import MeasurementError

    bad = [s for s in samples if not math.isfinite(s) or s < 0]
    if bad:
        raise MeasurementError(
            f"{where}: the timer returned {len(bad)} non-finite or negative time(s) (e.g. {bad[0]!r} ms); "
            "the measurement is void - check that the callable does not reset the device or its streams"
        )
    ordered = sorted(samples)
    if not ordered or ordered[len(ordered) // 2] <= 0:
        raise MeasurementError(
            f"{where}: most calls took 0 ms by this timer, below its resolution; give the case more work"
        )
