"""Which NVML readings make a case throttled or power-capped (no GPU needed: snapshots are plain data)."""

from __future__ import annotations

from perfguard.measure.nvml import Snapshot
from perfguard.measure.telemetry import Watch


def watch(*snaps: Snapshot, max_clock: int = 1980) -> Watch:
    w = Watch(None, max_clock)  # no NVML handle: tick() adds nothing, the snapshots are ours
    w.snaps = list(snaps)
    return w


def snap(clock: int, *reasons: str) -> Snapshot:
    return Snapshot(sm_clock_mhz=clock, temperature_c=50, power_w=400.0, throttle_reasons=reasons, memory_used_bytes=0)


def test_a_power_cap_that_held_the_clock_down_is_capped_but_not_throttled():
    t = watch(snap(345), snap(1800, "sw_power_cap"), snap(1700, "sw_power_cap")).result()
    assert t.power_capped and not t.throttled
    assert t.sm_clock_mhz_before == 345 and t.sm_clock_mhz_mean == 1750


def test_a_stale_power_cap_bit_at_full_clock_is_not_capped():
    t = watch(snap(1980, "sw_power_cap"), snap(1980, "sw_power_cap"), snap(1980)).result()
    assert not t.power_capped and t.throttle_reasons == ("sw_power_cap",)


def test_a_thermal_slowdown_is_throttled():
    t = watch(snap(1980), snap(1500, "hw_thermal_slowdown")).result()
    assert t.throttled and not t.power_capped


def test_the_idle_clock_before_the_case_is_not_part_of_the_mean():
    t = watch(snap(345), snap(1980), snap(1980)).result()
    assert t.sm_clock_mhz_mean == 1980 and not t.throttled and not t.power_capped


def test_no_readings_means_no_telemetry():
    assert watch().result() is None


def test_snapshots_while_sampling_come_at_most_once_a_tick_but_the_first_and_last_always(monkeypatch):
    from perfguard.measure import nvml, telemetry

    taken = []
    monkeypatch.setattr(nvml, "snapshot", lambda handle: taken.append(handle) or snap(1980))  # NVML needs a GPU
    now = [0.0]
    w = telemetry.Watch("gpu", 1980, clock=lambda: now[0])
    for _ in range(10):  # ten 4 ms batches: 40 ms, two ticks' worth
        now[0] += 0.004
        w.tick()
    assert len(taken) == 1 + 2
    w.result()
    assert len(taken) == 4  # the end of the case is always read
