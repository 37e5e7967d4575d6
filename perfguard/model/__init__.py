"""The run record: what a run measured, as frozen dataclasses (`records`), and the only JSON
(de)serialisation (`codec`), with a schema version. Import from here: `from perfguard.model import RunRecord, dumps`.
"""

from __future__ import annotations

from perfguard.model.codec import (
    dumps,
    from_jsonable,
    loads_baseline,
    loads_record,
    round_sig,
    to_jsonable,
)
from perfguard.model.records import (
    BaselineEntry,
    BaselineFile,
    CASE_STATUSES,
    Calibration,
    CaseResult,
    DeviceInfo,
    Latency,
    MAX_BASELINE_SAMPLES,
    MAX_STORED_SAMPLES,
    Memory,
    MemoryBreakdown,
    Metrics,
    POWER_CAP,
    Profile,
    ProfileOp,
    RunRecord,
    SCHEMA_VERSION,
    SIGNIFICANT_DIGITS,
    Telemetry,
    VERDICT_STATUSES,
    Verdict,
    thin_samples,
)

__all__ = [
    "BaselineEntry",
    "BaselineFile",
    "CASE_STATUSES",
    "Calibration",
    "CaseResult",
    "DeviceInfo",
    "Latency",
    "MAX_BASELINE_SAMPLES",
    "MAX_STORED_SAMPLES",
    "Memory",
    "MemoryBreakdown",
    "Metrics",
    "POWER_CAP",
    "Profile",
    "ProfileOp",
    "RunRecord",
    "SCHEMA_VERSION",
    "SIGNIFICANT_DIGITS",
    "Telemetry",
    "VERDICT_STATUSES",
    "Verdict",
    "dumps",
    "from_jsonable",
    "loads_baseline",
    "loads_record",
    "round_sig",
    "thin_samples",
    "to_jsonable",
]
