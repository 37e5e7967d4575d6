"""`perfguard ab`: a base revision against the working tree, in one job, with real git and real pytest runs.

The repository under test has a src/ layout, so a side finds its own `mylib` only through the
PYTHONPATH perfguard ab builds for it: a base side that imported the working tree's code would see
no regression. Its conftest is tests/fake_clock.py, so every case's time is exact in every round on
any machine under any load: the verdicts below are decided by the code under test, never by load.
The measured comparisons run `perfguard ab` in this process with each round's `python -m pytest`
forked (forked_pytest.py, which puts PYTHONPATH's entries on the path as a new interpreter does);
the run stopped by SIGTERM is the console command, rounds and all, in processes of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfguard import ab, cli
from perfguard.analysis.pooling import pool_case, pool_records
from perfguard.model import CaseResult, DeviceInfo, TimeSummary, RunRecord, Telemetry, Timing, loads_record

SUITE = textwrap.dedent(
    """
    import mylib
    from perfguard import perf_case

    @perf_case
    def nap():
        return mylib.work

    @perf_case(threshold=500)  # decided in the first rounds whatever their spread
    def steady():
        return mylib.steady

    @perf_case  # the same on both sides: decided once its rounds' own spread counts (round 4)
    def steady_tight():
        return mylib.steady
    """
)
LIB = ("import time\n\nDELAY = {delay}\n\n\ndef work():\n    time.sleep(DELAY)\n\n\n"
       "def steady():\n    time.sleep(0.001)\n")




def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=perfguard", "-c", "user.email=perfguard@example.com", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, delay: float) -> None:
    (repo / "src" / "mylib.py").write_text(LIB.format(delay=delay))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"delay {delay}")


@pytest.fixture(scope="module")
def repo(tmp_path_factory, fake_clock) -> Path:
    """A project whose `nap` sleeps for mylib.DELAY: 1 ms at HEAD~1, 5 ms at HEAD, on the fake clock. (Each test leaves the repository as it found it: perfguard ab removes its worktree.)"""
    repo = tmp_path_factory.mktemp("ab") / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_nap.py").write_text(SUITE)
    (repo / "tests" / "conftest.py").write_text(fake_clock)
    git(repo, "init", "-q")
    commit(repo, 0.001)
    commit(repo, 0.005)
    return repo


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list").splitlines() if line.strip()]


@dataclasses.dataclass
class Launched:
    """One process perfguard ab started: its arguments, and the node ids it was given (--perfguard-cases)."""

    args: list[str]
    cwd: Path
    cases: list[str] | None
    wrote: list[str] | None = None  # the perfguard files in its report folder once it ended

    @property
    def folder(self) -> str:  # "base-2/shard-1", "head-1/shard-0"; "collect/base" for a collection
        report = next((a for a in self.args if a.startswith("--perfguard-report=")), "")
        return "/".join(Path(report.partition("=")[2]).parts[-2:]) if report else "collect"


def ab_forked(repo: Path, inner_args, forked, *args: str) -> tuple[subprocess.CompletedProcess[str], list[Launched]]:
    """`perfguard ab ARGS -- tests` through the console command's main, each process it starts forked
    rather than a new interpreter importing torch (seconds)."""
    launched: list[Launched] = []

    def start(cmd, cwd, env, out, err):  # perfguard.ab.rounds.launch, as perfguard ab calls it
        assert cmd[:3] == [sys.executable, "-m", "pytest"], cmd
        listing = next((a.partition("=")[2] for a in cmd if a.startswith("--perfguard-cases=")), None)
        entry = Launched(cmd[3:], cwd, Path(listing).read_text().split() if listing else None)
        launched.append(entry)
        process = forked.start(cwd, cmd[3:], {k: v for k, v in env.items() if not k.startswith("PYTEST_")}, out, err)

        def poll():  # the round's folder is gone when ab ends: what it holds is read as the process ends
            status = forked.status(process)  # read once: a process that ended between two reads went unlisted (CI, once)
            if status is not None and entry.wrote is None:
                entry.wrote = sorted(f.name for f in Path(out).parent.iterdir() if f.name.startswith("perfguard"))
            return status
        return poll

    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        mp.chdir(repo)
        mp.setenv("CUDA_VISIBLE_DEVICES", "")  # the CPU path on any machine
        mp.setattr(ab.rounds, "launch", start)
        mp.setattr(ab.rounds, "POLL_S", 0.01)  # a round's end seen within 10 ms, not 50: a second in all
        status = cli.main(["ab", "--base", "HEAD~1", *args, "--", *inner_args, "--perfguard-budget", "0.05", "tests"])
    return subprocess.CompletedProcess(["perfguard", "ab"], status, stdout.getvalue(), stderr.getvalue()), launched


def statuses(repo: Path) -> dict[str, str]:
    head = loads_record((repo / "reports" / "perfguard.json").read_text(), "head")
    return {v.case_id: v.status for v in head.verdicts}


@pytest.fixture(scope="module")
def on_two_shards(repo, inner_args, forked) -> tuple[subprocess.CompletedProcess[str], list[Launched], dict[str, str]]:
    """`perfguard ab --base HEAD~1 -n 2`: three rounds of every case, then a fourth of the undecided one."""
    out, launched = ab_forked(repo, inner_args, forked, "-n", "2")
    return out, launched, statuses(repo)


def test_a_case_that_got_slower_since_the_base_is_reported_regressed(repo, on_two_shards):
    out, _, verdicts = on_two_shards
    assert out.returncode == 1, out.stdout + out.stderr
    assert verdicts["nap"] == "regressed"
    assert "nap: host_time regressed" in out.stdout and "against base HEAD~1" in out.stdout
    head = loads_record((repo / "reports" / "perfguard.json").read_text(), "head")
    base = loads_record((repo / "reports" / "perfguard-base.json").read_text(), "base")
    heads, bases = ({r.id: r for r in record.results} for record in (head, base))
    assert heads["nap"].judged_time.median_ms > 1.2 * bases["nap"].judged_time.median_ms
    assert head.options["ab"]["rounds"] == 4 and head.options["ab"]["gpus"] == 2
    assert (repo / "reports" / "perfguard.html").is_file() and (repo / "reports" / "perfguard.md").is_file()
    assert len(worktrees(repo)) == 1  # the base's worktree is gone


def test_unchanged_cases_are_same_once_their_rounds_can_tell(on_two_shards):
    out, _, verdicts = on_two_shards
    assert verdicts["steady"] == "same" and verdicts["steady_tight"] == "same", out.stdout
    assert "steady_tight: host_time" not in out.stdout  # a `same` verdict gets no line of its own


def test_rounds_alternate_sides_and_only_the_undecided_case_runs_again(on_two_shards):
    out, launched, _ = on_two_shards
    rounds = [line.split()[1:3] for line in out.stdout.splitlines() if line.startswith("round ")]
    assert rounds == [["1", "base"], ["1", "head"], ["2", "head"], ["2", "base"], ["3", "base"], ["3", "head"],
                      ["4", "head"], ["4", "base"]]
    fourth = [p for p in launched if p.folder.split("/")[0] in ("base-4", "head-4")]
    assert len(fourth) == 2 and all(p.cases == ["tests/test_nap.py::steady_tight"] for p in fourth)
    assert "1 case(s) undecided after 3 rounds" in out.stdout


def test_each_test_stays_on_one_shard_for_every_round_of_both_sides(on_two_shards):
    _, launched, _ = on_two_shards
    shard_of: dict[str, set[str]] = {}
    measured = [p for p in launched if p.folder != "collect"]
    for p in measured:
        for nodeid in p.cases or ():
            shard_of.setdefault(nodeid, set()).add(p.folder.split("/")[1])
    assert set(shard_of) == {f"tests/test_nap.py::{name}" for name in ("nap", "steady", "steady_tight")}
    assert all(len(shards) == 1 for shards in shard_of.values()), shard_of
    assert {s for shards in shard_of.values() for s in shards} == {"shard-0", "shard-1"}  # both shards used
    assert len([p for p in launched if p.folder == "collect"]) == 2  # one collection a side


def test_a_round_writes_its_record_alone_and_ab_the_reports_of_the_pooled_head(repo, on_two_shards):
    _, launched, _ = on_two_shards
    rounds = [p for p in launched if p.folder != "collect"]
    assert rounds and [(p.folder, p.wrote) for p in rounds if p.wrote != ["perfguard.json"]] == []
    assert {"perfguard.html", "perfguard.md"} <= {f.name for f in (repo / "reports").iterdir()}


def test_a_budget_spent_leaves_the_undecided_cases_inconclusive_not_same(repo, inner_args, forked):
    """Two rounds (too few for any spread but the floor's) and no time for a third: nothing is decided,
    and --fail-inconclusive makes that fail the run."""
    out, launched = ab_forked(repo, inner_args, forked, "--rounds", "2", "--budget", "0.001", "--fail-inconclusive")
    assert out.returncode == 1, out.stdout + out.stderr
    assert set(statuses(repo).values()) == {"inconclusive"}
    assert len(launched) == 4  # two rounds a side, no third
    assert "would overrun the budget" in out.stdout and "3 inconclusive" in out.stdout
    assert "steady_tight: host_time inconclusive" in out.stdout and "--budget" in out.stdout


def test_a_round_that_measures_nothing_stops_with_one_line_and_removes_the_worktree(repo, inner_args, forked):
    out, _ = ab_forked(repo, (*inner_args, "--ignore=tests/test_nap.py"), forked)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("perfguard: base HEAD~1 (")
    assert "pytest exited 5" in out.stderr
    assert len(worktrees(repo)) == 1


def test_an_unknown_revision_is_one_line(repo, monkeypatch, capsys):
    monkeypatch.chdir(repo)
    assert cli.main(["ab", "--base", "no-such-branch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfguard: --base no-such-branch: no such commit") and "\n" not in err
    assert len(worktrees(repo)) == 1


def test_outside_a_git_repository_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # don't find a repository above
    assert cli.main(["ab", "--base", "HEAD"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not inside a git repository" in err and "\n" not in err


def test_rounds_alternate_which_side_goes_first():
    assert ab.schedule(1) == [("base", 0), ("head", 0)]
    assert ab.schedule(3) == [("base", 0), ("head", 0), ("head", 1), ("base", 1), ("base", 2), ("head", 2)]


def test_each_side_imports_its_own_tree_first(tmp_path):
    root, tree, shim = tmp_path / "repo", tmp_path / "wt", tmp_path / "shim"
    for folder in (root / "src", root / "lib", tree / "src", tmp_path / "elsewhere"):
        folder.mkdir(parents=True)
    inherited = os.pathsep.join([str(root / "lib"), str(tmp_path / "elsewhere")])
    assert ab.import_path(tree, root, shim, inherited).split(os.pathsep) == [
        str(shim), str(tree / "src"), str(tree), str(tree / "lib"), str(tmp_path / "elsewhere"),
    ]
    # The working tree itself: the same rule, nothing moves.
    assert ab.import_path(root, root, shim, None).split(os.pathsep) == [str(shim), str(root / "src"), str(root)]


# --- pooling the rounds of one side ----------------------------------------------------------


CPU = DeviceInfo(kind="cpu", name="a cpu", slug="cpu-a")


def result(samples: list[float], **telemetry: object) -> CaseResult:
    lat = TimeSummary(median_ms=0, mean_ms=0, min_ms=0, max_ms=0, p10_ms=0, p90_ms=0, iqr_ms=0, ci_low_ms=0,
                  ci_high_ms=0, n=len(samples), stop_reason="budget")
    return CaseResult(id="c", name="c", status="ok", device="cpu-a", bytes=1e6, timings={"gpu_time": Timing(lat, tuple(samples))},
                      telemetry=Telemetry(**telemetry), wall_s=0.5)


def test_a_side_pools_its_rounds_samples_and_recomputes_the_figures():
    pooled = pool_case([result([1.0, 1.0, 1.0]), result([3.0, 3.0], throttled=True, throttle_reasons=("hw_slowdown",))], CPU)
    assert pooled.samples_ms == (1.0, 1.0, 1.0, 3.0, 3.0)
    assert (pooled.judged_time.median_ms, pooled.judged_time.n, pooled.judged_time.stop_reason) == (1.0, 5, "budget")
    assert pooled.metrics.gbps == pytest.approx(1e6 / 1e-3 / 1e9)  # from the pooled median
    assert pooled.telemetry.throttled and pooled.telemetry.throttle_reasons == ("hw_slowdown",)
    assert pooled.wall_s == 1.0


def test_a_round_that_errored_is_left_out_of_the_pool():
    error = dataclasses.replace(result([]), status="error", timings={}, error="c: setup raised")
    records = [RunRecord(created_at=str(i), perfguard_version="0", devices=(CPU,), results=(r,))
               for i, r in enumerate([result([2.0] * 4), error])]
    pooled = pool_records(records)
    assert pooled.results[0].samples_ms == (2.0,) * 4 and pooled.options["rounds"] == 2
    assert pool_case([error], CPU) is error  # no round measured it: the error stands



def test_a_side_pools_its_rounds_callers_times_too():
    def with_caller(samples):
        r = result([1.0] * 3)
        return dataclasses.replace(r, timings={**r.timings, "caller_time": Timing(r.judged_time, samples)})

    pooled = pool_case([with_caller((2.0,) * 3), with_caller((4.0,) * 5)], CPU)
    caller = pooled.timings["caller_time"]
    assert caller.samples_ms == (2.0,) * 3 + (4.0,) * 5 and caller.summary.median_ms == 4.0
    assert pooled.metrics.caller_ms == 4.0  # the derived figures read the pooled caller's time


def test_an_intended_regression_is_accepted_by_the_printed_command_and_ab_then_passes(repo, inner_args, forked):
    """Issue 28: ab prints one command; run as printed, it writes the acceptance file a reviewer sees, and
    the next ab passes the case as `accepted` (and no more than the accepted figure). An acceptance file
    that cannot be read accepts nothing: the rounds stand, and one line says why."""
    import re
    import shlex

    accepted = repo / "baselines" / "accepted-changes.json"
    accepted.parent.mkdir(exist_ok=True)
    accepted.write_text("{truncated")
    try:
        out, _ = ab_forked(repo, inner_args, forked)
        assert out.returncode == 1 and statuses(repo)["nap"] == "regressed", out.stdout
        assert f"perfguard ab: not accepted: {accepted}: " in out.stdout
        accepted.unlink()
        match = re.search(r"^perfguard: to accept these changes in this pull request: `(?P<command>.+)`$", out.stdout, re.M)
        assert match, out.stdout
        assert match["command"] == "perfguard pr accept reports/perfguard.json --case nap"
        argv = shlex.split(match["command"])
        done = subprocess.run([sys.executable, "-m", "perfguard.cli", *argv[1:]], cwd=repo, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "accepted 'nap' host_time: " in done.stdout and accepted.is_file()
        written = json.loads(accepted.read_text())
        entry = written["changes"][0]
        assert (entry["case_id"], entry["metric"], entry["reason"]) == ("nap", "gpu_time", "intended (perfguard pr accept)")
        # An entry for a case the head does not run accepts nothing, and is named (issue 46, 3).
        written["changes"].append({**entry, "case_id": "ghost"})
        accepted.write_text(json.dumps(written))
        again, _ = ab_forked(repo, inner_args, forked)
        assert again.returncode == 0, again.stdout + again.stderr
        assert statuses(repo)["nap"] == "accepted"
        assert "nap: host_time accepted: " in again.stdout
        assert "; accepted up to " in again.stdout and "by baselines/accepted-changes.json: 'intended (perfguard pr accept)'" in again.stdout
        assert "to accept these changes" not in again.stdout
        assert (f"perfguard ab: baselines/accepted-changes.json: 1 entry for a case this run did not measure (removed, "
                f"renamed, skipped or not selected), accepting nothing: gpu_time of 'ghost' on {entry['device']}; remove "
                "the entries of cases that are gone; --strict fails the run on them") in again.stdout.splitlines()
    finally:
        accepted.unlink(missing_ok=True)


def test_an_accept_that_names_no_case_or_a_case_that_did_not_regress_writes_nothing(repo, on_two_shards, monkeypatch, capsys):
    # The console command's own main, in this process (the printed command, run as printed: above).
    monkeypatch.chdir(repo)
    for args, says in ((["reports/perfguard.json"], "name the case(s) whose change is intended with --case ID"),
                       (["reports/perfguard.json", "--case", "steady"], "'steady': nothing regressed in"),
                       (["reports/perfguard.json", "--case", "nap", "--metric", "kernels"], "'nap': 'kernels' did not regress")):
        status = cli.main(["pr", "accept", *args])
        err = capsys.readouterr().err
        assert status == 2 and says in err and len(err.splitlines()) == 1, err
        assert not (repo / "baselines" / "accepted-changes.json").exists()


def test_a_head_that_skips_its_own_regressed_case_fails_a_strict_ab(repo, inner_args, forked):
    """Issue 30, item 14: the head made `nap` 5x slower and skipped it; the base's case has nothing to
    be judged against. Shown either way; --strict (the workflow's) fails the run on it."""
    suite = repo / "tests" / "test_nap.py"
    before = suite.read_text()
    suite.write_text(before.replace("@perf_case\ndef nap", "@pytest.mark.skip(reason='later')\n@perf_case\ndef nap")
                     .replace("import mylib", "import mylib\nimport pytest"))
    try:
        loose, _ = ab_forked(repo, inner_args, forked, "--rounds", "2", "--max-rounds", "2")
        strict, _ = ab_forked(repo, inner_args, forked, "--rounds", "2", "--max-rounds", "2", "--strict")
    finally:
        suite.write_text(before)
    said = ("1 case(s) ran on the base but not on the head (skipped, deselected, renamed or removed there): not judged: "
            "nap")
    assert loose.returncode == 0, loose.stdout + loose.stderr
    assert f"perfguard ab: {said}; --strict fails the run on them" in loose.stdout.splitlines()
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert f"perfguard ab: strict: {said}; this fails the run" in strict.stdout.splitlines()
    assert statuses(repo)["nap"] == "missing"


def test_sigterm_stops_ab_with_one_line_and_leaves_no_worktree(repo, inner_args):
    """Issue 30, item 17: the console command, its rounds real processes; SIGTERM once the base's
    worktree is registered (while the first round runs)."""
    import signal
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    cmd = [sys.executable, "-m", "perfguard.cli", "ab", "--base", "HEAD~1", "--",
           *inner_args, "--perfguard-budget", "0.05", "tests"]
    assert len(worktrees(repo)) == 1, worktrees(repo)  # else the wait below ends before ab has begun
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while len(worktrees(repo)) < 2 and proc.poll() is None:
            time.sleep(0.02)
        registered = [line.split()[0] for line in worktrees(repo)[1:]]
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stdout + stderr
    assert stderr.strip().splitlines()[-1] == ("perfguard ab: terminated (SIGTERM); its pytest runs were stopped and the "
                                               "base worktree was removed"), stdout + stderr
    assert len(worktrees(repo)) == 1 and registered and not Path(registered[0]).parent.exists(), (
        worktrees(repo), registered, stdout + stderr)


def test_ab_removes_the_worktrees_an_ab_that_died_left_and_keeps_a_running_ones(repo, monkeypatch, capsys):
    """Issue 30, item 17: SIGKILL cannot be caught; the next ab prunes what such a run left (its folder
    gone, or its owner dead), and leaves a running ab's worktree alone."""
    import tempfile

    from perfguard.ab import stale

    def left(owner: int | None, remove_folder: bool = False) -> Path:
        folder = Path(tempfile.mkdtemp(prefix=stale.PREFIX))
        if owner is not None:
            (folder / stale.OWNER).write_text(f"{owner}\n")
        git(repo, "worktree", "add", "--detach", str(folder / "base"), "HEAD~1")
        if remove_folder:
            subprocess.run(["rm", "-rf", str(folder)], check=True)
        return folder

    dead = subprocess.Popen(["true"])
    dead.wait()  # its id names no process now
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        killed, gone, alive = left(dead.pid), left(None, remove_folder=True), left(running.pid)
        assert len(worktrees(repo)) == 4
        monkeypatch.chdir(repo)
        assert cli.main(["ab", "--base", "no-such-branch"]) == 2
        out = capsys.readouterr().out
        assert f"perfguard ab: removed the worktree {killed / 'base'}, which an ab that is no longer running left behind" \
            in out.splitlines()
        assert not killed.exists() and not gone.exists() and (alive / "base").is_dir()
        assert [line.split()[0] for line in worktrees(repo)[1:]] == [str((alive / "base").resolve())]
    finally:
        running.kill()
        running.wait()
        git(repo, "worktree", "remove", "--force", str(alive / "base"))
        subprocess.run(["rm", "-rf", str(alive)], check=True)


def test_ab_never_removes_the_repository_it_runs_in_nor_a_worktree_it_did_not_make():
    """A project cloned into a folder of ab's own temporary prefix (benchmarks/ab_sensitivity.py's
    `/tmp/perfguard-ab-repo-…/project`) was deleted by the next ab as a leftover of a dead one, and its
    `--base HEAD` then named no commit. Only an ab's `base`, in a folder with no running owner, goes."""
    import tempfile

    from perfguard.ab import stale

    home = Path(tempfile.mkdtemp(prefix=stale.PREFIX))  # no owner.pid: as a dead ab's folder would be
    try:
        project = home / "project"
        project.mkdir()
        git(project, "init", "-q")
        (project / "f.txt").write_text("1\n")
        git(project, "add", "f.txt")
        git(project, "commit", "-q", "-m", "one")
        mine = home / "mine"  # the user's own worktree beside it, not an ab's `base`
        git(project, "worktree", "add", "-q", "--detach", str(mine), "HEAD")
        left = Path(tempfile.mkdtemp(prefix=stale.PREFIX))  # a dead ab's
        git(project, "worktree", "add", "-q", "--detach", str(left / stale.BASE), "HEAD")
        assert stale.prune(project) == [(left / stale.BASE).resolve()]
        assert (project / "f.txt").is_file() and (mine / "f.txt").is_file() and not left.exists()
        assert [Path(line.split()[0]) for line in worktrees(project)] == [project.resolve(), mine.resolve()]
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=True)


def test_a_head_whose_case_calls_os_exit_0_stops_ab_with_one_line(repo, inner_args, forked):
    """Issue 30, item 7: the round's pytest exits 0 with its record `unfinished`; ab refuses it."""
    suite = repo / "tests" / "test_nap.py"
    before = suite.read_text()
    suite.write_text(before.replace("def nap():\n    return mylib.work", "def nap():\n    import os\n    os._exit(0)"))
    try:
        out, _ = ab_forked(repo, inner_args, forked, "--rounds", "2", "--max-rounds", "2")
    finally:
        suite.write_text(before)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        "perfguard: working tree, round 1: pytest exited 0 in ") and "with its perfguard record unfinished" in out.stderr
    assert len(worktrees(repo)) == 1
