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


def test_two_workers_send_every_case_to_the_controller_once(tmp_path, run_pytest):
    (tmp_path / "test_naps.py").write_text(SUITE)
    result = run_pytest(tmp_path, "-n", "2", "--perfguard", "--perfguard-budget", "0.1", "--perfguard-update")
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    assert sorted(r.id for r in record.results) == [f"nap[ms={ms}]" for ms in (1, 2, 3, 4)]
    assert {r.status for r in record.results} == {"ok"}
    assert len(record.devices) == 1 and record.devices[0].kind == "cpu"
    assert sorted(v.case_id for v in record.verdicts) == sorted(r.id for r in record.results)
    (baseline,) = (tmp_path / "baselines").glob("cpu-*.json")
    assert baseline.read_text().count('"recorded_at"') == 4


def test_version_strings_leave_as_plain_str():
    # torch.__version__ is a str subclass that xdist's channel refuses to carry.
    class Version(str):
        pass

    out = to_jsonable({"torch": Version("2.13.0")})
    assert type(out["torch"]) is str
