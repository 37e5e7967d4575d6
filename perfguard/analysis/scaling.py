"""How a case grows along a numeric parameter of its grid: latency and memory against batch, length, n.

The advice of the trade — profile at small sizes and watch how activation memory grows before a
long run runs out of it — as a figure per case. Each series (one case, one numeric parameter varying,
the other parameters fixed, at least MIN_POINTS values) is fitted with

    y = c + b · x^k

where c is what does not grow (launch floor, weights), b · x^k what does; k is the growth exponent
(1 linear, 2 quadratic: the "activation explosion" of materialised attention scores shows as k ≈ 2).
A plain log-log line would read a large constant as slow growth and promise sizes that do not fit.
k is found on a grid, c and b by least squares for each k, c ≥ 0 and b > 0. The memory fitted is what
the case holds at its peak, its footprint: from before its setup, so its setup's tensors, what its
calls keep for the next and the call's peak on top (setup plus peak in records older than the
footprint). The device memory it fits in is forecast only from a fit that describes the series. Where every point of a
series has a memory breakdown (training steps, `memory_breakdown=True`), its activations are fitted
too: what a larger batch or a longer sequence costs in saved activations, apart from the weights,
gradients and optimizer state that do not grow with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from perfguard.model import CaseResult, DeviceInfo

MIN_POINTS = 3
EXPONENTS = np.round(np.arange(0.25, 3.001, 0.05), 2)
# A series whose growing part is under this share of its largest value is flat (noise, not growth).
FLAT_SHARE = 0.05
# Memory is counted, not timed: growth of a MiB or more over the range is real however large the
# constant (a 4 GiB training step growing 4.4 MiB per unit of batch reads linear, not constant).
MEMORY_FLAT_BYTES = 2**20
# A memory fit that explains less than this of its series' variance forecasts nothing: deterministic
# figures that a growth law does not describe are not on one (an outlier point, a regime change).
MIN_FORECAST_R2 = 0.9
# Memory is counted: a growth law that describes a series fits it all but exactly, above this.
EXACT_R2 = 0.999
GROWTH = {0: "constant", 1: "linear", 2: "quadratic", 3: "cubic"}


@dataclasses.dataclass(frozen=True)
class Growth:
    """y = c + b · x^k over the measured range."""

    constant: float  # c
    coefficient: float  # b
    exponent: float  # k
    r2: float  # of the fit, in y

    def at(self, x: float) -> float:
        return self.constant + self.coefficient * x**self.exponent

    @property
    def label(self) -> str:
        k = self.exponent
        return GROWTH.get(round(k), f"x^{k:.2f}") if abs(k - round(k)) <= 0.15 else f"x^{k:.2f}"


@dataclasses.dataclass(frozen=True)
class Scaling:
    """One case's series along one parameter."""

    device: str  # slug
    name: str  # the case's name
    parameter: str
    fixed: tuple[tuple[str, object], ...]  # the other parameters
    values: tuple[float, ...]
    time: Growth | None  # of the judged time
    memory: Growth | None
    bytes_per_unit: float | None  # memory growth per unit of the parameter, from its largest two values
    fits_up_to: float | None  # the largest value whose fitted memory fits in the device's memory
    activations: Growth | None = None  # of the memory breakdown's activations at the peak
    activations_per_unit: float | None = None  # their growth per unit, from the largest two values, when linear
    # The value the memory's growth is fitted from, when the smaller ones sit on a floor (memory_fit).
    memory_from: float | None = None

    @property
    def title(self) -> str:
        fixed = ", ".join(f"{k}={v}" for k, v in self.fixed)
        return f"{self.name} over {self.parameter}" + (f" ({fixed})" if fixed else "")


def scalings(results: Iterable[CaseResult], devices: Iterable[DeviceInfo] = ()) -> list[Scaling]:
    """Every series of at least MIN_POINTS measured values of one numeric parameter, others fixed."""
    memory_of = {d.slug: d.memory_bytes for d in devices}
    groups: dict[tuple, list[tuple[float, CaseResult]]] = {}
    for r in results:
        if r.status != "ok" or r.judged_time is None:
            continue
        for p, x in r.params.items():
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not x > 0:
                continue
            fixed = tuple(sorted((k, v) for k, v in r.params.items() if k != p))
            groups.setdefault((r.device, r.name, p, fixed), []).append((float(x), r))
    out = []
    for (device, name, p, fixed), points in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        points.sort(key=lambda xr: xr[0])
        xs = [x for x, _ in points]
        if len(set(xs)) < MIN_POINTS:
            continue
        latency = fit(xs, [r.judged_time.median_ms for _, r in points])
        held = [_held(r) for _, r in points]
        memory, memory_from = memory_fit(xs, held) if all(h is not None for h in held) else (None, None)
        saved = [_activations(r) for _, r in points]
        activations = fit(xs, saved) if all(a is not None for a in saved) else None
        if latency is None and memory is None and activations is None:  # nothing grows the way the model can say
            continue
        per_unit = _top_slope(xs, held) if memory else None
        saved_per_unit = _top_slope(xs, saved) if activations and activations.label == "linear" else None
        out.append(Scaling(device, name, p, fixed, tuple(xs), latency, memory, per_unit,
                           largest_fitting(memory, memory_of.get(device)) if memory and memory.r2 >= MIN_FORECAST_R2 else None,
                           activations, saved_per_unit, memory_from))
    return out


def memory_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[Growth | None, float | None]:
    """The memory's growth, and the value it is fitted from when the smallest values sit on a floor.

    A training step's footprint is the larger of its phases' peaks: at a small batch it can peak where
    nothing grows with the batch (every gradient live while the tied embedding's is accumulated:
    nanoGPT's GPT-2 at batch 1), above the line the larger batches lie on. When the whole series is
    not fitted all but exactly, and leaving out its smallest values (keeping MIN_POINTS) gives a fit
    that is, with the values left out above it, that fit is the growth: what a larger value costs.
    """
    whole = fit(xs, ys, flat_bytes=MEMORY_FLAT_BYTES)
    if whole is None or whole.r2 >= EXACT_R2:
        return whole, None
    for start in range(1, len(xs) - MIN_POINTS + 1):
        top = fit(xs[start:], ys[start:], flat_bytes=MEMORY_FLAT_BYTES)
        if (top is not None and top.exponent > 0 and top.r2 >= EXACT_R2
                and all(y > top.at(x) for x, y in zip(xs[:start], ys[:start]))):
            return top, xs[start]
    return whole, None


def fit(xs: Sequence[float], ys: Sequence[float], flat_bytes: float | None = None) -> Growth | None:
    """The best y = c + b·x^k with c ≥ 0, b > 0 over the exponent grid; None when nothing grows.

    A growing part under FLAT_SHARE of the largest value is flat, unless it is `flat_bytes` or more
    (memory, where any such growth is counted, not noise)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(x) < MIN_POINTS or not np.all(np.isfinite(y)):
        return None
    scale_x, scale_y = x.max(), max(float(np.abs(y).max()), 1e-300)  # keep the least squares well conditioned
    xn, yn = x / scale_x, y / scale_y
    total = float(((yn - yn.mean()) ** 2).sum())
    if total == 0:  # every y the same (y / max|y| is exactly ±1): a constant, or nothing the model says
        return Growth(constant=float(y[0]), coefficient=0.0, exponent=0.0, r2=1.0) if y[0] > 0 else None
    # Every exponent at once, one row each: the straight line through (x^k, y) in closed form (a
    # report fits hundreds of series, and a polyfit call per exponent was most of its render time).
    basis = xn[None, :] ** EXPONENTS[:, None]
    centred = basis - basis.mean(axis=1, keepdims=True)
    spread = (centred**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # x all equal: no slope, nothing grows
        b = centred @ (yn - yn.mean()) / spread
        c = yn.mean() - b * basis.mean(axis=1)
        through_zero = basis @ yn / (basis**2).sum(axis=1)  # no negative floor: fit through zero instead
    b, c = np.where(c < 0, through_zero, b), np.where(c < 0, 0.0, c)
    sse = ((c[:, None] + b[:, None] * basis - yn) ** 2).sum(axis=1)
    best = None
    for i in np.flatnonzero(b > 0):  # the smallest exponent of those that fit equally well
        if best is None or sse[i] < sse[best] - 1e-12:
            best = i
    if best is None:
        return None
    k, c, b, sse = float(EXPONENTS[best]), float(c[best]), float(b[best]), float(sse[best])
    r2 = 1 - sse / total if total > 0 else 1.0
    counted = flat_bytes is not None and b * scale_y >= flat_bytes
    if b < FLAT_SHARE * (c + b) and not counted:  # the growing part is under 5% at the largest x: nothing grows
        return Growth(constant=float(y.mean()), coefficient=0.0, exponent=0.0, r2=r2)
    return Growth(constant=c * scale_y, coefficient=float(b * scale_y / scale_x**k), exponent=k, r2=r2)


def largest_fitting(memory: Growth | None, capacity: int | None) -> float | None:
    """Solve c + b·x^k = capacity for x; None without a fit, a capacity, or room even for c."""
    if memory is None or not capacity or memory.constant >= capacity or memory.coefficient <= 0:
        return None
    return ((capacity - memory.constant) / memory.coefficient) ** (1 / memory.exponent)


def _top_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Growth per unit of x between the largest two values."""
    return (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) if xs[-1] != xs[-2] else None


def _activations(r: CaseResult) -> float | None:
    parts = r.memory_breakdown
    if parts is None or parts.error is not None:
        return None
    return float(parts.activations)


def _held(r: CaseResult) -> float | None:
    m = r.memory
    if m is not None and m.footprint_bytes is not None:
        return float(m.footprint_bytes)
    if m is None or m.peak_allocated_bytes is None:
        return None
    return float((m.setup_allocated_bytes or 0) + m.peak_allocated_bytes)
