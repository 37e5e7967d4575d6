"""The processes a case leaves running: children of this process that it started and did not end.

A case that starts a server, a `multiprocessing` pool or a `subprocess.Popen` and returns without
ending it leaves them running beside every case after it: they take CPU (and perhaps the GPU) from
cases that are not theirs, and pytest goes on as if nothing happened. perfguard does not end them (it
did not start them, and cannot know what they hold); it names them on the case's result
(`CaseResult.left_processes`), and the run's end says so in a line, as it does for the torch settings
a case leaves changed (measure/torch_state.py).

Taken before and after every case, so it must cost next to nothing: on Linux the kernel lists each
thread's children in `/proc/self/task/<tid>/children` (a few small reads); without that file (a
kernel built without it) every process's `/proc/<pid>/stat` is read for its parent; elsewhere only
`multiprocessing`'s children are seen. A child that has exited but was not waited for (a zombie)
takes nothing, and is not counted.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from pathlib import Path

PROC = Path("/proc")


@dataclasses.dataclass(frozen=True)
class Children:
    """The living children of this process at one moment, by pid."""

    pids: frozenset[int]

    @classmethod
    def now(cls) -> Children:
        return cls(frozenset(_living()))

    def left(self) -> tuple[str, ...]:
        """The children alive now that were not before, each as "name (pid N)", by pid."""
        living = _living()
        return tuple(f"{living[pid]} (pid {pid})" for pid in sorted(living.keys() - self.pids) if not _torchs(pid))


# Inductor's pool of compile workers: started by a case's first compile, kept for the process by torch
# (torch._inductor.async_compile), and every later compile's. Not the case's to end.
TORCH_POOLS = ("torch/_inductor/compile_worker", "torch._inductor.compile_worker")


def _torchs(pid: int) -> bool:
    try:
        command = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return any(pool in command for pool in TORCH_POOLS)


# States of a process that has ended: zombie (not yet waited for), dead.
_ENDED = frozenset("ZXx")


def _living() -> dict[int, str]:
    """This process's living children: pid -> command name."""
    if not PROC.is_dir():
        return {p.pid: p.name for p in multiprocessing.active_children() if p.pid is not None}
    living = {}
    for pid in _child_pids():
        stat = _stat(pid)
        if stat is not None and stat[0] not in _ENDED:  # None: it ended between the two reads
            living[pid] = stat[2]
    return living


def _child_pids() -> set[int]:
    tasks = PROC / "self" / "task"
    if not (tasks / str(os.getpid()) / "children").exists():  # a kernel built without CONFIG_PROC_CHILDREN
        return _child_pids_by_parent()
    pids: set[int] = set()
    for task in os.listdir(tasks):
        try:
            pids.update(int(p) for p in (tasks / task / "children").read_text().split())
        except OSError:  # a thread that ended since the listing
            continue
    return pids


def _child_pids_by_parent() -> set[int]:
    me, pids = os.getpid(), set()
    for entry in os.listdir(PROC):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat and stat[1] == me:
                pids.add(int(entry))
    return pids


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(state, parent pid, command name) from /proc/<pid>/stat; None when it cannot be read."""
    try:
        text = (PROC / str(pid) / "stat").read_text(errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so it ends at the last ")".
    name, rest = text[text.find("(") + 1:text.rfind(")")], text[text.rfind(")") + 2:].split()
    try:
        return rest[0], int(rest[1]), name
    except (IndexError, ValueError):
        return None
