"""A baseline file's layout (issue 34, part 3): a case's runs as columns over a file-level `sessions`
table, which holds its entries' commit, date and fingerprint too; fields at their default left out,
a run's drift in its summary, a baseline's result without what the gate does not read (model.kept) nor
what the file says (its id, its device). Older schemas: tests/test_schema_migration.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from perfguard import store
from perfguard.analysis.stats import timing
from perfguard.errors import BaselineError
from perfguard.model import (SCHEMA_VERSION, BaselineEntry, BaselineFile, CaseResult, DeviceInfo, RunSummary,
                             drift_pct, dumps, loads_baseline)

ROOT = Path(__file__).resolve().parent.parent
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")
WHEN = "2026-12-01T10:00:00+00:00"


def measured(case_id: str, scale: float = 1.0) -> CaseResult:
    samples = tuple(scale * (1.0 + 0.001 * ((i * 7919) % 97)) for i in range(300))
    return CaseResult(id=case_id, name=case_id, status="ok", device="nvidia-h200", timer="cuda-events",
                      timings={"gpu_time": timing(samples), "caller_time": timing(tuple(1.1 * x for x in samples[:10]))})


def run(at: str, uuid: str, median: float, *, caller: float | None = None, clock: float | None = 1980.0,
        accepted: str | None = None) -> RunSummary:
    medians, counts = {"gpu_time": median}, {"gpu_time": 300}
    if caller is not None:
        medians["caller_time"], counts["caller_time"] = caller, 10
    return RunSummary(recorded_at=at, medians_ms=medians, sample_counts=counts, sm_clock_mhz=clock, device_uuid=uuid,
                      host="vm", commit="c1", regime="device", accepted=accepted)


def a_file() -> BaselineFile:
    """Two cases from three sessions: runs that differ in every column, or share one; a run without the
    caller's time; an accepted run; a run with no clock (None, the default)."""
    s1, s2, s3 = ("2026-12-01T10:00:00+00:00", "GPU-a"), ("2026-12-01T11:00:00+00:00", "GPU-a"), ("2026-12-02T09:00:00+00:00", "GPU-b")
    runs_a = (run(*s1, 1.0, caller=1.2), run(*s2, 1.01), run(*s3, 0.99, caller=1.19, clock=None, accepted="new kernel"))
    runs_b = (run(*s1, 2.0), run(*s3, 2.0))
    return BaselineFile(device=H200, cases={
        "a": BaselineEntry(WHEN, "c1", {"torch": "2.11"}, measured("a"), runs_a),
        "b": BaselineEntry(WHEN, "c1", {"torch": "2.11"}, measured("b", 2.0), runs_b)})


def test_a_baseline_round_trips_through_its_columns():
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
    spaced = loads_baseline(text.replace("\n", " ").replace(",", ", ").replace(":{", ": {"), "b.json")
    for loaded in (spaced, loads_baseline(text, "b.json")):
        for key, entry in original.cases.items():
            back = loaded.cases[key]
            assert back.runs == entry.runs and (back.recorded_at, back.commit, back.fingerprint) == (WHEN, "c1", {"torch": "2.11"})
            assert (back.result.id, back.result.device) == (key, "nvidia-h200")
        assert "caller_time" not in loaded.cases["a"].runs[1].medians_ms
    assert dumps(spaced) == text


def test_a_file_whose_cases_come_before_its_sessions_reads_the_same():
    text = dumps(a_file())
    data = json.loads(text)
    reordered = json.dumps({"cases": data["cases"], **{k: v for k, v in data.items() if k != "cases"}})
    assert loads_baseline(reordered, "b.json") == loads_baseline(text, "b.json")


def _with(change):
    data = json.loads(dumps(a_file()))
    change(data)
    return json.dumps(data)


LAYOUT_REFUSALS = {
    "no sessions table": (lambda d: d.pop("sessions"), "Object missing required field `sessions`"),
    "a session of another shape": (lambda d: d["sessions"].__setitem__(1, {"recorded_at": WHEN, "regime": "device"}),
                                   "sessions[1]: Object contains unknown field `regime`"),
    "a session that is not there": (lambda d: d["cases"]["a"]["runs"].update(session=[1, 2, 7]),
                                    "case 'a': a run names session 7, but `sessions` has 4 row(s)"),
    "a session that is no index": (lambda d: d["cases"]["a"]["runs"].update(session=[1, 2, True]),
                                   "case 'a': runs.session[2]: Expected `int`, got `bool`"),
    "an entry's date in the entry": (lambda d: d["cases"]["a"].update(recorded_at=WHEN),
                                     "case 'a': Object contains unknown field `recorded_at`"),
    "an entry naming a run's row": (lambda d: d["cases"]["a"].update(session=1),
                                    "case 'a': its `session` should name a row of `sessions` with a date and a fingerprint, found 1"),
    "an entry without a row": (lambda d: d["cases"]["b"].pop("session"),
                               "case 'b': Object missing required field `session`"),
    "a result of another case": (lambda d: d["cases"]["a"]["result"].update(id="b"),
                                 "case 'a': its entry holds the result of case 'b'"),
    "runs as a list": (lambda d: d["cases"]["b"].update(runs=[]), "case 'b': runs: Expected `object`, got `array`"),
    "a column too short": (lambda d: d["cases"]["a"]["runs"].update(sm_clock_mhz=[1980, 1980]),
                           "case 'a': its runs' column `sm_clock_mhz` holds 2 value(s) for 3 run(s)"),
    "a time's column too long": (lambda d: d["cases"]["a"]["runs"]["timings"]["gpu_time"].update(n=[1, 2, 3, 4]),
                                 "case 'a': its runs' column `timings.gpu_time.n` holds 4 value(s) for 3 run(s)"),
    "a session's field as a column": (lambda d: d["cases"]["a"]["runs"].update(device_uuid="GPU-z"),
                                      "case 'a': runs: Object contains unknown field `device_uuid`"),
    "times not columns": (lambda d: d["cases"]["a"]["runs"]["timings"].update(gpu_time=[1.0]),
                          "case 'a': runs.timings[...]: Expected `object`, got `array`"),
    "a zero median": (lambda d: d["cases"]["a"]["runs"]["timings"]["gpu_time"].update(median_ms=[1.0, 0, 1.0]),
                      "case 'a': runs.timings[...].median_ms[1]: Expected `float` > 0.0"),
    "an unknown column": (lambda d: d["cases"]["a"]["runs"].update(speedup=2),
                          "case 'a': runs: Object contains unknown field `speedup`"),
    "a negative drift": (lambda d: d["cases"]["a"]["result"]["timings"]["gpu_time"]["summary"].update(drift_pct=-1.0),
                         "case 'a': result.timings[...].summary.drift_pct: Expected `float` >= 0.0"),
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


def test_a_write_keeps_no_run_s_half_width_and_of_the_derived_figures_the_bound_alone(tmp_path):
    """What no verdict reads a baseline does not keep (model.kept_entry): a file that has a run's own
    half-width (written on 2026-12-03 and 12-04) and a result's bandwidth and rates reads, and loses them
    at its next write; its runs are the runs they were (baseline.identity)."""
    from perfguard.model import Metrics, identity

    with_metrics = dataclasses.replace(measured("old"), metrics=Metrics(gbps=4000.0, tflops=1.5, bound="memory", roofs="datasheet"))
    runs = (run("2026-12-01T10:00:00+00:00", "GPU-a", 1.0), run("2026-12-02T10:00:00+00:00", "GPU-b", 1.01))
    entry = BaselineEntry(recorded_at=WHEN, commit="c1", fingerprint={}, result=with_metrics, runs=runs)
    data = json.loads(dumps(BaselineFile(device=H200, cases={"old": entry})))
    data["cases"]["old"]["runs"]["timings"]["gpu_time"]["ci_half_pct"] = [0.1, 0.2]
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "nvidia-h200.json").write_text(json.dumps(data))
    assert store.load(folder, H200).cases["old"].runs == runs
    store.update(folder, H200, [measured("another")], commit="c2", recorded_at="2026-12-03T10:00:00+00:00")
    written = (folder / "nvidia-h200.json").read_text()
    assert '"ci_half_pct"' not in written and '"gbps"' not in written
    old = store.load(folder, H200).cases["old"]
    assert old.result.metrics == Metrics(bound="memory")
    assert [identity(r) for r in old.runs] == [identity(r) for r in runs]  # the same runs, by what identifies one
    assert [r.median_of("gpu_time") for r in old.runs] == [1.0, 1.01]


def test_a_result_that_names_another_device_is_refused_by_the_store_naming_the_file(tmp_path):
    """A result's device is the file's where it is left out; one written is another card model's (a result
    moved between files by hand), which the store refuses, naming the file and the device."""
    path = tmp_path / "nvidia-h200.json"
    path.write_text(_with(lambda d: d["cases"]["a"]["result"].update(device="nvidia-a100")))
    with pytest.raises(BaselineError) as info:
        store.load_file(path)
    assert str(info.value) == f"{path}: holds cases measured on nvidia-a100, not nvidia-h200; was the file edited by hand?"
