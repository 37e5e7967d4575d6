"""pytest-xdist on GPUs: `-n auto` is one worker per GPU, each pinned to its own GPU before anything of the
session runs; more workers than GPUs is refused unless allowed; the record names the physical GPUs.

Every test here is marked `gpu` (skipped without CUDA); those that need two GPUs skip with fewer.
Each runs pytest in a subprocess with CUDA_VISIBLE_DEVICES chosen by the test, and
CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA's ordinals are nvidia-smi's (NVML's) indexes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfguard.model import RunRecord, loads_record

pytestmark = pytest.mark.gpu

CASES = 8
SUITE = textwrap.dedent(
    f"""
    import torch
    from perfguard import perf_case

    @perf_case(params={{"k": list(range({CASES}))}}, cache="hot", bytes=3 * 4 * 2**20)
    def scale(k, device):
        x = torch.randn(2**20, device=device)
        return lambda: x * (k + 2)
    """
)


def gpu_uuids() -> list[str]:
    """The UUIDs of the GPUs this test process may use, in torch's order."""
    import torch

    return [f"GPU-{torch.cuda.get_device_properties(i).uuid}" for i in range(torch.cuda.device_count())]


def nvml_index(uuid: str) -> int:
    import pynvml

    pynvml.nvmlInit()
    return pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(uuid))


def need(n: int) -> list[str]:
    uuids = gpu_uuids()
    if len(uuids) < n:
        pytest.skip(f"needs {n} GPUs, this machine shows {len(uuids)}; `bash benchmarks/gpu.sh OUTDIR tests` on a "
                    f"machine of {n} or more runs it")
    return uuids[:n]


def run(path: Path, visible: str, *args: str, conftest: str = "") -> subprocess.CompletedProcess[str]:
    (path / "test_scale.py").write_text(SUITE)
    if conftest:
        (path / "conftest.py").write_text(textwrap.dedent(conftest))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(CUDA_VISIBLE_DEVICES=visible, CUDA_DEVICE_ORDER="PCI_BUS_ID", PY_COLORS="0")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "--perfguard-budget", "0.1",
           f"--perfguard-report={path / 'reports'}", f"--perfguard-baselines={path / 'baselines'}", *args]
    return subprocess.run(cmd, cwd=path, env=env, capture_output=True, text=True, timeout=600)


def output(out: subprocess.CompletedProcess[str]) -> str:
    return out.stdout[-6000:] + out.stderr[-3000:]


def record(path: Path) -> RunRecord:
    return loads_record((path / "reports" / "perfguard.json").read_text(), "record")


def test_n_auto_starts_one_worker_per_gpu_and_each_case_names_its_gpu(tmp_path):
    two = need(2)
    out = run(tmp_path, ",".join(two), "-n", "auto", "--perfguard")  # the UUID form of the variable
    assert out.returncode == 0, output(out)
    assert "created: 2/2 workers" in out.stdout, output(out)
    rec = record(tmp_path)
    assert len(rec.results) == CASES and {r.status for r in rec.results} == {"ok"}
    assert sorted(d.uuid for d in rec.devices) == sorted(two)
    assert {r.device_uuid for r in rec.results} == set(two)  # both GPUs measured cases
    for d in rec.devices:
        assert d.index == nvml_index(d.uuid)  # the physical index, not the worker's ordinal 0


def test_workers_are_pinned_before_a_conftest_touches_cuda(tmp_path):
    two = need(2)
    conftest = """
        import torch
        assert torch.cuda.is_available()  # initialises the CUDA driver at import, before pytest_configure
    """
    out = run(tmp_path, ",".join(two), "-n", "2", "--perfguard", conftest=conftest)
    assert out.returncode == 0, output(out)
    assert {r.device_uuid for r in record(tmp_path).results} == set(two)


def test_a_worker_that_sees_more_than_its_gpu_fails_its_cases_with_the_reason(tmp_path):
    two = need(2)
    conftest = f"""
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "{','.join(two)}"  # undoes the pin before CUDA starts
    """
    out = run(tmp_path, ",".join(two), "-n", "2", "--perfguard", conftest=conftest)
    assert out.returncode == 1, output(out)
    assert out.stdout.count("alone, but CUDA sees 2 GPUs") >= CASES, output(out)


def test_the_record_names_the_physical_gpu_of_an_index_in_cuda_visible_devices(tmp_path):
    second = need(2)[1]
    index = nvml_index(second)
    out = run(tmp_path, str(index), "-n", "1", "--perfguard")
    assert out.returncode == 0, output(out)
    (device,) = record(tmp_path).devices
    assert (device.uuid, device.index) == (second, index)


def test_more_workers_than_gpus_is_refused_unless_allowed(tmp_path):
    (one,) = need(1)
    out = run(tmp_path, one, "-n", "2", "--perfguard")
    assert out.returncode == pytest.ExitCode.USAGE_ERROR, output(out)
    assert "2 xdist workers but 1 visible GPU(s)" in out.stderr + out.stdout
    assert not (tmp_path / "reports").exists()  # refused before any worker started

    out = run(tmp_path, one, "-n", "2", "--perfguard", "--perfguard-allow-shared-gpu")
    assert out.returncode == 0, output(out)
    rec = record(tmp_path)
    assert [d.uuid for d in rec.devices] == [one] and len(rec.results) == CASES

    out = run(tmp_path, one, "-n", "2")  # a smoke run is a functional test run: no guard
    assert out.returncode == 0, output(out)
