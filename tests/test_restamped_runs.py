"""A run is counted once whatever its stamps say (issue 30, item 9; issue 46, item 1), and a batch of records
cannot outvote the series it would join: `perfguard baseline accept` and `merge` on real files.

A record's stamps are what it says of itself, not what it measured: its date, its commit, its host and its
card's UUID. A copy can change any of them without measuring anything, so a run is known by its figures
(model.identity, cli/record_runs.run_id). Before, one slow record re-dated in five UTC offsets or 1 ms apart
counted as five runs (issue 30), and so did copies each naming a host or a card of their own (issue 46).

Four good records of one case from one CPU host make the good baseline (tolerance for that host about
±21%); the poison is one record of a run twice as slow, copied with one stamp changed in each copy.
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
from perfguard.model import CaseResult, DeviceInfo, Metrics, RunRecord, dumps

from baseline_file import edit

CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0", python="3.11.7")
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", driver="580.159.04", torch="2.11.0")
# 12:00 UTC written five ways, and 1 ms apart: one instant, or as good as one.
SAME_INSTANT = ("2026-11-15T12:00:00+00:00", "2026-11-15T13:00:00+01:00", "2026-11-15T09:00:00-03:00",
                "2026-11-15T17:30:00+05:30", "2026-11-15T12:00:00Z")
MS_APART = tuple(f"2026-11-15T12:00:00.00{i}+00:00" for i in range(5))
# Each stamp a copy can change without measuring anything: the values five copies take, and the field
# that holds it in a baseline's run.
STAMPS = {
    "five-offsets": (SAME_INSTANT, "recorded_at"),
    "1ms-apart": (MS_APART, "recorded_at"),
    "commit": (tuple(str(i) * 40 for i in range(1, 6)), "commit"),
    "host": (tuple(f"renamed-{i}" for i in range(5)), "host"),
    "card": (tuple(f"GPU-copy-{i}" for i in range(5)), "device_uuid"),
}
# Where a record holds each: its date and commit at the top, its host and card on its devices (the card on
# its results too).
IN_RECORD = {
    "recorded_at": lambda data, value: data.update(created_at=value),
    "commit": lambda data, value: data.update(commit=value),
    "host": lambda data, value: [d.update(host=value) for d in data["devices"]],
    "device_uuid": lambda data, value: [item.update({key: value}) for key, items in (("uuid", data["devices"]),
                                                                                     ("device_uuid", data["results"]))
                                        for item in items],
}


def result(median_ms: float, seed: int) -> CaseResult:
    samples = tuple(float(x) for x in np.random.default_rng(seed).lognormal(np.log(median_ms), 0.02, 100))
    return CaseResult(id="a", name="a", status="ok", device=CPU.slug, timer="host-clock", timings={"gpu_time": timing(samples)})


def record(folder: Path, name: str, median_ms: float, host: str, created_at: str, seed: int) -> str:
    run = RunRecord(created_at=created_at, perfguard_version="0.1.0", devices=(dataclasses.replace(CPU, host=host),),
                    results=(result(median_ms, seed),), commit="abc")
    path = folder / name
    path.write_text(dumps(run))
    return str(path)


def gpu_record(folder: Path, name: str, median_ms: float, card: str, day: int, seed: int) -> str:
    """A run of a memory-bound case on an H200 card of host runner-a."""
    samples = tuple(float(x) for x in median_ms * np.random.default_rng(seed).lognormal(0.0, 0.001, 200))
    measured = CaseResult(id="a", name="a", status="ok", device=H200.slug, device_uuid=card, timer="cuda-events", regime="device",
                          timings={"gpu_time": timing(samples)}, metrics=Metrics(bound="memory"))
    run = RunRecord(created_at=f"2026-11-{day:02d}T12:00:00+00:00", perfguard_version="0.1.0",
                    devices=(dataclasses.replace(H200, uuid=card, host="runner-a"),), results=(measured,), commit="abc")
    path = folder / name
    path.write_text(dumps(run))
    return str(path)


def restamped(source: str, stamp: str, i: int) -> str:
    """The record `source` copied, with the i-th value of one stamp, as a hand or a script would edit it."""
    values, field = STAMPS[stamp]
    data = json.loads(Path(source).read_text())
    IN_RECORD[field](data, values[i])
    path = Path(source).with_name(f"{Path(source).stem}-{stamp}-{i}.json")
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture
def good(tmp_path) -> list[str]:
    return [record(tmp_path, f"good{i}.json", 0.5 * (1 + 0.01 * i), "runner-a", f"2026-11-1{i}T12:00:00+00:00", i)
            for i in range(4)]


@pytest.fixture
def good_gpu(tmp_path) -> list[str]:
    return [gpu_record(tmp_path, f"gpu{i}.json", 0.5 * (1 + 0.001 * i), "GPU-a", 10 + i, i) for i in range(4)]


def tolerance(folder: Path, host: str = "runner-a") -> float:
    entry = store.load(folder, CPU).cases["a"]
    return noise.estimate(result(0.5, 99), entry, 1.0, host=host).tolerance_pct


def accept(folder: Path, capsys, *paths: str) -> list[str]:
    assert main(["baseline", "accept", *paths, "--baselines", str(folder)]) == 0
    return capsys.readouterr().out.splitlines()


def copies(tmp_path: Path, dates: tuple[str, ...]) -> list[str]:
    """One slow run of runner-a, copied once per date (the same samples in each)."""
    return [record(tmp_path, f"slow{i}.json", 1.0, "runner-a", at, 50) for i, at in enumerate(dates)]


def runs_of(folder: Path, device: DeviceInfo = CPU) -> int:
    return len(store.load(folder, device).cases["a"].runs)


# --- a run counts once, whatever its stamps ---------------------------------------------------------------


@pytest.mark.parametrize("stamp", STAMPS)
def test_copies_of_a_run_under_other_stamps_are_one_run_in_one_accept(tmp_path, good_gpu, capsys, stamp):
    run = gpu_record(tmp_path, "run.json", 0.5005, "GPU-a", 14, 60)
    copied = [restamped(run, stamp, i) for i in range(4)]
    lines = accept(tmp_path / "b", capsys, *good_gpu, *copied)
    refused = [line for line in lines if line.startswith("refused ")]
    # Taken oldest first (by the date each copy gives): the first is the run, the others are it again.
    first = next(c for c in copied if not any(line.startswith(f"refused {c}:") for line in refused))
    assert sorted(refused) == sorted(f"refused {c}: the same run as {first} (the same samples, whatever its date, commit, host "
                                     "or card say): counted once" for c in copied if c != first), lines
    assert runs_of(tmp_path / "b", H200) == 5  # the good four, and the copied run once


@pytest.mark.parametrize("stamp", STAMPS)
def test_a_copy_of_a_run_in_the_series_under_another_stamp_is_counted_once_in_a_later_accept(tmp_path, good_gpu, capsys, stamp):
    accept(tmp_path / "b", capsys, *good_gpu)
    before = store.path_for(tmp_path / "b", H200.slug).read_bytes()
    copy = restamped(good_gpu[3], stamp, 0)
    lines = accept(tmp_path / "b", capsys, copy)
    (line,) = [line for line in lines if line.startswith("a: ")]
    assert line.endswith(f"from {copy} is in the series already (the same figures, whatever its date, host or card say): "
                         "counted once"), line
    assert store.path_for(tmp_path / "b", H200.slug).read_bytes() == before


@pytest.mark.parametrize("dates", [SAME_INSTANT, MS_APART], ids=["five-offsets", "1ms-apart"])
def test_a_re_dated_copy_of_a_slow_run_is_one_run_and_left_out(tmp_path, good, capsys, dates):
    accept(tmp_path / "good", capsys, *good)
    slow = copies(tmp_path, dates)
    lines = accept(tmp_path / "b", capsys, *good, *slow)
    assert sum(line.startswith("refused ") and "the same run as" in line for line in lines) == 4
    assert runs_of(tmp_path / "b") == 4  # the slow run, once, is far from the others
    assert tolerance(tmp_path / "b") == pytest.approx(tolerance(tmp_path / "good"))


@pytest.mark.parametrize("stamp", STAMPS)
def test_merge_counts_a_re_stamped_run_of_another_file_once(tmp_path, good_gpu, capsys, stamp):
    accept(tmp_path / "good", capsys, *good_gpu)
    good_runs = store.load(tmp_path / "good", H200).cases["a"].runs
    accept(tmp_path / "slow", capsys, gpu_record(tmp_path, "slow.json", 1.0, "GPU-a", 14, 50))
    poisoned = store.path_for(tmp_path / "slow", H200.slug)
    values, field = STAMPS[stamp]

    def restamp(data: dict) -> None:
        (run,) = data["cases"]["a"]["runs"]
        data["cases"]["a"]["runs"] = [{**run, field: value} for value in values]  # the one run, five times
    edit(poisoned, restamp)
    assert main(["baseline", "merge", str(poisoned), "--baselines", str(tmp_path / "good")]) == 0
    capsys.readouterr()
    # Once, it is one slow run among four good ones, and far from them.
    assert store.load(tmp_path / "good", H200).cases["a"].runs == good_runs


# --- a batch of records cannot outvote the series ---------------------------------------------------------


@pytest.fixture
def tiny(tmp_path, capsys) -> Path:
    """A 3.16 µs case's baseline of three runs of runner-a. On a CPU, the gate allows a host it has not seen
    20 µs more (priors.ABS_FLOOR_MS), six times the case: a run asking to join the series is not allowed it."""
    good = [record(tmp_path, f"tiny{i}.json", 0.00316 * (1 + 0.01 * i), "runner-a", f"2026-11-1{i}T12:00:00+00:00", i)
            for i in range(3)]
    accept(tmp_path / "b", capsys, *good)
    return store.path_for(tmp_path / "b", CPU.slug)


def test_a_run_twice_as_slow_naming_a_host_of_its_own_does_not_join_the_series(tmp_path, tiny, capsys):
    before = tiny.read_bytes()
    slow = record(tmp_path, "slow.json", 0.00632, "host0", "2026-11-15T12:00:00+00:00", 50)
    lines = accept(tmp_path / "b", capsys, slow)
    (line,) = [line for line in lines if line.startswith("a: ")]
    assert line.startswith(f"a: the run of 2026-11-15T12:00:00+00:00 from {slow} not added: gpu_time +9"), line
    assert "% from the centre of the fleet's 3 runs on 1 host, outside its tolerance of ±" in line
    assert line.endswith(f"so the code changed or the run is off; if the change is intended, name it: `perfguard baseline "
                         f"accept {slow} --case a --baselines={tmp_path / 'b'}`"), line
    assert tiny.read_bytes() == before


def test_five_runs_twice_as_slow_each_naming_a_host_of_its_own_cannot_outvote_the_series(tmp_path, tiny, capsys):
    before = tiny.read_bytes()
    # Five runs, not copies: each measured its own samples, so only the series they would join can judge them.
    slow = [record(tmp_path, f"slow{i}.json", 0.00632, f"host{i}", f"2026-11-15T12:00:0{i}+00:00", 50 + i) for i in range(5)]
    lines = accept(tmp_path / "b", capsys, *slow)
    assert sorted(line.split(" not added: ")[0] for line in lines if line.startswith("a: ")) == sorted(
        f"a: the run of 2026-11-15T12:00:0{i}+00:00 from {path}" for i, path in enumerate(slow))
    assert tiny.read_bytes() == before


def test_a_run_of_a_card_the_series_has_not_seen_joins_where_cards_sit_apart(tmp_path, good_gpu, capsys):
    accept(tmp_path / "b", capsys, *good_gpu)
    new_card = gpu_record(tmp_path, "new-card.json", 0.5 * 1.015, "GPU-b", 20, 70)  # 1.5% slower: as cards of a model are
    lines = accept(tmp_path / "b", capsys, new_card)
    assert not [line for line in lines if line.startswith("a: ")], lines
    runs = store.load(tmp_path / "b", H200).cases["a"].runs
    assert len(runs) == 5 and runs[-1].device_uuid == "GPU-b"


def test_a_runner_twice_as_slow_from_a_host_the_baseline_has_not_seen_is_left_out(tmp_path, good, capsys):
    accept(tmp_path / "good", capsys, *good)
    slow = record(tmp_path, "new-host.json", 1.0, "runner-new", "2026-11-15T12:00:00+00:00", 50)
    lines = accept(tmp_path / "b", capsys, *good, slow)
    (line,) = [line for line in lines if "left out" in line]
    assert line.startswith("a: gpu_time the run of 2026-11-15T12:00:00+00:00 on 'runner-new' (+")
    assert line.endswith(f"from {slow}, left out: far from the others")
    assert tolerance(tmp_path / "b", "runner-x") == pytest.approx(tolerance(tmp_path / "good", "runner-x"))
