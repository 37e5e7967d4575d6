"""Shared test set-up: pytester for plugin tests, and the `gpu` marker's skip on machines without CUDA."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# Arguments of every inner pytest run: no cache folder, and without two plugins that take a second
# each to import and play no part in perfguard's runs (blocking one that is not installed is harmless).
INNER_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")

# Inner runs (pytester's and `run_pytest`'s subprocesses) import perfguard as this process does: from
# this checkout, not from whichever copy is installed (an editable install may point at another worktree).
ROOT = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


@pytest.fixture(scope="session")
def run_pytest():
    """`run_pytest(path, *args, env={...})`: pytest in a subprocess in `path`, isolated as `pytester.runpytest_subprocess`
    isolates it, for a module-scoped fixture whose one run several tests look at. The run sees no GPU,
    so that it takes the CPU path on any machine."""

    def run(path: Path, *args: str, env: dict[str, str | None] | None = None) -> pytest.RunResult:
        changes = env or {}  # variables to set, or to remove (None), for this run only
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k not in changes}
        env.update({k: v for k, v in changes.items() if v is not None})
        env["PY_COLORS"] = "0"
        env["CUDA_VISIBLE_DEVICES"] = ""
        cmd = [sys.executable, "-m", "pytest", *INNER_ARGS, f"--basetemp={path / 'basetemp'}", *args]
        start = time.monotonic()
        out = subprocess.run(cmd, cwd=path, env=env, capture_output=True, text=True, timeout=300)
        return pytest.RunResult(out.returncode, out.stdout.splitlines(), out.stderr.splitlines(), time.monotonic() - start)

    return run


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
