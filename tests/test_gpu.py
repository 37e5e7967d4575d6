"""On a CUDA GPU: timers against a hand-made measurement, the device-side wait before a batch, device
identity, telemetry, memory, graph mode (per call), cold against hot cache, running out of GPU memory,
and the suites in suites/ under `pytest --perfguard`.

Every test here is marked `gpu` and skipped on a machine without CUDA (tests/conftest.py); each is
written to fail without the feature it names. `bash benchmarks/gpu.sh OUTDIR tests` runs them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfguard import perf_case
from perfguard.model import CaseResult, loads_record
from perfguard.report import words

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]


def cuda_device():
    from perfguard.measure.device import detect

    return detect("cuda")


def measure(spec, budget_s: float = 0.5) -> CaseResult:
    """Measure a one-instance case on the GPU, as the plugin does."""
    from perfguard.measure import runner
    from perfguard.measure.timers import SamplingRule

    (instance,) = spec.instances("cuda")
    device = cuda_device()
    return runner.measure(instance, device, SamplingRule(budget_s=budget_s))


def libraries_made():
    """What perfguard makes once a process before a case's setup (cuBLAS's per-stream workspaces,
    measure.memory.settle_libraries), made now: a test that reads the allocator before its first case
    must not count them as that case's."""
    from perfguard.measure.memory import settle_libraries

    settle_libraries()


def hand_timed_median_ms(op, reps: int = 50) -> float:
    """The naive way: each call between two CUDA events, synchronised one at a time."""
    import torch

    for _ in range(5):
        op()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        op()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


@pytest.fixture
def add_2_28():
    """A ~1 ms memory-bound kernel: 2**28 float32 elements, 3 GiB moved per call."""
    import torch

    x = torch.randn(2**28, device="cuda")
    y = torch.randn_like(x)
    z = torch.empty_like(x)
    yield lambda: torch.add(x, y, out=z)
    del x, y, z
    torch.cuda.empty_cache()


# --- timing ---------------------------------------------------------------------------------------


def test_the_event_timer_agrees_with_a_hand_made_event_loop_on_a_1ms_kernel(add_2_28):
    hand = hand_timed_median_ms(add_2_28)
    assert 0.2 < hand < 10  # the kind of kernel where launch gaps do not matter
    result = measure(perf_case(name="add_2_28", cache="hot", bytes=3 * 4 * 2**28)(lambda device: add_2_28))
    assert (result.status, result.timer) == ("ok", "cuda-events"), result.error
    assert result.judged_time.n >= 10
    assert result.judged_time.median_ms == pytest.approx(hand, rel=0.10)
    assert result.metrics.caller_ms >= result.judged_time.median_ms * 0.9  # a synchronised call is no faster
    assert result.metrics.bound == "memory"  # bytes only, 1 ms: neither launch-bound nor compute-bound
    assert result.metrics.efficiency == pytest.approx(result.metrics.bandwidth_util)


def test_a_bf16_matmul_is_held_to_the_bf16_peak_of_the_table():
    import torch

    info = cuda_device()
    if not info.peak_tflops:
        pytest.skip(f"{info.name} is not in perfguard/analysis/peaks.py")
    n = 4096

    @perf_case(name="mm", cache="hot", params={"dtype": [torch.bfloat16]},
               bytes=lambda dtype: 3 * n * n * dtype.itemsize, flops=2 * n**3)
    def mm(dtype, device):
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn_like(a)
        return lambda: a @ b

    result = measure(mm)
    assert result.status == "ok", result.error
    m = result.metrics
    assert m.bound == "compute"  # 1365 FLOP/B: past the bf16 ridge point of every GPU in the table
    assert m.flop_util == pytest.approx(m.tflops / info.peak_tflops["bf16"])
    assert 0.2 < m.flop_util < 1.1 and m.efficiency == pytest.approx(m.flop_util)


def test_graph_mode_reports_the_time_of_one_call_not_of_a_replay():
    import torch

    from perfguard.measure.timers import CallEstimate, graph_calls

    # About 40 µs of memory traffic at this card's peak: a hot-cache graph then holds about 1 ms of
    # calls, many per replay, so a replay's time not divided by its calls would read many times a call.
    n = int(cuda_device().peak_bandwidth_gbps * 1e9 * 40e-6 / 12)
    x = torch.randn(n, device="cuda")
    y, z = torch.randn_like(x), torch.empty_like(x)
    events = measure(perf_case(name="add_events", cache="hot")(lambda device: (lambda: torch.add(x, y, out=z))))
    graph = measure(perf_case(name="add_graph", cache="hot", mode="graph")(lambda device: (lambda: torch.add(x, y, out=z))))
    assert (events.status, graph.status, graph.timer, graph.mode) == ("ok", "ok", "cuda-graph", "graph"), graph.error
    calls = graph_calls("hot", CallEstimate(host_s=0.0, total_s=events.metrics.caller_ms / 1e3))
    assert calls >= 4, f"a call of {events.metrics.caller_ms:.3f} ms leaves {calls} per graph: nothing to divide"
    # A memory-bound kernel of tens of µs takes the same time replayed as launched (the events wait on
    # the device, not on the host): per call, the two agree; per replay, they would be `calls` apart.
    assert 0.7 < graph.judged_time.median_ms / events.judged_time.median_ms < 1.3, (graph.judged_time.median_ms, events.judged_time.median_ms, calls)


def test_graph_mode_with_a_cold_cache_flushes_before_each_replay_of_one_call():
    import torch

    x = torch.randn(2**20, device="cuda")
    y = torch.randn_like(x)
    result = measure(perf_case(name="graph_cold", mode="graph", cache="cold")(lambda device: (lambda: x + y)))
    assert (result.status, result.timer, result.mode, result.cache) == ("ok", "cuda-graph", "graph", "cold"), result.error
    assert result.judged_time.n >= 10
    assert 0 < result.judged_time.median_ms < 1.0  # a 1M-element add takes microseconds, not a millisecond


def test_a_cold_cache_is_slower_than_a_hot_one_for_data_that_fits_in_the_l2():
    import torch

    # Inputs and output together a quarter of the L2: hot, they stay in it from call to call; cold, the
    # flush (twice the L2, outside the events) evicts them, and each call reads them from device memory.
    n = cuda_device().l2_bytes // 4 // 12
    x = torch.randn(n, device="cuda")
    y, z = torch.randn_like(x), torch.empty_like(x)
    medians = {}
    for cache in ("cold", "hot"):
        result = measure(perf_case(name=f"add_{cache}", cache=cache)(lambda device: (lambda: torch.add(x, y, out=z))))
        assert (result.status, result.cache) == ("ok", cache), result.error
        medians[cache] = result.judged_time.median_ms
    assert medians["cold"] > 1.2 * medians["hot"], medians  # without the flush, the two read the same


def test_the_device_wait_holds_a_microsecond_kernel_until_its_batch_is_enqueued():
    """The events of a µs kernel must time the device, not the host's launch gaps: each batch is queued
    behind a device-side wait (torch.cuda._sleep) that lasts until the host has enqueued the batch,
    and a sample whose start the device reached before its call was queued is dropped."""
    import torch

    from perfguard.measure import timers
    from perfguard.measure.timers import CudaEventTimer, warm_up

    x = torch.randn(2**16, device="cuda")  # 768 KiB moved: a kernel of a few µs, shorter than its launch
    y, z = torch.randn_like(x), torch.empty_like(x)
    held = []

    def op():
        torch.add(x, y, out=z)

    def probed():
        op()
        held.append(not timer.ends[0].query())  # has the device run the batch's first sample yet?

    estimate = warm_up(op, None, True, 0.025)  # as the runner does, on the case's own callable
    timer = CudaEventTimer(probed, None, estimate, (cuda_device().max_sm_clock_mhz or 2000) * 1e6)
    samples = [t for _ in range(12) for t in timer.take(32)]
    # The wait holds the device while the host enqueues: the first sample has not run when later calls
    # are queued. Without the wait the device overtakes the host at once and none is held.
    assert sum(held) >= 0.8 * len(held), (sum(held), len(held))
    assert timer.dropped <= 0.2 * timer.taken, (timer.dropped, timer.taken)
    assert isinstance(timer, timers.Timer) and not timer.outrun  # what the runner asks of every timer
    # So a sample is the kernel's time, well under what one event pair around each launch reads.
    timed = statistics.median(samples)
    naive = hand_timed_median_ms(op)
    assert timed < 0.8 * naive, (timed, naive)


# --- timing regimes and the caller's time -----------------------------------------------------------


def primed_batch_ms(op, calls: int = 4) -> float:
    """GPU time per call by hand: `calls` calls queued behind one long device-side wait, one event
    pair around them all, so the host's launch gaps cannot reach the device (calls × launches must
    stay under the ~1000 launches the queue holds before the host blocks)."""
    import torch

    for _ in range(3):
        op()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    op()
    torch.cuda.synchronize()
    host_s = time.perf_counter() - t0
    torch.cuda._sleep(int(3 * calls * host_s * (cuda_device().max_sm_clock_mhz or 2000) * 1e6))
    start.record()
    for _ in range(calls):
        op()
    end.record()
    assert not start.query(), "the hand-made wait ended before the batch was queued"
    end.synchronize()
    return start.elapsed_time(end) / calls


def many_small_launches():
    """200 tiny launches in a Python loop: the host needs far longer to enqueue them than the GPU to run them."""
    import torch

    x = torch.zeros(1, device="cuda")

    def step():
        for _ in range(200):
            x.add_(1.0)

    return step


def test_a_call_whose_enqueue_outruns_the_gpu_is_timed_whole_and_named_enqueue_bound():
    step = many_small_launches()
    result = measure(perf_case(name="launches", cache="hot")(lambda device: step), budget_s=1.0)
    assert (result.status, result.regime, result.timer) == ("ok", "enqueue-bound", "cuda-events"), result.error
    hand = primed_batch_ms(step)
    # The GPU time without the host's gaps: what the hand-made primed batch reads, not the caller's.
    assert result.judged_time.median_ms == pytest.approx(hand, rel=0.05), (result.judged_time.median_ms, hand)
    assert result.judged_time.ci_half_width_pct < 2.0
    assert result.median_of("caller_time") > 1.5 * result.judged_time.median_ms
    assert result.metrics.launch_overhead_share > 0.3


def test_a_call_that_waits_for_the_gpu_inside_is_timed_as_its_caller_sees_it():
    import torch
    from torch.utils import benchmark

    x = torch.randn(2**20, device="cuda")

    def synced():
        return (x * 2).sum().item()  # a device-to-host copy: the host waits for the GPU in every call

    result = measure(perf_case(name="synced", cache="hot")(lambda device: synced))
    assert (result.status, result.regime, result.timer) == ("ok", "caller", "caller"), result.error
    reference = benchmark.Timer("synced()", globals={"synced": synced}).blocked_autorange(min_run_time=0.5).median * 1e3
    assert result.judged_time.median_ms == pytest.approx(reference, rel=0.15), (result.judged_time.median_ms, reference)
    assert set(result.timings) <= {"caller_time", "busy_time"}  # no GPU time: nothing could be queued ahead


def test_a_long_kernel_is_timed_on_the_device_and_its_caller_waits_as_long(add_2_28):
    result = measure(perf_case(name="add_2_28", cache="hot")(lambda device: add_2_28))
    assert (result.status, result.regime) == ("ok", "device"), result.error
    # No synchronisation between the caller's samples, so none pays the queue's fill and drain: a
    # back-to-back loop of a device-bound kernel is its GPU time and the gaps between kernels.
    assert result.median_of("caller_time") == pytest.approx(result.judged_time.median_ms, rel=0.01)
    assert result.metrics.launch_overhead_share < 0.01


def test_host_work_added_to_a_launch_bound_add_fails_on_the_callers_time():
    import torch

    from perfguard.analysis.verdict import as_entry, compare_case
    from perfguard.model import run_summary

    x = torch.randn(2**20, device="cuda")
    y, z = torch.randn_like(x), torch.empty_like(x)

    def busy(us):
        end = time.perf_counter_ns() + us * 1000
        while time.perf_counter_ns() < end:
            pass

    def case(extra_us):
        def call():
            busy(extra_us)
            torch.add(x, y, out=z)

        return perf_case(name="add_1m", cache="hot", bytes=12 * 2**20)(lambda device: call)

    # A baseline of three measurements, as a baseline of three runs: the add's caller's time is mostly
    # the host's, judged with the host's wide prior, which one run alone would widen past +200%.
    runs = [measure(case(0)) for _ in range(3)]
    base = dataclasses.replace(as_entry(runs[-1]), runs=tuple(run_summary(r, "") for r in runs))
    slower = measure(case(20))
    verdicts = {v.metric: v for v in compare_case(slower, base)}
    assert verdicts["caller_time"].status == "regressed", words.line(verdicts["caller_time"])
    # The GPU's time is not what changed: never regressed ("inconclusive" where three runs of a 6 µs add
    # cannot see 1%, as on GPU-6156db10: ±0.90% run to run).
    assert verdicts["gpu_time"].status in ("same", "improved", "inconclusive"), words.line(verdicts["gpu_time"])
    same = {v.metric: v for v in compare_case(measure(case(0)), base)}
    # Unchanged: no alarm; "inconclusive" where the host's wide prior cannot see 1%.
    assert same["caller_time"].status in ("same", "inconclusive"), words.line(same["caller_time"])


# --- device, telemetry, memory -----------------------------------------------------------------


def test_device_detection_reads_the_gpus_identity_and_ceilings_from_nvml():
    import pynvml
    import torch

    info = cuda_device()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert (info.kind, info.name) == ("cuda", props.name)
    assert re.fullmatch(r"nvidia-[a-z0-9]+(-[a-z0-9]+)*", info.slug), info.slug
    assert info.uuid == f"GPU-{props.uuid}"
    assert info.bus_width_bits > 0 and info.max_memory_clock_mhz > 0 and info.max_sm_clock_mhz > 0
    assert info.peak_bandwidth_gbps == pytest.approx(2 * info.max_memory_clock_mhz * info.bus_width_bits / 8 / 1e3)
    assert info.peak_bandwidth_gbps > 0
    assert (info.memory_bytes, info.sm_count) == (props.total_memory, props.multi_processor_count)
    assert info.l2_bytes > 0
    assert info.driver and info.cuda == torch.version.cuda
    # The NVML handle is the same GPU as torch's current device, whatever CUDA_VISIBLE_DEVICES says.
    pynvml.nvmlInit()
    name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByUUID(info.uuid))
    assert (name.decode() if isinstance(name, bytes) else name) == props.name
    if info.slug == "nvidia-h200":  # DESIGN §8: 6016 bits at 3201 MHz
        assert info.peak_bandwidth_gbps == pytest.approx(4814, rel=0.01)
        assert info.peak_tflops["bf16"] == 989.5  # the datasheet's dense figure, from the table


def test_telemetry_is_read_around_a_case():
    import torch

    x = torch.randn(2**24, device="cuda")
    result = measure(perf_case(name="telemetry", cache="hot")(lambda device: (lambda: x * 2)))
    t = result.telemetry
    assert t is not None, result.error
    assert t.sm_clock_mhz_before > 0 and t.sm_clock_mhz_after > 0 and t.sm_clock_mhz_mean > 0
    assert t.temperature_c_before > 0 and t.temperature_c_after > 0
    assert t.power_w_before > 0 and t.power_w_after > 0
    assert t.throttled == any(r != "sw_power_cap" for r in t.throttle_reasons)


@pytest.mark.parametrize(
    "cache",
    ["hot", "cold"],
)
def test_memory_figures_of_a_call_that_allocates_its_output(cache):
    import torch

    def setup(device):
        x = torch.randn(2**26, device=device)  # 256 MiB
        return lambda: x + 1  # allocates a 256 MiB output

    result = measure(perf_case(name=f"plus_one_{cache}", cache=cache)(setup))
    m = result.memory
    assert m is not None, result.error
    assert m.peak_allocated_bytes == pytest.approx(2**28, rel=0.02)
    assert m.peak_reserved_bytes >= m.peak_allocated_bytes
    assert 0 <= m.fragmentation < 1
    assert m.alloc_retries == 0
    assert m.nvml_used_delta_bytes is not None
    assert m.setup_allocated_bytes == pytest.approx(2**28, rel=0.02)


# --- running out of GPU memory --------------------------------------------------------------------


def test_a_case_that_runs_out_of_gpu_memory_errors_frees_its_memory_and_the_next_runs():
    import torch

    libraries_made()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()

    def holds_then_asks_too_much(device):
        held = torch.empty(2**30, dtype=torch.uint8, device=device)  # 1 GiB the setup keeps
        return lambda: torch.empty(10**15, device=device) + held[0]

    result = measure(perf_case(name="too_big")(holds_then_asks_too_much))
    assert result.status == "error"
    assert result.error.startswith("too_big: ran out of GPU memory"), result.error
    assert "\n" not in result.error
    assert torch.cuda.memory_allocated() == before  # the held GiB is released with the case

    def setup_too_big(device):
        return torch.empty(10**15, device=device)

    result = measure(perf_case(name="setup_too_big")(setup_too_big))
    assert result.error.startswith("setup_too_big: ran out of GPU memory during setup"), result.error
    assert torch.cuda.memory_allocated() == before

    x = torch.randn(2**20, device="cuda")
    assert measure(perf_case(name="next_case")(lambda device: (lambda: x + 1))).status == "ok"


def test_a_case_whose_tensors_sit_in_a_reference_cycle_still_hands_them_back():
    import gc

    import torch

    libraries_made()
    gc.collect()  # an earlier test's garbage (a failed one's traceback holds its tensors) is not this one's
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()

    def cyclic(device):
        class Holder:
            pass

        holder = Holder()
        holder.me = holder  # only the garbage collector frees this, not reference counting
        holder.x = torch.empty(2**28, dtype=torch.uint8, device=device)
        return lambda: holder.x.add_(1)

    gc.disable()  # no automatic collection may do the runner's work for it
    try:
        assert measure(perf_case(name="cyclic")(cyclic)).status == "ok"
        assert torch.cuda.memory_allocated() == before
    finally:
        gc.enable()


def test_a_case_that_runs_out_of_gpu_memory_hands_its_memory_back_to_the_device():
    import torch

    libraries_made()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    reserved = torch.cuda.memory_reserved()

    def holds_then_asks_too_much(device):
        held = torch.empty(2**30, dtype=torch.uint8, device=device)
        return lambda: torch.empty(10**15, device=device) + held[0]

    result = measure(perf_case(name="too_big")(holds_then_asks_too_much))
    assert result.status == "error"
    assert torch.cuda.memory_reserved() <= reserved  # not cached by torch: free for NVML, other processes


def test_out_of_memory_through_the_plugin_fails_that_case_only(pytester, inner_args):
    pytester.makepyfile(
        test_oom=textwrap.dedent(
            """
            import torch
            from perfguard import perf_case

            @perf_case
            def too_big(device):
                return lambda: torch.empty(10**15, device=device)

            @perf_case(bytes=3 * 4 * 2**20)
            def small_add(device):
                x = torch.randn(2**20, device=device)
                return lambda: x + x
            """
        )
    )
    result = pytester.runpytest_subprocess(*inner_args, "--perfguard", "--perfguard-budget", "0.2")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["too_big: ran out of GPU memory during *"])
    record = loads_record((pytester.path / "reports" / "perfguard.json").read_text(), "record")
    status = {r.id: r.status for r in record.results}
    assert status == {"too_big": "error", "small_add": "ok"}
    (device,) = record.devices
    assert device.kind == "cuda"


# --- the suites -------------------------------------------------------------------------------------


def test_the_suites_run_under_perfguard_without_errors(tmp_path):
    # Against an empty baseline folder: this checks that every case measures, not that this GPU
    # matches the committed baseline (benchmarks/gpu.sh's suites stage does that A/A).
    suites = ROOT / "suites"
    assert sorted(suites.glob("test_*.py")), f"no suites in {suites}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(suites), "--perfguard",
         "--perfguard-budget", "0.1", f"--perfguard-report={tmp_path}", f"--perfguard-baselines={tmp_path / 'none'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-2000:]
    record = loads_record((tmp_path / "perfguard.json").read_text(), "suites record")
    assert record.results
    errors = [f"{r.id}: {r.error}" for r in record.results if r.status != "ok"]
    assert not errors, errors
    assert {d.kind for d in record.devices} == {"cuda"}
    for r in record.results:
        assert r.judged_time.n >= 10 and r.judged_time.median_ms > 0, r.id
        assert r.memory is not None and r.telemetry is not None, r.id
