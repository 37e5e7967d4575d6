"""What is judged when a run and its baseline come from two GPU models (issue 48).

A time (and the bandwidth taken from it) is the model's: another model's file never judges it. What a
call does is not: on an H100 against the H200 file, memory (peak, footprint, retained) agreed in 134 of
134 cases and the counts in 112; the 22 others were the GEMM kernels cuBLAS picks by model, and one
memset count. So where both models share an architecture (compute capability and SM count) and the
software, the figures in ACROSS are judged as on the model's own file; where either differs, nothing is.
Pure, one place that decides it for the gate, `perfguard compare` and `perfguard ab`.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping

from perfguard.model import COMPILE_KINDS, MEMORY_METRICS, DeviceInfo

# The figures that do not depend on the model: judged across models. Not kernels (cuBLAS picks its tile,
# and so its kernel and their number, by model) nor memsets (one count differed), nor any time.
ACROSS: frozenset[str] = frozenset({"syncs", "copies", "copy_bytes", "allocations", "segments", "aten_ops",
                                    *COMPILE_KINDS, *MEMORY_METRICS})


@dataclasses.dataclass(frozen=True, slots=True)
class OtherModel:
    """The baseline is another GPU model's: which, and what else differs (nothing: only the model)."""

    model: str  # the baseline's GPU model, as its file names it
    differs: tuple[str, ...] = ()  # "compute capability 9.0 → 8.0", "torch 2.11.0 → 2.12.0"

    def judges(self, metric: str) -> bool:
        """Whether `metric` is judged against the other model's figures."""
        return not self.differs and metric in ACROSS


def other_model(baseline: DeviceInfo, current: DeviceInfo) -> OtherModel | None:
    """None where both are one model; else the other model and what beyond the model differs. An
    architecture unknown on either side (a record from before it was kept) differs: it cannot be shown alike."""
    if baseline.same_model(current):
        return None
    differs = []
    for what, old, new in (("compute capability", baseline.compute_capability, current.compute_capability),
                           ("SM count", baseline.sm_count, current.sm_count)):
        if old is None or new is None or old != new:
            differs.append(f"{what} {_shown(old)} → {_shown(new)}")
    differs += env_differences(baseline.fingerprint(), current.fingerprint())
    return OtherModel(baseline.name, tuple(differs))


def env_differences(baseline: Mapping[str, object] | None, current: Mapping[str, object] | None
                    ) -> tuple[str, ...]:
    """Each software version that differs, as "torch 2.11.0 → 2.12.0"; nothing when either side is unknown."""
    if not baseline or not current:
        return ()
    diffs = []
    for key in sorted(set(baseline) | set(current)):
        old, new = baseline.get(key), current.get(key)
        if old != new:
            diffs.append(f"{key} {old if old is not None else 'n/a'} → {new if new is not None else 'n/a'}")
    return tuple(diffs)


def _shown(value: object) -> str:
    return "unknown" if value is None else str(value)
