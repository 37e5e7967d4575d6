"""Records and baselines of schema 1 and 2 load as schema 3: each kind of time under `timings`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from perfguard.model import SAMPLE_DIGITS, SCHEMA_VERSION, SIGNIFICANT_DIGITS, dumps, loads_baseline, loads_record, round_sig
from perfguard.model.records import SHOWN_ONLY

from baseline_file import as_written

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = {"median_ms": 1.0, "mean_ms": 1.0, "min_ms": 0.9, "max_ms": 1.2, "p10_ms": 0.95, "p90_ms": 1.1,
           "iqr_ms": 0.05, "ci_low_ms": 0.99, "ci_high_ms": 1.01, "n": 40, "stop_reason": "converged"}


def v2_result(case_id: str, regime: str, gpu_ms: float, caller_ms: float | None) -> dict:
    """A result as schema 2 wrote it: the judged figure in latency/samples_ms, the caller's beside it
    (in the caller regime, the judged figure again)."""
    judged = caller_ms if regime == "caller" else gpu_ms
    caller = None if caller_ms is None else {**SUMMARY, "median_ms": caller_ms}
    return {"id": case_id, "name": case_id, "status": "ok", "device": "nvidia-h200", "timer": "cuda-events",
            "regime": regime, "latency": {**SUMMARY, "median_ms": judged}, "samples_ms": [judged] * 3,
            "caller": caller, "caller_samples_ms": [caller_ms] * 3 if caller_ms else []}


def v2_run(median: float, caller: float | None) -> dict:
    return {"recorded_at": "2026-11-30T10:00:00+00:00", "median_ms": median, "n": 40, "ci_half_pct": 0.2,
            "caller_median_ms": caller, "caller_ci_half_pct": 0.3 if caller else None, "power_capped": False}


def test_a_version_2_record_keeps_each_time_under_its_own_kind():
    record = {"schema_version": 2, "created_at": "2026-11-30T10:00:00+00:00", "perfguard_version": "0.1.0",
              "results": [v2_result("queued", "enqueue-bound", 1.2, 4.1), v2_result("synced", "caller", 1.2, 8.4)]}
    queued, synced = loads_record(json.dumps(record), "old.json").results
    assert {m: t.summary.median_ms for m, t in queued.timings.items()} == {"gpu_time": 1.2, "caller_time": 4.1}
    # In the caller regime schema 2's `latency` was the caller's time: never a GPU time.
    assert {m: t.summary.median_ms for m, t in synced.timings.items()} == {"caller_time": 8.4}
    assert synced.judged_time.median_ms == 8.4 and synced.judged_metric == "caller_time"


def test_a_version_2_baseline_run_timed_as_its_caller_keeps_only_the_callers_time():
    baseline = {"schema_version": 2, "device": {"kind": "cuda", "name": "NVIDIA H200", "slug": "nvidia-h200"},
                "cases": {"c": {"recorded_at": "2026-11-30T10:00:00+00:00", "commit": None, "fingerprint": {},
                                "result": v2_result("c", "device", 1.0, 1.5),
                                # an older run in the caller regime (its two medians are one figure), then a device one
                                "runs": [v2_run(4.0, 4.0), v2_run(1.0, 1.5)]}}}
    old, new = loads_baseline(json.dumps(baseline), "nvidia-h200.json").cases["c"].runs
    assert {m: t.median_ms for m, t in old.timings.items()} == {"caller_time": 4.0}
    assert {m: t.median_ms for m, t in new.timings.items()} == {"gpu_time": 1.0, "caller_time": 1.5}
    assert new.timings["gpu_time"].n == 40 and new.timings["caller_time"].n is None  # schema 2 kept no such count


def test_the_h200_baseline_committed_at_schema_2_loads_migrated_and_writes_back_as_the_current_version():
    # The committed file is re-recorded at the current version (issue 31); one case of the schema-2
    # file committed before it, as written then, stays in tests/data for this.
    path = ROOT / "tests" / "data" / "h200-58f7474-softmax.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 2
    baseline = loads_baseline(path.read_text(), str(path))
    assert set(baseline.cases) == set(raw["cases"])
    for case_id, entry in baseline.cases.items():
        old = raw["cases"][case_id]
        assert entry.result.judged_time.median_ms == pytest.approx(old["result"]["latency"]["median_ms"]), case_id
        assert [r.median_of("gpu_time") for r in entry.runs] == pytest.approx([r["median_ms"] for r in old["runs"]]), case_id
        if old["result"]["caller"]:
            assert entry.result.median_of("caller_time") == pytest.approx(old["result"]["caller"]["median_ms"]), case_id
    text = dumps(baseline)
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION
    again = loads_baseline(text, "again.json")  # its samples and shown-only figures at SAMPLE_DIGITS, all else as it was
    assert {k: e.runs for k, e in again.cases.items()} == {k: tuple(map(as_written, e.runs)) for k, e in baseline.cases.items()}
    for key, entry in again.cases.items():
        was = baseline.cases[key].result
        shown = {f: getattr(was, f) for f in ("setup_s", "wall_s")}
        assert dataclasses.replace(entry.result, timings=was.timings, **shown) == was, key
        assert all(getattr(entry.result, f) == (v if v is None else round_sig(v, SAMPLE_DIGITS)) for f, v in shown.items()), key
        for metric, t in entry.result.timings.items():
            old_t = was.timings[metric]
            assert t.samples_ms == tuple(round_sig(x, SAMPLE_DIGITS) for x in old_t.samples_ms), key
            for f in dataclasses.fields(t.summary):
                digits = SAMPLE_DIGITS if f.name in SHOWN_ONLY else SIGNIFICANT_DIGITS
                value = getattr(old_t.summary, f.name)
                assert getattr(t.summary, f.name) == (round_sig(value, digits) if isinstance(value, float) else value), (key, f.name)
    assert loads_baseline(dumps(again), "again.json") == again
