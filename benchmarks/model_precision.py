"""How precise is the judged figure of a whole-model call, and does it agree with careful hand measurement?

GPT-2 small's batch-1 forward (suites/test_models.py) measured by perfguard's runner in this process,
then, in the same process, independently: the GPU time per call of calls queued by hand behind one
long device-side wait (one event pair around them), the sum of the call's kernel times from the
profiler's device activity, and torch.utils.benchmark.Timer's time per call (the caller's view).
Run it in several fresh processes:

    for i in 1 2 3; do python benchmarks/model_precision.py; done

Issue 12's target: the judged figure's 95% interval within ±2% in every process, the processes'
medians within 2% of each other and within 3% of the independent reference.
"""

from __future__ import annotations

import datetime
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils import benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites"))
import test_models  # noqa: E402

from perfguard.measure import runner  # noqa: E402
from perfguard.measure.device import detect  # noqa: E402
from perfguard.measure.timers import SamplingRule  # noqa: E402

CALLS = 2  # queued by hand: a forward is ~400 launches, and the queue holds about a thousand


def primed_ms(fn, sm_hz: float) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    host_s = time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(int(3 * CALLS * host_s * sm_hz))
    start.record()
    for _ in range(CALLS):
        fn()
    end.record()
    if start.query():
        raise RuntimeError("the hand-made wait ended before the calls were queued")
    end.synchronize()
    return start.elapsed_time(end) / CALLS


def kernel_sum_ms(fn, calls: int = 5) -> float:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(e.time_range.elapsed_us() for e in kernels) / calls / 1e3


def probe_s(reps: int = 200) -> float:
    """A fixed piece of host work like a launch's: Python calling small torch ops on the CPU."""
    a, b, c = torch.ones(1), torch.ones(1), torch.empty(1)
    t0 = time.perf_counter_ns()
    for _ in range(reps):
        torch.add(a, b, out=c)
    return (time.perf_counter_ns() - t0) / 1e9


def host_clocks(fn, blocks: int = 6, calls: int = 60) -> None:
    """Back-to-back calls in blocks, each followed by a host probe: does the ratio hold where the time moves?"""
    for _ in range(blocks):
        times, probes = [], []
        for _ in range(calls // 2):
            torch.cuda.synchronize()
            w0 = time.perf_counter_ns()
            fn()
            fn()
            torch.cuda.synchronize()
            times.append((time.perf_counter_ns() - w0) / 2e6)
            probes.append(probe_s() * 1e3)
        t, p = statistics.median(times), statistics.median(probes)
        ratios = statistics.median(x / y for x, y in zip(times, probes))
        print(f"  block: caller {t:.4f} ms, probe {p:.4f} ms, caller/probe {t / p:.3f} (per-sample median {ratios:.3f})", flush=True)


def main() -> None:
    device = detect("cuda")
    (instance,) = [i for i in test_models.gpt2_forward.instances("cuda") if i.kwargs["batch"] == 1]
    result = runner.measure(instance, device, SamplingRule(budget_s=instance.spec.budget_s or 2.0))
    fn = instance.spec.setup(**instance.setup_kwargs("cuda"))
    for _ in range(5):
        fn()
    sm_hz = (device.max_sm_clock_mhz or 2000) * 1e6
    # The profiler last: once it has run, kineto's hooks stay behind and slow every later launch.
    timer = benchmark.Timer("fn()", globals={"fn": fn}).blocked_autorange(min_run_time=1.0).median * 1e3
    primed = statistics.median(primed_ms(fn, sm_hz) for _ in range(7))
    if "--host" in sys.argv:
        host_clocks(fn)
    kernels = kernel_sum_ms(fn)
    lat, caller = result.judged_time, result.timings["caller_time"].summary
    print(f"{datetime.date.today()} {device.name}: {instance.id} regime {result.regime}, "
          f"GPU {lat.median_ms:.4f} ms ±{lat.ci_half_width_pct:.2f}% (n={lat.n}, {lat.stop_reason}, {result.dropped_samples} dropped), "
          f"caller {caller.median_ms:.4f} ms ±{caller.ci_half_width_pct:.2f}% (n={caller.n}), GPU idle {result.metrics.launch_overhead_share:.0%}; "
          f"by hand: primed events {primed:.4f} ms ({lat.median_ms / primed - 1:+.1%}), kernel sum {kernels:.4f} ms "
          f"({lat.median_ms / kernels - 1:+.1%}), benchmark.Timer {timer:.4f} ms (caller {caller.median_ms / timer - 1:+.1%})", flush=True)


if __name__ == "__main__":
    main()
