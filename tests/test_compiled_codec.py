"""The converters and checks compiled per class (model/compiled.py, checks.clean) against the walks
they stand in for: the same objects from the committed baseline, and never a pass where a walk refuses.
How each refusal is worded is the walks' (tests/test_bad_input.py, test_hostile_input.py and others)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path

import pytest

from perfguard.model import checks, codec, compiled
from perfguard.model.baseline import BaselineFile, RunTime
from perfguard.model.measured import Memory
from perfguard.model.records import CaseResult, RunRecord, TimeSummary

from baseline_file import unpacked

BASELINE = Path(__file__).resolve().parent.parent / "baselines" / "nvidia-h200.json"


@pytest.fixture(scope="module")
def data() -> dict:
    return unpacked(BASELINE.read_text(encoding="utf-8"))  # the JSON the typed passes build from: runs as lists


def test_compiled_builds_what_the_walk_builds(data: dict) -> None:
    fast = compiled.converter(BaselineFile)(copy.deepcopy(data))
    assert fast == codec._walk(BaselineFile, copy.deepcopy(data), "b.json")
    assert repr(fast) == repr(codec._walk(BaselineFile, copy.deepcopy(data), "b.json"))  # floats stay floats
    assert checks.clean(fast)
    assert compiled.checked(BaselineFile)(copy.deepcopy(data)) == fast  # and the pass that checks as it builds


def _nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth):
        value = [value]
    return value


def _first_entry(data: dict) -> dict:
    return next(iter(data["cases"].values()))


# Edits of one value each: the compiled converter must refuse every one the walk refuses.
EDITS = [
    ("unknown field", lambda e: e.update(extra=1)),
    ("missing field", lambda e: e.pop("recorded_at")),
    ("null where none is allowed", lambda e: e.update(fingerprint=None)),
    ("bool for int", lambda e: e["runs"][0]["timings"]["gpu_time"].update(n=True)),
    ("int too large", lambda e: e["runs"][0]["timings"]["gpu_time"].update(n=2**63)),
    ("float for int", lambda e: e["runs"][0]["timings"]["gpu_time"].update(n=3.0)),
    ("string for float", lambda e: e["runs"][0].update(sm_clock_mhz="1980")),
    ("huge int for float", lambda e: e["runs"][0].update(sm_clock_mhz=10**400)),
    ("unknown word", lambda e: e["runs"][0].update(regime="fast")),
    ("unknown metric key", lambda e: e["runs"][0]["timings"].update(wall_time=e["runs"][0]["timings"]["gpu_time"])),
    ("a sample that is a string", lambda e: next(iter(e["result"]["timings"].values()))["samples_ms"].append("1")),
    ("samples not a list", lambda e: next(iter(e["result"]["timings"].values())).update(samples_ms={})),
    ("deep free form", lambda e: e["result"].update(params={"a": _nested(codec.MAX_FREE_FORM_DEPTH)})),
    ("inf in free form", lambda e: e["result"].update(params={"a": [math.inf]})),
]


@pytest.mark.parametrize("what, edit", EDITS, ids=[w for w, _ in EDITS])
def test_compiled_refuses_what_the_walk_refuses(data: dict, what: str, edit) -> None:
    edited = copy.deepcopy(data)
    edit(_first_entry(edited))
    with pytest.raises((compiled.Refused, codec.BaselineError)):  # the free-form bounds are the codec's own
        compiled.converter(BaselineFile)(copy.deepcopy(edited))
    with pytest.raises(codec.BaselineError):
        codec.from_jsonable(BaselineFile, edited, "b.json")


# Values that convert but make no sense: `clean` must never pass one that the walk refuses.
NONSENSE = [
    ("a negative sample", lambda e: next(iter(e["result"]["timings"].values()))["samples_ms"].append(-1.0)),
    ("a sample past its bound", lambda e: next(iter(e["result"]["timings"].values()))["samples_ms"].append(2e9)),
    ("a median of 0", lambda e: e["runs"][0]["timings"]["gpu_time"].update(median_ms=0.0)),
    ("a date that is no day", lambda e: e["runs"][0].update(recorded_at="2026-02-30T00:00:00Z")),
    ("bytes past their bound", lambda e: e["runs"][0].update(peak_allocated_bytes=10**16)),
    ("a bad slug", lambda e: e["result"].update(device="Not A Slug")),
]


@pytest.mark.parametrize("what, edit", NONSENSE, ids=[w for w, _ in NONSENSE])
def test_clean_passes_nothing_the_walk_refuses(data: dict, what: str, edit) -> None:
    edited = copy.deepcopy(data)
    edit(_first_entry(edited))
    baseline = codec.from_jsonable(BaselineFile, edited, "b.json")
    assert next(checks._problems(baseline, "BaselineFile"), None) is not None
    assert not checks.clean(baseline)
    with pytest.raises(compiled.Refused):
        compiled.checked(BaselineFile)(edited)
    with pytest.raises(codec.BaselineError):
        codec.loads_baseline(json.dumps({**edited, "schema_version": 4}), "b.json")


def test_clean_sees_a_nan_that_min_and_max_miss() -> None:
    assert not checks._value_clean((1.0, math.nan, 2.0), 1e9, False, True)
    assert checks._value_clean((1.0, 2.0), 1e9, False, True)
    assert not checks._value_clean({"bf16": 1e19}, 1e18, False, False)  # a mapping's figures have bounds too
    assert not checks._value_clean((-1.0, 2.0), 1e9, False, True)


def test_a_record_of_the_baselines_results_passes_the_checked_pass(data: dict) -> None:
    baseline = codec.from_jsonable(BaselineFile, data, "b.json")
    record = RunRecord(created_at="2026-12-02T00:00:00+00:00", perfguard_version="0", devices=(baseline.device,),
                       results=tuple(e.result for e in baseline.cases.values()))
    parsed = json.loads(codec.dumps(record))
    built = compiled.checked(RunRecord)(copy.deepcopy(parsed))  # Refused would mean the slow way for every record
    assert built == codec._walk(RunRecord, parsed, "r.json") == codec.loads_record(codec.dumps(record), "r.json")


def test_each_floor_of_the_typed_pass_is_a_rule_that_the_checks_word(data: dict) -> None:
    # model/generated.py checks checks.FLOORS inline; a value past one must be one _kind_problems names.
    entry = codec.from_jsonable(BaselineFile, data, "b.json").cases
    first = next(iter(entry.values()))
    instances = {RunTime: first.runs[0].timings["gpu_time"], TimeSummary: first.result.judged_time,
                 Memory: Memory(footprint_bytes=1, retained_bytes_per_call=1), CaseResult: first.result}
    for (cls, name), (least, strictly) in checks.FLOORS.items():
        at, past = least, least - 1
        assert next(checks._kind_problems(dataclasses.replace(instances[cls], **{name: past}), ""), None), (cls, name)
        problem = next(checks._kind_problems(dataclasses.replace(instances[cls], **{name: at}), ""), None)
        assert (problem is not None) == strictly, (cls, name)
