"""A fused row softmax written in Triton (after the Triton tutorial), next to torch.softmax.

One program per row: the row is loaded once into registers, its max, exp-sum and normalised values
are computed on chip, and it is written once, so the kernel should reach the copy ceiling. It takes
its shapes, byte and flop models and inputs from `softmax` in suites/test_reductions.py, so the two
compare directly (suites/conftest.py puts suites/ on sys.path, whatever the import mode; so do the
benchmarks that load the suites).

Triton is imported only when the case is set up (on a GPU), so this file imports, and its cases are
skipped, on machines without Triton or CUDA.
"""

from __future__ import annotations

import functools

import torch

from perfguard import perf_case
from test_reductions import SOFTMAX_MODEL, _randn  # the torch softmax case's shapes, models and inputs


@functools.cache
def _softmax_kernel():
    """Compile-once holder of the kernel: the @triton.jit function needs triton at definition time."""
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)

    return triton, softmax_kernel


def triton_softmax_fn(x):
    """softmax(x, dim=-1) for a 2-D CUDA tensor whose row fits in one program's registers."""
    triton, kernel = _softmax_kernel()
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    num_warps = 16 if block >= 4096 else 8 if block >= 2048 else 4
    y = torch.empty_like(x)
    kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=block, num_warps=num_warps)
    return y


def _check(out, rows, cols, dtype, device):
    ref = torch.softmax(_randn((rows, cols), dtype, device, seed=0).float(), dim=-1)
    # tl.exp is the fast (ex2.approx) exponential: a few ulp of fp32, hence the fp32 tolerance.
    tol = {"atol": 1e-6, "rtol": 1e-4} if dtype == torch.float32 else {}
    torch.testing.assert_close(out, ref.to(dtype), **tol)


@perf_case(**SOFTMAX_MODEL, device_kinds=("cuda",), check=_check)
def triton_softmax(rows, cols, dtype, device):
    x = _randn((rows, cols), dtype, device, seed=0)
    triton_softmax_fn(x)  # compile outside the timed calls (perfguard's warm-up would absorb it too)
    return lambda: triton_softmax_fn(x)
