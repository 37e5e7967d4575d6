"""A baseline file edited as a hand (or a pull request) would edit it, its runs as lists of objects:
schema 5 writes them as columns (perfguard/model/layout.py), which these unpack and pack with the real
layout, so that a test's edit reaches the file as perfguard lays it out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfguard.model import layout


def unpacked(text: str) -> dict[str, Any]:
    """A baseline's text as JSON whose runs are lists of objects."""
    return layout.unpack(json.loads(text), "test")


def packed(data: dict[str, Any]) -> str:
    """JSON whose runs are lists of objects as a baseline's text (no `sessions` in `data`)."""
    return json.dumps(layout.pack(data))


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the baseline at `path` with `change` applied to its JSON, runs as lists."""
    data = unpacked(path.read_text())
    change(data)
    path.write_text(packed(data))
