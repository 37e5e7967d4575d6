"""What can `perfguard history` find? Synthetic histories, by run-to-run noise, through perfguard's own code.

Each history is a list of per-commit levels (1.0 = the figure at the first commit); every commit's
figure gets Gaussian run-to-run noise of the given relative size. The histories go the way a CI
job's records go: a git repository gets a commit per level, each commit a run record (a case per
history, its grid the noise and the seed, each case's 100 samples spread 1% about its figure), and
each record is exported with `perfguard.export.export` (`perfguard asv-export`); then
`perfguard.export.find_drifts` (`perfguard history`, default 5% threshold) looks at the folder. A
history counts as flagged when find_drifts lists a drift for its grid point. asv weighs each commit
by the width of its median's 99% interval, from those samples, as it does for real records.
CPU only, under a minute.

    python benchmarks/history_detection.py [--seeds 100]
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from machine import describe

from perfguard.analysis.stats import timing
from perfguard.export import export, find_drifts
from perfguard.model import CaseResult, DeviceInfo, RunRecord

HISTORIES = {
    "+20% at commit 3 of 6": [1.0] * 2 + [1.2] * 4,
    "+10% at commit 3 of 6": [1.0] * 2 + [1.1] * 4,
    "two +3.5% steps, 9 commits": [1.0] * 3 + [1.035] * 3 + [1.035**2] * 3,
    "two +3.5% steps, 15 commits": [1.0] * 5 + [1.035] * 5 + [1.035**2] * 5,
    "+2.5% a commit for 4 of 6 commits": [1.0, 1.0] + [1.025**i for i in range(1, 5)],
    "steady, 9 commits": [1.0] * 9,
}
NOISE = (0.001, 0.003, 0.01)
SAMPLES, SPREAD = 100, 0.01  # each run's samples about its figure: they set asv's weight for the commit
MEDIAN_MS = 0.1  # the figure at level 1.0
CPU = DeviceInfo(kind="cpu", name="synthetic", slug="synthetic")


def figures(levels: list[float], noise: float, seed: int) -> list[float]:
    """The history's per-commit figures: its levels with run-to-run noise."""
    rng = np.random.default_rng(seed)
    return [v * (1 + rng.normal(0, noise)) for v in levels]


def make_repo(path: Path, commits: int) -> list[str]:
    """A git repository with a commit a day on `main`; their full hashes, oldest first."""
    def git(*args: str, date: str = "") -> str:
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None
        return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, check=True,
                              env=env).stdout.strip()

    path.mkdir()
    git("init", "-q", "-b", "main")
    for i in range(commits):
        (path / "kernel.py").write_text(f"VERSION = {i}\n")
        git("add", "kernel.py")
        git("-c", "user.name=perfguard", "-c", "user.email=perfguard@example.com", "commit", "-q", "-m", f"change {i}",
            date=f"2026-11-{i + 1:02d}T12:00:00+00:00")
    return git("log", "--reverse", "--format=%H").split()


def record(commit: str, day: int, cases: list[tuple[str, float, int, float]], rng: np.random.Generator) -> RunRecord:
    """The run of one commit: a case per (history, noise, seed) still running there, at its figure."""
    raw = rng.lognormal(0.0, SPREAD, (len(cases), SAMPLES))
    raw /= np.median(raw, axis=1, keepdims=True)  # each run's median is exactly its figure
    results = []
    for (name, noise, seed, figure), row in zip(cases, raw):
        samples = tuple((MEDIAN_MS * figure * row).tolist())
        results.append(CaseResult(id=f"{name}[noise={noise}-seed={seed}]", name=name, status="ok",
                                  params={"noise": noise, "seed": seed}, device=CPU.slug, timer="perf-counter",
                                  timings={"gpu_time": timing(samples)}))
    return RunRecord(created_at=f"2026-11-{day:02d}T13:00:00+00:00", perfguard_version="0.1.0", devices=(CPU,),
                     results=tuple(results), commit=commit)


def flagged(seeds: int, workdir: Path) -> tuple[dict[tuple[str, float], int], int]:
    """Drifts found per (history, noise), over `seeds` seeds each, and the series find_drifts looked at."""
    names = {title: f"history{i}" for i, title in enumerate(HISTORIES)}
    commits = make_repo(workdir / "project", max(map(len, HISTORIES.values())))
    series = {(title, noise, seed): figures(levels, noise, seed)
              for title, levels in HISTORIES.items() for noise in NOISE for seed in range(seeds)}
    rng = np.random.default_rng(0)
    for c, commit in enumerate(commits):  # one record a commit, exported as CI would after each run
        cases = [(names[title], noise, seed, ys[c]) for (title, noise, seed), ys in series.items() if c < len(ys)]
        export([(f"run{c + 1}", record(commit, c + 1, cases, rng))], workdir / "history", repo=workdir / "project")
    history = find_drifts(workdir / "history")
    title_of = {name: title for title, name in names.items()}
    hits: dict[tuple[str, float], int] = collections.Counter()
    for drift in history.drifts:
        hits[title_of[drift.case], float(drift.params["noise"])] += 1
    return hits, history.series


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfguard-history-") as tmp:
        hits, series = flagged(args.seeds, Path(tmp))
    if series != len(HISTORIES) * len(NOISE) * args.seeds:
        print(f"find_drifts looked at {series} series, not {len(HISTORIES) * len(NOISE) * args.seeds}", file=sys.stderr)
        return 1
    print(describe())
    print("| history | " + " | ".join(f"noise {100 * n:.1f}%" for n in NOISE) + " |")
    print("| --- |" + " ---: |" * len(NOISE))
    for title in HISTORIES:
        print(f"| {title} | " + " | ".join(f"{hits[title, n]}/{args.seeds}" for n in NOISE) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
