"""The suites in suites/ as a user collects them: under either of pytest's import modes."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mode", ["prepend", "importlib"])
def test_the_suites_collect_under_either_import_mode(run_pytest, mode):
    out = run_pytest(ROOT, "--collect-only", "-q", f"--import-mode={mode}", "suites/")
    assert out.ret == 0, "\n".join(out.outlines[-30:] + out.errlines[-30:])
    # The Triton case imports its shapes from another suite file: the import that importlib mode breaks.
    assert "suites/test_triton_softmax.py::triton_softmax[" in str(out.stdout)
