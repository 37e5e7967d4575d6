"""A run is counted once however it is re-dated (issue 30, item 9), and a runner twice as slow from a host
the baseline has not seen is left out, on a CPU too: `perfguard baseline accept` and `merge` on real files.

Four good records of one case from one CPU host make the good baseline (tolerance for that host about
±21%); the poison is one record of a run twice as slow, copied with its `created_at` rewritten as the
same instant in five UTC offsets, or 1 ms apart. Before, each copy was one more run, and the host's
tolerance went to ±130%.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from perfguard import store
from perfguard.analysis import noise
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, RunRecord, dumps

from baseline_file import edit

CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0", python="3.11.7")
# 12:00 UTC written five ways, and 1 ms apart: one instant, or as good as one.
SAME_INSTANT = ("2026-11-15T12:00:00+00:00", "2026-11-15T13:00:00+01:00", "2026-11-15T09:00:00-03:00",
                "2026-11-15T17:30:00+05:30", "2026-11-15T12:00:00Z")
MS_APART = tuple(f"2026-11-15T12:00:00.00{i}+00:00" for i in range(5))


def result(median_ms: float, seed: int) -> CaseResult:
    samples = tuple(float(x) for x in np.random.default_rng(seed).lognormal(np.log(median_ms), 0.02, 100))
    return CaseResult(id="a", name="a", status="ok", device=CPU.slug, timer="host-clock", timings={"gpu_time": timing(samples)})


def record(folder: Path, name: str, median_ms: float, host: str, created_at: str, seed: int) -> str:
    run = RunRecord(created_at=created_at, perfguard_version="0.1.0", devices=(dataclasses.replace(CPU, host=host),),
                    results=(result(median_ms, seed),), commit="abc")
    path = folder / name
    path.write_text(dumps(run))
    return str(path)


@pytest.fixture
def good(tmp_path) -> list[str]:
    return [record(tmp_path, f"good{i}.json", 0.5 * (1 + 0.01 * i), "runner-a", f"2026-11-1{i}T12:00:00+00:00", i)
            for i in range(4)]


def tolerance(folder: Path, host: str = "runner-a") -> float:
    entry = store.load(folder, CPU).cases["a"]
    return noise.estimate(result(0.5, 99), entry, 1.0, host=host).tolerance_pct


def accept(folder: Path, capsys, *paths: str) -> list[str]:
    assert main(["baseline", "accept", *paths, "--baselines", str(folder)]) == 0
    return capsys.readouterr().out.splitlines()


def copies(tmp_path: Path, dates: tuple[str, ...]) -> list[str]:
    """One slow run of runner-a, copied once per date (the same samples in each)."""
    return [record(tmp_path, f"slow{i}.json", 1.0, "runner-a", at, 50) for i, at in enumerate(dates)]


@pytest.mark.parametrize("dates", [SAME_INSTANT, MS_APART], ids=["five-offsets", "1ms-apart"])
def test_a_re_dated_copy_of_a_run_is_the_same_run_in_one_accept(tmp_path, good, capsys, dates):
    accept(tmp_path / "good", capsys, *good)
    slow = copies(tmp_path, dates)
    lines = accept(tmp_path / "b", capsys, *good, *slow)
    assert sum("the same run as" in line and "whatever its date says): counted once" in line for line in lines) == 4
    assert len(store.load(tmp_path / "b", CPU).cases["a"].runs) == 4  # the slow run, once, is far from the others
    assert tolerance(tmp_path / "b") == pytest.approx(tolerance(tmp_path / "good"))


def test_a_re_dated_copy_of_a_run_in_the_series_is_counted_once_in_a_later_accept(tmp_path, good, capsys):
    accept(tmp_path / "b", capsys, *good)
    before = tolerance(tmp_path / "b")
    again = record(tmp_path, "again.json", 0.5 * 1.03, "runner-a", "2026-11-13T12:00:00.001+00:00", 3)  # good[3], 1 ms on
    lines = accept(tmp_path / "b", capsys, again)
    assert any(line.startswith("a: the run of 2026-11-13T12:00:00.001+00:00 from") and line.endswith(
        "is in the series already (the same figures from the same card or host, whatever its date): counted once")
        for line in lines), lines
    assert len(store.load(tmp_path / "b", CPU).cases["a"].runs) == 4 and tolerance(tmp_path / "b") == before


def test_a_runner_twice_as_slow_from_a_host_the_baseline_has_not_seen_is_left_out(tmp_path, good, capsys):
    accept(tmp_path / "good", capsys, *good)
    slow = record(tmp_path, "new-host.json", 1.0, "runner-new", "2026-11-15T12:00:00+00:00", 50)
    lines = accept(tmp_path / "b", capsys, *good, slow)
    (line,) = [line for line in lines if "left out" in line]
    assert line.startswith("a: gpu_time the run of 2026-11-15T12:00:00+00:00 on 'runner-new' (+")
    assert line.endswith(f"from {slow}, left out: far from the others")
    assert tolerance(tmp_path / "b", "runner-x") == pytest.approx(tolerance(tmp_path / "good", "runner-x"))


@pytest.mark.parametrize("dates", [SAME_INSTANT, MS_APART], ids=["five-offsets", "1ms-apart"])
def test_merge_counts_a_re_dated_run_of_another_file_once(tmp_path, good, capsys, dates):
    accept(tmp_path / "good", capsys, *good)
    before = tolerance(tmp_path / "good")
    accept(tmp_path / "slow", capsys, copies(tmp_path, dates[:1])[0])
    poisoned = store.path_for(tmp_path / "slow", CPU.slug)

    def restamp(data: dict) -> None:
        (run,) = data["cases"]["a"]["runs"]
        data["cases"]["a"]["runs"] = [{**run, "recorded_at": at} for at in dates]  # the one run, five times
    edit(poisoned, restamp)
    assert main(["baseline", "merge", str(poisoned), "--baselines", str(tmp_path / "good")]) == 0
    capsys.readouterr()
    runs = store.load(tmp_path / "good", CPU).cases["a"].runs
    assert len(runs) <= 5 and tolerance(tmp_path / "good") <= 1.5 * before
