"""What an acceptance file's entry does to a verdict (model/acceptance.py): a regression within the
figure a person accepted reads `accepted`, and passes, the most it accepts and the file on its line; one
past it stays `regressed` (more than was accepted), and says what was; an entry whose change the
baseline (or ab's base) already holds is spent. An entry whose figure is more than FACTOR times the
baseline's accepts nothing, and is named: the file is hostile until checked, and a change that large is
no tweak to accept against the old figure but a new figure for the baseline itself. The same rule in
the gate, `perfguard ab` and `perfguard compare`. Pure functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from perfguard.analysis.memory_verdicts import MEMORY_FLOOR_BYTES
from perfguard.model import (COUNTER_KINDS, MEMORY_METRICS, TIME_METRICS, AcceptedChange, Acceptances, CaseResult,
                             NextStep, Verdict)

# An entry accepts at most FACTOR times the baseline's figure: an order of magnitude above any intended
# change an acceptance is for (a fused kernel that launches one more, a feature that costs 5%, twice
# the memory), and far below a hand-edited 1e5 ms. A larger change is recorded into the baseline
# (`perfguard baseline accept RUN.json --case ID`), which the reviewer sees in the diff as well.
FACTOR = 10
# The least baseline figure the bound is taken from, by metric: a count or a size of 0 may grow too
# (0 → 10 syncs, 0 → 640 KiB). A time's baseline is never 0.
LEAST: dict[str, float] = {**dict.fromkeys(COUNTER_KINDS, 1.0), "copy_bytes": MEMORY_FLOOR_BYTES,
                           **dict.fromkeys(MEMORY_METRICS, MEMORY_FLOOR_BYTES)}


@dataclasses.dataclass(frozen=True)
class Refused:
    """An entry whose figure is past `bound`, FACTOR times `baseline` (the figure its verdict was judged
    against): it accepts nothing."""

    change: AcceptedChange
    baseline: float
    bound: float


@dataclasses.dataclass(frozen=True)
class Applied:
    """What an acceptance file did to a comparison's verdicts."""

    verdicts: list[Verdict]  # with the accepted changes marked
    spent: list[AcceptedChange]  # entries whose change the baseline holds already
    refused: list[Refused]  # entries past their bound


def bound(metric: str, baseline: float) -> float:
    """The most an entry may accept for `metric` against a baseline of `baseline`."""
    return FACTOR * max(baseline, LEAST.get(metric, 0.0))


def past_bound(metric: str, figure: float, baseline: float | None) -> bool:
    """Whether an entry of `figure` accepts nothing (the judge) and is never written (`perfguard pr accept`)."""
    return baseline is not None and figure > bound(metric, baseline)


def ceiling(v: Verdict, change: AcceptedChange) -> float:
    """The most `change` accepts for verdict `v`: a time its tolerance (or the threshold) above the accepted
    figure, memory its threshold and floor above it, a count the count."""
    if v.metric in TIME_METRICS:
        return change.figure * (1 + max(v.tolerance_pct or 0.0, v.threshold_pct) / 100.0)
    if v.metric in MEMORY_METRICS:
        return change.figure + max(change.figure * v.threshold_pct / 100.0, MEMORY_FLOOR_BYTES)
    return change.figure


def within(v: Verdict, change: AcceptedChange) -> bool:
    """Whether the verdict's figure lies within what `change` accepts."""
    return v.current is not None and v.current <= ceiling(v, change) + 1e-9


def apply(verdicts: Sequence[Verdict], accepted: Acceptances, devices: Mapping[str, str], source: str) -> Applied:
    """The verdicts with accepted changes marked, the entries that are spent and those refused. `devices`:
    each case's device slug in this run; `source`: the acceptance file, as the run names it."""
    out, spent, refused = [], [], []
    for v in verdicts:
        change = accepted.find(devices.get(v.case_id, ""), v.case_id, v.metric)
        if change is None:
            out.append(v)
            continue
        if v.baseline is not None and past_bound(v.metric, change.figure, v.baseline):
            refused.append(Refused(change, v.baseline, bound(v.metric, v.baseline)))
            out.append(v)
            continue
        by_entry = dict(accepted_ceiling=ceiling(v, change), accepted_file=source)
        if v.status == "regressed" and within(v, change):
            steps = () if v.paired else (NextStep("record"),)
            out.append(dataclasses.replace(v, status="accepted", reason="accepted", accepted_reason=change.reason,
                                           next_steps=steps, **by_entry))
        elif v.status == "regressed":  # more than was accepted: its line says how much was
            out.append(dataclasses.replace(v, **by_entry))
        else:
            if within(v, change) and v.baseline is not None and within(
                    dataclasses.replace(v, current=v.baseline), change) and v.baseline >= _before(change):
                spent.append(change)
            out.append(v)
    # A count the baseline holds as accepted has no verdict at all (counts that did not move say nothing).
    compared = {(devices.get(v.case_id, ""), v.case_id) for v in verdicts if v.compared}
    judged = {(devices.get(v.case_id, ""), v.case_id, v.metric) for v in verdicts}
    spent += [c for c in accepted.changes if c.metric in COUNTER_KINDS and (c.device, c.case_id) in compared
              and c.key not in judged]
    return Applied(out, spent, refused)


def unmeasured(accepted: Acceptances, results: Iterable[CaseResult]) -> list[AcceptedChange]:
    """The entries for a case of this run's devices that this run did not measure (gone, renamed, never
    there, or not run): they accept nothing here. Another device's entries are another run's."""
    results = list(results)
    devices, ran = {r.device for r in results}, {(r.device, r.id) for r in results}
    return [c for c in accepted.changes if c.device in devices and (c.device, c.case_id) not in ran]


def _before(change: AcceptedChange) -> float:
    """Where the accepted change started from; a baseline at or past the middle of the way holds it."""
    if change.baseline is None:
        return change.figure
    return (change.baseline + change.figure) / 2.0
