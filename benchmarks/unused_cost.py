"""What does perfguard cost a pytest run that does not use it? (issue 18 item 3, issue 29 item 2)

    python3 benchmarks/unused_cost.py [--pairs 60] [--no-bytecode]

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

The perfguard measured is the one installed (the entry point `perfguard.plugin`).
"""

from __future__ import annotations

import argparse
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


def summary(label: str, with_pg: list[float], without: list[float]) -> list[str]:
    ms = sorted(1000 * (a - b) for a, b in zip(with_pg, without))
    q = statistics.quantiles(ms, n=4)
    return [f"{label}: perfguard loaded and unused {1000 * statistics.median(with_pg):.1f} ms, "
            f"not loaded {1000 * statistics.median(without):.1f} ms (medians)",
            f"  paired difference: median {statistics.median(ms):+.1f} ms (quartiles {q[0]:+.1f} .. {q[2]:+.1f} ms)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60, help="paired runs (default 60)")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="run with PYTHONDONTWRITEBYTECODE=1, as where pytest cannot keep its rewritten modules")
    args = parser.parse_args()
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    unset = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
             "PYTEST_ADDOPTS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    sides = {True: base, False: base + ["-p", "no:perfguard"]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "project")
        folder.mkdir()
        (folder / "test_two.py").write_text(TESTS)
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
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
    print(machine.describe())
    bytecode = "no bytecode caches (PYTHONDONTWRITEBYTECODE=1)" if args.no_bytecode else "bytecode caches"
    print(f"pytest run of 2 tests, plugin autoload on, {bytecode}, {args.pairs} pairs against -p no:perfguard:")
    for line in summary("CPU time (user + system)", cpu[True], cpu[False]) + summary("wall time", wall[True], wall[False]):
        print(line)


if __name__ == "__main__":
    main()
