"""A/B in one job: a base revision and the working tree, measured by turns on the same card(s).

    perfguard ab --base REF [--rounds N] [--max-rounds M] [--budget SECONDS] [-n GPUS] [--fail-inconclusive]
                 [--strict] [--threshold PCT] [--counter-allowance ALLOWANCE] [--baselines DIR] [--report DIR]
                 [-- PYTEST ARGS]

REF is checked out into a temporary git worktree (removed afterwards, also on an error, Ctrl-C or
SIGTERM; one an earlier ab left, killed, is removed at the start: perfguard/ab/stale.py).
Each round runs `python -m pytest PYTEST_ARGS --perfguard` once per side, base and head in turn and in
alternating order (B H, H B, B H, ...: perfguard/ab/sides.py). After N rounds (default 3) each case's
times are judged on the differences of its two sides' round medians, round by round
(perfguard/analysis/paired.py): what a round's two runs share cancels, so the spread is ab's own,
measured on this card. A case the rounds cannot decide yet (its smallest detectable change is over
the threshold and its change within its tolerance) gets another round, and only such cases run
again (--perfguard-cases), until every case is decided, a case has had M rounds, or the next round
would overrun the budget of the whole ab. A case still undecided then is `inconclusive`, never `same`.

A case the base runs and the head does not (a skip mark, -k, a rename or removal on the head) is
`missing`: it is not judged, and a pull request could hide its own regression so. Its line is
always printed; with --strict (CI) it fails the run, as --perfguard-strict fails a missing case. So
do the head's acceptance entries for a case it does not run (analysis/acceptance.unmeasured).

With -n GPUS the tests are shared out over that many GPUs once, before the first round, and each
stays on its GPU for every round of both sides (perfguard/ab/shards.py); each shard is a pytest
process of its own, pinned to its GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfguard import defaults
from perfguard.ab import rounds as rounds_
from perfguard.ab import shards as shards_
from perfguard.ab import stale
from perfguard.ab.sides import (SIDES, Side, import_path, perfguard_shim, repository_root, resolve, schedule,
                                worktree)
from perfguard.errors import BaselineError, ConfigError, MeasurementError
from perfguard.model import RunRecord
from perfguard.report import write_run_files

if TYPE_CHECKING:
    from perfguard.analysis.ab_verdict import Judged
    from perfguard.analysis.scaling import Scaling

__all__ = ["BASE_RECORD_NAME", "Settings", "import_path", "run_ab", "schedule"]

BASE_RECORD_NAME = "perfguard-base.json"


@dataclasses.dataclass(frozen=True)
class Settings:
    rounds: int = defaults.AB_ROUNDS  # every case gets these before the first judgement
    max_rounds: int = defaults.AB_MAX_ROUNDS
    budget_s: float = defaults.AB_BUDGET_S  # the whole ab's wall time
    shards: int | None = 1  # GPUs (-n); None: every visible GPU (-n auto)
    threshold_pct: float | None = None
    fail_inconclusive: bool = False
    counter_allowance: Mapping[str, str] | None = None  # the run's (--counter-allowance); a case's counters= overrides it
    baselines: str = defaults.BASELINES_DIR  # where the head's acceptance file lies (store/acceptances.py)
    strict: bool = False  # --strict: a case the head does not run (or an acceptance entry for one) fails the run


def run_ab(
    base_ref: str,
    pytest_args: Sequence[str],
    settings: Settings = Settings(),
    *,
    report_dir: Path | str = "reports",
    cwd: Path | str | None = None,
    out: Callable[[str], None] = print,
    start: rounds_.Launch | None = None,
) -> int:
    """Measure both sides, print the verdicts, write the reports; 1 when a case regressed, else 0."""
    import os

    from perfguard.measure import gpus

    if settings.max_rounds < settings.rounds:
        raise ConfigError(f"--max-rounds {settings.max_rounds} is below --rounds {settings.rounds}; give at least as many")
    began = time.monotonic()
    here = Path(cwd or os.getcwd()).resolve()
    root = repository_root(here)
    for path in stale.prune(root):
        out(f"perfguard ab: removed the worktree {path}, which an ab that is no longer running left behind")
    sha = resolve(root, base_ref)
    with contextlib.ExitStack() as stack:
        stack.enter_context(stale.sigterm_unwinds())  # SIGTERM too removes the worktree below (ab/stale.py)
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=stale.PREFIX)))
        stale.claim(tmp)
        tree = stack.enter_context(worktree(root, sha, tmp / stale.BASE))
        stack.callback(rounds_.stop_running)  # first: no round's pytest keeps running in a removed checkout
        shim = perfguard_shim(tmp)
        inherited = os.environ.get("PYTHONPATH")
        if not (tree / here.relative_to(root)).is_dir():
            raise ConfigError(f"{here.relative_to(root)}: no such folder at {base_ref}; run perfguard ab from a folder both revisions have")
        sides = {
            "base": Side("base", f"base {base_ref} ({sha[:12]})", tree, tree / here.relative_to(root),
                         import_path(tree, root, shim, inherited)),
            "head": Side("head", "working tree", root, here, import_path(root, root, shim, inherited)),
        }
        visible = gpus.visible() if settings.shards != 1 else ()
        plan = shards_.plan(settings.shards or max(1, len(visible)), visible)
        loop = _Loop(settings, sides, plan, pytest_args, tmp, start or rounds_.launch, out, began)
        judged = loop.run()
    return _finish(judged, loop, sides, settings, Path(report_dir), out, time.monotonic() - began, here / settings.baselines)


class _Loop:
    """The rounds: all cases for the first `rounds`, then the undecided ones, while the budget lasts."""

    def __init__(self, settings: Settings, sides: Mapping[str, Side], plan: list[shards_.Shard], args: Sequence[str],
                 tmp: Path, start: rounds_.Launch, out: Callable[[str], None], began: float):
        self.settings, self.sides, self.plan, self.args = settings, sides, plan, list(args)
        self.tmp, self.start, self.out, self.began = tmp, start, out, began
        self.runs: dict[str, list[rounds_.Ran]] = {name: [] for name in SIDES}
        self.assignment: dict[str, int] | None = None
        self.stopped = ""
        self.sizes: list[int] = []  # cases run per round

    def run(self) -> Judged:
        from perfguard.analysis.ab_verdict import judge_rounds

        s = self.settings
        pending = self._shard_out() if len(self.plan) > 1 else None
        k = 0
        while True:
            for name, _ in schedule(k + 1, k):
                self._round(name, k, None if pending is None else pending[name])
            k += 1
            if k < s.rounds:
                continue
            judged = judge_rounds([r.record for r in self.runs["base"]], [r.record for r in self.runs["head"]],
                                  threshold_pct=s.threshold_pct if s.threshold_pct is not None else defaults.THRESHOLD_PCT,
                                  baseline_file=self.sides["base"].label, head_file=self.sides["head"].label,
                                  most_rounds=s.max_rounds, counter_allowance=s.counter_allowance)
            undecided = judged.undecided(s.max_rounds)
            if not undecided:
                self.stopped = "every case decided, or past deciding in --max-rounds"
                return judged
            if k >= s.max_rounds:
                self.stopped = f"--max-rounds {s.max_rounds} reached"
                return judged
            pending = {name: self._nodeids(name, undecided) for name in SIDES}
            estimate = sum(self._estimate(name, pending[name]) for name in SIDES)
            elapsed = time.monotonic() - self.began
            if elapsed + estimate > s.budget_s:
                self.stopped = (f"the next round (about {estimate:.0f} s) would overrun the budget "
                                f"({elapsed:.0f} s of {s.budget_s:g} s spent)")
                return judged
            self.out(f"perfguard ab: {len(undecided)} case(s) undecided after {k} rounds; round {k + 1} runs them again "
                     f"(about {estimate:.0f} s)")

    def _round(self, name: str, k: int, nodeids: list[str] | None) -> None:
        side = self.sides[name]
        cases = None if nodeids is None else shards_.split(nodeids, self.assignment or {}, len(self.plan))
        ran = rounds_.run_side(side, k, self.args, self.plan, cases, self.tmp / "rounds" / f"{name}-{k + 1}",
                               self.tmp / "no-baselines", self.start)
        self.runs[name].append(ran)
        if name == "head":
            self.sizes.append(len(ran.record.results))
        failed = " (pytest exit 1: a test failed; the cases it measured still count)" if ran.failed else ""
        gpus = f" on {len(ran.fixed_s)} GPUs" if len(self.plan) > 1 else ""
        self.out(f"round {k + 1} {name:<4}  {side.label}: {len(ran.record.results)} case(s){gpus} in {ran.wall_s:.1f} s{failed}")

    def _shard_out(self) -> dict[str, list[str]]:
        """-n N: each side's node ids, collected side by side, and one assignment of their union."""
        waits = {name: rounds_.collect(self.sides[name], self.args, self.tmp / "collect" / name, self.start)
                 for name in SIDES}
        collected = {name: wait() for name, wait in waits.items()}
        for name, ids in collected.items():
            if ids is None:
                raise MeasurementError(f"{self.sides[name].label}: pytest --collect-only failed in {self.sides[name].cwd} "
                                       "(its last lines are above); check the pytest arguments")
        ids = {name: list(ids or ()) for name, ids in collected.items()}
        self.assignment = shards_.assign(ids["base"] + ids["head"], len(self.plan))
        counts = [sum(1 for i in self.assignment.values() if i == s.index) for s in self.plan]
        where = ", ".join(s.gpu for s in self.plan if s.gpu is not None) or "this machine's CPU (no GPU visible)"
        self.out(f"perfguard ab -n {len(self.plan)}: {len(self.assignment)} test(s) over {where}: "
                 f"{shards_.balance(counts)}, each on its GPU for every round of both sides")
        if all(s.gpu is None for s in self.plan):
            self.out(f"perfguard ab -n {len(self.plan)}: no GPU is visible, so the {len(self.plan)} shards measure on the "
                     "CPU at once and time each other's work")
        return ids

    def _nodeids(self, name: str, case_ids: Sequence[str]) -> list[str]:
        wanted = set(case_ids)
        return sorted({r.nodeid for ran in self.runs[name] for r in ran.record.results if r.id in wanted and r.nodeid})

    def _estimate(self, name: str, nodeids: Sequence[str]) -> float:
        """Seconds the side's next round should take: per shard its fixed part (the median of its rounds')
        and its cases' own time (each one's mean over its rounds); the slowest shard's."""
        per_case: dict[str, list[float]] = {}
        for ran in self.runs[name]:
            this_round: dict[str, float] = {}  # a test's perf() calls together: it runs whole
            for r in ran.record.results:
                this_round[r.nodeid] = this_round.get(r.nodeid, 0.0) + rounds_.case_seconds(r)
            for nodeid, seconds in this_round.items():
                per_case.setdefault(nodeid, []).append(seconds)
        by_shard: dict[int, float] = {}
        for nodeid in nodeids:
            shard = (self.assignment or {}).get(nodeid, 0)
            by_shard[shard] = by_shard.get(shard, 0.0) + statistics.fmean(per_case.get(nodeid) or [0.0])
        fixed = {s.index: statistics.median([ran.fixed_s[s.index] for ran in self.runs[name] if s.index in ran.fixed_s] or [0.0])
                 for s in self.plan}
        return max((fixed[i] + t for i, t in by_shard.items()), default=0.0)


def _finish(judged: Judged, loop: _Loop, sides: Mapping[str, Side], settings: Settings, report_dir: Path,
            out: Callable[[str], None], wall_s: float, baselines: Path) -> int:
    from perfguard.analysis import pooling
    from perfguard.analysis.acceptance import unmeasured
    from perfguard.analysis.judgement import judge
    from perfguard.report import steps
    from perfguard.report.advice import ranked_scalings
    from perfguard.report.commands import Invocation
    from perfguard.report.terminal import record_lines, verdict_count
    from perfguard.store import acceptances

    # The head's acceptance file: the changes its pull request says are intended, reviewed in its diff (one
    # that cannot be read accepts nothing, and says why below: the rounds measured stand).
    accepted_file, accepted = acceptances.path_in(settings.baselines), acceptances.read(baselines)
    judgement = judge(judged.head.results, judged.verdicts, accepted, fail_inconclusive=settings.fail_inconclusive,
                      before={r.id: r for r in judged.base.results}, accepted_file=str(accepted_file))
    verdicts = tuple(sorted(judgement.verdicts, key=lambda v: (v.case_id, v.metric)))
    rounds = len(loop.runs["head"])
    summary = {"rounds": rounds, "cases_per_round": loop.sizes, "max_rounds": settings.max_rounds,
               "budget_s": settings.budget_s, "wall_s": round(wall_s, 1), "gpus": len(loop.plan), "stopped": loop.stopped}
    head = dataclasses.replace(judged.head, verdicts=verdicts, options={**judged.head.options, "ab": summary})
    base = dataclasses.replace(judged.base, options={**judged.base.options, "ab": summary})
    fits = ranked_scalings(head.results, head.devices)  # once, for the summary and both reports
    for line in record_lines(head, fits):
        out(line)
    _write(report_dir, pooling.thinned(base), pooling.thinned(head), fits, out)
    later = f", then {' + '.join(str(n) for n in loop.sizes[settings.rounds:])} case(s)" if rounds > settings.rounds else ""
    out(f"perfguard ab: {sides['head'].label} against {sides['base'].label}: {rounds} round(s) a side "
        f"({loop.sizes[0] if loop.sizes else 0} case(s) in each of the first {min(rounds, settings.rounds)}{later}), "
        f"{wall_s:.0f} s of a {settings.budget_s:g} s budget; stopped: {loop.stopped}")
    out(f"perfguard ab: {verdict_count(verdicts)}")
    if judgement.unread:
        out(f"perfguard ab: not accepted: {judgement.unread}")
    for refused in judgement.refused:
        out(f"perfguard ab: not accepted: {steps.refused_line(refused, accepted_file)}")
    for change in judgement.spent:
        out(f"perfguard ab: {steps.spent_line(change, accepted_file, base=True)}")
    accept = steps.accept_line(judgement.accept, Invocation(baselines=settings.baselines, report=str(report_dir)), paired=True)
    if accept:
        out(accept)
    status = 1 if judgement.failing else 0

    def strict_line(line: str) -> int:
        """A line of what the head does not run; under --strict it fails the run (the status it gives)."""
        out(f"perfguard ab: {'strict: ' if settings.strict else ''}{line}"
            + ("; this fails the run" if settings.strict else "; --strict fails the run on them"))
        return 1 if settings.strict else 0

    gone = sorted({v.case_id for v in verdicts if v.status == "missing"})
    if gone:
        status = max(status, strict_line(f"{len(gone)} case(s) ran on the base but not on the head (skipped, deselected, "
                                         f"renamed or removed there): not judged: {', '.join(gone)}"))
    unmeasured_entries = [] if isinstance(accepted, BaselineError) else unmeasured(accepted, judged.head.results)
    if unmeasured_entries:
        status = max(status, strict_line(steps.unmeasured_line(unmeasured_entries, accepted_file)))
    return status


def _write(folder: Path, base: RunRecord, head: RunRecord, fits: Sequence[Scaling], out: Callable[[str], None]) -> None:
    """The head's record (with its verdicts), the base's, and the HTML and Markdown reports of the head.
    A file that cannot be written or rendered is one line; the verdicts above stand."""
    for path, problem in write_run_files(folder, head, fits, others=[(BASE_RECORD_NAME, base)]):
        out(f"perfguard: {problem or f'wrote {path}'}")
