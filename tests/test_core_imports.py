"""The core imports without pytest, torch or jinja2 (DESIGN §2), checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("pytest", "torch", "jinja2")


def modules_loaded_after(statement: str, tmp_path) -> set[str]:
    """Which of HEAVY are in sys.modules after running `statement` in a new interpreter."""
    code = f"import sys, json\n{statement}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    # cwd outside the repository: the import must come from the installed package, not from "."
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_public_core_imports_without_pytest_torch_or_jinja2(tmp_path):
    loaded = modules_loaded_after("import perfguard, perfguard.case, perfguard.model, perfguard.errors", tmp_path)
    assert loaded == set()


# Modules that must not load torch or pytest, checked together in one interpreter: what importing all
# of them loads is what any one of them loads, and more.
WITHOUT_TORCH = {
    "analysis and terminal rendering": ("perfguard.analysis.stats", "perfguard.analysis.metrics", "perfguard.report.terminal"),
    # The xdist controller lists GPUs before any worker starts, and must not pay for torch (nor touch CUDA).
    "the xdist controller and perfguard ab": ("perfguard.measure.gpus", "perfguard.ab", "perfguard.analysis.pooling"),
}


def test_analysis_terminal_rendering_the_xdist_controller_and_perfguard_ab_import_without_torch_or_pytest(tmp_path):
    modules = [m for group in WITHOUT_TORCH.values() for m in group]
    loaded = modules_loaded_after(f"import {', '.join(modules)}", tmp_path)
    assert not loaded & {"torch", "pytest"}, modules


def test_the_measurement_engine_imports_without_pytest(tmp_path):
    loaded = modules_loaded_after("import perfguard.measure.runner", tmp_path)
    assert "pytest" not in loaded
    assert "jinja2" not in loaded  # only report/ may use jinja2
    assert "torch" in loaded  # the probe itself works: measure/ is torch's one user


def test_the_public_names_are_a_sorted_all():
    import perfguard

    assert perfguard.__all__ == sorted(perfguard.__all__)
    for name in perfguard.__all__:
        assert hasattr(perfguard, name), name
