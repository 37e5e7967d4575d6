"""What an `ab` leaves behind when it is stopped, and what an earlier one left.

`sides.worktree` removes its checkout however its block ends, but a signal's default action ends the
process without running any `finally`: SIGTERM (a CI runner cancelling the job, `timeout`, `kill`)
left the worktree registered in the repository and its checkout in the temporary folder. So while ab
runs, SIGTERM raises `Terminated` in the main thread, which unwinds through the block's cleanup as
Ctrl-C does. SIGKILL cannot be caught: for that, and for any ab that died before this one, `prune`
runs at the start of every ab and removes the worktrees under perfguard's temporary prefix whose
folder is gone or whose owner (the ab process whose id is in OWNER beside it) is no longer running.
A live owner's worktree is left alone: two abs may run in one repository at once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from perfguard import git

PREFIX = "perfguard-ab-"  # run_ab's temporary folder
BASE = "base"  # in that folder: the base's worktree
OWNER = "owner.pid"  # in that folder: the id of the ab process that made it


class Terminated(BaseException):
    """SIGTERM arrived while ab ran (a BaseException, as KeyboardInterrupt: no `except Exception` stops it)."""


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (signal handlers can only be set in the main thread;
    elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
        raise Terminated

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def claim(folder: Path) -> None:
    """Mark `folder` (run_ab's temporary folder) as this process's."""
    (folder / OWNER).write_text(f"{os.getpid()}\n", encoding="utf-8")


def prune(root: Path) -> list[Path]:
    """Unregister worktrees whose folders are gone (`git worktree prune`), then remove the ones an ab made
    (BASE in a folder of perfguard's temporary prefix) whose owner is not running; the worktrees removed.

    Never the repository's own checkout (listed first), wherever it sits: a project cloned into
    `/tmp/perfguard-ab-repo-…/project` (benchmarks/ab_sensitivity.py does) was deleted as a leftover."""
    git.run(root, "worktree", "prune")
    listed = git.run(root, "worktree", "list", "--porcelain")
    if listed.returncode != 0:
        return []
    temp = Path(tempfile.gettempdir()).resolve()
    removed = []
    paths = [Path(line.removeprefix("worktree ")) for line in listed.stdout.splitlines() if line.startswith("worktree ")]
    for path in paths[1:]:
        folder = path.parent
        if (path.name != BASE or folder.parent.resolve() != temp or not folder.name.startswith(PREFIX)
                or _owner_alive(folder)):
            continue
        git.run(root, "worktree", "unlock", str(path))  # a checkout cut short is locked ("initializing")
        git.run(root, "worktree", "remove", "--force", "--force", str(path))
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(path)
    if removed:
        git.run(root, "worktree", "prune")
    return removed


def _owner_alive(folder: Path) -> bool:
    try:
        pid = int((folder / OWNER).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return False  # no owner named: an ab from before owners were written, or one that died making it
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running
    return True
