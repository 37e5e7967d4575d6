"""The parsers of perfguard's options, which the plugin and the console command share.

One place, so that `--perfguard-threshold 0` and `perfguard compare --threshold 0` get one answer. It
imports nothing but the standard library: the console command draws its help from it without loading
numpy, scipy, torch or pytest. A parser returns the value, or raises ValueError with what was expected
(`a percentage above 0, such as 1, got '0'`); the plugin puts the option's name in front of that and
raises pytest.UsageError, the console command hands it to argparse. The option table
(perfguard.options) names its parsers, and loads this module when a value is first parsed.
"""

from __future__ import annotations

import math
from typing import Any

from perfguard import defaults


def percent(raw: Any) -> float:
    """A threshold: a finite percentage above 0 (0 would make every tolerance the noise's alone, which
    the gate never does: the threshold is the change that matters to a person)."""
    value = _number(raw)
    if not 0 < value < math.inf:
        raise ValueError(f"must be a percentage above 0, such as 1, got {_shown(raw)}")
    return value


def seconds(raw: Any) -> float:
    """A time budget: a finite number of seconds above 0."""
    value = _number(raw)
    if not 0 < value < math.inf:
        raise ValueError(f"must be a number of seconds above 0, such as 0.5, got {_shown(raw)}")
    return value


def timeout(raw: Any) -> float:
    """A timeout: a finite number of seconds, 0 for none."""
    value = _number(raw)
    if not 0 <= value < math.inf:
        raise ValueError(f"must be a number of seconds such as 60, or 0 for none, got {_shown(raw)}")
    return value


def count(raw: Any, least: int, most: int | None = None) -> int:
    """A whole number from `least` (to `most`)."""
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = least - 1
    if value < least or (most is not None and value > most):
        span = f"from {least} to {most}" if most is not None else f"of at least {least}"
        raise ValueError(f"must be a whole number {span}, got {_shown(raw)}")
    return value


def folder(raw: Any) -> str:
    """A folder: any path but an empty one (an empty `--perfguard-report=` would put the reports in the
    rootdir, an empty `--baselines ""` read the working folder)."""
    if raw is None or not str(raw).strip():
        raise ValueError(f"must be a folder, such as reports, got {_shown(raw)}")
    return str(raw)


def choice(raw: Any, choices: tuple[str, ...]) -> str:
    """One of `choices`, in any case and with spaces around it."""
    value = str(raw).strip().lower()
    if value not in choices:
        raise ValueError(f"must be one of {', '.join(choices)}, got {_shown(raw)}")
    return value


def _number(raw: Any) -> float:
    """`raw` as a float; NaN (which every range check refuses) when it is not a number. A bool is not one."""
    if isinstance(raw, bool):
        return math.nan
    try:
        return float(raw)
    except (TypeError, ValueError):
        return math.nan


def _shown(raw: Any) -> str:
    return repr(raw) if isinstance(raw, str) else repr(str(raw))


# The work counters (perfguard.model.measured.CounterKind's words; a test holds them equal).
COUNTER_KINDS = ("kernels", "syncs", "copies", "copy_bytes", "memsets", "allocations", "segments", "aten_ops",
                 "graphs", "graph_breaks", "recompiles", "eager_frames")


def counter_allowance(raw: Any) -> dict[str, str]:
    """How much a work counter may grow per call before it fails: a count ("2") or a percentage of the
    baseline's ("10%"), for every counter or by kind ("kernels=2,syncs=0", or a mapping
    {"kernels": 2, "aten_ops": "5%"}); "*" names every kind. Normalised to {kind: "2" or "10%"}."""
    if isinstance(raw, dict):
        items = list(raw.items())
    else:
        text = str(raw).strip()
        parts = [p.strip() for p in text.split(",") if p.strip()]
        items = [tuple(p.split("=", 1)) if "=" in p else ("*", p) for p in parts]
        if not items:
            raise ValueError(f"must be a count or a percentage (2, 10%), or kind=count pairs, got {_shown(raw)}")
    allowed: dict[str, str] = {}
    for kind, value in items:
        kind = str(kind).strip()
        if kind != "*" and kind not in COUNTER_KINDS:
            raise ValueError(f"names {_shown(kind)}, not a work counter; the counters are {', '.join(COUNTER_KINDS)}")
        shown = str(value).strip()
        number = shown[:-1] if shown.endswith("%") else shown
        try:
            amount = float(number) if not isinstance(value, bool) else math.nan
        except ValueError:
            amount = math.nan
        if not 0 <= amount < math.inf:
            where = "" if kind == "*" else f" for {kind}"
            raise ValueError(f"must be a count of at least 0 (2) or a percentage (10%){where}, got {_shown(value)}")
        allowed[kind] = f"{amount:g}%" if shown.endswith("%") else f"{amount:g}"
    return allowed


def keep_runs(raw: Any) -> int:
    return count(raw, 1)


def confirm(raw: Any) -> int:
    return count(raw, 0)


def profile(raw: Any) -> str:
    return choice(raw, defaults.PROFILE_CHOICES)


def file(raw: Any) -> str:
    if raw is None or not str(raw).strip():
        raise ValueError(f"must be a file, such as cases.txt, got {raw!r}")
    return str(raw)
