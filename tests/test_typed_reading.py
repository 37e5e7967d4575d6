"""The msgspec way in (model/typed.py, issue 34): it builds what the strict way builds from every file
perfguard writes, and never accepts a file the strict way refuses: repeated keys anywhere, unknown
fields, figures out of bounds, wrong types, bad dates, slugs and links, text json refuses. Where it
declines (None), the codec reads the file the other ways, which word the refusal."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from perfguard.errors import BaselineError
from perfguard.model import (BaselineFile, Calibration, RunRecord, Verdict, codec, dumps, loads_baseline, loads_record,
                             typed)
from perfguard.model.verdicts import CountChange, LeftOut, NextStep

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "baselines" / "nvidia-h200.json"
WHEN = "2026-12-01T10:00:00+00:00"


def strict(kind: str, text: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """The file read the strict way only (the typed way declined); a BaselineError's text where refused."""
    with monkeypatch.context() as m:
        m.setattr(typed, kind, lambda text: None)
        try:
            return (loads_baseline if kind == "baseline" else loads_record)(text, "f.json")
        except BaselineError as exc:
            return str(exc)


@pytest.fixture(scope="module")
def committed_text() -> str:
    return COMMITTED.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def committed(committed_text: str) -> BaselineFile:
    return loads_baseline(committed_text, str(COMMITTED))


@pytest.fixture(scope="module")
def part_text(committed: BaselineFile) -> str:
    """A part of the committed baseline as perfguard writes it (every eighth case and the adds, each kind
    of case and of column): what the edits below edit, a tenth of the strict way's work a read."""
    part = {k: e for i, (k, e) in enumerate(sorted(committed.cases.items())) if i % 8 == 0 or k.startswith("add[")}
    return dumps(dataclasses.replace(committed, cases=part))


@pytest.fixture(scope="module")
def record_text(part_text: str) -> str:
    """A record of those cases' results, with verdicts of several shapes and options."""
    part = loads_baseline(part_text, "part.json")
    results = tuple(e.result for e in part.cases.values())
    verdicts = (
        Verdict(case_id=results[0].id, metric="gpu_time", status="regressed", baseline=1.0, current=1.2, change_pct=20.0,
                threshold_pct=5.0, baseline_file="baselines/nvidia-h200.json", reason="legacy",
                next_steps=(NextStep("ab"), NextStep("threshold", 25.0)), env_mismatch=("torch 2.11 → 2.12",),
                left_out=(LeftOut(WHEN, "GPU-a", 12.5),), judged_by="own", remeasured_ms=(1.2, 1.21)),
        Verdict(case_id=results[1].id, metric="kernels", status="same", baseline=2.0, current=2.0, change_pct=0.0,
                threshold_pct=0.0, baseline_file=None, counts=(CountChange("k<1>", 1.0, "a sync"),), held_bytes=(1, 2)),
    )
    record = RunRecord(created_at=WHEN, perfguard_version="0.1.0", devices=(part.device,), results=results,
                       commit="abc", options={"threshold": 5, "paths": ["suites/"], "deep": {"a": [1, {"b": None}]}},
                       verdicts=verdicts)
    return dumps(record)


def test_the_committed_baseline_reads_the_typed_way_as_the_strict_way(committed_text, monkeypatch):
    fast = typed.baseline(committed_text)
    assert fast is not None  # a file perfguard wrote is never handed on
    assert fast == strict("baseline", committed_text, monkeypatch)
    assert dumps(fast) == committed_text


def test_a_record_reads_the_typed_way_as_the_strict_way(record_text, monkeypatch):
    fast = typed.record(record_text)
    assert fast is not None
    assert fast == strict("record", record_text, monkeypatch)
    assert dumps(fast) == record_text


def test_a_calibrated_baseline_reads_the_typed_way(committed, monkeypatch):
    calibrated = dataclasses.replace(committed, calibration=Calibration(WHEN, {"torch": "2.11"}, 4100.0, 2**30,
                                                                          {"bf16": 700.5}, {"bf16": 8192}))
    text = dumps(calibrated)
    fast = typed.baseline(text)
    assert fast is not None and fast == strict("baseline", text, monkeypatch) == calibrated


def _first(pattern: str, replacement):
    """An edit of the text: the first match of `pattern` replaced by `replacement`, as written (or as a
    function of the match makes it)."""
    def edit(text: str) -> str:
        edited, count = re.subn(pattern, replacement if callable(replacement) else lambda m: replacement, text, count=1)
        assert count == 1, pattern
        return edited
    return edit


# Each edit, of a baseline's text (B), a record's (R) or both: the typed way must refuse every one the strict
# way refuses, and build what it builds from every one it accepts (or decline it).
EDITS = {
    # repeated keys: the first value a stand-in, the real one last (msgspec alone would keep it silently)
    "a key twice at the top": ("BR", _first(r'"schema_version":6', '"schema_version":4,"schema_version":6')),
    "a key twice in the device": ("BR", _first(r'"slug":', '"slug":"x","slug":')),
    "a key twice in a session row": ("B", _first(r'"host":', '"host":"y","host":')),
    "a case twice": ("B", _first(r'\n"add\[[^"]*\]":\{[^\n]*\},\n', lambda m: m[0] + m[0][1:])),
    "a key twice in a session's date": ("B", _first(r'"recorded_at":"2026-12-02T10', '"recorded_at":"2026-12-01T00:00:00+00:00","recorded_at":"2026-12-02T10')),
    "a key twice in an entry": ("B", _first(r'"session":(\d+)\}', lambda m: f'"session":999,"session":{m[1]}}}')),
    "a key twice in a result": ("BR", _first(r'"dropped_samples":', '"dropped_samples":1,"dropped_samples":')),
    "a key twice in a summary": ("BR", _first(r'"median_ms":0', '"median_ms":5,"median_ms":0')),
    "a key twice in the params": ("BR", _first(r'"params":\{', '"params":{"n":1,')),
    "a kernel twice": ("BR", _first(r'"kernels":\{', '"kernels":{"void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)":9,')),
    "a column twice": ("B", _first(r'"runs":\{', '"runs":{"regime":"device",')),
    "a time's column twice": ("B", _first(r'"median_ms":\[', '"median_ms":1,"median_ms":[')),
    "a key twice in the options": ("R", _first(r'"options":\{', '"options":{"threshold":1,')),
    "a key twice in a verdict": ("R", _first(r'"status":"regressed"', '"status":"same","status":"regressed"')),
    "a key twice with a space before its colon": ("BR", _first(r'"schema_version":6', '"schema_version" :4,"schema_version":6')),
    "a key twice and a string starting with a colon": ("BR", _first(r'"schema_version":6', '"schema_version":6,"schema_version":6,"z"')),
    "an escaped quote and a key twice": ("BR", _first(r'"schema_version":6', '"schema_version":6,"schema_version":6,"\\"z"')),
    "a colon escaped and a key twice": ("BR", _first(r'"name":"', '"name":"\\u003a","name":"')),
    # unknown fields, anywhere
    "an unknown field at the top": ("BR", _first(r'"schema_version":6', '"zz":1,"schema_version":6')),
    "an unknown field in a result": ("BR", _first(r'"dropped_samples":', '"zz":1,"dropped_samples":')),
    "an unknown field in a summary": ("BR", _first(r'"median_ms":', '"zz":1,"median_ms":')),
    "an unknown field in a session row": ("B", _first(r'"host":', '"zz":1,"host":')),
    "an unknown column": ("B", _first(r'"runs":\{', '"runs":{"zz":[1],')),
    "an unknown kind of time": ("BR", _first(r'"gpu_time":\{', '"wall_time":{"median_ms":1},"gpu_time":{')),
    "an unknown field in a verdict": ("R", _first(r'"status":"regressed"', '"zz":1,"status":"regressed"')),
    # figures out of bounds
    "a median of 0": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":0')),
    "a median past 1e9 ms": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":1e10')),
    "a median past a float": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":1e400')),
    "a negative sample": ("BR", _first(r'"samples_ms":\[', '"samples_ms":[-0.5,')),
    "a run's median of 0": ("B", _first(r'"median_ms":\[', '"median_ms":[0,')),
    "a run of no samples": ("B", _first(r'"n":\[', '"n":[0,')),
    "a clock past any figure": ("B", _first(r'"sm_clock_mhz":1980', '"sm_clock_mhz":1e19')),
    "bytes past a petabyte": ("BR", _first(r'"peak_allocated_bytes":\d+', '"peak_allocated_bytes":2000000000000000')),
    "a negative drift": ("BR", _first(r'"drift_pct":[\d.]+', '"drift_pct":-1')),
    "dropped samples below 0": ("BR", _first(r'"dropped_samples":\d+', '"dropped_samples":-1')),
    "a huge integer in the params": ("BR", _first(r'"params":\{', '"params":{"big":18446744073709551616,')),
    "params nested too deeply": ("BR", _first(r'"params":\{', '"params":{"deep":' + "[" * 20 + "]" * 20 + ",")),
    "too many runs": ("B", _first(r'"session":\[', '"session":[' + "0," * 1000)),
    # wrong types
    "a figure as a string": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":"1"')),
    "a count as a bool": ("BR", _first(r'"n":\d+,"(p10_ms|stop_reason)"', lambda m: f'"n":true,"{m[1]}"')),
    "a count as a fraction": ("BR", _first(r'"n":\d+,"(p10_ms|stop_reason)"', lambda m: f'"n":5.5,"{m[1]}"')),
    "a session index as a bool": ("B", _first(r'"session":\[\d+', '"session":[true')),
    "a session past the table": ("B", _first(r'"session":\[\d+', '"session":[999')),
    "an entry's session as a bool": ("B", _first(r'"session":\d+\}', '"session":true}')),
    "an entry's session past the table": ("B", _first(r'"session":\d+\}', '"session":999}')),
    "an entry naming a run's row": ("B", _first(r'"session":\d+\}', '"session":1}')),
    "an entry's date in the entry": ("B", _first(r'"session":\d+\}', '"recorded_at":"2026-12-01T00:00:00+00:00","session":0}')),
    "a result's id, another case's": ("B", _first(r'"result":\{', '"result":{"id":"mul",')),
    "a column too short": ("B", _first(r'"median_ms":\[[\d.e-]+,', '"median_ms":[')),
    "a time's column too long": ("B", _first(r'"n":\[', '"n":[1,')),
    "a run's column of one": ("B", _first(r'"sm_clock_mhz":(\d+)', lambda m: f'"sm_clock_mhz":[{m[1]}]')),
    "a run's time without its median": ("B", _first(r'"median_ms":\[[\d.e-]+,', '"median_ms":[null,')),
    "a session's field as a column": ("B", _first(r'"runs":\{', '"runs":{"host":"h",')),
    "timings as a list": ("BR", _first(r'"timings":\{', '"timings":[],"zz":{')),
    "a word no one knows": ("BR", _first(r'"status":"ok"', '"status":"fine"')),
    "a required field null": ("BR", _first(r'"name":"', '"name":null,"zzname":"')),
    "a null samples list": ("BR", _first(r'"samples_ms":\[[^\]]*\]', '"samples_ms":null')),
    # what a baseline's case must be (checks.check_baseline): a measurement, with its newest samples
    "a case not measured": ("BR", _first(r'"status":"ok"', '"status":"error"')),
    "a case without its judged samples": ("B", _first(r'("gpu_time":\{)"samples_ms":\[[^\]]*\],', lambda m: m[1])),
    # dates, slugs, links
    "a day that is not": ("BR", _first(r'"recorded_at":"2026-12-0[12]', '"recorded_at":"2026-02-30')),
    "a created_at that is no date": ("R", _first(r'"created_at":"[^"]*"', '"created_at":"yesterday"')),
    "a slug that is a path": ("BR", _first(r'"slug":"nvidia-h200"', '"slug":"../x"')),
    "a result's device that is a path": ("R", _first(r'"device":"nvidia-h200"', '"device":"../x"')),
    "a result's device written, a path": ("B", _first(r'"result":\{', '"result":{"device":"../x",')),
    "a trace that is a link": ("BR", _first(r'"dropped_samples":', '"profile":{"trace":"javascript:x"},"dropped_samples":')),
    # text that json refuses, and files of another version
    "a trailing comma": ("BR", _first(r'\n\}\n$', ',\n}\n')),
    "a NaN": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":NaN')),
    "a leading zero": ("BR", _first(r'"dropped_samples":\d+', '"dropped_samples":012')),
    "a second object after it": ("BR", lambda t: t + "{}"),
    "a byte-order mark": ("BR", lambda t: "\ufeff" + t),
    "schema 4": ("BR", _first(r'"schema_version":6', '"schema_version":4')),
    "no schema": ("BR", _first(r'"schema_version":6,?', '')),
    # accepted the strict way: the typed way builds the same, or declines
    "a field at its default, written": ("BR", _first(r'"dropped_samples":\d+', '"dropped_samples":0')),
    "a result's id, its key's": ("B", _first(r'\n("add\[[^"]*\]"):\{"result":\{', lambda m: f'\n{m[1]}:{{"result":{{"id":{m[1]},')),
    "a result's device, the file's": ("B", _first(r'"result":\{', '"result":{"device":"nvidia-h200",')),
    "a space before a colon": ("BR", _first(r'"schema_version":6', '"schema_version" : 5')),
    "spaces everywhere": ("BR", lambda t: t.replace(",", ", ").replace(":{", ": {")),
    "an escaped quote in a name": ("BR", _first(r'"name":"', '"name":"\\"q\\" ')),
    "a colon escaped in a name": ("BR", _first(r'"name":"', '"name":"\\u003a')),
    "a name that starts with a colon": ("BR", _first(r'"name":"', '"name":":')),
    "a non-ASCII name": ("BR", _first(r'"name":"', '"name":"\\u00e9\\ud83d\\ude00')),
    "a lone surrogate": ("BR", _first(r'"name":"', '"name":"\\ud800')),
    "nested params": ("BR", _first(r'"params":\{', '"params":{"shape":[1024,[2,{"a":1.5}]],')),
    "cases before sessions": ("B", lambda t: json.dumps({"cases": json.loads(t)["cases"],
                                                         **{k: v for k, v in json.loads(t).items() if k != "cases"}})),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_typed_way_refuses_what_the_strict_way_refuses(name, part_text, record_text, monkeypatch):
    files, edit = EDITS[name]
    for kind, text in (("baseline", part_text), ("record", record_text)):
        if kind[0].upper() not in files:
            continue
        edited = edit(text)
        assert edited != text
        expected = strict(kind, edited, monkeypatch)
        fast = getattr(typed, kind)(edited)
        if isinstance(expected, str):  # refused
            assert fast is None, (kind, expected)
            with pytest.raises(BaselineError) as refused:
                (loads_baseline if kind == "baseline" else loads_record)(edited, "f.json")
            assert str(refused.value) == expected  # as worded before: the strict way words it
        else:
            assert fast is None or fast == expected, kind
            assert (loads_baseline if kind == "baseline" else loads_record)(edited, "f.json") == expected


def test_every_repeated_key_and_unknown_field_is_refused(part_text, record_text):
    """The edits above that the strict way refuses for a repeated key or an unknown field are among them
    (so that the table keeps testing what it says)."""
    refused = {name for name, (files, edit) in EDITS.items() if "twice" in name or "unknown" in name}
    assert len(refused) >= 20
    for name in refused:
        files, edit = EDITS[name]
        for kind, text in (("baseline", part_text), ("record", record_text)):
            if kind[0].upper() in files:
                with pytest.raises(BaselineError):
                    (loads_baseline if kind == "baseline" else loads_record)(edit(text), "f.json")


def test_a_file_the_typed_way_declines_reads_the_strict_way_all_the_same(part_text, monkeypatch):
    """The typed way declines a key with space before its colon (the text's count would miss it), and a
    string that starts with a colon or holds `\\":` (the count takes it for a key: more keys than were
    built); the codec then returns what the strict way builds. An escaped quote elsewhere changes
    nothing: read the typed way."""
    for edit in (_first(r'"schema_version":6', '"schema_version" : 6'), _first(r'"name":"', '"name":":'),
                 _first(r'"name":"', '"name":"\\"q\\": ')):
        edited = edit(part_text)
        assert typed.baseline(edited) is None
        assert loads_baseline(edited, "f.json") == strict("baseline", edited, monkeypatch)
    quoted = _first(r'"name":"', '"name":"\\"q\\" ')(part_text)
    assert typed.baseline(quoted) is not None
    assert typed.baseline(quoted) == strict("baseline", quoted, monkeypatch)


def test_the_twins_match_their_dataclasses():
    """Every field of every class has its twin (a new kind of field raises TypeError in `typed.twin`)."""
    for cls in (BaselineFile, RunRecord, Verdict):
        twin = typed.twin(cls)
        assert [f.name for f in dataclasses.fields(cls)] == list(twin.__struct_fields__)
    assert codec.MAX_INT == typed._MAX_INT
