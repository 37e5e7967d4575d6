"""The one reader (model/codec.py): every file perfguard writes reads back as it was written, and every
edit of one that perfguard never writes (repeated keys anywhere, unknown fields, figures out of bounds,
wrong types, bad dates, slugs and links, text that is not JSON) is refused in one line that names the
file, the case or field, and what to do; an edit that changes no value reads as the file did."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from perfguard.errors import BaselineError
from perfguard.model import (SCHEMA_VERSION, BaselineFile, Calibration, RunRecord, Verdict, dumps, loads_baseline, loads_record,
                             schema)
from perfguard.model.measured import ByteSplit, TimeSplit
from perfguard.model.verdicts import (CountChange, CounterEvidence, LeftOut, MemoryEvidence, MovedRow, NextStep, Noise,
                                      TimeEvidence, Where)

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "baselines" / "nvidia-h200.json"
WHEN = "2026-12-01T10:00:00+00:00"
LOADS = {"B": loads_baseline, "R": loads_record}


@pytest.fixture(scope="module")
def committed_text() -> str:
    return COMMITTED.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def committed(committed_text: str) -> BaselineFile:
    return loads_baseline(committed_text, str(COMMITTED))


@pytest.fixture(scope="module")
def texts(committed: BaselineFile) -> dict[str, str]:
    """A part of the committed baseline as perfguard writes it (every eighth case and the adds, each kind
    of case and of column), and a record of those cases' results, with verdicts of several shapes and
    options: what the edits below edit."""
    part = {k: e for i, (k, e) in enumerate(sorted(committed.cases.items())) if i % 8 == 0 or k.startswith("add[")}
    baseline = dumps(dataclasses.replace(committed, cases=part))
    results = tuple(e.result for e in loads_baseline(baseline, "part.json").cases.values())
    split = TimeSplit(named_ms={"gemm<1>": 0.5, "triton_poi_fused_add": 0.01}, other_ms=0.001)
    results = (dataclasses.replace(results[0], counters=dataclasses.replace(results[0].counters, kernel_time=split,
                                                                            op_time=split, alloc_bytes=ByteSplit({"aten::mm": 4096.0}))), *results[1:])
    where = Where(by="kernel", rows=(MovedRow("gemm<1>", 0.4, 0.5, 1.0, 1.0, True), MovedRow("new", None, 0.01, None, 2.0, True)),
                  moved=0.11, noise_pct=4.0)
    verdicts = (
        Verdict(case_id=results[0].id, metric="gpu_time", status="regressed", baseline=1.0, current=1.2, change_pct=20.0,
                threshold_pct=5.0, baseline_file="baselines/nvidia-h200.json", reason="outside",
                next_steps=(NextStep("ab"), NextStep("threshold", 25.0)), env_mismatch=("torch 2.11 → 2.12",),
                time=TimeEvidence(noise=Noise(runs=5, spread_pct=0.4, tolerance_pct=5.0, detectable_pct=6.1, judged_by="own",
                                              left_out=(LeftOut(WHEN, "GPU-a", 12.5),)), remeasured_ms=(1.2, 1.21),
                                  kind_of_time="device"), where=where),
        Verdict(case_id=results[1].id, metric="kernels", status="same", baseline=2.0, current=2.0, change_pct=0.0,
                threshold_pct=0.0, baseline_file=None, reason="within",
                counters=CounterEvidence(counts=(CountChange("k<1>", 1.0, "a sync"),))),
        Verdict(case_id=results[1].id, metric="footprint", status="regressed", baseline=2.0, current=4.0, change_pct=100.0,
                threshold_pct=5.0, baseline_file=None, reason="outside", memory=MemoryEvidence(held_bytes=(1, 2))),
    )
    record = RunRecord(created_at=WHEN, perfguard_version="0.1.0", devices=(committed.device,), results=results,
                       commit="abc", options={"threshold": 5, "paths": ["suites/"], "deep": {"a": [1, {"b": None}]}},
                       verdicts=verdicts)
    return {"B": baseline, "R": dumps(record)}


def test_the_committed_baseline_reads_back_as_it_is_written(committed, committed_text):
    assert dumps(committed) == committed_text


def test_a_record_and_a_calibrated_baseline_read_back_as_they_are_written(texts, committed):
    assert dumps(loads_record(texts["R"], "r.json")) == texts["R"]
    calibrated = dataclasses.replace(committed, calibration=Calibration(WHEN, {"torch": "2.11"}, 4100.0, 2**30,
                                                                          {"bf16": 700.5}, {"bf16": 8192}))
    text = dumps(calibrated)
    assert loads_baseline(text, "b.json") == calibrated and dumps(loads_baseline(text, "b.json")) == text


def _first(pattern: str, replacement):
    """An edit of the text: the first match of `pattern` replaced by `replacement`, as written (or as a
    function of the match makes it)."""
    def edit(text: str) -> str:
        edited, count = re.subn(pattern, replacement if callable(replacement) else lambda m: replacement, text, count=1)
        assert count == 1, pattern
        return edited
    return edit


V = f'"schema_version":{SCHEMA_VERSION}'  # how a file perfguard writes gives its version
CASE = "case 'add[n=1048576-dtype=float16]': "  # the first case of the baseline's part, where most edits land
TWICE = "appears twice in one object, and JSON would keep the last one silently"
# Each edit, of a baseline's text (B), a record's (R) or both, and what its one line of refusal says.
REFUSED = {
    # repeated keys: the first value a stand-in, the real one last (msgspec alone would keep it silently)
    "a key twice at the top": ("BR", _first(V, f'"schema_version":4,{V}'), f"the key 'schema_version' {TWICE}"),
    "a key twice in the device": ("BR", _first(r'"slug":', '"slug":"x","slug":'), f"the key 'slug' {TWICE}"),
    "a key twice in a session row": ("B", _first(r'"host":', '"host":"y","host":'), f"the key 'host' {TWICE}"),
    "a case twice": ("B", _first(r'\n"add\[[^"]*\]":\{[^\n]*\},\n', lambda m: m[0] + m[0][1:]), f"the key 'add[n=1048576-dtype=float16]' {TWICE}"),
    "a key twice in a session's date": ("B", _first(r'"recorded_at":"2026-12-02T10', '"recorded_at":"2026-12-01T00:00:00+00:00","recorded_at":"2026-12-02T10'), f"the key 'recorded_at' {TWICE}"),
    "a key twice in an entry": ("B", _first(r'"session":(\d+)\}', lambda m: f'"session":999,"session":{m[1]}}}'), f"the key 'session' {TWICE}"),
    "a key twice in a result": ("BR", _first(r'"dropped_samples":', '"dropped_samples":1,"dropped_samples":'), f"the key 'dropped_samples' {TWICE}"),
    "a key twice in a summary": ("BR", _first(r'"median_ms":0', '"median_ms":5,"median_ms":0'), f"the key 'median_ms' {TWICE}"),
    "a key twice in the params": ("BR", _first(r'"params":\{', '"params":{"n":1,'), f"the key 'n' {TWICE}"),
    "a kernel twice": ("BR", _first(r'"kernels":\{', '"kernels":{"void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::Half>, std::array<char*, 3ul>)":9,'), f"(185 characters) {TWICE}"),
    "a column twice": ("B", _first(r'"runs":\{', '"runs":{"regime":"device",'), f"the key 'regime' {TWICE}"),
    "a time's column twice": ("B", _first(r'"median_ms":\[', '"median_ms":1,"median_ms":['), f"the key 'median_ms' {TWICE}"),
    "a key twice in the options": ("R", _first(r'"options":\{', '"options":{"threshold":1,'), f"the key 'threshold' {TWICE}"),
    "a key twice in a verdict": ("R", _first(r'"status":"regressed"', '"status":"same","status":"regressed"'), f"the key 'status' {TWICE}"),
    "a key twice with a space before its colon": ("BR", _first(V, f'"schema_version" :4,{V}'), f"the key 'schema_version' {TWICE}"),
    "a colon escaped and a key twice": ("BR", _first(r'"name":"', '"name":"\\u003a","name":"'), f"the key 'name' {TWICE}"),
    "a field at its default, written": ("BR", _first(r'"dropped_samples":\d+', '"dropped_samples":0'), "a field written at its default"),
    "a quote escaped as a code": ("BR", _first(r'"name":"', '"name":"\\u0022'), "a field written at its default (or a quote escaped as \\u0022)"),
    # unknown fields, anywhere
    "an unknown field at the top": ("BR", _first(V, f'"zz":1,{V}'), "Object contains unknown field `zz`;"),
    "an unknown field in a result": ("BR", _first(r'"dropped_samples":', '"zz":1,"dropped_samples":'), "Object contains unknown field `zz`"),
    "an unknown field in a summary": ("BR", _first(r'"median_ms":', '"zz":1,"median_ms":'), ": Object contains unknown field `zz`"),
    "an unknown field in a session row": ("B", _first(r'"host":', '"zz":1,"host":'), "sessions[1]: Object contains unknown field `zz`"),
    "an unknown column": ("B", _first(r'"runs":\{', '"runs":{"zz":[1],'), f"{CASE}runs: Object contains unknown field `zz`"),
    "an unknown kind of time": ("BR", _first(r'"gpu_time":\{', '"wall_time":{"median_ms":1},"gpu_time":{'), "timings: Invalid enum value 'wall_time'"),
    "an unknown field in a verdict": ("R", _first(r'"status":"regressed"', '"zz":1,"status":"regressed"'), "verdicts[0]: Object contains unknown field `zz`"),
    "a session's field as a column": ("B", _first(r'"runs":\{', '"runs":{"host":"h",'), f"{CASE}runs: Object contains unknown field `host`"),
    "an entry's date in the entry": ("B", _first(r'"session":\d+\}', '"recorded_at":"2026-12-01T00:00:00+00:00","session":0}'), f"{CASE}Object contains unknown field `recorded_at`"),
    # figures out of bounds
    "a median of 0": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":0'), ": Expected `float` > 0.0"),
    "a median past 1e9 ms": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":1e10'), ": Expected `float` <= 1000000000.0"),
    "a median past a float": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":1e400'), ": Number out of range"),
    "a negative sample": ("BR", _first(r'"samples_ms":\[', '"samples_ms":[-0.5,'), ": Expected `float` >= 0.0"),
    "a run's median of 0": ("B", _first(r'"median_ms":\[', '"median_ms":[0,'), f"{CASE}runs.timings[...].median_ms[0]: Expected `float` > 0.0"),
    "a run of no samples": ("B", _first(r'"n":\[', '"n":[0,'), f"{CASE}runs.timings[...].n[0]: Expected `int` >= 1"),
    "a clock past any figure": ("B", _first(r'"sm_clock_mhz":1980', '"sm_clock_mhz":1e19'), "runs.sm_clock_mhz: Expected `float` <= 1e+18"),
    "bytes past a petabyte": ("BR", _first(r'"peak_allocated_bytes":\d+', '"peak_allocated_bytes":2000000000000000'), "Expected `int` <= 1000000000000000"),
    "a kernel's negative time": ("R", _first(r'"named_ms":\{', '"named_ms":{"zz":-1,'), "kernel_time.named_ms[...]: Expected `float` >= 0.0"),
    "an operator's negative bytes": ("R", _first(r'"named_bytes":\{', '"named_bytes":{"zz":-1,'), "alloc_bytes.named_bytes[...]: Expected `float` >= 0.0"),
    "an unknown way to say where": ("R", _first(r'"by":"kernel"', '"by":"thread"'), "where.by: Invalid enum value 'thread'"),
    # how a time was taken names it on every surface (issue 47, item 3): a regime, no other word
    "an unknown way a time was taken": ("R", _first(r'"kind_of_time":"device"', '"kind_of_time":"\\u001b[2J"'),
                                        "verdicts[0].time.kind_of_time: Invalid enum value '\\x1b[2J'"),
    "a negative drift": ("BR", _first(r'"drift_pct":[\d.]+', '"drift_pct":-1'), ": Expected `float` >= 0.0"),
    "dropped samples below 0": ("BR", _first(r'"dropped_samples":\d+', '"dropped_samples":-1'), ": Expected `int` >= 0"),
    "a huge integer in the params": ("BR", _first(r'"params":\{', '"params":{"big":18446744073709551616,'), "params holds 18446744073709551616, larger than any figure perfguard writes"),
    "params nested too deeply": ("BR", _first(r'"params":\{', '"params":{"deep":' + "[" * 20 + "]" * 20 + ","), "params is nested more than 16 levels deep"),
    "too many runs": ("B", _first(r'"session":\[', '"session":[' + "0," * 1000), f"{CASE}holds 1,018 runs, more than the 1,000 perfguard reads"),
    # wrong types
    "a figure as a string": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":"1"'), ": Expected `float`, got `str`"),
    "a count as a bool": ("BR", _first(r'"n":\d+,"(p10_ms|stop_reason)"', lambda m: f'"n":true,"{m[1]}"'), ": Expected `int`, got `bool`"),
    "a count as a fraction": ("BR", _first(r'"n":\d+,"(p10_ms|stop_reason)"', lambda m: f'"n":5.5,"{m[1]}"'), ": Expected `int`, got `float`"),
    "a session index as a bool": ("B", _first(r'"session":\[\d+', '"session":[true'), f"{CASE}runs.session[0]: Expected `int`, got `bool`"),
    "a session past the table": ("B", _first(r'"session":\[\d+', '"session":[999'), f"{CASE}a run names session 999, but `sessions` has 24 row(s)"),
    "an entry's session as a bool": ("B", _first(r'"session":\d+\}', '"session":true}'), f"{CASE}session: Expected `int`, got `bool`"),
    "an entry's session past the table": ("B", _first(r'"session":\d+\}', '"session":999}'), f"{CASE}its `session` should name a row of `sessions` with a date and a fingerprint, found 999"),
    "an entry naming a run's row": ("B", _first(r'"session":\d+\}', '"session":1}'), f"{CASE}its `session` should name a row of `sessions` with a date and a fingerprint, found 1"),
    "a result's id, another case's": ("B", _first(r'"result":\{', '"result":{"id":"mul",'), f"{CASE}its entry holds the result of case 'mul'"),
    "a column too short": ("B", _first(r'"median_ms":\[[\d.e-]+,', '"median_ms":['), f"{CASE}its runs' column `timings.busy_time.median_ms` holds 17 value(s) for 18 run(s)"),
    "a time's column too long": ("B", _first(r'"n":\[', '"n":[1,'), f"{CASE}its runs' column `timings.caller_time.n` holds 19 value(s) for 18 run(s)"),
    "a run's column of one": ("B", _first(r'"sm_clock_mhz":(\d+)', lambda m: f'"sm_clock_mhz":[{m[1]}]'), f"{CASE}its runs' column `sm_clock_mhz` holds 1 value(s) for 18 run(s)"),
    "a run's time without its median": ("B", _first(r'"median_ms":\[[\d.e-]+,', '"median_ms":[null,'), f"{CASE}a run's `timings.busy_time` has no median"),
    "timings as a list": ("BR", _first(r'"timings":\{', '"timings":[],"zz":{'), ": Expected `object`, got `array`"),
    "a word no one knows": ("BR", _first(r'"status":"ok"', '"status":"fine"'), ": Invalid enum value 'fine'"),
    "a required field null": ("BR", _first(r'"name":"', '"name":null,"zzname":"'), ": Expected `str`, got `null`"),
    "a null samples list": ("BR", _first(r'"samples_ms":\[[^\]]*\]', '"samples_ms":null'), ": Expected `array`, got `null`"),
    # what a baseline's case must be (checks.measured_case): a measurement, with its newest samples
    "a case not measured": ("B", _first(r'"status":"ok"', '"status":"error"'), "case 'add[n=1048576-dtype=float16]' is not a measured case (status 'error', gpu_time present)"),
    "a case without its judged samples": ("B", _first(r'("gpu_time":\{)"samples_ms":\[[^\]]*\],', lambda m: m[1]), f"{CASE}its gpu_time keeps no samples"),
    # dates, slugs, links
    "a day that is not": ("BR", _first(r'"recorded_at":"2026-12-0[12]', '"recorded_at":"2026-02-30'), "' is not a date and time as perfguard writes it (ISO 8601, e.g. 2026-11-29T12:00:00+00:00)"),
    "a created_at that is no date": ("R", _first(r'"created_at":"[^"]*"', '"created_at":"yesterday"'), "'yesterday' is not a date and time as perfguard writes it"),
    "a slug that is a path": ("BR", _first(r'"slug":"nvidia-h200"', '"slug":"../x"'), ": '../x' is not a device slug (lower-case letters and digits joined by dashes)"),
    "a result's device that is a path": ("R", _first(r'"device":"nvidia-h200"', '"device":"../x"'), "results[0]: device: '../x' is not a device slug"),
    "a result's device written, a path": ("B", _first(r'"result":\{', '"result":{"device":"../x",'), f"{CASE}result.device: '../x' is not a device slug"),
    "a trace that is a link": ("BR", _first(r'"dropped_samples":', '"profile":{"trace":"javascript:x"},"dropped_samples":'), ": 'javascript:x' is not a relative path inside the report's folder"),
    # text that is not JSON, and files of another version
    "a trailing comma": ("BR", _first(r'\n\}\n$', ',\n}\n'), "not valid JSON (trailing comma in object, line"),
    "a NaN": ("BR", _first(r'"median_ms":0\.\d+', '"median_ms":NaN'), "not valid JSON (invalid character, line"),
    "a leading zero": ("BR", _first(r'"dropped_samples":\d+', '"dropped_samples":012'), "not valid JSON (invalid number, line"),
    "a second object after it": ("BR", lambda t: t + "{}", "not valid JSON (trailing characters, line"),
    "a byte-order mark": ("BR", lambda t: "\ufeff" + t, "not valid JSON (invalid character, line 1: '\\ufeff{"),
    "a lone surrogate": ("BR", _first(r'"name":"', '"name":"\\ud800'), "not valid JSON (unexpected end of hex escape, line"),
    "schema 4": ("BR", _first(V, '"schema_version":4'), f"schema 4, which this perfguard no longer reads; rewrite it as schema {SCHEMA_VERSION} with `perfguard migrate f.json`"),
    "no schema": ("R", _first(V + ',?', ''), "not a perfguard file of this kind (it has no schema_version)"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_edit_perfguard_never_writes_is_refused_in_one_line_naming_the_file_and_what_to_do(name, texts):
    files, edit, expected = REFUSED[name]
    for kind in files:
        with pytest.raises(BaselineError) as refused:
            LOADS[kind](edit(texts[kind]), "f.json")
        message = str(refused.value)
        assert message.startswith("f.json: ") and expected in message and "\n" not in message, (kind, message)
        assert message.endswith(("was the file edited by hand? Restore it from version control", "from version control",
                                 "`perfguard migrate f.json`", "or a baseline file from baselines/")), (kind, message)


def test_every_repeated_key_and_unknown_field_is_among_the_edits():
    """So that the table keeps testing what it says."""
    assert len([name for name in REFUSED if "twice" in name or "unknown" in name]) >= 20


def _spaced(text: str) -> str:
    """The file's JSON written by another writer: spaces after separators and before colons, keys in another order."""
    return json.dumps(json.loads(text), indent=1, separators=(", ", " : "))


# Edits that change no value: each reads as the unedited file.
SAME = {
    "spaces, and keys in another order": ("BR", _spaced),
    "cases before sessions": ("B", lambda t: json.dumps({"cases": json.loads(t)["cases"],
                                                         **{k: v for k, v in json.loads(t).items() if k != "cases"}})),
    "a result's id, its key's": ("B", _first(r'\n("add\[[^"]*\]"):\{"result":\{', lambda m: f'\n{m[1]}:{{"result":{{"id":{m[1]},')),
    "a result's device, the file's": ("B", _first(r'"result":\{', '"result":{"device":"nvidia-h200",')),
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_an_edit_that_changes_no_value_reads_as_the_file_did(name, texts):
    files, edit = SAME[name]
    for kind in files:
        assert LOADS[kind](edit(texts[kind]), "f.json") == LOADS[kind](texts[kind], "f.json"), kind


@pytest.mark.parametrize(("written", "read"), [('\\"q\\" ', '"q" '), ("\\u003a", ":"), (":", ":"),
                                               ("\\u00e9\\ud83d\\ude00", "\u00e9\U0001f600"), ("\\\\u0022", "\\u0022")])
def test_a_name_holding_quotes_colons_and_any_character_reads_as_written(texts, written, read):
    for kind in "BR":
        loaded = LOADS[kind](_first(r'"name":"add"', f'"name":"{written}add"')(texts[kind]), "f.json")
        results = [e.result for e in loaded.cases.values()] if kind == "B" else list(loaded.results)
        assert results[0].name == f"{read}add", kind


def test_nested_params_read_as_written(texts):
    for kind in "BR":
        loaded = LOADS[kind](_first(r'"params":\{', '"params":{"shape":[1024,[2,{"a":1.5}]],')(texts[kind]), "f.json")
        results = [e.result for e in loaded.cases.values()] if kind == "B" else list(loaded.results)
        assert results[0].params["shape"] == [1024, [2, {"a": 1.5}]], kind


def test_a_name_perfguard_cannot_write_as_utf_8_is_written_as_its_escape_and_reads_back(texts):
    """A lone surrogate (a path's undecodable byte, as os.fsdecode gives it) is no UTF-8: written as the
    text of its escape, so that the file reads back."""
    record = loads_record(texts["R"], "r.json")
    odd = dataclasses.replace(record, results=(dataclasses.replace(record.results[0], nodeid="suites/\udc80.py::x"),))
    assert loads_record(dumps(odd), "r.json").results[0].nodeid == "suites/\\udc80.py::x"


def test_the_twins_match_their_dataclasses():
    """Every field of every class has its twin (a new kind of field raises TypeError in `schema.twin`)."""
    for cls in (BaselineFile, RunRecord, Verdict):
        assert [f.name for f in dataclasses.fields(cls)] == list(schema.twin(cls).__struct_fields__)
