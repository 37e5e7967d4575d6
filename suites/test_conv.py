"""A ResNet-style 3x3 convolution (stride 1, padding 1), in NCHW and in channels_last.

The shape is ResNet-50's conv3_x 3x3 layer (128 -> 128 channels at 28x28) at batch 512: 118 GFLOP
per call against ~206 MB of activations (3.4x the H200's L2), an arithmetic intensity of ~570
FLOP/B, so it should be compute-bound. NCHW against channels_last shows what the layout costs:
cuDNN's tensor-core kernels want NHWC and may transpose an NCHW input on the way in.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from perfguard import perf_case

R = S = 3  # filter height and width; stride 1 and padding 1 keep P = H and Q = W


def _randn(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _params(device):
    layouts = ["nchw", "channels_last"]
    if device == "cuda":
        return {"batch": [512], "channels": [128], "size": [28], "layout": layouts, "dtype": [torch.bfloat16]}
    return {"batch": [8], "channels": [64], "size": [28], "layout": layouts, "dtype": [torch.float32]}


def _inputs(batch, channels, size, dtype, device):
    x = _randn((batch, channels, size, size), dtype, device, seed=0)
    w = _randn((channels, channels, R, S), dtype, device, seed=1) / (channels * R * S) ** 0.5
    return x, w


def _check(out, batch, channels, size, dtype, device):
    # Recompute the first image in float64.
    x, w = _inputs(batch, channels, size, dtype, device)
    ref = F.conv2d(x[:1].double(), w.double(), padding=1)
    # With w scaled by 1/sqrt(C*R*S) outputs are of order 1; bf16 rounding is ~0.4% of that.
    torch.testing.assert_close(out[:1].double(), ref, atol=3e-2, rtol=1e-2)


@perf_case(
    params=_params,
    # N*K*P*Q outputs, each a dot product of length C*R*S: one multiply and one add per term.
    flops=lambda batch, channels, size: 2 * batch * channels * channels * R * S * size * size,
    # Read the input and the weight once, write the output once (the padding is never stored).
    bytes=lambda batch, channels, size, dtype: (2 * batch * channels * size * size + channels * channels * R * S)
    * dtype.itemsize,
    check=_check,
)
def conv2d_3x3(batch, channels, size, layout, dtype, device):
    x, w = _inputs(batch, channels, size, dtype, device)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    return lambda: F.conv2d(x, w, padding=1)
