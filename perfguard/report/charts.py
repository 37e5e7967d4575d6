"""Geometry of the report's plots, in SVG pixels; the templates draw it.

The plots are hand-built SVG rather than matplotlib figures: matplotlib is a heavy dependency
perfguard does not otherwise need, slow to import, and writes tens of kilobytes per figure, which
across 1,000 cases would break the report's 1 s and 5 MB targets. A histogram here is
one <path>; the roofline is a few lines and a circle per case, each with a <title> the browser
shows on hover and a link to its case. Only numbers leave this module: every label is text that
the templates autoescape.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from perfguard import units
from perfguard.analysis.roofline import memory_roof, ridge_point, roofs_of
from perfguard.model import DeviceInfo


@dataclasses.dataclass(frozen=True)
class Histogram:
    width: int
    height: int
    base: float  # y of the axis
    bars: str  # one SVG path, a rectangle per non-empty bin
    median_x: float
    ci_x: tuple[float, float]
    baseline_x: float | None
    lo: str  # axis end labels
    hi: str
    hidden: int  # samples outside the drawn range (the 1% tails), counted, not drawn
    n: int
    log: bool  # a logarithmic time axis, for a heavy tail


def histogram(
    samples: Sequence[float],
    median_ms: float,
    ci_ms: tuple[float, float],
    baseline_ms: float | None,
    *,
    width: int = 380,
    height: int = 84,
    bins: int = 36,
) -> Histogram | None:
    """Samples binned between their 1st and 99th percentile, widened to show the medians and the CI.

    None when there are too few samples to draw. The baseline's samples are not in a run record (only
    its median, in the verdict), so the baseline is drawn as that median's line.
    """
    xs = np.sort(np.fromiter(samples, dtype=float, count=len(samples)))  # from a tuple: a quarter faster than asarray
    if xs.size < 2:
        return None
    # Quantiles by index on the sorted samples, and bins by arithmetic: np.quantile and np.histogram
    # cost ten times as much, which across 1,000 cases is a third of the report's render time.
    lo = float(xs[int(0.01 * (xs.size - 1))])
    hi = float(xs[int(math.ceil(0.99 * (xs.size - 1)))])
    marks = [median_ms, *ci_ms] + ([baseline_ms] if baseline_ms is not None else [])
    lo, hi = min(lo, *marks), max(hi, *marks)
    # A heavy tail (a CPU descheduled now and then: 0.12 ms typical, 16 ms at the 99th percentile)
    # would squeeze the typical samples into one bin: past a 4x spread the axis is logarithmic.
    log = lo > 0 and hi / lo > 4
    scale = np.log10 if log else (lambda v: v)
    t_lo, t_hi = float(scale(lo)), float(scale(hi))
    span = t_hi - t_lo or abs(t_hi) * 0.01 or 1e-9
    t_lo, t_hi = t_lo - 0.04 * span, t_hi + 0.04 * span
    if not log and lo >= 0:
        t_lo = max(t_lo, 0.0)  # no negative times on the axis
    # A record keeps 48 samples a kind of time (MAX_STORED_SAMPLES): in 36 bins they draw a comb, not a shape.
    bins = min(bins, max(8, 2 * math.ceil(math.sqrt(xs.size))))
    index = np.floor((scale(xs) - t_lo) / (t_hi - t_lo) * bins).astype(np.int64)
    inside = index[(index >= 0) & (index < bins)]
    counts = np.bincount(inside, minlength=bins)
    left, right, top, base = 2.0, width - 2.0, 4.0, height - 16.0
    step = (right - left) / bins
    tallest = max(int(counts.max()), 1)
    heights = [round(base - (base - top) * c / tallest) for c in counts.tolist()]
    bars = f"M{left:.0f} {base:.0f}" + "".join(  # runs of equal bins as one step
        f"V{y}h{step * len(list(run)):.2f}" for y, run in itertools.groupby(heights)
    ) + f"V{base:.0f}z"

    def x(v: float) -> float:
        return round(left + (float(scale(v)) - t_lo) / (t_hi - t_lo) * (right - left), 1)

    def at(t: float) -> str:
        return units.duration(10**t if log else t)

    return Histogram(
        width, height, base, bars, x(median_ms), (x(ci_ms[0]), x(ci_ms[1])),
        None if baseline_ms is None else x(baseline_ms), at(t_lo), at(t_hi),
        int(xs.size - inside.size), int(xs.size), log,
    )


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float
    key: str  # the case's DOM id
    case_id: str
    status: str
    note: str  # intensity, rate and share of the roof, for the hover title


@dataclasses.dataclass(frozen=True)
class Roof:
    path: str
    label: str
    label_x: float
    label_y: float
    angle: float  # degrees, for the label along a sloped roof


@dataclasses.dataclass(frozen=True)
class Roofline:
    width: int
    height: int
    box: tuple[float, float, float, float]  # left, top, right, bottom of the plot area
    xticks: list[tuple[float, str]]
    yticks: list[tuple[float, str]]
    roofs: list[Roof]
    points: list[Point]
    notes: list[str]


def compute_roofs(peaks: Mapping[str, float]) -> list[tuple[str, float]]:
    """The compute roofs to draw, highest first, from the device's peak TFLOP/s per dtype.

    Dtypes with the same peak share one roof ("bf16, fp16"): two labels at one height would overprint.
    """
    names: dict[float, list[str]] = {}
    for k, v in peaks.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            names.setdefault(float(v), []).append(str(k))
    return [(", ".join(names[v]), v) for v in sorted(names, reverse=True)]


def roofline(info: DeviceInfo, cases: Sequence[tuple[Any, ...]],
             *, width: int = 560, height: int = 320) -> Roofline | None:
    """Cases as (key, case id, status, FLOP per byte, TFLOP/s[, efficiency]) on the device's roofs, log-log.

    The efficiency, when given, is the case's own (`Metrics.efficiency`, against the roof of its
    dtype); without it the hover note measures the point against the highest roof.
    """
    # The roofs the cases were placed against (calibrated ones where `perfguard calibrate` ran).
    bw, by_dtype, calibrated = roofs_of(info)
    peaks = compute_roofs(by_dtype)
    notes = ["roofs measured on this card by perfguard calibrate"] if calibrated else []
    if not bw:
        notes.append("no memory roof: the record has no peak bandwidth for this device")
    if not peaks:
        notes.append("compute roof not drawn: the record has no peak FLOP/s for this device")
    if not cases and not bw:
        return None
    xs = [c[3] for c in cases] or [0.1, 100.0]
    ys = [c[4] for c in cases]
    ridges = [ridge_point(p, bw) for _, p in peaks] if bw else []
    x_lo, x_hi = _decades(min(xs + ridges) / 2, max(xs + ridges) * 2)
    # The y range follows the cases and the compute roofs; the memory roof is clipped at its edges.
    levels = ys + [p for _, p in peaks] or [memory_roof(x, bw) for x in xs]
    y_lo, y_hi = _decades(min(levels) / 2, max(levels) * 2)
    left, top, right, bottom = 52.0, 10.0, width - 12.0, height - 34.0

    def px(x: float) -> float:
        return round(left + (math.log10(x) - x_lo) / (x_hi - x_lo) * (right - left), 1)

    def py(y: float) -> float:
        return round(bottom - (math.log10(y) - y_lo) / (y_hi - y_lo) * (bottom - top), 1)

    roofs = []
    if bw:
        # The memory roof, from where it enters the plot to the highest compute roof (or the edge).
        # (where the memory roof crosses a level y is that level's ridge point)
        start = max(10 ** x_lo, ridge_point(10 ** y_lo, bw))
        end = min(10 ** x_hi, ridge_point(10 ** y_hi, bw), max(ridges) if ridges else math.inf)
        if end > start:
            y0, y1 = py(memory_roof(start, bw)), py(memory_roof(end, bw))
            angle = math.degrees(math.atan2(y1 - y0, px(end) - px(start)))
            lx = start * (end / start) ** 0.5
            roofs.append(Roof(f"M{px(start)} {y0}L{px(end)} {y1}",
                              f"memory roof {bw:,.0f} GB/s", px(lx) + 4, py(memory_roof(lx, bw)) - 5, round(angle, 1)))
    for (name, peak), ridge in zip(peaks, ridges or [10 ** x_lo] * len(peaks), strict=True):
        start = max(ridge, 10 ** x_lo)
        rate = f"{peak:,.0f}" if peak >= 10 else f"{peak:.3g}"  # an L4's fp64 is 0.47
        roofs.append(Roof(f"M{px(start)} {py(peak)}L{right} {py(peak)}", f"{name} {rate} TFLOP/s",
                          right - 4, py(peak) - 5, 0.0))
    points = []
    for key, case_id, status, x, y, *rest in cases:
        efficiency = rest[0] if rest else None
        ceilings = ([memory_roof(x, bw)] if bw else []) + [p for _, p in peaks[:1]]
        attainable = min(ceilings) if ceilings else None
        if efficiency is not None:
            share = f", {100 * efficiency:.1f}% of its roof"
        else:
            share = f", {100 * y / attainable:.1f}% of the roof" if attainable else ""
        points.append(Point(px(x), py(y), key, case_id, status, f"{x:.3g} FLOP/B, {y:.3g} TFLOP/s{share}"))
    return Roofline(width, height, (left, top, right, bottom), _ticks(x_lo, x_hi, px), _ticks(y_lo, y_hi, py),
                    roofs, points, notes)


def _decades(lo: float, hi: float) -> tuple[int, int]:
    a, b = math.floor(math.log10(max(lo, 1e-12))), math.ceil(math.log10(max(hi, 1e-12)))
    return a, max(b, a + 1)


def _ticks(lo: int, hi: int, to_px: Any) -> list[tuple[float, str]]:
    step = max(1, math.ceil((hi - lo) / 7))
    return [(to_px(10.0 ** k), _power(k)) for k in range(lo, hi + 1, step)]


def _power(k: int) -> str:
    if -2 <= k <= 3:
        return f"{10.0 ** k:g}"
    return f"1e{k}"
