"""A verdict as data (DESIGN §5): its status, why (a reason code), the figures it was decided on, and
the next step, each a field. Words are rendered from it in perfguard/report/words.py alone, the same on
every surface; nothing here is prose, and nothing reads a verdict's words back.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from perfguard.model.kinds import Metric, Regime

# Every verdict status, most pressing first: the order every renderer lists them in.
# "inconclusive": the change is within its tolerance, but a change of the threshold's size could have
# hidden in the noise (analysis/decide.py says when); `same` says it could not have, and none was seen.
# "accepted": a change a person accepted (an acceptance file's entry, analysis/acceptance.py): it passes.
VerdictStatus = Literal["regressed", "unstable", "inconclusive", "improved", "accepted", "missing", "new", "same"]
VERDICT_STATUSES: tuple[VerdictStatus, ...] = typing.get_args(VerdictStatus)

# Why a verdict has its status. One code per rule that decided it (analysis/decide.py for times,
# memory_verdicts.py and counting.py for what is counted):
Reason = Literal[
    "outside",  # a time or a size moved past its tolerance (regressed / improved)
    "within",  # within its tolerance, and the gate could have seen a change of the threshold's size (same)
    "blind",  # within its tolerance, but a change of the threshold's size could have hidden in it (inconclusive)
    "unbounded",  # its tolerance is past the widest any time is decided by (analysis/decide.py): nothing is (inconclusive)
    "no_spread",  # perfguard ab: measured in fewer than two rounds a side, so no spread to judge by (inconclusive)
    "few_samples",  # too few samples for a median (unstable)
    "throttled",  # measured while the clock was throttled, which may account for the change (unstable)
    "imprecise",  # this run's own median is too imprecise to say on which side of the tolerance it lies (unstable)
    "not_confirmed",  # looked regressed, and the re-measurements did not all agree (unstable)
    "not_in_baseline",  # the case is not in the baseline yet (new)
    "kind_not_in_baseline",  # the baseline holds no such kind of time for the case (new)
    "figure_not_in_baseline",  # recorded before perfguard measured this figure (new)
    "did_not_run",  # in the baseline, but did not run (missing)
    "not_measured",  # in the baseline, ran but was not measured: an error, a smoke run (missing)
    "both_leak",  # the footprint grows with the calls made, here and in the baseline (unstable)
    "leak",  # a call keeps what it allocates, where it kept nothing before (regressed)
    "grew",  # a count grew past its allowance (regressed)
    "allowed",  # a count grew within its allowance (same)
    "fell",  # a count fell (improved)
    "moved",  # counts moved between names, the total as it was (same)
    "compiled_host",  # the caller's time of a compiled call, past a tolerance its host work moves by between processes (inconclusive)
    "other_model",  # the baseline is another GPU model's, whose times do not judge this one's (new)
    "software_changed",  # counts compared under other software, which picks other kernels: not compared (inconclusive)
    "accepted",  # a person accepted this change (accepted)
]
REASONS: tuple[Reason, ...] = typing.get_args(Reason)
# Shown in a tally only when some verdict has it: most runs accept nothing.
RARE_STATUSES = ("accepted",)

# What to do next, as data: each renders as a command or a declaration (report/words.py).
Action = Literal[
    "accept",  # `perfguard baseline accept RUN.json --case ID` (the gate) or `perfguard pr accept ...` (ab)
    "record",  # `pytest --perfguard --perfguard-update`: a new case or figure, or an improvement
    "raise_budget",  # --perfguard-budget
    "rerun_idle",  # rerun on an idle, cool GPU
    "rerun_quiet",  # rerun on a quieter machine, or raise --perfguard-budget
    "own_runs",  # value: the runs of this card (host) the baseline needs to judge it alone
    "more_runs",  # value: the baseline runs that would make the tolerance the threshold
    "ab",  # `perfguard ab`: base and head by turns on one card
    "threshold",  # value: the threshold that would decide it (`@perf_case(threshold=...)`)
    "more_rounds",  # value: the rounds perfguard ab would need (None: unknown)
    "quieten",  # the spread is too wide here: a quieter machine, or a wider threshold
    "lock_clocks",  # as "quieten", on a GPU: locked clocks
    "allow_counter",  # `counters={kind: N}` on the case, for the verdict's counter
    "find_leak",  # look for tensors kept across calls
    "rerecord",  # re-record the baseline under this software
]


@dataclasses.dataclass(frozen=True, slots=True)
class NextStep:
    """One thing that would settle or act on a verdict; `value` is its figure (runs, rounds, a percent)."""

    action: Action
    value: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LeftOut:
    """A baseline run left out of the spread as far from the others."""

    recorded_at: str
    source: str | None  # the card's UUID (a CPU's host)
    change_pct: float  # from the others' median


# Whose runs judged a time: this card's (a CPU's: this host's) alone, or all the baseline's (the fleet's).
JudgedBy = Literal["own", "fleet"]


@dataclasses.dataclass(frozen=True, slots=True)
class Noise:
    """The noise a time was judged against, and the tolerance it gives, all relative figures in percent:
    the spread of a baseline's runs (analysis/noise.py's estimate), or of `perfguard ab`'s paired rounds
    on one card (analysis/paired.py)."""

    runs: int  # independent runs (ab: paired rounds) behind it, those left out as far from the others not counted
    spread_pct: float  # s: the run-to-run (round-to-round) standard deviation of the median
    tolerance_pct: float  # T: a change past it is regressed / improved
    detectable_pct: float  # D: the smallest slowdown the comparison catches 19 times in 20
    floored: bool = False  # ab: the spread is a prior's floor, rounds being few
    past_bound: bool = False  # T was past the widest tolerance decided by (analysis/decide.py): T and D are that bound
    # The baseline's runs (the gate's; None in a verdict written before schema 7, which did not keep them):
    predicted_pct: float | None = None  # sp: of this run's median against the runs' centre
    centre_ms: float | None = None  # the median of the judged runs' medians
    judged_by: JudgedBy | None = None
    sources: int = 0  # cards (hosts, on a CPU) the judged runs came from
    source: Literal["card", "host"] = "card"  # what a run's source is: a GPU's UUID, or a CPU's host
    own_runs: int = 0  # the baseline's runs from this card (host)
    card_pct: float = 0.0  # the card-to-card prior in sp (0: judged by its own runs, or by runs of enough cards)
    floor_pct: float = 0.0  # the absolute offset added for a card (host) the baseline has not seen
    left_out: tuple[LeftOut, ...] = ()  # the judged runs left out as far from the others
    prior_pct: float | None = None  # s0, the prior the spread was pooled with
    observed_pct: float | None = None  # the spread the kept runs showed


@dataclasses.dataclass(frozen=True, slots=True)
class TimeEvidence:
    """What a time verdict rests on besides its figures: the noise that gave its tolerance (none where no
    runs judged it), and what could account for it or settled it."""

    noise: Noise | None = None
    paired: bool = False  # judged by perfguard ab's rounds, base and head by turns on one card, not by baseline runs
    own_half_width_pct: float | None = None  # this run's own 95% half-width of its median
    throttled_in: tuple[str, ...] = ()  # "baseline", "run", "rounds": where the clock was throttled
    throttle_reasons: tuple[str, ...] = ()
    regimes: tuple[str, ...] = ()  # (the baseline's, this run's) when the time was taken another way
    # How the time was taken: this run's regime (a missing case's: the baseline's), which names what was
    # measured (kinds.shown_metric: a CPU's host clock); None in a record written before verdicts kept it.
    kind_of_time: Regime | None = None
    # Medians (ms) of the re-measurements of a case that first looked regressed; `confirmed` says
    # whether they agreed (None: not re-measured). `not_remeasured`: why a case that looked regressed was
    # not: "spent" (the run's allowance of re-measured cases), or "failed" (with `remeasure_error`).
    remeasured_ms: tuple[float, ...] = ()
    confirmed: bool | None = None
    not_remeasured: Literal["spent", "failed"] | None = None
    remeasure_error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CountChange:
    """How one named count (a kernel, an ATen operator, a sync) changed per call."""

    name: str
    delta: float
    cause: str | None = None  # what a sync is for, where the trace says


@dataclasses.dataclass(frozen=True, slots=True)
class CounterEvidence:
    """What a work counter's verdict rests on: the names whose counts changed, and what it may grow by."""

    counts: tuple[CountChange, ...] = ()  # largest change first
    allowance: str | None = None  # the allowance ("0", "2", "10%")
    allowed_more: float | None = None  # the growth it allows, in the counter's unit


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryEvidence:
    """What a memory verdict rests on besides its figures."""

    held_bytes: tuple[int, int] | None = None  # the footprint's bytes held between calls (baseline, this run)
    retained_bytes: int | None = None  # a leaking footprint: what each call keeps


# What a verdict's change is broken down by: the GPU's time by kernel, the host's by ATen operator, the
# memory at a call's peak by what it holds (a MemoryBreakdown's categories), or else a call's
# allocations by the operator that made them (Counters.alloc_bytes).
MovedBy = Literal["kernel", "operator", "category", "allocation"]


@dataclasses.dataclass(frozen=True, slots=True)
class MovedRow:
    """One kernel's (operator's) time per call, before and after (ms), and its launches per call; one
    category's bytes at the peak (launches None); or one operator's bytes allocated per call, and its calls. A side without the figure: None; with launches there,
    it ran but was too small to be named (in the split's `other`); without, it did not run there (a
    kernel that appeared, or vanished)."""

    name: str
    before: float | None
    after: float | None
    launches_before: float | None = None
    launches_after: float | None = None
    beyond_noise: bool = False  # it moved by more than a row moves between processes


@dataclasses.dataclass(frozen=True, slots=True)
class Where:
    """Where a verdict's change came from (analysis/moved.py): every row either side named, the one that
    moved most first, and the whole change of the split they come from (ms per call; bytes)."""

    by: MovedBy
    rows: tuple[MovedRow, ...]
    moved: float  # after's total less before's, `other` included
    noise_pct: float  # a row's change within this share of its time is noise

    @property
    def culprits(self) -> tuple[MovedRow, ...]:
        return tuple(r for r in self.rows if r.beyond_noise)


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """How one metric of one case compares with its baseline (or, under perfguard ab, the base's rounds):
    its status, the rule that gave it (`reason`), the figures it was decided on, its next steps, and the
    evidence of its kind of figure: `time`, `memory` or `counters` (one of them, or none: a new or missing
    case's). Figures are in the metric's unit (ms for a time, bytes for memory, a count per call for a
    counter). A time's tolerance comes from its noise; deterministic metrics have none.
    """

    case_id: str
    metric: Metric
    status: VerdictStatus
    baseline: float | None  # the centre it was judged against
    current: float | None
    change_pct: float | None
    threshold_pct: float
    baseline_file: str | None
    env_mismatch: tuple[str, ...] = ()  # e.g. "torch 2.11.0 → 2.12.0"; shown, and for counts it decides
    reason: Reason = dataclasses.field(kw_only=True)  # every verdict has the rule that gave it
    next_steps: tuple[NextStep, ...] = ()
    time: TimeEvidence | None = None
    memory: MemoryEvidence | None = None
    counters: CounterEvidence | None = None
    where: Where | None = None  # a time that moved: the kernels (operators) behind it
    status_in: str | None = None  # a missing case's status in this run ("error", "smoke"), None: it did not run
    accepted_reason: str | None = None  # an accepted change: the reason its acceptance gives
    # Where an acceptance entry judged it (accepted, or regressed past it): the most the entry accepts, in
    # the metric's unit (analysis/acceptance.ceiling), and the acceptance file, as the run names it.
    accepted_ceiling: float | None = None
    accepted_file: str | None = None
    # Judged against another GPU model's figures (analysis/across.py): that model, as its file names it.
    baseline_model: str | None = None

    @property
    def compared(self) -> bool:
        """Whether it was compared with the baseline at all (not new or missing)."""
        return self.status not in ("new", "missing")

    @property
    def noise(self) -> Noise | None:
        """The noise a time was judged against; None for other metrics, or where no runs judged it."""
        return self.time.noise if self.time else None

    @property
    def tolerance_pct(self) -> float | None:
        """A change past this is regressed or improved; None where no noise gave one (memory, counters)."""
        return self.noise.tolerance_pct if self.noise else None

    @property
    def detectable_pct(self) -> float | None:
        """The smallest slowdown the comparison catches 19 times in 20; None where no noise gave one."""
        return self.noise.detectable_pct if self.noise else None

    @property
    def kind_of_time(self) -> Regime | None:
        """How a time was taken (TimeEvidence.kind_of_time), which names it; None for other metrics."""
        return self.time.kind_of_time if self.time else None

    @property
    def paired(self) -> bool:
        """Judged by perfguard ab's paired rounds on one card (against its base), not by baseline runs."""
        return bool(self.time and self.time.paired)


def tally(verdicts: typing.Iterable[Verdict]) -> dict[str, int]:
    """How many verdicts of each status, in display order: every status, the rare ones where present."""
    counts = dict.fromkeys(VERDICT_STATUSES, 0)
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    return {s: n for s, n in counts.items() if n or s not in RARE_STATUSES}
