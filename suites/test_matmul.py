"""Dense matrix multiply C = A @ B, the compute-bound reference point of the suite, and a linear layer.

8192^3 on the H200 is 1.1 TFLOP per call (~1.5 ms in bf16 near peak) against 0.4 GB of operands: an
arithmetic intensity of ~2700 FLOP/B, far right of the ridge, so TFLOP/s against the dtype's peak is
the figure to watch. float32 means true IEEE fp32 (torch's default matmul precision "highest", no
TF32): about 22 ms per call on the H200 (~51 TFLOP/s of fp32 FMA).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from perfguard import perf_case


def _randn(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _params(device):
    if device == "cuda":
        return {"m": [8192], "n": [8192], "k": [8192], "dtype": [torch.bfloat16, torch.float16, torch.float32]}
    # This CPU has no fp16 matrix unit: a 512^3 fp16 matmul takes ~160 ms, so fp16 runs on CUDA only.
    return {"m": [512], "n": [512], "k": [512], "dtype": [torch.bfloat16, torch.float32]}


def _check(out, m, n, k, dtype, device):
    # Recompute 64 rows of C in float64: cheap, and any wrong operand, transpose or stride shows.
    a = _randn((m, k), dtype, device, seed=0)[:64].double()
    b = _randn((k, n), dtype, device, seed=1).double()
    err = (out[:64].double() - a @ b).abs().max().item()
    # Entries are of order sqrt(k); rounding to bf16/fp16 and low-precision accumulation stay well
    # under 2% of that, a wrong result is off by about sqrt(k) itself.
    tol = 0.02 * k**0.5
    assert err <= tol, f"max error {err:.3g} exceeds {tol:.3g}"


@perf_case(
    params=_params,
    flops=lambda m, n, k: 2 * m * n * k,  # one multiply and one add per (i, j, l)
    bytes=lambda m, n, k, dtype: (m * k + k * n + m * n) * dtype.itemsize,  # read A and B once, write C once
    check=_check,
)
def matmul(m, n, k, dtype, device):
    a = _randn((m, k), dtype, device, seed=0)
    b = _randn((k, n), dtype, device, seed=1)
    return lambda: a @ b


def _linear_params(device):
    # A transformer's projections while decoding: hidden 4096 and MLP width 14336 (a Llama-3-8B-sized
    # layer), the weight [n, k] as nn.Linear stores it, and m = 1 to 64 tokens per step. Streaming the
    # weight is the whole cost (memory-bound: GB/s against the copy ceiling is the figure), so the
    # scaling fit along m comes out flat: 64 tokens cost what one does. Larger m turns the layer
    # compute-bound, which the square matmul above covers; there, under the H200's power cap, shapes
    # of 0.1-0.7 ms moved up to 16% between runs of the same code, too much for a 5% gate.
    if device == "cuda":
        return {"m": [1, 16, 64], "k": [4096, 14336], "n": [4096, 14336], "dtype": [torch.bfloat16]}
    return {"m": [1, 16, 64], "k": [256], "n": [256], "dtype": [torch.float32]}


def _linear_check(out, m, n, k, dtype, device):
    # In float64, with the tolerance of the square matmul above.
    x = _randn((m, k), dtype, device, seed=0).double()
    w = _randn((n, k), dtype, device, seed=1).double()
    err = (out.double() - x @ w.T).abs().max().item()
    tol = 0.02 * k**0.5
    assert err <= tol, f"max error {err:.3g} exceeds {tol:.3g}"


@perf_case(
    params=_linear_params,
    flops=lambda m, n, k: 2 * m * n * k,
    bytes=lambda m, n, k, dtype: (m * k + n * k + m * n) * dtype.itemsize,  # read x and the weight, write y
    check=_linear_check,
)
def linear(m, k, n, dtype, device):
    x = _randn((m, k), dtype, device, seed=0)
    w = _randn((n, k), dtype, device, seed=1)
    return lambda: F.linear(x, w)
