"""What does perfguard cost a pytest run that does not use it? (issue 18 item 3, issue 29 item 2)

    python3 benchmarks/unused_cost.py [--pairs 60] [--no-bytecode] [--phases RUNS]

perfguard is a pytest plugin, loaded by every pytest run in an environment where it is installed,
including the runs of projects that never mark a perf case. Such a run must not pay for it.

The script writes a two-test file (no perf case, no perfguard import) into a fresh folder with no
ini file, then runs `python -m pytest -q -p no:cacheprovider` there in pairs, as a user's pytest
runs: plugin autoload on, every installed plugin loaded; the other side of each pair adds
`-p no:perfguard`, the one difference. The two sides alternate in order, so that the machine's
drift reaches both alike. (Autoload on matters: with it off, the plugin named in PYTEST_PLUGINS
skips pytest's marking of perfguard's modules for assertion rewriting, the part of the cost that
grows with what the plugin imports at load.)

Bytecode: pytest loads a plugin's modules through its assertion rewriter, which ignores the .pyc
files pip wrote and keeps a cache of its own beside them. By default both sides run with bytecode
caches, as a user whose environment pytest can write to: the caches go to a temporary folder
(PYTHONPYCACHEPREFIX), written by one uncounted run of each side. `--no-bytecode` runs with
PYTHONDONTWRITEBYTECODE=1 instead, as where pytest cannot write that cache (a read-only
site-packages, or that variable set): every run then parses and rewrites each module the plugin
imports at load.

Each run's CPU time (user + system) is the kernel's accounting of the child (os.wait4), its wall
time a monotonic clock around it. The script prints the median of the paired differences over
`--pairs` pairs with their quartiles, and the median of each side. Single runs of a 0.25 s process
move by tens of ms on a shared machine: only the median of many pairs says anything. Target: a
median difference of at most 10 ms (docs/development.md).

`--phases RUNS` says where the difference goes: after the pairs, RUNS more runs of the loaded side
time perfguard's parts from inside the process, in CPU time (a prelude wraps them before pytest
starts; not in the pairs, which it would slow): the import of the plugin and what it pulls in, each
module's own part (its code, and the rewriter's parsing, rewriting and compiling of it or reading of
its cache; the garbage collector's passes fall where they fall), registering the plugin, finding its
fixture, and each of its plain hooks (pytest_addoption declaring the options and ini keys among them).
What the pairs' difference holds beyond their sum is pluggy calling one more plugin's hooks and the
interpreter's own costs.

The perfguard measured is the one installed (the entry point `perfguard.plugin`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402  (benchmarks/machine.py)

TESTS = """\
def test_one():
    assert 1 + 1 == 2


def test_two():
    assert "perf" in "perfguard"
"""


# The prelude of a loaded run under --phases: it wraps perfguard's parts, runs pytest as `python -m pytest`
# does, and writes what each part took (seconds, summed over its calls) to the file PHASES_OUT names.
PHASES = r"""
import atexit, functools, importlib.metadata, inspect, json, os, sys, time
import pytest
from _pytest import config as _config, fixtures as _fixtures
from _pytest.assertion import rewrite as _rewrite
spent = {}

def timed(key, fn, when=lambda *args, **kwargs: True):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not when(*args, **kwargs):
            return fn(*args, **kwargs)
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.process_time() - start
    return run

ours = lambda path, *rest: "perfguard" in str(path)
_rewrite._rewrite_test = timed("rewriter: parse, rewrite, compile", _rewrite._rewrite_test, ours)
_rewrite._read_pyc = timed("rewriter: read its cache", _rewrite._read_pyc, ours)
_config.PytestPluginManager.register = timed(
    "register the plugin", _config.PytestPluginManager.register,
    lambda self, plugin, name=None: name == "perfguard")
_fixtures.FixtureManager.parsefactories = timed(
    "find its fixture", _fixtures.FixtureManager.parsefactories,
    lambda self, *args, **kwargs: getattr(kwargs.get("holder", args[0] if args else None), "__name__", "") == "perfguard.plugin")
stack = []  # the modules being executed, innermost last: each one's time is its own, less the ones it imports
_exec = _rewrite.AssertionRewritingHook.exec_module

def exec_module(self, module):
    if not module.__name__.startswith("perfguard"):
        return _exec(self, module)
    stack.append(0.0)
    start = time.process_time()
    try:
        return _exec(self, module)
    finally:
        took = time.process_time() - start
        inner = stack.pop()
        if stack:
            stack[-1] += took
        key = f"import: {module.__name__} (its own code and the rewriter's part)"
        spent[key] = spent.get(key, 0.0) + took - inner

_rewrite.AssertionRewritingHook.exec_module = exec_module
_load = importlib.metadata.EntryPoint.load

def load(self):
    if self.name != "perfguard":
        return _load(self)
    start = time.process_time()
    module = _load(self)
    spent["import, in all"] = time.process_time() - start
    for name, hook in list(vars(module).items()):  # its plain hooks (a wrapper's is a generator: not timed)
        if name.startswith("pytest_") and inspect.isfunction(hook) and not inspect.isgeneratorfunction(hook):
            setattr(module, name, timed(f"hook {name}", hook))
    return module

importlib.metadata.EntryPoint.load = load
atexit.register(lambda: open(os.environ["PHASES_OUT"], "w").write(json.dumps(spent)))
sys.exit(pytest.main(sys.argv[1:]))
"""


def run_once(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, user + system, of one run of `args` and its children as the kernel counted them; wall seconds)."""
    start = time.monotonic()
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {process.returncode} in {cwd}")
    return usage.ru_utime + usage.ru_stime, wall


def rewritten_copies(folder: Path, env: dict[str, str]) -> tuple[Path, list[Path]]:
    """The installed perfguard's folder, and pytest's rewritten copies of its modules kept in it by a run that
    could write them: a run without bytecode caches reads those, and parses nothing."""
    where = subprocess.run([sys.executable, "-c", "import os, perfguard; print(os.path.dirname(perfguard.__file__))"],
                           cwd=folder, env=env, capture_output=True, text=True, check=True).stdout.strip()
    return Path(where), sorted(Path(where).rglob("__pycache__/*-pytest-*.pyc"))


def summary(label: str, with_pg: list[float], without: list[float]) -> list[str]:
    ms = sorted(1000 * (a - b) for a, b in zip(with_pg, without))
    q = statistics.quantiles(ms, n=4)
    return [f"{label}: perfguard loaded and unused {1000 * statistics.median(with_pg):.1f} ms, "
            f"not loaded {1000 * statistics.median(without):.1f} ms (medians)",
            f"  paired difference: median {statistics.median(ms):+.1f} ms (quartiles {q[0]:+.1f} .. {q[2]:+.1f} ms)"]


def phases(runs: list[dict[str, float]]) -> list[str]:
    """Each part's median over the runs (a part a run did not call counts 0 there), largest first."""
    keys = sorted({key for run in runs for key in run})
    medians = {key: 1000 * statistics.median(run.get(key, 0.0) for run in runs) for key in keys}
    lines = [f"  {ms:6.2f} ms  {key}" for key, ms in sorted(medians.items(), key=lambda item: -item[1])]
    outside = sum(ms for key, ms in medians.items() if not key.startswith(("rewriter", "import:")))  # in the import's
    return [f"perfguard's parts in {len(runs)} more loaded runs, timed inside (CPU time, medians):", *lines,
            f"  {outside:6.2f} ms  in all (the import in all, and the parts outside it)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60, help="paired runs (default 60)")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="run with PYTHONDONTWRITEBYTECODE=1, as where pytest cannot keep its rewritten modules")
    parser.add_argument("--phases", type=int, default=0, metavar="RUNS",
                        help="then RUNS loaded runs that time perfguard's parts inside (its import, the rewriter, its hooks)")
    args = parser.parse_args()
    pytest_args = ["-q", "-p", "no:cacheprovider"]
    base = [sys.executable, "-m", "pytest", *pytest_args]
    unset = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
             "PYTEST_ADDOPTS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    sides = {True: base, False: base + ["-p", "no:perfguard"]}
    parts: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "project")
        folder.mkdir()
        (folder / "test_two.py").write_text(TESTS)
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            installed, copies = rewritten_copies(folder, env)
            if copies:
                raise SystemExit(f"{installed}: {len(copies)} of pytest's rewritten copies of perfguard's modules, which "
                                 "runs without bytecode caches would read instead of parsing; delete them (find "
                                 f"{installed} -name '*-pytest-*.pyc' -delete) and run again")
        else:
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp, "pycache"))
        for side in sides.values():  # write the bytecode caches (or warm the file cache); counted by no side
            run_once(side, folder, env)
        cpu: dict[bool, list[float]] = {True: [], False: []}
        wall: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.pairs):
            for loaded in ((False, True) if i % 2 else (True, False)):
                c, w = run_once(sides[loaded], folder, env)
                cpu[loaded].append(c)
                wall[loaded].append(w)
        env["PHASES_OUT"] = str(Path(tmp, "phases.json"))
        for _ in range(args.phases):
            run_once([sys.executable, "-c", PHASES, *pytest_args], folder, env)
            parts.append(json.loads(Path(env["PHASES_OUT"]).read_text()))
    print(machine.describe())
    bytecode = "no bytecode caches (PYTHONDONTWRITEBYTECODE=1)" if args.no_bytecode else "bytecode caches"
    print(f"pytest run of 2 tests, plugin autoload on, {bytecode}, {args.pairs} pairs against -p no:perfguard:")
    for line in summary("CPU time (user + system)", cpu[True], cpu[False]) + summary("wall time", wall[True], wall[False]):
        print(line)
    for line in phases(parts) if args.phases else []:
        print(line)


if __name__ == "__main__":
    main()
