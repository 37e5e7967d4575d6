"""One training step of a transformer block: forward, backward and an Adam update.

The case that shows where training memory goes (memory_breakdown=True): the block's parameters, as
many bytes again of gradients, twice the parameters of Adam state (exp_avg and exp_avg_sq), and the
activations saved for the backward pass, which at B=8, S=2048, d=1024 on the H200 outweigh all the
rest. bfloat16 is the usual mixed-precision recipe (float32 parameters and Adam state, matmuls and
attention under autocast), measured over batch and sequence length: the scaling fits show the
activations growing linearly in both (the fused attention stores no S x S scores) while parameters and
Adam state stay put, the figures to read before picking a batch that must fit. `training_step_fp32`
is IEEE fp32 throughout (no TF32), at one size.
"""

from __future__ import annotations

import contextlib
import math

import torch

from perfguard import perf_case

FFN = 4  # the MLP's hidden width, in multiples of d_model


def _params(device):
    if device == "cuda":
        return {"batch": [4, 8, 16], "seq": [1024, 2048, 4096], "d_model": [1024], "heads": [16], "dtype": [torch.bfloat16]}
    return {"batch": [2], "seq": [64], "d_model": [64], "heads": [4], "dtype": [torch.float32]}


def block(d_model, heads, device="cpu"):
    """The block: pre-norm self-attention and a GELU MLP, each with a residual (parameters in float32)."""
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(
        d_model, heads, FFN * d_model, dropout=0.0, activation="gelu", batch_first=True, norm_first=True, device=device
    )


def _flops(batch, seq, d_model):
    # The usual 6 x matmul parameters x tokens (forward 2, backward 4), plus attention: Q K^T and P V
    # are 4*B*S^2*d forward and twice that backward. Norms, GELU and the Adam update are O(params + tokens * d).
    matmul_params = 4 * d_model**2 + 2 * FFN * d_model**2
    return 6 * matmul_params * batch * seq + 12 * batch * seq**2 * d_model


def _check(loss, device):
    assert math.isfinite(loss.item()), f"the loss is {loss.item()}"


def _training_step(batch, seq, d_model, heads, dtype, device):
    model = block(d_model, heads, device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(batch, seq, d_model, generator=gen, device=device)
    mixed = dtype != torch.float32

    def step():
        with torch.autocast(device, dtype=dtype) if mixed else contextlib.nullcontext():
            out = model(x)
        loss = out.float().square().mean()
        loss.backward()
        opt.step()
        # Free the gradients (not zero them): between steps only parameters and Adam state stay
        # live, so the memory pass's peak over what was live before the call counts the gradients,
        # and the profiled step shows the backward pass making them.
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    return step


training_step = perf_case(params=_params, flops=_flops, memory_breakdown=True, check=_check, name="training_step")(_training_step)
# On a CPU the case above is already float32.
FP32 = {"batch": [8], "seq": [2048], "d_model": [1024], "heads": [16], "dtype": [torch.float32]}
training_step_fp32 = perf_case(
    params=FP32, flops=_flops, memory_breakdown=True, check=_check, name="training_step_fp32", device_kinds=("cuda",)
)(_training_step)
