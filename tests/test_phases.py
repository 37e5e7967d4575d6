"""The phase labels of one training step (perfguard/measure/phases.py), on the CPU.

The tracker's `set_label` is a list here instead of torch.cuda.memory._set_memory_metadata: the
step is a small residual net under bf16 autocast, AdamW (foreach), activation checkpointing
(use_reentrant=False) on one variant and gradient accumulation over two micro-batches.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from perfguard.analysis.attribution import label_text, marker_text, parse
from perfguard.measure.phases import PhaseTracker

WIDTH = 16


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(WIDTH)
        self.fc = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return x + self.fc(self.ln(x))


class Net(torch.nn.Module):
    def __init__(self, checkpointed: bool):
        super().__init__()
        self.inp = torch.nn.Linear(WIDTH, WIDTH)
        self.blocks = torch.nn.ModuleList([Block(), Block()])
        self.head = torch.nn.Linear(WIDTH, 4)
        self.register_buffer("scale", torch.ones(WIDTH))
        self.checkpointed = checkpointed

    def forward(self, x):
        x = self.inp(x) * self.scale
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointed else block(x)
        return self.head(x)


def training(checkpointed: bool, micro_batches: int = 2):
    torch.manual_seed(0)
    model = Net(checkpointed)
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    data = [(torch.randn(8, WIDTH), torch.randint(0, 4, (8,))) for _ in range(micro_batches)]

    def step():
        for x, y in data:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x)
            F.cross_entropy(logits.float(), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # Adam's state exists from here on, as in the call perfguard measures
    return model, opt, data, step


class Sink:
    def __init__(self):
        self.texts: list[str] = []
        self.markers = 0

    def set_label(self, text):
        self.texts.append(text)

    def marker(self):
        self.markers += 1


def tracked(step, sink=None):
    sink = sink or Sink()
    with PhaseTracker(sink.set_label, sink.marker, torch.device("cpu")) as tracker:
        step()
    return tracker, sink


def phases(tracker) -> list[str]:
    return [phase for phase, _ in itertools.groupby(label.phase for label in tracker.labels)]


def storages(tensors) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors}


def captured(tracker, kind) -> list:
    return [i for c in tracker.captures for i in c.tensors if i.kind == kind]


def test_a_step_with_gradient_accumulation_goes_forward_backward_twice_then_the_optimizer():
    tracker, _ = tracked(training(checkpointed=False)[3])
    assert phases(tracker) == ["call", "forward", "backward", "call", "forward", "backward", "call", "optimizer", "call"]
    assert [label.seq for label in tracker.labels] == list(range(len(tracker.labels)))


def test_forward_names_each_module_from_its_root_and_backward_reaches_them_in_reverse():
    tracker, _ = tracked(training(checkpointed=False)[3])
    first = list(itertools.takewhile(lambda label: label.phase != "backward", tracker.labels))
    modules = [label.module for label in first if label.phase == "forward"]
    assert modules[:5] == ["Net", "Net.inp", "Net", "Net.blocks.0", "Net.blocks.0.ln"]
    assert modules[-2:] == ["Net", None]  # back in Net after its head, then the loss outside any module
    backward = [label.module for label in tracker.labels if label.phase == "backward"]
    assert backward.index("Net.head") < backward.index("Net.blocks.1") < backward.index("Net.blocks.0")
    assert tracker.labels[-2] == tracker.labels[-2].__class__(len(tracker.labels) - 2, "call", None)  # after the step


def test_a_checkpointed_block_is_recomputed_inside_backward_under_recompute_labels():
    tracker, _ = tracked(training(checkpointed=True)[3])
    assert phases(tracker)[:8] == ["call", "forward", "backward", "recompute", "backward", "recompute", "backward", "call"]
    recomputed = [label.module for label in tracker.labels if label.phase == "recompute"]
    assert recomputed.index("Net.blocks.1") < recomputed.index("Net.blocks.0")
    assert "Net.head" not in recomputed and "Net" not in recomputed


def test_every_label_is_preceded_by_its_marker_and_the_allocator_is_left_unlabelled():
    tracker, sink = tracked(training(checkpointed=True)[3])
    n = len(tracker.labels)
    assert sink.markers == n
    expected = [text for s in range(n) for text in (marker_text(tracker.token, s), label_text(tracker.token, s))]
    # Backward sets the label in force again from its first node (a thread of its own on CUDA).
    assert [text for text, _ in itertools.groupby(sink.texts)] == [*expected, ""]
    assert len(sink.texts) > len(expected) + 1


def test_the_captures_name_parameters_buffers_inputs_gradients_and_adam_state_exactly():
    model, opt, data, step = training(checkpointed=False)
    grads_seen = {}
    opt.register_step_pre_hook(lambda o, *_: grads_seen.update(g=[p.grad for p in model.parameters()]))
    tracker, _ = tracked(step)
    params = list(model.parameters())
    assert storages(p for p in params) <= {i.ptr for i in captured(tracker, "parameters")}
    assert sum(i.nbytes for i in set(captured(tracker, "parameters"))) == sum(p.numel() * p.element_size() for p in params)
    assert {i.ptr for i in captured(tracker, "buffers")} == storages([model.scale])
    assert {i.ptr for i in captured(tracker, "inputs")} == storages(x for x, _ in data)  # not the logits
    assert {i.ptr for i in captured(tracker, "gradients")} == storages(grads_seen["g"])
    state = [t for s in opt.state.values() for t in s.values()]
    assert {i.ptr for i in captured(tracker, "optimizer_state")} == storages(state)


def global_hooks():
    from torch.nn.modules import module
    from torch.optim import optimizer

    return (dict(module._global_forward_pre_hooks), dict(module._global_forward_hooks),
            dict(optimizer._global_optimizer_pre_hooks), dict(optimizer._global_optimizer_post_hooks),
            torch.autograd.backward, torch.autograd.grad)


def test_after_the_call_no_hook_is_left_and_a_later_step_labels_nothing():
    before = global_hooks()
    _, _, _, step = training(checkpointed=True)
    tracker, sink = tracked(step)
    assert global_hooks() == before
    labels, texts = len(tracker.labels), len(sink.texts)
    step()
    assert len(tracker.labels) == labels and len(sink.texts) == texts


def test_a_call_that_raises_leaves_no_hook_either():
    before = global_hooks()
    model, _, data, _ = training(checkpointed=False)

    def broken():
        model(data[0][0]).sum().backward()
        raise RuntimeError("the step failed")

    sink = Sink()
    with pytest.raises(RuntimeError, match="the step failed"):
        tracked(broken, sink)
    assert global_hooks() == before and sink.texts[-1] == ""


def test_a_step_without_modules_or_optimizer_still_has_its_gradients_and_parameters_noted():
    weight = torch.nn.Parameter(torch.randn(64, 64))
    plain = torch.randn(64, requires_grad=True)

    def step():
        ((weight @ plain).square().sum()).backward()

    tracker, _ = tracked(step)
    assert {i.ptr for i in captured(tracker, "gradients")} == storages([weight.grad, plain.grad])
    assert {i.ptr for i in captured(tracker, "parameters")} == storages([weight])  # an nn.Parameter; `plain` is not
