"""Human units for figures (durations, sizes), shared by the renderers, the verdicts' messages and the CLI."""

from __future__ import annotations

import math


def duration(ms: float | None) -> str:
    if ms is None:
        return "n/a"
    for unit, scale in (("s", 1e3), ("ms", 1.0), ("µs", 1e-3)):
        if abs(ms) >= scale:
            return f"{ms / scale:.3g} {unit}" if ms / scale < 100 else f"{ms / scale:.0f} {unit}"
    return f"{ms * 1e6:.3g} ns"


def precise_duration(ms: float) -> str:
    """Four significant digits ("1.234 ms", "987.6 µs"): enough to see a 0.1% move in a verdict's message."""
    for unit, scale in (("s", 1e3), ("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6)):
        if abs(ms) >= scale or unit == "ns":
            value = ms / scale
            if value:  # round first, so 9.99996 reads "10.00", not "10.000"
                value = round(value, 3 - math.floor(math.log10(abs(value))))
            decimals = max(0, 3 - math.floor(math.log10(abs(value)))) if value else 3
            return f"{value:.{decimals}f} {unit}"
    raise AssertionError("unreachable")


def count(n: float) -> str:
    """A count per call: whole where it is ("12", "1,896"), else to two decimals ("0.20": once in five calls)."""
    return f"{n:,.0f}" if abs(n - round(n)) < 1e-9 else f"{n:,.2f}"


def plural(n: int, word: str) -> str:
    """"1 run", "3 runs": a count with its noun."""
    return f"{n} {word}{'s' if n != 1 else ''}"


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
