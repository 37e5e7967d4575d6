"""What a case's test report carries from the measurer to the recorder, and the error result of a perf
case whose report carries none.

Each is a `report.user_properties` entry holding plain JSON values (`model.to_jsonable`), so that it
survives pytest-xdist's trip from the worker that measured the case to the controller that writes the
files; without xdist the same entries travel within the one process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from perfguard.model import CaseResult

RESULT_KEY = "perfguard"  # the case's CaseResult, judged (and profiled): the final one
DEVICE_KEY = "perfguard_device"  # the DeviceInfo it ran on
VERDICTS_KEY = "perfguard_verdicts"  # its verdicts against the baseline (under --perfguard only)
THREADS_KEY = "perfguard_cpu_threads"  # torch's threads while measuring on a CPU (measure.torch_state)


def failure_result(report: pytest.TestReport) -> CaseResult | None:
    """An error result for a perf case whose report failed without one (a wrong declaration fails its
    setup, before anything is measured), so that a run whose only case errors still writes its record
    and reports; None for any other report."""
    if not (report.failed and "perfguard" in report.keywords) or any(k == RESULT_KEY for k, _ in report.user_properties):
        return None
    from perfguard.model import CaseResult

    crash = getattr(report.longrepr, "reprcrash", None)  # the message, not the traceback
    error = (crash.message if crash is not None else report.longreprtext).strip().removeprefix("Failed: ")
    case_id = report.nodeid.rpartition("::")[2]
    return CaseResult(id=case_id, name=case_id.split("[", 1)[0], status="error", nodeid=report.nodeid,
                      error=error or f"{report.nodeid} failed in its {report.when}")
