"""What a case's test report carries from the measurer to the recorder.

Each is a `report.user_properties` entry holding plain JSON values (`model.to_jsonable`), so that it
survives pytest-xdist's trip from the worker that measured the case to the controller that writes the
files; without xdist the same entries travel within the one process.
"""

from __future__ import annotations

RESULT_KEY = "perfguard"  # the case's CaseResult, judged (and profiled): the final one
DEVICE_KEY = "perfguard_device"  # the DeviceInfo it ran on
VERDICTS_KEY = "perfguard_verdicts"  # its verdicts against the baseline (under --perfguard only)
THREADS_KEY = "perfguard_cpu_threads"  # torch's threads while measuring on a CPU (measure.torch_state)
