"""What each verdict word means for a time: one rule, shared by the baseline gate, `perfguard ab` and
`perfguard compare`, and one pass/fail rule for every verdict.

A time is judged by its change against a tolerance T (past it, the change is not noise) and by how
large a change the comparison could have missed:

- `unstable`: the figure cannot be trusted (too few samples; a throttled clock that may account for
  the change; this run's own median too imprecise to say on which side of T it lies);
- `regressed` / `improved`: the change is past ±T;
- `inconclusive`: within ±T, but a change of the threshold's size would have been caught less often
  than `Rule.same_power` says `same` needs: it could have hidden in the noise;
- `same`: within ±T, and a change of the threshold's size would have been caught.

The gate and ab differ in one named parameter, `same_power` (docs/gate.md): the gate's tolerance is
never below the threshold, so the change it catches half the time is T itself and `same` needs T ≤
threshold (power 0.5); ab's T may lie below the threshold, and its `same` needs a change of the
threshold's size to be caught 19 times in 20 (power 0.95). Pure functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from perfguard.model import Reason, Verdict, VerdictStatus


@dataclasses.dataclass(frozen=True)
class Rule:
    """What `same` asks of a comparison: the chance that a change of the threshold's size is caught."""

    same_power: float


GATE = Rule(same_power=0.5)
AB = Rule(same_power=0.95)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a time's verdict is decided on, all in percent of the centre."""

    change_pct: float
    tolerance_pct: float
    # The change this comparison catches with the rule's power: T + z(power)·spread (the gate: T).
    reach_pct: float
    threshold_pct: float
    own_pct: float = 0.0  # this run's own 95% half-width of its median (ab: 0, its rounds carry it)
    enough_samples: bool = True
    throttle_explains: bool = False  # a throttled clock could account for a slowdown of this size


def decide(e: Evidence) -> tuple[VerdictStatus, Reason]:
    """The status of a time, and the reason code of the rule that gave it."""
    change, tol, own = e.change_pct, e.tolerance_pct, e.own_pct
    if not e.enough_samples:
        return "unstable", "few_samples"
    if e.throttle_explains and change > tol:
        return "unstable", "throttled"
    if change - own > tol:
        return "regressed", "outside"
    if change + own < -tol:
        return "improved", "outside"
    if abs(change) + own > tol and own > tol / 2:
        # This run's own median is too imprecise to say on which side of the tolerance it lies.
        return "unstable", "imprecise"
    if change > tol:
        return "regressed", "outside"
    if change < -tol:
        return "improved", "outside"
    if e.reach_pct > e.threshold_pct:
        return "inconclusive", "blind"
    return "same", "within"


def fails(v: Verdict, *, fail_inconclusive: bool = False) -> bool:
    """Whether a verdict fails its case (and the run): every surface's one pass/fail rule."""
    return v.status == "regressed" or (fail_inconclusive and v.status == "inconclusive")


def failing(verdicts: Iterable[Verdict], *, fail_inconclusive: bool = False) -> list[Verdict]:
    return [v for v in verdicts if fails(v, fail_inconclusive=fail_inconclusive)]
