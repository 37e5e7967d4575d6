"""The one judge (DESIGN §9): what the baseline gate, `perfguard ab` and `perfguard compare` make of a
comparison's verdicts, by one sequence:

1. a case whose time looks regressed is measured again, where the caller can measure (the gate hands
   in `confirm`; analysis/remeasure.py says what the measurements decide);
2. the acceptance file's entries are applied (analysis/acceptance.py); a file that cannot be read
   accepts nothing, and the judgement says why, as it names each entry past its bound;
3. each time that moved gets where it moved: the kernels or operators behind it (analysis/moved.py), where
   the caller hands in the results it was compared with;
4. the one pass/fail rule says what fails (analysis/decide.py), and which of it one command accepts.

The judgement is data; report/ words it (report/words.py the verdicts, report/steps.py the accept
command). Pure, but for the `confirm` a caller hands in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from perfguard.analysis import acceptance, decide, moved
from perfguard.analysis.acceptance import Refused
from perfguard.analysis.remeasure import time_regressed
from perfguard.errors import BaselineError
from perfguard.model import AcceptedChange, Acceptances, CaseResult, Verdict
from perfguard.model.acceptance import FILE_NAME

# Measures a case again from a fresh setup and settles its verdicts (the gate's plugin/measurer.py):
# (its first result, its verdicts) -> (the result it keeps, the settled verdicts).
Confirm = Callable[[CaseResult, list[Verdict]], tuple[CaseResult, list[Verdict]]]


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What a run (or a case) came to: data for every surface to print and exit by."""

    results: tuple[CaseResult, ...]  # as judged: a re-measured case keeps its middle measurement
    verdicts: tuple[Verdict, ...]  # the acceptances applied
    failing: tuple[Verdict, ...]  # what fails the run, each verdict its own why
    accept: tuple[str, ...]  # the cases one command accepts (report/steps.accept_line): those a regression fails
    spent: tuple[AcceptedChange, ...]  # acceptance entries whose change the baseline (or the base) holds already
    refused: tuple[Refused, ...] = ()  # acceptance entries past their bound: they accept nothing
    unread: str | None = None  # why nothing was accepted: the acceptance file could not be read


def judge(results: Iterable[CaseResult], verdicts: Iterable[Verdict], accepted: Acceptances | BaselineError, *,
          fail_inconclusive: bool = False, updating: bool = False, confirm: Confirm | None = None,
          before: Mapping[str, CaseResult] | None = None, accepted_file: str = FILE_NAME) -> Judgement:
    """The judgement of a run's (or a case's) `results` on the verdicts of their comparison.
    `updating`: the run writes its figures into the baseline (--perfguard-update); its verdicts are against
    the baseline it replaces, so nothing is re-measured, nothing fails, and none says to record it: the run
    recorded what it could, and a run it left out has a line of its own (accept it). `before`: the results they were
    compared with, by case (the baseline's, the base's), for where a time moved. `accepted_file`: the
    acceptance file `accepted` came from, as the run names it (a verdict it judged names it)."""
    results, verdicts = list(results), list(verdicts)
    if confirm is not None and not updating:
        results, verdicts = _confirmed(results, verdicts, confirm)
    spent: list[AcceptedChange] = []
    refused: list[Refused] = []
    if not isinstance(accepted, BaselineError):
        applied = acceptance.apply(verdicts, accepted, {r.id: r.device for r in results}, accepted_file)
        verdicts, spent, refused = applied.verdicts, applied.spent, applied.refused
    if before is not None:
        verdicts = moved.attach(verdicts, before, {r.id: r for r in results})
    if updating:
        verdicts = [dataclasses.replace(v, next_steps=tuple(s for s in v.next_steps if s.action != "record")) for v in verdicts]
    failing = () if updating else tuple(v for v in verdicts if decide.fails(v, fail_inconclusive=fail_inconclusive))
    accept = {v.case_id for v in failing if v.status == "regressed" and any(s.action == "accept" for s in v.next_steps)}
    return Judgement(tuple(results), tuple(verdicts), failing, tuple(sorted(accept)), tuple(spent), tuple(refused),
                     str(accepted) if isinstance(accepted, BaselineError) else None)


def _confirmed(results: list[CaseResult], verdicts: list[Verdict], confirm: Confirm
               ) -> tuple[list[CaseResult], list[Verdict]]:
    """Each case whose time looks regressed, confirmed (or not) by measuring it again; the rest as they are."""
    grouped = decide.by_case(verdicts)
    kept = []
    for r in results:
        if time_regressed(grouped.get(r.id, ())):
            r, grouped[r.id] = confirm(r, grouped[r.id])
        kept.append(r)
    return kept, [v for vs in grouped.values() for v in vs]
