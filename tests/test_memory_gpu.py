"""On a CUDA GPU: memory across calls. A call that keeps a MiB each time retains a MiB per call; garbage
in reference cycles retains nothing (a one-off allocation: tests/test_memory_verdicts.py); gradients kept between steps raise the
footprint by exactly their size; and a case's figures do not depend on the case that ran before it
(cuBLAS's per-stream workspaces are settled before every case).

Marked `gpu`: skipped without CUDA (tests/conftest.py). `bash benchmarks/gpu.sh OUTDIR tests` runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfguard import perf_case

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


def measure(spec, budget_s: float = 0.2):
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    (instance,) = spec.instances("cuda")
    device = detect("cuda")
    result = runner.measure(instance, device, SamplingRule(budget_s=budget_s))
    assert result.status == "ok", result.error
    return result


def test_a_call_that_keeps_a_mib_each_time_retains_a_mib_per_call():
    import torch

    # Calls of ~0.15 ms (256 MiB read, 256 MiB written): a 0.2 s budget leaks about a GiB, not tens.
    def leaky(device):
        kept = []
        x = torch.randn(2**26, device=device)

        def call():
            kept.append(torch.empty(MIB, dtype=torch.uint8, device=device))  # a list that grows every call
            return x * 2

        return call

    def clean(device):
        x = torch.randn(2**26, device=device)
        return lambda: x * 2

    assert measure(perf_case(name="leaky")(leaky)).memory.retained_bytes_per_call == MIB
    assert measure(perf_case(name="clean")(clean)).memory.retained_bytes_per_call == 0


def test_garbage_in_reference_cycles_is_not_a_leak():
    import gc

    import torch

    def cycles(device):
        x = torch.randn(2**26, device=device)

        def call():
            holder = {"t": torch.empty(MIB, dtype=torch.uint8, device=device)}
            holder["me"] = holder  # freed by the garbage collector only: memory grows until it runs
            return x * 2

        return call

    gc.disable()  # no automatic collection may hide the cycles' growth from the watched calls
    try:
        assert measure(perf_case(name="cycles")(cycles)).memory.retained_bytes_per_call == 0
    finally:
        gc.enable()


def test_gradients_kept_between_steps_raise_the_footprint_by_their_size():
    import torch

    def train_step(device, keep):
        model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        x = torch.randn(64, 1024, device=device)

        def step():
            # A 64 MiB scratch buffer at the start of the step puts the call's peak there, where the
            # gradients are either still held (kept) or not yet made (set to None).
            torch.empty(64 * MIB, dtype=torch.uint8, device=device)
            model(x).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=not keep)

        return step

    # Kept first: the first backward pass of the process makes cuBLAS a workspace on autograd's own
    # thread (32 MiB), which perfguard makes before the case (measured: 40 MiB more, not 8, without).
    kept = measure(perf_case(name="kept")(lambda device: train_step(device, True))).memory
    dropped = measure(perf_case(name="dropped")(lambda device: train_step(device, False))).memory
    grads = 2 * (1024 * 1024 + 1024) * 4  # float32 weights and biases, each a multiple of 512 B
    assert kept.footprint_bytes - dropped.footprint_bytes == grads
    assert kept.setup_allocated_bytes - dropped.setup_allocated_bytes == grads
    assert kept.peak_allocated_bytes == dropped.peak_allocated_bytes  # what the old figure saw: no change
    assert kept.retained_bytes_per_call == dropped.retained_bytes_per_call == 0


ORDER_SCRIPT = textwrap.dedent(
    """
    import json, torch
    from perfguard import perf_case
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    def multiplies(device):
        a = torch.ones(512, 512, device=device)
        h = torch.ones(512, 512, device=device, dtype=torch.bfloat16)
        bias = torch.ones(512, device=device, dtype=torch.bfloat16)
        return lambda: (a @ a, torch.addmm(bias, h, h))  # cuBLAS and cuBLASLt

    eager, graph = perf_case(name="eager")(multiplies), perf_case(name="graph", mode="graph")(multiplies)
    device = detect("cuda")
    figures = []
    for spec in [eager, graph, eager]:  # the first case in the process to multiply; then after a graph case
        (instance,) = spec.instances("cuda")
        m = runner.measure(instance, device, SamplingRule(budget_s=0.1)).memory
        figures.append([m.setup_allocated_bytes, m.peak_allocated_bytes, m.footprint_bytes, m.retained_bytes_per_call])
    print(json.dumps(figures))
    """
)


def test_a_cases_memory_figures_do_not_depend_on_the_case_before_it():
    # A fresh interpreter, so that no matmul has made cuBLAS's workspaces before the first case.
    out = subprocess.run([sys.executable, "-c", ORDER_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, graph, again = json.loads(out.stdout.strip().splitlines()[-1])
    assert first == again, f"first in the process {first}, after a CUDA-graph case {again}"
    inputs = 512 * 512 * 4 + 512 * 512 * 2 + 1024  # the bias: 1 KiB, a multiple of the allocator's 512 B
    assert first[0] == inputs and first[3] == 0  # held between calls: the inputs alone; nothing retained
    assert graph[0] == inputs  # the graph's capture stream's workspaces are not the case's either
    assert first[2] == first[0] + first[1]  # the footprint: the inputs and the call's peak on top
