"""Cases for benchmarks/host_overhead.py: a launch-bound add and GPT-2 small's batch-1 forward, with
host work injected from outside, the way a change that adds Python to an operator adds it.

PERFGUARD_INJECT_HOST_US=20 spins the host for 20 µs (Python, no sleep: a sleep would hand the core
away) where PERFGUARD_INJECT_WHERE says: "call" (default) once per call of the case, "block" once per
call of each of the model's 12 transformer blocks (a forward pre-hook, as a debugging or logging hook
adds it). Run it with `python benchmarks/host_overhead.py`, not on its own.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from perfguard import perf_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites"))
from test_models import GPT2_SMALL, forward_call, gpt, token_batch  # noqa: E402

INJECT_US = float(os.environ.get("PERFGUARD_INJECT_HOST_US", "0"))
WHERE = os.environ.get("PERFGUARD_INJECT_WHERE", "call")
CUDA = ("cuda",)


def spin(us: float = INJECT_US) -> None:
    end = time.perf_counter_ns() + int(us * 1000)
    while time.perf_counter_ns() < end:
        pass


def _with_host_work(call):
    if not INJECT_US or WHERE != "call":
        return call

    def slower():
        spin()
        return call()

    return slower


@perf_case(params={"n": [2**20]}, bytes=lambda n: 3 * 4 * n, flops=lambda n: n, device_kinds=CUDA)
def add(n, device):
    x = torch.randn(n, device=device)
    y, z = torch.randn_like(x), torch.empty_like(x)
    return _with_host_work(lambda: torch.add(x, y, out=z))


@perf_case(params={"batch": [1], "seq": [1024]}, device_kinds=CUDA, budget_s=2.0)
def gpt2_forward(batch, seq, device):
    model = gpt(GPT2_SMALL, device)
    if INJECT_US and WHERE == "block":
        for block in model.transformer.h:
            block.register_forward_pre_hook(lambda module, args: spin())
    idx, _ = token_batch(GPT2_SMALL, batch, seq, device)
    return _with_host_work(forward_call(model, idx, torch.bfloat16))
