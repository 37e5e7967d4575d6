"""Memory-bound cases for benchmarks/detection.py: 36 operators of 50 µs-2 ms on an H200 whose work
can be scaled from outside, the way a real regression scales it.

PERFGUARD_INJECT=1.03 makes every case move 3% more bytes (more rows, more elements) under the same
id and the same declared bytes, as a change that made the operator do more work would;
PERFGUARD_INJECT_MEMORY=1 makes every call keep one extra output-sized buffer alive (a peak-memory
regression). Run it with `python benchmarks/detection.py`, not on its own.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from perfguard import perf_case

SCALE = float(os.environ.get("PERFGUARD_INJECT", "1"))
EXTRA = os.environ.get("PERFGUARD_INJECT_MEMORY", "") == "1"
MIB = 2**20
# Bytes of the input each operator reads: 256 MiB to 1.5 GiB.
SIZES = [256 * MIB, 384 * MIB, 512 * MIB, 768 * MIB, 1024 * MIB, 1536 * MIB]
ROW = 4096  # hidden size of the row-wise operators


def _scaled(n: int, multiple: int = 1) -> int:
    return max(multiple, int(round(n * SCALE / multiple)) * multiple)


def _keep(op):
    """The timed callable; with PERFGUARD_INJECT_MEMORY=1 it also keeps an output-sized buffer alive."""
    if not EXTRA:
        return op

    def call():
        out = op()
        spare = torch.empty_like(out)  # the regression: one more output-sized tensor live at the peak
        return out, spare

    return call


def _flat(size: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.randn(_scaled(size // dtype.itemsize, 1024), device=device, dtype=dtype)


@perf_case(params={"size": SIZES}, bytes=lambda size: 2 * size, device_kinds=("cuda",))
def copy(size, device):
    src = torch.empty(_scaled(size, 4096), dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    return _keep(lambda: dst.copy_(src))


@perf_case(params={"size": SIZES}, bytes=lambda size: 3 * size, device_kinds=("cuda",))
def add(size, device):
    a = _flat(size, torch.float32, device)
    b = torch.randn_like(a)
    return _keep(lambda: a + b)


@perf_case(params={"size": SIZES}, bytes=lambda size: 2 * size, device_kinds=("cuda",))
def gelu(size, device):
    x = _flat(size, torch.bfloat16, device)
    return _keep(lambda: F.gelu(x, approximate="tanh"))


@perf_case(params={"size": SIZES}, bytes=lambda size: 2 * size, device_kinds=("cuda",))
def scale(size, device):
    x = _flat(size, torch.float16, device)
    return _keep(lambda: x * 0.5)


@perf_case(params={"size": SIZES}, bytes=lambda size: 2 * size, device_kinds=("cuda",))
def layer_norm(size, device):
    x = torch.randn(_scaled(size // (2 * ROW)), ROW, device=device, dtype=torch.bfloat16)
    w, b = torch.ones(ROW, device=device, dtype=x.dtype), torch.zeros(ROW, device=device, dtype=x.dtype)
    return _keep(lambda: F.layer_norm(x, (ROW,), w, b))


@perf_case(params={"size": SIZES}, bytes=lambda size: 2 * size, device_kinds=("cuda",))
def softmax(size, device):
    x = torch.randn(_scaled(size // (2 * ROW)), ROW, device=device, dtype=torch.float16)
    return _keep(lambda: torch.softmax(x, -1))
