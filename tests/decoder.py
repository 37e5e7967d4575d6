"""A small GPT-style decoder for the memory-breakdown tests: pre-norm layers with causal
scaled_dot_product_attention and a GELU MLP, learned token embeddings tied to the output head, and
positions as a registered buffer (so a breakdown has buffers to count)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Layer(torch.nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))

    def forward(self, x):
        b, s, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, s, width))
        return x + self.mlp(self.ln2(x))


class Decoder(torch.nn.Module):
    """`checkpointed`: each layer under torch.utils.checkpoint (use_reentrant=False)."""

    def __init__(self, vocab: int, width: int, heads: int, seq: int, layers: int = 2, checkpointed: bool = False):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.layers = torch.nn.ModuleList(Layer(width, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.register_buffer("positions", torch.randn(seq, width))
        self.checkpointed = checkpointed

    def forward(self, idx):
        x = self.embed(idx) + self.positions[: idx.shape[1]]
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False) if self.checkpointed else layer(x)
        return self.norm(x) @ self.embed.weight.t()


def loss(logits, targets):
    """Cross-entropy in float32 over the vocabulary, as training code computes it under autocast."""
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
