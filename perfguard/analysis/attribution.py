"""Bytes at a call's peak by what they hold, from the caching allocator's history of that call.

The torch-facing half (perfguard/measure/allocator_history.py, perfguard/measure/phases.py) runs one call with
the allocator's history on and labels every allocation with the phase it was made in (a sequence
number: "forward GPT.h.0", "backward", "recompute GPT.h.1", "optimizer AdamW"); at some labels it
also notes where known tensors live (parameters, gradients, optimizer state, ...). Each label opens
with a one-byte marker allocation under a marker label, so the trace itself says where every label
began, in the trace's own order. This module walks that trace, plain data in, plain data out:

- a block is one allocation's lifetime, from its `alloc` entry (or from before the call: a block
  of the start snapshot) to the first of its `free_requested` / `free_completed` entries (the
  allocator's `memory_allocated` drops at free_requested; free_completed follows at once, or once
  the other streams that used the block are done with it). Markers are left out.
- the peak is the entry after which the live bytes were largest, entry by entry.
- a block live at the peak is, in this order: an identity, when a capture found one of the tensors
  it notes in the block while the block was live (addresses are reused, so only that lifetime of the
  address counts); activations, when it was made in a forward pass (or a recomputation) and was still
  live when that pass ended; temporaries, when it was made in the call otherwise (freed within its
  forward pass, or made in backward, in the optimizer step, or between them); unknown, when it was
  live before the call and no capture named it. Identities count their tensors' storage bytes; what
  the block holds beyond them (allocator rounding) is unknown.

Imports nothing heavy: tests build traces by hand (tests/test_attribution.py).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from perfguard import units

# The categories a breakdown reports, and the identities among them, strongest claim first: a block
# that holds a parameter is a parameter even when the optimizer's state also points into it.
IDENTITIES = ("parameters", "buffers", "gradients", "optimizer_state", "inputs")
CATEGORIES = (*IDENTITIES, "activations", "temporaries", "unknown")

# The phases a label can carry. "call" is the callable's own code outside the other four.
CALL, FORWARD, RECOMPUTE, BACKWARD, OPTIMIZER = "call", "forward", "recompute", "backward", "optimizer"
PASSES = (FORWARD, RECOMPUTE)  # the phases whose surviving allocations are activations
START = "start"  # the peak's phase when nothing in the call rose above what was live before it

FREES = ("free_requested", "free_completed")
# Why a byte is unknown: the two ways a block live at the peak is tied to nothing the call named.
UNNAMED_BEFORE = "live before the call and holding no parameter, buffer, gradient, optimizer state or input the call used"
UNNAMED_BEYOND = "the allocator's rounding past the tensors held"
PREFIX = "perfguard"


def label_text(token: str, seq: int) -> str:
    """The allocator metadata of label `seq` of the call `token`."""
    return f"{PREFIX} {token} {seq}"


def marker_text(token: str, seq: int) -> str:
    """The metadata of the marker allocation that says where label `seq` begins."""
    return f"{PREFIX} {token} {seq} mark"


def parse(text: Any, token: str) -> tuple[int, bool] | None:
    """(seq, is a marker) of a metadata string of call `token`; None for any other string."""
    parts = text.split(" ") if isinstance(text, str) else ()
    if len(parts) not in (3, 4) or parts[0] != PREFIX or parts[1] != token or not parts[2].isdigit():
        return None
    if len(parts) == 4 and parts[3] != "mark":
        return None
    return int(parts[2]), len(parts) == 4


@dataclasses.dataclass(frozen=True)
class Label:
    """What the call was doing from one label to the next."""

    seq: int
    phase: str  # CALL, FORWARD, RECOMPUTE, BACKWARD or OPTIMIZER
    module: str | None = None  # "GPT.transformer.h.0.attn", an optimizer's class, or None


@dataclasses.dataclass(frozen=True)
class Identity:
    """A tensor's storage, as a capture saw it."""

    kind: str  # one of IDENTITIES
    ptr: int  # the storage's first byte
    nbytes: int


@dataclasses.dataclass(frozen=True)
class Capture:
    """Tensors noted at label `seq` (positioned by its marker): a block is theirs if live there."""

    seq: int
    tensors: tuple[Identity, ...]


@dataclasses.dataclass(frozen=True)
class Attribution:
    """What `attribute` found; `error` set means the figures could not be taken (they are empty)."""

    bytes: dict[str, int]  # category -> bytes live at the peak
    peak_bytes: int = 0
    peak_index: int = -1  # the trace entry that reached the peak; -1: the start
    peak_label: Label | None = None
    peak_frame: str | None = None  # "train.py:88 (forward)": the innermost frame outside the libraries
    error: str | None = None
    # What the `unknown` bytes are: bytes per reason (UNNAMED_BEFORE, UNNAMED_BEYOND) and blocks per reason.
    unnamed: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    @property
    def unnamed_reason(self) -> str | None:
        """Why the unknown bytes could not be named, in a sentence; None when there are none."""
        said = [f"{units.size(n)} in {units.plural(k, 'block')}: {why}"
                for why, (n, k) in sorted(self.unnamed.items(), key=lambda kv: -kv[1][0]) if n]
        return "; ".join(said) or None

    @property
    def peak_phase(self) -> str | None:
        if self.error:
            return None
        return self.peak_label.phase if self.peak_label else START

    @property
    def peak_at(self) -> str | None:
        """The module (or optimizer) and the user's line that made the allocation at the peak; a
        backward's own allocations have no Python line (they are made on the autograd engine's thread)."""
        label = self.peak_label
        module = label.module if label else None
        if module is None and label is not None and label.phase in (FORWARD, RECOMPUTE, BACKWARD):
            module = "outside any module"  # the loss and its backward, say
        return " at ".join(x for x in (module, self.peak_frame) if x) or None


@dataclasses.dataclass
class _Block:
    addr: int
    size: int
    born: int  # trace index of its alloc; -1 for a block live before the call
    seq: int | None  # its label; None for a block from before the call or one made under no label of ours
    died: int | None = None
    claims: dict[int, Identity] = dataclasses.field(default_factory=dict)  # storage ptr -> identity


def attribute(
    entries: Sequence[Mapping[str, Any]],
    start: Iterable[tuple[int, int]],
    labels: Sequence[Label],
    captures: Iterable[Capture],
    token: str,
    max_entries: int | None = None,
    library_dirs: Sequence[str] = (),
) -> Attribution:
    """Walk `entries` (one device's trace) from `start` ((address, bytes) of the blocks live before it).

    `labels[i].seq == i`; `token` names this call's labels among any others in the trace;
    `max_entries` is the history's ring size (a trace that long may have lost its start);
    `library_dirs`: frames under these are skipped when naming the line that reached the peak.
    """
    if not any("user_metadata" in e for e in entries if e.get("action") == "alloc"):
        return Attribution({}, error="the allocator's history carries no labels (no user_metadata in its entries)")
    if max_entries is not None and len(entries) >= max_entries:
        return Attribution({}, error=f"the allocator's history filled its {max_entries:,} entries and lost the call's start")
    spans = _spans(labels)
    by_seq: dict[int, list[Capture]] = {}
    for capture in captures:
        by_seq.setdefault(capture.seq, []).append(capture)

    live: dict[int, _Block] = {}
    for addr, size in start:
        live[addr] = _Block(addr, size, born=-1, seq=None)
    blocks = list(live.values())
    position: dict[int, int] = {}  # label seq -> trace index of its marker
    markers: set[int] = set()  # addresses of live markers
    total = peak = sum(b.size for b in blocks)
    peak_index = -1
    for i, entry in enumerate(entries):
        action, addr = entry.get("action"), entry.get("addr")
        if action == "alloc":
            tag = parse(entry.get("user_metadata"), token)
            if tag and tag[1]:
                markers.add(addr)
                position.setdefault(tag[0], i)
                for capture in by_seq.get(tag[0], ()):
                    _claim(capture, live, position, spans)
                continue
            if addr in live:  # freed where the trace does not say (it cannot be live twice)
                total -= _free(live, addr, i)
            block = _Block(addr, int(entry.get("size") or 0), born=i, seq=tag[0] if tag else None)
            live[addr] = block
            blocks.append(block)
            total += block.size
            if total > peak:
                peak, peak_index = total, i
        elif action in FREES:
            # The first of the two frees counts; the allocator cannot hand the address out again
            # before the second, so a second finds nothing live there.
            if addr in markers:
                markers.discard(addr)
            elif addr in live:
                total -= _free(live, addr, i)
    if 0 not in position:
        return Attribution({}, error="the allocator's history lost the call's start (its first label is not in the trace)")

    ends = _span_ends(labels, spans, position, len(entries))
    parts = dict.fromkeys(CATEGORIES, 0)
    unnamed: dict[str, tuple[int, int]] = {}
    for block in blocks:
        if block.born <= peak_index and (block.died is None or block.died > peak_index):
            for category, nbytes in _classify(block, labels, spans, ends):
                if category in (UNNAMED_BEFORE, UNNAMED_BEYOND):
                    n, k = unnamed.get(category, (0, 0))
                    unnamed[category] = (n + nbytes, k + (nbytes > 0))
                    category = "unknown"
                parts[category] += nbytes
    label = frame = None
    if peak_index >= 0:  # else the peak is what was live before the call
        tag = parse(entries[peak_index].get("user_metadata"), token)
        label = labels[tag[0]] if tag and tag[0] < len(labels) else Label(-1, CALL)
        frame = _user_frame(entries[peak_index].get("frames") or (), library_dirs)
    return Attribution(parts, peak_bytes=peak, peak_index=peak_index, peak_label=label, peak_frame=frame, unnamed=unnamed)


def _free(live: dict[int, _Block], addr: int, i: int) -> int:
    block = live.pop(addr)
    block.died = i
    return block.size


def _spans(labels: Sequence[Label]) -> dict[int, tuple[int, int]]:
    """For each label of a forward pass or a recomputation: (its run's first seq, the seq after its run)."""
    out: dict[int, tuple[int, int]] = {}
    i = 0
    while i < len(labels):
        j = i
        if labels[i].phase in PASSES:
            while j + 1 < len(labels) and labels[j + 1].phase == labels[i].phase:
                j += 1
            for k in range(i, j + 1):
                out[labels[k].seq] = (labels[i].seq, labels[j].seq + 1)
        i = j + 1
    return out


def _span_ends(labels: Sequence[Label], spans: dict[int, tuple[int, int]], position: dict[int, int],
               length: int) -> dict[int, int]:
    """The trace index at which each run ended: the marker of the first later label the trace holds."""
    ends = {}
    for _, after in set(spans.values()):
        ends[after] = next((position[s] for s in range(after, len(labels)) if s in position), length)
    return ends


def _claim(capture: Capture, live: dict[int, _Block], position: dict[int, int], spans: dict[int, tuple[int, int]]) -> None:
    """Mark the live blocks holding the capture's tensors. An input must predate its forward pass: the
    tensors an outermost module gets are the data only when the pass did not make them (a loss module
    called on the model's logits gets an activation)."""
    addrs = sorted(live)
    for identity in capture.tensors:
        block = live.get(identity.ptr)
        if block is None:
            k = bisect.bisect_right(addrs, identity.ptr) - 1
            block = live[addrs[k]] if k >= 0 and identity.ptr < addrs[k] + live[addrs[k]].size else None
        if block is None:
            continue
        if identity.kind == "inputs":
            first = spans.get(capture.seq, (capture.seq, 0))[0]
            if block.born >= position.get(first, block.born + 1):
                continue
        held = block.claims.get(identity.ptr)
        if held is None or IDENTITIES.index(identity.kind) < IDENTITIES.index(held.kind):
            block.claims[identity.ptr] = identity


def _classify(block: _Block, labels: Sequence[Label], spans: dict[int, tuple[int, int]],
              ends: dict[int, int]) -> list[tuple[str, int]]:
    if block.claims:
        out, left = [], block.size
        for identity in sorted(block.claims.values(), key=lambda t: IDENTITIES.index(t.kind)):
            nbytes = min(identity.nbytes, left)
            out.append((identity.kind, nbytes))
            left -= nbytes
        return [*out, (UNNAMED_BEYOND, left)]
    if block.born < 0:
        return [(UNNAMED_BEFORE, block.size)]
    span = spans.get(block.seq) if block.seq is not None and block.seq < len(labels) else None
    if span is None:
        return [("temporaries", block.size)]
    end = ends[span[1]]
    outlived = block.died is None or block.died >= end
    return [("activations" if outlived else "temporaries", block.size)]


def _user_frame(frames: Sequence[Mapping[str, Any]], library_dirs: Sequence[str]) -> str | None:
    """The innermost frame (frames come innermost first) whose file is not under `library_dirs`."""
    for frame in frames:
        filename = str(frame.get("filename", ""))
        if not filename or any(filename.startswith(d) for d in library_dirs):
            continue
        name = filename.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{name}:{frame.get('line', '?')} ({frame.get('name', '?')})"
    return None
