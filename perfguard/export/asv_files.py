"""asv's file formats as perfguard writes them (asv 0.6: results api_version 2), read back to merge into.

A result file holds one row per benchmark in asv's columns (`RESULT_COLUMNS`): the grid's values per
parameter, then a value (and its stats) per grid point in the order of their product. `Row` is the
same row keyed by grid point, which is what merging two records of one commit needs.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

from perfguard.errors import BaselineError, first_line
from perfguard.model import round_sig

ENV_NAME = "perfguard"  # asv's environment name: the second half of every result file's name
BENCHMARK_VERSION = "perfguard-1"  # asv hides results whose version differs from benchmarks.json's
RESULTS_API, BENCHMARKS_API, MACHINE_API, CONFIG_API = 2, 2, 1, 1
# asv 0.6's columns of a result row, in its order (asv/results.py, Results.save).
RESULT_COLUMNS = ("result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
                  "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile")
STATS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")

Point = dict[str, Any]  # {"result": value, "ci_99_a": ..., ...}: one grid point of one benchmark


@dataclasses.dataclass
class Row:
    """One benchmark's figures in one result file: grid point (tuple of param reprs) → point."""

    points: dict[tuple[str, ...], Point]
    started_at: int  # JS timestamp of the newest record that contributed: on overlap the newer wins


def result_path(results_dir: Path, machine: str, commit: str) -> Path:
    return results_dir / machine / f"{commit[:8]}-{ENV_NAME}.json"  # asv's own naming (results.get_filename)


def read_json(path: Path, api: int) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):  # nothing to merge; writing there will say what is wrong
        return None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad UTF-8 or JSON, or an over-long integer
        why = "nested too deeply" if isinstance(exc, RecursionError) else first_line(str(exc))
        raise BaselineError(f"{path}: cannot read it to merge into ({why}); remove it or export to a fresh folder") from None
    if not isinstance(data, dict) or data.get("version") != api:
        raise BaselineError(f"{path}: not an asv file of version {api}; remove it or export to a fresh folder")
    return data


def read_results(results_dir: Path, machine: str, commit: str) -> dict[str, Any]:
    data = read_json(result_path(results_dir, machine, commit), RESULTS_API) or {}
    data.pop("version", None)
    if data and data.get("commit_hash") != commit:
        raise BaselineError(f"{result_path(results_dir, machine, commit)}: holds commit {data.get('commit_hash')}, not {commit}; "
                            "remove it or export to a fresh folder")
    return data


def read_rows(content: dict[str, Any], path: Path) -> dict[str, Row]:
    """The rows of an existing result file, as grid points (the inverse of `row_columns`)."""
    rows = {}
    try:
        for name, values in content.get("results", {}).items():
            cols = dict(zip(content["result_columns"], values))
            combos = list(itertools.product(*(cols.get("params") or [])))
            points = {}
            for i, (grid, value) in enumerate(zip(combos, cols.get("result") or [])):
                if value is not None:
                    stats = {s: cols[f"stats_{s}"][i] for s in STATS if (cols.get(f"stats_{s}") or [None] * len(combos))[i] is not None}
                    points[tuple(grid)] = {"result": value, **stats}
            if points:
                rows[name] = Row(points, cols.get("started_at") or 0)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise BaselineError(f"{path}: not an asv result file perfguard can merge into ({exc!r}); remove it or export to a fresh folder") from None
    return rows


def current_rows(rows: dict[str, Row], benchmarks: dict[str, Any]) -> dict[str, list[Any]]:
    """The file's rows in asv's columns, less the grid points of a benchmark's former parameters (asv
    could not match them to the current ones; it hides such results the same way)."""
    out = {}
    for name, row in sorted(rows.items()):
        width = len(benchmarks[name]["param_names"]) if name in benchmarks else -1
        points = {grid: point for grid, point in row.points.items() if len(grid) == width}
        if points:
            out[name] = row_columns(Row(points, row.started_at), width)
    return out


def row_columns(row: Row, width: int) -> list[Any]:
    """asv's row: the grid's values per parameter (`width` of them), then one entry per grid point in product order."""
    params = [sorted({grid[i] for grid in row.points}, key=param_order) for i in range(width)]
    combos = [tuple(c) for c in itertools.product(*params)]
    cols: dict[str, Any] = {"result": [row.points.get(c, {}).get("result") for c in combos], "params": params,
                            "version": BENCHMARK_VERSION, "started_at": row.started_at}
    for s in STATS:
        cols[f"stats_{s}"] = [row.points.get(c, {}).get(s) for c in combos]
    out = [None if k != "params" and isinstance(cols.get(k), list) and all(v is None for v in cols[k]) else cols.get(k)
           for k in RESULT_COLUMNS]
    while out and out[-1] is None:
        out.pop()
    return out


def param_order(text: str) -> tuple[int, float, str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    return (0, float(value), text) if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, 0.0, text)


def dumps(data: Any) -> str:
    return json.dumps(_rounded(data), indent=1, sort_keys=True, allow_nan=False) + "\n"


def _rounded(obj: Any) -> Any:
    if isinstance(obj, float):
        return round_sig(obj)
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj
