"""Results ride on the test reports: under pytest-xdist the controller gets every case once.

One run with two workers, which several tests look at: a new interpreter for the controller, whose
modules a probe lists, and for each worker (as xdist starts them), whose torch reads OMP_NUM_THREADS
at its import, as in a user's run. test_left_processes.py's suite runs in it too: a child a worker's
case leaves running is named in the result that travels to the controller.
"""

from __future__ import annotations

import textwrap

import pytest

from test_left_processes import SUITE as LEFT_SUITE
from test_left_processes import check_the_lines, check_the_results, kill, pids_of

from perfguard.model import loads_record, to_jsonable

SUITE = textwrap.dedent(
    """
    import time

    import torch

    from perfguard import perf_case

    @perf_case(params={"ms": [1, 2, 3, 4]})
    def nap(ms):
        with open("threads.txt", "a") as f:  # what torch measures this case with
            f.write(f"{torch.get_num_threads()}\\n")
        return lambda: time.sleep(ms / 1000)
    """
)

# On the controller, when the first result arrives: which of the run end's heavy modules are loaded.
# (And in every process of the run, what tests/conftest.py does at the end: pytest's closing garbage
# collections skip the objects torch made, a second of CPU a worker.)
CONTROLLER_PROBE = textwrap.dedent(
    """
    import gc, json, sys

    def pytest_configure(config):
        global CONFIG
        CONFIG = config

    def pytest_unconfigure(config):
        gc.freeze()

    def pytest_runtest_logreport(report):
        if report.when == "call" and not hasattr(CONFIG, "workerinput"):
            with open("controller-modules.json", "a") as f:
                f.write(json.dumps(sorted(m for m in ("scipy.stats", "jinja2") if m in sys.modules)) + "\\n")
    """
)


NAPS = [f"nap[ms={ms}]" for ms in (1, 2, 3, 4)]
LEFT = ["after_it", "leaves_a_child", "leaves_a_grandchild", "leaves_a_new_session", "waits_for_its_child"]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory, run_pytest):
    path = tmp_path_factory.mktemp("xdist")
    (path / "test_naps.py").write_text(SUITE)
    (path / "test_left.py").write_text(textwrap.dedent(LEFT_SUITE))
    (path / "conftest.py").write_text(CONTROLLER_PROBE)
    pids = path / "pids.txt"
    try:
        # A new interpreter: the controller's probe asks which modules it loaded, and when.
        result = run_pytest(path, "-n", "2", "--perfguard", "--perfguard-budget", "0.1", fresh=True,
                            env={"OMP_NUM_THREADS": "2", "PIDS": str(pids)})
        assert result.ret == 0, "\n".join(result.outlines[-30:])
        yield path, result, loads_record((path / "reports" / "perfguard.json").read_text(), "record")
    finally:
        kill(pids)


def test_two_workers_send_every_case_to_the_controller_once(two_workers):
    path, _, record = two_workers
    assert sorted(r.id for r in record.results) == sorted(NAPS + LEFT)
    assert {r.status for r in record.results} == {"ok"}
    assert len(record.devices) == 1 and record.devices[0].kind == "cpu"
    assert sorted(v.case_id for v in record.verdicts) == sorted(r.id for r in record.results)
    # The controller loaded jinja2 (and the template) while the workers measured, not after the last
    # case; the verdicts' statistics need no scipy on the controller.
    first = (path / "controller-modules.json").read_text().splitlines()[0]
    assert first == '["jinja2"]'


def test_two_workers_measuring_on_one_cpu_are_told_they_timed_each_other(two_workers):
    _, result, record = two_workers
    (said,) = [line for line in result.outlines if line.startswith("CPU figures (host clock) are rough")]
    assert "2 xdist workers measured on this CPU at once and timed each other's work: use -n 0" in said
    assert record.options["cpu_workers"] == 2


def test_an_update_from_two_workers_on_one_cpu_is_refused_before_it_measures(tmp_path, run_pytest):
    (tmp_path / "test_naps.py").write_text(SUITE)
    result = run_pytest(tmp_path, "-n", "2", "--perfguard", "--perfguard-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: perfguard: --perfguard-update with 2 xdist workers measuring on this CPU at once: they would time each " \
           "other's work, and the baseline's tolerances would be too wide to judge by; record it without xdist (-n 0)" \
           in result.errlines, result.errlines
    assert not (tmp_path / "baselines").exists() and not (tmp_path / "reports").exists()


def test_each_worker_measures_with_the_threads_omp_num_threads_asks_for(two_workers):
    # The user's OMP_NUM_THREADS, read by each worker's torch at its import, is kept (with none set, a
    # CPU run measures with one thread: test_plugin.py); the workers' choice is sent to the controller.
    path, result, record = two_workers
    assert set((path / "threads.txt").read_text().split()) == {"2"}
    (said,) = [line for line in result.outlines if line.startswith("CPU figures (host clock) are rough")]
    assert "torch measured with 2 thread(s)" in said
    assert record.options["cpu_threads"] == 2


def test_a_process_a_workers_case_left_running_is_one_line_and_named_in_the_result_it_sent(two_workers):
    # The other worker's cases ran beside it, their own processes started at the same moments: none is
    # blamed for another's.
    path, result, record = two_workers
    pids = pids_of(path / "pids.txt")
    check_the_lines(result, pids)
    check_the_results({r.id: r for r in record.results}, pids)


def test_version_strings_leave_as_plain_str():
    # torch.__version__ is a str subclass that xdist's channel refuses to carry.
    class Version(str):
        pass

    out = to_jsonable({"torch": Version("2.13.0")})
    assert type(out["torch"]) is str
