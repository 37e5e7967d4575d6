"""Clock, temperature, power and throttle state over a case, from NVML snapshots."""

from __future__ import annotations

from typing import Any

from perfguard.measure import nvml
from perfguard.model import POWER_CAP, Telemetry


class Watch:
    """Snapshots at the start, after each sampling batch, and at the end of a case."""

    def __init__(self, handle: Any):
        self.handle = handle
        self.snaps: list[nvml.Snapshot] = []
        self.tick()

    def tick(self) -> None:
        snap = nvml.snapshot(self.handle)
        if snap is not None:
            self.snaps.append(snap)

    def result(self) -> Telemetry | None:
        self.tick()
        if not self.snaps:
            return None
        first, last = self.snaps[0], self.snaps[-1]
        # The first snapshot is taken before any work, often at idle clocks: the mean is over the
        # snapshots taken while the case was running.
        busy = [s.sm_clock_mhz for s in self.snaps[1:] if s.sm_clock_mhz is not None]
        reasons = sorted({r for s in self.snaps[1:] for r in s.throttle_reasons})
        return Telemetry(
            sm_clock_mhz_before=first.sm_clock_mhz,
            sm_clock_mhz_after=last.sm_clock_mhz,
            sm_clock_mhz_mean=sum(busy) / len(busy) if busy else None,
            temperature_c_before=first.temperature_c,
            temperature_c_after=last.temperature_c,
            power_w_before=first.power_w,
            power_w_after=last.power_w,
            throttle_reasons=tuple(reasons),
            # The software power cap is how a heavy kernel runs under sustained load on many cards
            # (every matmul, conv and attention case on the H200 hit it): a state to compare, not a
            # fault. Thermal and hardware slowdowns are faults: they void the figure.
            throttled=any(r != POWER_CAP for r in reasons),
        )
