"""The phase labels and the walk together, on a real training step on the CPU.

CUDA's allocator history is not there on a CPU, so the profiler's allocation events stand in for it:
every CPU allocation and free of the call in order, each allocation labelled with the label in force
(the tracker's marker allocations, of a size nothing else asks for, say where each label begins).
The step is the GPU test's (tests/test_memory_breakdown_gpu.py) in miniature: a two-layer decoder
(tests/decoder.py) under bf16 autocast with SDPA, AdamW (foreach), gradient accumulation, activation
checkpointing.
"""

from __future__ import annotations

import pytest
import torch
from decoder import Decoder, loss
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile

from perfguard.analysis.attribution import attribute, label_text, marker_text
from perfguard.measure.phases import PhaseTracker

MARKER_BYTES = 1237  # no tensor of the step has this many bytes
VOCAB, WIDTH, HEADS, SEQ = 96, 32, 4, 16


def training(batch, checkpointed=False, micro_batches=1):
    torch.manual_seed(0)
    model = Decoder(VOCAB, WIDTH, HEADS, SEQ, checkpointed=checkpointed)
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    data = [(torch.randint(0, VOCAB, (batch, SEQ)), torch.randint(0, VOCAB, (batch, SEQ))) for _ in range(micro_batches)]

    def step():
        for idx, targets in data:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(idx)
            loss(logits, targets).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    return model, opt, data, step


def labelled_call(step, live_before):
    """Run `step` under the tracker and the profiler; the walk's result."""
    current = [""]

    def marker():
        torch.empty(MARKER_BYTES, dtype=torch.uint8)

    tracker = PhaseTracker(lambda text: current.__setitem__(0, text), marker, torch.device("cpu"))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof, tracker:
        step()
    events = []

    def visit(event):
        if event.tag == _EventType.Allocation and event.extra_fields.device.type == "cpu":
            events.append((event.start_time_ns, len(events), event.extra_fields.ptr, event.extra_fields.alloc_size))
        for child in event.children:
            visit(child)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        visit(root)
    entries, seq, born = [], -1, set()
    for _, _, ptr, size in sorted(events):
        if size == MARKER_BYTES:
            seq += 1
            born.add(ptr)
            entries.append({"action": "alloc", "addr": ptr, "size": size, "user_metadata": marker_text(tracker.token, seq)})
        elif size > 0:
            born.add(ptr)
            entries.append({"action": "alloc", "addr": ptr, "size": size, "user_metadata": label_text(tracker.token, seq)})
        else:
            entries.append({"action": "free_requested", "addr": ptr, "size": -size})
    start = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in live_before}
    # What the profiler saw freed but never made was live before the call too.
    start.update({e["addr"]: e["size"] for e in entries if e["action"] == "free_requested" and e["addr"] not in born})
    return attribute(entries, start.items(), tracker.labels, tracker.captures, tracker.token), tracker


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def measured(batch, **kw):
    model, opt, data, step = training(batch, **kw)
    state = [t for s in opt.state.values() for t in s.values()]
    live = [*model.parameters(), *model.buffers(), *state, *(t for pair in data for t in pair)]
    result, _ = labelled_call(step, live)
    assert result.error is None, result.error
    return result, model, state


@pytest.mark.parametrize("variant", [{}, {"checkpointed": True}, {"micro_batches": 3}],
                         ids=["plain", "checkpointed", "accumulated"])
def test_a_decoder_step_is_named_to_nine_tenths_with_exact_parameters_buffers_and_state(variant):
    result, model, state = measured(batch=8, **variant)
    parts = result.bytes
    assert parts["unknown"] <= 0.1 * result.peak_bytes, parts
    assert parts["parameters"] == nbytes(model.parameters())
    assert parts["buffers"] == nbytes(model.buffers())
    assert parts["optimizer_state"] == nbytes(state)  # exp_avg, exp_avg_sq and the step counters
    assert parts["activations"] > 0
    assert result.peak_phase in ("forward", "backward", "recompute", "optimizer"), result.peak_label
    if result.peak_phase == "optimizer":
        assert parts["gradients"] == nbytes(model.parameters())
    assert parts["gradients"] <= nbytes(model.parameters())


def test_the_activations_grow_with_the_batch():
    small, large = (measured(batch=b)[0].bytes["activations"] for b in (4, 32))
    assert large > 4 * small
