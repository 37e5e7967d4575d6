"""How long does the README's test command take on a fresh machine, and where does a fresh run's extra
time go? (issue 47 item 16)

    python3 benchmarks/fresh_tests.py [--again N] [--durations N]

A newcomer runs the README's second command in a fresh clone and a fresh virtual environment: nothing
compiled in the checkout (neither Python's bytecode nor pytest's rewritten test modules), and, on a
machine whose memory is reclaimed from files left unread for a minute (these VMs page out what DAMON
finds cold), the venv's and the checkout's files read from disk again. The script clones this checkout
(its HEAD) into a temporary folder, makes the venv there and runs the command as the README writes it,
its install timed apart from its tests; then it runs the tests again N times (default 1), as a second
run finds them: files cached, and the bytecode the first run wrote where PYTHONDONTWRITEBYTECODE is
unset. Before the first run the files of the venv, the clone and the Python installation are dropped
from the page cache (posix_fadvise DONTNEED: nothing else on the machine is touched), as a machine finds
them after a pause.

Each step's wall time (a monotonic clock) and CPU time (user + system of the command and its children,
the kernel's accounting, os.wait4), pytest's last line and its slowest tests (`--durations`, added to
the command). The environment passes through: PYTHONDONTWRITEBYTECODE, PERFGUARD_TEST_BROWSER_DIR (an
empty folder skips the browser tests, as on a machine without chromium). Single runs of a minute move
by tens of seconds beside other work: the load averages are printed, and the CPU time moves less.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402  (benchmarks/machine.py)

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> tuple[str, str]:
    """The README's test command (its first bash block's second line, as .ci/run reads it): the install, the tests."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    command = [line for line in lines.splitlines() if line.strip()][1].split("#", 1)[0].strip()
    install, tests = command.split(" && ")
    return install, tests


def drop_from_page_cache(*folders: Path) -> int:
    """Ask the kernel to drop these folders' files from its page cache; how many MiB they hold."""
    size = 0
    for folder in folders:
        for parent, _, names in os.walk(folder):
            for name in names:
                try:
                    fd = os.open(os.path.join(parent, name), os.O_RDONLY | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    size += os.fstat(fd).st_size
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
    return size >> 20


def timed(label: str, command: str, venv: Path, cwd: Path) -> str:
    """Run `command` with the venv active, in `cwd`; print its wall and CPU seconds; return its output."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    done = subprocess.run(["bash", "-c", f"source {shlex.quote(str(venv / 'bin/activate'))} && {command}"],
                          cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime  # the steps run one at a time
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if last.startswith("Successfully installed"):  # pip's last line names every package
        last = f"pip installed {len(last.split()) - 2} packages"
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU (load after {load}); exit {done.returncode}: {last}", flush=True)
    if done.returncode:
        raise SystemExit(f"{label} failed; its output:\n{done.stdout[-4000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--again", type=int, default=1, help="runs of the tests after the fresh one (default 1)")
    parser.add_argument("--durations", type=int, default=15, help="slowest tests listed after the fresh run (default 15)")
    args = parser.parse_args()
    install, tests = readme_commands()
    print(machine.describe())
    print(f"the README's test command: {install} && {tests}")
    with tempfile.TemporaryDirectory() as tmp:
        clone, venv = Path(tmp, "perfguard"), Path(tmp, "venv")
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        timed("install, in a fresh venv", install, venv, clone)
        dropped = drop_from_page_cache(venv, clone, Path(sys.base_prefix))
        print(f"dropped from the page cache: the venv, the clone and {sys.base_prefix} ({dropped} MiB)")
        out = timed("tests, fresh", f"{tests} --durations={args.durations}", venv, clone)
        print("\n".join(line for line in out.splitlines() if re.match(r"\d+\.\d+s (setup|call|teardown) ", line)))
        for n in range(args.again):
            timed(f"tests, again ({n + 1})", tests, venv, clone)


if __name__ == "__main__":
    main()
