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

RUNS = {  # arguments: (missing, how many not selected)
    "-k kept or gpu_only": (("-k", "kept or gpu_only"), ["gpu_only"], 3),
    "a test file": (("test_ops.py",), ["gone", "gpu_only"], 1),
    "a test": (("test_ops.py::kept",), [], 4),
    "everything": ((), ["gone", "gpu_only"], 0),
}


@pytest.mark.parametrize("selection", RUNS)
def test_only_selected_cases_are_missing_and_the_rest_is_one_line(tmp_path, run_pytest, write_baseline, selection):
    args, missing, left_out = RUNS[selection]
    (tmp_path / "test_ops.py").write_text(textwrap.dedent(OPS))
    (tmp_path / "test_more.py").write_text(textwrap.dedent(MORE))
    write_baseline(tmp_path, BASELINE)
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "0.1", *args)
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines)
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert sorted(v.case_id for v in record.verdicts if v.status == "missing") == missing
    lines = [line for line in result.outlines if "latency missing" in line]
    assert sorted(line.split(":")[0] for line in lines) == missing
    counted = [line for line in result.outlines if "not selected" in line]
    if left_out:
        assert counted == [f"perfguard: {left_out} baseline case(s) not selected in this run "
                           "(-k, -m, --deselect or the test paths): not compared"]
    else:
        assert counted == []
