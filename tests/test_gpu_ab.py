"""`perfguard ab -n 2` on two GPUs: every case's base and head rounds on one card, both cards used, and
the report naming each case's card. Marked `gpu` (skipped without CUDA); skips with fewer than two GPUs.
Runs the console command in a subprocess on a throwaway repository whose head is the base unchanged
(A/A), so that nothing may read regressed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfguard.model import loads_record

pytestmark = pytest.mark.gpu

SUITE = textwrap.dedent(
    """
    import torch
    from perfguard import perf_case

    @perf_case(params={"k": list(range(6))}, bytes=2 * 4 * 2**26)
    def scale(k, device):
        x = torch.randn(2**26, device=device)
        return lambda: x * (k + 2)
    """
)


def test_ab_on_two_gpus_keeps_each_case_on_one_card_and_names_it(tmp_path):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine shows {torch.cuda.device_count()}; `bash benchmarks/gpu.sh OUTDIR tests` "
                    "on a machine of 2 or more runs it")
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "test_scale.py").write_text(SUITE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*git, *args], cwd=repo, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    out = subprocess.run([sys.executable, "-m", "perfguard.cli", "ab", "--base", "HEAD", "-n", "2", "--max-rounds", "4",
                          "--", "-p", "no:cacheprovider", "--perfguard-budget", "0.2", "test_scale.py"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    head = loads_record((repo / "reports" / "perfguard.json").read_text(), "head")
    base = loads_record((repo / "reports" / "perfguard-base.json").read_text(), "base")
    cards = {r.id: r.device_uuid for r in head.results}
    assert cards == {r.id: r.device_uuid for r in base.results} and len(set(cards.values())) == 2
    assert not [v for v in head.verdicts if v.status == "regressed"]
    assert "card" in next(line for line in out.stdout.splitlines() if line.startswith("case "))
