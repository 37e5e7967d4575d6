"""Results ride on the test reports: under pytest-xdist the controller gets every case once."""

from __future__ import annotations

import textwrap

from perfguard.model import loads_record, to_jsonable

SUITE = textwrap.dedent(
    """
    import time
    from perfguard import perf_case

    @perf_case(params={"ms": [1, 2, 3, 4]})
    def nap(ms):
        return lambda: time.sleep(ms / 1000)
    """
)

# On the controller, when the first result arrives: which of the run end's heavy modules are loaded.
CONTROLLER_PROBE = textwrap.dedent(
    """
    import json, sys

    def pytest_configure(config):
        global CONFIG
        CONFIG = config

    def pytest_runtest_logreport(report):
        if report.when == "call" and not hasattr(CONFIG, "workerinput"):
            with open("controller-modules.json", "a") as f:
                f.write(json.dumps(sorted(m for m in ("scipy.stats", "jinja2") if m in sys.modules)) + "\\n")
    """
)


def test_two_workers_send_every_case_to_the_controller_once(tmp_path, run_pytest):
    (tmp_path / "test_naps.py").write_text(SUITE)
    (tmp_path / "conftest.py").write_text(CONTROLLER_PROBE)
    # A new interpreter: the controller's probe asks which modules it loaded, and when.
    result = run_pytest(tmp_path, "-n", "2", "--perfguard", "--perfguard-budget", "0.1", "--perfguard-update", fresh=True,
                        env={"OMP_NUM_THREADS": None})
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert sorted(r.id for r in record.results) == [f"nap[ms={ms}]" for ms in (1, 2, 3, 4)]
    assert {r.status for r in record.results} == {"ok"}
    assert len(record.devices) == 1 and record.devices[0].kind == "cpu"
    assert sorted(v.case_id for v in record.verdicts) == sorted(r.id for r in record.results)
    (baseline,) = (tmp_path / "baselines").glob("cpu-*.json")
    assert baseline.read_text().count('"commit": null,\n   "fingerprint"') == 4  # one entry per case
    # The controller loaded jinja2 (and the template) while the workers measured, not after the last
    # case; the verdicts' statistics need no scipy on the controller.
    first = (tmp_path / "controller-modules.json").read_text().splitlines()[0]
    assert first == '["jinja2"]'


def test_two_workers_measuring_on_one_cpu_are_told_they_timed_each_other(tmp_path, run_pytest):
    (tmp_path / "test_naps.py").write_text(SUITE)
    result = run_pytest(tmp_path, "-n", "2", "--perfguard", "--perfguard-budget", "0.1", env={"OMP_NUM_THREADS": None})
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    (said,) = [line for line in result.outlines if line.startswith("CPU figures (host clock) are rough")]
    assert "2 xdist workers measured on this CPU at once and timed each other's work: use -n 0" in said
    assert "torch measured with 1 thread(s)" in said  # the workers' choice, sent to the controller
    options = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record").options
    assert (options["cpu_workers"], options["cpu_threads"]) == (2, 1)


def test_version_strings_leave_as_plain_str():
    # torch.__version__ is a str subclass that xdist's channel refuses to carry.
    class Version(str):
        pass

    out = to_jsonable({"torch": Version("2.13.0")})
    assert type(out["torch"]) is str
