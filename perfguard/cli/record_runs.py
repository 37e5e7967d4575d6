"""What `perfguard baseline accept` decides about records before the baseline's rule sees their runs (which
record is a run at all, and which records are one run), and what it notes of the rule's answers for its
summary line. cli/records.py's command uses these."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from perfguard.model import Admit, Admitted, BaselineEntry, Candidate, RunRecord, RunSummary, names


def noting_origins(admit: Admit, took: set[str]) -> Admit:
    """`admit`, noting in `took` where each run it let join a series came from."""
    def noted(case_id: str, entry: BaselineEntry | None, candidates: Sequence[Candidate]) -> Admitted:
        admitted = admit(case_id, entry, candidates)
        took.update(c.origin for c in candidates if any(_same_run(run, c.summary) for run in admitted.runs))
        return admitted

    return noted


def _same_run(kept: RunSummary, asked: RunSummary) -> bool:
    """Whether `kept` is the candidate run `asked`: itself, or itself marked with its acceptance's reason."""
    return kept is asked or (kept.accepted is not None and dataclasses.replace(kept, accepted=asked.accepted) == asked)


def unfinished(record: RunRecord) -> str:
    """Why a record is no complete run ("" when it is): what `perfguard check` fails and `baseline accept` refuses."""
    if record.status == "complete":
        return ""
    return (f"its status is {names.shown(record.status)}, not complete: the run did not finish (Ctrl-C, a crash, "
            "os._exit in a case), so its cases are not a run of the suite")


def refusal(record: RunRecord, given: dict[tuple[object, ...], str], in_future: Callable[[str], bool]) -> str:
    """Why a record cannot be a run of the baseline ("" when it can)."""
    if unfinished(record):
        return unfinished(record)
    if in_future(record.created_at):
        return f"dated {names.shown(record.created_at)}, in the future: check the clock of the machine that wrote it"
    if run_id(record) in given:
        return (f"the same run as {given[run_id(record)]} (the same samples measured on the same devices, whatever "
                "its date says): counted once")
    return ""


def run_id(record: RunRecord) -> tuple[object, ...]:
    """What makes two records one run, however often it is copied or re-dated: the cards (hosts) it ran on
    and every sample it measured. Not its date or commit: a copy re-stamped in another UTC offset, or 1 ms
    later, counted as another run; no second run on a real clock repeats all its samples to the last digit."""
    where = tuple(sorted(d.uuid or d.host or d.slug for d in record.devices))
    measured = tuple(sorted((r.device, r.id, metric, t.samples_ms) for r in record.results if r.status == "ok"
                            for metric, t in r.timings.items()))
    # A record that measured nothing has no figures to tell it by (and no run to add): by its date, then.
    return (where, measured or record.created_at)
