"""History with asv: run records of a real git repository exported, published by real asv, steps detected.

The repository is built in tmp_path with six commits a day apart; each commit gets a run record of an
H200 card. One grid point of `add` is made 20% slower from the third commit on; everything else is
steady (1% noise). `asv publish` must render the export, and both asv's own regressions page and
`perfguard history` must point at the third commit for that grid point, and at nothing else.
At the end, records written by `pytest --perfguard` itself (on the CPU, and on a GPU: `gpu` marker)
are exported from their checkout with the command's defaults.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perfguard.analysis.stats import summarize
from perfguard.cli import main
from perfguard.export import export, find_drifts
from perfguard.model import CaseResult, DeviceInfo, Memory, Metrics, RunRecord, Timing, dumps, loads_record

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", uuid="GPU-3f2a9c1b-0d4e-4c6f-9a2b-5e8d7c6b5a49",
                  driver="580.159.04", cuda="13.0", torch="2.11.0", triton="3.6.0", python="3.12.3",
                  memory_bytes=150109880320, sm_count=132, peak_bandwidth_gbps=4814.3)
MACHINE = "nvidia-h200-3f2a9c1b"
N_COMMITS, STEP_AT, STEP = 6, 2, 1.2  # the third commit makes add[float16] 20% slower
ADD_BYTES = 3 * 2**24 * 2


def git(repo: Path, *args: str, **env: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return out.stdout.strip()


def make_repo(path: Path, commits: int) -> tuple[Path, list[str]]:
    """A git repository with `commits` commits on `main`, one a day; returns it and their full hashes."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    hashes = []
    for i in range(commits):
        (path / "kernel.py").write_text(f"VERSION = {i}\n")
        git(path, "add", "kernel.py")
        date = f"2026-11-{i + 1:02d}T12:00:00+00:00"
        git(path, "-c", "user.name=Perf Guard", "-c", "user.email=perf@example.com", "commit", "-q", "-m", f"change {i}",
            GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
        hashes.append(git(path, "rev-parse", "HEAD"))
    return path, hashes


@pytest.fixture(scope="module")
def made_once(tmp_path_factory) -> tuple[Path, list[str]]:
    """The repository of N_COMMITS commits, made once for the module (a few dozen git commands)."""
    return make_repo(tmp_path_factory.mktemp("made-once") / "project", N_COMMITS)


@pytest.fixture
def repo(tmp_path, made_once) -> tuple[Path, list[str]]:
    """A copy of that repository of the test's own, which it may change (a commit, a detached HEAD)."""
    path, hashes = made_once
    return Path(shutil.copytree(path, tmp_path / "project", symlinks=True)), hashes


def case(name: str, params: dict, median_ms: float, rng: np.random.Generator, nbytes: float | None = None,
         peak: int | None = None) -> CaseResult:
    samples = tuple(float(x) for x in rng.lognormal(np.log(median_ms), 0.01, 200))
    latency = summarize(samples, "converged")
    gbps = nbytes / (latency.median_ms / 1e3) / 1e9 if nbytes else None
    return CaseResult(id=f"{name}[{'-'.join(f'{k}={v}' for k, v in params.items())}]", name=name, status="ok",
                      params=params, device=H200.slug, device_uuid=H200.uuid, timer="cuda-events", bytes=nbytes,
                      timings={"gpu_time": Timing(latency, samples)}, metrics=Metrics(gbps=gbps),
                      memory=Memory(peak_allocated_bytes=peak))


def run_of(commit: str | None, day: int, rng: np.random.Generator, slowdown: float = 1.0) -> RunRecord:
    return RunRecord(
        created_at=f"2026-11-{day:02d}T13:00:00+00:00", perfguard_version="0.1.0", devices=(H200,), commit=commit,
        results=(
            case("add", {"n": 2**24, "dtype": "float16"}, 0.0226 * slowdown, rng, ADD_BYTES, peak=2**25),
            case("add", {"n": 2**24, "dtype": "float32"}, 0.0436, rng, 2 * ADD_BYTES, peak=2**26),
            case("device_copy", {}, 0.505, rng, 2 * 2**30),
            CaseResult(id="broken", name="broken", status="error", device=H200.slug, error="setup raised ValueError"),
        ),
    )


def write(path: Path, record: RunRecord) -> str:
    path.write_text(dumps(record))
    return str(path)


@pytest.fixture(scope="module")
def run_texts(made_once) -> list[str]:
    """One record per commit, as JSON; add[float16] is STEP slower from commit STEP_AT on."""
    rng = np.random.default_rng(7)
    _, hashes = made_once
    return [dumps(run_of(h, i + 1, rng, STEP if i >= STEP_AT else 1.0)) for i, h in enumerate(hashes)]


@pytest.fixture
def runs(tmp_path, run_texts) -> list[str]:
    """Those records, in files of the test's own."""
    paths = [tmp_path / f"run{i}.json" for i in range(len(run_texts))]
    for path, text in zip(paths, run_texts):
        path.write_text(text)
    return [str(path) for path in paths]


@pytest.fixture
def exported(tmp_path, repo, runs) -> Path:
    to = tmp_path / "history"
    assert main(["asv-export", *runs, "--to", str(to), "--repo", str(repo[0])]) == 0
    return to


def load(path: Path, machine: str = MACHINE):
    """A result file read by asv's own reader (asv is in the test extra; imported here, not at the top,
    so that `pytest -m gpu` collects this file on a GPU machine without asv)."""
    from asv.results import Results

    return Results.load(str(path), machine_name=machine)


def test_export_writes_asv_files_one_result_file_per_commit_with_full_hashes(exported, repo, runs, capsys):
    _, hashes = repo
    capsys.readouterr()
    assert main(["asv-export", *runs, "--to", str(exported), "--repo", str(repo[0])]) == 0  # again: changes nothing
    out = capsys.readouterr().out
    assert "6 commit(s), 1 machine(s) (nvidia-h200-3f2a9c1b), 5 asv benchmark(s)" in out
    assert f"asv publish --config {exported / 'asv.conf.json'}" in out
    results = exported / "results"
    assert json.loads((results / "benchmarks.json").read_text())["version"] == 2
    machine = json.loads((results / MACHINE / "machine.json").read_text())
    assert machine["version"] == 1 and machine["machine"] == MACHINE and machine["name"] == "NVIDIA H200"
    files = sorted((results / MACHINE).glob("*-perfguard.json"))
    assert sorted(f.name for f in files) == sorted(f"{h[:8]}-perfguard.json" for h in hashes)
    by_commit = {load(f).commit_hash: load(f) for f in files}  # asv's own reader
    assert sorted(by_commit) == sorted(hashes) and all(len(h) == 40 for h in by_commit)
    assert {r.date for r in by_commit.values()} == {int(git(repo[0], "log", "-1", "--format=%at", h)) * 1000 for h in hashes}
    conf = json.loads((exported / "asv.conf.json").read_text())
    assert conf["version"] == 1 and conf["branches"] == ["main"] and conf["results_dir"] == "results"
    assert (exported / conf["repo"]).resolve() == repo[0].resolve()


def test_benchmarks_are_per_case_name_and_metric_with_the_grid_as_asv_params(exported):
    benchmarks = json.loads((exported / "results" / "benchmarks.json").read_text())
    assert sorted(b for b in benchmarks if b != "version") == [
        "add.judged_time", "add.peak_memory", "add.time_per_gb", "device_copy.judged_time", "device_copy.time_per_gb"]
    add = benchmarks["add.judged_time"]
    assert (add["type"], add["unit"]) == ("time", "seconds")
    assert add["param_names"] == ["dtype", "n"] and add["params"] == [["'float16'", "'float32'"], [str(2**24)]]
    assert (benchmarks["add.peak_memory"]["type"], benchmarks["add.peak_memory"]["unit"]) == ("memory", "bytes")
    assert benchmarks["device_copy.judged_time"]["params"] == []


def test_latency_is_stored_in_seconds_and_bandwidth_inverted_as_seconds_per_gb(exported, repo, runs):
    _, hashes = repo
    record = loads_record(Path(runs[0]).read_text(), runs[0])
    f16 = next(r for r in record.results if r.params.get("dtype") == "float16")
    stored = load(exported / "results" / MACHINE / f"{hashes[0][:8]}-perfguard.json")
    params = [["'float16'", "'float32'"], [str(2**24)]]
    latency = stored.get_result_value("add.judged_time", params)[0]
    assert latency == pytest.approx(f16.judged_time.median_ms / 1e3, rel=1e-5)
    per_gb = stored.get_result_value("add.time_per_gb", params)[0]
    assert per_gb == pytest.approx(1 / f16.metrics.gbps, rel=1e-5)  # lower is better, as asv reads it
    stats = stored.get_result_stats("add.judged_time", params)[0]
    assert stats["ci_99_a"] < latency < stats["ci_99_b"] and stats["q_25"] < latency < stats["q_75"]
    assert stored.get_result_value("add.peak_memory", params) == [2**25, 2**26]
    assert not any("broken" in key for key in stored.get_all_result_keys())  # errored cases are not figures


def test_asv_publish_renders_the_export_and_its_regressions_page_finds_the_step(exported, repo):
    _, hashes = repo
    out = subprocess.run([sys.executable, "-m", "asv", "publish", "--config", str(exported / "asv.conf.json")],
                         capture_output=True, text=True, timeout=300, cwd=exported.parent)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Couldn't find" not in out.stdout + out.stderr  # every commit was found on the branch
    html = exported / "html"
    assert (html / "index.html").is_file()
    index = json.loads((html / "index.json").read_text())
    assert sorted(index["revision_to_hash"].values()) == sorted(hashes)
    assert MACHINE in index["machines"] and "add.time_per_gb" in index["benchmarks"]
    graph = json.loads((html / "graphs" / "branch-main" / f"machine-{MACHINE}" / "add.judged_time.json").read_text())
    assert len(graph) == N_COMMITS
    regressions = json.loads((html / "regressions.json").read_text())["regressions"]
    flagged = {(name, jump[1]) for name, _path, _params, _idx, _last, _best, jumps in regressions for jump in jumps}
    step = int(next(r for r, h in index["revision_to_hash"].items() if h == hashes[STEP_AT]))
    assert flagged == {("add.judged_time('float16', 16777216)", step), ("add.time_per_gb('float16', 16777216)", step)}


def test_history_flags_the_injected_step_and_nothing_steady(exported, repo, capsys):
    _, hashes = repo
    history = find_drifts(exported)
    assert history.commits == N_COMMITS and history.series == 8 and history.off_branch == 0
    assert sorted(d.benchmark for d in history.drifts) == ["add.judged_time", "add.time_per_gb"]
    for drift in history.drifts:
        assert drift.params == {"dtype": "'float16'", "n": str(2**24)} and drift.machine == MACHINE
        assert drift.latest / drift.best == pytest.approx(STEP, rel=0.03)
        (step,) = drift.steps
        assert (step.commit_before, step.commit_after, step.commits_between) == (hashes[STEP_AT - 1], hashes[STEP_AT], 1)
    assert main(["history", str(exported)]) == 1
    out = capsys.readouterr().out.splitlines()
    at = hashes[STEP_AT][:12]
    assert re.fullmatch(rf"drift  add\[dtype='float16', n=16777216\] judged_time on {MACHINE} \(main\): "
                        rf"22\.6 µs → 27\.\d µs \(\+(19|20)\.\d%\); stepped at {at}", out[0]), out[0]
    # the bandwidth a person reads: it fell by 1 - 1/1.2
    assert re.fullmatch(rf"drift  add\[dtype='float16', n=16777216\] bandwidth on {MACHINE} \(main\): "
                        rf"4,4\d\d\.\d GB/s → 3,7\d\d\.\d GB/s \(-16\.\d%\); stepped at {at}", out[1]), out[1]
    assert out[-1] == "perfguard: 2 drift(s) in 8 series over 6 commit(s)"


def test_two_small_steps_that_pass_every_runs_gate_are_found_as_one_drift(tmp_path, capsys):
    """+3.5% at the 4th and again at the 7th of 9 commits: each run passes `perfguard compare` against
    the run before it (threshold 5%); the history is 7% worse, and asv's step detection says where."""
    path, hashes = make_repo(tmp_path / "drifting", 9)
    rng = np.random.default_rng(11)
    runs = [write(tmp_path / f"d{i}.json", run_of(h, i + 1, rng, 1.035 ** (i // 3))) for i, h in enumerate(hashes)]
    assert all(main(["compare", a, b]) == 0 for a, b in zip(runs, runs[1:]))
    capsys.readouterr()
    to = tmp_path / "history"
    export([(p, loads_record(Path(p).read_text(), p)) for p in runs], to, repo=path)
    drifts = find_drifts(to).drifts
    assert {(d.benchmark, d.params["dtype"]) for d in drifts} == {("add.judged_time", "'float16'"), ("add.time_per_gb", "'float16'")}
    for drift in drifts:
        assert drift.latest / drift.best == pytest.approx(1.035**2, rel=0.01)
        assert drift.steps[0].commit_after == hashes[3]


def test_a_steady_history_has_no_drift_and_exits_0(tmp_path, repo, capsys):
    rng = np.random.default_rng(3)
    runs = [write(tmp_path / f"s{i}.json", run_of(h, i + 1, rng)) for i, h in enumerate(repo[1])]
    to = tmp_path / "steady"
    assert main(["asv-export", *runs, "--to", str(to), "--repo", str(repo[0])]) == 0
    assert main(["history", str(to), "--threshold", "5"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "perfguard: 0 drift(s) in 8 series over 6 commit(s)"


def test_reexporting_is_idempotent_and_batches_merge_to_the_same_files(tmp_path, repo, runs, exported):
    def snapshot(folder: Path) -> dict[str, str]:
        return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*.json"))}

    before = snapshot(exported)
    assert main(["asv-export", *runs, "--to", str(exported), "--repo", str(repo[0])]) == 0
    assert snapshot(exported) == before
    batched = tmp_path / "batched"
    for part in (runs[3:], runs[:3]):  # later commits first: the order must not matter
        assert main(["asv-export", *part, "--to", str(batched), "--repo", str(repo[0])]) == 0
    assert snapshot(batched) == before


def test_records_of_one_commit_and_card_merge_and_the_newer_wins(tmp_path, repo):
    rng = np.random.default_rng(5)
    commit = repo[1][0]
    old = run_of(commit, 1, rng)
    new = RunRecord(created_at="2026-11-02T09:00:00+00:00", perfguard_version="0.1.0", devices=(H200,), commit=commit,
                    results=(case("add", {"n": 2**24, "dtype": "float16"}, 0.05, rng, ADD_BYTES),
                             case("softmax", {"rows": 4096}, 0.3, rng)))
    for order in ((old, new), (new, old)):
        to = tmp_path / f"merge{len(list(tmp_path.iterdir()))}"
        for i, record in enumerate(order):
            export([(f"r{i}.json", record)], to, repo=repo[0])
        files = list((to / "results" / MACHINE).glob("*-perfguard.json"))
        assert len(files) == 1
        stored = load(files[0])
        assert {"add.judged_time", "device_copy.judged_time", "softmax.judged_time"} <= set(stored.get_all_result_keys())
        f16, f32 = stored.get_result_value("add.judged_time", [["'float16'", "'float32'"], [str(2**24)]])
        assert f16 == pytest.approx(new.results[0].judged_time.median_ms / 1e3, rel=1e-5)  # newer record's figure
        assert f32 == pytest.approx(old.results[1].judged_time.median_ms / 1e3, rel=1e-5)  # kept from the older


def test_each_gpu_card_is_one_asv_machine_and_a_cpu_is_its_model(tmp_path, repo):
    rng = np.random.default_rng(2)
    second = dataclasses.replace(H200, uuid="GPU-77aa0011-0000-0000-0000-000000000000", index=1)
    cpu = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", cpu_count=16)
    record = dataclasses.replace(run_of(repo[1][0], 1, rng), devices=(H200, second, cpu))
    extra = (dataclasses.replace(record.results[0], device_uuid=second.uuid),
             dataclasses.replace(record.results[2], device=cpu.slug, device_uuid=None, memory=None))
    export([("two.json", dataclasses.replace(record, results=record.results + extra))], tmp_path / "a", repo=repo[0])
    results = tmp_path / "a" / "results"
    assert sorted(p.parent.name for p in results.glob("*/machine.json")) == [
        "cpu-amd-epyc-9654", MACHINE, "nvidia-h200-77aa0011"]
    assert json.loads((results / "cpu-amd-epyc-9654" / "machine.json").read_text())["cpu_count"] == "16"
    on_second = load(next((results / "nvidia-h200-77aa0011").glob("*-perfguard.json")), "nvidia-h200-77aa0011")
    assert sorted(on_second.get_all_result_keys()) == ["add.judged_time", "add.peak_memory", "add.time_per_gb"]


def test_a_grid_that_grows_keeps_the_older_commits_figures(tmp_path, repo):
    rng = np.random.default_rng(4)
    first, later = run_of(repo[1][0], 1, rng), run_of(repo[1][1], 2, rng)
    bigger = dataclasses.replace(later.results[0], params={"n": 2**26, "dtype": "float16"})
    to = tmp_path / "grown"
    export([("a.json", first), ("b.json", dataclasses.replace(later, results=later.results + (bigger,)))], to, repo=repo[0])
    bench = json.loads((to / "results" / "benchmarks.json").read_text())["add.judged_time"]
    assert bench["params"] == [["'float16'", "'float32'"], [str(2**24), str(2**26)]]
    old = load(to / "results" / MACHINE / f"{repo[1][0][:8]}-perfguard.json")
    values = old.get_result_value("add.judged_time", bench["params"])
    assert values[1] is None and values[3] is None and None not in (values[0], values[2])  # 2**26 not run then


def test_a_commit_off_the_branch_is_exported_with_a_note_and_history_skips_it(tmp_path, repo, runs, capsys):
    path, hashes = repo
    git(path, "checkout", "-q", "-b", "feature", hashes[2])
    (path / "kernel.py").write_text("VERSION = 'feature'\n")
    git(path, "-c", "user.name=P", "-c", "user.email=p@example.com", "commit", "-q", "-am", "feature")
    side = write(tmp_path / "side.json", run_of(git(path, "rev-parse", "HEAD"), 9, np.random.default_rng(8), 3.0))
    to = tmp_path / "asv"
    assert main(["asv-export", *runs, side, "--to", str(to), "--repo", str(path), "--branch", "main"]) == 0
    out = capsys.readouterr().out
    assert f"note: commit {git(path, 'rev-parse', 'HEAD')[:12]} is not in the first-parent history of the branches" in out
    history = find_drifts(to)
    assert history.off_branch == 1 and history.commits == N_COMMITS
    assert {d.benchmark for d in history.drifts} == {"add.judged_time", "add.time_per_gb"}  # the 3x side run is not a drift


def test_a_detached_checkout_needs_branch(tmp_path, repo, runs, capsys):
    git(repo[0], "checkout", "-q", "--detach", "HEAD")
    assert main(["asv-export", runs[0], "--to", str(tmp_path / "a"), "--repo", str(repo[0])]) == 2
    assert "HEAD is detached; pass --branch" in one_line_error(capsys)
    assert main(["asv-export", runs[0], "--to", str(tmp_path / "a"), "--repo", str(repo[0]), "--branch", "nope"]) == 2
    assert "branch 'nope' is not in" in one_line_error(capsys)
    assert main(["asv-export", runs[0], "--to", str(tmp_path / "a"), "--repo", str(repo[0]), "--branch", "main"]) == 0


def test_a_short_hash_is_resolved_and_a_record_without_commit_takes_commit(tmp_path, repo):
    rng = np.random.default_rng(1)
    path, hashes = repo
    short = write(tmp_path / "short.json", run_of(hashes[1][:7], 2, rng))
    bare = write(tmp_path / "bare.json", run_of(None, 3, rng))
    assert main(["asv-export", short, "--to", str(tmp_path / "a"), "--repo", str(path)]) == 0
    assert main(["asv-export", bare, "--commit", "HEAD~1", "--to", str(tmp_path / "a"), "--repo", str(path)]) == 0
    stored = {load(f).commit_hash for f in (tmp_path / "a" / "results" / MACHINE).glob("*-perfguard.json")}
    assert stored == {hashes[1], hashes[-2]}


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("perfguard: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_record_without_commit_is_one_line_naming_it(tmp_path, repo, capsys):
    bare = write(tmp_path / "bare.json", run_of(None, 1, np.random.default_rng(1)))
    assert main(["asv-export", bare, "--to", str(tmp_path / "out"), "--repo", str(repo[0])]) == 2
    err = one_line_error(capsys)
    assert str(bare) in err and "record has no commit" in err and "--commit" in err
    assert not (tmp_path / "out").exists()


def test_an_unknown_commit_and_a_folder_outside_git_are_one_line_each(tmp_path, repo, capsys):
    unknown = write(tmp_path / "unknown.json", run_of("0123456789abcdef0123456789abcdef01234567", 1, np.random.default_rng(1)))
    assert main(["asv-export", unknown, "--to", str(tmp_path / "out"), "--repo", str(repo[0])]) == 2
    err = one_line_error(capsys)
    assert str(unknown) in err and "not in the git repository" in err
    outside = tmp_path / "plain"
    outside.mkdir()
    assert main(["asv-export", unknown, "--to", str(tmp_path / "out"), "--repo", str(outside)]) == 2
    assert "not a git checkout; pass --repo" in one_line_error(capsys)


def test_a_file_that_is_not_a_record_is_one_line_naming_it(tmp_path, repo, capsys):
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "world"}')
    assert main(["asv-export", str(bad), "--to", str(tmp_path / "out"), "--repo", str(repo[0])]) == 2
    assert str(bad) in one_line_error(capsys)


def test_an_unwritable_folder_is_one_line(tmp_path, repo, runs, capsys, freeze):
    locked = tmp_path / "locked"
    locked.mkdir()
    freeze(locked)  # this process cannot write it, root included (conftest.py)
    assert main(["asv-export", runs[0], "--to", str(locked / "asv"), "--repo", str(repo[0])]) == 2
    assert "choose a writable folder" in one_line_error(capsys)


def test_a_file_in_place_of_the_folder_is_one_line(tmp_path, repo, runs, capsys):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    assert main(["asv-export", runs[0], "--to", str(target), "--repo", str(repo[0])]) == 2
    assert "is not a folder" in one_line_error(capsys)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "results").write_text("a file where results/ goes")
    assert main(["asv-export", runs[0], "--to", str(blocked), "--repo", str(repo[0])]) == 2
    assert "choose a writable folder" in one_line_error(capsys)


def test_history_of_a_folder_without_an_export_is_one_line(tmp_path, capsys):
    assert main(["history", str(tmp_path)]) == 2
    assert "asv.conf.json: no such file" in one_line_error(capsys)


def test_without_asv_history_says_what_to_install_and_perfguard_never_imports_asv(tmp_path):
    code = ("import sys; sys.modules['asv'] = None\n"  # what an interpreter without asv sees on import
            "import perfguard, perfguard.cli, perfguard.export\n"
            "assert 'asv' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            f"sys.exit(perfguard.cli.main(['history', {str(tmp_path)!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr == "perfguard: asv is not installed; pip install asv (or pip install 'perfguard[asv]') to find drifts\n"


# --- records written by `pytest --perfguard` itself --------------------------------------------------

SUITE = """
    import torch
    from perfguard import perf_case

    @perf_case(params={"n": [2**16, 2**20]}, bytes=lambda n: 3 * 4 * n)
    def add(n, device):
        a = torch.randn(n, device=device)
        b = torch.randn_like(a)
        return lambda: a + b
"""


def measured_in_a_checkout(tmp_path: Path, run) -> tuple[Path, RunRecord]:
    """`pytest --perfguard` over SUITE, committed in a fresh repository, run by `run(path, *args)`; the
    record it wrote."""
    path, _ = make_repo(tmp_path / "measured", 1)
    (path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    git(path, "add", "test_suite.py")
    git(path, "-c", "user.name=P", "-c", "user.email=p@example.com", "commit", "-q", "-m", "suite")
    out = run(path, "--perfguard", "--perfguard-budget", "0.2", "test_suite.py")
    assert out.ret == 0, "\n".join(out.outlines + out.errlines)
    record = path / "reports" / "perfguard.json"
    return record, loads_record(record.read_text(), str(record))


def export_in(checkout: Path, record: Path, to: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfguard asv-export` as a person runs it: from the checkout, with the defaults."""
    monkeypatch.chdir(checkout)
    assert main(["asv-export", str(record), "--to", str(to)]) == 0


def test_a_record_of_pytest_perfguard_exports_from_its_checkout_with_the_defaults(tmp_path, run_pytest, monkeypatch):
    record_path, record = measured_in_a_checkout(tmp_path, run_pytest)
    checkout = record_path.parents[1]
    export_in(checkout, record_path, tmp_path / "asv", monkeypatch)
    (device,) = record.devices
    assert record.commit == git(checkout, "rev-parse", "HEAD")
    (stored,) = (tmp_path / "asv" / "results" / device.slug).glob("*-perfguard.json")
    result = load(stored, device.slug)
    assert result.commit_hash == record.commit
    params = [[str(2**16), str(2**20)]]
    medians = [next(r for r in record.results if r.params["n"] == n).judged_time.median_ms / 1e3 for n in (2**16, 2**20)]
    assert result.get_result_value("add.judged_time", params) == pytest.approx(medians, rel=1e-5)
    # On a CPU the profiler counts ATen operators too, and asv reads them back as a benchmark of its own.
    aten = [next(r for r in record.results if r.params["n"] == n).counters.total("aten_ops") for n in (2**16, 2**20)]
    assert aten[0] >= 1 and result.get_result_value("add.aten_ops", params) == aten
    assert json.loads((tmp_path / "asv" / "asv.conf.json").read_text())["branches"] == ["main"]


def run_on_the_gpu(path: Path, *args: str) -> pytest.RunResult:
    """pytest in a new interpreter that sees the GPUs (run_pytest hides them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=path, env=env,
                         capture_output=True, text=True, timeout=300)
    return pytest.RunResult(out.returncode, out.stdout.splitlines(), out.stderr.splitlines(), 0.0)


@pytest.mark.gpu
def test_a_gpu_record_exports_one_machine_per_card_with_its_peak_memory(tmp_path, monkeypatch):
    record_path, record = measured_in_a_checkout(tmp_path, run_on_the_gpu)
    export_in(record_path.parents[1], record_path, tmp_path / "asv", monkeypatch)
    (device,) = record.devices
    assert device.kind == "cuda" and device.uuid.startswith("GPU-")
    machine = f"{device.slug}-{device.uuid[4:12].lower()}"  # the first 8 hex digits of the card's UUID
    results = tmp_path / "asv" / "results"
    assert [p.parent.name for p in results.glob("*/machine.json")] == [machine]
    assert json.loads((results / machine / "machine.json").read_text())["uuid"] == device.uuid
    (stored,) = (results / machine).glob("*-perfguard.json")
    data = json.loads(stored.read_text())
    assert data["commit_hash"] == record.commit and data["requirements"]["cuda"] == device.cuda
    rows = {name: dict(zip(data["result_columns"], row)) for name, row in data["results"].items()}
    # The work counters go to asv too; busy time where the run measured it (the timings it holds).
    expected = {"add.footprint", "add.judged_time", "add.peak_memory", "add.time_per_gb", "add.kernels", "add.syncs",
                "add.aten_ops"}
    assert expected <= set(rows) <= expected | {"add.busy_time"}
    by_n = {r.params["n"]: r for r in record.results}
    assert rows["add.kernels"]["result"] == [by_n[n].counters.total("kernels") for n in (2**16, 2**20)]
    assert ("add.busy_time" in rows) == all("busy_time" in r.timings for r in record.results)
    assert rows["add.peak_memory"]["result"] == [by_n[n].memory.peak_allocated_bytes for n in (2**16, 2**20)]
    assert rows["add.footprint"]["result"] == [by_n[n].memory.footprint_bytes for n in (2**16, 2**20)]
    assert rows["add.peak_memory"]["result"][1] >= 4 * 2**20  # the output of a 2**20 float add
    for value, n in zip(rows["add.time_per_gb"]["result"], (2**16, 2**20)):
        assert value * by_n[n].metrics.gbps == pytest.approx(1, rel=1e-4)  # 1 / GB/s
