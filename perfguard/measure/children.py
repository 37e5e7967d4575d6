"""The processes a case leaves running: every process it started that is still alive when it ends, wherever
it went (a child, a child's child, one that called setsid or forked twice and was reparented), and any
process of this user that started during the case and still holds its GPU.

A case that starts a server, a `multiprocessing` pool, a `subprocess.Popen` or `sh -c "sleep 31 &"`
and returns without ending it leaves them running beside every case after it: they take CPU (and
perhaps the GPU) from cases that are not theirs, and pytest goes on as if nothing happened. perfguard
does not end them (it did not start them, and cannot know what they hold); it names them on the case's
result (`CaseResult.left_processes`), and the run's end says so in a line, as it does for the torch
settings a case leaves changed (measure/torch_state.py).

How a process is known to be the case's (Linux, through /proc). Its parent is no guide: a process whose
parent ends is handed to init or a subreaper (`sh -c "sleep 31 &"`, a double fork). Nor its session or
process group: `setsid` leaves both. Nor "every process of this user that is new": under pytest-xdist
the other workers' cases start processes at the same moments. What a process keeps through all of
those is its environment, which every program inherits unless it is handed another: so for the length
of a case, `MARK` holds a value of that case alone, and a new process whose environment
(/proc/PID/environ, the environment it was started with) holds it is the case's. Two kinds carry no
mark and are found besides: a process forked without exec (a `multiprocessing` fork: its environ is
this process's own, from before any case), and one started with an environment of its own
(`Popen(env={...})`), each while it still descends from this process through processes new since the
case began; and, on a GPU, a process that started during the case, runs as this user and holds the
case's GPU (NVML's compute processes; without NVML, none). A process that replaced its environment and
left this process's tree, on no GPU, is not seen.

Taken before and after every case, so it costs little: the machine's pids (one listing of /proc) and,
on a GPU, one NVML query before; after, the same, and a few small reads of each process new since.
Elsewhere than Linux only `multiprocessing`'s children are seen. A process that has exited but was not
waited for (a zombie) takes nothing, and is not counted. A pid freed and taken again within one case
(the kernel hands pids out in order, wrapping at pid_max) would pass for an old process.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import os
from pathlib import Path
from typing import Any

from perfguard.measure import nvml

PROC = Path("/proc")
MARK = "PERFGUARD_CASE_MARK"  # set to the running case's own value while it runs (see above)
COMMAND_CHARS = 120  # a command line is cut to this many characters on the line that names it
_CASES = itertools.count()


@dataclasses.dataclass(frozen=True)
class Started:
    """What ran when a case started: the machine's pids, the pids holding its GPU, and the mark its
    processes carry. `begin` sets the mark; `end` puts the environment back and names what was left."""

    mark: str
    previous: str | None  # MARK's value before the case (a case run inside another's process)
    pids: frozenset[int]
    gpu: Any  # the case's GPU's NVML handle; None on a CPU or without NVML
    gpu_pids: frozenset[int]

    @classmethod
    def begin(cls, gpu_uuid: str | None = None) -> Started:
        mark = f"{os.getpid()}-{next(_CASES)}-{os.urandom(6).hex()}"
        previous = os.environ.get(MARK)
        os.environ[MARK] = mark
        gpu = nvml.handle(gpu_uuid) if gpu_uuid else None
        return cls(mark, previous, _pids(), gpu, nvml.compute_pids(gpu))

    def end(self) -> tuple[str, ...]:
        """The processes the case left running, each as "command line (pid N)", by pid."""
        if self.previous is None:
            os.environ.pop(MARK, None)
        else:
            os.environ[MARK] = self.previous
        if not PROC.is_dir():
            return tuple(f"{p.name} (pid {p.pid})" for p in sorted(multiprocessing.active_children(), key=lambda p: p.pid)
                         if p.pid is not None and p.pid not in self.pids)
        new = {pid: stat for pid in _pids() - self.pids if (stat := _stat(pid)) is not None and stat[0] not in _ENDED}
        me, mark = os.getpid(), f"{MARK}={self.mark}".encode()
        gpu = nvml.compute_pids(self.gpu) - self.gpu_pids
        found = [pid for pid in sorted(new)
                 if (new[_chain(pid, new)[-1]][1] == me or _marked(pid, mark) or (pid in gpu and _mine(pid)))
                 and not any(_torchs(p) for p in _chain(pid, new))]
        return tuple(f"{_command(pid, new[pid][2])} (pid {pid})" for pid in found)


def _chain(pid: int, new: dict[int, tuple[str, int, str]]) -> list[int]:
    """`pid` and its ancestors among the processes new since the case began, nearest first."""
    out = [pid]
    while (parent := new[out[-1]][1]) in new and len(out) <= len(new):
        out.append(parent)
    return out


# Inductor's pool of compile workers: started by a case's first compile, kept for the process by torch
# (torch._inductor.async_compile), and every later compile's. Not the case's to end, nor what it starts.
TORCH_POOLS = ("torch/_inductor/compile_worker", "torch._inductor.compile_worker")


def _torchs(pid: int) -> bool:
    return any(pool in _command(pid, "", limit=None) for pool in TORCH_POOLS)


def _command(pid: int, name: str, limit: int | None = COMMAND_CHARS) -> str:
    """The process's command line, its arguments joined by spaces and cut to `limit`; else its name."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return name
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or name
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def _marked(pid: int, mark: bytes) -> bool:
    try:
        return mark in (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:  # another user's process, or one that ended
        return False


def _mine(pid: int) -> bool:
    try:
        return (PROC / str(pid)).stat().st_uid == os.getuid()
    except OSError:
        return False


# States of a process that has ended: zombie (not yet waited for), dead.
_ENDED = frozenset("ZXx")


def _pids() -> frozenset[int]:
    """Every process's pid (/proc); without /proc, `multiprocessing`'s children's."""
    if not PROC.is_dir():
        return frozenset(p.pid for p in multiprocessing.active_children() if p.pid is not None)
    return frozenset(int(entry) for entry in os.listdir(PROC) if entry.isdigit())


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
