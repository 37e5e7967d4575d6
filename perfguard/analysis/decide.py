"""What each verdict word means for a time: one rule, shared by the baseline gate, `perfguard ab` and
`perfguard compare`, and one pass/fail rule for every verdict.

A time is judged by its change against a tolerance T (past it, the change is not noise) and by how
large a change the comparison could have missed:

- `unstable`: the figure cannot be trusted (too few samples; a throttled clock that may account for
  the change; this run's own median too imprecise to say on which side of T it lies);
- `regressed` / `improved`: the change is past ±T;
- `inconclusive`: within ±T, but a change of the threshold's size would have been caught less often
  than `Rule.same_power` says `same` needs: it could have hidden in the noise; or T itself is past the
  bound (`MAX_TOLERANCE_PCT`), where nothing can be decided;
- `same`: within ±T, and a change of the threshold's size would have been caught.

The gate and ab differ in one named parameter, `same_power` (docs/gate.md): the gate's tolerance is
never below the threshold, so the change it catches half the time is T itself and `same` needs T ≤
threshold (power 0.5); ab's T may lie below the threshold, and its `same` needs a change of the
threshold's size to be caught 19 times in 20 (power 0.95).

A case's overall status is here too, with the one order of statuses every surface lists them in.
Pure functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from perfguard.analysis.memory_verdicts import ACROSS_CALLS
from perfguard.model import MEMORY_METRICS, VERDICT_STATUSES, CaseResult, Reason, Verdict, VerdictStatus

# A case's overall status, most pressing first: its verdicts' statuses (in model.VERDICT_STATUSES'
# order), then what a case without a comparison is: skipped, smoke-run only, or measured without a
# baseline to compare with. An errored case comes first of all.
STATUS_ORDER = ("error", *VERDICT_STATUSES, "skipped", "smoke", "measured")


@dataclasses.dataclass(frozen=True)
class Rule:
    """What `same` asks of a comparison: the chance that a change of the threshold's size is caught."""

    same_power: float


GATE = Rule(same_power=0.5)
AB = Rule(same_power=0.95)

# The widest tolerance a time is decided by, %: a time eleven times another. Past it (and past the
# threshold, where a case asks for a wider one), the runs or rounds cannot tell a change of any size
# that matters from their noise: the time is `inconclusive` (reason `unbounded`), never `same`, `regressed`
# or `improved`, and its tolerance and smallest detectable change are kept at the bound. Two rounds of a
# wide spread gave `perfguard ab` a tolerance of ±6.7e45% (issue 46), the gate's tiny cases on a host the
# baseline has not seen one of thousands of % (an absolute offset of 0.02 ms on a 1 µs call).
MAX_TOLERANCE_PCT = 1000.0


def bounded(tolerance_pct: float, detectable_pct: float, threshold_pct: float) -> tuple[float, float, bool]:
    """A time's tolerance and smallest detectable change as its verdict keeps them, and whether the
    tolerance is past the bound (NaN and inf are): then both are the bound, and nothing is decided."""
    bound = max(MAX_TOLERANCE_PCT, threshold_pct)
    if tolerance_pct <= bound:
        return tolerance_pct, detectable_pct, False  # D adds less spread than T holds: as a ratio, under T's squared
    return bound, bound, True


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
    past_bound: bool = False  # the tolerance is past the bound (`bounded`): nothing can be decided


def decide(e: Evidence) -> tuple[VerdictStatus, Reason]:
    """The status of a time, and the reason code of the rule that gave it."""
    change, tol, own = e.change_pct, e.tolerance_pct, e.own_pct
    if not e.enough_samples:
        return "unstable", "few_samples"
    if e.past_bound:
        return "inconclusive", "unbounded"
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


def rank(status: str) -> int:
    """Where a status stands in STATUS_ORDER (0: most pressing); one it does not hold, last."""
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def ordered(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """Regressions first, then the rest in STATUS_ORDER, by case and metric."""
    return sorted(verdicts, key=lambda v: (rank(v.status), v.case_id, v.metric))


def case_status(verdicts: Iterable[Verdict], result: CaseResult | None = None) -> str:
    """A case's overall status: `error` when its run errored; else the most pressing of the verdicts that
    decide it; else what its run was (`skipped`, `smoke`; `measured`: nothing to compare it with)."""
    if result is not None and result.status == "error":
        return "error"
    verdicts = list(verdicts)
    # Memory across calls `new` beside a judged time (a baseline recorded before perfguard measured it)
    # leaves the case judged, not new.
    judged = any(v.metric not in MEMORY_METRICS and v.status != "new" for v in verdicts)
    deciding = [v.status for v in verdicts if not (judged and v.status == "new" and v.metric in ACROSS_CALLS)]
    if deciding:
        return min(deciding, key=rank)
    if result is not None and result.status in ("skipped", "smoke"):
        return result.status
    return "measured"


def by_case(verdicts: Iterable[Verdict]) -> dict[str, list[Verdict]]:
    """The verdicts grouped by case id, in one pass (a run's 5,000 cases: not a scan of them all per case)."""
    grouped: dict[str, list[Verdict]] = {}
    for v in verdicts:
        grouped.setdefault(v.case_id, []).append(v)
    return grouped


def case_statuses(verdicts: Iterable[Verdict]) -> dict[str, str]:
    """Each case's overall status (case_status), by case id, for the cases the verdicts name."""
    return {case: case_status(vs) for case, vs in by_case(verdicts).items()}
