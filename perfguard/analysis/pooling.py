"""Several runs of one side as one record: each case's samples pooled, its summary and figures recomputed.

`perfguard ab` measures each side in several rounds, interleaved with the other side's, so that slow
clock and temperature drift reach both sides alike; a side's verdict then rests on all its rounds'
samples together. Pure functions of records: no files, no devices.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from perfguard.analysis import metrics
from perfguard.analysis.moved import median_split
from perfguard.analysis.stats import summarize
from perfguard.model import CaseResult, Counters, DeviceInfo, RunRecord, Telemetry, TimeSummary, Timing, thin_timings


def pool_records(records: Sequence[RunRecord]) -> RunRecord:
    """The rounds of one side as one record (samples not thinned: the verdicts want them all)."""
    if not records:
        raise ValueError("no records to pool")
    devices = {d.uuid or d.slug: d for record in records for d in record.devices}
    models = {d.slug: d for d in devices.values()}
    by_id: dict[str, list[CaseResult]] = {}
    for record in records:
        for result in record.results:
            by_id.setdefault(result.id, []).append(result)
    first = records[0]
    return RunRecord(
        created_at=records[-1].created_at,
        perfguard_version=first.perfguard_version,
        devices=tuple(devices.values()),
        results=tuple(pool_case(by_id[case_id], models.get(by_id[case_id][0].device)) for case_id in sorted(by_id)),
        commit=first.commit,
        options={**first.options, "rounds": len(records)},
    )


def pool_case(results: Sequence[CaseResult], device: DeviceInfo | None) -> CaseResult:
    """One case over its rounds. Rounds that did not measure it (an error) are left out; if none did,
    the last round's result stands, error and all."""
    measured = [r for r in results if r.status == "ok" and r.samples_ms]
    if not measured:
        return results[-1]
    first = measured[0]
    # Every kind of time is judged (perfguard ab's verdicts): each kind's samples are pooled over the
    # rounds that took it; a kind no round kept samples of stands as the first round's.
    timings = dict(first.timings)
    for metric in dict.fromkeys(m for r in measured for m in r.timings):
        parts = [r.timings[metric] for r in measured if metric in r.timings]
        samples = [s for t in parts for s in t.samples_ms]
        if samples:
            timings[metric] = Timing(summarize(samples, _stops(t.summary for t in parts)), tuple(samples))
    pooled = dataclasses.replace(first, timings=timings)
    if device is not None:
        pooled = metrics.complete(pooled, device)
    # Peak memory is deterministic, so rounds agree; the largest is the safe one to keep.
    memories = [r.memory for r in measured if r.memory is not None and r.memory.peak_allocated_bytes is not None]
    return dataclasses.replace(
        pooled,
        counters=_counters([r.counters for r in measured if r.counters is not None]) or first.counters,
        memory=max(memories, key=lambda m: m.peak_allocated_bytes or 0) if memories else first.memory,
        telemetry=_telemetry([r.telemetry for r in measured if r.telemetry is not None]),
        setup_s=_total([r.setup_s for r in measured]),
        wall_s=_total([r.wall_s for r in measured]),
        passes_s=_summed([r.passes_s for r in measured]),
    )


def thinned(record: RunRecord) -> RunRecord:
    """The record as it is stored: at most MAX_STORED_SAMPLES samples per case, evenly over the rounds."""
    return dataclasses.replace(
        record, results=tuple(dataclasses.replace(r, timings=thin_timings(r.timings)) for r in record.results)
    )


def _stops(summaries: Iterable[TimeSummary | None]) -> str:
    return "+".join(sorted({s.stop_reason for s in summaries if s})) or "pooled"


def _telemetry(parts: list[Telemetry]) -> Telemetry | None:
    """Any round throttled or capped marks the pooled case so: its samples are in the pool."""
    if not parts:
        return None
    clocks = [t.sm_clock_mhz_mean for t in parts if t.sm_clock_mhz_mean is not None]
    return dataclasses.replace(
        parts[0],
        sm_clock_mhz_after=parts[-1].sm_clock_mhz_after,
        sm_clock_mhz_mean=statistics.fmean(clocks) if clocks else None,
        temperature_c_after=parts[-1].temperature_c_after,
        power_w_after=parts[-1].power_w_after,
        throttle_reasons=tuple(sorted({reason for t in parts for reason in t.throttle_reasons})),
        throttled=any(t.throttled for t in parts),
        power_capped=any(t.power_capped for t in parts),
    )


SPLITS = ("kernel_time", "op_time", "alloc_bytes")  # Counters' splits (model.TimeSplit, model.ByteSplit)


def _counters(parts: list[Counters]) -> Counters | None:
    """The rounds' counters: the counts are the same in every round, where the time (the memory) went is
    each row's median over them (analysis/moved.py)."""
    if not parts:
        return None

    def pooled(field: str) -> Any:
        splits = [getattr(c, field) for c in parts if getattr(c, field) is not None]
        return median_split(splits) if splits else None

    return dataclasses.replace(parts[0], **{field: pooled(field) for field in SPLITS})


def _total(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _summed(passes: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each pass's time over the pooled processes, in the order the passes ran."""
    total: dict[str, float] = {}
    for one in passes:
        for name, seconds in one.items():
            total[name] = total.get(name, 0.0) + seconds
    return total
