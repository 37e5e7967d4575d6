"""A verdict's next steps in words (model/verdicts.py NextStep): the commands and declarations that
would act on it or decide it, each command with the run's own folders (report/commands.py); and of a
judgement (analysis/judgement.py), the run's one line that accepts every change that failed it and the
acceptance entries that are spent, refused or name no case the run measured. report/words.py says
them after what was seen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from perfguard import units
from perfguard.analysis.acceptance import FACTOR, Refused
from perfguard.analysis.counting import figure
from perfguard.analysis.noise import OWN_RUNS
from perfguard.model import (COUNTER_KINDS, COUNTER_LABELS, MEMORY_METRICS, TIME_METRICS, AcceptedChange, NextStep, Verdict,
                             names)
from perfguard.report.commands import Invocation

DEFAULT = Invocation()


def amount(metric: str, value: float | None) -> str:
    """A figure of `metric` in its unit: "20.00 ms", "1.0 MiB", "6"."""
    if value is None:
        return "n/a"
    if metric in COUNTER_KINDS:
        return figure(metric, value)
    return units.size(value) if metric in MEMORY_METRICS else units.precise_duration(value)


def new_remedy(run: Invocation = DEFAULT) -> str:
    """How to record cases not in the baseline yet, as the run's own command."""
    return f"record them with `{run.update()}` (several runs make their tolerances tight)"


def said(v: Verdict, run: Invocation = DEFAULT) -> list[str]:
    """The verdict's next steps, each in words; those that would decide an inconclusive time, as one."""
    deciding = [s for s in v.next_steps if s.action in DECIDING]
    return [s for s in (_inconclusive(v, deciding) if deciding else "",
                        *(_step(v, s, run) for s in v.next_steps if s.action not in DECIDING)) if s]


def _step(v: Verdict, step: NextStep, run: Invocation) -> str:
    """A next step in words; "" for the ones said once for the whole run (accepting: accept_line)."""
    update = f"`{run.update()}`"
    action = step.action
    if action == "accept":
        return ""
    if action == "record":
        if v.status == "new" and v.reason == "not_in_baseline":
            return f"record it with {update} (several runs make its tolerance tight)"
        if v.status == "new":
            return f"record it with {update}" + (" to judge this figure" if v.metric in TIME_METRICS else "")
        return "the head is faster: nothing to do" if v.paired else f"run {update} to make it the baseline"
    if action == "allow_counter":
        more = v.counters.allowed_more if v.counters else None
        allowed = f"; allowed {_count(more, v.metric)} more" if more else ""
        return (f"counts are exact, so any growth fails{allowed}; allow it with counters={{{v.metric!r}: N}} on the case "
                "or --perfguard-counter-allowance, or accept it (the command below)")
    if v.metric in COUNTER_KINDS and v.status == "same":
        return ""
    return _ADVICE.get(action, lambda v, s: "")(v, step)


def _count(n: float, kind: str) -> str:
    if kind == "copy_bytes":
        return units.size(n)
    one, many = COUNTER_LABELS.get(kind, (kind, kind))
    return f"{units.count(n)} {one if n == 1 else many}"


# The steps that would let the gate see a change of the threshold's size: said together, as alternatives.
DECIDING = ("own_runs", "more_runs", "ab", "threshold")


def _inconclusive(v: Verdict, steps: Sequence[NextStep]) -> str:
    """What would let the gate see a change of the threshold's size."""
    ways, n = [], v.noise
    for s in steps:
        if s.action == "own_runs" and n is not None:
            ways.append(f"{OWN_RUNS} runs of this {n.source} in the baseline, which then judge it alone (it has {n.own_runs})")
        elif s.action == "more_runs" and n is not None:
            ways.append(f"{int(s.value or 0)} baseline runs (it has {n.runs})")
        elif s.action == "ab":
            ways.append("`perfguard ab`, base and head measured by turns on one card")
        elif s.action == "threshold":
            ways.append(f"a threshold of {s.value:g}% (`@perf_case(threshold=...)`) if that is the change that matters")
    return "to decide it: " + "; or ".join(ways)


def _rounds(v: Verdict, step: NextStep) -> str:
    if step.value is None:
        return "more rounds (raise perfguard ab's --rounds) would give it a spread" if v.reason == "no_spread" else ""
    return f"raise perfguard ab's --budget or --max-rounds (about {int(step.value)} rounds would decide it)"


def _quieten(v: Verdict, step: NextStep) -> str:
    how = "lock the GPU's clocks or quieten the machine" if step.action == "lock_clocks" else "run on a quieter machine (fewer busy cores)"
    return f"its spread is too wide for {v.threshold_pct:g}% here: {how}, or give the case a wider threshold="


_ADVICE: dict[str, Callable[[Verdict, NextStep], str]] = {
    "raise_budget": lambda v, s: "raise --perfguard-budget",
    "rerun_idle": lambda v, s: "rerun on an idle, cool GPU",
    "rerun_quiet": lambda v, s: "rerun on a quieter machine or raise --perfguard-budget",
    "find_leak": lambda v, s: "look for tensors kept across calls: appended to a list, cached, or held by a graph",
    "rerecord": lambda v, s: ("not compared: the software differs from the baseline's, which picks other kernels; "
                              "re-record the baseline under this software"),
    "more_rounds": _rounds,
    "quieten": _quieten,
    "lock_clocks": _quieten,
}


def accept_line(cases: Sequence[str], run: Invocation = DEFAULT, *, paired: bool = False) -> str | None:
    """The run's one line that accepts every change that failed it (a judgement's `accept`), as a command
    that works as printed: into the baseline, or (`paired`: perfguard ab) into the acceptance file."""
    if not cases:
        return None
    if paired:
        return f"perfguard: to accept these changes in this pull request: `{run.pr_accept(cases)}`"
    return f"perfguard: to accept these changes into the baseline: `{run.baseline_accept(cases)}`"


def spent_line(change: AcceptedChange, where: Path | str, *, base: bool = False) -> str:
    """An acceptance file's entry (a judgement's `spent`) whose change the baseline holds now, or (`base`:
    perfguard ab, compare) the base holds already."""
    holds = "the base holds it already" if base else "the baseline holds it now"
    return f"{where}: the accepted {change.metric} of {names.shown(change.case_id)} is spent: {holds}; remove the entry"


def refused_line(refused: Refused, where: Path | str) -> str:
    """An acceptance file's entry past its bound (a judgement's `refused`): it accepts nothing."""
    c = refused.change
    return (f"{where}: the entry for the {c.metric} of {names.shown(c.case_id)} on {c.device} accepts "
            f"{amount(c.metric, c.figure)}, more than {FACTOR}× the baseline's {amount(c.metric, refused.baseline)} "
            f"(at most {amount(c.metric, refused.bound)}): refused, it accepts nothing; write the measured figure "
            "with `perfguard pr accept`, or record a change that large into the baseline with `perfguard baseline accept`")


def unmeasured_line(changes: Sequence[AcceptedChange], where: Path | str, named: int = 5) -> str:
    """The acceptance file's entries for a case of this run's devices that it did not measure, one line:
    they accept nothing here."""
    entries = [f"{c.metric} of {names.shown(c.case_id)} on {c.device}" for c in changes]
    more = f" and {len(entries) - named} more" if len(entries) > named else ""
    return (f"{where}: {len(entries)} {'entry' if len(entries) == 1 else 'entries'} for a case this run did not "
            f"measure (removed, renamed, skipped or not selected), accepting nothing: {', '.join(entries[:named])}{more}; "
            "remove the entries of cases that are gone")
