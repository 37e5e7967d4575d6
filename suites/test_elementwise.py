"""Elementwise operators: the memory-bound baseline of the suite.

An elementwise op reads each input once and writes each output once, so its roofline is the card's
memory bandwidth; achieved GB/s against the 1 GiB copy (suites/test_copy.py) is the figure to watch.

Inputs are drawn from a seeded generator, so a check can regenerate them rather than the case
keeping a second copy alive on the device.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from perfguard import perf_case

DTYPES = [torch.float16, torch.float32]


def _randn(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _add_check(out, n, dtype, device):
    a = _randn(n, dtype, device, seed=0)
    b = _randn(n, dtype, device, seed=1)
    torch.testing.assert_close(out, (a.double() + b.double()).to(dtype))


# On the H200, from 2**20 elements (4-8 MB moved, a few µs: launch-bound, where timing methods disagree
# most) to 2**28 (0.5-1 GiB per tensor, 1.5-3 GiB per call, ~25-50x the 60 MB L2): the sweep's scaling
# fit separates the launch floor from the cost per element.
@perf_case(
    params=lambda device: {"n": [2**20, 2**22, 2**24, 2**26, 2**28] if device == "cuda" else [2**20], "dtype": DTYPES},
    bytes=lambda n, dtype: 3 * n * dtype.itemsize,  # read a and b, write the sum
    flops=lambda n: n,  # one add per element
    check=_add_check,
)
def add(n, dtype, device):
    a = _randn(n, dtype, device, seed=0)
    b = _randn(n, dtype, device, seed=1)
    return lambda: a + b


def _gelu_reference(x):
    # The tanh approximation, written out in float64: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    x = x.double()
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_check(out, n, dtype, device):
    ref = _gelu_reference(_randn(n, dtype, device, seed=0)).to(dtype)
    torch.testing.assert_close(out, ref)


# One fused ATen kernel: x is read once and y written once, whatever the arithmetic in between.
@perf_case(
    params=lambda device: {"n": [2**20, 2**24, 2**28] if device == "cuda" else [2**20], "dtype": [torch.bfloat16, torch.float32]},
    bytes=lambda n, dtype: 2 * n * dtype.itemsize,  # read x, write gelu(x)
    # Per element: x^3 (2 mul), 0.044715*x^3 + x (2), * sqrt(2/pi) (1), tanh (counted as 1),
    # 1 + (1), * x (1), * 0.5 (1): 9 operations.
    flops=lambda n: 9 * n,
    check=_gelu_check,
)
def gelu_tanh(n, dtype, device):
    x = _randn(n, dtype, device, seed=0)
    return lambda: F.gelu(x, approximate="tanh")
