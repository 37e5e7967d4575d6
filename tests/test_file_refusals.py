"""What a record, baseline or acceptance file may not hold, through the real command (issue 30, items 10-12):
a date that is not one, a key given twice, more runs of a case or more bytes than perfguard reads.
Each is one line naming the file and what is wrong, exit 2, and nothing written."""

from __future__ import annotations

import re

import json
from pathlib import Path

import numpy as np
import pytest

from perfguard import store
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, RunRecord, dumps

from baseline_file import edit

CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0", python="3.11.7")
WHEN = "2026-11-29T12:00:00+00:00"


def result(case_id: str, seed: int = 1) -> CaseResult:
    samples = tuple(float(x) for x in np.random.default_rng(seed).lognormal(np.log(0.5), 0.02, 100))
    return CaseResult(id=case_id, name=case_id, status="ok", device=CPU.slug, timer="host-clock",
                      timings={"gpu_time": timing(samples)})


def record(path: Path, created_at: str = WHEN) -> Path:
    run = RunRecord(created_at=created_at, perfguard_version="0.1.0", devices=(CPU,), results=(result("mul"), result("add", 2)))
    path.write_text(dumps(run))
    return path


def baseline(folder: Path) -> Path:
    return store.update(folder, CPU, [result("mul"), result("add", 2)], commit="abc", recorded_at=WHEN)


def refused(capsys, *args: str) -> str:
    """The one line a refused command prints (exit 2)."""
    assert main(list(args)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("created_at", ["zzzz-not-a-date", "2026-02-30T12:00:00+00:00", " 2026-11-29T12:00:00+00:00",
                                        "2026-11-29T24:00:00+00:00", "2026-11-29T12:00:00+25:00", "٢٠٢٦-11-29"])
def test_a_record_whose_created_at_is_not_a_date_is_refused(tmp_path, capsys, created_at):
    run = record(tmp_path / "run.json", created_at)
    err = refused(capsys, "baseline", "accept", str(run), "--baselines", str(tmp_path / "b"))
    assert err.startswith(f"perfguard: {run}: created_at: ")
    assert "is not a date and time as perfguard writes it (ISO 8601, e.g. 2026-11-29T12:00:00+00:00)" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("created_at", [WHEN, "2026-11-29", "2026-11-29T12:00:00.123+05:30", "2026-11-29T12:00:00Z"])
def test_the_dates_perfguard_writes_and_wrote_are_taken(tmp_path, capsys, created_at):
    run = record(tmp_path / "run.json", created_at)
    assert main(["baseline", "accept", str(run), "--baselines", str(tmp_path / "b")]) == 0


@pytest.mark.parametrize("field", ["entry", "run"])
def test_a_baseline_whose_recorded_at_is_not_a_date_is_refused_and_left_as_it_was(tmp_path, capsys, field):
    path = baseline(tmp_path / "b")

    def misdate(data: dict) -> None:
        entry = data["cases"]["mul"]
        (entry if field == "entry" else entry["runs"][0])["recorded_at"] = "2026-02-30T00:00:00+00:00"
    edit(path, misdate)
    text = path.read_text()
    err = refused(capsys, "baseline", "accept", str(record(tmp_path / "run.json")), "--baselines", str(tmp_path / "b"))
    assert re.match(rf"perfguard: {re.escape(str(path))}: sessions\[\d\]\.recorded_at: '2026-02-30T00:00:00\+00:00' is not a "
                    "date and time", err), err  # an entry's date and a run's are rows of the file's sessions table
    assert path.read_text() == text


def _twice(text: str, key: str, where: str) -> str:
    """`text` (JSON perfguard wrote) with the object after `where` given `key` a second time, first."""
    at = text.index(where) + len(where)
    return text[:at] + f'"{key}":{{}},' + text[at:]


def test_a_case_given_twice_in_a_baseline_is_refused_with_the_file_and_the_key(tmp_path, capsys):
    path = baseline(tmp_path / "b")
    text = _twice(path.read_text(), "mul", '"cases":{')  # the gate judged by the second "mul" and said nothing
    path.write_text(text)
    err = refused(capsys, "baseline", "show", "--baselines", str(tmp_path / "b"))
    assert err == (f"perfguard: {path}: the key 'mul' appears twice in one object, and JSON would keep the last one "
                   "silently; was the file edited by hand? Restore it from version control")
    refused(capsys, "baseline", "accept", str(record(tmp_path / "run.json")), "--baselines", str(tmp_path / "b"))
    assert path.read_text() == text


def test_a_key_given_twice_anywhere_in_a_record_is_refused(tmp_path, capsys):
    run = record(tmp_path / "run.json")
    run.write_text(run.read_text().replace('"median_ms":', '"median_ms":9.0,"median_ms":', 1))
    err = refused(capsys, "show", str(run))
    assert err.startswith(f"perfguard: {run}: the key 'median_ms' appears twice in one object")


def test_a_key_given_twice_in_an_acceptance_file_is_refused(tmp_path, capsys):
    from perfguard.errors import BaselineError
    from perfguard.model.codec import loads_acceptances

    with pytest.raises(BaselineError, match=r"^acc\.json: the key 'changes' appears twice in one object"):
        loads_acceptances('{"schema_version": 1, "changes": [], "changes": []}', "acc.json")


@pytest.mark.parametrize("second", [6.0, 7.0])  # the same figure twice, or another
def test_two_entries_for_one_case_and_metric_in_an_acceptance_file_are_refused(tmp_path, capsys, second):
    # Issue 46, 3: two entries for one case and metric (as a merge of two pull requests' files leaves
    # them) passed, the first found deciding. The file is refused in one line, and accepts nothing.
    from perfguard.errors import BaselineError
    from perfguard.model.codec import loads_acceptances

    def entry(figure: float, device: str = CPU.slug) -> dict:
        return {"baseline": 5, "case_id": "mul", "device": device, "figure": figure, "metric": "kernels", "reason": "r"}

    text = json.dumps({"changes": [entry(6.0), entry(second)], "schema_version": 1})
    with pytest.raises(BaselineError) as refused:
        loads_acceptances(text, "b/accepted-changes.json")
    assert str(refused.value) == (f"b/accepted-changes.json: two entries accept the kernels of 'mul' on {CPU.slug}; keep "
                                  "the one that was reviewed and remove the other (`perfguard pr accept` writes one entry a "
                                  "case and metric)")
    # One entry a device: the same case and metric measured on two cards are two changes.
    other = loads_acceptances(json.dumps({"changes": [entry(6.0), entry(second, "nvidia-h200")], "schema_version": 1}), "b")
    assert len(other.changes) == 2


@pytest.mark.parametrize(("field", "value", "says"), [
    ("metric", "gpu_tme", "changes[0].metric: Invalid enum value 'gpu_tme'"),
    ("device", "../x", "changes[0].device: '../x' is not a device slug"),
    ("figure", -1.0, "changes[0].figure: Expected `float` >= 0.0"),
])
def test_an_acceptance_entry_that_could_never_apply_is_refused(field, value, says):
    # A metric perfguard does not judge, a device that is no slug, a figure below zero: an entry that would
    # accept nothing, silently; refused by the reader's types.
    from perfguard.errors import BaselineError
    from perfguard.model.codec import loads_acceptances

    entry = {"baseline": 5, "case_id": "mul", "device": CPU.slug, "figure": 6.0, "metric": "kernels", "reason": "r"}
    with pytest.raises(BaselineError, match=f"^b/accepted-changes.json: {re.escape(says)}"):
        loads_acceptances(json.dumps({"changes": [{**entry, field: value}], "schema_version": 1}), "b/accepted-changes.json")


def _with_runs(path: Path, count: int) -> None:
    def repeat(data: dict) -> None:
        data["cases"]["mul"]["runs"] = data["cases"]["mul"]["runs"][:1] * count
    edit(path, repeat)


def test_a_case_of_more_runs_than_perfguard_reads_is_refused_in_one_line(tmp_path, capsys):
    from perfguard.model import MAX_RUNS_PER_CASE

    path = baseline(tmp_path / "b")
    _with_runs(path, MAX_RUNS_PER_CASE)  # the cap itself is read
    assert main(["baseline", "show", "--baselines", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    _with_runs(path, MAX_RUNS_PER_CASE + 1)
    err = refused(capsys, "baseline", "show", "--baselines", str(tmp_path / "b"))
    assert err == (f"perfguard: {path}: case 'mul': holds 1,001 runs, more than the 1,000 perfguard reads (it keeps "
                   "--perfguard-baseline-runs, default 10); was the file edited by hand? Restore it from version control")


def test_a_baseline_larger_than_perfguard_reads_is_refused_before_it_is_read(tmp_path, capsys):
    from perfguard.store.baselines import MAX_BASELINE_BYTES

    path = baseline(tmp_path / "b")
    with path.open("r+b") as f:  # sparse: its size says 65 MiB; only its size is ever read
        f.truncate(MAX_BASELINE_BYTES + 2**20)
    err = refused(capsys, "baseline", "show", "--baselines", str(tmp_path / "b"))
    assert err == (f"perfguard: {path}: 65 MiB, larger than the 64 MiB a baseline may be (store.MAX_BASELINE_BYTES); "
                   "was the file edited by hand? Restore it from version control")


def test_keeping_more_runs_than_perfguard_reads_is_refused_and_nothing_written(tmp_path, capsys):
    err = refused(capsys, "baseline", "accept", str(record(tmp_path / "run.json")), "--keep-runs", "1001",
                  "--baselines", str(tmp_path / "b"))
    assert err == "perfguard: keep_runs must be 1 to 1,000 (the runs a baseline may hold), got 1001"
    assert not list((tmp_path / "b").glob("*.json"))
