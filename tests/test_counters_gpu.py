"""On a CUDA GPU: the work counters of measure/counters.py against what the calls plainly do.

Marked `gpu`, skipped without CUDA (tests/conftest.py). Each test names the count it expects from
the code it runs, so removing the counting it tests makes it fail.
"""

from __future__ import annotations

import pytest

from perfguard import perf_case

pytestmark = pytest.mark.gpu


def count(fn):
    from perfguard.measure import counters

    return counters.count(fn, cuda=True)


def test_kernel_counts_are_exact_and_the_same_run_to_run():
    import torch

    x = torch.randn(2**20, device="cuda")

    def three():
        return ((x * 2) + 1).relu()

    first, busy = count(three)
    again, _ = count(three)
    assert first.total("kernels") == 3 and first.kernels == again.kernels, first.kernels
    assert first.total("syncs") == 0 and first.total("copies") == 0
    assert len(busy) == first.calls and all(b > 0 for b in busy)


def test_an_item_is_one_sync_named_after_its_operator():
    import torch

    x = torch.randn(2**20, device="cuda")
    counted, _ = count(lambda: (x * 2).sum().item())
    assert counted.total("syncs") == 1, counted.syncs
    (name,) = counted.syncs
    assert name.endswith(("after aten::_local_scalar_dense", "after aten::item")), name
    assert counted.copies.get("DtoH") == 1  # the scalar comes back to the host


def test_a_tensor_from_a_python_list_is_one_host_to_device_copy_of_its_bytes():
    import torch

    counted, _ = count(lambda: torch.tensor([1.0, 2.0], device="cuda"))
    assert counted.copies.get("HtoD") == 1 and counted.copy_bytes.get("HtoD") == 8, (counted.copies, counted.copy_bytes)


def test_a_host_bound_case_gets_a_busy_time_and_an_idle_share_from_it():
    import torch

    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    x = torch.randn(1024, device="cuda")

    def synced():
        return (x * 2).sum().item()  # the host waits for the GPU in every call: the caller regime

    (instance,) = perf_case(name="synced", cache="hot")(lambda device: synced).instances("cuda")
    device = detect("cuda")
    result = runner.measure(instance, device, SamplingRule(budget_s=0.5))
    assert result.regime == "caller" and "busy_time" in result.timings, (result.regime, result.counters_problem)
    busy, caller = result.median_of("busy_time"), result.median_of("caller_time")
    assert 0 < busy < caller
    assert result.metrics.launch_overhead_share == pytest.approx(1 - busy / caller, rel=1e-6)
    assert result.counters.total("syncs") == 1
