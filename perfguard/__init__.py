"""perfguard: GPU performance as a tested property of a codebase.

    from perfguard import perf_case

    @perf_case(params={"n": [2**20]}, bytes=lambda n: 3 * n * 4)
    def vector_add(n, device):
        a = torch.randn(n, device=device); b = torch.randn_like(a)
        return lambda: a + b

Importing this package imports neither torch, jinja2 nor pytest; measurement loads torch when a
case first runs. The names below are loaded on first use (PEP 562): the pytest plugin,
`perfguard.plugin`, is imported by every pytest run where perfguard is installed, and a run that
uses none of them must not pay for the record's dataclasses (benchmarks/unused_cost.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each public name and the module that defines it.
_HOMES = {
    "CaseInstance": "perfguard.case",
    "CaseSpec": "perfguard.case",
    "perf_case": "perfguard.case",
    "BaselineError": "perfguard.errors",
    "ConfigError": "perfguard.errors",
    "MeasurementError": "perfguard.errors",
    "PerfguardError": "perfguard.errors",
    "ReportError": "perfguard.errors",
    "CaseResult": "perfguard.model",
    "DeviceInfo": "perfguard.model",
    "RunRecord": "perfguard.model",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'perfguard' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later lookups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
