"""What moved behind a time verdict (issue 45): which kernels, or ATen operators, the change came from.

The counting pass keeps where each call's time went (model.TimeSplit, measure/counters.py): the GPU's time
by kernel, and for a host-bound call the host's by ATen operator, each the median over the pass's calls.
A verdict whose time moved (regressed, improved, unstable) gets both sides' splits row by row
(model.Where), the row that moved most first. A row moved beyond its noise where it moved the way the
whole split moved, and away from where the rows' typical scaling would put it (every row slower alike
is a slower process, not a culprit) by more than its kind's NOISE_PCT of its time, its FLOOR, and the
verdict's tolerance of its time: a kernel's time per call jumps about 4% between processes (docs/gate.md,
busy time's noise), an operator's self time on the host about 15% (the 90th percentile of 430 rows of
nanoGPT's forward and training step, unchanged, three processes against a baseline's, on a 2-vCPU Xeon,
2026-12-07; half of them moved 6-7%). The tolerance is the case's whole time's noise between runs, and a
row moves at least as much as its case: where one row made a change past the tolerance T, that row moved
by T / (its share of the time) > T, so the rule hides no sole culprit of a change the gate can see. It
keeps a noisy host's operators from being named: on an H100's host, nanoGPT's forward's caller time moved
±38% between unchanged processes (tolerance ±111%), and its operators 20-50% (2026-12-07). A row that
ran on one side only (a kernel that appeared, or vanished) moved where its time is past FLOOR_MS. Where
no row moved so, the change is spread over the rows, and the words say so rather than name a culprit.

Memory that moved (`peak_memory`, `footprint`) is broken down the same way by what the bytes at a
call's peak hold (parameters, gradients, optimizer state, activations, temporaries, inputs, unknown:
model.MemoryBreakdown), where both sides took the breakdown (`memory_breakdown=True`); else by the
operator that allocated them (model.ByteSplit: the bytes a call allocates, by the outermost ATen
operator that asked for them). The bytes are deterministic: a row moved where it moved by more than its
FLOOR, the allocator's rounding.

An attribution never changes a verdict: it is evidence, attached after the verdict is decided
(analysis/judgement.py). Pure functions on the model.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from perfguard.analysis.counting import canonical
from perfguard.model import (HOST_BOUND, ByteSplit, CaseResult, Counters, MemoryBreakdown, MovedBy, MovedRow, TimeSplit,
                             Verdict, Where)
from perfguard.model.measured import BREAKDOWN_BYTES

NOISE_PCT: dict[str, float] = {"kernel": 4.0, "operator": 15.0, "category": 0.0, "allocation": 0.0}
# The profiler's resolution; the host's jitter; the bytes at a peak: the caching allocator's rounding of
# a block (512 B, and 2 MiB segments split to the request's size), 64 KiB; the bytes a call asks for:
# its requests, each rounded to 512 B.
FLOOR: dict[str, float] = {"kernel": 0.002, "operator": 0.005, "category": 65536.0, "allocation": 512.0}
MOVED = ("regressed", "improved", "unstable")
ATTRIBUTED = ("gpu_time", "caller_time", "busy_time", "peak_memory", "footprint")
MEMORY = ("peak_memory", "footprint")
MIN_ROWS_TO_SCALE = 3
Split = TypeVar("Split", TimeSplit, ByteSplit)


def attach(verdicts: Iterable[Verdict], before: Mapping[str, CaseResult], after: Mapping[str, CaseResult]) -> list[Verdict]:
    """`verdicts`, each time or memory figure that moved with where it moved (`before`, `after`: each side's
    result by case)."""
    out = []
    for v in verdicts:
        old, new = before.get(v.case_id), after.get(v.case_id)
        if v.status in MOVED and v.metric in ATTRIBUTED and old is not None and new is not None:
            v = dataclasses.replace(v, where=against(v, where(v.metric, old, new, v.tolerance_pct or 0.0)))
        out.append(v)
    return out


def against(v: Verdict, w: Where | None) -> Where | None:
    """`w`, naming no row where its rows in all moved the other way from the verdict's figure: they do not
    say where that change came from (on a loaded CPU, a baseline's one split can hold a pass that ran slow
    throughout: an aten::add of 1.94 ms against 0.47 ms since, which named the add, faster, as 167% of a
    slowdown). The words say so (report/words.where_line)."""
    if w is None or not v.change_pct or w.moved * v.change_pct >= 0:
        return w
    return dataclasses.replace(w, rows=tuple(dataclasses.replace(r, beyond_noise=False) for r in w.rows))


def where(metric: str, before: CaseResult, after: CaseResult, tolerance_pct: float = 0.0) -> Where | None:
    """The rows of the split that accounts for `metric` on both sides, or None where either lacks it: for
    memory, the bytes at the peak by category, else the bytes a call allocates by operator; for a time
    the host sets the pace of (HOST_BOUND: the caller's time of a call that waits for the GPU itself, any
    time on a CPU), the host's operators; else the GPU's kernels: the GPU's time and its busy time are
    what its kernels did, however fast the host asked for them, and a host that waits on a full launch
    queue spends its operators' time waiting (on an H100, nanoGPT's training step, enqueue-bound: its
    operators moved 20-80% between unchanged processes)."""
    old, new = before.counters, after.counters
    if metric in MEMORY:
        categories = _categories(before.memory_breakdown, after.memory_breakdown)
        if categories is not None or old is None or new is None or old.alloc_bytes is None or new.alloc_bytes is None:
            return categories
        return compare("allocation", old.alloc_bytes, new.alloc_bytes, _launches("operator", old), _launches("operator", new))
    if old is None or new is None:
        return None
    host = after.regime in HOST_BOUND and metric != "busy_time"
    by: MovedBy = "operator" if host else "kernel"
    splits = (old.op_time, new.op_time) if host else (old.kernel_time, new.kernel_time)
    if splits[0] is None or splits[1] is None or not (splits[0].named_ms or splits[1].named_ms):
        return None  # nothing the split can name (a call that sleeps runs no operator)
    return compare(by, splits[0], splits[1], _launches(by, old), _launches(by, new), tolerance_pct)


def compare(by: MovedBy, before: TimeSplit | ByteSplit, after: TimeSplit | ByteSplit,
            launches_before: Mapping[str, float], launches_after: Mapping[str, float],
            tolerance_pct: float = 0.0) -> Where:
    """Both splits row by row, the row that moved most first (`tolerance_pct`: the verdict's, a time's)."""
    noise, floor, tolerance = NOISE_PCT[by] / 100, FLOOR[by], tolerance_pct / 100
    (old_named, old_other), (new_named, new_other) = before.sides(), after.sides()
    total = sum(new_named.values()) + new_other - sum(old_named.values()) - old_other
    # Where every row moved alike (a process whose host, or card, ran slower throughout), no one row is
    # where the change came from: a row is judged against its time scaled as the rows typically scaled
    # (their median ratio, which one culprit does not move; with fewer than 3 rows, none can be told apart).
    ratios = [new_named[n] / old_named[n] for n in old_named if n in new_named and old_named[n] > floor and new_named[n] > floor]
    scale = statistics.median(ratios) if len(ratios) >= MIN_ROWS_TO_SCALE else 1.0
    rows = []
    for name in dict.fromkeys([*old_named, *new_named]):
        old, new = old_named.get(name), new_named.get(name)
        ran_before, ran_after = launches_before.get(name, 0) > 0, launches_after.get(name, 0) > 0
        if old is not None and new is not None:
            excess = new - old * scale
            beyond = abs(excess) > max(floor, noise * max(old * scale, new), tolerance * old * scale) and excess * total > 0
        elif old is None and not ran_before or new is None and not ran_after:  # appeared, or vanished
            beyond = (new or old or 0.0) > floor
        else:  # named on one side, in `other` on the other: it moved if it outgrew all of that `other`
            known, other = (new, old_other) if old is None else (old, new_other)
            beyond = (known or 0.0) > other * (1 + noise) + floor
        row = MovedRow(name, old, new, launches_before.get(name), launches_after.get(name), beyond)
        if change(row) * total < 0:  # it moved against the change: not where the change came from
            row = dataclasses.replace(row, beyond_noise=False)
        rows.append(row)
    rows.sort(key=lambda r: (-abs(change(r)), r.name))
    return Where(by=by, rows=tuple(rows), moved=total, noise_pct=max(NOISE_PCT[by], tolerance_pct))


def _categories(before: MemoryBreakdown | None, after: MemoryBreakdown | None) -> Where | None:
    """The bytes at the peak by category, both sides (None where either took no breakdown)."""
    if before is None or after is None or before.error or after.error:
        return None
    named = [name for name in BREAKDOWN_BYTES if getattr(before, name) or getattr(after, name)]
    old, new = (ByteSplit(named_bytes={name: float(getattr(b, name)) for name in named}) for b in (before, after))
    return compare("category", old, new, {}, {})  # a category is on both sides, if empty: none appears or vanishes


def change(row: MovedRow) -> float:
    """A row's change (ms a call; bytes); a side in `other` counts as 0 there."""
    return (row.after or 0.0) - (row.before or 0.0)


def median_split(splits: Sequence[Split]) -> Split:
    """Several runs' splits (of one kind) as one (perfguard ab's pooled rounds): each name's median over
    the runs that named it, `other` the median of theirs."""
    both = [s.sides() for s in splits]
    names = dict.fromkeys(name for named, _ in both for name in named)
    named = {name: statistics.median([n[name] for n, _ in both if name in n]) for name in names}
    return type(splits[0])(named, statistics.median([other for _, other in both]))


def _launches(by: MovedBy, counters: Counters) -> dict[str, float]:
    """Launches (calls) per call by row name: a kernel's by its compared name, a copy's by its direction."""
    if by == "operator":
        return dict(counters.aten_ops)
    return {**canonical("kernels", counters.kernels), **{f"copy {d}": n for d, n in counters.copies.items()},
            **({"memset": sum(counters.memsets.values())} if counters.memsets else {})}
