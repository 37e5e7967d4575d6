"""A case that cannot be measured errors alone, with one line naming it; non-finite timings are an error.

(DESIGN §7.) The GPU half, a case running out of GPU memory, is in test_gpu.py.
"""

from __future__ import annotations

import math
import re
import textwrap

import pytest

from perfguard import MeasurementError
from perfguard.measure.timers import check_finite
from perfguard.model import loads_record

BAD_SUITE = """
    import itertools
    import time

    from perfguard import perf_case

    def load_kernel(name):
        raise ValueError(f"no kernel named {name!r}")

    @perf_case
    def setup_raises(device):
        load_kernel("softmax_v2")
        return lambda: None

    @perf_case
    def returns_a_list(device):
        return [1, 2, 3]

    @perf_case
    def call_raises(device):
        def run():
            raise RuntimeError("kernel crashed")

        return run

    @perf_case
    def fails_on_fourth_call(device):
        calls = itertools.count(1)

        def run():
            if next(calls) >= 4:
                raise RuntimeError("state exhausted")

        return run

    @perf_case(params={"n": [1, 2]})
    def healthy(n, device):
        return lambda: time.sleep(0.001)
"""

SETUP_RAISES = "setup_raises: setup raised ValueError: no kernel named 'softmax_v2'"
RETURNS_A_LIST = (
    "returns_a_list: setup returned a list, not a callable; return the function to time, e.g. `return lambda: op(x)`"
)
CALL_RAISES = "call_raises: the timed callable raised RuntimeError: kernel crashed"


SECTION = re.compile(r"^(_{3,}|={3,}) (.+) (_{3,}|={3,})$")


def failure_lines(result: pytest.RunResult, test_name: str) -> list[str]:
    """The lines of one test's section under FAILURES."""
    lines = result.outlines
    header = next(i for i, line in enumerate(lines) if (m := SECTION.match(line)) and m.group(2) == test_name)
    end = next((i for i, line in enumerate(lines[header + 1 :], header + 1) if SECTION.match(line)), len(lines))
    return lines[header + 1 : end]


@pytest.fixture(scope="module", params=["smoke", "measure"])
def bad_run(request, tmp_path_factory, run_pytest):
    """The suite run once per mode; the tests below look at that one run."""
    path = tmp_path_factory.mktemp(f"bad-{request.param}")
    (path / "test_bad.py").write_text(textwrap.dedent(BAD_SUITE))
    args = ("--perfguard", "--perfguard-budget", "0.1") if request.param == "measure" else ()
    return request.param, run_pytest(path, "-v", *args), path


def test_cases_that_cannot_run_fail_alone_and_the_rest_run_on(bad_run):
    mode, result, _ = bad_run
    if mode == "measure":
        result.assert_outcomes(failed=4, passed=2)
    else:  # a smoke run calls once: the fourth call never comes
        result.assert_outcomes(failed=3, passed=3)
    # The healthy cases come last in the file: they ran, and passed, after every failure.
    verdicts = [line.split()[:2] for line in result.outlines if line.startswith("test_bad.py::")]
    failed = [i for i, (_, verdict) in enumerate(verdicts) if verdict == "FAILED"]
    passed = [node for node, verdict in verdicts if verdict == "PASSED"]
    assert verdicts[-2:] == [["test_bad.py::healthy[n=1]", "PASSED"], ["test_bad.py::healthy[n=2]", "PASSED"]]
    assert failed and max(failed) < len(verdicts) - 2
    assert len(passed) == (3 if mode == "smoke" else 2)
    assert "INTERNALERROR" not in str(result.stdout) + str(result.stderr)


def test_a_setup_that_raises_fails_with_one_line_naming_the_case_and_the_users_frames(bad_run):
    _, result, path = bad_run
    lines = failure_lines(result, "setup_raises")
    assert lines[0] == SETUP_RAISES
    frames = "\n".join(lines[1:])
    assert f'File "{path / "test_bad.py"}", line' in frames
    assert "in setup_raises" in frames and "in load_kernel" in frames  # the user's own frames
    assert "perfguard/measure" not in frames and "perfguard/plugin" not in frames  # not ours


def test_a_setup_returning_a_non_callable_says_what_to_return(bad_run):
    _, result, _ = bad_run
    assert failure_lines(result, "returns_a_list") == [RETURNS_A_LIST]


def test_a_callable_that_raises_fails_its_case_with_the_users_frame(bad_run):
    _, result, _ = bad_run
    lines = failure_lines(result, "call_raises")
    assert lines[0] == CALL_RAISES
    assert any(line.strip().endswith("in run") for line in lines[1:])


def test_a_callable_failing_during_measurement_errors_only_itself(bad_run):
    mode, result, path = bad_run
    if mode == "smoke":
        assert not (path / "reports").exists()
        return
    lines = failure_lines(result, "fails_on_fourth_call")
    assert lines[0].startswith("fails_on_fourth_call: ") and lines[0].endswith(" raised RuntimeError: state exhausted")
    record = loads_record((path / "reports" / "perfguard.json").read_text(), "record")
    status = {r.id: (r.status, (r.error or "").splitlines()[0] if r.error else None) for r in record.results}
    assert status == {
        "setup_raises": ("error", SETUP_RAISES),
        "returns_a_list": ("error", RETURNS_A_LIST),
        "call_raises": ("error", CALL_RAISES),
        "fails_on_fourth_call": ("error", lines[0]),
        "healthy[n=1]": ("ok", None),
        "healthy[n=2]": ("ok", None),
    }
    for r in record.results:
        if r.status == "error":
            assert r.judged_time is None and r.samples_ms == (), r.id
        else:
            assert r.judged_time.n >= 10, r.id


# --- a run whose only case errors ---------------------------------------------------------------------

ONLY_CASE_ERRORS = {  # a test file whose one perf case errors before it has a result: (source, the case, its error)
    "an unknown keyword": (
        "from perfguard import perf_case\n\n@perf_case(bytes=8, colour=1)\ndef broken(device):\n    return lambda: None\n",
        "broken", "perf_case 'broken' (test_only.py:3): unknown keyword 'colour'"),
    "a grid the setup does not take": (
        "from perfguard import perf_case\n\n@perf_case(params={'n': [1]}, bytes=8)\ndef broken(device):\n    return lambda: None\n",
        "broken", "perf_case 'broken' (test_only.py:3): setup does not take parameter(s) n"),
    "perf() given an unknown keyword": (
        "def test_fixture(perf):\n    perf(lambda: None, bytes=8, colour=2)\n",
        "test_fixture", "perf() in test_only.py::test_fixture (test_only.py:2): unknown keyword 'colour'"),
}


@pytest.mark.parametrize("kind", ONLY_CASE_ERRORS)
def test_a_run_whose_only_case_errors_writes_its_reports_naming_the_error(tmp_path, run_pytest, kind):
    source, case, error = ONLY_CASE_ERRORS[kind]
    (tmp_path / "test_only.py").write_text(source)
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("perfguard.json", "perfguard.md", "perfguard.html"):  # an earlier run's, which must not look current
        (reports / name).write_text("an earlier run's report")
    result = run_pytest(tmp_path, "--perfguard")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    record = loads_record((reports / "perfguard.json").read_text(), "record")
    assert [(r.id, r.status) for r in record.results] == [(case, "error")] and record.status == "complete"
    assert record.results[0].error.startswith(error)
    for name in ("perfguard.md", "perfguard.html"):
        text = (reports / name).read_text()
        assert "an earlier run's report" not in text and case in text, name
    summary = result.outlines[result.outlines.index(next(line for line in result.outlines if " perfguard " in line)):]
    assert any(line.startswith(f"error: {error}") for line in summary), summary


# --- non-finite timings -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -0.004])
def test_a_non_finite_or_negative_time_voids_the_measurement(bad):
    samples = [0.01] * 20 + [bad] + [0.01] * 5
    with pytest.raises(MeasurementError) as info:
        check_finite(samples, "vector_add[n=1024]")
    message = str(info.value)
    assert message.startswith("vector_add[n=1024]: the timer returned 1 non-finite or negative time(s)")
    assert repr(bad) in message
    assert "\n" not in message


def test_all_zero_times_are_below_the_timers_resolution():
    with pytest.raises(MeasurementError, match=r"^noop: most calls took 0 ms by this timer, below its resolution"):
        check_finite([0.0] * 50, "noop")


def test_finite_times_pass_even_with_a_few_zeros():
    check_finite([0.0, 0.0, 0.003, 0.004, 0.004, 0.005], "tiny")
    check_finite([1.5] * 10, "steady")


def test_a_median_below_the_timers_resolution_voids_the_measurement():
    with pytest.raises(MeasurementError, match="tiny"):
        check_finite([0.0] * 6 + [0.001] * 5, "tiny")
