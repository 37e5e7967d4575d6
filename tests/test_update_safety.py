"""Baseline files under hostile conditions: a full disk leaves the old file whole, a linked baseline is
updated where it lives.
"""

from __future__ import annotations

import errno
import os

import pytest

from perfguard import store
from perfguard.errors import BaselineError
from perfguard.model import CaseResult, DeviceInfo, Latency

DEVICE = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")
LATENCY = Latency(median_ms=1.0, mean_ms=1.0, min_ms=0.9, max_ms=1.1, p10_ms=0.95, p90_ms=1.05, iqr_ms=0.05,
                  ci_low_ms=0.99, ci_high_ms=1.01, n=10, stop_reason="converged")


def result(case_id: str) -> CaseResult:
    return CaseResult(id=case_id, name=case_id, status="ok", device=DEVICE.slug, latency=LATENCY, samples_ms=(1.0,) * 10)


def test_a_full_disk_is_one_line_naming_the_file_and_the_old_baseline_stands(tmp_path, monkeypatch):
    path = store.update(tmp_path, DEVICE, [result("a")], commit="c1", recorded_at="t1")
    before = path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # the text is written; flushing it to disk finds no room
    with pytest.raises(BaselineError) as info:
        store.update(tmp_path, DEVICE, [result("b")], commit="c2", recorded_at="t2")
    assert str(info.value) == f"cannot write {path} (No space left on device); choose a writable folder"
    assert path.read_bytes() == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_linked_baseline_is_updated_where_it_lives_and_stays_a_link(tmp_path):
    shared = tmp_path / "shared" / "nvidia-h200.json"  # e.g. a folder of baselines shared by several repositories
    store.update(shared.parent, DEVICE, [result("a")], commit="c1", recorded_at="t1")
    link = tmp_path / "baselines" / "nvidia-h200.json"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(shared, link.parent))

    assert store.update(link.parent, DEVICE, [result("b")], commit="c2", recorded_at="t2") == link
    assert link.is_symlink() and link.resolve() == shared
    assert sorted(store.load_file(shared).cases) == ["a", "b"]  # the target holds the update, not a copy beside it
    assert sorted(p.name for p in link.parent.iterdir()) == ["nvidia-h200.json"]
    assert (shared.parent / "nvidia-h200.json.lock").exists()  # two links to one file share the target's lock
