"""Schemas 5 and 6's layout (issue 34, part 3): a baseline's runs as columns over a file-level `sessions`
table, which holds its entries' commit, date and fingerprint too (6); fields at their default left out,
a run's drift in its summary, a baseline's result without what the gate does not read (model.kept) nor
what the file says (its id, its device); old files migrate and judge as before."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from perfguard import store
from perfguard.analysis.stats import timing
from perfguard.analysis.verdict import compare_case
from perfguard.errors import BaselineError
from perfguard.model import (MAX_BASELINE_SAMPLES, SCHEMA_VERSION, BaselineEntry, BaselineFile, CaseResult, DeviceInfo,
                             RunSummary, RunTime, drift_pct, dumps, kept, kept_entry, loads_baseline, typed)

from baseline_file import as_written

ROOT = Path(__file__).resolve().parent.parent
COMMITTED_V4 = ROOT / "tests" / "data" / "h200-187d990-three-cases.json"  # three cases of baselines/ at schema 4
COMMITTED_V5 = ROOT / "tests" / "data" / "h200-efd4977-three-cases.json"  # the same three at schema 5, its sessions whole
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")
WHEN = "2026-12-01T10:00:00+00:00"


def measured(case_id: str, scale: float = 1.0) -> CaseResult:
    samples = tuple(scale * (1.0 + 0.001 * ((i * 7919) % 97)) for i in range(300))
    return CaseResult(id=case_id, name=case_id, status="ok", device="nvidia-h200", timer="cuda-events",
                      timings={"gpu_time": timing(samples), "caller_time": timing(tuple(1.1 * x for x in samples[:10]))})


def run(at: str, uuid: str, median: float, *, caller: float | None = None, clock: float | None = 1980.0,
        accepted: str | None = None) -> RunSummary:
    times = {"gpu_time": RunTime(median, 300, 0.1)}
    if caller is not None:
        times["caller_time"] = RunTime(caller, 10, 0.2)
    return RunSummary(recorded_at=at, timings=times, sm_clock_mhz=clock, device_uuid=uuid, host="vm", commit="c1",
                      regime="device", accepted=accepted)


def a_file() -> BaselineFile:
    """Two cases from three sessions: runs that differ in every column, or share one; a run without the
    caller's time; an accepted run; a run with no clock (None, the default)."""
    s1, s2, s3 = ("2026-12-01T10:00:00+00:00", "GPU-a"), ("2026-12-01T11:00:00+00:00", "GPU-a"), ("2026-12-02T09:00:00+00:00", "GPU-b")
    runs_a = (run(*s1, 1.0, caller=1.2), run(*s2, 1.01), run(*s3, 0.99, caller=1.19, clock=None, accepted="new kernel"))
    runs_b = (run(*s1, 2.0), run(*s3, 2.0))
    return BaselineFile(device=H200, cases={
        "a": BaselineEntry(WHEN, "c1", {"torch": "2.11"}, measured("a"), runs_a),
        "b": BaselineEntry(WHEN, "c1", {"torch": "2.11"}, measured("b", 2.0), runs_b)})


def test_a_baseline_round_trips_through_its_columns_on_both_ways_in():
    original = a_file()
    text = dumps(original)
    data = json.loads(text)
    # One row a recording session, first: the entries' (their commit, date and fingerprint), then the runs'.
    assert list(data)[0] == "sessions" and len(data["sessions"]) == 4
    assert data["sessions"][0] == {"commit": "c1", "fingerprint": {"torch": "2.11"}, "recorded_at": WHEN}
    assert data["cases"]["a"]["session"] == data["cases"]["b"]["session"] == 0
    assert not {"id", "device"} & set(data["cases"]["a"]["result"])  # the case's key, the file's device
    columns = data["cases"]["a"]["runs"]
    assert columns["session"] == [1, 2, 3] and columns["sm_clock_mhz"] == [1980, 1980, None]
    assert columns["regime"] == "device"  # every run's value, once
    assert columns["timings"]["caller_time"]["median_ms"] == [1.2, None, 1.19]
    assert columns["accepted"] == [None, None, "new kernel"]
    assert data["cases"]["b"]["runs"]["session"] == [1, 3]
    fast, strict = typed.baseline(text), loads_baseline(text.replace("\n", " "), "b.json")
    assert fast is not None
    for loaded in (fast, strict, loads_baseline(text, "b.json")):
        for key, entry in original.cases.items():
            back = loaded.cases[key]
            assert back.runs == entry.runs and (back.recorded_at, back.commit, back.fingerprint) == (WHEN, "c1", {"torch": "2.11"})
            assert (back.result.id, back.result.device) == (key, "nvidia-h200")
        assert "caller_time" not in loaded.cases["a"].runs[1].timings
    assert dumps(fast) == dumps(strict) == text


def test_a_file_whose_cases_come_before_its_sessions_reads_the_same():
    text = dumps(a_file())
    data = json.loads(text)
    reordered = json.dumps({"cases": data["cases"], **{k: v for k, v in data.items() if k != "cases"}})
    assert typed.baseline(reordered) == loads_baseline(reordered, "b.json") == loads_baseline(text, "b.json")


def _with(change):
    data = json.loads(dumps(a_file()))
    change(data)
    return json.dumps(data)


LAYOUT_REFUSALS = {
    "no sessions table": (lambda d: d.pop("sessions"), "schema 5 keeps the runs' sessions in a list `sessions`, but it has none"),
    "a session of another shape": (lambda d: d["sessions"].__setitem__(1, {"recorded_at": WHEN, "regime": "device"}),
                                   "sessions[1] should be an object of commit, device_uuid, fingerprint, host, recorded_at, found"),
    "a session that is not there": (lambda d: d["cases"]["a"]["runs"].update(session=[1, 2, 7]),
                                    "case 'a': a run names session 7, but `sessions` has 4 row(s)"),
    "a session that is no index": (lambda d: d["cases"]["a"]["runs"].update(session=[1, 2, True]),
                                   "case 'a': a run names session True"),
    "an entry's date in the entry": (lambda d: d["cases"]["a"].update(recorded_at=WHEN),
                                     "case 'a': `recorded_at` is its session's, kept in `sessions`, not the entry's"),
    "an entry naming a run's row": (lambda d: d["cases"]["a"].update(session=1),
                                    "case 'a': its `session` should name a row of `sessions` with a date and a fingerprint, found 1"),
    "an entry without a row": (lambda d: d["cases"]["b"].pop("session"),
                               "case 'b': its `session` should name a row of `sessions` with a date and a fingerprint, found None"),
    "a result of another case": (lambda d: d["cases"]["a"]["result"].update(id="b"),
                                 "entry 'a' holds the result of case 'b'"),
    "runs as a list": (lambda d: d["cases"]["b"].update(runs=[]), "case 'b': its runs should be columns with a list `session`"),
    "a column too short": (lambda d: d["cases"]["a"]["runs"].update(sm_clock_mhz=[1980, 1980]),
                           "case 'a': its runs' column `sm_clock_mhz` holds 2 value(s) for 3 run(s)"),
    "a time's column too long": (lambda d: d["cases"]["a"]["runs"]["timings"]["gpu_time"].update(n=[1, 2, 3, 4]),
                                 "case 'a': its runs' column `timings.gpu_time.n` holds 4 value(s) for 3 run(s)"),
    "a session's field as a column": (lambda d: d["cases"]["a"]["runs"].update(device_uuid="GPU-z"),
                                      "case 'a': `device_uuid` is a session's, kept in `sessions`, not a column of runs"),
    "times not columns": (lambda d: d["cases"]["a"]["runs"]["timings"].update(gpu_time=[1.0]),
                          "case 'a': its runs' `timings.gpu_time` should be an object of columns"),
    "a zero median": (lambda d: d["cases"]["a"]["runs"]["timings"]["gpu_time"].update(median_ms=[1.0, 0, 1.0]),
                      "BaselineFile.cases['a'].runs[1].timings['gpu_time'].median_ms is 0.0; a run's median is above 0"),
    "an unknown column": (lambda d: d["cases"]["a"]["runs"].update(speedup=2),
                          "unknown field(s) speedup in BaselineFile.cases['a'].runs[0]"),
    "a negative drift": (lambda d: d["cases"]["a"]["result"]["timings"]["gpu_time"]["summary"].update(drift_pct=-1.0),
                         "summary.drift_pct is -1.0; a spread is never negative"),
}


@pytest.mark.parametrize("problem", list(LAYOUT_REFUSALS))
def test_a_layout_perfguard_does_not_write_is_refused_in_one_line_naming_the_file_and_case(problem):
    change, expected = LAYOUT_REFUSALS[problem]
    text = _with(change)
    with pytest.raises(BaselineError) as info:
        loads_baseline(text, "nvidia-h200.json")
    message = str(info.value)
    assert message.startswith("nvidia-h200.json: ") and expected in message and "\n" not in message


def test_a_field_at_its_default_is_left_out_and_what_a_record_is_is_always_written():
    smoke = CaseResult(id="s", name="s", status="smoke")
    line = json.loads(dumps(smoke))
    assert line == {"id": "s", "name": "s", "status": "smoke"}  # no error, profile, copies, … at their defaults
    assert json.loads(dumps(a_file()))["schema_version"] == SCHEMA_VERSION


def test_a_runs_drift_is_that_of_numpys_blocks_of_every_sample():
    rng = np.random.default_rng(3)
    for n in (19, 20, 21, 203, 1000):
        x = 1.0 + 0.01 * np.cumsum(rng.normal(size=n))
        blocks = np.array([np.median(b) for b in np.array_split(x, 5)])  # the rule as analysis/priors.py had it
        expected = 0.0 if n < 20 else 100.0 * np.std(blocks, ddof=1) / np.median(blocks)
        assert drift_pct(list(x)) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert timing(tuple(x)).summary.drift_pct == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_the_committed_schema_4_baseline_migrates_keeps_its_drift_and_judges_as_before(tmp_path):
    text = COMMITTED_V4.read_text()
    raw = json.loads(text)
    assert raw["schema_version"] == 4
    old = loads_baseline(text, str(COMMITTED_V4))
    for key, entry in old.cases.items():  # the drift, taken from the 200 samples the file kept
        samples = raw["cases"][key]["result"]["timings"]["gpu_time"]["samples_ms"]
        assert len(samples) == 200 and entry.result.timings["gpu_time"].summary.drift_pct == pytest.approx(drift_pct(samples))
    assert max(e.result.timings["gpu_time"].summary.drift_pct for e in old.cases.values()) > 5  # add's: it widens a prior
    folder = tmp_path / "b"
    folder.mkdir()
    shutil.copy(COMMITTED_V4, folder / "nvidia-h200.json")
    store.update(folder, H200, [measured("another")], commit="c2", recorded_at="2026-12-03T10:00:00+00:00")  # any write
    written = (folder / "nvidia-h200.json").read_text()
    assert json.loads(written)["schema_version"] == SCHEMA_VERSION
    lines = {line.split('":{', 1)[0][1:]: line for line in written.splitlines() if line.startswith('"') and '"result":' in line}
    for key in old.cases:  # a case's line, against the line schema 4 wrote it on
        assert len(lines[key]) < len(json.dumps({key: raw["cases"][key]}, sort_keys=True)) / 2, key
    new = store.load(folder, H200)
    for key, entry in old.cases.items():
        again = new.cases[key]
        assert again.runs == tuple(map(as_written, kept_entry(entry).runs))  # as a store writes them
        assert len(again.result.timings["gpu_time"].samples_ms) == MAX_BASELINE_SAMPLES
        judged_alike(entry, again)


def judged_alike(entry: BaselineEntry, again: BaselineEntry) -> None:
    """The same verdicts, on the same figures, from a case's entry as a file had it and as it has it now."""
    for scale in (1.0, 1.03, 1.1):
        current = dataclasses.replace(entry.result, device_uuid="GPU-new", timings={
            m: timing(tuple(scale * x for x in t.samples_ms)) for m, t in entry.result.timings.items()})
        before, after = compare_case(current, entry), compare_case(current, again)
        assert [(v.metric, v.status, v.reason) for v in before] == [(v.metric, v.status, v.reason) for v in after]
        was, now = [v.tolerance_pct for v in before], [v.tolerance_pct for v in after]  # None: a count's, memory's
        assert [t is None for t in was] == [t is None for t in now]
        assert [t for t in was if t is not None] == pytest.approx([t for t in now if t is not None], rel=1e-4)


def test_the_committed_schema_5_baseline_migrates_smaller_and_judges_as_before(tmp_path):
    """Schema 6 keeps of a baseline's newest result what the gate reads (model.kept) and puts an entry's
    commit, date and fingerprint in `sessions`: the three cases as schema 5 wrote them, rewritten by an
    update of another case, are each smaller by a sixth or more and judge as before."""
    text = COMMITTED_V5.read_text()
    raw = json.loads(text)
    assert raw["schema_version"] == 5
    old = loads_baseline(text, str(COMMITTED_V5))
    folder = tmp_path / "b"
    folder.mkdir()
    shutil.copy(COMMITTED_V5, folder / "nvidia-h200.json")
    store.update(folder, H200, [measured("another")], commit="c2", recorded_at="2026-12-03T10:00:00+00:00")
    written = json.loads((folder / "nvidia-h200.json").read_text())
    assert written["schema_version"] == SCHEMA_VERSION
    new = store.load(folder, H200)
    for key, entry in old.cases.items():
        size = len(json.dumps(written["cases"][key], separators=(",", ":")))
        assert size < 5 / 6 * len(json.dumps(raw["cases"][key], separators=(",", ":"))), key
        again = new.cases[key]
        assert (again.recorded_at, again.commit, again.fingerprint) == (entry.recorded_at, entry.commit, entry.fingerprint)
        assert again.runs == tuple(map(as_written, kept_entry(entry).runs))  # as a store writes them
        assert again.result == kept(entry.result)
        assert again.result.judged_time.mean_ms is None and entry.result.judged_time.mean_ms is not None
        judged_alike(entry, again)


def test_a_write_keeps_no_run_s_half_width_and_of_the_derived_figures_the_bound_alone(tmp_path):
    """What no verdict reads a baseline does not keep (model.kept_entry): a file that has a run's own
    half-width and a result's bandwidth and rates loses them at its next write; a run that differs from
    another by its half-width alone is that run (baseline.identity)."""
    from perfguard.model import Metrics, identity

    with_metrics = dataclasses.replace(measured("old"), metrics=Metrics(gbps=4000.0, tflops=1.5, bound="memory", roofs="datasheet"))
    runs = (run("2026-12-01T10:00:00+00:00", "GPU-a", 1.0), run("2026-12-02T10:00:00+00:00", "GPU-b", 1.01))
    assert all(t.ci_half_pct for r in runs for t in r.timings.values())
    entry = BaselineEntry(recorded_at=WHEN, commit="c1", fingerprint={}, result=with_metrics, runs=runs)
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "nvidia-h200.json").write_text(dumps(BaselineFile(device=H200, cases={"old": entry})))
    assert '"ci_half_pct"' in (folder / "nvidia-h200.json").read_text()
    store.update(folder, H200, [measured("another")], commit="c2", recorded_at="2026-12-03T10:00:00+00:00")
    written = (folder / "nvidia-h200.json").read_text()
    assert '"ci_half_pct"' not in written and '"gbps"' not in written
    old = store.load(folder, H200).cases["old"]
    assert old.result.metrics == Metrics(bound="memory")
    assert [identity(r) for r in old.runs] == [identity(r) for r in runs]  # the same runs, by what identifies one
    assert [r.timings["gpu_time"].median_ms for r in old.runs] == [1.0, 1.01]


def test_a_result_that_names_another_device_is_refused_by_the_store_naming_the_file(tmp_path):
    """A result's device is the file's where it is left out; one written is another card model's (a result
    moved between files by hand), which the store refuses, naming the file and the device."""
    path = tmp_path / "nvidia-h200.json"
    path.write_text(_with(lambda d: d["cases"]["a"]["result"].update(device="nvidia-a100")))
    with pytest.raises(BaselineError) as info:
        store.load_file(path)
    assert str(info.value) == f"{path}: holds cases measured on nvidia-a100, not nvidia-h200; was the file edited by hand?"
