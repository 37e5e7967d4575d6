"""A baseline file edited as a hand (or a pull request) would edit it, its runs as lists of objects and
each entry with its own commit, date and fingerprint and its result's id and device: a baseline file
lays those out as columns and rows of a `sessions` table (perfguard/model/layout.py); `unpacked` takes
that layout apart here, and `packed` is the real layout's own `pack`, so that a test's edit reaches the
file as perfguard lays it out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfguard.model import layout


def unpacked(text: str) -> dict[str, Any]:
    """A baseline's text as JSON whose runs are lists of objects (the JSON `layout.pack` lays out)."""
    data = json.loads(text)
    table = data.pop(layout.SESSIONS)
    for key, entry in data["cases"].items():
        row = table[entry.pop(layout.SESSION)]
        entry.update({name: row.get(name) for name in layout.ENTRY_FIELDS})
        entry["result"] = {"id": key, "device": data["device"]["slug"], **entry["result"]}
        columns = entry["runs"]
        rows = columns.pop(layout.SESSION)
        runs: list[dict[str, Any]] = [{f: table[i][f] for f in layout.SESSION_FIELDS if f in table[i]} for i in rows]
        times = columns.pop(layout.TIMINGS, {})
        for name, column in columns.items():
            for run, value in zip(runs, column if isinstance(column, list) else [column] * len(rows)):
                if value is not None:
                    run[name] = value
        for metric, fields in times.items():
            for name, column in fields.items():
                for run, value in zip(runs, column if isinstance(column, list) else [column] * len(rows)):
                    if value is not None:
                        run.setdefault(layout.TIMINGS, {}).setdefault(metric, {})[name] = value
        entry["runs"] = runs
    return data


def packed(data: dict[str, Any]) -> str:
    """JSON whose runs are lists of objects as a baseline's text (no `sessions` in `data`)."""
    return json.dumps(layout.pack(data))


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the baseline at `path` with `change` applied to its JSON, runs as lists."""
    data = unpacked(path.read_text())
    change(data)
    path.write_text(packed(data))
