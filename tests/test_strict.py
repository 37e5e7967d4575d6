"""No silent pass (issue 21): each ordinary edit that used to switch the gate off while the run passed
now fails a --perfguard-strict run with its line, and shows that line in a run that is not strict.

The suite's `slow` case is 30% slower than its baseline (26 ms against 20 ms, on the inner run's own
clock, fake_clock.py, so no machine load moves it); each edit below would hide it. Every run is real
pytest in a process of its own (`run_pytest`).
"""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

SUITE = """
    import time

    import pytest

    from perfguard import perf_case

    pytestmark = {pytestmark}

    {above}
    @perf_case{args}
    {below}
    def {name}(device):
        return lambda: time.sleep({sleep})

    @perf_case
    def steady(device):
        return lambda: time.sleep(0.010)
"""
CLEAN = {"pytestmark": "[]", "above": "", "below": "", "args": "", "name": "slow", "sleep": "0.026"}

# Each edit: what it changes in the suite, the pytest.ini it writes, the line a strict run fails with
# (None: the run is refused before it starts, with that usage error), the line a run that is not strict shows.
EDITS = {
    "the baseline file deleted": ({}, None, "no baseline file baselines/cpu-", "no baseline file baselines/cpu-"),
    "skip above @perf_case": ({"above": "@pytest.mark.skip(reason='later')"}, None,
                              "test_suite.py::slow: skipped (later)", "test_suite.py::slow: skipped (later)"),
    "skip below @perf_case": ({"below": "@pytest.mark.skip(reason='later')"}, None,
                              "test_suite.py::slow: skipped (later)", "test_suite.py::slow: skipped (later)"),
    "xfail above @perf_case": ({"above": "@pytest.mark.xfail"}, None, "test_suite.py::slow: marked xfail",
                               "test_suite.py::slow: marked xfail"),
    "skip on the module": ({"pytestmark": "pytest.mark.skip(reason='wip')"}, None, "test_suite.py::slow: skipped (wip)",
                           "test_suite.py::slow: skipped (wip)"),
    "the case renamed": ({"name": "slow_v2"}, None, "1 missing case(s)", "1 new case(s), not in the baseline"),
    "-k in addopts": ({}, "addopts = -k 'not slow'", "-k 'not slow' (from addopts)", "1 perf case(s) deselected"),
    "threshold=100 on the case": ({"args": "(threshold=100)"}, None,
                                  "slow sets threshold=100, above the run's 1% and the ceiling of 1%",
                                  "slow sets threshold=100, above the run's 1%"),
    "update in the ini file": ({}, "perfguard_update = true",
                               None, "the verdicts above are against the previous baseline"),
    "threshold 1000 in the ini file": ({}, "perfguard_threshold = 1000", None,
                                       "gate: threshold 1000% (from ini perfguard_threshold in pytest.ini)"),
    "counters= on the case": ({"args": "(counters={'aten_ops': 1000})"}, None,
                              "slow sets counters=aten_ops=1000, above the run's allowance of 0 and the ceiling of 0 "
                              "for aten_ops", "slow sets counters=aten_ops=1000, above the run's allowance of 0"),
    "counter allowance in the ini file": ({}, "perfguard_counter_allowance = 1000%", None,
                                          "gate: threshold 1000% (from ini perfguard_threshold in pytest.ini); counter "
                                          "allowance 1000% (from ini perfguard_counter_allowance in pytest.ini)"),
    "the baselines folder mistyped in the ini file": ({}, "perfguard_baselines = baselnes", "no baselines folder ",
                                                      "no baselines folder "),
}
REFUSALS = {
    "update in the ini file": "ERROR: --perfguard-strict: --perfguard-update comes from ini perfguard_update in pytest.ini, "
                              "not the command line; a baseline is only rewritten when asked for there",
    "threshold 1000 in the ini file": "ERROR: --perfguard-threshold 1000 (from ini perfguard_threshold in pytest.ini) is above "
                                      "the ceiling of 1% (--perfguard-strict's default); lower it, or raise the ceiling on the "
                                      "command line with --perfguard-max-threshold",
    "counter allowance in the ini file": "ERROR: --perfguard-strict: --perfguard-counter-allowance comes from ini "
                                         "perfguard_counter_allowance in pytest.ini, not the command line; an allowance "
                                         "for counters to grow is only taken from there",
}
ARGS = ("--perfguard", "--perfguard-budget=0.05", "--perfguard-confirm=0")


def make(folder: Path, write_baseline, edit: str | None) -> Path:
    changes, ini, *_ = EDITS[edit] if edit else ({}, None)
    folder.mkdir(parents=True)
    (folder / "test_suite.py").write_text(textwrap.dedent(SUITE.format(**{**CLEAN, **changes})))
    if ini:
        (folder / "pytest.ini").write_text(f"[pytest]\n{ini}\n")
    if edit == "the baseline file deleted":  # its folder kept (a folder not there: the typo below)
        (folder / "baselines").mkdir()
    else:
        write_baseline(folder, {"test_suite.py::slow": 20.0, "test_suite.py::steady": 10.0})
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory, run_pytest, write_baseline, fake_clock):
    """edit -> (result, folder) of a strict run; the edit None is the suite as it is, with `slow` not slower."""
    done = {}
    for edit in [None, *EDITS]:
        folder = tmp_path_factory.mktemp("strict") / "suite"
        make(folder, write_baseline, edit)
        (folder / "conftest.py").write_text(fake_clock)
        if edit is None:
            text = (folder / "test_suite.py").read_text().replace("time.sleep(0.026)", "time.sleep(0.020)")
            (folder / "test_suite.py").write_text(text)
        done[edit] = run_pytest(folder, *ARGS, "--perfguard-strict"), folder
    return done


# Not strict, the edits that touch one case each are made together, one case each, in one run (the
# others change the whole run: each has its own).
TOGETHER = """
    import time

    import pytest

    from perfguard import perf_case

    @pytest.mark.skip(reason="later")
    @perf_case
    def slow(device):
        return lambda: time.sleep(0.026)

    @perf_case
    @pytest.mark.skip(reason="later")
    def skipped_below(device):
        return lambda: time.sleep(0.026)

    @pytest.mark.xfail
    @perf_case
    def xfail_above(device):
        return lambda: time.sleep(0.026)

    @perf_case
    def renamed_v2(device):
        return lambda: time.sleep(0.026)

    @perf_case(threshold=100)
    def lenient(device):
        return lambda: time.sleep(0.026)

    @perf_case
    def unwanted(device):
        return lambda: time.sleep(0.026)

    @perf_case(counters={"aten_ops": 1000})
    def allowed_more(device):
        return lambda: time.sleep(0.026)
"""
LOOSE = {  # edit -> the run that shows it when not strict, and its line there
    "the baseline file deleted": ("the baseline file deleted", EDITS["the baseline file deleted"][3]),
    "skip above @perf_case": ("together", "test_suite.py::slow: skipped (later)"),
    "skip below @perf_case": ("together", "test_suite.py::skipped_below: skipped (later)"),
    "xfail above @perf_case": ("together", "test_suite.py::xfail_above: marked xfail"),
    "skip on the module": ("skip on the module", EDITS["skip on the module"][3]),
    "the case renamed": ("together", "1 new case(s), not in the baseline: measured, not judged: renamed_v2"),
    "-k in addopts": ("together", "1 perf case(s) deselected: not measured: test_suite.py::unwanted"),
    "threshold=100 on the case": ("together", "lenient sets threshold=100, above the run's 1%"),
    "update in the ini file": ("ini", EDITS["update in the ini file"][3]),
    "threshold 1000 in the ini file": ("ini", EDITS["threshold 1000 in the ini file"][3]),
    "counters= on the case": ("together", "allowed_more sets counters=aten_ops=1000, above the run's allowance of 0"),
    "counter allowance in the ini file": ("ini", EDITS["counter allowance in the ini file"][3]),
    "the baselines folder mistyped in the ini file": ("the baselines folder mistyped in the ini file", "no baselines folder "),
}


@pytest.fixture(scope="module")
def loose(tmp_path_factory, run_pytest, write_baseline, fake_clock):
    """run name -> (result, folder) of the runs that are not strict (LOOSE)."""
    done = {}
    for name in sorted({run for run, _ in LOOSE.values()}):
        folder = tmp_path_factory.mktemp("loose") / "suite"
        if name == "together":
            folder.mkdir(parents=True)
            (folder / "test_suite.py").write_text(textwrap.dedent(TOGETHER))
            (folder / "pytest.ini").write_text("[pytest]\naddopts = -k 'not unwanted'\n")
            write_baseline(folder, {f"test_suite.py::{case}": 20.0 for case in ("slow", "skipped_below", "xfail_above",
                                                                                 "renamed", "lenient", "unwanted",
                                                                                 "allowed_more")})
        elif name == "ini":
            make(folder, write_baseline, "update in the ini file")
            with (folder / "pytest.ini").open("a") as ini:
                ini.write("perfguard_threshold = 1000\nperfguard_counter_allowance = 1000%\n")
        else:
            make(folder, write_baseline, name)
        (folder / "conftest.py").write_text(fake_clock)
        done[name] = run_pytest(folder, *ARGS), folder
    return done


def test_the_suite_as_it_is_passes_strict_and_says_what_it_judged_against(runs):
    result, _ = runs[None]
    assert result.ret == pytest.ExitCode.OK, result.outlines
    (line,) = [line for line in result.outlines if line.startswith("perfguard: gate: ")]
    assert line.startswith("perfguard: gate: threshold 1% (from the default), ceiling 1%; baseline baselines/cpu-")
    assert line.endswith(f".json (2 case(s)); 2 case(s) ran; judged as host {socket.gethostname()} (its hostname); strict")
    assert not [line for line in result.outlines if line.startswith("perfguard: strict: ")]


@pytest.mark.parametrize("edit", list(EDITS))
def test_each_gate_off_edit_fails_a_strict_run_with_its_line(runs, edit):
    result, folder = runs[edit]
    strict_line = EDITS[edit][2]
    if strict_line is None:  # refused before anything ran
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert REFUSALS[edit] in result.errlines
        assert not (folder / "reports").exists()
        return
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.outlines
    assert [line for line in result.outlines if line.startswith(f"perfguard: strict: {strict_line}")], result.outlines
    assert [line for line in result.outlines if line.startswith("perfguard: strict: the ") and "fail this run" in line]


@pytest.mark.parametrize("edit", list(EDITS))
def test_each_gate_off_edit_shows_its_line_when_not_strict(loose, edit):
    name, line = LOOSE[edit]
    result, folder = loose[name]
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert [out for out in result.outlines if out.startswith(f"perfguard: {line}")], result.outlines
    assert (folder / "reports" / "perfguard.json").is_file()  # a skipped module too leaves its record


def test_a_baselines_folder_that_is_not_there_is_named_with_where_it_was_looked_for_and_the_one_meant(
        loose, run_pytest, tmp_path, write_baseline, fake_clock):
    result, folder = loose["the baselines folder mistyped in the ini file"]
    slug = next(folder.glob("baselines/*.json")).stem
    record = f"record one with `pytest --perfguard --perfguard-update --perfguard-baselines=baselnes` or perfguard baseline accept"
    assert f"perfguard: no baselines folder {folder / 'baselnes'}: --perfguard-baselines=baselnes (from ini perfguard_baselines " \
           f"in pytest.ini) taken from the ini file's folder; its 2 case(s) read new and are not judged; " \
           f"{folder / 'baselines'} holds this model's baseline: give --perfguard-baselines={folder / 'baselines'}, or " \
           f"{record}" in result.outlines, result.outlines
    assert (folder / "baselines" / f"{slug}.json").is_file()
    # pytest started in the folder above the suite's, which has no ini file: pytest's rootdir is that folder.
    folder = make(tmp_path / "suite", write_baseline, None)
    (folder / "conftest.py").write_text(fake_clock)
    above = run_pytest(tmp_path, *ARGS, "suite/test_suite.py")
    said = [line for line in above.outlines if line.startswith("perfguard: no baselines folder")]
    assert said == [f"perfguard: no baselines folder {folder.parent / 'baselines'}: --perfguard-baselines=baselines (from the "
                    "default) taken from pytest's rootdir; its 2 case(s) read new and are not judged; "
                    f"{folder / 'baselines'} holds this model's baseline: give --perfguard-baselines={folder / 'baselines'}, "
                    "or record one with `pytest --perfguard --perfguard-update` or perfguard baseline accept"], above.outlines


@pytest.mark.parametrize("where", ["above", "below"])
def test_a_skip_mark_works_the_same_above_or_below_perf_case_in_a_smoke_run(tmp_path, run_pytest, where):
    suite = textwrap.dedent(SUITE.format(**{**CLEAN, where: "@pytest.mark.skip(reason='later')"}))
    (tmp_path / "test_suite.py").write_text(suite)
    result = run_pytest(tmp_path, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    assert [line for line in result.outlines if "later" in line and line.startswith("SKIPPED")]


def test_strict_takes_an_update_and_a_ceiling_given_on_the_command_line(tmp_path, run_pytest, write_baseline, fake_clock):
    folder = make(tmp_path / "suite", write_baseline, "threshold 1000 in the ini file")
    (folder / "conftest.py").write_text(fake_clock)
    result = run_pytest(folder, *ARGS, "--perfguard-strict", "--perfguard-max-threshold=1000", "--perfguard-update")
    assert result.ret == pytest.ExitCode.OK, result.outlines + result.errlines
    assert [line for line in result.outlines if line.startswith("perfguard: gate: threshold 1000% (from ini ")]


def test_strict_refuses_a_ceiling_from_addopts(tmp_path, run_pytest):
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --perfguard-max-threshold=50\n")
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    result = run_pytest(tmp_path, "--perfguard-strict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --perfguard-strict: --perfguard-max-threshold comes from addopts; the ceiling on thresholds is only "
            "taken from the command line") in result.errlines


def test_new_cases_are_named_once_with_how_to_record_them(loose):
    # The table's once-per-run hint and the gate's line named the same new cases twice.
    result, _ = loose["together"]
    lines = [out for out in result.outlines if "new case(s)" in out]
    assert len(lines) == 1, lines
    assert "renamed_v2" in lines[0] and lines[0].endswith(
        "record them with `pytest --perfguard --perfguard-update` (several runs make their tolerances tight)")


def test_strict_refuses_a_counter_allowance_from_addopts_and_one_above_the_ceiling(tmp_path, run_pytest):
    """Issue 30, item 16: an allowance is weakening as a threshold is: from PYTEST_ADDOPTS refused under
    strict; from the command line, held to the ceiling (strict's default: no growth)."""
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    result = run_pytest(tmp_path, "--perfguard-strict", env={"PYTEST_ADDOPTS": "--perfguard-counter-allowance=1000%"})
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --perfguard-strict: --perfguard-counter-allowance comes from addopts, not the command line; an "
            "allowance for counters to grow is only taken from there") in result.errlines
    result = run_pytest(tmp_path, "--perfguard-strict", "--perfguard-counter-allowance=kernels=2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --perfguard-counter-allowance kernels=2 (from the command line) is above the ceiling of 0 "
            "(--perfguard-strict's default) for kernels; lower it, or raise the ceiling on the command line with "
            "--perfguard-max-counter-allowance") in result.errlines
    result = run_pytest(tmp_path, "--perfguard-strict", env={"PYTEST_ADDOPTS": "--perfguard-max-counter-allowance=5"})
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --perfguard-strict: --perfguard-max-counter-allowance comes from addopts; the ceiling on counter "
            "allowances is only taken from the command line") in result.errlines


def test_a_cases_counter_allowance_within_a_ceiling_given_on_the_command_line_passes_strict(
        tmp_path, run_pytest, write_baseline, fake_clock):
    folder = make(tmp_path / "suite", write_baseline, "counters= on the case")
    (folder / "conftest.py").write_text(fake_clock)
    text = (folder / "test_suite.py").read_text().replace("time.sleep(0.026)", "time.sleep(0.020)")
    (folder / "test_suite.py").write_text(text)
    result = run_pytest(folder, *ARGS, "--perfguard-strict", "--perfguard-counter-allowance=2",
                        "--perfguard-max-counter-allowance=1000")
    assert result.ret == pytest.ExitCode.OK, result.outlines + result.errlines
    assert [line for line in result.outlines if line.startswith("perfguard: slow sets counters=aten_ops=1000, above "
                                                                "the run's allowance of 2")], result.outlines
    assert [line for line in result.outlines if "; counter allowance 2 (from the command line)" in line]


def test_a_machine_named_by_perfguard_host_is_in_the_gate_line_and_fails_a_strict_run(tmp_path, run_pytest, write_baseline,
                                                                                      fake_clock):
    """Issue 30, item 15: the name decides whose runs judge a CPU case, so where it came from is shown,
    and under strict a name the environment gave fails the run."""
    folder = make(tmp_path / "suite", write_baseline, None)
    (folder / "conftest.py").write_text(fake_clock)
    text = (folder / "test_suite.py").read_text().replace("time.sleep(0.026)", "time.sleep(0.020)")
    (folder / "test_suite.py").write_text(text)
    named = {"PERFGUARD_HOST": "runner-7"}
    strict = run_pytest(folder, *ARGS, "--perfguard-strict", env=named)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED, strict.outlines
    (gate,) = [line for line in strict.outlines if line.startswith("perfguard: gate: ")]
    assert gate.endswith("; judged as host runner-7 (from PERFGUARD_HOST); strict")
    assert [line for line in strict.outlines if line.startswith(
        f"perfguard: strict: PERFGUARD_HOST='runner-7' names this machine (its hostname is {socket.gethostname()!r}): "
        "the baseline's runs of that name, not a measured identity, decide whose runs judge its CPU cases")]
    loose = run_pytest(folder, *ARGS, env=named)
    assert loose.ret == pytest.ExitCode.OK, loose.outlines
    assert [line for line in loose.outlines if line.startswith("perfguard: PERFGUARD_HOST='runner-7' names this machine")]


# --- a GPU model without a file of its own (issue 48) ---------------------------------------------


def _h100_beside_the_h200_file(tmp_path: Path, **changed):
    import dataclasses
    import shutil

    from perfguard import store
    from perfguard.plugin.baselines import Baselines

    shutil.copy(Path(__file__).parents[1] / "baselines" / "nvidia-h200.json", tmp_path / "nvidia-h200.json")
    h200 = store.load(tmp_path, "nvidia-h200").device
    h100 = dataclasses.replace(h200, name="NVIDIA H100 80GB HBM3", slug="nvidia-h100-80gb-hbm3", **changed)
    return Baselines(tmp_path, tmp_path), h100


def test_a_model_without_its_file_is_judged_by_one_of_its_architecture_and_software_and_strict_says_what_not(tmp_path):
    from perfguard.plugin.strict import _stood_in

    baselines, h100 = _h100_beside_the_h200_file(tmp_path)
    stand_in = baselines.stand_in(h100)
    assert (stand_in.label, stand_in.other.model, stand_in.other.differs) == ("nvidia-h200.json", "NVIDIA H200", ())
    assert stand_in.file.cases  # the H200's cases, to judge the H100's counters and memory by
    assert _stood_in(stand_in, 134) == (
        "its 134 case(s) are judged against nvidia-h200.json, another GPU model's (NVIDIA H200) of the same compute "
        "capability, SM count and software, by what does not depend on the model (counters but kernels and memsets, "
        "and memory); their times and bandwidth are not judged")


@pytest.mark.parametrize(("changed", "said"), [({"compute_capability": "8.0"}, "compute capability 9.0 → 8.0"),
                                               ({"torch": "2.12.0"}, "torch 2.11.0+cu130 → 2.12.0")])
def test_a_model_of_another_architecture_or_software_is_judged_by_no_other_models_file_and_strict_says_why(
        tmp_path, changed, said):
    from perfguard.plugin.strict import _stood_in

    baselines, h100 = _h100_beside_the_h200_file(tmp_path, **changed)
    stand_in = baselines.stand_in(h100)
    assert stand_in.other.differs == (said,)
    assert _stood_in(stand_in, 3).endswith(f"nothing is judged across models where more than the model differs: {said}")
    assert baselines.stand_in(baselines.load(h100) or stand_in.file.device) is None  # a model with its file needs none
