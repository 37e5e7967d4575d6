"""What does perfguard cost a pytest run that does not use it? (issue 18 item 3)

    python3 benchmarks/unused_cost.py [--pairs 40]

perfguard is a pytest plugin, loaded by every pytest run in an environment where it is installed,
including the runs of projects that never mark a perf case. Such a run must not pay for it.

The script writes a two-test file (no perf case, no perfguard import) into a fresh folder with no
ini file, then runs `python -m pytest -q -p no:cacheprovider` there in pairs: once with perfguard
loaded and once without, in alternating order, so that the machine's drift reaches both alike. The
other plugins installed here (hypothesis's takes a second and a half to load) would only add noise:
both sides run with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, and the loaded side names perfguard's entry
point module in PYTEST_PLUGINS, which imports it as the entry point would. Not `-p perfguard.plugin`:
with autoload off, pytest 9 resolves a `-p` name against every installed entry point (about 10 ms
here), a scan a user's run makes whether perfguard is installed or not. (`--autoload` instead runs
every installed plugin, the loaded side as it is and the other with `-p no:perfguard`.) Both sides
run with bytecode caches, as an installed package does (here PYTHONDONTWRITEBYTECODE is set, which
would make every run compile perfguard's sources again): the caches go to a temporary folder
(PYTHONPYCACHEPREFIX), written by one uncounted run of each side. Each
run's CPU time (user + system) is the kernel's accounting of the child (os.wait4). It prints the
median of the paired differences over `--pairs` pairs with the spread of the pairs, and the median
of each side. Wall time is not used: on a shared 2-vCPU machine it moves with the load, CPU time far
less. Target: a median difference of at most 10 ms.

The perfguard measured is the one installed (the entry point `perfguard.plugin`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402  (benchmarks/machine.py)

TESTS = """\
def test_one():
    assert 1 + 1 == 2


def test_two():
    assert "perf" in "perfguard"
"""


def cpu_seconds(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """User + system CPU seconds of one run of `args` and its children, as the kernel counted them."""
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {process.returncode} in {cwd}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="paired runs (default 40)")
    parser.add_argument("--autoload", action="store_true",
                        help="load every installed plugin (default: perfguard alone, against none)")
    args = parser.parse_args()
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_PLUGINS")}
    if args.autoload:
        sides = {True: (base, env), False: (base + ["-p", "no:perfguard"], env)}
    else:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        sides = {True: (base, {**env, "PYTEST_PLUGINS": "perfguard.plugin"}), False: (base, env)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "project")
        folder.mkdir()
        (folder / "test_two.py").write_text(TESTS)
        for _, side_env in sides.values():
            side_env["PYTHONPYCACHEPREFIX"] = str(Path(tmp, "pycache"))
        with_pg, without, diffs = [], [], []
        for side_args, side_env in sides.values():  # write the bytecode caches; counted by no side
            cpu_seconds(side_args, folder, side_env)
        for i in range(args.pairs):
            order = (False, True) if i % 2 else (True, False)
            times = {}
            for loaded in order:
                side_args, side_env = sides[loaded]
                times[loaded] = cpu_seconds(side_args, folder, side_env)
            with_pg.append(times[True])
            without.append(times[False])
            diffs.append(times[True] - times[False])
    ms = [1000 * d for d in sorted(diffs)]
    q = statistics.quantiles(ms, n=4)
    print(machine.describe())
    plugins = "every installed plugin" if args.autoload else "no other plugin"
    print(f"pytest run of 2 tests ({plugins}), {args.pairs} pairs, CPU time (user + system):")
    print(f"  perfguard loaded and unused: median {1000 * statistics.median(with_pg):.1f} ms")
    print(f"  perfguard not loaded:        median {1000 * statistics.median(without):.1f} ms")
    print(f"  paired difference: median {statistics.median(ms):+.1f} ms (quartiles {q[0]:+.1f} .. {q[2]:+.1f} ms)")


if __name__ == "__main__":
    main()
