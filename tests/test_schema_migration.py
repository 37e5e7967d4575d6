"""Files of older schemas: perfguard reads the current one alone, refuses an older one in one line that
names `perfguard migrate FILE`, and that command rewrites it as the current schema, its figures as they
were: the committed fixtures of schemas 2, 4 and 5, migrated, judge exactly as the perfguard before the
one reader judged them as they are (tests/data/migrated-verdicts.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perfguard import store
from perfguard.cli import main
from perfguard.errors import BaselineError
from perfguard.model import (MAX_BASELINE_SAMPLES, SCHEMA_VERSION, BaselineFile, RunRecord, drift_pct, dumps, kept,
                             loads_baseline, loads_record, migration)

from verdict_statuses import verdicts

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
V2 = DATA / "h200-58f7474-softmax.json"  # one case of the H200 baseline committed at schema 2
V4 = DATA / "h200-187d990-three-cases.json"  # three cases of baselines/ at schema 4
V5 = DATA / "h200-efd4977-three-cases.json"  # the same three at schema 5, its sessions whole
# Every verdict of those three judged by each other and by themselves (tests/verdict_statuses.py's
# `verdicts`), as perfguard judged them at 50458ad, reading each file as it is.
BEFORE = DATA / "migrated-verdicts.json"
SUMMARY = {"median_ms": 1.0, "mean_ms": 1.0, "min_ms": 0.9, "max_ms": 1.2, "p10_ms": 0.95, "p90_ms": 1.1,
           "iqr_ms": 0.05, "ci_low_ms": 0.99, "ci_high_ms": 1.01, "n": 40, "stop_reason": "converged"}
WHEN = "2026-11-30T10:00:00+00:00"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three fixtures, copied and migrated by `perfguard migrate` (as a user would run it)."""
    folder = tmp_path_factory.mktemp("migrated")
    copies = {path.name: shutil.copy(path, folder / path.name) for path in (V2, V4, V5)}
    assert main(["migrate", *map(str, copies.values())]) == 0
    return {name: Path(path) for name, path in copies.items()}


def test_the_committed_old_baselines_migrated_judge_exactly_as_perfguard_judged_them(migrated):
    before = json.loads(BEFORE.read_text(encoding="utf-8"))
    now = verdicts([str(migrated[p.name]) for p in (V2, V4, V5)])
    assert set(now) == set(before)
    changed = {key: (was, now[key]) for key, was in before.items() if now[key] != was}
    assert not changed, changed


def test_a_migrated_file_is_the_current_schema_and_reads_back_as_it_is_written(migrated):
    for path in migrated.values():
        text = path.read_text(encoding="utf-8")
        baseline = loads_baseline(text, str(path))
        assert json.loads(text)["schema_version"] == SCHEMA_VERSION and dumps(baseline) == text
        for entry in baseline.cases.values():  # as a write keeps it
            assert entry.result == kept(entry.result)
            assert len(entry.result.judged_time and entry.result.timings[entry.result.judged_metric].samples_ms) <= MAX_BASELINE_SAMPLES


def test_schema_4_keeps_its_drift_from_its_200_samples_and_takes_under_half_the_bytes(migrated):
    raw = json.loads(V4.read_text())
    assert raw["schema_version"] == 4
    written = migrated[V4.name].read_text()
    new = loads_baseline(written, "new.json")
    for key, entry in new.cases.items():
        samples = raw["cases"][key]["result"]["timings"]["gpu_time"]["samples_ms"]
        assert len(samples) == 200 and entry.result.timings["gpu_time"].summary.drift_pct == pytest.approx(drift_pct(samples), rel=1e-5)
    assert max(e.result.timings["gpu_time"].summary.drift_pct for e in new.cases.values()) > 5  # add's: it widens a prior
    lines = {line.split('":{', 1)[0][1:]: line for line in written.splitlines() if line.startswith('"') and '"result":' in line}
    for key in new.cases:  # a case's line, against the line schema 4 wrote it on
        assert len(lines[key]) < len(json.dumps({key: raw["cases"][key]}, sort_keys=True)) / 2, key


def test_schema_5_keeps_each_entrys_commit_date_and_fingerprint_and_takes_a_sixth_less(migrated):
    raw = json.loads(V5.read_text())
    assert raw["schema_version"] == 5
    written = json.loads(migrated[V5.name].read_text())
    new = loads_baseline(migrated[V5.name].read_text(), "new.json")
    for key, entry in new.cases.items():
        old = raw["cases"][key]
        assert (entry.recorded_at, entry.commit, entry.fingerprint) == (old["recorded_at"], old["commit"], old["fingerprint"])
        assert [r.median_of("gpu_time") for r in entry.runs] == old["runs"]["timings"]["gpu_time"]["median_ms"]
        size = len(json.dumps(written["cases"][key], separators=(",", ":")))
        assert size < 5 / 6 * len(json.dumps(old, separators=(",", ":"))), key


def test_schema_2_keeps_each_time_under_its_own_kind(migrated):
    raw = json.loads(V2.read_text())
    assert raw["schema_version"] == 2
    baseline = loads_baseline(migrated[V2.name].read_text(), "new.json")
    assert set(baseline.cases) == set(raw["cases"])
    for case_id, entry in baseline.cases.items():
        old = raw["cases"][case_id]
        assert entry.result.judged_time.median_ms == pytest.approx(old["result"]["latency"]["median_ms"]), case_id
        assert [r.median_of("gpu_time") for r in entry.runs] == pytest.approx([r["median_ms"] for r in old["runs"]]), case_id
        if old["result"]["caller"]:
            assert entry.result.median_of("caller_time") == pytest.approx(old["result"]["caller"]["median_ms"]), case_id


def v2_result(case_id: str, regime: str, gpu_ms: float, caller_ms: float | None) -> dict:
    """A result as schema 2 wrote it: the judged figure in latency/samples_ms, the caller's beside it
    (in the caller regime, the judged figure again)."""
    judged = caller_ms if regime == "caller" else gpu_ms
    caller = None if caller_ms is None else {**SUMMARY, "median_ms": caller_ms}
    return {"id": case_id, "name": case_id, "status": "ok", "device": "nvidia-h200", "timer": "cuda-events",
            "regime": regime, "latency": {**SUMMARY, "median_ms": judged}, "samples_ms": [judged] * 3,
            "caller": caller, "caller_samples_ms": [caller_ms] * 3 if caller_ms else []}


def v2_run(median: float, caller: float | None) -> dict:
    return {"recorded_at": WHEN, "median_ms": median, "n": 40, "ci_half_pct": 0.2,
            "caller_median_ms": caller, "caller_ci_half_pct": 0.3 if caller else None, "power_capped": False}


def test_a_version_2_record_keeps_each_time_under_its_own_kind():
    record = {"schema_version": 2, "created_at": WHEN, "perfguard_version": "0.1.0",
              "results": [v2_result("queued", "enqueue-bound", 1.2, 4.1), v2_result("synced", "caller", 1.2, 8.4)]}
    migrated = migration.migrate(json.dumps(record), "old.json").migrated
    assert isinstance(migrated, RunRecord)
    queued, synced = migrated.results
    assert {m: t.summary.median_ms for m, t in queued.timings.items()} == {"gpu_time": 1.2, "caller_time": 4.1}
    # In the caller regime schema 2's `latency` was the caller's time: never a GPU time.
    assert {m: t.summary.median_ms for m, t in synced.timings.items()} == {"caller_time": 8.4}
    assert synced.judged_time.median_ms == 8.4 and synced.judged_metric == "caller_time"


def test_a_version_2_baseline_run_timed_as_its_caller_keeps_only_the_callers_time():
    baseline = {"schema_version": 2, "device": {"kind": "cuda", "name": "NVIDIA H200", "slug": "nvidia-h200"},
                "cases": {"c": {"recorded_at": WHEN, "commit": None, "fingerprint": {},
                                "result": v2_result("c", "device", 1.0, 1.5),
                                # an older run in the caller regime (its two medians are one figure), then a device one
                                "runs": [v2_run(4.0, 4.0), v2_run(1.0, 1.5)]}}}
    migrated = migration.migrate(json.dumps(baseline), "nvidia-h200.json").migrated
    assert isinstance(migrated, BaselineFile)
    old, new = migrated.cases["c"].runs
    assert old.medians_ms == {"caller_time": 4.0}
    assert new.medians_ms == {"gpu_time": 1.0, "caller_time": 1.5}
    assert new.sample_counts == {"gpu_time": 40}  # schema 2 kept no count of the caller's samples


def test_a_version_1_entry_becomes_its_first_run_and_a_version_3_records_verdicts_are_dropped_and_said_so():
    result = {**v2_result("c", "device", 1.0, None), "latency": {**SUMMARY, "median_ms": 1.0}}
    baseline = {"schema_version": 1, "device": {"kind": "cuda", "name": "NVIDIA H200", "slug": "nvidia-h200"},
                "cases": {"c": {"recorded_at": WHEN, "commit": "abc", "fingerprint": {}, "result": result}}}
    (run,) = migration.migrate(json.dumps(baseline), "b.json").migrated.cases["c"].runs
    assert (run.recorded_at, run.commit, run.median_of("gpu_time"), run.sample_counts["gpu_time"]) == (WHEN, "abc", 1.0, 40)
    record = {"schema_version": 3, "created_at": WHEN, "perfguard_version": "0.1.0", "results": [],
              "verdicts": [{"case_id": "c", "metric": "latency", "status": "same", "baseline": 1.0, "current": 1.0,
                            "change_pct": 0.0, "threshold_pct": 1.0, "baseline_file": None, "message": "same"}]}
    found = migration.migrate(json.dumps(record), "r.json")
    assert found.dropped_verdicts == 1 and found.migrated.verdicts == ()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_reading_a_file_of_an_older_schema_names_the_command_that_migrates_it(version):
    for text, load in ((json.dumps({"schema_version": version, "device": {}, "cases": {}}), loads_baseline),
                       (json.dumps({"schema_version": version, "created_at": WHEN, "results": []}), loads_record)):
        with pytest.raises(BaselineError) as info:
            load(text, "old/perfguard.json")
        assert str(info.value) == (f"old/perfguard.json: schema {version}, which this perfguard no longer reads; rewrite "
                                   f"it as schema {SCHEMA_VERSION} with `perfguard migrate old/perfguard.json`")


def test_perfguard_migrate_says_what_it_did_and_leaves_a_current_file_as_it_is(tmp_path, capsys):
    old, record = shutil.copy(V4, tmp_path / "nvidia-h200.json"), tmp_path / "perfguard.json"
    current = RunRecord(created_at=WHEN, perfguard_version="0.1.0")
    record.write_text(dumps(current))
    assert main(["migrate", str(old), str(record)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{old}: schema 4 → {SCHEMA_VERSION}",
                                                    f"{record}: schema {SCHEMA_VERSION} already; left as it is"]
    assert store.load(tmp_path, "nvidia-h200") is not None  # the store reads it now
    assert main(["migrate", str(old)]) == 0  # twice is once
    assert capsys.readouterr().out == f"{old}: schema {SCHEMA_VERSION} already; left as it is\n"


@pytest.mark.parametrize(("text", "expected"), [
    ('{"schema_version": 9, "cases": {}, "device": {}}', "schema_version 9 is none that perfguard wrote"),
    ('{"schema_version": 4, "x": 1}', "neither a run record nor a baseline file"),
    ('{"schema_version": 4, "schema_version": 4, "results": []}', "a key appears twice in one object"),
    ('[1]', "expected a JSON object at the top"),
    ('{"schema_version": 4', "not valid JSON"),
])
def test_perfguard_migrate_refuses_what_it_cannot_migrate_in_one_line_and_writes_nothing(tmp_path, capsys, text, expected):
    path = tmp_path / "perfguard.json"
    path.write_text(text)
    assert main(["migrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perfguard: {path}: ") and expected in err and err.count("\n") == 1
    assert path.read_text() == text


def test_a_migrated_record_keeps_every_result_a_migrated_baseline_keeps():
    v4 = json.loads(V4.read_text())
    record = {"schema_version": 4, "created_at": WHEN, "perfguard_version": "0.1.0",
              "results": [entry["result"] for entry in v4["cases"].values()]}
    migrated = migration.migrate(json.dumps(record), "r.json").migrated
    assert isinstance(migrated, RunRecord)
    text = dumps(migrated)
    assert dumps(loads_record(text, "again.json")) == text  # what `perfguard migrate` writes reads back as it is
    baseline = migration.migrate(V4.read_text(), "b.json").migrated
    assert [r.id for r in migrated.results] == list(baseline.cases)
    for r in migrated.results:  # the same result, less what a baseline does not keep
        assert kept(r) == baseline.cases[r.id].result


def test_a_schema_6_records_verdicts_keep_their_evidence_and_their_words():
    """Schema 6 wrote a verdict's evidence as flat fields; migrated, each kind is its own (`time` with its
    noise, `memory`, `counters`), and every verdict reads the words perfguard gave it then
    (tests/data/verdicts-schema-6.json: a verdict of every shape, written and worded at 50458ad)."""
    from perfguard.report import words

    fixture = json.loads((DATA / "verdicts-schema-6.json").read_text(encoding="utf-8"))
    assert fixture["record"]["schema_version"] == 6
    migrated = migration.migrate(json.dumps(fixture["record"]), "r.json").migrated
    assert isinstance(migrated, RunRecord) and loads_record(dumps(migrated), "again.json") == migrated
    assert [words.line(v) for v in migrated.verdicts] == fixture["lines"]
    first, kernels, held = migrated.verdicts[0], migrated.verdicts[6], migrated.verdicts[8]
    assert (first.noise.runs, first.noise.sources, first.noise.left_out[0].source, first.time.confirmed) == (9, 3, "GPU-a", True)
    assert kernels.time is None and [c.name for c in kernels.counters.counts] == ["k<1>", "k2"]
    assert held.time is None and held.memory.held_bytes == (500_000_000, 700_000_000)
    assert all(v.time is None for v in migrated.verdicts if v.metric not in ("gpu_time", "caller_time", "busy_time"))
