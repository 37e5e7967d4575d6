"""Cases that misbehave fail alone, in one line, and leave the others' figures and the files on disk true.

A case that changes torch's global settings, exits, hangs, returns NaN, or ends the process. One
suite of such cases is run once for the module (`run_pytest`); the cases that end the process get a
run each, the three side by side (each mostly waits). Nothing asserts on time: the hanging case's
timeout is its own, 120 × a 0.005 s budget (0.6 s, waited for), while the others keep 120 × 0.05 s.
"""

from __future__ import annotations

import concurrent.futures
import textwrap
import time
from pathlib import Path

import pytest
import torch

from perfguard.measure import watchdog
from perfguard.measure.torch_state import TorchState
from perfguard.model import CaseResult, RunRecord, dumps, loads_record
from perfguard.plugin.options import Options
from perfguard.report.terminal import record_lines

from test_bad_input import failure_lines

SUITE = """
    import sys
    import time

    import torch

    from perfguard import perf_case

    @perf_case
    def leaks_settings(device):  # first in the file: every case below runs after it
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        return lambda: torch.ones(4)

    @perf_case(check=lambda out: out.dtype == torch.float32 and out.requires_grad)
    def after_the_leak(device):
        w = torch.ones(4, requires_grad=True)
        return lambda: w * 2

    @perf_case
    def exits(device):
        def run():
            sys.exit(3)
        return run

    @perf_case(budget_s=0.005)
    def hangs(device):
        return lambda: time.sleep(3600)

    @perf_case
    def nan_output(device):
        x = torch.full((8,), float("nan"))
        return lambda: x * 2

    @perf_case(params={"n": [1]})
    def healthy(n, device):
        return lambda: time.sleep(0.001)
"""

LEAK = ("default dtype float32 → float64", "grad mode on → off")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, run_pytest) -> dict[str, tuple[pytest.RunResult, Path]]:
    """The misbehaving suite, and each suite whose case ends the process, run side by side."""
    folders = {name: tmp_path_factory.mktemp(name) for name in ("misbehaving", "dies", "stuck")}
    (folders["misbehaving"] / "test_misbehaving.py").write_text(textwrap.dedent(SUITE))
    reports = folders["dies"] / "reports"
    reports.mkdir()
    previous = RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0.1.0",
                         results=(CaseResult(id="healthy", name="healthy", status="smoke"),))
    (reports / "perfguard.json").write_text(dumps(previous))
    (reports / "perfguard.html").write_text("<p>yesterday</p>")
    (reports / "perfguard.md").write_text("yesterday")
    (folders["dies"] / "test_dies.py").write_text(textwrap.dedent(OS_EXIT_SUITE))
    (folders["stuck"] / "conftest.py").write_text("import perfguard.measure.watchdog as w\nw.GRACE_S = 0.3\n")
    (folders["stuck"] / "test_stuck.py").write_text(textwrap.dedent(STUCK_IN_C_SUITE))
    args = {"misbehaving": ("-v", "--perfguard", "--perfguard-budget=0.05"), "dies": ("--perfguard", "--perfguard-budget=0.1"),
            "stuck": ("--perfguard", "--perfguard-budget=0.1")}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(folders)) as pool:
        done = {name: pool.submit(run_pytest, folder, *args[name]) for name, folder in folders.items()}
        return {name: (job.result(), folders[name]) for name, job in done.items()}


@pytest.fixture(scope="module")
def misbehaving(runs):
    result, path = runs["misbehaving"]
    record = loads_record((path / "reports" / "perfguard.json").read_text(), "record")
    return result, {r.id: r for r in record.results}, path


def test_the_misbehaving_cases_fail_alone_and_the_rest_run_on(misbehaving):
    result, results, _ = misbehaving
    result.assert_outcomes(failed=2, passed=4)
    assert sorted(results) == ["after_the_leak", "exits", "hangs", "healthy[n=1]", "leaks_settings", "nan_output"]
    assert {i for i, r in results.items() if r.status == "error"} == {"exits", "hangs"}


def test_torch_settings_a_case_leaves_changed_are_put_back_and_named(misbehaving):
    result, results, _ = misbehaving
    assert results["leaks_settings"].restored_state == LEAK
    assert results["after_the_leak"].status == "ok" and results["after_the_leak"].outputs == "checked"
    assert results["after_the_leak"].restored_state == ()
    line = f"leaks_settings changed torch's {', '.join(LEAK)} and left it so; perfguard restored it after the case"
    assert line in result.outlines


def test_sys_exit_in_a_callable_is_that_cases_one_line_error(misbehaving):
    result, results, _ = misbehaving
    lines = failure_lines(result, "exits")
    assert lines[0] == "exits: the timed callable called sys.exit(3); a case must return (or raise), not exit"
    assert len(lines) <= 3 and "sys.exit(3)" in lines[-1]  # the user's frame, not pytest's traceback
    assert results["exits"].error.splitlines()[0] == lines[0]


def test_a_hanging_call_is_stopped_at_its_timeout_and_the_next_cases_run(misbehaving):
    result, results, _ = misbehaving
    lines = failure_lines(result, "hangs")
    assert lines[0] == ("hangs: still running after 0.6 s, stopped (--perfguard-timeout); "
                        "make it finish sooner or raise the timeout")
    assert any("time.sleep(3600)" in line for line in lines[1:])
    order = [line.split()[0] for line in result.outlines if line.startswith("test_misbehaving.py::")]
    assert order.index("test_misbehaving.py::hangs") < order.index("test_misbehaving.py::healthy[n=1]")
    assert results["healthy[n=1]"].status == "ok"


def test_outputs_are_flagged_as_unchecked_and_nan_is_named(misbehaving):
    result, results, path = misbehaving
    assert results["nan_output"].outputs == "non-finite"
    assert results["healthy[n=1]"].outputs == results["leaks_settings"].outputs == "unchecked"
    nan_line = "NaN or inf in the output of nan_output: measured all the same; declare check= to fail such a case"
    assert nan_line in result.outlines
    assert "outputs not checked: 3 of 4 case(s) declare no check=" in result.outlines
    assert nan_line.replace("_", "\\_") in (path / "reports" / "perfguard.md").read_text()  # Markdown-escaped


OS_EXIT_SUITE = """
    import os
    import time

    from perfguard import perf_case

    @perf_case
    def healthy(device):
        return lambda: time.sleep(0.001)

    @perf_case
    def ends_the_process(device):
        os._exit(3)
"""


def test_os_exit_in_a_case_leaves_a_record_that_says_unfinished_not_the_previous_one(runs):
    result, folder = runs["dies"]  # its reports/ held yesterday's record and reports before it ran
    reports = folder / "reports"
    assert result.ret == 3
    record = loads_record((reports / "perfguard.json").read_text(), "record")
    assert record.status == "unfinished" and record.results == ()
    assert sorted(p.name for p in reports.iterdir()) == ["perfguard.json"]  # no report passes for this run's
    assert record_lines(record)[0].startswith("run unfinished: its pytest ended before writing its record")


STUCK_IN_C_SUITE = """
    import signal
    import time

    from perfguard import perf_case

    @perf_case(budget_s=0.005)
    def stuck(device):
        def run():
            # As a call stuck in C code or in the CUDA driver: the alarm never reaches Python.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        return run
"""


def test_a_call_python_cannot_interrupt_ends_the_process_with_its_stack_and_an_unfinished_record(runs):
    result, folder = runs["stuck"]
    assert result.ret == 1
    result.stderr.fnmatch_lines(["Timeout (0:00:00.900000)!", "*test_stuck.py*in run"])  # 0.6 s, then the grace
    assert loads_record((folder / "reports" / "perfguard.json").read_text(), "record").status == "unfinished"


# --- the parts, in this process ----------------------------------------------------------------------


def test_torch_state_puts_back_what_changed_and_says_what_it_was():
    before = TorchState.now()
    try:
        torch.set_default_dtype(torch.float64)
        torch.set_num_threads(max(1, torch.get_num_threads() - 1) if torch.get_num_threads() > 1 else 2)
        torch.use_deterministic_algorithms(True, warn_only=True)
        changed = before.restore()
    finally:
        before.restore()
    assert changed[0] == "default dtype float32 → float64"
    assert changed[1].startswith("threads ")
    assert changed[2] == "deterministic algorithms off → on, warn only"
    assert TorchState.now() == before and before.restore() == ()


def test_a_deadline_raises_past_a_cases_own_except_exception_and_stops_once_disarmed():
    caught = []
    with pytest.raises(watchdog.CaseTimeout):
        with watchdog.deadline(0.05):
            try:
                time.sleep(60)
            except Exception as exc:  # noqa: BLE001 - what a careless case does
                caught.append(exc)
    assert caught == []
    with watchdog.deadline(0.05) as stop_alarm:
        stop_alarm()
        time.sleep(0.1)  # the alarm would have fired here


def test_the_default_timeout_is_a_multiple_of_the_budget_and_zero_means_none():
    options = Options(enabled=True, update=False, baselines_dir=None, report_dir=None, threshold_pct=5, budget_s=0.5)
    assert options.timeout_for(0.5) == 60 and options.timeout_for(0.01) == 1.2
    assert Options(**{**options.__dict__, "timeout_s": 5.0}).timeout_for(0.5) == 5.0
    assert Options(**{**options.__dict__, "timeout_s": 0.0}).timeout_for(0.5) is None


def test_perfguard_ab_refuses_a_round_whose_record_is_the_unfinished_marker(tmp_path):
    from perfguard.ab import rounds
    from perfguard.ab.shards import Shard
    from perfguard.errors import MeasurementError

    def died_with_exit_0(cmd, cwd, env, out, err):  # as a case calling os._exit(0) would leave it
        folder = Path(next(a for a in cmd if a.startswith("--perfguard-report=")).split("=", 1)[1])
        (folder / "perfguard.json").write_text(dumps(RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0", status="unfinished")))
        out.write_text("test_x.py .")
        return lambda: 0

    side = rounds.Side(name="head", label="working tree", tree=tmp_path, cwd=tmp_path, pythonpath="")
    with pytest.raises(MeasurementError) as info:
        rounds.run_side(side, 0, [], [Shard(0, None)], None, tmp_path / "round", tmp_path / "none", died_with_exit_0)
    assert str(info.value).startswith(f"working tree, round 1: pytest exited 0 in {tmp_path} with its perfguard record unfinished")
