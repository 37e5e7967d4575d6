"""perfguard: GPU performance as a tested property of a codebase.

    from perfguard import perf_case

    @perf_case(params={"n": [2**20]}, bytes=lambda n: 3 * n * 4)
    def vector_add(n, device):
        a = torch.randn(n, device=device); b = torch.randn_like(a)
        return lambda: a + b

Importing this package imports neither torch, jinja2 nor pytest; measurement loads torch when a
case first runs.
"""

from __future__ import annotations

from perfguard.case import CaseInstance, CaseSpec, perf_case
from perfguard.errors import BaselineError, ConfigError, MeasurementError, PerfguardError, ReportError
from perfguard.model import CaseResult, DeviceInfo, RunRecord

__version__ = "0.1.0"

__all__ = [
    "BaselineError",
    "CaseInstance",
    "CaseResult",
    "CaseSpec",
    "ConfigError",
    "DeviceInfo",
    "MeasurementError",
    "PerfguardError",
    "ReportError",
    "RunRecord",
    "__version__",
    "perf_case",
]
