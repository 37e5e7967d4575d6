"""The gate cannot be switched off without a failure: an update that was interrupted, could not be
written, or would have replaced a linked baseline leaves the baseline as the user expects and says so.

End-to-end runs are real pytest runs in processes of their own (`run_pytest`); the file-level cases
call the store.
"""

from __future__ import annotations

import errno
import os
import textwrap

import pytest

from perfguard import store
from perfguard.errors import BaselineError
from perfguard.model import CaseResult, DeviceInfo, TimeSummary, Timing, loads_record

NAP = "import time\nfrom perfguard import perf_case\n\n@perf_case\ndef nap(device):\n    return lambda: time.sleep(0.001)\n"

CTRL_C_SUITE = """
    import os
    import signal
    import time

    from perfguard import perf_case

    @perf_case
    def finished(device):
        return lambda: time.sleep(0.001)

    @perf_case
    def pressed_ctrl_c(device):
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does: SIGINT to pytest, in the middle of a case
        return lambda: None

    @perf_case
    def never_ran(device):
        return lambda: None
"""


def test_ctrl_c_during_an_update_writes_no_baseline_and_a_record_that_says_interrupted(tmp_path, run_pytest):
    from perfguard.measure.device import detect

    baselines = tmp_path / "baselines"
    path = store.update(baselines, detect("cpu"), [], commit="earlier", recorded_at="earlier")  # a baseline of no case
    before = path.read_bytes()
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(CTRL_C_SUITE))
    result = run_pytest(tmp_path, "--perfguard-update", "--perfguard-budget=0.01")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert path.read_bytes() == before
    problems = [line for line in result.outlines if line.startswith("perfguard: interrupted")]
    assert problems == ["perfguard: interrupted: no baseline written (1 case(s) had finished); run --perfguard-update again"]
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert record.status == "interrupted"
    assert [r.id for r in record.results] == ["finished"]
    assert [(v.case_id, v.status) for v in record.verdicts] == [("finished", "new")]  # the rest is not "missing"
    result.stdout.fnmatch_lines(["run interrupted: the record holds the 1 case(s) that finished before it"])


@pytest.fixture
def read_only(tmp_path, freeze):
    """A folder this process cannot write (conftest.py's `freeze`)."""
    folder = tmp_path / "frozen"
    folder.mkdir()
    return freeze(folder)


def test_a_baseline_that_cannot_be_written_fails_the_run_with_one_line_and_keeps_the_record(tmp_path, run_pytest, read_only):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_nap.py").write_text(NAP)
    result = run_pytest(suite, "--perfguard-update", "--perfguard-budget=0.01", f"--perfguard-baselines={read_only}")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (problem,) = [line for line in result.outlines if line.startswith(f"perfguard: {read_only}")]
    assert problem.startswith(f"perfguard: {read_only}/cpu-") and ".json: cannot update the baseline (" in problem
    assert problem.endswith("; choose a writable --perfguard-baselines folder; this run fails until its baseline is written")
    assert list(read_only.iterdir()) == []
    record = loads_record((suite / "reports" / "perfguard.json").read_text(), "record")
    assert [r.id for r in record.results] == ["nap"]  # the figures are kept: `perfguard baseline accept` can take them


DEVICE = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")
LATENCY = TimeSummary(median_ms=1.0, mean_ms=1.0, min_ms=0.9, max_ms=1.1, p10_ms=0.95, p90_ms=1.05, iqr_ms=0.05,
                  ci_low_ms=0.99, ci_high_ms=1.01, n=10, stop_reason="converged")


def result(case_id: str) -> CaseResult:
    return CaseResult(id=case_id, name=case_id, status="ok", device=DEVICE.slug, timings={"gpu_time": Timing(LATENCY, (1.0,) * 10)})


def test_a_full_disk_is_one_line_naming_the_file_and_the_old_baseline_stands(tmp_path, monkeypatch):
    path = store.update(tmp_path, DEVICE, [result("a")], commit="c1", recorded_at="2026-11-29T12:00:00+00:00")
    before = path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # the text is written; flushing it to disk finds no room
    with pytest.raises(BaselineError) as info:
        store.update(tmp_path, DEVICE, [result("b")], commit="c2", recorded_at="2026-11-29T12:01:00+00:00")
    assert str(info.value) == f"cannot write {path} (No space left on device); choose a writable folder"
    assert path.read_bytes() == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_linked_baseline_is_updated_where_it_lives_and_stays_a_link(tmp_path):
    (tmp_path / ".git").mkdir()  # tmp_path is the repository: its links are followed within it
    shared = tmp_path / "shared" / "nvidia-h200.json"  # e.g. one file that two baseline folders of the repository share
    store.update(shared.parent, DEVICE, [result("a")], commit="c1", recorded_at="2026-11-29T12:00:00+00:00")
    link = tmp_path / "baselines" / "nvidia-h200.json"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(shared, link.parent))

    assert store.update(link.parent, DEVICE, [result("b")], commit="c2", recorded_at="2026-11-29T12:01:00+00:00") == link
    assert link.is_symlink() and link.resolve() == shared
    assert sorted(store.load_file(shared).cases) == ["a", "b"]  # the target holds the update, not a copy beside it
    assert sorted(p.name for p in link.parent.iterdir()) == ["nvidia-h200.json"]
    # Two links to one file share the target's lock (beside the target), deleted again after the write.
    assert store.baselines._lock_of(link) == shared.parent / "nvidia-h200.json.lock"
    assert sorted(p.name for p in shared.parent.iterdir()) == ["nvidia-h200.json"]


def test_a_baseline_linking_out_of_the_repository_is_refused_in_one_line_and_its_target_kept(tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "elsewhere" / "victim.json"
    (repo / ".git").mkdir(parents=True)
    outside.parent.mkdir()
    outside.write_text("the user's own file\n")
    link = repo / "baselines" / "nvidia-h200.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(BaselineError) as info:
        store.update(link.parent, DEVICE, [result("a")], commit="c1", recorded_at="2026-11-29T12:00:00+00:00")
    assert str(info.value) == (f"{link} is a symbolic link to {outside}, outside {repo}; perfguard writes nothing "
                               "through it: remove the link, or make it a plain file")
    assert outside.read_text() == "the user's own file\n" and sorted(p.name for p in outside.parent.iterdir()) == ["victim.json"]


def test_a_dangling_lock_link_is_refused_and_its_target_never_made(tmp_path):
    target = tmp_path / "elsewhere" / "made-by-the-lock"
    target.parent.mkdir()
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "nvidia-h200.json.lock").symlink_to(target)
    with pytest.raises(BaselineError) as info:
        store.update(tmp_path / "baselines", DEVICE, [result("a")], commit="c1", recorded_at="2026-11-29T12:00:00+00:00")
    assert "nvidia-h200.json.lock is a symbolic link, which a lock file never is; remove it" in str(info.value)
    assert not target.exists() and not (tmp_path / "baselines" / "nvidia-h200.json").exists()


def test_a_report_linking_out_of_its_folder_is_refused_and_its_target_kept(tmp_path, run_pytest):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    suite = tmp_path / "suite"
    (suite / "reports").mkdir(parents=True)
    (suite / "test_nap.py").write_text(NAP)
    (suite / "reports" / "perfguard.json").symlink_to(victim)
    result = run_pytest(suite, "--perfguard", "--perfguard-budget=0.01")
    assert victim.read_text() == "keep me\n"
    record = suite / "reports" / "perfguard.json"
    refusal = f"perfguard: {record} is a symbolic link to {victim}, outside {suite / 'reports'}; perfguard writes nothing through it"
    assert [line for line in result.outlines if line.startswith(refusal)], result.outlines
    assert (suite / "reports" / "perfguard.html").is_file()  # the other files are written as usual


# Ctrl-C after the last case: the inner run's conftest.py presses it (SIGINT to its own process) at one
# point of the run's end, by wrapping the function perfguard calls there.
PRESS_AT = """
import os
import signal

import perfguard.plugin.recorder as recorder
import perfguard.report.html as html
import perfguard.report.terminal as terminal
from perfguard import store


def pressing(module, name):
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does
        return real(*args, **kwargs)

    setattr(module, name, wrapper)


pressing(*{
    "before the baseline": (recorder, "_git_commit"),
    "during the baseline": (store, "update"),
    "during the reports": (html, "render_html"),
    "during the summary": (terminal, "summary"),
}[os.environ["PRESS_AT"]])
"""
BASELINE_LINES = {
    "untouched": "perfguard: interrupted at the run's end: no baseline written, the old one is untouched; "
                 "run --perfguard-update again; the record says interrupted",
    "written": "perfguard: interrupted at the run's end: the baseline was written in full ({path}); the record says interrupted",
    "not asked": "perfguard: interrupted at the run's end: the baseline is untouched (no --perfguard-update); "
                 "the record says interrupted",
}


@pytest.mark.parametrize(("point", "update", "baseline"), [
    ("before the baseline", True, "untouched"),
    ("during the baseline", True, "written"),
    ("during the reports", True, "written"),
    ("during the summary", True, "written"),
    ("during the reports", False, "not asked"),
])
def test_ctrl_c_at_the_runs_end_is_one_line_exit_2_and_the_baseline_whole_or_untouched(tmp_path, run_pytest, point,
                                                                                        update, baseline):
    from perfguard.measure.device import detect

    path = store.update(tmp_path / "baselines", detect("cpu"), [], commit="earlier", recorded_at="earlier")
    before = path.read_bytes()
    (tmp_path / "test_nap.py").write_text(NAP)
    (tmp_path / "conftest.py").write_text(PRESS_AT)
    args = ["--perfguard-update" if update else "--perfguard", "--perfguard-budget=0.01"]
    result = run_pytest(tmp_path, *args, env={"PRESS_AT": point})
    out = result.outlines + result.errlines
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert not [line for line in out if "Traceback" in line or "KeyboardInterrupt" in line], out
    expected = BASELINE_LINES[baseline].format(path=path)
    assert [line for line in out if line.startswith("perfguard: interrupted")] == [expected]
    if baseline == "written":
        assert sorted(store.load_file(path).cases) == ["nap"]
    else:
        assert path.read_bytes() == before
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert record.status == "interrupted" and [r.id for r in record.results] == ["nap"]


def test_a_baselines_folder_that_is_a_file_is_refused_before_any_case_runs(tmp_path, run_pytest):
    # The system's "(File exists)" named neither the file nor the mistake, and came after every case.
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_nap.py").write_text(NAP)
    (suite / "notes.txt").write_text("not a folder")
    result = run_pytest(suite, "--perfguard-update", "--perfguard-baselines=notes.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in result.errlines if "is a file, not a folder" in line]
    assert f"{suite / 'notes.txt'} is a file, not a folder; --perfguard-baselines" in line
    assert (suite / "notes.txt").read_text() == "not a folder"
    # A report folder that is a file fails no run (reports never do): its one line names the file.
    result = run_pytest(suite, "--perfguard", "--perfguard-budget=0.01", "--perfguard-report=notes.txt")
    assert result.ret == pytest.ExitCode.OK
    assert f"perfguard: cannot write {suite / 'notes.txt' / 'perfguard.json'} ({suite / 'notes.txt'} is a file, not a folder)" \
        in result.outlines[-1] + "".join(result.outlines)


def test_storing_a_baseline_into_a_file_names_the_file_and_leaves_it_alone(tmp_path):
    (tmp_path / "baselines").write_text("not a folder")
    with pytest.raises(BaselineError, match=r"baselines is a file, not a folder; --perfguard-baselines \(or --baselines\)"):
        store.update(tmp_path / "baselines" / "sub", DEVICE, [result("a")], commit=None, recorded_at="2026-12-01T00:00:00+00:00")
    assert (tmp_path / "baselines").read_text() == "not a folder"
