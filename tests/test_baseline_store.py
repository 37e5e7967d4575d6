"""Baseline files on a real file system: round trip, merge, clean diffs, bad input, concurrency and crashes."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfguard import store
from perfguard.analysis.series import Admission
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.errors import BaselineError
from perfguard.model import (MAX_BASELINE_SAMPLES, SAMPLE_DIGITS, SCHEMA_VERSION, Calibration, CaseResult, DeviceInfo, drift_pct,
                             dumps, loads_baseline, round_sig, thin_samples)

from baseline_file import edit, unpacked

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", uuid="GPU-1234", index=3,
                  driver="580.159.04", cuda="12.8", torch="2.11.0", triton="3.6.0")
A100 = DeviceInfo(kind="cuda", name="NVIDIA A100-SXM4-80GB", slug="nvidia-a100-sxm4-80gb")
WHEN = "2026-11-29T12:00:00+00:00"
LATER = "2026-11-30T12:00:00+00:00"


def result(case_id: str, scale: float = 1.0, n: int = 50, status: str = "ok") -> CaseResult:
    samples = tuple(scale * (1.0 + 0.001 * ((i * 7919) % 97) / 3.0) for i in range(n))
    return CaseResult(id=case_id, name=case_id.split("[")[0], status=status, device="nvidia-h200",
                      device_uuid="GPU-1234", timer="cuda-events", timings={"gpu_time": timing(samples)})


def write_baseline(directory: Path, *results: CaseResult) -> Path:
    return store.update(directory, H200, results or (result("a"), result("b")), commit="abc123", recorded_at=WHEN)


def test_no_file_means_no_baseline(tmp_path):
    assert store.load(tmp_path, "nvidia-h200") is None
    assert store.load(tmp_path / "does-not-exist", H200) is None


def test_update_then_load_round_trips(tmp_path):
    path = write_baseline(tmp_path, result("vector_add[n=1024]"))
    assert path == tmp_path / "nvidia-h200.json" == store.path_for(tmp_path, "nvidia-h200")
    baseline = store.load(tmp_path, H200)
    entry = baseline.cases["vector_add[n=1024]"]
    assert (entry.recorded_at, entry.commit, entry.fingerprint) == (WHEN, "abc123", H200.fingerprint())
    # The newest run's samples, MAX_BASELINE_SAMPLES of them; its drift is of every sample, in its summary.
    assert entry.result.samples_ms == thin_samples([round_sig(x, SAMPLE_DIGITS) for x in result("x").samples_ms],
                                                   MAX_BASELINE_SAMPLES)
    assert len(result("x").samples_ms) > MAX_BASELINE_SAMPLES == len(entry.result.samples_ms)
    assert entry.result.judged_time.drift_pct == pytest.approx(drift_pct(result("x").samples_ms), rel=1e-5)
    assert entry.result.judged_time.median_ms == pytest.approx(result("x").judged_time.median_ms)
    # The file belongs to the GPU model, not to the card that happened to record it.
    assert baseline.device.slug == "nvidia-h200" and baseline.device.uuid is None and baseline.device.index is None
    assert entry.result.device_uuid is None


def test_update_merges_into_the_file_keeping_other_cases(tmp_path):
    write_baseline(tmp_path, result("a"), result("b"))
    store.update(tmp_path, H200, [result("b", scale=2.0), result("c")], commit="def456", recorded_at=WHEN)
    cases = store.load(tmp_path, H200).cases
    assert sorted(cases) == ["a", "b", "c"]
    assert cases["a"].commit == "abc123"
    assert cases["b"].commit == "def456"
    assert cases["b"].result.judged_time.median_ms == pytest.approx(result("b", scale=2.0).judged_time.median_ms)


def test_only_measured_cases_are_stored(tmp_path):
    write_baseline(tmp_path, result("ok"), result("smoke", status="smoke"), result("broken", status="error"))
    assert list(store.load(tmp_path, H200).cases) == ["ok"]


def test_samples_are_capped_but_the_summary_keeps_every_sample(tmp_path):
    write_baseline(tmp_path, result("long", n=1000))
    entry = store.load(tmp_path, H200).cases["long"]
    assert len(entry.result.samples_ms) == MAX_BASELINE_SAMPLES
    assert entry.result.judged_time.n == 1000


def test_file_is_sorted_and_rounded_so_resaving_identical_data_is_an_empty_diff(tmp_path):
    path = write_baseline(tmp_path, result("zeta", scale=1 / 3), result("alpha", scale=2 / 7))
    text = path.read_text()
    assert text == dumps(loads_baseline(text, "b.json"))
    lines = text.splitlines()  # one case a line, keys sorted: an update's diff names the cases it changed
    assert [line.split('"')[1] for line in lines if line.startswith('"alpha"') or line.startswith('"zeta"')] == ["alpha", "zeta"]
    assert all(json.loads("{" + line.rstrip(",") + "}") for line in lines if line.startswith(('"alpha"', '"zeta"')))
    assert re.search(r'"median_ms":0\.290143[,}]', text)  # a figure a verdict compares: six significant digits,
    assert "0.2901428" not in text  # no float noise
    assert '"mean_ms"' not in text  # one only the reports show is the record's, not the baseline's (model.kept)
    assert dumps(store.load(tmp_path, H200)) == text
    # The same figures recorded again are one more run: the diff adds the runs' lines and nothing else.
    write_baseline(tmp_path, result("zeta", scale=1 / 3), result("alpha", scale=2 / 7))
    assert len(store.load(tmp_path, H200).cases["zeta"].runs) == 2


def test_list_files_ignores_lock_and_temporary_files(tmp_path):
    write_baseline(tmp_path)
    (tmp_path / ".nvidia-h200.json.x1y2.tmp").write_text("{")
    assert [p.name for p in store.list_files(tmp_path)] == ["nvidia-h200.json"]


# --- bad input: a clear line naming the file, and the file left as it was --------------------


def _edit(mutate):
    def apply(text: str) -> str:
        data = json.loads(text)
        mutate(data)
        return json.dumps(data)

    return apply


def _other_gpu(data):
    data["device"].update(name="NVIDIA A100-SXM4-80GB", slug="nvidia-a100-sxm4-80gb")


def _latency(data):
    return data["cases"]["a"]["result"]["timings"]["gpu_time"]["summary"]


BAD_FILES = {
    "invalid JSON": (lambda text: "{this is not json", "not valid JSON"),
    "truncated": (lambda text: text[: len(text) // 2], "truncated"),
    "empty": (lambda text: "", "not valid JSON"),
    "not an object": (lambda text: "[]", "expected a JSON object"),
    "unknown schema": (_edit(lambda d: d.update(schema_version=99)), "schema_version 99"),
    "unknown field": (_edit(lambda d: d["cases"]["a"]["result"].update(speedup=2)), "case 'a': result: Object contains unknown field `speedup`"),
    "missing field": (_edit(lambda d: d["cases"]["a"]["result"].pop("name")), "case 'a': result: Object missing required field `name`"),
    "no session": (_edit(lambda d: d["cases"]["a"].pop("session")), "case 'a': Object missing required field `session`"),
    "wrong type": (_edit(lambda d: _latency(d).update(median_ms="fast")), "median_ms"),
    "cases not an object": (_edit(lambda d: d.update(cases=[])), "cases: Expected `object`, got `array`"),
    "entry under another id": (_edit(lambda d: d["cases"]["a"]["result"].update(id="z")), "holds the result of case 'z'"),
    "other GPU model": (
        _edit(_other_gpu), "recorded on NVIDIA A100-SXM4-80GB (nvidia-a100-sxm4-80gb) but named nvidia-h200.json"
    ),
    "case from another GPU": (_edit(lambda d: d["cases"]["a"]["result"].update(device="nvidia-a100")), "nvidia-a100"),
    "not UTF-8": (lambda text: text.encode().replace(b"abc123", b"\xff\xfe").decode("latin-1"), "UTF-8"),
    # Values, not only types: each of these read `unstable` ("0.000 ns → 2.082 ms (+inf%)") and passed.
    "zero median": (_edit(lambda d: _latency(d).update(median_ms=0)),
                    "case 'a': result.timings[...].summary.median_ms: Expected `float` > 0.0"),
    "negative samples": (_edit(lambda d: d["cases"]["a"]["result"]["timings"]["gpu_time"].update(samples_ms=[-1.0, 1.0])),
                         "case 'a': result.timings[...].samples_ms[0]: Expected `float` >= 0.0"),
    "empty samples": (_edit(lambda d: d["cases"]["a"]["result"]["timings"]["gpu_time"].update(samples_ms=[])),
                      "case 'a': its gpu_time keeps no samples"),
    "negative minimum": (_edit(lambda d: _latency(d).update(min_ms=-0.5)),
                         "case 'a': result.timings[...].summary.min_ms: Expected `float` >= 0.0"),
    "no latency": (_edit(lambda d: d["cases"]["a"]["result"].update(timings={})),
                   "case 'a' is not a measured case"),
    "slug that is a path": (_edit(lambda d: d["device"].update(slug="../nvidia-h200")),
                            "device.slug: '../nvidia-h200' is not a device slug"),
}


@pytest.mark.parametrize("problem", list(BAD_FILES))
def test_bad_baseline_is_refused_with_one_line_naming_the_file_and_left_untouched(tmp_path, problem):
    path = write_baseline(tmp_path)
    corrupt, expected = BAD_FILES[problem]
    bad = corrupt(path.read_text())
    path.write_bytes(bad.encode("latin-1") if problem == "not UTF-8" else bad.encode())
    before = path.read_bytes()
    for attempt in (lambda: store.load(tmp_path, H200), lambda: write_baseline(tmp_path, result("c"))):
        with pytest.raises(BaselineError) as info:
            attempt()
        message = str(info.value)
        assert str(path) in message and expected in message
        assert "\n" not in message
    assert path.read_bytes() == before


def test_a_baseline_of_a_newer_schema_says_which_version_reads_it(tmp_path):
    path = tmp_path / "nvidia-h200.json"
    path.write_text(f'{{"schema_version": {SCHEMA_VERSION + 1}, "device": {{}}, "cases": {{}}}}')
    with pytest.raises(BaselineError, match=f"schema_version {SCHEMA_VERSION + 1}, but this perfguard reads schema {SCHEMA_VERSION};"):
        store.load(tmp_path, "nvidia-h200")


# --- runs: the unit of evidence -------------------------------------------------------------------------


def test_each_update_adds_one_run_per_case_with_its_host_and_card(tmp_path):
    for day, scale in ((1, 1.0), (2, 1.01), (3, 0.99)):
        host = dataclasses.replace(H200, host=f"runner-{day}")
        store.update(tmp_path, host, [result("a", scale=scale)], commit=f"c{day}", recorded_at=f"2026-11-0{day}")
    entry = store.load(tmp_path, H200).cases["a"]
    assert [r.recorded_at for r in entry.runs] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert [r.host for r in entry.runs] == ["runner-1", "runner-2", "runner-3"]
    assert {r.device_uuid for r in entry.runs} == {"GPU-1234"} and entry.runs[-1].commit == "c3"
    assert entry.runs[1].median_of("gpu_time") == pytest.approx(result("a", scale=1.01).judged_time.median_ms, rel=1e-5)
    assert entry.result.judged_time.median_ms == pytest.approx(entry.runs[-1].median_of("gpu_time"))  # the newest run's samples
    assert store.load(tmp_path, H200).device.host is None  # the file belongs to the model, not to a machine


def test_a_case_keeps_only_its_last_runs(tmp_path):
    for day in range(1, 6):
        store.update(tmp_path, H200, [result("a", scale=day)], commit=None, recorded_at=f"2026-11-0{day}", keep_runs=3)
    assert [r.recorded_at for r in store.load(tmp_path, H200).cases["a"].runs] == ["2026-11-03", "2026-11-04", "2026-11-05"]


def test_a_run_outside_its_tolerance_is_not_added_and_the_others_join(tmp_path):
    write_baseline(tmp_path, result("a"), result("b"))
    admission = Admission()
    store.update(tmp_path, H200, [result("a", scale=2.0), result("b")], commit=None, recorded_at=LATER, admit=admission)
    cases = store.load(tmp_path, H200).cases
    assert [r.recorded_at for r in cases["a"].runs] == [WHEN]
    assert [r.recorded_at for r in cases["b"].runs] == [WHEN, LATER]
    (line,) = admission.lines
    assert line.startswith(f"a: the run of {LATER} from this run not added: gpu_time +100.0% from the centre of")


def test_an_update_from_a_card_the_series_has_not_seen_is_not_allowed_the_gates_offset(tmp_path):
    # The update pytest --perfguard-update makes (plugin/recorder.py): store.update with the Admission. A 1 µs
    # kernel, three runs of one card; the gate allows a card it has not seen 1.5 µs more (priors.ABS_FLOOR_MS),
    # and a run twice as slow from another card (or one that names another) joined the series with it.
    for day, scale in ((1, 1.0), (2, 1.002), (3, 0.998)):
        store.update(tmp_path, H200, [result("a", scale=0.001 * scale)], commit=None, recorded_at=f"2026-11-0{day}")
    admission = Admission()
    other = dataclasses.replace(H200, uuid="GPU-5678", host="host0")
    slow = dataclasses.replace(result("a", scale=0.002), device_uuid=other.uuid)
    store.update(tmp_path, other, [slow], commit=None, recorded_at=LATER, admit=admission)
    assert [r.device_uuid for r in store.load(tmp_path, H200).cases["a"].runs] == ["GPU-1234"] * 3
    (line,) = admission.lines
    assert re.fullmatch(rf"a: the run of {re.escape(LATER)} from this run not added: gpu_time \+100\.0% from the centre of the fleet's 3 "
                        r"runs on 1 card, outside its tolerance of ±[\d.]+%, so the code changed or the run is off", line), line


def test_a_forced_update_starts_the_series_of_a_run_outside_its_tolerance_again_and_the_others_keep_theirs(tmp_path):
    write_baseline(tmp_path, result("a"), result("b"))
    admission = Admission(force=True)
    store.update(tmp_path, H200, [result("a", scale=2.0), result("b")], commit=None, recorded_at=LATER, admit=admission)
    cases = store.load(tmp_path, H200).cases
    assert [r.recorded_at for r in cases["a"].runs] == [LATER]
    assert [r.recorded_at for r in cases["b"].runs] == [WHEN, LATER]
    (line,) = admission.lines
    assert line.startswith("a: its series starts again with 1 run from this run (gpu_time +100.0%") and line.endswith(
        "its 1 run before dropped")


def test_a_fleets_runs_merge_in_one_write_and_a_restart_keeps_every_new_run(tmp_path):
    write_baseline(tmp_path, result("a"))
    runs = [([result("a", scale=2.0 + 0.01 * i)], "new", f"2026-12-0{i}", f"runner-{i}") for i in (1, 2, 3)]  # three runs, not copies
    store.update_runs(tmp_path, H200, runs, admit=Admission(restart=True))
    entry = store.load(tmp_path, H200).cases["a"]
    assert [r.host for r in entry.runs] == ["runner-1", "runner-2", "runner-3"]


def test_a_write_keeps_the_files_device_and_a_run_of_the_model_takes_its_versions_into_its_entry(tmp_path, capsys):
    write_baseline(tmp_path, result("a"))
    upgraded = dataclasses.replace(H200, driver="590.1", torch="2.13.0")
    store.update(tmp_path, upgraded, [result("b")], commit=None, recorded_at=LATER)
    baseline = store.load(tmp_path, H200)
    assert baseline.device == dataclasses.replace(H200, uuid=None, index=None)  # the model, as its first run gave it
    assert baseline.cases["b"].fingerprint == upgraded.fingerprint()
    assert main(["baseline", "show", "--baselines", str(tmp_path)]) == 0
    assert "NVIDIA H200 (nvidia-h200), 2 case(s); cuda 12.8, driver 590.1, torch 2.13.0, triton 3.6.0" in capsys.readouterr().out


NOT_THE_MODEL = dataclasses.replace(H200, name="nvidia h200")  # its slug nvidia-h200 too: the file's name, not its model's
WRITES = {
    "update": lambda folder: store.update(folder, NOT_THE_MODEL, [result("a", scale=1.001)], commit=None, recorded_at=LATER),
    "calibrate": lambda folder: store.calibrate(folder, NOT_THE_MODEL, Calibration(
        measured_at=LATER, fingerprint={}, copy_gbps=4000.0, copy_bytes=2**30, tflops={"bf16": 700.0}, matmul_n={"bf16": 8192})),
    "merge": lambda folder: store.merge_files(folder, [dataclasses.replace(store.load(folder, H200), device=NOT_THE_MODEL)]),
}


@pytest.mark.parametrize("write", WRITES)
def test_a_write_of_another_device_name_is_refused_and_the_file_left_as_it_was(tmp_path, write):
    path = write_baseline(tmp_path)
    before = path.read_bytes()
    with pytest.raises(BaselineError) as info:
        WRITES[write](tmp_path)
    assert str(info.value) == (f"{path}: holds runs of 'NVIDIA H200' (cuda), not of 'nvidia h200' (cuda); the file is left as "
                               "it was: add runs only to the baseline of the model they ran on")
    assert path.read_bytes() == before


def test_a_version_1_baseline_migrates_with_its_result_as_its_one_run_and_then_takes_updates(tmp_path):
    path = write_baseline(tmp_path, result("a"))
    old = unpacked(path.read_text())
    old["schema_version"] = 1
    for entry in old["cases"].values():
        del entry["runs"]
        timing = entry["result"].pop("timings")["gpu_time"]  # version 1's result: latency and samples_ms
        entry["result"].update(latency=timing["summary"], samples_ms=timing["samples_ms"], caller=None, caller_samples_ms=[])
    path.write_text(json.dumps(old))
    with pytest.raises(BaselineError, match=f"schema 1, which this perfguard no longer reads; rewrite it as schema "
                                            f"{SCHEMA_VERSION} with `perfguard migrate {path}`"):
        store.load(tmp_path, H200)
    assert main(["migrate", str(path)]) == 0
    (run,) = store.load(tmp_path, H200).cases["a"].runs
    assert (run.recorded_at, run.commit) == (WHEN, "abc123")
    assert run.median_of("gpu_time") == pytest.approx(result("a").judged_time.median_ms, rel=1e-5)
    store.update(tmp_path, H200, [result("a")], commit=None, recorded_at=LATER)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert len(store.load(tmp_path, H200).cases["a"].runs) == 2


def test_a_run_whose_median_is_zero_is_refused(tmp_path):
    path = write_baseline(tmp_path, result("a"))
    edit(path, lambda data: data["cases"]["a"]["runs"][0]["timings"]["gpu_time"].update(median_ms=0))
    with pytest.raises(BaselineError, match=r"case 'a': runs\.timings\[\.\.\.\]\.median_ms: Expected `float` > 0\.0"):
        store.load(tmp_path, H200)


def test_an_entry_without_runs_is_refused(tmp_path):
    path = write_baseline(tmp_path, result("a"))
    edit(path, lambda data: data["cases"]["a"].update(runs=[]))
    with pytest.raises(BaselineError, match="case 'a': its entry holds no runs"):
        store.load(tmp_path, H200)


def test_loads_baseline_is_the_strict_parser_the_store_uses(tmp_path):
    text = write_baseline(tmp_path).read_text()
    assert sorted(loads_baseline(text, "x.json").cases) == ["a", "b"]


def test_unwritable_baselines_folder_names_the_file(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a regular file where the baselines folder should be")
    with pytest.raises(BaselineError) as info:
        write_baseline(blocker / "baselines")
    assert str(blocker / "baselines" / "nvidia-h200.json") in str(info.value)
    assert blocker.read_text().startswith("a regular file")


def test_read_only_baselines_folder_gives_a_clear_error_and_keeps_the_file(tmp_path, freeze):
    folder = tmp_path / "frozen"
    path = write_baseline(folder)
    before = path.read_bytes()
    freeze(folder)  # this process cannot write it, root included (conftest.py)
    with pytest.raises(BaselineError) as info:
        write_baseline(folder, result("c"))
    assert str(path) in str(info.value) and "writable" in str(info.value)
    assert path.read_bytes() == before


# --- several processes, and a kill mid-write --------------------------------------------------

CHILD = r"""
import os, sys, time
from perfguard import store
from perfguard.model import CaseResult, DeviceInfo, TimeSummary, Timing

mode, directory = sys.argv[1], sys.argv[2]
device = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")
samples = tuple(1.0 + 1e-4 * i for i in range(200))
latency = TimeSummary(median_ms=1.01, mean_ms=1.01, min_ms=1.0, max_ms=1.02, p10_ms=1.002, p90_ms=1.018, iqr_ms=0.01,
                  ci_low_ms=1.009, ci_high_ms=1.011, n=200, stop_reason="converged")

def result(case_id):
    return CaseResult(id=case_id, name="case", status="ok", device="nvidia-h200",
                      timings={"gpu_time": Timing(latency, samples)})

if mode == "many-updates":  # one small update per case, as xdist workers finishing cases would
    prefix, count, go = sys.argv[3], int(sys.argv[4]), sys.argv[5]
    print("ready", flush=True)
    while not os.path.exists(go):  # start together with the other writer, not one after the other
        time.sleep(0.001)
    for i in range(count):
        store.update(directory, device, [result(f"{prefix}-{i:02d}")], commit=prefix, recorded_at="2026-11-29T12:00:00+00:00")
elif mode == "rewrite-forever":  # rewrite every case with a new commit, until killed
    results = [result(f"case-{i:04d}") for i in range(int(sys.argv[3]))]
    generation = 0
    while True:
        store.update(directory, device, results, commit=f"gen-{generation}", recorded_at="2026-11-29T12:00:00+00:00")
        generation += 1
        print(generation, flush=True)
"""


def _child(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, *map(str, args)], **kwargs)


def test_two_processes_updating_at_once_lose_no_entry(tmp_path):
    go = tmp_path / "go"
    writers = [_child("many-updates", tmp_path, prefix, 20, go, stdout=subprocess.PIPE, text=True) for prefix in ("left", "right")]
    assert [w.stdout.readline() for w in writers] == ["ready\n"] * 2  # both interpreters started, at the line
    go.touch()
    for w in writers:
        assert w.wait(timeout=60) == 0
    cases = store.load(tmp_path, "nvidia-h200").cases
    assert sorted(cases) == [f"{p}-{i:02d}" for p in ("left", "right") for i in range(20)]


def _kill_while_writing(writer: subprocess.Popen, folder: Path, deadline_s: float = 60.0) -> bool:
    """SIGKILL the writer while its temporary file exists, i.e. between mkstemp and rename.

    Seeing the file and killing are two steps, and a busy machine can let the writer finish its rename
    between them; so the writer is first stopped (SIGSTOP, waited for), the file looked for again while
    nothing moves, and only then killed; if the rename won the race, the writer goes on and is tried again.
    """
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and writer.poll() is None:
        if not any(name.endswith(".tmp") for name in os.listdir(folder)):
            continue
        os.kill(writer.pid, signal.SIGSTOP)
        os.waitpid(writer.pid, os.WUNTRACED)  # returns once it is stopped
        if any(name.endswith(".tmp") for name in os.listdir(folder)):
            os.kill(writer.pid, signal.SIGKILL)
            return True
        os.kill(writer.pid, signal.SIGCONT)
    return False


def test_a_writer_killed_mid_write_leaves_the_old_or_the_new_file_never_half(tmp_path):
    cases = 300  # about 1 MB of JSON, so that writing it takes long enough to be interrupted
    store.update(tmp_path, H200, [result(f"case-{i:04d}") for i in range(cases)], commit="first", recorded_at=WHEN)
    delays = random.Random(7)
    caught_mid_write = 0
    for round_ in range(4):
        writer = _child("rewrite-forever", tmp_path, cases, stdout=subprocess.DEVNULL)
        try:
            if round_ % 2:
                time.sleep(delays.uniform(0.2, 0.7))  # anywhere in start-up or the read-merge-write cycle
            else:
                assert _kill_while_writing(writer, tmp_path), "no temporary file appeared for a minute: the writer wrote nothing, or not through one"
        finally:
            writer.kill()  # SIGKILL: no cleanup handler runs
            writer.wait(timeout=30)
        caught_mid_write += any(tmp_path.glob(".nvidia-h200.json.*.tmp"))
        baseline = store.load(tmp_path, "nvidia-h200")  # parses: not truncated
        assert len(baseline.cases) == cases
        assert len({e.commit for e in baseline.cases.values()}) == 1  # one generation, never a mix
    assert caught_mid_write >= 2, "a kill meant to land inside a write did not; the test did not test it"
    # What the killed writers left behind (their temporary files, the lock file) is removed by the next
    # read, which can take the lock at once: no writer is alive. The next update leaves none either.
    assert len(store.load(tmp_path, H200).cases) == cases
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nvidia-h200.json"]
    store.update(tmp_path, H200, [result("after")], commit="x", recorded_at=WHEN)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nvidia-h200.json"]
    assert len(store.load(tmp_path, H200).cases) == cases + 1


def test_a_written_baseline_is_readable_like_any_file_and_keeps_its_mode_when_replaced(tmp_path):
    import os
    import stat

    from perfguard.files import write_atomic

    old = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.json"
        write_atomic(fresh, "{}\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # not mkstemp's owner-only 0600
        fresh.chmod(0o640)
        write_atomic(fresh, "{ }\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640 and fresh.read_text() == "{ }\n"
    finally:
        os.umask(old)
