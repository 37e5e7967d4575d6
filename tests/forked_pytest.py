"""Inner pytest runs in processes forked from one that has already imported torch, scipy and pytest.

A new interpreter spends 3-5 s of CPU importing them before its first test, and the suite starts a
few dozen inner runs. Each run here is still a process of its own (its own folder, environment, test
modules, exit status, stdout and stderr) but is forked, by multiprocessing's fork server, from a
process that imported PRELOAD and compiled the HTML report's template once. As a new interpreter
would, a run finds its modules in its folder first, then in its PYTHONPATH's entries. The same goes for another module's command line
(`python -m perfguard.cli calibrate`, `run(..., module="perfguard.cli")`). What a fork cannot show is
which modules a run imports and when, what torch read from the environment at its import
(OMP_NUM_THREADS), nor a run pointing perfguard at other templates: a test about any of those asks
`run_pytest(..., fresh=True)` for a new interpreter.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import multiprocessing
import multiprocessing.connection
import os
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path


def _modules_of(package: str) -> list[str]:
    """Every module of a package, named from its files (nothing but the package imported to list them);
    not `__main__`, which runs its command when imported."""
    root = Path(importlib.import_module(package).__file__).parent
    parts = (p.relative_to(root.parent).with_suffix("").parts for p in sorted(root.rglob("*.py")))
    return [".".join(p[:-1] if p[-1] == "__init__" else p) for p in parts if p[-1] != "__main__"]


def _pytest_plugins() -> list[str]:
    """The modules of pytest's own plugins and of the installed ones (entry points), which every run
    imports as it starts; a plugin an inner run blocks (`-p no:NAME`) is imported here and not registered."""
    from importlib.metadata import entry_points

    from _pytest.config import default_plugins

    return [f"_pytest.{name}" for name in default_plugins] + [ep.module for ep in entry_points(group="pytest11")]


# What inner runs import anyway: plain modules, none of which starts a thread at import. (Each run imports
# the rest of what it needs itself: a fifth of a second of CPU a run when perfguard's and pytest's plugin
# modules were left out, among the suite's 190 runs; a name the installed versions lack is passed over.)
# torch._dynamo (2 s a run) for the compiled cases' runs; an eager case then runs as in a user's process
# that imported it: watched for a compile that never comes (measure/compiling.py). Those runs compile
# with dynamo's `eager` backend, whose module is the last (0.15 s a run otherwise: dynamo's registry
# imports every backend's module to find it).
PRELOAD = list(dict.fromkeys([
    "torch", "torch._dynamo", "numpy", "scipy.stats", "jinja2", "pytest", *_pytest_plugins(), *_modules_of("perfguard"),
    "torch._dynamo.backends.debugging", __name__,
]))

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _compile_the_report_template() -> None:
    from perfguard.report import html

    html.prepare()


_compile_the_report_template()


def start_server() -> None:
    """Start the fork server now: call it before this process starts a thread that reads os.environ.

    The server must preload this module too (its `_main`, and the template compiled once), and this
    folder is not on its path: Python 3.11's server leaves aside the sys.path multiprocessing hands it,
    and passes over a preloaded name it cannot import without a word. Each run then imported this module
    again, the template's compile with it: 70 ms of CPU a run. So the folder is on the PYTHONPATH of the
    server's start alone; a run's own path is this process's sys.path, which multiprocessing hands it."""
    from multiprocessing import forkserver

    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent), before]))
    try:
        forkserver.ensure_running()
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


# A run's exit status comes once, down a pipe from the fork server, and multiprocessing reads it without a
# lock: where two threads read it at once (Process.start reads every child's that has ended, and the
# tests start runs from a pool of two), one got the status and the other the pipe's end, which
# multiprocessing reports as 255, and that thread's value stood (test_gate, once in five runs). So each
# read, and each start, holds this lock; waiting is on the run's sentinel, outside it.
_reading = threading.Lock()


def start(cwd: Path, args: Sequence[str], env: Mapping[str, str], out: Path, err: Path,
          module: str = "pytest") -> multiprocessing.Process:
    """`python -m MODULE ARGS` in `cwd`, its output going to the files `out` and `err`; its sentinel is ready once
    it has ended, and `status` reads its exit status."""
    process = _context.Process(target=_main, args=(str(cwd), list(args), dict(env), str(out), str(err), module), daemon=True)
    with _reading:
        process.start()
    return process


def status(process: multiprocessing.Process) -> int | None:
    """The run's exit status, or None while it runs."""
    with _reading:
        return process.exitcode


def run(cwd: Path, args: Sequence[str], env: Mapping[str, str], out: Path, err: Path, timeout_s: float,
        module: str = "pytest") -> tuple[int, list[str], list[str]]:
    """`start`, then wait: (exit status, stdout's lines, stderr's lines); TimeoutError past `timeout_s`."""
    process = start(cwd, args, env, out, err, module)
    if not multiprocessing.connection.wait([process.sentinel], timeout_s):
        process.kill()
        multiprocessing.connection.wait([process.sentinel])
        status(process)
        raise TimeoutError(f"python -m {module} {' '.join(args)} in {cwd} ran over {timeout_s} s; its output is in {out}")
    code = status(process)
    lines = [Path(p).read_text(encoding="utf-8", errors="replace").splitlines() for p in (out, err)]
    return code, *lines


def stop() -> None:
    """Stop the fork server, if it started, and wait for it (its CPU time then counts in the session's).
    SIGTERM ends it at once: left to exit by itself, it first tore down all it had imported, 1.7 s of
    CPU at the session's end."""
    from multiprocessing import forkserver

    server = forkserver._forkserver  # noqa: SLF001 - the one way to stop it and wait for it
    if server._forkserver_pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server._forkserver_pid, signal.SIGTERM)
    server._stop()


def _main(cwd: str, args: list[str], env: dict[str, str], out: str, err: str, module: str) -> None:
    """In the forked process: become `python -m MODULE ARGS` run in `cwd` with `env`."""
    # What the fork server made is there for good: kept out of the garbage collector's sweeps (pytest
    # collects five times at its end, a second's work over torch's objects).
    gc.freeze()
    # Ctrl-C raises KeyboardInterrupt, as in an interpreter started from a shell (a fork server started
    # by an xdist worker, which ignores SIGINT, would otherwise hand its runs an ignored SIGINT).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    # Where `python -m` in a new interpreter looks first: the current folder, then PYTHONPATH's entries.
    sys.path[:0] = [cwd, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    # Both names: pytest sizes its lines from sys.__stdout__ (not a terminal here: 80 columns, as in a pipe).
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    try:
        if module == "pytest":
            import pytest

            status = int(pytest.main(args))
        else:
            sys.argv = [module, *args]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            status = 0
    except SystemExit as exc:  # as the interpreter reads sys.exit's argument: a status, None (0) or a message (1)
        if exc.code is None or isinstance(exc.code, int):
            status = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except BaseException:  # noqa: BLE001 - shown as a crashed interpreter would show it
        traceback.print_exc()
        status = 3 if module == "pytest" else 1  # pytest's INTERNAL_ERROR; an uncaught exception's 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
