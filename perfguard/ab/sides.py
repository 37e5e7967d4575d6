"""The two sides of `perfguard ab`: the base revision, checked out into a temporary git worktree, and
the working tree; where each side's pytest runs and what it imports.

Which code each side runs: pytest runs in the side's tree (the same sub-folder of it as the current
one), with PYTHONPATH holding, in order, the running perfguard, the tree's `src/` (if any) and its top,
then the inherited PYTHONPATH with every entry inside the repository moved into the tree. So each
side imports its own revision of the project (ahead of an editable or ordinary install of it), and
both sides record with this perfguard, so both records are in one format; except in a tree that holds
a top-level `perfguard/` itself (perfguard's own repository): `python -m pytest` puts the side's folder
first on sys.path, so each side records with its own revision (docs/ci.md says what that leaves open). The working tree is
measured as it is, uncommitted changes included; the base is REF as committed (no untracked files,
no submodules checked out).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import perfguard
from perfguard import git
from perfguard.errors import ConfigError

SIDES = ("base", "head")
WORKTREE_TIMEOUT_S = 300  # checking out a large repository takes a while


@dataclasses.dataclass(frozen=True)
class Side:
    name: str  # "base" or "head"
    label: str  # what the report calls it: "base HEAD~1 (1a2b3c4d5e6f)", "working tree"
    tree: Path  # the top of its checkout
    cwd: Path  # where its pytest runs
    pythonpath: str  # PYTHONPATH for its runs (import_path)


def schedule(rounds: int, first: int = 0) -> list[tuple[str, int]]:
    """(side, round) in run order from round `first`: base then head, then head then base, and so on
    (ABBA), so that a drift linear in time reaches both sides alike over two rounds."""
    order = []
    for k in range(first, rounds):
        order += [(side, k) for side in (SIDES if k % 2 == 0 else SIDES[::-1])]
    return order


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
    """A detached checkout of `sha` at `path`, removed (and unregistered) however the block ends, also
    when the checkout itself is cut short (SIGTERM there leaves it registered: ab/stale.py)."""
    try:
        proc = git.run(root, "worktree", "add", "--detach", str(path), sha, timeout=WORKTREE_TIMEOUT_S)
        if proc.returncode != 0:
            raise ConfigError(f"cannot check out {sha[:12]} into a worktree: {_last_line(proc.stderr)}")
        yield path.resolve()
    finally:
        # A checkout cut short leaves its worktree locked ("initializing"), which neither a plain
        # `remove --force` nor `prune` touches: unlock it first, and force twice (git's word for locked).
        git.run(root, "worktree", "unlock", str(path), timeout=WORKTREE_TIMEOUT_S)
        git.run(root, "worktree", "remove", "--force", "--force", str(path), timeout=WORKTREE_TIMEOUT_S)
        shutil.rmtree(path, ignore_errors=True)
        git.run(root, "worktree", "prune")


def import_path(tree: Path, root: Path, shim: Path, inherited: str | None) -> str:
    """PYTHONPATH for the side checked out at `tree` (see the module's docstring)."""
    entries = [shim, *([tree / "src"] if (tree / "src").is_dir() else []), tree]
    for entry in (inherited or "").split(os.pathsep):
        if entry:
            path = Path(entry).resolve()
            entries.append(tree / path.relative_to(root) if path.is_relative_to(root) else path)
    return os.pathsep.join(dict.fromkeys(str(e) for e in entries))


def perfguard_shim(tmp: Path) -> Path:
    """A folder holding only this perfguard (a link to it), to put first on both sides' PYTHONPATH."""
    shim = tmp / "perfguard-shim"
    shim.mkdir()
    (shim / "perfguard").symlink_to(Path(perfguard.__file__).resolve().parent, target_is_directory=True)
    return shim


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "git gave no reason"
