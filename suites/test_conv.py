"""ResNet-50's 3x3 convolutions (stride 1, padding 1), one per stage, in NCHW and in channels_last.

Each stage halves the image and doubles the channels, so every layer does the same 118 GFLOP per
call at batch 512, while its activations shrink (conv3_x: 128 -> 128 channels at 28x28, ~206 MB,
3.4x the H200's L2) and its weights grow: the arithmetic intensity climbs from ~290 to ~2100 FLOP/B,
compute-bound throughout, yet small images leave cuDNN fewer tiles to spread over 132 SMs. NCHW
against channels_last shows what the layout costs: cuDNN's tensor-core kernels want NHWC and may
transpose an NCHW input on the way in.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from perfguard import perf_case

R = S = 3  # filter height and width; stride 1 and padding 1 keep P = H and Q = W
# ResNet-50's 3x3 layers: channels in = channels out, and the image size, per stage.
LAYERS = {"conv2_x": (64, 56), "conv3_x": (128, 28), "conv4_x": (256, 14), "conv5_x": (512, 7)}


def _randn(shape, dtype, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


def _params(device):
    layouts = ["nchw", "channels_last"]
    if device == "cuda":
        return {"batch": [512], "layer": list(LAYERS), "layout": layouts, "dtype": [torch.bfloat16]}
    return {"batch": [2], "layer": ["conv3_x"], "layout": layouts, "dtype": [torch.float32]}


def _flops(batch, layer):
    # N*K*P*Q outputs, each a dot product of length C*R*S: one multiply and one add per term.
    channels, size = LAYERS[layer]
    return 2 * batch * channels * channels * R * S * size * size


def _bytes(batch, layer, dtype):
    # Read the input and the weight once, write the output once (the padding is never stored).
    channels, size = LAYERS[layer]
    return (2 * batch * channels * size * size + channels * channels * R * S) * dtype.itemsize


def _inputs(batch, layer, dtype, device):
    channels, size = LAYERS[layer]
    x = _randn((batch, channels, size, size), dtype, device, seed=0)
    w = _randn((channels, channels, R, S), dtype, device, seed=1) / (channels * R * S) ** 0.5
    return x, w


def _check(out, batch, layer, dtype, device):
    # Recompute the first image in float64.
    x, w = _inputs(batch, layer, dtype, device)
    ref = F.conv2d(x[:1].double(), w.double(), padding=1)
    # With w scaled by 1/sqrt(C*R*S) outputs are of order 1; bf16 rounding is ~0.4% of that.
    torch.testing.assert_close(out[:1].double(), ref, atol=3e-2, rtol=1e-2)


@perf_case(
    params=_params,
    flops=_flops,
    bytes=_bytes,
    check=_check,
)
def conv2d_3x3(batch, layer, layout, dtype, device):
    x, w = _inputs(batch, layer, dtype, device)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    return lambda: F.conv2d(x, w, padding=1)
