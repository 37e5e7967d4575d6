"""A baseline file edited as a hand (or a pull request) would edit it, its runs as lists of objects and
each entry with its own commit, date and fingerprint and its result's id and device: schema 6 writes
those as columns and rows of a `sessions` table (perfguard/model/layout.py), which these unpack and pack
with the real layout, so that a test's edit reaches the file as perfguard lays it out."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfguard.model import SAMPLE_DIGITS, RunSummary, layout, round_sig


def unpacked(text: str) -> dict[str, Any]:
    """A baseline's text as JSON whose runs are lists of objects."""
    data = json.loads(text)
    return layout.unpack(data, "test", data["schema_version"])


def packed(data: dict[str, Any]) -> str:
    """JSON whose runs are lists of objects as a baseline's text (no `sessions` in `data`)."""
    return json.dumps(layout.pack(data))


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the baseline at `path` with `change` applied to its JSON, runs as lists."""
    data = unpacked(path.read_text())
    change(data)
    path.write_text(packed(data))


def as_written(run: RunSummary) -> RunSummary:
    """`run` as a file gives it back: its half-widths and clock at SAMPLE_DIGITS (records.SHOWN_ONLY)."""
    def shown(x: float | None) -> float | None:
        return None if x is None else round_sig(x, SAMPLE_DIGITS)

    return dataclasses.replace(run, sm_clock_mhz=shown(run.sm_clock_mhz), timings={
        m: dataclasses.replace(t, ci_half_pct=shown(t.ci_half_pct)) for m, t in run.timings.items()})
