"""Reductions: a full sum, and a row softmax (the reduction every attention layer leans on).

Both are memory-bound: the sum reads its input once and writes one number; the softmax reads each
row once and writes it once when fused (max, exp-sum and normalise in one pass over a row that stays
on chip), so bytes = read + write is the figure a good kernel reaches.
"""

from __future__ import annotations

import torch

from perfguard import perf_case


def _randn(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _sum_check(out, n, dtype, device):
    ref = _randn(n, dtype, device, seed=0).double().sum()
    # A sum of n standard normals is of order sqrt(n); rounding the result to the output dtype and
    # a different summation order move it by far less than 1% of that, a wrong sum by far more.
    tol = (1e-2 if dtype.itemsize == 2 else 1e-4) * (abs(ref.item()) + n**0.5)
    err = abs(out.double().item() - ref.item())
    assert err <= tol, f"sum is off by {err:.3g} (tolerance {tol:.3g})"


# Up to 2**28 elements on the H200: 0.5 GiB (bf16) or 1 GiB (fp32) read, about 9-17x the L2.
@perf_case(
    params=lambda device: {"n": [2**20, 2**24, 2**28] if device == "cuda" else [2**22], "dtype": [torch.bfloat16, torch.float32]},
    bytes=lambda n, dtype: (n + 1) * dtype.itemsize,  # read x once, write the one result
    flops=lambda n: n - 1,  # n - 1 additions
    check=_sum_check,
)
def sum_all(n, dtype, device):
    x = _randn(n, dtype, device, seed=0)
    return lambda: x.sum()


def _softmax_check(out, rows, cols, dtype, device):
    assert bool((out >= 0).all()), "softmax produced negative probabilities"
    torch.testing.assert_close(out.float().sum(-1), torch.ones(rows, device=device), atol=1e-2, rtol=0)
    ref = torch.softmax(_randn((rows, cols), dtype, device, seed=0).double(), dim=-1)
    torch.testing.assert_close(out, ref.to(dtype))


# 65536 rows of 1024 to 16384 columns on the H200 (at 4096, a 16-head, 4096-token attention score
# block): 0.125-4 GiB in, as much out. A row of 16384 fp32 values is 64 KiB, more than one program keeps
# in registers comfortably: where the fused kernels stop reaching the copy ceiling shows along cols.
# suites/test_triton_softmax.py declares its case with these same shapes and models, so the two read
# side by side.
SOFTMAX_MODEL = {
    "params": lambda device: {
        "rows": [65536] if device == "cuda" else [1024],
        "cols": [1024, 2048, 4096, 8192, 16384] if device == "cuda" else [1024],
        "dtype": [torch.float16, torch.float32],
    },
    "bytes": lambda rows, cols, dtype: 2 * rows * cols * dtype.itemsize,  # read x once, write softmax(x) once
    # Per element: compare for the max, subtract it, exp (counted as 1), add to the row sum, divide.
    "flops": lambda rows, cols: 5 * rows * cols,
}


@perf_case(**SOFTMAX_MODEL, check=_softmax_check)
def softmax(rows, cols, dtype, device):
    x = _randn((rows, cols), dtype, device, seed=0)
    return lambda: torch.softmax(x, dim=-1)
