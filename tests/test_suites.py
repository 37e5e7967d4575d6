"""The suites in suites/ as a user collects them: under either of pytest's import modes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mode", ["prepend", "importlib"])
def test_the_suites_collect_under_either_import_mode(mode):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", f"--import-mode={mode}", "suites/"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # The Triton case imports its shapes from another suite file: the import that importlib mode breaks.
    assert "suites/test_triton_softmax.py::triton_softmax[" in out.stdout
