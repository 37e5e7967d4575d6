"""The allocator-history walk (perfguard/analysis/attribution.py) on traces built by hand.

Each trace is what perfguard/measure/phases.py makes the allocator record: a marker allocation under
a marker label at every label, allocations under the label in force, and captures of known tensors
at some labels. Addresses are small integers; sizes are bytes.
"""

from __future__ import annotations

import pytest

from perfguard.analysis.attribution import (
    CATEGORIES,
    Capture,
    Identity,
    Label,
    attribute,
    label_text,
    marker_text,
    parse,
)

TOKEN = "t1"
MARK = 1  # where every marker lands: the allocator hands the freed byte back each time
TORCH = "/site/torch/"


class Trace:
    """A call's trace as the hooks would leave it."""

    def __init__(self, start=()):
        self.start = list(start)  # (address, bytes) live before the call
        self.entries: list[dict] = []
        self.labels: list[Label] = []
        self.captures: list[Capture] = []
        self.current = ""
        self.label("call")

    def label(self, phase, module=None, **tensors):
        seq = len(self.labels)
        self.labels.append(Label(seq, phase, module))
        self.entries.append({"action": "alloc", "addr": MARK, "size": 1, "user_metadata": marker_text(TOKEN, seq)})
        self._free(MARK, marker_text(TOKEN, seq))
        self.current = label_text(TOKEN, seq)
        found = tuple(Identity(kind, ptr, nbytes) for kind, pairs in tensors.items() for ptr, nbytes in pairs)
        if found:
            self.captures.append(Capture(seq, found))
        return seq

    def alloc(self, addr, size, frames=None):
        entry = {"action": "alloc", "addr": addr, "size": size, "user_metadata": self.current, "stream": 0}
        if frames is not None:
            entry["frames"] = frames
        self.entries.append(entry)

    def free(self, *addrs):
        for addr in addrs:
            self._free(addr, self.current)

    def _free(self, addr, meta):
        for action in ("free_requested", "free_completed"):
            self.entries.append({"action": action, "addr": addr, "size": 0, "user_metadata": meta})

    def walk(self, **kw):
        return attribute(self.entries, self.start, self.labels, self.captures, TOKEN, **kw)


def named(result) -> dict[str, int]:
    assert result.error is None, result.error
    return {k: v for k, v in result.bytes.items() if v}


def step(trace, batch=1):
    """Linear model: forward keeps one activation per batch unit, backward makes gradients, Adam steps.

    Parameters at 100 (400 B) and Adam state at 200, 300 (400 B each) live before the call.
    """
    trace.label("forward", "Net", parameters=[(100, 400)], inputs=[(50, 64 * batch)])
    trace.alloc(1000, 1000 * batch)  # the hidden activation, saved for backward
    trace.alloc(2000, 500 * batch)  # a temporary of the forward
    trace.free(2000)
    trace.label("forward", None)
    trace.alloc(3000, 8)  # the loss
    trace.label("backward")
    trace.alloc(4000, 300 * batch)  # the gradient flowing back
    trace.label("backward", "Net")
    trace.alloc(5000, 400)  # the parameter's gradient
    trace.free(4000, 1000, 3000)
    trace.label("call")
    trace.label("optimizer", "Adam", gradients=[(5000, 400)])
    trace.alloc(6000, 400)  # a foreach intermediate
    trace.free(6000)
    trace.label("call", optimizer_state=[(200, 400), (300, 400)])
    trace.free(5000)  # zero_grad(set_to_none=True)


def test_a_training_step_splits_its_peak_into_parameters_state_activations_gradients_and_temporaries():
    trace = Trace(start=[(100, 400), (200, 400), (300, 400), (50, 64)])
    step(trace)
    result = trace.walk()
    # The peak: the gradient of the parameter made while the activation and flowing gradient live.
    assert named(result) == {"parameters": 400, "optimizer_state": 800, "inputs": 64, "activations": 1008,
                             "gradients": 400, "temporaries": 300}
    assert result.peak_bytes == sum(result.bytes.values()) == 400 + 800 + 64 + 1008 + 400 + 300
    assert result.peak_phase == "backward" and result.peak_at == "Net"


def test_a_block_freed_before_its_forward_pass_ends_is_a_temporary_and_one_that_outlives_it_an_activation():
    trace = Trace()
    trace.label("forward", "Net")
    trace.alloc(10, 4000)  # the widest temporary, freed inside the pass: the peak
    trace.alloc(20, 100)  # kept for backward
    trace.free(10)
    trace.label("backward")
    trace.free(20)
    assert named(trace.walk()) == {"temporaries": 4000, "activations": 100}
    trace = Trace()
    trace.label("forward", "Net")
    trace.alloc(20, 100)
    trace.alloc(10, 4000)
    trace.label("backward")  # 10 outlives the pass: an activation, though backward frees it first
    trace.free(10, 20)
    assert named(trace.walk()) == {"activations": 4100}


def reused(optimizer_scratch: int) -> Trace:
    """An activation at 7000 freed in backward, whose address a gradient takes before the step."""
    trace = Trace(start=[(100, 400)])
    trace.label("forward", "Net", parameters=[(100, 400)])
    trace.alloc(7000, 400)
    trace.alloc(8000, 2000)
    trace.label("backward")
    trace.free(8000, 7000)
    trace.alloc(7000, 400)
    trace.label("optimizer", "SGD", gradients=[(7000, 400)])
    trace.alloc(9000, optimizer_scratch)
    trace.free(9000)
    trace.label("call")
    return trace


def test_an_address_counts_as_what_it_held_at_the_peak_when_a_gradient_reuses_it():
    at_forward = reused(optimizer_scratch=10).walk()
    assert named(at_forward) == {"parameters": 400, "activations": 2400}
    assert at_forward.peak_phase == "forward" and at_forward.peak_at == "Net"
    at_step = reused(optimizer_scratch=5000).walk()
    assert named(at_step) == {"parameters": 400, "gradients": 400, "temporaries": 5000}
    assert at_step.peak_phase == "optimizer" and at_step.peak_at == "SGD"


def test_a_gradient_is_a_gradient_over_its_whole_life_when_a_capture_sees_it_live():
    # With set_to_none=False the gradient lives across calls; the capture at the step claims its
    # block, which was live before the call.
    trace = Trace(start=[(100, 400), (5000, 400)])
    trace.label("forward", "Net", parameters=[(100, 400)])
    trace.alloc(1000, 50)
    trace.label("backward")
    trace.free(1000)
    trace.label("optimizer", "SGD", gradients=[(5000, 400)])
    trace.label("call")
    assert named(trace.walk()) == {"parameters": 400, "gradients": 400, "activations": 50}


def test_with_gradient_accumulation_the_gradients_made_in_the_first_backward_count_at_a_later_peak():
    trace = Trace(start=[(100, 400)])
    for micro in range(4):
        trace.label("forward", "Net", parameters=[(100, 400)] if micro == 0 else [])
        trace.alloc(1000, 1000)  # each micro-batch's activation, at the same address every time
        trace.label("backward")
        trace.alloc(4000, 300 + micro)  # the flowing gradient, a little wider each time: the last peak wins
        if micro == 0:
            trace.alloc(5000, 400)  # the accumulated gradient, made once
        trace.free(4000, 1000)
        trace.label("call")
    trace.label("optimizer", "SGD", gradients=[(5000, 400)])
    trace.label("call")
    trace.free(5000)
    result = trace.walk()
    assert named(result) == {"parameters": 400, "gradients": 400, "activations": 1000, "temporaries": 303}
    assert result.peak_phase == "backward"


def test_a_recomputation_keeps_what_backward_needs_as_activations_and_the_rest_as_temporaries():
    trace = Trace()
    trace.label("forward", "Net")
    trace.alloc(10, 64)  # the checkpoint's input, saved
    trace.alloc(20, 256)  # the block's inner activation, not saved under a checkpoint
    trace.free(20)
    trace.label("backward")
    trace.label("backward", "Net.block")
    trace.label("recompute", "Net.block")
    trace.alloc(30, 256)  # recomputed and kept for the block's backward
    trace.alloc(40, 100)  # recomputed scratch
    trace.free(40)
    trace.label("recompute", "Net.block.inner")
    trace.alloc(50, 128)
    trace.label("backward", "Net.block")  # the recomputation ends here
    trace.alloc(60, 100)  # the block's backward
    trace.free(30, 50, 60, 10)
    result = trace.walk()
    assert named(result) == {"activations": 64 + 256 + 128, "temporaries": 100}
    assert result.peak_phase == "backward" and result.peak_at == "Net.block"


def test_a_block_live_before_the_call_that_no_capture_names_is_unknown_and_so_is_rounding():
    trace = Trace(start=[(100, 512), (900, 32)])  # a 400-byte parameter in a 512-byte block; a stray scalar
    trace.label("forward", "Net", parameters=[(100, 400)])
    trace.alloc(1000, 10)
    trace.label("backward")
    trace.free(1000)
    result = trace.walk()
    assert named(result) == {"parameters": 400, "unknown": 112 + 32, "activations": 10}
    assert result.unnamed_reason == (
        "112 B in 1 block: the allocator's rounding past the tensors held; "
        "32 B in 1 block: live before the call and holding no parameter, buffer, gradient, optimizer state or input the call used")


def test_a_peak_named_in_full_has_no_unnamed_reason():
    trace = Trace(start=[(100, 400), (200, 400), (300, 400), (50, 64)])
    step(trace)
    result = trace.walk()
    assert result.bytes["unknown"] == 0 and result.unnamed_reason is None


def test_markers_count_toward_no_category():
    trace = Trace()
    for _ in range(50):
        trace.label("forward", "Net")
    result = trace.walk()
    assert named(result) == {} and result.peak_bytes == 0 and result.peak_phase == "start"


def test_only_the_inputs_that_predate_the_forward_pass_are_inputs():
    trace = Trace()
    trace.alloc(50, 64)  # the batch, made by the call
    trace.label("forward", "Net", inputs=[(50, 64)])
    trace.alloc(1000, 256)  # logits
    trace.label("forward", None)
    trace.label("forward", "CrossEntropyLoss", inputs=[(1000, 256)])  # a loss module, an outermost call too
    trace.alloc(2000, 8)
    trace.label("backward")
    trace.free(1000, 2000, 50)
    assert named(trace.walk()) == {"inputs": 64, "activations": 264}


def test_the_peak_names_the_innermost_frame_outside_the_libraries():
    trace = Trace()
    trace.label("forward", "GPT.h.0.mlp")
    frames = [{"filename": TORCH + "nn/functional.py", "line": 2000, "name": "gelu"},
              {"filename": "/home/me/model.py", "line": 57, "name": "forward"},
              {"filename": "/home/me/train.py", "line": 9, "name": "step"}]
    trace.alloc(10, 100, frames=frames)
    result = trace.walk(library_dirs=(TORCH,))
    assert result.peak_at == "GPT.h.0.mlp at model.py:57 (forward)"
    assert result.peak_label == Label(1, "forward", "GPT.h.0.mlp")


def test_a_free_is_counted_once_whether_the_trace_holds_its_request_its_completion_or_both():
    for actions in (("free_requested",), ("free_completed",), ("free_requested", "free_completed")):
        trace = Trace()
        trace.label("forward", "Net")
        trace.alloc(10, 100)
        trace.entries += [{"action": a, "addr": 10, "size": 100, "user_metadata": trace.current} for a in actions]
        trace.alloc(10, 100)  # the address again, after its free
        trace.alloc(20, 50)
        trace.label("backward")
        result = trace.walk()
        assert result.peak_bytes == 150 and named(result) == {"activations": 150}, actions


def test_allocations_under_another_calls_labels_are_temporaries_of_this_one():
    trace = Trace()
    trace.label("forward", "Net")
    trace.entries.append({"action": "alloc", "addr": 10, "size": 100, "user_metadata": label_text("old", 3)})
    trace.entries.append({"action": "alloc", "addr": 20, "size": 100, "user_metadata": ""})
    trace.label("backward")
    result = trace.walk()
    assert named(result) == {"temporaries": 200}
    assert result.peak_phase == "call"


def test_a_trace_that_lost_its_start_or_filled_its_ring_is_an_error_not_a_figure():
    trace = Trace(start=[(100, 400)])
    step(trace)
    truncated = attribute(trace.entries[5:], trace.start, trace.labels, trace.captures, TOKEN)
    assert truncated.error and "lost the call's start" in truncated.error and truncated.bytes == {}
    full = trace.walk(max_entries=len(trace.entries))
    assert full.error and f"{len(trace.entries):,} entries" in full.error
    assert full.peak_phase is None and full.peak_at is None


def test_a_trace_without_labels_says_so():
    entries = [{"action": "alloc", "addr": 10, "size": 100}]
    assert "no labels" in attribute(entries, [], [Label(0, "call")], [], TOKEN).error


@pytest.mark.parametrize("entry", [{}, {"action": "alloc"}, {"action": "segment_alloc", "addr": 5, "size": 10},
                                   {"action": "oom", "device_free": 0, "size": 10}, {"action": "free_requested", "addr": 77}])
def test_entries_the_walk_does_not_expect_do_not_break_it(entry):
    trace = Trace()
    trace.label("forward", "Net")
    trace.alloc(10, 100)
    trace.entries.append(entry)
    trace.label("backward")
    result = trace.walk()
    assert result.error is None and set(result.bytes) == set(CATEGORIES)


def test_a_peak_outside_any_module_says_so_and_names_the_users_line_when_there_is_one():
    trace = Trace()
    trace.label("forward", "Net")
    trace.alloc(10, 100)
    trace.label("forward", None)
    trace.alloc(20, 400, frames=[{"filename": "/home/me/train.py", "line": 88, "name": "step"}])  # logits.float()
    trace.label("backward")
    trace.free(10)
    assert trace.walk().peak_at == "outside any module at train.py:88 (step)"
    trace.alloc(30, 1000)  # the loss's backward, on the engine's thread: no Python frame
    assert trace.walk().peak_at == "outside any module"


def test_labels_round_trip_and_other_strings_are_not_ours():
    assert parse(label_text(TOKEN, 12), TOKEN) == (12, False)
    assert parse(marker_text(TOKEN, 12), TOKEN) == (12, True)
    for other in (label_text("other", 1), "", None, "perfguard t1 x", "perfguard t1 3 more", 7):
        assert parse(other, TOKEN) is None


def test_an_address_allocated_again_without_a_free_in_between_ends_its_first_block():
    trace = Trace()
    trace.label("forward", "Net")
    trace.alloc(10, 100)
    trace.alloc(10, 300)  # the trace lost the free of the first
    trace.label("backward")
    result = trace.walk()
    assert result.peak_bytes == 300 and named(result) == {"activations": 300}
