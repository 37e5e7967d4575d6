"""An acceptance file: the changes a pull request says are intended, each a reviewed line in the
repository (`baselines/accepted-changes.json`), read by `perfguard ab` and by main's gate.

Each entry names a case, a metric, the figure accepted (the head's, in the metric's unit: ms, bytes,
or a count per call), the reason, and where it was measured; one entry a device, case and metric
(model/checks.py). A verdict whose figure is within the accepted one reads `accepted`
(analysis/acceptance.py), unless the figure is far past the baseline's; once the baseline holds it, the
entry is spent.
"""

from __future__ import annotations

import dataclasses

from perfguard.model.kinds import Metric

ACCEPTANCE_SCHEMA = 1
# Beside the baselines, and named so that no device slug (nvidia-h200, cpu-...) is it.
FILE_NAME = "accepted-changes.json"


@dataclasses.dataclass(frozen=True)
class AcceptedChange:
    case_id: str
    metric: Metric
    device: str  # the device slug it was measured on
    figure: float  # the accepted figure, in the metric's unit
    baseline: float | None  # what it was judged against when accepted
    reason: str
    commit: str | None = None  # the measured revision
    accepted_at: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """What one entry accepts, and a file holds once: a device's case's metric."""
        return self.device, self.case_id, self.metric


@dataclasses.dataclass(frozen=True)
class Acceptances:
    changes: tuple[AcceptedChange, ...] = ()
    schema_version: int = ACCEPTANCE_SCHEMA

    def find(self, device: str, case_id: str, metric: str) -> AcceptedChange | None:
        return next((c for c in self.changes if c.key == (device, case_id, metric)), None)

    def with_change(self, change: AcceptedChange) -> Acceptances:
        """These acceptances with `change` in place of any earlier entry for its case and metric."""
        kept = tuple(c for c in self.changes if c.key != change.key)
        return dataclasses.replace(self, changes=tuple(sorted((*kept, change), key=lambda c: c.key)))
