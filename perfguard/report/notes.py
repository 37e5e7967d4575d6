"""What records say about their runs, said once however many records a report merges.

`perfguard report A.json B.json` merges records of one suite: a CI matrix's jobs, xdist workers, a
rerun. Each carries the gate's settings (plugin/strict.py) and, on a CPU, the same caveat about its
figures; read record by record, each line came out once per record. Here a line that several records
carry is one line, and the CPU note is one note about the results the report shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from perfguard import units
from perfguard.model import TIME_METRICS, CaseResult, RunRecord, Verdict
from perfguard.report.advice import cpu_line, run_line
from perfguard.report.commands import Invocation


def once(lines: Iterable[str | None]) -> list[str]:
    """The lines in their order, each once, None and "" left out."""
    return [line for line in dict.fromkeys(lines) if line]


def gate_lines(records: Sequence[RunRecord]) -> list[str]:
    """The gate's lines the runs printed (settings, what kept cases from being judged), each once."""
    return once(line for r in records if isinstance(r.options.get("gate"), list) for line in r.options["gate"]
                if isinstance(line, str))


def run_lines(records: Sequence[RunRecord]) -> list[str]:
    """The line of each record of a run that did not complete, each distinct line once."""
    return once(map(run_line, records))


def cpu_note(results: Iterable[CaseResult], records: Sequence[RunRecord]) -> str | None:
    """The CPU caveat about `results` (the merged cases a report shows), with the settings (torch's
    threads, xdist workers) the records measured under where they all agree; what they disagree on
    is left unsaid rather than said once per record."""
    timed = [r for r in records if any(x.timer == "host-clock" for x in r.results)] or list(records)
    agreed = {key: value for key, value in (timed[0].options.items() if timed else ())
              if all(r.options.get(key, object()) == value for r in timed[1:])}
    return cpu_line(results, agreed)


def unseen_card(v: Verdict) -> bool:
    """Whether a time was judged by the fleet's runs for a card (host) with none of its own in the baseline."""
    return v.noise is not None and v.noise.judged_by == "fleet" and not v.noise.own_runs


def unseen_card_line(verdicts: Iterable[Verdict], run: Invocation = Invocation()) -> str | None:
    """One line for the cases a run measured on a card (on a CPU, a host) none of the baseline's runs
    came from: what is judged exactly there (counts and memory do not depend on the card) and what
    its times, judged against the fleet's runs and the card-to-card spread, could not decide, with
    what would decide them. None where no time was judged so."""
    verdicts = list(verdicts)
    unseen = {v.case_id for v in verdicts if v.metric in TIME_METRICS and unseen_card(v)}
    if not unseen:
        return None
    source = next(v.noise.source for v in verdicts if v.case_id in unseen and v.noise and v.noise.judged_by)
    exact = [v for v in verdicts if v.case_id in unseen and v.metric not in TIME_METRICS and v.compared]
    blind = [v for v in verdicts if v.case_id in unseen and v.metric in TIME_METRICS and v.status == "inconclusive"]
    detects = sorted(v.detectable_pct for v in blind if v.detectable_pct is not None)
    median = f" (median detectable change {detects[len(detects) // 2]:.1f}%)" if detects else ""
    regressed = sum(v.status == "regressed" for v in exact)
    return (f"this {source} is not in the baseline for {units.plural(len(unseen), 'case')}: their counters and memory "
            f"are judged exactly against the fleet's ({units.plural(len(exact), 'verdict')}, {regressed} regressed), "
            f"their times against the fleet's runs and the spread between {source}s: "
            f"{len(blind)} time verdict(s) inconclusive{median}; to decide them, record 3 runs of this {source} into the "
            f"baseline (`{run.update()}`, three times) or judge a pull request with `perfguard ab`")
