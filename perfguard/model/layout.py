"""How a baseline file lays out its cases' runs (schema 5): as columns, and each run's commit, card, host
and date as a row of the file's `sessions` table, which every case of that recording session shares.

In memory (model/baseline.py) and in the JSON the typed pass builds from, a case's runs are a list of
run objects. Written so, one run took ~500 bytes, 110 of them its commit, card and date, repeated by
every case of its session; as columns it takes ~100 (issue 34). A column holds one value a run, or one
value for every run (`"sm_clock_mhz": 1980`); a run without a field holds null there (the field's
default). codec.py packs on the way out and unpacks on the way in, on both of its ways in; nothing
else knows this layout.
"""

from __future__ import annotations

from typing import Any

from perfguard.errors import BaselineError
from perfguard.model.names import shown

SINCE = 5  # the schema version that lays runs out so
SESSIONS = "sessions"  # the file's table; written before `cases`, so that a reader meets it first
SESSION = "session"  # a case's column of rows in that table
SESSION_FIELDS = ("commit", "device_uuid", "host", "recorded_at")
TIMINGS = "timings"


def pack(data: dict[str, Any]) -> dict[str, Any]:
    """A baseline's JSON (runs as lists of objects) as its file lays it out."""
    sessions: dict[tuple[Any, ...], int] = {}
    cases = {key: {**entry, "runs": _columns(entry.get("runs", []), sessions)} for key, entry in data["cases"].items()}
    table = [{f: v for f, v in zip(SESSION_FIELDS, row) if v is not None} for row in sessions]
    return {**data, "cases": cases, SESSIONS: table}


def _columns(runs: list[dict[str, Any]], sessions: dict[tuple[Any, ...], int]) -> dict[str, Any]:
    out: dict[str, Any] = {SESSION: [sessions.setdefault(tuple(run.get(f) for f in SESSION_FIELDS), len(sessions))
                                     for run in runs]}
    for name in sorted({k for run in runs for k in run} - {*SESSION_FIELDS, TIMINGS}):
        out[name] = _column([run.get(name) for run in runs])
    times = [run.get(TIMINGS, {}) for run in runs]
    metrics = sorted({m for t in times for m in t})
    if metrics:
        out[TIMINGS] = {m: {f: _column([t.get(m, {}).get(f) for t in times]) for f in sorted({f for t in times for f in t.get(m, {})})}
                        for m in metrics}
    return out


def _column(values: list[Any]) -> Any:
    return values[0] if all(v == values[0] and type(v) is type(values[0]) for v in values) else values


def unpack(data: dict[str, Any], source: str) -> dict[str, Any]:
    """A schema-5 baseline's parsed JSON with its runs as lists of objects again; a BaselineError naming
    `source` and the case for a layout perfguard does not write."""
    table = sessions(data.get(SESSIONS), source)
    cases = data.get("cases")
    if not isinstance(cases, dict):
        return {k: v for k, v in data.items() if k != SESSIONS}  # the typed pass says what is wrong
    unpacked = {key: ({**entry, "runs": runs(entry["runs"], table, source, key)} if isinstance(entry, dict) and "runs" in entry
                      else entry) for key, entry in cases.items()}
    return {**{k: v for k, v in data.items() if k != SESSIONS}, "cases": unpacked}


def sessions(table: Any, source: str) -> list[dict[str, Any]]:
    """The file's sessions table, each row an object of SESSION_FIELDS only."""
    if not isinstance(table, list):
        raise BaselineError(f"{source}: schema 5 keeps the runs' sessions in a list `{SESSIONS}`, but {_found(table)}; "
                            "was the file edited by hand? Restore it from version control")
    for i, row in enumerate(table):
        if not isinstance(row, dict) or not set(row) <= set(SESSION_FIELDS):
            raise BaselineError(f"{source}: {SESSIONS}[{i}] should be an object of {', '.join(SESSION_FIELDS)}, found "
                                f"{shown(row)}; was the file edited by hand? Restore it from version control")
    return table


def runs(columns: Any, table: list[dict[str, Any]], source: str, case: str) -> list[dict[str, Any]]:
    """One case's runs from its columns."""
    from perfguard.model.codec import check_run_count  # the codec imports this module

    where = f"{source}: case {shown(case)}"
    rows = columns.get(SESSION) if isinstance(columns, dict) else None
    if not isinstance(rows, list):
        raise BaselineError(f"{where}: its runs should be columns with a list `{SESSION}` of rows in `{SESSIONS}`, "
                            f"found {shown(columns)}; was the file edited by hand? Restore it from version control")
    check_run_count(len(rows), source, case)
    for i in rows:
        if type(i) is not int or not 0 <= i < len(table):
            raise BaselineError(f"{where}: a run names session {shown(i)}, but `{SESSIONS}` has {len(table)} row(s); "
                                "was the file edited by hand? Restore it from version control")
    n = len(rows)
    out = [dict(table[i]) for i in rows]
    for name, column in columns.items():
        if name == SESSION:
            continue
        if name in SESSION_FIELDS:
            raise BaselineError(f"{where}: `{name}` is a session's, kept in `{SESSIONS}`, not a column of runs; "
                                "was the file edited by hand? Restore it from version control")
        if name != TIMINGS:
            for run, value in zip(out, _cells(column, n, where, name)):
                if value is not None:
                    run[name] = value
            continue
        if not isinstance(column, dict):
            raise BaselineError(f"{where}: its runs' `{TIMINGS}` should be an object of columns, found {shown(column)}")
        for metric, fields in column.items():
            if not isinstance(fields, dict):
                raise BaselineError(f"{where}: its runs' `{TIMINGS}.{metric}` should be an object of columns, "
                                    f"found {shown(fields)}")
            times: list[dict[str, Any]] = [{} for _ in rows]
            for field, cells in fields.items():
                for time, value in zip(times, _cells(cells, n, where, f"{TIMINGS}.{metric}.{field}")):
                    if value is not None:
                        time[field] = value
            for run, time in zip(out, times):
                if time:
                    run.setdefault(TIMINGS, {})[metric] = time
    return out


def _cells(column: Any, n: int, where: str, name: str) -> list[Any]:
    if not isinstance(column, list):
        return [column] * n
    if len(column) != n:
        raise BaselineError(f"{where}: its runs' column `{name}` holds {len(column)} value(s) for {n} run(s); "
                            "was the file edited by hand? Restore it from version control")
    return column


def _found(value: Any) -> str:
    return "it has none" if value is None else f"found {shown(value)}"
