"""What an acceptance file's entry does to a verdict (model/acceptance.py): a regression within the
figure a person accepted reads `accepted`, and passes; one past it stays `regressed` (more than was
accepted); an entry whose change the baseline (or ab's base) already holds is spent. The same rule in
the gate and in `perfguard ab`. Pure functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from perfguard.analysis.memory_verdicts import MEMORY_FLOOR_BYTES
from perfguard.model import COUNTER_KINDS, MEMORY_METRICS, TIME_METRICS, AcceptedChange, Acceptances, NextStep, Verdict


def within(v: Verdict, change: AcceptedChange) -> bool:
    """Whether the verdict's figure lies within what was accepted: a time within its tolerance (or the
    threshold) of the accepted figure, memory within its threshold and floor, a count at most the count."""
    if v.current is None:
        return False
    if v.metric in TIME_METRICS:
        return v.current <= change.figure * (1 + max(v.tolerance_pct or 0.0, v.threshold_pct) / 100.0)
    if v.metric in MEMORY_METRICS:
        return v.current <= change.figure + max(change.figure * v.threshold_pct / 100.0, MEMORY_FLOOR_BYTES)
    return v.current <= change.figure + 1e-9


def apply(verdicts: Sequence[Verdict], accepted: Acceptances, devices: Mapping[str, str]
          ) -> tuple[list[Verdict], list[AcceptedChange]]:
    """The verdicts with accepted changes marked, and the entries that are spent. `devices`: each case's
    device slug in this run."""
    out, spent = [], []
    for v in verdicts:
        change = accepted.find(devices.get(v.case_id, ""), v.case_id, v.metric)
        if change is None:
            out.append(v)
        elif v.status == "regressed" and within(v, change):
            steps = () if v.paired else (NextStep("record"),)
            out.append(dataclasses.replace(v, status="accepted", reason="accepted", accepted_reason=change.reason,
                                           next_steps=steps))
        else:
            if v.status != "regressed" and within(v, change) and v.baseline is not None and within(
                    dataclasses.replace(v, current=v.baseline), change) and v.baseline >= _before(change):
                spent.append(change)
            out.append(v)
    # A count the baseline holds as accepted has no verdict at all (counts that did not move say nothing).
    compared = {(devices.get(v.case_id, ""), v.case_id) for v in verdicts if v.compared}
    judged = {(devices.get(v.case_id, ""), v.case_id, v.metric) for v in verdicts}
    spent += [c for c in accepted.changes if c.metric in COUNTER_KINDS and (c.device, c.case_id) in compared
              and (c.device, c.case_id, c.metric) not in judged]
    return out, spent


def _before(change: AcceptedChange) -> float:
    """Where the accepted change started from; a baseline at or past the middle of the way holds it."""
    if change.baseline is None:
        return change.figure
    return (change.baseline + change.figure) / 2.0


def named(accepted: Acceptances, device: str) -> dict[str, str]:
    """The cases of `device` the file names, each with its reason: an update starts their series anew."""
    return {c.case_id: c.reason for c in accepted.changes if c.device == device}
