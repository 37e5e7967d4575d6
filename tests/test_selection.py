"""Baseline cases a run did not run: `missing`, a line each, when the run selected them (or would have,
had they still existed); left out on purpose with -k, -m or the test paths, one line counts them all."""

from __future__ import annotations

import textwrap

import pytest

from perfguard.model import loads_record

OPS = """
    import time
    from perfguard import perf_case

    @perf_case
    def kept(device):
        return lambda: time.sleep(0.001)

    @perf_case
    def other(device):
        return lambda: time.sleep(0.001)

    @perf_case(device_kinds=("cuda",))  # selected, and skipped on a CPU: it did not run
    def gpu_only(device):
        return lambda: time.sleep(0.001)
"""
MORE = OPS.replace("kept", "elsewhere").split("@perf_case\n    def other")[0]
# The baseline also holds `gone`, a case since deleted from test_ops.py; every case took 100 ms
# in it, so the ones that run improve whatever the load, and no verdict fails the run.
BASELINE = {f"test_ops.py::{case}": 100.0 for case in ("kept", "other", "gpu_only", "gone")} | {"test_more.py::elsewhere": 100.0}



def test_only_selected_cases_are_missing_and_the_rest_is_one_line(tmp_path, run_pytest, write_baseline):
    (tmp_path / "test_ops.py").write_text(textwrap.dedent(OPS))
    (tmp_path / "test_more.py").write_text(textwrap.dedent(MORE))
    write_baseline(tmp_path, BASELINE)
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "0.01", "-k", "kept or gpu_only")
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines)
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert [v.case_id for v in record.verdicts if v.status == "missing"] == ["gpu_only"]
    assert [line.split(":")[0] for line in result.outlines if "gpu_time missing" in line] == ["gpu_only"]
    assert [line for line in result.outlines if "not selected" in line] == [
        "perfguard: 3 baseline case(s) not selected in this run (-k, -m, --deselect or the test paths): not compared"
    ]


# --- which cases a run selected, on its parsed options ------------------------------------------------

NODEIDS = ["test_ops.py::kept", "test_ops.py::other", "test_ops.py::gone", "test_more.py::elsewhere",
           "sub/test_deep.py::deep[n=1]", "sub/test_deep.py::deep_too"]
SELECTIONS = {  # arguments, the node ids collected (`gone` never is): those selected
    "everything": ((), set(NODEIDS) - {"test_ops.py::gone"}, set(NODEIDS)),
    "-k": (("-k", "kept"), {"test_ops.py::kept"}, {"test_ops.py::kept"}),
    "-m": (("-m", "slow"), {"test_ops.py::other"}, {"test_ops.py::other"}),
    "--deselect": (("--deselect", "test_ops.py::other"), {"test_ops.py::kept"}, {"test_ops.py::kept"}),
    "a file": (("test_ops.py",), {"test_ops.py::kept", "test_ops.py::other"},
               {"test_ops.py::kept", "test_ops.py::other", "test_ops.py::gone"}),
    "a folder": (("sub",), {"sub/test_deep.py::deep[n=1]", "sub/test_deep.py::deep_too"},
                 {"sub/test_deep.py::deep[n=1]", "sub/test_deep.py::deep_too"}),
    "a test": (("sub/test_deep.py::deep",), {"sub/test_deep.py::deep[n=1]"}, {"sub/test_deep.py::deep[n=1]"}),
}


@pytest.mark.parametrize("how", SELECTIONS)
def test_a_case_that_did_not_run_was_selected_when_the_run_took_it_in(pytester, how):
    from perfguard.plugin.selection import Selection

    args, collected, selected = SELECTIONS[how]
    for name in ("test_ops.py", "test_more.py", "sub/test_deep.py"):
        (pytester.path / name).parent.mkdir(exist_ok=True)
        (pytester.path / name).write_text("")
    selection = Selection(pytester.parseconfig(*args))
    selection.selected = set(collected)
    assert {nodeid for nodeid in NODEIDS if selection.selects(nodeid)} == selected
    assert not selection.selects("")  # an entry without a node id (made by hand): not selected


def test_a_cases_file_runs_only_the_tests_it_lists_and_the_rest_is_left_out_on_purpose(tmp_path, run_pytest,
                                                                                       write_baseline):
    (tmp_path / "test_ops.py").write_text(textwrap.dedent(OPS))
    write_baseline(tmp_path, {f"test_ops.py::{case}": 100.0 for case in ("kept", "other")})
    (tmp_path / "cases.txt").write_text("test_ops.py::kept\n\ntest_ops.py::not_there\n")
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "0.01", "--perfguard-cases=cases.txt")
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines)
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert [r.id for r in record.results] == ["kept"]
    assert not [v for v in record.verdicts if v.status == "missing"]  # `other` was left out on purpose
    assert any("2 deselected" in line for line in result.outlines)
