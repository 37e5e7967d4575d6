"""suites/test_models.py and its models (suites/models/), at a tiny size on a CPU, through the suite's
own step functions; and the suite as a user collects and runs it on a machine without a GPU."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "suites"))  # as suites/conftest.py puts it there for the suites

import test_models as suite  # noqa: E402 - suites/test_models.py
from models.gpt2 import GPT, GPTConfig  # noqa: E402
from models.resnet import ResNet, macs, resnet50  # noqa: E402

TINY = GPTConfig(block_size=32, vocab_size=128, n_layer=2, n_head=4, n_embd=64)
BATCH, SEQ = 4, 32


@pytest.fixture
def tiny():
    return suite.gpt(TINY, "cpu")


@pytest.fixture
def tokens():
    return suite.token_batch(TINY, BATCH, SEQ, "cpu")


def test_the_forward_gives_logits_for_every_position_and_a_loss_only_with_targets(tiny, tokens):
    x, y = tokens
    logits, loss = tiny(x)
    assert logits.shape == (BATCH, SEQ, TINY.vocab_size) and loss is None
    _, loss = tiny(x, y)
    assert loss.shape == ()


def test_the_loss_at_initialisation_is_that_of_a_uniform_guess(tiny, tokens):
    _, loss = tiny(*tokens)
    assert loss.item() == pytest.approx(math.log(TINY.vocab_size), abs=0.1)


def test_the_token_embedding_and_the_output_layer_are_one_tensor(tiny):
    assert tiny.lm_head.weight is tiny.transformer.wte.weight
    n_embd, vocab = TINY.n_embd, TINY.vocab_size
    per_block = 12 * n_embd**2 + 13 * n_embd  # qkv, projection, MLP weights and biases, two LayerNorms
    embeddings = vocab * n_embd + TINY.block_size * n_embd  # the tied matrix counted once
    assert tiny.get_num_params(non_embedding=False) == TINY.n_layer * per_block + 2 * n_embd + embeddings


def test_gpt2_small_has_nanogpts_parameter_count():
    # nanoGPT prints "number of parameters: 123.69M" for GPT-2 small with the padded vocabulary.
    assert suite.num_params(suite.GPT2_SMALL) == 123_689_472


def test_the_training_flops_are_three_forwards_and_follow_nanogpts_formula():
    n, cfg = 123_689_472, suite.GPT2_SMALL
    assert suite.gpt_flops(8, 1024, passes=3) == (6 * n + 12 * cfg.n_layer * cfg.n_embd * 1024) * 8 * 1024
    assert suite.gpt_flops(8, 1024, passes=3) == 3 * suite.gpt_flops(8, 1024, passes=1)


def test_weight_decay_applies_to_the_matrices_only(tiny):
    groups = tiny.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cpu").param_groups
    decayed, plain = (g["params"] for g in groups)
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert all(p.dim() == 2 for p in decayed) and all(p.dim() == 1 for p in plain)
    # wte (= lm_head), wpe, and four weight matrices a block
    assert len(decayed) == 2 + 4 * TINY.n_layer
    assert sum(p.numel() for p in decayed + plain) == tiny.get_num_params(non_embedding=False)


def test_one_training_step_lowers_the_loss_on_the_same_batch(tiny, tokens):
    before = [p.detach().clone() for p in tiny.parameters()]
    step = suite.train_step_call(tiny, *tokens, torch.float32)
    first, second = step(), step()
    assert second < first
    assert all(not torch.equal(p, q) for p, q in zip(before, tiny.parameters()))
    assert all(p.grad is None for p in tiny.parameters())  # freed at the end of the step


def test_the_inference_forward_runs_without_autograd_in_eval_mode(tiny, tokens):
    logits = suite.forward_call(tiny, tokens[0], torch.bfloat16)()
    assert not tiny.training and not logits.requires_grad
    assert logits.shape == (BATCH, SEQ, TINY.vocab_size) and logits.dtype == torch.bfloat16


def test_the_forward_check_wants_finite_logits_of_the_padded_vocabulary():
    logits = torch.zeros(1, 2, suite.GPT2_SMALL.vocab_size, dtype=torch.bfloat16)
    suite._check_logits(logits, batch=1, seq=2)
    with pytest.raises(AssertionError, match="shape"):
        suite._check_logits(logits[..., :50257], batch=1, seq=2)
    logits[0, 1, 7] = float("nan")
    with pytest.raises(AssertionError, match="nan"):
        suite._check_logits(logits, batch=1, seq=2)


def test_a_tiny_resnet_classifies_a_batch():
    torch.manual_seed(0)
    model = ResNet(layers=(1, 1, 1, 1), num_classes=10, width=8)
    out = suite.resnet_forward_call(model, torch.randn(2, 3, 32, 32), torch.float32)()
    assert out.shape == (2, 10) and out.isfinite().all()


def test_resnet_macs_count_every_convolution_and_the_classifier():
    with torch.device("meta"):
        model = resnet50()
    assert sum(p.numel() for p in model.parameters()) == 25_557_032  # torchvision's ResNet-50
    counted = []

    def count(module, inputs, out):
        fan_in = module.in_features if isinstance(module, torch.nn.Linear) else module.weight[0].numel()
        counted.append(out.numel() * fan_in)

    for m in model.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            m.register_forward_hook(count)
    model(torch.empty(1, 3, 224, 224, device="meta"))
    assert sum(counted) == macs() == 4_089_184_256


def test_the_model_suite_collects_on_a_cpu_and_skips_there_with_a_reason(run_pytest, tmp_path):
    out = run_pytest(ROOT, "--perfguard", "-v", "-rs", f"--perfguard-report={tmp_path}", "suites/test_models.py")
    assert out.ret == 0, "\n".join(out.outlines[-30:] + out.errlines[-30:])
    skipped = [line.split("::")[1].split()[0] for line in out.outlines if " SKIPPED " in line]
    assert skipped == [
        "gpt2_forward[batch=1-seq=1024-dtype=bfloat16]",
        "gpt2_forward[batch=32-seq=1024-dtype=bfloat16]",
        "gpt2_train_step[batch=4-seq=1024-dtype=bfloat16]",
        "gpt2_train_step[batch=8-seq=1024-dtype=bfloat16]",
        "gpt2_train_step[batch=16-seq=1024-dtype=bfloat16]",
        "resnet50_forward[batch=1-image=224-dtype=bfloat16]",
        "resnet50_forward[batch=64-image=224-dtype=bfloat16]",
    ]
    assert "7 skipped" in out.outlines[-1]
    assert "gpt2_train_step[batch=16-seq=1024-dtype=bfloat16] runs on cuda only, this is cpu" in str(out.stdout)
