"""Ctrl-C in a conftest's `pytest_sessionfinish`, just before perfguard's finish (issue 30, item 6).

The user's hook runs before perfguard's: a KeyboardInterrupt there (a real SIGINT, or one the hook
raises) gave a traceback, exit 130, and the record left `unfinished`, perfguard's finish never run. It
is the same key pressed at the run's end: one line, exit 2, the record `interrupted`, no baseline
written (plugin/interrupt.py, plugin/run.finishing). Real pytest runs (`run_pytest`), real signals.
"""

from __future__ import annotations

import shutil

import pytest

from perfguard import store
from perfguard.model import loads_record

NAP = "import time\nfrom perfguard import perf_case\n\n@perf_case\ndef nap(device):\n    return lambda: time.sleep(0.001)\n"
BUDGET = "--perfguard-budget=0.01"
HOOK = """
import os
import signal

import pytest


@pytest.hookimpl({order})
def pytest_sessionfinish(session):
    {press}
"""
PRESSES = {
    "SIGINT": "os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does",
    "raises KeyboardInterrupt": "raise KeyboardInterrupt",
}
UNTOUCHED = ("perfguard: interrupted at the run's end: no baseline written, the old one is untouched; "
             "run --perfguard-update again; the record says interrupted")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, run_pytest):
    """A suite of one case and its baseline, recorded by a run of its own (once for the module)."""
    folder = tmp_path_factory.mktemp("recorded")
    (folder / "test_nap.py").write_text(NAP)
    assert run_pytest(folder, "--perfguard-update", BUDGET).ret == pytest.ExitCode.OK
    return folder


def with_baseline(tmp_path, recorded):
    """The recorded suite and its baseline, copied into `tmp_path`; the baseline's path and bytes there."""
    (tmp_path / "test_nap.py").write_text(NAP)
    shutil.copytree(recorded / "baselines", tmp_path / "baselines")
    [path] = store.list_files(tmp_path / "baselines")
    return path, path.read_bytes()


def record_of(tmp_path):
    return loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")


@pytest.mark.parametrize("order", ["", "tryfirst=True", "trylast=True"])
@pytest.mark.parametrize("press", sorted(PRESSES))
def test_ctrl_c_in_a_conftest_hook_before_perfguards_finish_is_one_line_exit_2_and_interrupted(tmp_path, run_pytest,
                                                                                              recorded, order, press):
    path, before = with_baseline(tmp_path, recorded)
    (tmp_path / "conftest.py").write_text(HOOK.format(order=order, press=PRESSES[press]))
    result = run_pytest(tmp_path, "--perfguard-update", BUDGET)
    out = result.outlines + result.errlines
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert not [line for line in out if "Traceback" in line or "KeyboardInterrupt" in line], out
    assert [line for line in out if line.startswith("perfguard: interrupted")] == [UNTOUCHED]
    assert path.read_bytes() == before
    record = record_of(tmp_path)
    assert record.status == "interrupted" and [r.id for r in record.results] == ["nap"]


def test_an_error_in_a_conftest_hook_before_perfguards_finish_still_finds_the_record_written(tmp_path, run_pytest):
    # Not Ctrl-C: pytest shows the user's error as its own; the run's files were written first.
    (tmp_path / "test_nap.py").write_text(NAP)
    (tmp_path / "conftest.py").write_text(HOOK.format(order="", press="raise RuntimeError('the hook broke')"))
    result = run_pytest(tmp_path, "--perfguard", BUDGET)
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.INTERRUPTED)
    assert [line for line in result.outlines + result.errlines if "RuntimeError: the hook broke" in line]
    record = record_of(tmp_path)
    assert record.status == "complete" and [r.id for r in record.results] == ["nap"]
