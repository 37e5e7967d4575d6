"""PyTorch 2 code: nanoGPT's GPT-2 small compiled as its train.py compiles it (issue 32).

`suites/models/nanogpt/model.py` is nanoGPT's model.py as published (github.com/karpathy/nanoGPT at
3adf61e), unedited. The settings are train.py's defaults for GPT-2 small: 12 layers, 12 heads, width
768, context 1024, no biases, no dropout, the vocabulary padded to 50304, micro-batches of 12, bf16
autocast (so GradScaler is off), `model.configure_optimizers(0.1, 6e-4, (0.9, 0.95))` (fused AdamW),
a gradient clip of 1.0, `zero_grad(set_to_none=True)`, and `model = torch.compile(model)` with
torch.compile's defaults (Inductor). One departure: train.py also turns on TF32 for the process;
that flag is global and would follow into the fp32 matmul cases of the other suites, and under bf16
autocast the model's matmuls are bf16 anyway.

perfguard sees the compile on the first call: it times it with empty Inductor and Triton caches and
again with them warm, outside the timed calls, and counts what dynamo did (graphs, graph breaks,
recompiles, frames given up on) with the kernels Inductor generated (perfguard/measure/compiling.py).
"""

from __future__ import annotations

import torch
from models.nanogpt.model import GPT, GPTConfig

CUDA = ("cuda",)
# train.py: n_layer, n_head, n_embd, block_size, bias, vocab_size (meta_vocab_size None), dropout
TRAIN_PY = dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, bias=False, vocab_size=50304, dropout=0.0)
WEIGHT_DECAY, LEARNING_RATE, BETAS, GRAD_CLIP = 1e-1, 6e-4, (0.9, 0.95), 1.0

from perfguard import perf_case  # noqa: E402


def _model(device: str) -> GPT:
    torch.manual_seed(1337)  # train.py's seed
    return GPT(GPTConfig(**TRAIN_PY)).to(device)


def _batch(batch: int, seq: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device=device).manual_seed(0)
    data = torch.randint(0, TRAIN_PY["vocab_size"], (batch, seq + 1), generator=gen, device=device)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def _finite(out) -> bool:
    return bool(torch.isfinite(out).all())


@perf_case(params={"batch": [12], "seq": [1024]}, device_kinds=CUDA, check=_finite, budget_s=3.0)
def nanogpt_compiled_train_step(batch, seq, device):
    model = _model(device)
    optimizer = model.configure_optimizers(WEIGHT_DECAY, LEARNING_RATE, BETAS, device)
    model = torch.compile(model)  # train.py: "requires PyTorch 2.0"
    scaler = torch.amp.GradScaler(device, enabled=False)  # train.py: enabled only for float16
    ctx = torch.amp.autocast(device_type=device, dtype=torch.bfloat16)
    x, y = _batch(batch, seq, device)

    def step():
        with ctx:
            _, loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


@perf_case(params={"batch": [12], "seq": [1024]}, device_kinds=CUDA, check=_finite, budget_s=2.0)
def nanogpt_compiled_forward(batch, seq, device):
    model = _model(device)
    model.eval()
    model = torch.compile(model)
    ctx = torch.amp.autocast(device_type=device, dtype=torch.bfloat16)
    x, y = _batch(batch, seq, device)

    def forward():
        with torch.no_grad(), ctx:  # train.py's estimate_loss
            _, loss = model(x, y)
        return loss

    return forward
