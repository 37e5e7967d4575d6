"""A/B in one job: a base revision and the working tree, measured by turns on the same machine.

    perfguard ab --base REF [--rounds N] [--threshold PCT] [--report DIR] [-- PYTEST ARGS]

REF is checked out into a temporary git worktree (removed afterwards, also on an error or Ctrl-C).
Each round runs `python -m pytest PYTEST_ARGS --perfguard` once per side, base and head in turn and
in alternating order (B H, H B, B H, ...), so that slow clock and temperature drift reach both sides
alike. Each side's rounds are pooled per case (perfguard.analysis.pooling) and judged by the rules of
the baseline gate (perfguard.analysis.verdict), the base standing in for the baseline file.

Which code each side runs: pytest runs in the side's tree (the same sub-folder of it as the current
one), with PYTHONPATH holding, in order, the running perfguard, the tree's `src/` (if any) and its top,
then the inherited PYTHONPATH with every entry inside the repository moved into the tree. So each
side imports its own revision of the project (ahead of an editable or ordinary install of it), and
both sides record with this perfguard, so both records are in one format. The working tree is
measured as it is, uncommitted changes included; the base is REF as committed (no untracked files,
no submodules checked out).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import perfguard
from perfguard import defaults, git
from perfguard.errors import ConfigError, MeasurementError, PerfguardError
from perfguard.model import RunRecord, loads_record
from perfguard.report import RECORD_NAME, write_run_files

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

SIDES = ("base", "head")
DEFAULT_ROUNDS = defaults.AB_ROUNDS
BASE_RECORD_NAME = "perfguard-base.json"
WORKTREE_TIMEOUT_S = 300  # checking out a large repository takes a while


@dataclasses.dataclass(frozen=True)
class Side:
    name: str  # "base" or "head"
    label: str  # what the report calls it: "base HEAD~1 (1a2b3c4d5e6f)", "working tree"
    tree: Path  # the top of its checkout
    cwd: Path  # where its pytest runs


def schedule(rounds: int) -> list[tuple[str, int]]:
    """(side, round) in run order: base then head, then head then base, and so on (ABBA)."""
    order = []
    for k in range(rounds):
        order += [(side, k) for side in (SIDES if k % 2 == 0 else SIDES[::-1])]
    return order


def run_ab(
    base_ref: str,
    pytest_args: Sequence[str],
    *,
    rounds: int = DEFAULT_ROUNDS,
    threshold_pct: float | None = None,
    report_dir: Path | str = "reports",
    cwd: Path | str | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Measure both sides, print the verdicts, write the reports; 1 when a case regressed, else 0."""
    from perfguard.analysis import pooling, verdict

    here = Path(cwd or os.getcwd()).resolve()
    root = repository_root(here)
    sha = resolve(root, base_ref)
    head = Side("head", "working tree", root, here)
    with tempfile.TemporaryDirectory(prefix="perfguard-ab-") as tmp, worktree(root, sha, Path(tmp) / "base") as tree:
        base = Side("base", f"base {base_ref} ({sha[:12]})", tree, tree / here.relative_to(root))
        if not base.cwd.is_dir():
            raise ConfigError(f"{here.relative_to(root)}: no such folder at {base_ref}; run perfguard ab from a folder both revisions have")
        shim = _perfguard_shim(Path(tmp))
        records: dict[str, list[RunRecord]] = {"base": [], "head": []}
        for name, k in schedule(rounds):
            side = base if name == "base" else head
            records[name].append(_round(side, k, rounds, pytest_args, root, shim, Path(tmp), out))
    base_record, head_record = (pooling.pool_records(records[name]) for name in SIDES)
    verdicts = verdict.compare_records(
        base_record,
        head_record,
        threshold_pct=verdict.DEFAULT_THRESHOLD_PCT if threshold_pct is None else threshold_pct,
        baseline_file=base.label,
        head_file=head.label,
        base_rounds=records["base"],  # each round is a run: the case's tolerance comes from their spread
    )
    head_record = dataclasses.replace(head_record, verdicts=tuple(sorted(verdicts, key=lambda v: (v.case_id, v.metric))))
    from perfguard.report.advice import ranked_scalings
    from perfguard.report.terminal import record_lines

    fits = ranked_scalings(head_record.results, head_record.devices)  # once, for the summary and both reports
    for line in record_lines(head_record, fits):
        out(line)
    _write(Path(report_dir), pooling.thinned(base_record), pooling.thinned(head_record), fits, out)
    tally = verdict.counts(verdicts)
    out(f"perfguard ab: {head.label} against {base.label}, {rounds} round(s) each: "
        + ", ".join(f"{n} {status}" for status, n in tally.items()))
    return exit_status(tally)


def exit_status(tally: Mapping[str, int]) -> int:
    """What perfguard ab exits with, from how many verdicts of each status there are: 1 when a case
    regressed, else 0 (unstable, improved, missing and new cases pass, as in the baseline gate)."""
    return 1 if tally.get("regressed") else 0


# --- git ---------------------------------------------------------------------------------------


def repository_root(path: Path) -> Path:
    top = git.toplevel(path)
    if top is None:
        raise ConfigError(f"{path}: not inside a git repository; perfguard ab compares a revision of one with its working tree")
    return top.resolve()


def resolve(root: Path, ref: str) -> str:
    """The commit a revision names, or one line saying there is none."""
    sha = git.full_hash(root, ref)
    if sha is None:
        raise ConfigError(f"--base {ref}: no such commit in {root}; give a branch, tag or commit (e.g. origin/main, HEAD~1)")
    return sha


@contextlib.contextmanager
def worktree(root: Path, sha: str, path: Path) -> Iterator[Path]:
    """A detached checkout of `sha` at `path`, removed (and unregistered) however the block ends."""
    proc = git.run(root, "worktree", "add", "--detach", str(path), sha, timeout=WORKTREE_TIMEOUT_S)
    if proc.returncode != 0:
        raise ConfigError(f"cannot check out {sha[:12]} into a worktree: {_last_line(proc.stderr)}")
    try:
        yield path.resolve()
    finally:
        git.run(root, "worktree", "remove", "--force", str(path), timeout=WORKTREE_TIMEOUT_S)
        shutil.rmtree(path, ignore_errors=True)
        git.run(root, "worktree", "prune")


# --- rounds ------------------------------------------------------------------------------------


def import_path(tree: Path, root: Path, shim: Path, inherited: str | None) -> str:
    """PYTHONPATH for the side checked out at `tree` (see the module's docstring)."""
    entries = [shim, *([tree / "src"] if (tree / "src").is_dir() else []), tree]
    for entry in (inherited or "").split(os.pathsep):
        if entry:
            path = Path(entry).resolve()
            entries.append(tree / path.relative_to(root) if path.is_relative_to(root) else path)
    return os.pathsep.join(dict.fromkeys(str(e) for e in entries))


def _round(side: Side, k: int, rounds: int, args: Sequence[str], root: Path, shim: Path, tmp: Path,
           out: Callable[[str], None]) -> RunRecord:
    folder = tmp / "rounds" / f"{side.name}-{k + 1}"
    # Ours last, so they win over the same options in `args`; no baselines: the other side is the baseline.
    cmd = [sys.executable, "-m", "pytest", *args, "--perfguard", f"--perfguard-report={folder}",
           f"--perfguard-baselines={tmp / 'no-baselines'}"]
    env = {**os.environ, "PYTHONPATH": import_path(side.tree, root, shim, os.environ.get("PYTHONPATH"))}
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=side.cwd, env=env, capture_output=True, text=True)
    path = folder / RECORD_NAME
    if proc.returncode not in (0, 1) or not path.is_file():
        raise _no_record(side, k, proc, "without a perfguard record")
    try:
        record = loads_record(path.read_text(encoding="utf-8"), str(path))
    except (OSError, PerfguardError) as exc:
        raise MeasurementError(f"{side.label}, round {k + 1}: {exc}") from None
    if record.status != "complete":  # the record a run starts with: its process ended before writing its own
        raise _no_record(side, k, proc, f"with its perfguard record {record.status}")
    failed = " (pytest exit 1: a test failed; the cases it measured still count)" if proc.returncode else ""
    out(f"round {k + 1}/{rounds} {side.name:<4}  {side.label}: {len(record.results)} case(s) "
        f"in {time.monotonic() - started:.1f} s{failed}")
    return record


def _no_record(side: Side, k: int, proc: subprocess.CompletedProcess[str], why: str) -> MeasurementError:
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    print("\n".join(tail), file=sys.stderr)
    return MeasurementError(
        f"{side.label}, round {k + 1}: pytest exited {proc.returncode} in {side.cwd} {why} "
        "(its last lines are above); check that the pytest arguments select perf cases"
    )


def _perfguard_shim(tmp: Path) -> Path:
    """A folder holding only this perfguard (a link to it), to put first on both sides' PYTHONPATH."""
    shim = tmp / "perfguard-shim"
    shim.mkdir()
    (shim / "perfguard").symlink_to(Path(perfguard.__file__).resolve().parent, target_is_directory=True)
    return shim


# --- output ------------------------------------------------------------------------------------


def _write(folder: Path, base: RunRecord, head: RunRecord, fits: Sequence[Scaling], out: Callable[[str], None]) -> None:
    """The head's record (with its verdicts), the base's, and the HTML and Markdown reports of the head.
    A file that cannot be written or rendered is one line; the verdicts above stand."""
    for path, problem in write_run_files(folder, head, fits, others=[(BASE_RECORD_NAME, base)]):
        out(f"perfguard: {problem or f'wrote {path}'}")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "git gave no reason"
