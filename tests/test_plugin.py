"""The pytest plugin end to end: suites written to a folder and run by pytest in a real subprocess.

Runs that several tests look at (a measured suite, a smoke-run suite) are made once per module by
the `run_pytest` fixture (conftest.py), which runs pytest as `pytester.runpytest_subprocess` does;
one-purpose runs use `pytester`.
Cases sleep, so their cost does not depend on this machine's speed; nothing here asserts on timing
beyond "a 2 ms sleep takes at least 2 ms".
"""

from __future__ import annotations

import collections
import re
import textwrap
from pathlib import Path

import pytest

import perfguard
from perfguard.analysis.stats import ci_half_width_ratio
from perfguard.model import MAX_STORED_SAMPLES, SAMPLE_DIGITS, RunRecord, loads_record, round_sig

BUDGET = 0.2


def write(path: Path, name: str, source: str) -> None:
    (path / name).write_text(textwrap.dedent(source))


def read_record(path: Path) -> RunRecord:
    return loads_record(path.read_text(), str(path))


SECTION = re.compile(r"^(_{3,}|={3,}) (.+) (_{3,}|={3,})$")


def line_of(source: str, code: str) -> int:
    """The number of the first line of `source`, as written to a file, that is `code`."""
    return [line.strip() for line in textwrap.dedent(source).splitlines()].index(code) + 1


def failure_text(result: pytest.RunResult, test_name: str) -> str:
    """The body of one test's section under FAILURES."""
    lines = result.outlines
    header = next(i for i, line in enumerate(lines) if (m := SECTION.match(line)) and m.group(2) == test_name)
    end = next((i for i, line in enumerate(lines[header + 1 :], header + 1) if SECTION.match(line)), len(lines))
    return "\n".join(lines[header + 1 : end])


# --- a measured suite -----------------------------------------------------------------------------

MEASURED_SUITE = """
    import itertools
    import time

    from perfguard import perf_case

    @perf_case(params={"n": [1_000_000, 2_000_000]}, bytes=lambda n: 3 * n, flops=lambda n: n)
    def sleep_2ms(n, device):
        return lambda: time.sleep(0.002)

    @perf_case(name="bimodal")
    def alternating(device):
        turn = itertools.count()
        return lambda: time.sleep(0.0005 if next(turn) % 2 else 0.02)

    @perf_case(device_kinds=("cuda",))
    def cuda_only(device):
        raise AssertionError("a cuda-only case was set up on a CPU")

    def test_fixture_form(perf):
        assert perf.device == "cpu"
        assert perf.enabled
        result = perf(lambda: time.sleep(0.001), bytes=1_000_000)
        assert result.status == "ok" and result.judged_time.n >= 10

    def test_two_named_measurements(perf):
        perf(lambda: time.sleep(0.001), name="first_nap")
        perf(lambda: time.sleep(0.001), name="second_nap")

    def test_plain():
        assert True
"""

MEASURED_IDS = ["bimodal", "first_nap", "second_nap", "sleep_2ms[n=1000000]", "sleep_2ms[n=2000000]", "test_fixture_form"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory, run_pytest):
    path = tmp_path_factory.mktemp("measured")
    write(path, "test_cases.py", MEASURED_SUITE)
    result = run_pytest(
        path, "--perfguard", "--perfguard-budget", str(BUDGET), "--perfguard-report=out/run1", "-rs",
        # perfguard's own choice of threads, whatever this shell says; a runner's name for its host
        env={"OMP_NUM_THREADS": None, "PERFGUARD_HOST": " runner-7 "},
    )
    return path, result


@pytest.fixture(scope="module")
def record(measured) -> RunRecord:
    path, _ = measured
    return read_record(path / "out" / "run1" / "perfguard.json")


def by_id(record: RunRecord) -> dict:
    return {r.id: r for r in record.results}


def test_measure_mode_runs_every_case_as_a_test(measured):
    _, result = measured
    result.assert_outcomes(passed=6, skipped=1)


def test_the_record_goes_to_the_report_folder_given_on_the_command_line(measured):
    path, result = measured
    assert (path / "out" / "run1" / "perfguard.json").is_file()
    assert not (path / "reports").exists()
    result.stdout.fnmatch_lines([f"perfguard: wrote {path / 'out' / 'run1' / 'perfguard.json'}"])


def test_the_record_holds_every_measured_case_by_id_and_nothing_else(record):
    assert [r.id for r in record.results] == MEASURED_IDS
    assert {r.status for r in record.results} == {"ok"}
    case = by_id(record)["sleep_2ms[n=2000000]"]
    assert (case.name, case.nodeid) == ("sleep_2ms", "test_cases.py::sleep_2ms[n=2000000]")
    assert case.params == {"n": 2000000}
    # Declared cold, but a CPU has no cache flush: the record says what was done.
    assert (case.cache, case.mode, case.timer) == ("none", "eager", "host-clock")


def test_each_case_has_at_least_ten_samples_summarised_in_the_record(record):
    for r in record.results:
        lat = r.judged_time
        assert lat.n >= 10, r.id
        assert len(r.samples_ms) == min(lat.n, MAX_STORED_SAMPLES), r.id
        assert lat.min_ms <= lat.p10_ms <= lat.median_ms <= lat.p90_ms <= lat.max_ms, r.id
        assert lat.ci_low_ms <= lat.median_ms <= lat.ci_high_ms, r.id
        if lat.n <= MAX_STORED_SAMPLES:  # every sample kept: the summary is of them
            # written at SAMPLE_DIGITS, the summary at SIGNIFICANT_DIGITS: the summary rounded again may
            # differ from the sample in its last digit (1.234499 → 1.23450 → 1.235, the sample 1.234)
            for summary_ms, sample_ms in ((lat.min_ms, min(r.samples_ms)), (lat.max_ms, max(r.samples_ms))):
                assert abs(round_sig(summary_ms, SAMPLE_DIGITS) - sample_ms) <= 10 ** (1 - SAMPLE_DIGITS) * sample_ms, r.id


def test_the_stop_reason_follows_the_stopping_rule(record):
    for r in record.results:
        assert r.judged_time.stop_reason in ("converged", "budget"), r.id
        if r.judged_time.stop_reason == "converged":
            lat = r.judged_time  # of every sample: the record keeps MAX_STORED_SAMPLES of them
            assert (lat.ci_high_ms - lat.ci_low_ms) / 2 / lat.median_ms <= 0.005 * 1.01, r.id
            if lat.n <= MAX_STORED_SAMPLES:
                assert ci_half_width_ratio(r.samples_ms) <= 0.005 * 1.01, r.id
        else:  # sampling went on until 90% of the budget was spent
            assert r.wall_s >= 0.9 * BUDGET, r.id
    # Calls alternating 0.5 and 20 ms never give the median a 0.5% interval (its ranks straddle the two,
    # and no load wakes a 0.5 ms sleep 19 ms late every time): the budget ends them.
    assert by_id(record)["bimodal"].judged_time.stop_reason == "budget"


def test_bandwidth_and_flop_rate_are_the_declared_figures_over_the_median(record):
    for n in (1_000_000, 2_000_000):
        r = by_id(record)[f"sleep_2ms[n={n}]"]
        assert (r.bytes, r.flops) == (3 * n, n)
        seconds = r.judged_time.median_ms / 1e3
        assert r.metrics.gbps == pytest.approx(3 * n / seconds / 1e9, rel=1e-5)
        assert r.metrics.tflops == pytest.approx(n / seconds / 1e12, rel=1e-5)
        assert r.metrics.arithmetic_intensity == pytest.approx(1 / 3, rel=1e-5)
    assert by_id(record)["bimodal"].metrics.gbps is None  # no bytes declared, no bandwidth


def test_gpu_only_figures_are_null_on_a_cpu(record):
    for r in record.results:
        assert r.memory is None and r.telemetry is None, r.id
        assert r.metrics.bandwidth_util is None and r.metrics.caller_ms is None, r.id


def test_a_sleep_is_never_measured_shorter_than_it_sleeps(record):
    for n in (1_000_000, 2_000_000):
        assert by_id(record)[f"sleep_2ms[n={n}]"].judged_time.median_ms >= 2.0
    assert by_id(record)["first_nap"].judged_time.median_ms >= 1.0


def test_the_record_names_this_cpu_and_the_run(record):
    (device,) = record.devices
    assert device.kind == "cpu" and device.slug.startswith("cpu-")
    assert device.uuid is None and device.peak_bandwidth_gbps is None
    assert device.host == "runner-7"  # PERFGUARD_HOST, read by the plugin's options and handed to detect
    assert {r.device for r in record.results} == {device.slug}
    assert record.perfguard_version == perfguard.__version__
    assert record.options["budget_s"] == BUDGET


def test_the_terminal_shows_a_perfguard_table_of_the_cases(measured):
    _, result = measured
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if (m := SECTION.match(line)) and m.group(2) == "perfguard")
    table = [line for line in lines[start + 1 :] if line.strip()][: 2 + len(MEASURED_IDS)]
    assert table[0].startswith("device: ") and "(cpu-" in table[0]
    header = table[1].split()
    assert header[0] == "case" and {"median", "±CI", "GB/s"} <= set(header)
    assert sorted(row.split()[0] for row in table[2:]) == MEASURED_IDS
    assert all(" ms " in row for row in table[2:] if row.startswith("sleep_2ms")), table  # 2 ms, in ms


def test_a_cpu_run_says_its_figures_are_rough_and_marks_the_unsettled_ones(measured, record):
    _, result = measured
    said = [line for line in result.outlines if line.startswith("CPU figures (host clock) are rough: ")]
    assert len(said) == 1, result.outlines[-20:]
    assert f"of {len(MEASURED_IDS)} case(s) ran out of budget" in said[0]
    assert "torch measured with 1 thread(s)" in said[0] and record.options["cpu_threads"] == 1
    rows = {line.split()[0]: line.split()[2] for line in result.outlines if line.split()[:1] and line.split()[0] in MEASURED_IDS}
    assert {case: rows[case].startswith("~") for case in MEASURED_IDS} == {
        r.id: r.judged_time.stop_reason != "converged" for r in record.results}


THREADS = """
    import torch
    from perfguard import perf_case

    @perf_case
    def threads(device):
        with open("threads.txt", "a") as f:
            f.write(f"{torch.get_num_threads()}\\n")
        return lambda: torch.ones(64) + 1
"""


def test_a_cpu_run_measures_with_one_torch_thread_unless_omp_num_threads_says(tmp_path, run_pytest):
    # A forked run's torch was imported by the fork server: two threads, as torch's own default on a
    # machine of two or more cores would be, so that one thread is perfguard's doing. (With
    # OMP_NUM_THREADS set, torch reads it at its import: a new interpreter's, test_xdist.py.)
    write(tmp_path, "conftest.py", "import torch\ntorch.set_num_threads(2)\n")
    write(tmp_path, "test_threads.py", THREADS)
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget=0.01", env={"OMP_NUM_THREADS": None})
    result.assert_outcomes(passed=1)
    assert (tmp_path / "threads.txt").read_text().split() == ["1"]
    assert read_record(tmp_path / "reports" / "perfguard.json").options["cpu_threads"] == 1


def test_a_cuda_only_case_is_skipped_on_a_cpu_with_a_reason_naming_it(measured, record):
    _, result = measured
    result.stdout.fnmatch_lines(["SKIPPED *cuda_only runs on cuda only, this is cpu"])
    assert "set up on a CPU" not in str(result.stdout)
    assert "cuda_only" not in by_id(record)


def test_the_perf_fixture_is_recorded_under_the_tests_name(record):
    r = by_id(record)["test_fixture_form"]
    assert (r.name, r.nodeid, r.bytes) == ("test_fixture_form", "test_cases.py::test_fixture_form", 1_000_000)
    assert r.metrics.gbps == pytest.approx(1e6 / (r.judged_time.median_ms / 1e3) / 1e9, rel=1e-5)
    assert by_id(record)["second_nap"].nodeid == "test_cases.py::test_two_named_measurements"


# --- a smoke-run suite (no --perfguard) -----------------------------------------------------------

SMOKE_SUITE = """
    import pathlib

    from perfguard import perf_case

    LOG = pathlib.Path(__file__).with_name("calls.log")

    def note(line):
        with LOG.open("a") as f:
            f.write(line + "\\n")

    @perf_case(params={"n": [1, 2]}, check=lambda out, n: note(f"check doubled n={n} out={out}") or out == 2 * n)
    def doubled(n, device):
        note(f"setup doubled n={n} device={device}")

        def run():
            note(f"call doubled n={n}")
            return 2 * n

        return run

    @perf_case(check=lambda out, device: note(f"check on_device out={out} device={device}"))
    def on_device(device):
        def run():
            note("call on_device")
            return device

        return run

    @perf_case(check=lambda out: out == 1)
    def wrong_answer(device):
        return lambda: 2

    def must_be_sorted(out):
        assert out == sorted(out), "not sorted"

    @perf_case(check=must_be_sorted)
    def unsorted(device):
        return lambda: [3, 1, 2]

    def test_fixture_in_smoke_mode(perf):
        assert not perf.enabled
        result = perf(lambda: note("call fixture"), bytes=8)
        assert result.status == "smoke"

    def test_fixture_called_twice_without_names(perf):
        perf(lambda: None)
        perf(lambda: None)

    def test_fixture_with_an_unknown_keyword(perf):
        perf(lambda: None, byts=8)
"""


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, run_pytest):
    path = tmp_path_factory.mktemp("smoke")
    write(path, "test_smoke.py", SMOKE_SUITE)
    result = run_pytest(path)
    log = (path / "calls.log").read_text().splitlines() if (path / "calls.log").exists() else []
    return path, result, log


def test_smoke_mode_passes_or_fails_each_case_on_correctness_alone(smoke):
    _, result, _ = smoke
    result.assert_outcomes(passed=4, failed=4)
    assert "perfguard" not in {line.strip("= ") for line in result.outlines}  # no table


def test_smoke_mode_calls_each_case_exactly_once(smoke):
    _, _, log = smoke
    calls = collections.Counter(line for line in log if line.startswith(("call", "setup")))
    assert calls == {
        "setup doubled n=1 device=cpu": 1,
        "call doubled n=1": 1,
        "setup doubled n=2 device=cpu": 1,
        "call doubled n=2": 1,
        "call on_device": 1,
        "call fixture": 1,
    }


def test_smoke_mode_writes_no_record(smoke):
    path, _, _ = smoke
    assert not (path / "reports").exists()


def test_check_gets_the_output_and_the_parameters_it_names(smoke):
    _, _, log = smoke
    checks = [line for line in log if line.startswith("check")]
    assert checks == ["check doubled n=1 out=2", "check doubled n=2 out=4", "check on_device out=cpu device=cpu"]


def test_a_check_returning_false_fails_its_case(smoke):
    _, result, _ = smoke
    assert failure_text(result, "wrong_answer").strip() == "wrong_answer: check returned False: the output is wrong"


def test_a_check_that_raises_fails_its_case_with_its_message(smoke):
    _, result, _ = smoke
    text = failure_text(result, "unsorted")
    # The whole message on the line, pytest's explanation of the assert included, its breaks shown (issue 30).
    assert text.splitlines()[0].startswith("unsorted: check raised AssertionError: not sorted\\nassert [3, 1, 2] == [1, 2, 3]")
    assert "in must_be_sorted" in text  # the user's frame


def test_calling_perf_twice_without_names_is_one_line_naming_the_second_call(smoke):
    _, result, _ = smoke
    line = line_of(SMOKE_SUITE, "perf(lambda: None)") + 1  # the second of the two calls
    assert failure_text(result, "test_fixture_called_twice_without_names").strip() == (
        f"perf() in test_smoke.py::test_fixture_called_twice_without_names (test_smoke.py:{line}): "
        "called more than once; give each call its own name="
    )


def test_an_unknown_perf_keyword_is_one_line_with_the_close_one(smoke):
    _, result, _ = smoke
    line = line_of(SMOKE_SUITE, "perf(lambda: None, byts=8)")
    assert failure_text(result, "test_fixture_with_an_unknown_keyword").strip() == (
        f"perf() in test_smoke.py::test_fixture_with_an_unknown_keyword (test_smoke.py:{line}): unknown keyword 'byts'; "
        "did you mean 'bytes'? known keywords: name, bytes, flops, cache, mode, threshold, memory_threshold, counters, budget_s, "
        "memory_breakdown, device_kinds, check, compile"
    )


# --- options ---------------------------------------------------------------------------------------

ONE_CASE = """
    import time
    from perfguard import perf_case

    @perf_case(bytes=1000)
    def nap(device):
        return lambda: time.sleep(0.001)
"""

INI_FILES = {
    "pytest.ini, dashed keys": (
        "pytest.ini",
        "[pytest]\nperfguard = true\nperfguard_budget = 0.15\nperfguard_report = from_ini\n",
        (),
        0.15,
    ),
    "pyproject, underscored keys": (
        "pyproject.toml",
        '[tool.pytest.ini_options]\nperfguard = true\nperfguard_budget = "0.15"\nperfguard_report = "from_ini"\n',
        (),
        0.15,
    ),
    "command line over ini": (
        "pytest.ini",
        "[pytest]\nperfguard = true\nperfguard_budget = 0.15\nperfguard_report = from_ini\n",
        ("--perfguard-budget", "0.1"),
        0.1,
    ),
}


@pytest.mark.parametrize("variant", INI_FILES, ids=list(INI_FILES))
def test_options_can_be_set_in_the_ini_file(pytester, variant):
    from perfguard.plugin.options import Options

    ini_name, ini_text, args, budget = INI_FILES[variant]
    (pytester.path / ini_name).write_text(ini_text)
    options = Options.from_config(pytester.parseconfig(*args))
    assert (options.enabled, options.budget_s, options.report_dir) == (True, budget, pytester.path / "from_ini")


def test_options_from_the_ini_file_reach_the_run_and_its_record(tmp_path, run_pytest):
    ini_name, ini_text, _, budget = INI_FILES["pytest.ini, dashed keys"]
    (tmp_path / ini_name).write_text(ini_text)
    write(tmp_path, "test_one.py", ONE_CASE)
    result = run_pytest(tmp_path)  # no --perfguard: the ini file turns measuring on
    result.assert_outcomes(passed=1)
    record = read_record(tmp_path / "from_ini" / "perfguard.json")
    assert [r.id for r in record.results] == ["nap"]
    assert record.results[0].status == "ok"
    assert record.options["budget_s"] == budget


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf"])
def test_a_bad_budget_is_a_usage_error(pytester, value):
    from perfguard.plugin.options import Options

    config = pytester.parseconfig("--perfguard", "--perfguard-budget", value)
    with pytest.raises(pytest.UsageError, match=rf"^--perfguard-budget \(or ini perfguard_budget\) must be .*, got '{value}'$"):
        Options.from_config(config)


BAD_BUDGETS = {  # a run that measures nothing, given a bad value only here: (file, its text, arguments)
    "command line": (None, "", ("--perfguard-budget", "abc")),
    "ini, underscored": ("pyproject.toml", '[tool.pytest.ini_options]\nperfguard_budget = "abc"\n', ()),
    "addopts": ("pytest.ini", "[pytest]\naddopts = --perfguard-budget=abc\n", ()),
}


@pytest.mark.parametrize("where", BAD_BUDGETS)
def test_a_bad_value_is_a_usage_error_in_a_run_that_measures_nothing(tmp_path, run_pytest, where):
    # The plugin parses the options only where one was given (plugin/register.given): wherever it was given.
    ini_name, ini_text, args = BAD_BUDGETS[where]
    if ini_name:
        (tmp_path / ini_name).write_text(ini_text)
    write(tmp_path, "test_one.py", "def test_plain():\n    assert True\n")
    result = run_pytest(tmp_path, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--perfguard-budget (or ini perfguard_budget) must be a number of seconds above 0" in str(result.stderr)


@pytest.mark.parametrize("ini_name, text", [
    ("pytest.ini", "[pytest]\nperfguard-budget = abc\n"),
    ("pyproject.toml", '[tool.pytest.ini_options]\nperfguard-budget = "abc"\n'),
])
def test_an_ini_key_spelt_with_dashes_is_the_same_key(tmp_path, run_pytest, ini_name, text):
    (tmp_path / ini_name).write_text(text)
    write(tmp_path, "test_one.py", "def test_plain():\n    assert True\n")
    result = run_pytest(tmp_path)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --perfguard-budget (or ini perfguard_budget) must be *, got 'abc'"])


def test_a_usage_error_stops_the_run_with_its_one_line(tmp_path, run_pytest):
    write(tmp_path, "test_one.py", ONE_CASE)
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --perfguard-budget (or ini perfguard_budget) must be *, got 'abc'"])


def decorator_lines(path: Path) -> list[int]:
    return [n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("@perf_case")]


def test_pytest_help_lists_each_ini_key_once(pytester, inner_args):
    result = pytester.runpytest_subprocess(*inner_args, "--help")
    ini = [line.strip() for line in result.outlines if line.strip().startswith("perfguard")]
    # Once, with its own help (before: a second entry, "perfguard (bool): alias of perfguard").
    assert [line.split()[:4] for line in ini if line.startswith("perfguard (")] == [["perfguard", "(bool):", "measure", "perf"]]
    assert not [line for line in ini if "alias of" in line]
    # One entry a key, by its underscored name (the dashed one is its alias), and percentages as written.
    assert [line for line in ini if line.startswith("perfguard_budget (")] == ["perfguard_budget (string):"]
    assert not [line for line in ini if line.startswith("perfguard-")]
    text = " ".join(line.strip() for line in result.outlines)
    assert "same as perfguard" not in text and "percent sign" not in text and "baseline's count (10%)" in text


FIXTURE_KEYWORDS = """
    import torch

    def test_on_a_gpu_only(perf):
        perf(lambda: torch.ones(8), device_kinds=("cuda",))
        raise AssertionError("measured on a CPU")

    def test_with_a_memory_breakdown(perf):
        weight = torch.ones(256, 256, requires_grad=True)
        perf(lambda: (weight * 2).sum().backward(), memory_breakdown=True)
"""


def test_the_perf_fixture_takes_device_kinds_and_memory_breakdown(tmp_path, run_pytest):
    write(tmp_path, "test_fixture.py", FIXTURE_KEYWORDS)
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget=0.01", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * test_on_a_gpu_only runs on cuda only, this is cpu"])
    (measured,) = read_record(tmp_path / "reports" / "perfguard.json").results
    assert measured.id == "test_with_a_memory_breakdown"
    assert measured.memory_breakdown is not None and measured.memory_breakdown.error is None
    assert measured.memory_breakdown.parameters + measured.memory_breakdown.gradients > 0


def test_a_case_id_used_twice_is_an_error_of_the_second_naming_the_first(tmp_path, run_pytest):
    write(tmp_path, "test_one.py", ONE_CASE + """
    @perf_case(name="nap")  # the same id in the same file: its result would replace the first's
    def nap_again(device):
        return lambda: time.sleep(0.001)
    """)
    write(tmp_path, "test_two.py", ONE_CASE)  # and in another file
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "0.01")
    result.assert_outcomes(passed=1, errors=2)
    one, again = decorator_lines(tmp_path / "test_one.py")
    (two,) = decorator_lines(tmp_path / "test_two.py")
    first = f"the case at test_one.py:{one}"
    assert [line for line in result.outlines if "is already used by" in line and "ERROR" not in line] == [
        f"perf_case 'nap' (test_one.py:{again}): case id 'nap' is already used by {first}; "
        "give that one a name= of its own, or this one another name=",  # this one has name="nap" already
        f"perf_case 'nap' (test_two.py:{two}): case id 'nap' is already used by {first}; give one of them name=...",
    ]
    record = read_record(tmp_path / "reports" / "perfguard.json")  # the default report folder
    (nap,) = record.results
    assert (nap.id, nap.nodeid, nap.bytes) == ("nap", "test_one.py::nap", 1000)  # the first's, measured once


def test_a_report_folder_that_cannot_be_written_does_not_fail_the_run(tmp_path, run_pytest):
    write(tmp_path, "test_one.py", ONE_CASE)
    (tmp_path / "blocker").write_text("a file where the report folder should go\n")
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "0.01", "--perfguard-report=blocker/reports")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"perfguard: cannot write {tmp_path / 'blocker' / 'reports' / 'perfguard.json'} (*)*"])
    assert "INTERNALERROR" not in str(result.stdout) + str(result.stderr)
    assert "Traceback" not in str(result.stdout)


DECLARATION_MISTAKES = """
    from perfguard import perf_case

    @perf_case(thresold=5)
    def softmax(device):
        return lambda: None

    @perf_case(params={"n": []})
    def empty_grid(n, device):
        return lambda: None

    @perf_case(params={"m": [1]})
    def misspelt(n=1, device="cpu"):
        return lambda: None

    @perf_case(params=lambda device: {"m": [1]})
    def sized(n=1, device="cpu"):
        return lambda: None

    @perf_case(params={"n": [1024, 2048, 1024], "dtype": ["float16", "bfloat16"]})
    def twice(n, dtype, device):
        return lambda: None

    @perf_case
    def healthy(device):
        return lambda: None

    def test_plain():
        pass
"""


def test_a_declaration_mistake_is_an_error_of_that_case_alone_in_one_line(tmp_path, run_pytest):
    write(tmp_path, "test_mistakes.py", DECLARATION_MISTAKES)  # (the same at collection with or without --perfguard)
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget", "0.01")
    result.assert_outcomes(passed=2, errors=5)  # the rest of the file ran
    assert "Interrupted" not in str(result.stdout) and "Traceback" not in str(result.stdout)
    assert [failure_text(result, f"ERROR at setup of {case}").strip() for case in ("softmax", "empty_grid", "misspelt", "sized", "twice")] == [
        "perf_case 'softmax' (test_mistakes.py:4): unknown keyword 'thresold'; did you mean 'threshold'? known keywords: "
        "name, params, bytes, flops, cache, mode, threshold, memory_threshold, counters, budget_s, memory_breakdown, device_kinds, check, compile",
        "perf_case 'empty_grid' (test_mistakes.py:8): params['n'] is empty; give at least one value",
        "perf_case 'misspelt' (test_mistakes.py:12): setup does not take parameter(s) m; add them to its signature",
        "perf_case 'sized' (test_mistakes.py:16): setup does not take parameter(s) m; add them to its signature",
        "perf_case 'twice' (test_mistakes.py:20): params['n'] gives 1024 more than once ([1024, 2048, 1024]); each value "
        "names a test, so give each once",
    ]


PLAIN_TEST = """
    import sys

    from perfguard.plugin.measurer import BEFORE_CASE, MEASURER
    from perfguard.plugin.recorder import RECORDER

    def test_plain(request):
        config = request.config
        names = {name for name, plugin in config.pluginmanager.list_name_plugin() if plugin is not None}
        assert "perfguard" in names, "perfguard's plugin did not load through its entry point"
        assert sorted(n for n in names if n.startswith("perfguard-")) == []
        assert not any(key in config.stash for key in (RECORDER, MEASURER, BEFORE_CASE))
        heavy = ("torch", "jinja2", "scipy", "perfguard.measure.runner", "perfguard.store")
        assert [m for m in heavy if m in sys.modules] == []
"""


def test_a_plain_run_makes_no_perfguard_state_imports_nothing_heavy_and_writes_nothing(tmp_path, run_pytest):
    # An ordinary test run in a project that has perfguard installed: the plugin loads (its entry
    # point) and must cost next to nothing. A new interpreter, so that what the run imports shows.
    write(tmp_path, "test_ordinary.py", PLAIN_TEST)
    (tmp_path / "baselines").mkdir()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = run_pytest(tmp_path, fresh=True)
    result.assert_outcomes(passed=1)
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "__pycache__" not in p.parts)
    assert after == before  # no reports/, nothing in baselines/
    assert "perfguard" not in {line.strip("= ") for line in result.outlines}


UNUSED_TEST = """
    import dataclasses, sys

    def test_unused():
        loaded = sorted(m for m in sys.modules if m == "perfguard" or m.startswith("perfguard."))
        print("perfguard modules:", " ".join(loaded))
        built = [f"{m}.{name}" for m in loaded for name, value in vars(sys.modules[m]).items()
                 if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == m]
        print("perfguard dataclasses:", " ".join(built))
"""
# What a run that neither declares a case nor gives a perfguard option may import of perfguard: the
# plugin and the option table it declares to pytest. Parsing the options (plugin/options.py) waits for
# an option given, the watchdog for a perf case (the plugin keeps the copy of stderr it needs).
UNUSED_RUN_MODULES = ["perfguard", "perfguard.defaults", "perfguard.options", "perfguard.plugin",
                      "perfguard.plugin.register"]


def test_a_run_that_uses_no_perfguard_imports_only_the_plugin_and_its_options(tmp_path, run_pytest):
    # Installed but unused must be nearly free (benchmarks/unused_cost.py): the record's dataclasses
    # alone took most of 24 ms to import. A new interpreter, so that what the run imports shows.
    write(tmp_path, "test_unused.py", UNUSED_TEST)
    result = run_pytest(tmp_path, "-s", fresh=True)
    result.assert_outcomes(passed=1)
    [line] = [line for line in result.outlines if "perfguard modules:" in line]
    assert line.split("perfguard modules:")[1].split() == UNUSED_RUN_MODULES
    # Nor does it build a dataclass: one writes and compiles its methods in every process, half a
    # millisecond of every run (the option table's Option is a NamedTuple).
    [line] = [line for line in result.outlines if "perfguard dataclasses:" in line]
    assert line.split("perfguard dataclasses:")[1].split() == []


HOOKS_TEST = """
    def test_hooks(request):
        manager = request.config.pluginmanager
        ours = {name for name, _ in manager.list_name_plugin() if name == "perfguard" or name.startswith("perfguard-")}
        hooks = {impl.function.__name__ for caller in vars(manager.hook).values() if hasattr(caller, "get_hookimpls")
                 for impl in caller.get_hookimpls() if impl.plugin_name in ours}
        print("perfguard hooks:", " ".join(sorted(hooks)))
"""
# The hooks a run that gives no perfguard option calls (pytest registers, and calls, every hook a plugin
# holds): declaring the options, reading them, a perf case's collection, xdist's worker count (asked
# before any configure). A run that gave one registers the rest where it sets up (plugin/run.py).
UNUSED_RUN_HOOKS = ["pytest_addoption", "pytest_configure", "pytest_pycollect_makeitem", "pytest_xdist_auto_num_workers"]
RUN_END_HOOKS = {"pytest_configure_node", "pytest_runtestloop", "pytest_sessionfinish", "pytest_terminal_summary",
                 "pytest_unconfigure", "pytest_xdist_setupnodes"}


@pytest.mark.parametrize("args", [(), ("--perfguard-threshold=5",), ("--perfguard",), ("--perfguard-cases=cases.txt",)])
def test_a_run_registers_only_the_hooks_its_options_call_for(tmp_path, run_pytest, args):
    write(tmp_path, "test_hooks.py", HOOKS_TEST)
    (tmp_path / "cases.txt").write_text("test_hooks.py::test_hooks\n")
    result = run_pytest(tmp_path, "-s", *args)
    result.assert_outcomes(passed=1)
    [line] = [line for line in result.outlines if "perfguard hooks:" in line]
    hooks = line.split("perfguard hooks:")[1].split()
    if args == ("--perfguard",):  # a run that records: its recorder, its end, its workers' GPUs
        assert set(UNUSED_RUN_HOOKS) | RUN_END_HOOKS <= set(hooks)
    elif args == ("--perfguard-cases=cases.txt",):  # what the file does not list is deselected
        assert hooks == sorted([*UNUSED_RUN_HOOKS, "pytest_collection_modifyitems"])
    else:  # no option, or one that only sets a value: nothing to record, nothing to deselect
        assert hooks == UNUSED_RUN_HOOKS


def test_nothing_is_measured_or_written_when_no_case_ran(tmp_path, run_pytest):
    write(tmp_path, "test_one.py", "def test_plain():\n    assert True\n")
    result = run_pytest(tmp_path, "--perfguard")
    result.assert_outcomes(passed=1)
    assert not (tmp_path / "reports").exists()
    assert "perfguard: wrote" not in str(result.stdout)
