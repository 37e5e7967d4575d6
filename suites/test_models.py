"""Whole models, written as training repositories write them: GPT-2 small (nanoGPT) and ResNet-50 (torchvision).

The operator suites measure one kernel at a time; these measure what a user runs. GPT-2 small
(124M parameters, suites/models/gpt2.py): a forward pass over full 1024-token sequences for inference,
and nanoGPT's training step: a bf16-autocast forward computing the loss, the backward, gradient-norm
clipping and a fused AdamW update with nanoGPT's weight-decay groups, with `memory_breakdown=True`
(float32 parameters and gradients, twice the parameters of AdamW state, and the activations, which at
batch 16 outweigh them all). ResNet-50 (suites/models/resnet.py): inference in bf16, channels_last, the
usual serving recipe. Every case declares its FLOPs, so the report shows TFLOP/s and the share of the
card's bf16 peak (for the training step, nanoGPT's MFU).

These are GPU workloads of 1 to 100 ms per call: CUDA only, with budgets of a few seconds so that the
slowest still gets 20 or more samples. tests/test_model_suite.py checks the models at a tiny size on
a CPU, through the same step functions.
"""

from __future__ import annotations

import functools
import math

import torch
from models.gpt2 import GPT, GPT2_VOCAB, GPTConfig
from models.resnet import ResNet, macs

from perfguard import perf_case

CUDA = ("cuda",)
GPT2_SMALL = GPTConfig()  # 12 layers, 12 heads, width 768, vocab 50304, context 1024
# nanoGPT's train.py settings for GPT-2 small.
LEARNING_RATE, BETAS, WEIGHT_DECAY, GRAD_CLIP = 6e-4, (0.9, 0.95), 0.1, 1.0


# --- GPT-2 ------------------------------------------------------------------------------------------


def gpt(config: GPTConfig, device: str) -> GPT:
    torch.manual_seed(0)
    return GPT(config).to(device)


def token_batch(config: GPTConfig, batch: int, seq: int, device: str, vocab: int = GPT2_VOCAB):
    """Random token ids (a seeded generator) as nanoGPT's get_batch cuts them: targets are the inputs
    shifted by one."""
    gen = torch.Generator(device=device).manual_seed(1)
    tokens = torch.randint(0, min(vocab, config.vocab_size), (batch, seq + 1), generator=gen, device=device)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def forward_call(model: GPT, idx: torch.Tensor, dtype: torch.dtype):
    """Inference: eval mode, no autograd, matmuls and attention under autocast (float32 is no autocast)."""
    model.eval()
    device = idx.device.type

    def forward():
        with torch.no_grad(), torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            logits, _ = model(idx)
        return logits

    return forward


def train_step_call(model: GPT, x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype):
    """The body of nanoGPT's training loop (one micro-step: no gradient accumulation)."""
    model.train()
    device = x.device.type
    optimizer = model.configure_optimizers(WEIGHT_DECAY, LEARNING_RATE, BETAS, device)

    def step():
        with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        # nanoGPT frees the gradients at the end of the step, "no need for this memory anymore": between
        # steps only parameters and AdamW state stay live, so the call's peak counts the gradients.
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()  # no .item(): a real loop reads the loss back every N steps, not every step

    return step


@functools.cache
def num_params(config: GPTConfig) -> int:
    """nanoGPT's N: the parameters without the position embeddings (counted on the meta device)."""
    with torch.device("meta"):
        return GPT(config).get_num_params()


def gpt_flops(batch: int, seq: int, passes: int, config: GPTConfig = GPT2_SMALL) -> int:
    """The PaLM (appendix B) / nanoGPT estimate_mfu count, per sequence of `seq` tokens:
    2*N per token per pass through the matmul weights (N = num_params), plus attention, Q K^T and P V:
    4 * n_layer * n_embd * seq per token per pass, full, not halved for the causal mask (nanoGPT's
    convention, so that MFU compares with its figures). A forward is one pass, training three
    (forward 1, backward 2): training = (6N + 12 * L * d * T) * tokens, nanoGPT's formula."""
    per_token = 2 * num_params(config) + 4 * config.n_layer * config.n_embd * seq
    return passes * per_token * batch * seq


def _check_logits(logits, batch, seq):
    assert logits.shape == (batch, seq, GPT2_SMALL.vocab_size), f"logits of shape {tuple(logits.shape)}"
    low, high = torch.aminmax(logits)  # no copy the size of the logits, as isfinite would make
    assert math.isfinite(low.item()) and math.isfinite(high.item()), f"logits span {low.item()} .. {high.item()}"


def _check_loss(loss):
    # At initialisation the model predicts about uniformly: ln(50304) = 10.8 on random tokens.
    assert abs(loss.item() - math.log(GPT2_SMALL.vocab_size)) < 1.0, f"the first step's loss is {loss.item()}"


@perf_case(
    params={"batch": [1, 32], "seq": [1024], "dtype": [torch.bfloat16]},
    flops=lambda batch, seq: gpt_flops(batch, seq, passes=1),
    check=_check_logits,
    device_kinds=CUDA,
    budget_s=2.0,  # 2 ms at batch 1, about 25 ms at batch 32
)
def gpt2_forward(batch, seq, dtype, device):
    model = gpt(GPT2_SMALL, device)
    idx, _ = token_batch(GPT2_SMALL, batch, seq, device)
    return forward_call(model, idx, dtype)


@perf_case(
    params={"batch": [4, 8, 16], "seq": [1024], "dtype": [torch.bfloat16]},
    flops=lambda batch, seq: gpt_flops(batch, seq, passes=3),
    check=_check_loss,
    memory_breakdown=True,
    device_kinds=CUDA,
    budget_s=4.0,  # about 100 ms a step at batch 16: 30 or more samples
)
def gpt2_train_step(batch, seq, dtype, device):
    model = gpt(GPT2_SMALL, device)
    x, y = token_batch(GPT2_SMALL, batch, seq, device)
    return train_step_call(model, x, y, dtype)


# --- ResNet-50 --------------------------------------------------------------------------------------


def resnet_forward_call(model: ResNet, images: torch.Tensor, dtype: torch.dtype):
    """Inference as it is usually served: eval mode (BatchNorm on its running statistics), no autograd,
    channels_last model and input, convolutions under autocast."""
    model = model.to(memory_format=torch.channels_last).eval()
    images = images.contiguous(memory_format=torch.channels_last)
    device = images.device.type

    def forward():
        with torch.no_grad(), torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            return model(images)

    return forward


def _check_classes(out, batch):
    assert out.shape == (batch, 1000), f"output of shape {tuple(out.shape)}"
    assert bool(out.isfinite().all()), "the output is not finite"


@perf_case(
    params={"batch": [1, 64], "image": [224], "dtype": [torch.bfloat16]},
    # 4.09 G multiply-accumulates an image at 224x224 (models.resnet.macs), 2 FLOPs each.
    flops=lambda batch, image: 2 * macs(image=image) * batch,
    check=_check_classes,
    device_kinds=CUDA,
    budget_s=1.5,  # 2 to 10 ms a call
)
def resnet50_forward(batch, image, dtype, device):
    torch.manual_seed(0)
    model = ResNet().to(device)
    gen = torch.Generator(device=device).manual_seed(1)
    images = torch.randn(batch, 3, image, image, generator=gen, device=device)
    return resnet_forward_call(model, images, dtype)
