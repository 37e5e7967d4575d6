"""Human units for figures (durations, sizes), shared by the renderers, the verdicts' messages and the CLI."""

from __future__ import annotations


def duration(ms: float | None) -> str:
    if ms is None:
        return "n/a"
    for unit, scale in (("s", 1e3), ("ms", 1.0), ("µs", 1e-3)):
        if abs(ms) >= scale:
            return f"{ms / scale:.3g} {unit}" if ms / scale < 100 else f"{ms / scale:.0f} {unit}"
    return f"{ms * 1e6:.3g} ns"


def size(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def percent(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{100 * ratio:.1f}%"


def number(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"
