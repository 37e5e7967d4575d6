"""`perfguard ab`: a base revision against the working tree, in one job, with real git and real pytest runs.

The repository under test has a src/ layout, so a side finds its own `mylib` only through the
PYTHONPATH perfguard ab builds for it: a base side that imported the working tree's code would see
no regression. The measured comparison runs `perfguard ab` in this process with each round's
`python -m pytest` forked (forked_pytest.py, which puts PYTHONPATH's entries on the path as a new
interpreter does); the run that stops at its first round is the console command, rounds and all, in
processes of their own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfguard import ab, cli
from perfguard.analysis.pooling import pool_case, pool_records
from perfguard.model import CaseResult, DeviceInfo, Latency, RunRecord, Telemetry, Timing, loads_record

SUITE = textwrap.dedent(
    """
    import mylib
    from perfguard import perf_case

    @perf_case
    def nap():
        return mylib.work

    @perf_case(threshold=500)  # the same code on both sides: no load makes it 6x slower on one
    def steady():
        return mylib.steady
    """
)
LIB = ("import time\n\nDELAY = {delay}\n\n\ndef work():\n    if DELAY:\n        time.sleep(DELAY)\n\n\n"
       "def steady():\n    time.sleep(0.001)\n")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=perfguard", "-c", "user.email=perfguard@example.com", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, delay: float) -> None:
    (repo / "src" / "mylib.py").write_text(LIB.format(delay=delay))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"delay {delay}")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A project whose only case sleeps for mylib.DELAY: not at all at HEAD~1, 5 ms at HEAD. A thousandfold
    slowdown: no load on this machine makes the base side as slow as the head's sleep. (Each test
    leaves the repository as it found it: perfguard ab removes its worktree.)"""
    repo = tmp_path_factory.mktemp("ab") / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_nap.py").write_text(SUITE)
    git(repo, "init", "-q")
    commit(repo, 0)
    commit(repo, 0.005)
    return repo


def perfguard_ab(repo: Path, inner_args: tuple[str, ...], *args: str, pytest_args: tuple[str, ...] = ()
                 ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU path on any machine
    cmd = [sys.executable, "-m", "perfguard.cli", "ab", *args,
           "--", *inner_args, "--perfguard-budget", "0.05", *pytest_args, "tests"]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def against_the_parent(repo, inner_args, forked, tmp_path_factory) -> subprocess.CompletedProcess[str]:
    """`perfguard ab --base HEAD~1`, one round a side, each round forked rather than a new interpreter
    importing torch (seconds). Which side goes first in later rounds, and how a side's rounds pool,
    are tested below on the schedule and on records."""
    outputs = tmp_path_factory.mktemp("ab-rounds")
    rounds = itertools.count()
    real_run = subprocess.run

    def run(cmd, *args, **kwargs):  # subprocess.run, as perfguard ab calls it for a round
        if cmd[:3] != [sys.executable, "-m", "pytest"]:
            return real_run(cmd, *args, **kwargs)  # git
        assert kwargs["capture_output"] and kwargs["text"], kwargs
        env = {k: v for k, v in kwargs["env"].items() if not k.startswith("PYTEST_")}
        n = next(rounds)
        status, out, err = forked.run(kwargs["cwd"], cmd[3:], env, outputs / f"{n}.out", outputs / f"{n}.err", 300)
        return subprocess.CompletedProcess(cmd, status, "".join(f"{line}\n" for line in out), "".join(f"{line}\n" for line in err))

    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        mp.chdir(repo)
        mp.setenv("CUDA_VISIBLE_DEVICES", "")  # the CPU path on any machine
        mp.setattr(ab.subprocess, "run", run)
        status = cli.main(["ab", "--base", "HEAD~1", "--rounds", "1", "--", *inner_args, "--perfguard-budget", "0.05", "tests"])
    assert next(rounds) == 2  # both rounds were forked
    return subprocess.CompletedProcess(["perfguard", "ab"], status, stdout.getvalue(), stderr.getvalue())


def test_a_case_that_got_slower_since_the_base_is_reported_regressed(repo, against_the_parent):
    out = against_the_parent
    assert out.returncode == 1, out.stdout + out.stderr
    assert "nap: latency regressed" in out.stdout and "against base HEAD~1" in out.stdout
    rounds = [line.split()[2] for line in out.stdout.splitlines() if line.startswith("round ")]
    assert rounds == ["base", "head"]
    head = loads_record((repo / "reports" / "perfguard.json").read_text(), "head")
    base = loads_record((repo / "reports" / "perfguard-base.json").read_text(), "base")
    assert {v.case_id: v.status for v in head.verdicts}["nap"] == "regressed"
    assert head.options["rounds"] == base.options["rounds"] == 1
    heads, bases = ({r.id: r for r in record.results} for record in (head, base))
    assert heads["nap"].latency.median_ms > 1.2 * bases["nap"].latency.median_ms
    assert (repo / "reports" / "perfguard.html").is_file() and (repo / "reports" / "perfguard.md").is_file()
    assert len(worktrees(repo)) == 1  # the base's worktree is gone


def test_a_case_that_did_not_change_passes(repo, against_the_parent):
    head = loads_record((repo / "reports" / "perfguard.json").read_text(), "head")
    (steady,) = [v for v in head.verdicts if v.case_id == "steady"]
    assert steady.status != "regressed" and steady.threshold_pct == 500
    assert "steady: latency regressed" not in against_the_parent.stdout


@pytest.mark.parametrize(("statuses", "code"), [
    ({}, 0), ({"same": 3, "new": 1, "missing": 1}, 0), ({"unstable": 1, "improved": 2}, 0), ({"regressed": 1, "same": 5}, 1),
])
def test_ab_exits_1_when_a_case_regressed_and_0_otherwise(statuses, code):
    from perfguard.analysis.verdict import STATUSES

    assert ab.exit_status({**dict.fromkeys(STATUSES, 0), **statuses}) == code


def test_a_round_that_measures_nothing_stops_with_one_line_and_removes_the_worktree(repo, inner_args):
    out = perfguard_ab(repo, inner_args, "--base", "HEAD~1", pytest_args=("--ignore=tests/test_nap.py",))
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
    lat = Latency(median_ms=0, mean_ms=0, min_ms=0, max_ms=0, p10_ms=0, p90_ms=0, iqr_ms=0, ci_low_ms=0,
                  ci_high_ms=0, n=len(samples), stop_reason="budget")
    return CaseResult(id="c", name="c", status="ok", device="cpu-a", bytes=1e6, timings={"latency": Timing(lat, tuple(samples))},
                      telemetry=Telemetry(**telemetry), wall_s=0.5)


def test_a_side_pools_its_rounds_samples_and_recomputes_the_figures():
    pooled = pool_case([result([1.0, 1.0, 1.0]), result([3.0, 3.0], throttled=True, throttle_reasons=("hw_slowdown",))], CPU)
    assert pooled.samples_ms == (1.0, 1.0, 1.0, 3.0, 3.0)
    assert (pooled.latency.median_ms, pooled.latency.n, pooled.latency.stop_reason) == (1.0, 5, "budget")
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
        return dataclasses.replace(r, timings={**r.timings, "caller_latency": Timing(r.latency, samples)})

    pooled = pool_case([with_caller((2.0,) * 3), with_caller((4.0,) * 5)], CPU)
    caller = pooled.timings["caller_latency"]
    assert caller.samples_ms == (2.0,) * 3 + (4.0,) * 5 and caller.summary.median_ms == 4.0
    assert pooled.metrics.eager_latency_ms == 4.0  # the derived figures read the pooled caller's time
