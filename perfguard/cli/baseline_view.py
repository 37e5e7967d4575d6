"""`perfguard baseline show`: each case as the gate judges it, with the figures the gate's verdict uses.

The gate does not compare a run with the baseline's newest run, nor with the range of its runs: it
compares it with the centre of the runs that judge it (analysis/noise.py's `estimate`), within a
tolerance from their spread, after leaving out the runs far from the others. Which runs judge it
depends on the card the run comes from: a card with noise.OWN_RUNS runs of its own in the baseline is
judged by those, any other by the fleet's. So `show` asks `noise.estimate` the question the gate asks
(verdict._time), for a stand-in run of each case: by default one from a card (on a CPU, a host) the
baseline has not seen, which is the fleet's view and what a new CI runner gets; with `--card ID`, one
from that card, which a card with its own runs sees. The header says which.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Sequence

from perfguard import units
from perfguard.analysis import noise
from perfguard.model import BaselineEntry, BaselineFile, CaseResult, Noise, RunSummary, names, time_label
from perfguard.report import words

# The stand-in's source when no --card is named: no run of a baseline comes from it.
UNSEEN = "a card not in the baseline"
UNKNOWN = "?"  # the letter of a run with no source (recorded before perfguard kept cards and hosts)
HEADER = ("case", "time", "centre", "spread", "tolerance", "detects", "runs", "judged by", "runs by card", "recorded_at",
          "commit")


@dataclasses.dataclass(frozen=True)
class CaseView:
    """One case as the gate sees it: its judged time's noise (None: no run measured it) and its runs."""

    case_id: str
    entry: BaselineEntry
    metric: str
    threshold_pct: float
    estimate: Noise | None

    @property
    def label(self) -> str:
        """The judged time in words, by how the case was timed: "GPU time", on a CPU "host time"."""
        return time_label(self.metric, self.entry.result.regime)

    @property
    def without_metric(self) -> int:
        """Runs that did not measure the judged time (recorded before perfguard timed it so): never judged."""
        return sum(1 for r in self.entry.runs if not r.median_of(self.metric))


def judged_as(entry: BaselineEntry, card: str | None) -> tuple[CaseResult, str | None]:
    """The stand-in run of `entry`'s case, and its host, that noise.estimate is asked about: the case as
    the baseline last measured it, from `card` (a run source: a GPU's UUID, or on a CPU a host), or
    from a source the baseline has not seen. Only its source differs from the baseline's result, so
    its kind of case (the priors') and its own threshold are the case's."""
    gpu = bool(entry.result.device_uuid) or any(r.device_uuid for r in entry.runs)
    source = card or UNSEEN
    current = dataclasses.replace(entry.result, device_uuid=source if gpu else None)
    return current, None if gpu else source


def case_view(case_id: str, entry: BaselineEntry, threshold_pct: float, card: str | None = None) -> CaseView:
    """What `verdict._time` asks `noise.estimate` for this case's judged time, with a stand-in run."""
    current, host = judged_as(entry, card)
    threshold = current.threshold if current.threshold is not None else threshold_pct
    metric = current.judged_metric
    return CaseView(case_id, entry, metric, threshold, noise.estimate(current, entry, threshold, host=host, metric=metric))


def card_letters(baseline: BaselineFile) -> dict[str, str]:
    """Each run source of the baseline (a card's UUID, or a host) -> a letter (A, B, ...), in the order
    first recorded: a column of "A×3 B×7" fits where three 40-character UUIDs do not."""
    sources = dict.fromkeys(src for e in sorted(baseline.cases.values(), key=lambda e: e.recorded_at)
                            for r in sorted(e.runs, key=lambda r: r.recorded_at) if (src := noise.run_source(r)))
    letters = string.ascii_uppercase
    return {src: letters[i] if i < len(letters) else f"#{i + 1}" for i, src in enumerate(sources)}


def short(source: str) -> str:
    """A card's UUID as far as people tell cards apart ("GPU-f3bcac4c-12da-..." -> "f3bcac4c"); a host as it is."""
    return source[4:12] if source.startswith("GPU-") else source


def legend(baseline: BaselineFile, letters: dict[str, str]) -> list[str]:
    """A line per run source: its letter, short UUID (or host), the host it ran on, its runs (a run records
    every case it measured at one instant) and the cases they measured."""
    runs: dict[str | None, list[RunSummary]] = {}
    cases: dict[str | None, set[str]] = {}  # once, in the same pass: not a scan of the file per source
    for case_id, e in baseline.cases.items():
        for r in e.runs:
            src = noise.run_source(r)
            runs.setdefault(src, []).append(r)
            cases.setdefault(src, set()).add(case_id)
    lines = [f"{UNKNOWN} = a run that recorded neither its card nor its host"] if None in runs else []
    for src, letter in letters.items():
        hosts = sorted({r.host for r in runs[src] if r.host and r.host != src})
        on = f" on host {', '.join(hosts)}" if hosts else ""
        made = len({r.recorded_at for r in runs[src]})
        lines.append(f"{letter} = {short(src)}{on}: {units.plural(made, 'run')} of {units.plural(len(cases[src]), 'case')} "
                     f"(full id {src})")
    return lines


def row(view: CaseView, letters: dict[str, str]) -> tuple[str, ...]:
    est, e = view.estimate, view.entry
    by_card: dict[str, int] = {}
    for r in e.runs:
        letter = letters.get(noise.run_source(r) or "", UNKNOWN)
        by_card[letter] = by_card.get(letter, 0) + 1
    cards = " ".join(f"{letter}×{n}" for letter, n in sorted(by_card.items()))
    if est is None:
        figures = ("-", "-", "-", "-", f"0/{len(e.runs)}", "no run measured it")
    else:
        figures = (units.precise_duration(est.centre_ms), f"±{est.spread_pct:.2f}%", words.noise_pct(est.tolerance_pct, est, "±"),
                   words.noise_pct(est.detectable_pct, est), f"{est.runs}/{len(e.runs)}",
                   f"{'its own' if est.judged_by == 'own' else 'fleet'}, {units.plural(est.sources, est.source)}")
    return (view.case_id, view.label, *figures, cards, e.recorded_at, (e.commit or "-")[:12])


def left_out_lines(views: Sequence[CaseView]) -> list[str]:
    """The runs a case's judged time leaves out, and why: far from the others (noise.far_runs), or
    recorded without that time."""
    lines = []
    for v in views:
        for run in v.estimate.left_out if v.estimate else ():
            where = names.shown(run.source or "an unknown machine")
            lines.append(f"{v.case_id}: left out the run of {run.recorded_at} on {where} ({run.change_pct:+.1f}% from "
                         "the others' median), far from the others")
        if v.without_metric:
            lines.append(f"{v.case_id}: left out {units.plural(v.without_metric, 'run')} that did not measure "
                         f"{v.label}")
    return lines


def viewpoint(card: str | None, threshold_pct: float) -> list[str]:
    """The header lines that say whose view the figures are, and what each figure is."""
    who = (f"a run from {short(card)}: judged by its own runs where it has {noise.OWN_RUNS} of a case, else by the "
           "fleet's" if card else f"a run from {UNSEEN} (a new runner): judged by the fleet's runs (--card ID: a "
           "card's own view)")
    return [f"as the gate judges {who}; threshold {threshold_pct:g}% or the case's own",
            "centre: the median of the judged runs' medians; spread: their run-to-run s.d.; tolerance: what a change "
            "must pass; detects: the smallest slowdown caught 19 times in 20; runs: judged / in the baseline"]


def find_card(baseline: BaselineFile, wanted: str) -> str | None:
    """The run source whose UUID, short UUID or host is `wanted` (a prefix will do); None when none is."""
    sources = {src for e in baseline.cases.values() for r in e.runs if (src := noise.run_source(r))}
    matches = sorted(s for s in sources if s == wanted or short(s).startswith(wanted) or s.startswith(wanted))
    return matches[0] if len(matches) == 1 else None
