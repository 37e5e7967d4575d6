"""Normalisation layers: LayerNorm and RMSNorm over the last (hidden) dimension.

A fused kernel reads each row once and writes it once (plus the small weight and bias vectors), so
bytes = read + write; an implementation that makes several passes over x (e.g. computing the
mean square in one kernel and scaling in another) shows up as bandwidth well under the copy ceiling.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from perfguard import perf_case

EPS = 1e-5
DTYPES = [torch.bfloat16, torch.float32]


def _randn(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _inputs(rows, hidden, dtype, device):
    x = _randn((rows, hidden), dtype, device, seed=0)
    weight = 1 + 0.1 * _randn(hidden, dtype, device, seed=1)
    bias = 0.1 * _randn(hidden, dtype, device, seed=2)
    return x, weight, bias


def _params(device):
    # 32768 tokens of hidden size 1024 to 16384 on the H200 (at 8192: 0.5 or 1 GiB in and as much out):
    # one row per program until a row outgrows what a program holds on chip.
    if device == "cuda":
        return {"rows": [32768], "hidden": [1024, 2048, 4096, 8192, 16384], "dtype": DTYPES}
    return {"rows": [1024], "hidden": [1024], "dtype": DTYPES}


def _layer_norm_check(out, rows, hidden, dtype, device):
    x, weight, bias = (t.double() for t in _inputs(rows, hidden, dtype, device))
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    ref = (x - mean) / torch.sqrt(var + EPS) * weight + bias
    torch.testing.assert_close(out, ref.to(dtype))


@perf_case(
    params=_params,
    # Read x, write y, read weight and bias once.
    bytes=lambda rows, hidden, dtype: (2 * rows * hidden + 2 * hidden) * dtype.itemsize,
    # Per element: sum for the mean (1), subtract and square and sum for the variance (3),
    # normalise (subtract, multiply by the inverse std: 2), affine (multiply, add: 2).
    flops=lambda rows, hidden: 8 * rows * hidden,
    check=_layer_norm_check,
)
def layer_norm(rows, hidden, dtype, device):
    x, weight, bias = _inputs(rows, hidden, dtype, device)
    return lambda: F.layer_norm(x, (hidden,), weight, bias, EPS)


def _rms_norm_check(out, rows, hidden, dtype, device):
    x, weight, _ = (t.double() for t in _inputs(rows, hidden, dtype, device))
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * weight
    torch.testing.assert_close(out, ref.to(dtype))


@perf_case(
    params=_params,
    bytes=lambda rows, hidden, dtype: (2 * rows * hidden + hidden) * dtype.itemsize,  # read x, write y, read weight
    # Per element: square and sum (2), scale by the inverse RMS (1), multiply by the weight (1).
    flops=lambda rows, hidden: 4 * rows * hidden,
    check=_rms_norm_check,
)
def rms_norm(rows, hidden, dtype, device):
    x, weight, _ = _inputs(rows, hidden, dtype, device)
    return lambda: F.rms_norm(x, (hidden,), weight, EPS)
