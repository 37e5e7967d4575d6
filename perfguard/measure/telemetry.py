"""Clock, temperature, power and throttle state over a case, from NVML snapshots."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from perfguard.measure import nvml
from perfguard.model import POWER_CAP, Telemetry


# A mean SM clock under this share of the maximum, with the power-cap reason seen, is a capped case
# (matmuls ran at 89-94% of 1980 MHz under the cap; light cases with a stale cap bit at 100%).
CAPPED_CLOCK_SHARE = 0.98


# Snapshots while sampling at most this often: five NVML queries each, and a caller's sample is 4 ms.
TICK_S = 0.02


class Watch:
    """Snapshots at the start, after sampling batches (at most one each TICK_S), and at the end of a case."""

    def __init__(self, handle: Any, max_sm_clock_mhz: int | None = None, clock: Callable[[], float] = time.perf_counter):
        self.handle = handle
        self.max_sm_clock_mhz = max_sm_clock_mhz
        self.snaps: list[nvml.Snapshot] = []
        self.clock = clock
        self.last = -math.inf
        self.tick(force=True)

    def tick(self, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self.last < TICK_S:
            return
        self.last = now
        snap = nvml.snapshot(self.handle)
        if snap is not None:
            self.snaps.append(snap)

    def result(self) -> Telemetry | None:
        self.tick(force=True)
        if not self.snaps:
            return None
        first, last = self.snaps[0], self.snaps[-1]
        # The first snapshot is taken before any work, often at idle clocks: the mean is over the
        # snapshots taken while the case was running.
        busy = [s.sm_clock_mhz for s in self.snaps[1:] if s.sm_clock_mhz is not None]
        reasons = sorted({r for s in self.snaps[1:] for r in s.throttle_reasons})
        mean = sum(busy) / len(busy) if busy else None
        # NVML keeps the power-cap reason set for a while after a heavy kernel: a light case that
        # follows one ran at full clock with the bit still up. Only a clock held down counts.
        capped = POWER_CAP in reasons and (
            mean is None or not self.max_sm_clock_mhz or mean < CAPPED_CLOCK_SHARE * self.max_sm_clock_mhz
        )
        return Telemetry(
            sm_clock_mhz_before=first.sm_clock_mhz,
            sm_clock_mhz_after=last.sm_clock_mhz,
            sm_clock_mhz_mean=mean,
            temperature_c_before=first.temperature_c,
            temperature_c_after=last.temperature_c,
            power_w_before=first.power_w,
            power_w_after=last.power_w,
            throttle_reasons=tuple(reasons),
            # The software power cap is how a heavy kernel runs under sustained load on many cards
            # (every matmul, conv and attention case on the H200 hit it): a state to compare, not a
            # fault. Thermal and hardware slowdowns are faults: they void the figure.
            throttled=any(r != POWER_CAP for r in reasons),
            power_capped=capped,
        )
