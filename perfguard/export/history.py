"""Drifts over the exported history: asv's own step detection, run the way `asv publish` runs it.

Each benchmark's figures form one series per machine, branch and grid point, in the order of the
repository's history (asv's revisions). asv fits a piecewise-constant function to each series
(`step_detect.detect_steps`: an L1 Potts fit, each commit weighted by the width of its 99%
interval) and `detect_regressions` lists the upward steps past the threshold that the latest level
still shows. A slowdown spread over several commits, each under any single run's threshold, comes
out as one step between the levels before and after it: a drift no single run shows.

asv is imported on call, so perfguard runs without it; without it `find_drifts` says what to install.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

from perfguard import units
from perfguard import git
from perfguard.errors import ConfigError, first_line


@dataclasses.dataclass(frozen=True)
class Step:
    """One upward step asv found: between the last commit at the old level and the first at the new one."""

    commit_before: str
    commit_after: str
    commits_between: int  # commits in commit_before..commit_after: 1 means commit_after stepped
    before: float  # the level before the step
    after: float  # the best level after it


@dataclasses.dataclass(frozen=True)
class Drift:
    """A series whose latest level is worse than its best by more than the threshold, and the steps that
    made it so. Figures are in asv's unit, lower is better (seconds, seconds per GB, bytes)."""

    benchmark: str  # asv's name: "<case>.<metric>"
    case: str
    metric: str  # judged_time, time_per_gb, time_per_tflop, peak_memory or footprint
    params: dict[str, str]  # parameter name → repr, as asv stores it
    machine: str
    branch: str
    best: float  # the best level of the series
    latest: float  # the level at its newest commit
    change_pct: float  # of the figure a person reads (a rate falls when its time per unit rises)
    steps: tuple[Step, ...]
    message: str


@dataclasses.dataclass(frozen=True)
class History:
    drifts: tuple[Drift, ...]
    series: int  # series looked at (benchmark × grid point × machine × branch)
    commits: int  # commits with results on the configured branches
    off_branch: int  # result files of commits asv does not draw (not in the branches' history)


def find_drifts(asv_dir: Path | str, *, threshold_pct: float = 5.0, repo: Path | str | None = None) -> History:
    """asv's step detection over the exported folder `asv_dir` (what `perfguard asv-export --to` wrote)."""
    try:
        return _find_drifts(Path(asv_dir), threshold_pct, repo)
    except RecursionError:  # asv's JSON readers have no guard of their own against hostile nesting
        raise ConfigError(f"{asv_dir}: holds JSON nested too deeply for asv to read; export into a fresh folder") from None


def _find_drifts(asv_dir: Path, threshold_pct: float, repo: Path | str | None) -> History:
    asv = _import_asv()
    config = asv_dir / "asv.conf.json"
    if not config.is_file():
        raise ConfigError(f"{config}: no such file; pass the folder `perfguard asv-export --to` wrote")
    try:
        conf = asv.Config.load(str(config))
    except asv.UserError as exc:
        raise ConfigError(f"{config}: {first_line(str(exc), type(exc).__name__)}") from None
    # asv resolves these from the config's folder (it chdirs there); resolve them without chdir.
    conf.results_dir = str(asv_dir / conf.results_dir)
    conf.repo = str(git.check_repo(Path(repo) if repo is not None else asv_dir / conf.repo))
    conf.dvcs = "git"
    try:
        benchmarks = asv.Benchmarks.load(conf)
    except asv.UserError as exc:
        raise ConfigError(f"{asv_dir}: {first_line(str(exc), type(exc).__name__)}; export records into it first") from None
    checkout = asv.get_repo(conf)
    results = list(asv.iter_results(conf.results_dir))
    revisions = checkout.get_revisions({r.commit_hash for r in results})
    to_hash = {rev: h for h, rev in revisions.items()}
    branches = {checkout.get_branch_name(b): set(checkout.get_branch_commits(b)) for b in conf.branches}

    graphs = asv.GraphSet()  # publish's loop (asv/commands/publish.py), less the site
    drawn, off_branch = set(), 0
    for result in results:
        on = [b for b, commits in branches.items() if result.commit_hash in commits and result.commit_hash in revisions]
        off_branch += not on
        for key in result.get_result_keys(benchmarks):
            params = benchmarks[key]["params"]
            value = result.get_result_value(key, params)
            weight = [asv.get_weight(s) for s in result.get_result_stats(key, params)]
            if not params:
                value, weight = value[0], weight[0]
            for branch in on:
                drawn.add(result.commit_hash)
                graph = graphs.get_graph(key, {**result.params, "branch": branch})
                graph.add_data_point(revisions[result.commit_hash], value, weight)

    drifts, series = [], 0
    for _path, graph in graphs:
        bench = benchmarks[graph.benchmark_name]
        grid = list(itertools.product(*bench["params"])) if bench["params"] else [()]
        steps = graph.get_steps() if bench["params"] else [graph.get_steps()]
        for point, point_steps in zip(grid, steps):
            series += 1
            latest, best, jumps = asv.detect_regressions(point_steps, threshold_pct / 100)
            if jumps:
                found = tuple(
                    Step(to_hash[ra], to_hash[rb], len(checkout.get_hashes_from_range(f"{to_hash[ra]}..{to_hash[rb]}")), va, vb)
                    for ra, rb, va, vb in jumps)
                drifts.append(_drift(bench, dict(zip(bench["param_names"], point)), graph.params, best, latest, found))
    drifts.sort(key=lambda d: (-abs(d.change_pct), d.benchmark, sorted(d.params.items()), d.machine, d.branch))
    return History(tuple(drifts), series, len(drawn), off_branch)


def _drift(bench: dict[str, Any], params: dict[str, str], graph_params: dict[str, Any], best: float, latest: float,
           steps: tuple[Step, ...]) -> Drift:
    case, _, metric = bench["name"].rpartition(".")
    label = f"{case}[{', '.join(f'{k}={v}' for k, v in params.items())}]" if params else case
    figure, show = _figure(metric, bench.get("unit", ""))
    change = _change_pct(metric, best, latest)
    # A step's own levels are shown where they are not the whole drift's (several steps, or drift after one).
    own = len(steps) > 1 or (show(steps[0].before), show(steps[0].after)) != (show(best), show(latest))
    where = "; ".join(
        (f"at {s.commit_after[:12]}" if s.commits_between == 1
         else f"between {s.commit_before[:12]} and {s.commit_after[:12]} ({s.commits_between} commits)")
        + (f" ({show(s.before)} → {show(s.after)})" if own else "") for s in steps)
    message = (f"{label} {figure} on {graph_params.get('machine')} ({graph_params.get('branch')}): "
               f"{show(best)} → {show(latest)} ({change:+.1f}%); stepped {where}")
    return Drift(bench["name"], case, metric, params, str(graph_params.get("machine")), str(graph_params.get("branch")),
                 best, latest, change, steps, message)


def _figure(metric: str, unit: str) -> tuple[str, Any]:
    """How a person reads the metric: inverted figures are turned back into GB/s and TFLOP/s."""
    if metric == "time_per_gb":
        return "bandwidth", lambda v: f"{1 / v:,.1f} GB/s"
    if metric == "time_per_tflop":
        return "compute rate", lambda v: f"{1 / v:,.2f} TFLOP/s"
    if metric in ("peak_memory", "footprint"):
        return metric.replace("_", " "), units.size
    if unit == "seconds":
        return metric, lambda v: units.duration(v * 1e3)
    return metric, lambda v: f"{v:.4g} {unit}".strip()


def _change_pct(metric: str, before: float, after: float) -> float:
    """The change of the figure a person reads: a rate falls by 1 - before/after when its time rises."""
    if metric in ("time_per_gb", "time_per_tflop"):
        return 100.0 * (before / after - 1)
    return 100.0 * (after / before - 1) if before else float("inf")


class _Asv:
    """The parts of asv that history uses, imported together so a missing asv is one error."""

    def __init__(self) -> None:
        from asv._stats import get_weight
        from asv.benchmarks import Benchmarks
        from asv.config import Config
        from asv.graph import GraphSet
        from asv.repo import get_repo
        from asv.results import iter_results
        from asv.step_detect import detect_regressions
        from asv.util import UserError

        self.get_weight, self.Benchmarks, self.Config, self.GraphSet = get_weight, Benchmarks, Config, GraphSet
        self.get_repo, self.iter_results, self.detect_regressions, self.UserError = (
            get_repo, iter_results, detect_regressions, UserError)


def _import_asv() -> _Asv:
    try:
        return _Asv()
    except ImportError:
        raise ConfigError("asv is not installed; pip install asv (or pip install 'perfguard[asv]') to find drifts") from None
