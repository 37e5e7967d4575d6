"""What the console commands share: reading a record, columns, argument types."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfguard.errors import BaselineError, ConfigError
from perfguard.model import RunRecord, loads_record

DEFAULT_BASELINES = "baselines"
DEFAULT_KEEP_RUNS = 10  # perfguard.store's, without importing the store (filelock) to draw the help


def read_record(path: Path | str) -> RunRecord:
    """A run record from disk; a missing or unreadable file is one clear error naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; pass a run record such as reports/perfguard.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read it as a run record ({getattr(exc, 'strerror', None) or exc})") from None
    return loads_record(text, str(path))


def summary(tally: dict[str, int]) -> str:
    return "perfguard: " + ", ".join(f"{n} {status}" for status, n in tally.items())


def columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 5, got {text!r}")
    return value
