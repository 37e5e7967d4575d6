"""Shared test set-up: pytester for plugin tests, and the `gpu` marker's skip on machines without CUDA."""

from __future__ import annotations

import gc
import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import perfguard

pytest_plugins = ["pytester"]

# Every process these tests start (inner pytest runs, the console command, perfguard ab's rounds) imports
# the perfguard under test: without this, a subprocess outside this checkout imports the installed one,
# an editable install of whichever checkout ran `pip install -e` (and half-edited there, perhaps).
CHECKOUT = Path(perfguard.__file__).resolve().parent.parent
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))

# Arguments of every inner pytest run: no cache folder, and without two plugins that take a second
# each to import and play no part in perfguard's runs (blocking one that is not installed is harmless).
INNER_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")
TIMEOUT_S = 300  # for one inner run; a few seconds is usual


# The terminal perfguard sees here is wide: it fits its table and wraps its lines to the terminal's width
# (COLUMNS, else 80 where the output is no terminal), and most tests read what a line says, whole. The
# tests of the fitting and the wrapping set a width of their own (test_terminal_width.py).
WIDE = "1000"


@pytest.hookimpl(trylast=True)  # after pytest's terminal reporter is made
def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.get_plugin("terminalreporter") is not None:
        writer = config.get_terminal_writer()
        writer.fullwidth = writer.fullwidth  # pytest's own lines keep this terminal's width
    os.environ["COLUMNS"] = WIDE  # for perfguard, in this process and every one it starts


@pytest.fixture(scope="session")
def forked():
    """forked_pytest.py: processes forked from one that has imported torch; its server stops at the end."""
    import forked_pytest

    forked_pytest.start_server()
    yield forked_pytest
    forked_pytest.stop()


@pytest.fixture(scope="session")
def run_pytest(tmp_path_factory, forked):
    """`run_pytest(path, *args, env={...})`: `python -m pytest` in a process of its own in `path`, isolated
    as `pytester.runpytest_subprocess` isolates it, for a module-scoped fixture whose one run several
    tests look at. The process is forked from one that has imported torch, scipy and pytest already
    (forked_pytest.py); `fresh=True` starts a new interpreter instead, for a test of what a run imports
    or of what torch reads at its import. `module="perfguard.cli"` runs `python -m perfguard.cli ARGS`
    instead, forked as well. The run sees no GPU, so that it takes the CPU path on any machine."""
    outputs = tmp_path_factory.mktemp("inner-output")
    runs = itertools.count()

    def run(path: Path, *args: str, env: dict[str, str | None] | None = None, fresh: bool = False,
            module: str = "pytest") -> pytest.RunResult:
        changes = env or {}  # variables to set, or to remove (None), for this run only
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k not in changes}
        env.update({k: v for k, v in changes.items() if v is not None})
        env["PY_COLORS"] = "0"
        env["CUDA_VISIBLE_DEVICES"] = ""
        n = next(runs)
        argv = list(args)
        if module == "pytest":  # out of `path`, which may be a checkout
            argv = [*INNER_ARGS, f"--basetemp={outputs / f'{n}-basetemp'}", *args]
        start = time.monotonic()
        if fresh:
            out = subprocess.run([sys.executable, "-m", module, *argv], cwd=path, env=env,
                                 capture_output=True, text=True, timeout=TIMEOUT_S)
            return pytest.RunResult(out.returncode, out.stdout.splitlines(), out.stderr.splitlines(), time.monotonic() - start)
        done = forked.run(path, argv, env, outputs / f"{n}.out", outputs / f"{n}.err", TIMEOUT_S, module)
        return pytest.RunResult(*done, time.monotonic() - start)

    return run


@pytest.fixture(scope="session")
def fake_clock() -> str:
    """fake_clock.py's text: an inner run's conftest.py that makes its cases' times exact, whatever the load."""
    return Path(__file__).with_name("fake_clock.py").read_text()


@pytest.fixture(scope="session")
def inner_args() -> tuple[str, ...]:
    """What to pass first to `pytester.runpytest_subprocess` (see INNER_ARGS)."""
    return INNER_ARGS


@pytest.fixture
def freeze():
    """`freeze(folder)`: make an existing folder one this process cannot write, root included (chmod for
    a user; root writes through permissions, so chattr +i for root), undone after the test. The tests
    that use it run as a user (.github/workflows/ci.yml) and as root (.ci/run, in a container)."""
    frozen: list[Path] = []

    def freeze_(folder: Path) -> Path:
        folder.chmod(0o555)
        frozen.append(folder)
        if os.access(folder, os.W_OK):  # root
            chattr = shutil.which("chattr")
            if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode:
                pytest.skip("root writes through chmod, and chattr +i failed on this file system; this test runs as a "
                            "user in .github/workflows/ci.yml, and as root where chattr works (ext4, xfs, overlayfs)")
        return folder

    yield freeze_
    chattr = shutil.which("chattr")
    for folder in frozen:
        if chattr:
            subprocess.run([chattr, "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)


def pytest_collection_finish(session: pytest.Session) -> None:
    # What is alive once the tests are collected (torch, scipy, every module imported, the test items)
    # stays alive to the end: out of the garbage collector's full sweeps from here on, each of which went
    # over all of it (some 35 sweeps a run on the worker of the in-process tests, 0.15 s of CPU each of
    # it). Objects the tests make are collected as before.
    gc.freeze()
    # Each xdist worker computes with its share of the cores: torch's default, a thread a core in every
    # worker, had the two workers' OpenMP threads spin against each other on a 2-vCPU VM (the in-process
    # model tests took 8.6 s of CPU beside a busy process, 6.4 s with one thread each). Inner runs keep
    # torch's own default, as a user's run would.
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1))
    if workers > 1 and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(max(1, (os.cpu_count() or 1) // workers))


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # pytest ends with five full garbage collections (to report what a finaliser raises), each a sweep
    # of everything this process holds, torch's objects included: most of a second of CPU in each
    # process (every xdist worker's). Objects alive now are left out of those sweeps, as forked_pytest.py
    # leaves its runs' inherited ones; a cycle a test left for the collector and never got collected is
    # no longer reported at the very end.
    gc.freeze()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    # What was skipped, and why, one line a reason: pytest names a skip's reason only under -rs, which
    # the README's test command does not pass, and there once per place the skip was raised (the gpu
    # marker's at dozens). A fresh machine's run then says in one line that it skipped the browser tests.
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        if isinstance(report.longrepr, tuple):  # (file, line, "Skipped: reason")
            reason = report.longrepr[2].removeprefix("Skipped: ")
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"skipped {count}: {reason}")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False here); on a GPU machine "
                            "`bash benchmarks/gpu.sh OUTDIR tests` runs these")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The README's test command is `-n 2 --dist loadgroup`. xdist's own loadgroup reads a group from a
# suffix it appends to each node id, which pytest 9.2 no longer lets it write (pytest-xdist#1386): the
# groups vanish without a word, and every test goes to either worker alone, each module-scoped fixture
# running on both workers (a third more CPU). So the work is handed out here, a test file at a time.


def work_unit(nodeid: str) -> str:
    """What xdist hands to one worker whole: a test file, so that its module-scoped fixtures run once.
    The tests that start pytest runs go with their files, to either worker, each worker's fork server
    serving its own (forked_pytest.py): one server for them all made them one unit of 57 s, longer
    than all the other tests together (34 s), and the other worker waited 23 s for it at the end."""
    return nodeid.partition("::")[0]


# xdist hands out the units in this order first, then the rest (those with the most tests first); a
# worker asks for another when it has two tests left. A long unit handed out last ends the run on one
# worker alone. The longest, by their time on a 2-vCPU VM (2026-12-07): the compiled cases' (13 s: four
# compiling runs), ab's (12 s: git worktrees and rounds), the browser's where chromium is installed
# (22 s of CPU on the 2-vCPU VM of 2026-12-01), the layering probe's (5 s), ...
LONGEST_FIRST = ("tests/test_compiled_cases.py", "tests/test_ab.py", "tests/test_report_browser.py",
                 "tests/test_core_imports.py", "tests/test_accept.py", "tests/test_misbehaving_cases.py",
                 "tests/test_plugin.py", "tests/test_left_processes.py", "tests/test_xdist.py", "tests/test_gate.py")


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent where xdist is not installed
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadgroup":
        return None  # another --dist: xdist's own scheduler, as asked
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnits(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first hand-out: the queue is complete, in xdist's order
                self.ordered = True
                for unit in reversed(LONGEST_FIRST):
                    if unit in self.workqueue:
                        self.workqueue.move_to_end(unit, last=False)
            super()._assign_work_unit(node)

    return WorkUnits(config, log)


@pytest.fixture(scope="session")
def write_baseline():
    """`write_baseline(folder, {"test_file.py::case_id": ms})`: `folder`/baselines/ holding this CPU's
    baseline, as --perfguard-update writes it, in which each case (recorded under that node id) took
    about `ms` (20 samples within ±1%).

    For an end-to-end verdict that no machine load can flip: a baseline 10x faster than a case's
    sleep makes it regress (load only slows a sleep down), one 10x slower never does."""
    from perfguard import store
    from perfguard.analysis.stats import timing
    from perfguard.measure.device import detect
    from perfguard.model import CaseResult

    def write(folder: Path, cases: dict[str, float]) -> Path:
        device = detect("cpu")  # the inner runs' device: the same CPU, torch and python
        results = []
        for nodeid, ms in cases.items():
            case_id = nodeid.partition("::")[2]
            samples = [ms * (0.99 + 0.001 * i) for i in range(20)]
            results.append(CaseResult(id=case_id, name=case_id.split("[")[0], status="ok", nodeid=nodeid, device=device.slug,
                                      timer="host-clock", timings={"gpu_time": timing(samples)}))
        return store.update(folder / "baselines", device, results, commit=None, recorded_at="2026-11-29T00:00:00+00:00")

    return write
