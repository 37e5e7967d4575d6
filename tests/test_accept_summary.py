"""`perfguard baseline accept` says what it did (issue 30, item 13): `PATH: runs of N case(s) added from K
record(s); M case(s) left as they were (below)`, true however its records fare: given twice, every case
refused, a copy re-dated, some cases taken and some not. Before, it said "accepted 5 run(s)" when no run
was added; K counted the records given, not those a run was taken from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from perfguard import store
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, RunRecord, dumps

CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0", python="3.11.7")


def result(case_id: str, seed: int, slowdown: float = 1.0) -> CaseResult:
    samples = tuple(float(x) for x in np.random.default_rng(seed).lognormal(np.log(0.5), 0.02, 100) * slowdown)
    return CaseResult(id=case_id, name=case_id, status="ok", device=CPU.slug, timer="host-clock",
                      timings={"gpu_time": timing(samples)})


def record(path: Path, day: int, *, slow: tuple[str, ...] = (), seed: int | None = None, created_at: str | None = None) -> str:
    seed = day if seed is None else seed
    run = RunRecord(created_at=created_at or f"2026-11-{day:02d}T12:00:00+00:00", perfguard_version="0.1.0",
                    devices=(dataclasses.replace(CPU, host="runner-a"),),
                    results=tuple(result(c, seed * 10 + i, 3.0 if c in slow else 1.0) for i, c in enumerate(("a", "b"))))
    path.write_text(dumps(run))
    return str(path)


def accept(folder: Path, capsys, *paths: str) -> list[str]:
    assert main(["baseline", "accept", *paths, "--baselines", str(folder)]) == 0
    return capsys.readouterr().out.splitlines()


def summary(folder: Path, lines: list[str]) -> str:
    (line,) = [line for line in lines if line.startswith(f"{folder / 'cpu-amd-epyc-9654.json'}: ")]
    return line.split(": ", 1)[1]


def runs(folder: Path) -> dict[str, int]:
    return {case_id: len(e.runs) for case_id, e in store.load(folder, CPU).cases.items()}


def test_a_record_given_twice_is_one_record_added_from(tmp_path, capsys):
    run = record(tmp_path / "r1.json", 1)
    lines = accept(tmp_path / "b", capsys, run, run)
    assert summary(tmp_path / "b", lines) == "runs of 2 case(s) added from 1 record"
    assert runs(tmp_path / "b") == {"a": 1, "b": 1}


def test_a_record_whose_every_case_is_refused_adds_nothing_and_says_so(tmp_path, capsys):
    accept(tmp_path / "b", capsys, *(record(tmp_path / f"r{d}.json", d) for d in (1, 2, 3)))
    slow = record(tmp_path / "slow.json", 4, slow=("a", "b"))
    lines = accept(tmp_path / "b", capsys, slow)
    assert summary(tmp_path / "b", lines) == "runs of 0 case(s) added from 0 records; 2 case(s) left as they were (below)"
    below = lines[lines.index(next(line for line in lines if "left as they were" in line)) + 1:]
    assert sorted(line.split(":")[0] for line in below) == ["a", "b"] and all("not added" in line for line in below)
    assert runs(tmp_path / "b") == {"a": 3, "b": 3}


def test_a_re_dated_copy_of_a_record_accepted_before_adds_nothing_and_says_so(tmp_path, capsys):
    accept(tmp_path / "b", capsys, record(tmp_path / "r1.json", 1), record(tmp_path / "r2.json", 2))
    copy = record(tmp_path / "copy.json", 3, seed=2, created_at="2026-11-02T13:00:00.001+01:00")  # r2, re-dated
    lines = accept(tmp_path / "b", capsys, copy)
    assert summary(tmp_path / "b", lines) == "runs of 0 case(s) added from 0 records; 2 case(s) left as they were (below)"
    assert sum("is in the series already" in line for line in lines) == 2
    assert runs(tmp_path / "b") == {"a": 2, "b": 2}


def test_some_cases_taken_and_some_not_each_counted_where_it_went(tmp_path, capsys):
    accept(tmp_path / "b", capsys, *(record(tmp_path / f"r{d}.json", d) for d in (1, 2, 3)))
    half = record(tmp_path / "half.json", 4, slow=("a",))
    again = record(tmp_path / "again.json", 5, seed=3)  # r3's samples, another day: the same run
    lines = accept(tmp_path / "b", capsys, half, again)
    assert summary(tmp_path / "b", lines) == "runs of 1 case(s) added from 1 record; 1 case(s) left as they were (below)"
    assert runs(tmp_path / "b") == {"a": 3, "b": 4}


def test_an_intended_change_accepted_by_name_counts_the_record_it_came_from(tmp_path, capsys):
    accept(tmp_path / "b", capsys, *(record(tmp_path / f"r{d}.json", d) for d in (1, 2, 3)))
    slow = record(tmp_path / "slow.json", 4, slow=("a",))
    assert main(["baseline", "accept", slow, "--case", "a", "--reason", "intended", "--baselines", str(tmp_path / "b")]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The accepted run is marked (its `accepted` reason), not the record's object: it still came from slow.json
    assert summary(tmp_path / "b", lines) == "runs of 1 case(s) added from 1 record", lines
