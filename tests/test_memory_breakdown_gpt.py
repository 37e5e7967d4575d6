"""The CPU memory breakdown of a nanoGPT training step (bf16 autocast, AdamW) names its peak.

The step is suites/test_models.py's own (`train_step_call`), on a GPT small enough to step in tens
of milliseconds (bf16 matmuls are slow on a CPU without bf16 units) and short enough that its peak
falls in AdamW's step, where torch's memory-profiler categories left 18.5% of it unnamed at every
batch (single-tensor AdamW's `denom` and `sqrt`, made by one operator and freed after another). Each
step is warmed up (AdamW makes its state at the first) and taken by perfguard's breakdown, as the
runner takes it after sampling, with the real profiler; tests/test_memory_breakdown.py covers the
runner and the plugin around it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "suites"))  # as suites/conftest.py puts it there for the suites

import test_models as suite  # noqa: E402 - suites/test_models.py
from models.gpt2 import GPTConfig  # noqa: E402

SHORT = GPTConfig(block_size=8, vocab_size=128, n_layer=1, n_head=4, n_embd=128)
BATCHES = (4, 8, 16)


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.fixture(scope="module")
def measured():
    """{batch: (MemoryBreakdown, model, optimizer)} for the step at each batch."""
    from perfguard.measure import breakdown
    from perfguard.measure.device import detect

    device = detect("cpu")
    out = {}
    for batch in BATCHES:
        model = suite.gpt(SHORT, "cpu")
        x, y = suite.token_batch(SHORT, batch, SHORT.block_size, "cpu")
        step = suite.train_step_call(model, x, y, torch.bfloat16)
        step()
        (optimizer,) = (c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, torch.optim.Optimizer))
        out[batch] = breakdown.measure(step, device), model, optimizer
    return out


@pytest.mark.parametrize("batch", BATCHES)
def test_under_a_tenth_of_the_peak_is_unnamed_and_what_is_says_why(measured, batch):
    parts, _, _ = measured[batch]
    assert parts.error is None, parts
    assert parts.method == "profiler"
    assert parts.unknown < 0.1 * parts.peak_bytes, parts
    assert (parts.unnamed_reason is None) == (parts.unknown == 0), parts


@pytest.mark.parametrize("batch", BATCHES)
def test_parameters_and_adamw_state_are_numel_times_element_size(measured, batch):
    parts, model, optimizer = measured[batch]
    params = list(model.parameters())  # the tied embedding once
    state = [t for s in optimizer.state.values() for t in s.values()]
    assert parts.parameters == nbytes(params)
    # exp_avg and exp_avg_sq per parameter, and on a CPU a float32 step counter each.
    assert parts.optimizer_state == nbytes(state) == 2 * nbytes(params) + 4 * len(params)
    assert parts.inputs == 2 * batch * SHORT.block_size * 8  # the int64 tokens and their targets


def test_the_peak_falls_in_adamws_step_with_every_gradient_live_and_its_scratch_as_temporaries(measured):
    parts = measured[4][0]
    assert parts.peak_phase == "optimizer" and parts.peak_at == "AdamW"
    assert parts.gradients == parts.parameters
    # Single-tensor AdamW's scratch for its largest matrix (an MLP weight, 128 x 512 float32: 256 KiB).
    assert parts.temporaries >= 128 * 512 * 4


def test_the_activations_grow_with_the_batch(measured):
    activations = [measured[b][0].activations for b in BATCHES]
    assert activations == sorted(activations) and activations[0] < activations[-1]
