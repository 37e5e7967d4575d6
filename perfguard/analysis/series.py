"""Which runs join a case's series in a baseline: the rule every baseline write applies, and its lines.

A baseline's tolerances come from the spread of each case's runs, so a run that does not belong
there widens every later tolerance: a run of changed code mixed with the old code's, a runner twice
as slow, a disturbed run. So a run joins a case's series only when the gate would have let it pass:

- against a series the case already has, each time the gate judges it by (`gpu_time` or
  `caller_time`, and `busy_time` where the call is host-bound: noise.judged_times) within the
  tolerance the gate gives it (analysis/noise.py, judged as the gate judges it: by this card's runs
  or the fleet's), but for the absolute offset the gate allows a card or host none of the runs came
  from (noise.estimate's `unseen_offset`): a file can name any host, and one run twice as slow naming
  a host of its own joined a 3.16 µs case on a CPU, whose offset is 20 µs (issue 46). Each run is
  judged against the series as it was before this write, never with the runs it came with: a batch
  of records cannot outvote the baseline. A run outside it is not added: the code changed, or the run
  is off, and perfguard cannot tell which from one run. Only a change a person names starts the
  series again: `accepted` (`--case`, an acceptance file), `force` (``--perfguard-update=force``): the
  case's series starts again with the new runs, its earlier runs dropped (they stay in version
  control), never mixed with the new ones;
- with no series yet (a new case, or `restart`: `perfguard baseline accept --restart`), the new runs
  among themselves: one far from the others' median (noise.far_runs) is left out;
- `merge` (baseline files of other hosts): the runs of all the files, among themselves, likewise.

A run read from a file that is already in the series (the same record given twice, accepted again, or
copied with another date, host or card: model.identity, by what it measured) is counted once. Every
run left out is one line, collected in `lines` for the caller to print. Pure: no files.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from perfguard import defaults, units
from perfguard.analysis import counting, memory_verdicts, noise, priors
from perfguard.defaults import THRESHOLD_PCT
# The types the rule speaks in are the store's too: model/baseline.py holds them, below both.
from perfguard.model import Admitted, BaselineEntry, Candidate, CaseResult, RunSummary, Verdict, identity, shown_metric
from perfguard.model.names import shown

# How far ahead of this machine's clock a run may be dated: runners' clocks disagree by seconds, not
# minutes. A run dated later would stay the newest of its series for ever (the cap drops the oldest).
CLOCK_SKEW = datetime.timedelta(minutes=5)


class Admission:
    """The rule, with what it says: made by the command that writes, called by the store per case."""

    def __init__(self, *, force: bool = False, restart: bool = False, remedy: Callable[[str], str] | None = None,
                 threshold_pct: float = THRESHOLD_PCT, accepted: Mapping[str, str] | None = None):
        """`remedy`: what a line about a case's run left out says to do, by case id. `accepted`: the cases a
        person named, each with the reason: their change is accepted, as `force` does for every case."""
        self.force, self.restart, self.remedy, self.threshold_pct = force, restart, remedy, threshold_pct
        self.accepted = dict(accepted or {})
        self.lines: list[str] = []
        self.added: set[str] = set()  # the cases a run joined (or began) the series of
        self.not_added: set[str] = set()

    def __call__(self, case_id: str, entry: BaselineEntry | None, candidates: Sequence[Candidate]) -> Admitted:
        admitted = self._admit(case_id, entry, candidates)
        (self.added if admitted.result is not None else self.not_added).add(case_id)
        return admitted

    def _admit(self, case_id: str, entry: BaselineEntry | None, candidates: Sequence[Candidate]) -> Admitted:
        existing = () if entry is None or self.restart else entry.runs
        fresh = self._once(case_id, existing, candidates)
        if not existing:
            kept = self._among_themselves(case_id, fresh)
            return Admitted(tuple(c.summary for c in kept), kept[-1] if kept else None)
        assert entry is not None
        if case_id in self.accepted and fresh:
            return self._accepted(case_id, entry, fresh)
        joined, outside = [], []
        for c in fresh:
            why = self._times_outside(c, entry) or self._counted_grew(c, entry)
            (outside if why else joined).append((c, why))
        if outside and self.force:
            kept = self._among_themselves(case_id, fresh)
            why = outside[0][1]
            self.lines.append(f"{case_id}: its series starts again with {units.plural(len(kept), 'run')} from {outside[0][0].origin} "
                              f"({why}: the code changed); its {units.plural(len(existing), 'run')} before dropped")
            return Admitted(tuple(c.summary for c in kept), kept[-1] if kept else None)
        for c, why in outside:
            remedy = self.remedy(case_id) if self.remedy else ""
            self.lines.append(f"{case_id}: the run of {c.summary.recorded_at} from {c.origin} not added: {why}, so "
                              f"the code changed or the run is off{f'; {remedy}' if remedy else ''}")
        runs = (*existing, *(c.summary for c, _ in joined))
        return Admitted(runs, joined[-1][0] if joined else None)

    def merged(self, case_id: str, runs: Sequence[tuple[RunSummary, str]], newest: CaseResult) -> tuple[RunSummary, ...]:
        """The runs of several baseline files for one case, among themselves: each once, none dated in the
        future, none far from the others (`newest`: the newest entry's result, for the case's priors)."""
        seen: set[tuple[object, ...]] = set()
        fresh: list[Candidate] = []
        for summary, origin in sorted(runs, key=lambda r: r[0].recorded_at):
            key = identity(summary)
            if key in seen:
                continue
            seen.add(key)
            if in_future(summary.recorded_at):
                self.lines.append(f"{case_id}: the run of {shown(summary.recorded_at)} in {origin} left out: dated in the future")
                continue
            fresh.append(Candidate(newest, summary, origin))
        return tuple(c.summary for c in self._among_themselves(case_id, fresh))

    def _once(self, case_id: str, existing: Sequence[RunSummary], candidates: Sequence[Candidate]) -> list[Candidate]:
        seen = {identity(r) for r in existing}
        fresh = []
        for c in candidates:
            key = identity(c.summary)
            if key in seen and not c.measured_here:
                self.lines.append(f"{case_id}: the run of {c.summary.recorded_at} from {c.origin} is in the series "
                                  "already (the same figures, whatever its date, host or card say): counted once")
                continue
            seen.add(key)
            fresh.append(c)
        return fresh

    def _among_themselves(self, case_id: str, fresh: Sequence[Candidate]) -> list[Candidate]:
        """The new runs without those far from the others (on each time the gate judges the case by)."""
        if not fresh:
            return []
        newest = fresh[-1].result
        sources = [noise.run_source(c.summary) for c in fresh]
        far: dict[int, str] = {}
        for metric in noise.judged_times(newest, newest):
            measured = [i for i, c in enumerate(fresh) if c.summary.median_of(metric)]
            medians = [fresh[i].summary.median_of(metric) or 0.0 for i in measured]
            off = noise.far_runs(medians, [sources[i] for i in measured], priors.prior_pct(newest, newest, metric),
                                 priors.card_prior_pct(newest, newest, metric), priors.absolute_ms(newest, metric))
            centre = sorted(medians)[len(medians) // 2] if medians else 0.0
            for j in sorted(off):
                i = measured[j]
                far.setdefault(i, f"{shown_metric(metric, newest.regime)} {noise.describe_run(fresh[i].summary, metric, centre)}")
        for i, why in sorted(far.items()):
            self.lines.append(f"{case_id}: {why}, from {fresh[i].origin}, left out: far from the others")
        return [c for i, c in enumerate(fresh) if i not in far]

    def _accepted(self, case_id: str, entry: BaselineEntry, fresh: Sequence[Candidate]) -> Admitted:
        """A change a person named: where its times moved, the series starts again with the new runs (the old
        ones describe the old code); where only what is counted grew, the runs join the series and the entry
        takes their counts. The run that carries the change keeps the reason; a run that changes nothing
        (the next update, the acceptance file still naming the case) joins as any run does."""
        reason = self.accepted[case_id]
        moved = [(c, why) for c in fresh if (why := self._times_outside(c, entry))]
        grew = [(c, why) for c in fresh if (why := self._counted_grew(c, entry))]
        marked = [dataclasses.replace(c, summary=dataclasses.replace(c.summary, accepted=reason)) if moved or grew else c
                  for c in fresh]
        if moved:
            kept = self._among_themselves(case_id, marked)
            self.lines.append(f"{case_id}: accepted ({reason}): its series starts again with {units.plural(len(kept), 'run')} "
                              f"from {moved[0][0].origin} ({moved[0][1]}); its {units.plural(len(entry.runs), 'run')} before "
                              "dropped (they stay in version control)")
            return Admitted(tuple(c.summary for c in kept), kept[-1] if kept else None)
        if grew:
            self.lines.append(f"{case_id}: accepted ({reason}): {units.plural(len(marked), 'run')} from {marked[0].origin} "
                              f"joined its series, whose times it did not move; the entry holds its counts now ({grew[0][1]})")
        return Admitted((*entry.runs, *(c.summary for c in marked)), marked[-1])

    def _counted_grew(self, c: Candidate, entry: BaselineEntry) -> str:
        """What the candidate counts more of than the entry (kernels, syncs, memory), or "": a routine update
        never takes in a regression the gate would fail."""
        counted = [v for v in (*counting.compare_counters(c.result, entry.result),
                               *memory_verdicts.memory_verdicts(_Bare(), c.result, entry.result, defaults.MEMORY_THRESHOLD_PCT))
                   if v.status == "regressed"]
        return ", ".join(f"{v.metric} grew" for v in counted)

    def _times_outside(self, c: Candidate, entry: BaselineEntry) -> str:
        """Why the candidate lies outside the case's tolerance, or "" when it does not."""
        threshold = c.result.threshold if c.result.threshold is not None else self.threshold_pct
        # The times the gate would judge this run by, no other: a device-regime case's busy time, which
        # the gate does not judge, jumps 8% between processes for a single kernel (priors.BUSY_KERNEL_PCT)
        # and refused good runs of 12 cases in 5 updates on one H200.
        for metric in noise.judged_times(c.result, entry.result):
            value = c.summary.median_of(metric)
            if not value:
                continue
            est = noise.estimate(c.result, entry, threshold, host=c.summary.host, metric=metric, unseen_offset=False)
            if est is None:
                continue
            change = 100.0 * (value / est.centre_ms - 1.0)
            if abs(change) > est.tolerance_pct and not est.past_bound:  # past the bound, the gate decides nothing
                return (f"{shown_metric(metric, c.result.regime)} {change:+.1f}% from the centre of {noise.judges(est)}, "
                        f"outside its tolerance of ±{est.tolerance_pct:.1f}%")
        return ""


class _Bare:
    """A verdict context that names no file: the admission reads only the status."""

    baseline_file = None

    def verdict(self, metric: str, status: Any, reason: Any, threshold: float, baseline: float | None = None,
                current: float | None = None, change: float | None = None, **figures: Any) -> Verdict:
        return Verdict("", metric, status, baseline, current, change, threshold, None, reason=reason)


def in_future(recorded_at: str, now: datetime.datetime | None = None) -> bool:
    """Whether `recorded_at` (ISO 8601; without a zone, UTC) lies ahead of now by more than CLOCK_SKEW;
    a date that does not parse is not in the future (the record checks dates elsewhere)."""
    try:
        when = datetime.datetime.fromisoformat(recorded_at)
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return when > now + CLOCK_SKEW
