"""Cases that misbehave fail alone, in one line, and leave the others' figures true.

A case that changes torch's global settings, exits, hangs or returns NaN. One suite of such cases
is run once for the module (`run_pytest`). Nothing asserts on time: the hanging case's timeout is its
own, 120 × a 0.01 s budget, while the others keep 120 × 0.1 s.
"""

from __future__ import annotations

import textwrap
import time

import pytest
import torch

from perfguard.measure import watchdog
from perfguard.measure.torch_state import TorchState
from perfguard.model import loads_record
from perfguard.plugin.options import Options

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

    @perf_case(budget_s=0.01)
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
def misbehaving(tmp_path_factory, run_pytest):
    path = tmp_path_factory.mktemp("misbehaving")
    (path / "test_misbehaving.py").write_text(textwrap.dedent(SUITE))
    result = run_pytest(path, "-v", "--perfguard", "--perfguard-budget=0.1")
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
    assert lines[0] == ("hangs: still running after 1.2 s, stopped (--perfguard-timeout); "
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
