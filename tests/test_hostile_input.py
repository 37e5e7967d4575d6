"""Records and baselines as a pull request's CI artifact could carry them (issue 14): every hostile file is
made here, and each ends in one line naming the file and the field, with nothing written where it
should not be. The HTML report under a real browser is in test_report_browser.py; the baseline files'
degenerate values are also among test_baseline_store.py's bad files.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfguard import store
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.errors import BaselineError
from perfguard.model import (SCHEMA_VERSION, BaselineEntry, BaselineFile, CaseResult, DeviceInfo, Profile, RunRecord, Timing,
                             Verdict, dumps)
from perfguard.report.markdown import render_markdown
from perfguard.store.lock import LockTimeout, held

from baseline_file import packed, unpacked

ROOT = Path(__file__).resolve().parents[1]
CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654")
SAMPLES = tuple(0.5 + 0.001 * (i % 7) for i in range(50))
WHEN = "2026-11-29T12:00:00+00:00"
DEEP = "[" * 100_000 + "]" * 100_000


def measured(case_id: str = "add[n=1]", device: str = CPU.slug, **fields) -> CaseResult:
    return CaseResult(id=case_id, name=case_id.split("[")[0], status="ok", device=device, timer="host-clock",
                      timings={"gpu_time": timing(SAMPLES)}, **fields)


def run(*results: CaseResult, devices: tuple[DeviceInfo, ...] = (CPU,), **fields) -> RunRecord:
    return RunRecord(created_at=WHEN, perfguard_version="0.1.0", devices=devices, results=results or (measured(),),
                     **fields)


def write(path: Path, record: RunRecord | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record if isinstance(record, str) else dumps(record))
    return path


def refused(capsys, *argv: object) -> str:
    """Run the command; it must exit 2 with exactly one line on stderr, which is returned."""
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perfguard: ") and "Traceback" not in err
    return err.strip()


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


# --- 1. a device slug never becomes a path ----------------------------------------------------


def hostile_slugs(tmp_path: Path) -> dict[str, str]:
    return {"traversal": "../../escaped", "absolute": str(tmp_path / "escaped"), "dot-dot inside": "cpu/../../escaped"}


@pytest.mark.parametrize("kind", ["traversal", "absolute", "dot-dot inside"])
@pytest.mark.parametrize("where", ["device", "result"])
def test_accept_refuses_a_record_whose_slug_is_a_path_and_writes_nothing(tmp_path, capsys, kind, where):
    slug = hostile_slugs(tmp_path)[kind]
    device = DeviceInfo(kind="cpu", name="x", slug=slug) if where == "device" else CPU
    rec = write(tmp_path / "work" / "run" / "perfguard.json", run(measured(device=slug), devices=(device,)))
    baselines = tmp_path / "work" / "run" / "baselines"
    line = refused(capsys, "baseline", "accept", rec, "--baselines", baselines)
    assert line.startswith(f"perfguard: {rec}: {'devices[0].slug' if where == 'device' else 'results[0]: device'}: ") \
        and "is not a device slug" in line
    assert not baselines.exists() and not list(tmp_path.rglob("*escaped*"))


@pytest.mark.parametrize("kind", ["traversal", "absolute", "no slug at all"])
def test_asv_export_refuses_a_slug_that_is_a_path_and_leaves_an_existing_machine_json(tmp_path, capsys, kind):
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "op.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    to = repo / "history"
    slug = {"no slug at all": "", **hostile_slugs(tmp_path)}[kind]
    # Where an unchecked export would write that machine's file: results/<slug>/machine.json.
    victim = (to / "results" / slug / "machine.json") if slug else to / "results" / "machine.json"
    victim = Path(str(victim.resolve()))
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_text("precious\n")
    devices = (CPU,) if not slug else (DeviceInfo(kind="cpu", name="x", slug=slug),)
    rec = write(tmp_path / "perfguard.json", run(measured(device=slug), devices=devices, commit=git(repo, "rev-parse", "HEAD")))
    line = refused(capsys, "asv-export", rec, "--to", to, "--repo", repo)
    assert line.startswith(f"perfguard: {rec}: ") and "not a device slug" in line
    assert victim.read_text() == "precious\n"
    assert not (to / "asv.conf.json").exists() and not (to / "results" / "benchmarks.json").exists()


def test_the_store_makes_no_path_of_a_slug_that_is_not_one(tmp_path, capsys):
    for slug in ("../x", "/etc/passwd", "", "a/b", "nvidia-h200.json", "x" * 500):
        with pytest.raises(BaselineError, match="is not a device slug") as info:
            store.path_for(tmp_path, slug)
        assert "\n" not in str(info.value)
    assert "is not a device slug" in refused(capsys, "baseline", "show", "--device", "../../etc/passwd", "--baselines", tmp_path)


# --- 1b. a record's device says one model, its baseline's (issue 46, item 2) ------------------------------

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")
A100 = DeviceInfo(kind="cuda", name="NVIDIA A100-SXM4-80GB", slug="nvidia-a100-sxm4-80gb")


def card_run(day: int, *devices: DeviceInfo, card: str | None = None, slug: str = H200.slug) -> RunRecord:
    """One run of add[n=1] (samples of its own: no two days are one run), measured on `card`, the first device's
    by default."""
    card = card or devices[0].uuid
    samples = tuple(x * (1 + 0.01 * day) for x in SAMPLES)
    result = CaseResult(id="add[n=1]", name="add", status="ok", device=slug, device_uuid=card, timer="cuda-events",
                        timings={"gpu_time": timing(samples)})
    return dataclasses.replace(run(result, devices=devices), created_at=f"2026-11-{day:02d}T12:00:00+00:00")


def card(uuid: str, model: DeviceInfo = H200, **fields) -> DeviceInfo:
    return dataclasses.replace(model, uuid=uuid, host="runner-a", **fields)


# What a record may say of its device, and the line that refuses it: the audit's first (an A100 by name, with
# an H200 card's UUID and the H200's slug) renamed the baseline's device and added 129 cases' runs to it.
LYING_DEVICES = {
    "another model's name": (lambda: card_run(3, card("GPU-1", name=A100.name)),
                             "its device 'NVIDIA A100-SXM4-80GB' has the slug 'nvidia-h200', but that name's is "
                             "nvidia-a100-sxm4-80gb"),
    "a name its baseline does not hold": (lambda: card_run(3, card("GPU-5", name="nvidia h200")),
                                          "its device 'nvidia h200' (cuda) is not {file}'s, 'NVIDIA H200' (cuda)"),
    "a card listed as two models": (lambda: card_run(3, card("GPU-2"), card("GPU-2", A100)),
                                    "it lists card 'GPU-2' as 'NVIDIA H200' and as 'NVIDIA A100-SXM4-80GB'"),
    "a case on a card it does not list": (lambda: card_run(3, card("GPU-2"), card="GPU-9"),
                                          "case 'add[n=1]' was measured on card 'GPU-9', which the record does not list as "
                                          "nvidia-h200"),
    "a case on a device it does not list": (lambda: card_run(3, card("GPU-2"), slug=A100.slug),
                                            "case 'add[n=1]' was measured on 'nvidia-a100-sxm4-80gb', a device the record "
                                            "does not list"),
}


@pytest.mark.parametrize("lie", LYING_DEVICES)
def test_accept_refuses_a_record_whose_device_disagrees_with_itself_or_its_baseline(tmp_path, capsys, lie):
    make, says = LYING_DEVICES[lie]
    baselines = tmp_path / "baselines"
    assert main(["baseline", "accept", str(write(tmp_path / "r1.json", card_run(1, card("GPU-1")))), "--baselines", str(baselines)]) == 0
    file = store.path_for(baselines, H200.slug)
    before = store.load_file(file)
    lying, good = write(tmp_path / "lying.json", make()), write(tmp_path / "r2.json", card_run(2, card("GPU-1")))
    capsys.readouterr()
    assert main(["baseline", "accept", str(lying), str(good), "--baselines", str(baselines)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"refused {lying}: {says.format(file=file)}; was it edited? Add records as perfguard wrote them" in lines, lines
    after = store.load_file(file)
    assert after.device == before.device and store.list_files(baselines) == [file]
    assert [r.recorded_at for r in after.cases["add[n=1]"].runs] == ["2026-11-01T12:00:00+00:00", "2026-11-02T12:00:00+00:00"]


# What a later record of one accept may not say against an earlier one, into a folder with no baseline yet.
AGAINST_AN_EARLIER_RECORD = {
    "its card another model": (lambda: card_run(2, card("GPU-7", A100), slug=A100.slug),
                               "it names card 'GPU-7' 'NVIDIA A100-SXM4-80GB', which {first} names 'NVIDIA H200'"),
    "the model another name": (lambda: card_run(2, card("GPU-8", name="nvidia h200")),
                               "its device 'nvidia h200' (cuda) is not {first}'s, 'NVIDIA H200' (cuda)"),
}


@pytest.mark.parametrize("lie", AGAINST_AN_EARLIER_RECORD)
def test_accept_refuses_a_device_an_earlier_record_of_it_named_otherwise(tmp_path, capsys, lie):
    make, says = AGAINST_AN_EARLIER_RECORD[lie]
    first, second = write(tmp_path / "r1.json", card_run(1, card("GPU-7"))), write(tmp_path / "r2.json", make())
    assert main(["baseline", "accept", str(first), str(second), "--baselines", str(tmp_path / "b")]) == 0
    assert (f"refused {second}: {says.format(first=first)}; was it edited? Add records as perfguard wrote "
            "them") in capsys.readouterr().out.splitlines()
    assert store.list_files(tmp_path / "b") == [store.path_for(tmp_path / "b", H200.slug)]
    assert len(store.load(tmp_path / "b", H200).cases["add[n=1]"].runs) == 1


def test_a_new_card_of_the_baselines_model_adds_its_runs(tmp_path, capsys):
    baselines = tmp_path / "b"
    assert main(["baseline", "accept", str(write(tmp_path / "r1.json", card_run(1, card("GPU-1")))), "--baselines", str(baselines)]) == 0
    assert main(["baseline", "accept", str(write(tmp_path / "r2.json", card_run(2, card("GPU-2")))), "--baselines", str(baselines)]) == 0
    assert "refused" not in capsys.readouterr().out
    assert [r.device_uuid for r in store.load(baselines, H200).cases["add[n=1]"].runs] == ["GPU-1", "GPU-2"]


# --- 2. what a record says is never a link, a script or a mention --------------------------------


@pytest.mark.parametrize("trace", ["javascript:alert(document.title)", "data:text/html,<script>alert(1)</script>",
                                   "https://evil.example/t.json", "/etc/passwd", "../../t.json", "traces/../../t.json"])
def test_a_record_whose_trace_leaves_the_report_folder_is_refused(tmp_path, capsys, trace):
    rec = write(tmp_path / "perfguard.json", run(measured(profile=Profile(calls=5, trace=trace))))
    line = refused(capsys, "report", rec, "-o", tmp_path / "report.html")
    assert "results[0]: profile.trace: " in line and "is not a relative path inside the report's folder" in line
    assert not (tmp_path / "report.html").exists()


def test_the_markdown_links_and_mentions_nothing_and_a_huge_id_hides_no_row():
    hostile = ("see https://evil.example/x or www.evil.example, @octocat and @org/team, write to a@evil.example, "
               "fixes #12 [click](javascript:alert(1)) <b>bold</b>")
    results = [CaseResult(id="x" * 100_000, name="x", status="error", device=CPU.slug, error=hostile)]
    results += [measured(f"later[n={i}]") for i in range(5)]
    device = DeviceInfo(kind="cpu", name="cpu https://evil.example @octocat", slug=CPU.slug)
    md = render_markdown([run(*results, devices=(device,))])
    assert "://" not in md and "www." not in md and "evil.example/x" in md
    assert not re.search(r"@\w", md) and not re.search(r"#\d", md)
    assert "<b>" not in md and not re.search(r"(?<!\\)\]\(", md)  # the message's `[click](…)` is kept, escaped
    assert all(f"`later[n={i}]`" in md for i in range(5))
    assert max(len(line) for line in md.splitlines()) < 1_000 and len(md) < 10_000


# --- 3 and 4. values that make no sense, nesting that would crash ----------------------------


def _status(top: dict, result: dict) -> None:
    same = Verdict("add[n=1]", "gpu_time", "same", 1.0, 1.0, 0.0, 5.0, None, reason="within")
    top["verdicts"] = [{**json.loads(dumps(same)), "status": "exploded"}]


HOSTILE = {  # how the file is made hostile (its top object, its one result) → what the one line names
    "JSON nested 100k deep": (DEEP, "expected a JSON object at the top"),
    "a 5,000-digit number": (f'{{"schema_version": {SCHEMA_VERSION}, "n": ' + "9" * 5000 + "}", "Object contains unknown field `n`"),
    "params nested 500 deep": (lambda top, r: r.update(params={"n": json.loads("[" * 500 + "]" * 500)}),
                               "params is nested more than 16 levels deep"),
    "unknown verdict status": (_status, "verdicts[0].status: Invalid enum value 'exploded'"),
    "unknown case status": (lambda top, r: r.update(status="exploded"), "status: Invalid enum value 'exploded'"),
    "zero median": (lambda top, r: r["timings"]["gpu_time"]["summary"].update(median_ms=0),
                    "timings[...].summary.median_ms: Expected `float` > 0.0"),
    "negative sample": (lambda top, r: r["timings"]["gpu_time"]["samples_ms"].__setitem__(3, -1.0),
                        "timings[...].samples_ms[3]: Expected `float` >= 0.0"),
    "huge integer": (lambda top, r: r["timings"]["gpu_time"]["summary"].update(n=10**30),
                     "timings[...].summary.n: Expected `int` <= 1000000000000000000"),
    "unknown timing regime": (lambda top, r: r.update(regime="<img src=x>"), "regime: Invalid enum value '<img src=x>'"),
    # Finite, so JSON and the codec take them; past any measurement, and 1e308 overflowed the report's arithmetic.
    "a CI bound of 1e308 ms": (lambda top, r: r["timings"]["gpu_time"]["summary"].update(ci_high_ms=1e308),
                               "timings[...].summary.ci_high_ms: Expected `float` <= 1000000000.0"),
    "a sample of 1e7 s": (lambda top, r: r["timings"]["gpu_time"]["samples_ms"].__setitem__(0, 1e10),
                          "timings[...].samples_ms[0]: Expected `float` <= 1000000000.0"),
    "a peak of 1e16 bytes": (lambda top, r: r.update(memory={"peak_allocated_bytes": 10**16}),
                             "memory.peak_allocated_bytes: Expected `int` <= 1000000000000000"),
}


def hostile_file(path: Path, problem: str, baseline: bool) -> Path:
    """A record (or a baseline) of one measured case, made hostile as HOSTILE says."""
    edit = HOSTILE[problem][0]
    if isinstance(edit, str):  # the whole text
        return write(path, edit)
    if baseline:
        top = json.loads(dumps(BaselineFile(device=CPU, cases={"add[n=1]": BaselineEntry(WHEN, None, {}, measured())})))
        edit(top, top["cases"]["add[n=1]"]["result"])
    else:
        top = json.loads(dumps(run()))
        edit(top, top["results"][0])
    return write(path, json.dumps(top))


COMMANDS = {  # each command given the hostile file, and what it must not have written
    "show": lambda rec, good, out: (["show", rec], []),
    "baseline show": lambda rec, good, out: (["baseline", "show", "--baselines", rec.parent], []),
    "baseline accept": lambda rec, good, out: (["baseline", "accept", rec, "--baselines", out], [out]),
    "compare": lambda rec, good, out: (["compare", good, rec], []),
    "report": lambda rec, good, out: (["report", good, rec, "-o", out / "r.html", "--markdown", out / "r.md"], [out]),
    "asv-export": lambda rec, good, out: (["asv-export", good, rec, "--to", out], [out]),
}


@pytest.mark.parametrize(("command", "problem"), [(c, p) for c in COMMANDS for p in HOSTILE
                                                  if (c, p) != ("baseline show", "unknown verdict status")])
def test_every_command_refuses_a_hostile_file_in_one_line_and_writes_nothing(tmp_path, capsys, command, problem):
    baseline = command == "baseline show"
    name = f"{CPU.slug}.json" if baseline else "perfguard.json"  # a baseline is named for its slug
    rec = hostile_file(tmp_path / "hostile" / name, problem, baseline)
    good = write(tmp_path / "good.json", run(commit="0" * 40))
    argv, unwritten = COMMANDS[command](rec, good, tmp_path / "out")
    line = refused(capsys, *argv)
    assert line.startswith(f"perfguard: {rec}: ") and HOSTILE[problem][1] in line
    assert not any(p.exists() for p in unwritten)


@pytest.mark.parametrize("unmeasured", ["busy_time", "no samples"])
def test_an_update_never_writes_a_baseline_it_would_refuse_to_read(tmp_path, unmeasured):
    summary = measured().judged_time
    timings = {"busy_time": Timing(summary, SAMPLES)} if unmeasured == "busy_time" else {"gpu_time": Timing(summary, ())}
    with pytest.raises(BaselineError) as info:
        store.update(tmp_path, CPU, [dataclasses.replace(measured(), timings=timings)], commit=None, recorded_at=WHEN)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / CPU.slug}.json: case 'add[n=1]'") and "\n" not in message
    assert message.endswith("not written: a baseline keeps measured cases, each with its samples")
    assert list(tmp_path.iterdir()) == []


def test_history_of_a_folder_holding_json_nested_100k_deep_is_one_line(tmp_path, capsys):
    pytest.importorskip("asv")
    write(tmp_path / "history" / "asv.conf.json", DEEP)
    assert "nested too deeply" in refused(capsys, "history", tmp_path / "history")


# --- 3, 4 and 6 through the plugin: a plain run against a baseline on disk ---------------------

SUITE = """
    import time

    from perfguard import perf_case

    @perf_case
    def nap(device):
        return lambda: time.sleep(0.001)
"""


def _zero_median(text: str) -> str:
    data = json.loads(text)
    data["cases"]["nap"]["result"]["timings"]["gpu_time"]["summary"]["median_ms"] = 0
    return json.dumps(data)


BASELINES = {  # the file's text from a good baseline's → what the case's one line names
    "JSON nested 100k deep": (lambda text: DEEP, "expected a JSON object at the top"),
    "zero median": (_zero_median, "case 'nap': result.timings[...].summary.median_ms: Expected `float` > 0.0"),
    "good, beside a killed update's leftovers": (lambda text: text, None),
}


@pytest.fixture(scope="module", params=list(BASELINES))
def plain_run(request, tmp_path_factory, run_pytest, fake_clock):
    from perfguard.measure.device import detect

    folder = tmp_path_factory.mktemp("plain")
    (folder / "conftest.py").write_text(fake_clock)  # the nap's budget on the run's own clock: no real time
    (folder / "test_nap.py").write_text(textwrap.dedent(SUITE))
    device = detect("cpu")
    path = store.update(folder / "baselines", device, [measured("nap", device=device.slug)], commit=None, recorded_at=WHEN)
    edit, expected = BASELINES[request.param]
    path.write_text(edit(path.read_text()))
    # What an update killed mid-write leaves: its temporary copy (12.7 MB in the issue) and its lock file.
    leftovers = [path.with_name(f".{path.name}.k1ll3d.tmp"), path.with_name(f"{path.name}.lock")]
    for p in leftovers:
        p.write_text("{")
    before = path.read_bytes()
    result = run_pytest(folder, "--perfguard", "--perfguard-baselines=baselines", "--perfguard-budget=0.1",
                        env={"PYTHONPATH": str(ROOT)})  # this tree's perfguard, not an installed copy
    return result, path, before, leftovers, expected


def test_a_plain_run_fails_each_case_with_one_line_on_a_hostile_baseline_and_leaves_the_file(plain_run):
    result, path, before, _, expected = plain_run
    text = "\n".join(result.outlines + result.errlines)
    assert "RecursionError" not in text and "Traceback" not in text and len(text.splitlines()) < 80
    if expected is None:  # compared with the baseline (whatever the verdict: a sleep's time is not ours to assert)
        assert "nap: measured, but not compared" not in text and " (one per metric) for 1 case: " in text
    else:
        lines = [line for line in result.outlines if line.startswith("nap: ")]  # the failure, under FAILURES
        assert result.ret == 1 and lines == [f"nap: measured, but not compared: baselines/{path.name} cannot be read "
                                             "(the run's end says why, once)"]
        said = [line for line in result.outlines if line.startswith(f"perfguard: {path}: ")]  # why, once
        assert len(said) == 1 and expected in said[0], result.outlines
    assert path.read_bytes() == before


def test_a_plain_run_removes_what_a_killed_update_left_beside_the_baseline(plain_run):
    _, path, _, leftovers, _ = plain_run
    assert not any(p.exists() for p in leftovers)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


# --- 6. leftovers: no lock file after an update; a live writer's files are left alone -----------


def test_an_update_leaves_no_lock_file_beside_the_baseline(tmp_path):
    path = store.update(tmp_path, CPU, [measured()], commit=None, recorded_at=WHEN)
    store.update(tmp_path, CPU, [measured("mul[n=1]")], commit=None, recorded_at=WHEN)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert sorted(store.load(tmp_path, CPU).cases) == ["add[n=1]", "mul[n=1]"]


HOLDER = """
import sys, time
from pathlib import Path
from perfguard.store.lock import held

lock, ready, go = map(Path, sys.argv[1:])
with held(lock, 10):
    ready.touch()
    while not go.exists():
        time.sleep(0.01)
"""


def test_a_plain_read_leaves_the_files_of_a_live_writer_alone(tmp_path):
    path = store.update(tmp_path, CPU, [measured()], commit=None, recorded_at=WHEN)
    temp, lock = path.with_name(f".{path.name}.live.tmp"), path.with_name(f"{path.name}.lock")
    ready, go = tmp_path / "ready", tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(ready), str(go)], cwd=ROOT)
    try:
        for _ in range(2000):
            if ready.exists() or holder.poll() is not None:
                break
            time.sleep(0.01)
        assert ready.exists(), "the writer never took the lock"
        temp.write_text("{")  # the live writer's file, mid-write
        assert sorted(store.load(tmp_path, CPU).cases) == ["add[n=1]"]
        assert temp.exists() and lock.exists()
        with pytest.raises(LockTimeout), held(lock, 0):
            pass
    finally:
        go.touch()
        assert holder.wait(timeout=30) == 0
    assert not lock.exists()  # the writer removed its lock file on the way out


def test_a_baseline_run_whose_callers_time_is_not_positive_is_refused(tmp_path, capsys):
    # log() of it would make the caller's tolerance NaN: a gate switched off without a word.
    from perfguard.model import run_summary

    entry = BaselineEntry(WHEN, None, {}, measured(), runs=(run_summary(measured(), WHEN),))
    top = unpacked(dumps(BaselineFile(device=CPU, cases={"add[n=1]": entry})))
    top["cases"]["add[n=1]"]["runs"][0]["timings"]["caller_time"] = {"median_ms": -1.0, "n": 10}
    path = write(tmp_path / "hostile" / f"{CPU.slug}.json", packed(top))
    line = refused(capsys, "baseline", "show", "--baselines", path.parent)
    assert "runs.timings[...].median_ms: Expected `float` > 0.0" in line
