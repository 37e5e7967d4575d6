"""The end-of-run table in the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from perfguard.model import CaseResult, DeviceInfo
from perfguard.report import units

COLUMNS = ("case", "median", "±CI", "GB/s", "% peak BW", "TFLOP/s", "peak mem")


def table(results: Iterable[CaseResult], devices: Iterable[DeviceInfo] = ()) -> list[str]:
    rows = []
    errors = []
    for r in results:
        if r.status == "error":
            errors.append(f"error: {(r.error or r.id).splitlines()[0]}")
            continue
        if r.latency is None:
            continue
        m = r.metrics
        rows.append(
            (
                r.id,
                units.duration(r.latency.median_ms),
                f"±{r.latency.ci_half_width_pct:.2f}%",
                units.number(m.gbps if m else None),
                units.percent(m.bandwidth_util if m else None),
                units.number(m.tflops if m else None, 2),
                units.size(r.memory.peak_allocated_bytes if r.memory else None),
            )
        )
    lines = [f"device: {d.name} ({d.slug})" for d in devices]
    if rows:
        widths = [max(len(str(row[i])) for row in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
        fmt = lambda row: "  ".join(  # noqa: E731
            str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        )
        lines.append(fmt(COLUMNS))
        lines.extend(fmt(row) for row in rows)
    lines.extend(errors)
    return lines
