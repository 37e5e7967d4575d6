"""Memory-bound cases for benchmarks/ab_sensitivity.py: the operators of benchmarks/detection_suite.py
(50 µs-2 ms on an H200), each at every size and at four levels. benchmarks/ab_sensitivity.py commits
this file into a throwaway repository as it is (HEAD = False: every level does the same work), then
sets HEAD = True in the working tree, where a case of level L moves L% more bytes (more rows, more
elements) under the same id and the same declared bytes, as a change that made it do more work
would; level 0 stays as it was (the A/A cases). SIZES is cut to the first `--sizes` by the script.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from perfguard import perf_case

HEAD = False
LEVELS = [0, 1, 2, 3]  # percent more work in the head
MIB = 2**20
SIZES = [256 * MIB, 384 * MIB, 512 * MIB, 768 * MIB, 1024 * MIB, 1536 * MIB]  # bytes of input read
ROW = 4096  # hidden size of the row-wise operators
GRID = {"size": SIZES, "level": LEVELS}


def _scaled(n: int, level: int, multiple: int = 1) -> int:
    scale = 1.0 + level / 100.0 if HEAD else 1.0
    return max(multiple, int(round(n * scale / multiple)) * multiple)


def _flat(size: int, level: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.randn(_scaled(size // dtype.itemsize, level, 1024), device=device, dtype=dtype)


@perf_case(params=GRID, bytes=lambda size, level: 2 * size, device_kinds=("cuda",))
def copy(size, level, device):
    src = torch.empty(_scaled(size, level, 4096), dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


@perf_case(params=GRID, bytes=lambda size, level: 3 * size, device_kinds=("cuda",))
def add(size, level, device):
    a = _flat(size, level, torch.float32, device)
    b = torch.randn_like(a)
    return lambda: a + b


@perf_case(params=GRID, bytes=lambda size, level: 2 * size, device_kinds=("cuda",))
def gelu(size, level, device):
    x = _flat(size, level, torch.bfloat16, device)
    return lambda: F.gelu(x, approximate="tanh")


@perf_case(params=GRID, bytes=lambda size, level: 2 * size, device_kinds=("cuda",))
def scale(size, level, device):
    x = _flat(size, level, torch.float16, device)
    return lambda: x * 0.5


@perf_case(params=GRID, bytes=lambda size, level: 2 * size, device_kinds=("cuda",))
def layer_norm(size, level, device):
    x = torch.randn(_scaled(size // (2 * ROW), level), ROW, device=device, dtype=torch.bfloat16)
    w, b = torch.ones(ROW, device=device, dtype=x.dtype), torch.zeros(ROW, device=device, dtype=x.dtype)
    return lambda: F.layer_norm(x, (ROW,), w, b)


@perf_case(params=GRID, bytes=lambda size, level: 2 * size, device_kinds=("cuda",))
def softmax(size, level, device):
    x = torch.randn(_scaled(size // (2 * ROW), level), ROW, device=device, dtype=torch.float16)
    return lambda: torch.softmax(x, -1)
