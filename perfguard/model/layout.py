"""How a baseline file lays out its cases (schemas 5 and 6): a case's runs as columns, and who recorded what
when as rows of the file's `sessions` table, which every case of that recording session shares.

In the JSON the strict way builds from (model/baseline.py's RunSummary objects), a case's runs are a
list of run objects; the typed way keeps them as the columns it decoded (model/columns.py). Written so,
one run took ~500 bytes, 110 of them its commit, card and date, repeated by every case of its session; as columns it takes ~100 (issue 34). A column holds one value a run, or one
value for every run (`"sm_clock_mhz": 1980`); a run without a field holds null there (the field's
default). Since schema 6 an entry's own commit, date and software versions (its `fingerprint`) are a
row too (`"session": 3`), and its result leaves out what the file says already: its id (the case's key)
and its device (the file's). codec.py packs on the way out and unpacks on the strict way in; model/typed.py
and model/columns.py read the same layout; nothing else knows it.
"""

from __future__ import annotations

import json
from typing import Any

from perfguard.errors import BaselineError
from perfguard.model.names import shown

SINCE = 5  # the schema version that lays runs out so
ENTRY_ROWS_SINCE = 6  # and an entry's commit, date and fingerprint, its result without its id and device
SESSIONS = "sessions"  # the file's table; written before `cases`, so that a reader meets it first
SESSION = "session"  # a case's column of rows in that table; an entry's row
SESSION_FIELDS = ("commit", "device_uuid", "host", "recorded_at")  # a run's, in its row
ENTRY_FIELDS = ("commit", "fingerprint", "recorded_at")  # an entry's, in its row
ROW_FIELDS = ("commit", "device_uuid", "fingerprint", "host", "recorded_at")
TIMINGS = "timings"
# Runs of one case a baseline may hold. perfguard keeps `keep_runs` (defaults.KEEP_RUNS, 10; a
# fleet's baseline keeps 3 × its runners), so a thousand is far above any setting in use; past it a file
# is not a baseline but an edit: one case of 1,000,000 runs (324 MB) made `baseline show` take 125 s
# and 1.86 GB. Checked before the runs are built (codec.check_run_count; model/columns.py's check).
MAX_RUNS_PER_CASE = 1000


def pack(data: dict[str, Any]) -> dict[str, Any]:
    """A baseline's JSON (runs as lists of objects) as its file lays it out."""
    sessions: dict[tuple[Any, ...], int] = {}
    slug = data["device"]["slug"]
    cases = {key: {SESSION: _row({f: entry.get(f) for f in ENTRY_FIELDS}, sessions),
                   "result": _result(entry["result"], key, slug),
                   "runs": _columns(entry.get("runs", []), sessions)}
             for key, entry in data["cases"].items()}
    table = [{f: json.loads(v) if f == "fingerprint" else v for f, v in zip(ROW_FIELDS, row) if v is not None}
             for row in sessions]
    return {**data, "cases": cases, SESSIONS: table}


def _result(result: dict[str, Any], key: str, slug: str) -> dict[str, Any]:
    """A result without what its file says already: its id where it is its case's key, its device where
    it is the file's (else written, and a read refuses it, naming them)."""
    return {k: v for k, v in result.items() if not (k == "id" and v == key or k == "device" and v == slug)}


def _row(fields: dict[str, Any], sessions: dict[tuple[Any, ...], int]) -> int:
    """The index of the row of these fields in the table being made (a new row where none has them)."""
    if fields.get("fingerprint") is not None:
        fields = {**fields, "fingerprint": json.dumps(fields["fingerprint"], sort_keys=True)}
    return sessions.setdefault(tuple(fields.get(f) for f in ROW_FIELDS), len(sessions))


def _columns(runs: list[dict[str, Any]], sessions: dict[tuple[Any, ...], int]) -> dict[str, Any]:
    out: dict[str, Any] = {SESSION: [_row({f: run.get(f) for f in SESSION_FIELDS}, sessions) for run in runs]}
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


def unpack(data: dict[str, Any], source: str, version: int) -> dict[str, Any]:
    """A baseline's parsed JSON of schema `version` (5 or later) with its runs as lists of objects again,
    and (6) its entries' rows and results' ids and devices in place; a BaselineError naming `source` and
    the case for a layout perfguard does not write."""
    table = sessions(data.get(SESSIONS), source)
    cases, device = data.get("cases"), data.get("device")
    if not isinstance(cases, dict):
        return {k: v for k, v in data.items() if k != SESSIONS}  # the strict build says what is wrong
    slug = device.get("slug") if isinstance(device, dict) else None
    unpacked = {}
    for key, entry in cases.items():
        if isinstance(entry, dict):
            if "runs" in entry:
                entry = {**entry, "runs": runs(entry["runs"], table, source, key)}
            if version >= ENTRY_ROWS_SINCE:
                entry = _entry(entry, key, slug, table, source)
        unpacked[key] = entry
    return {**{k: v for k, v in data.items() if k != SESSIONS}, "cases": unpacked}


def _entry(entry: dict[str, Any], key: str, slug: Any, table: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """A schema-6 entry with its row's commit, date and fingerprint, and its result's id and device."""
    where = f"{source}: case {shown(key)}"
    for name in ENTRY_FIELDS:
        if name in entry:
            raise BaselineError(f"{where}: `{name}` is its session's, kept in `{SESSIONS}`, not the entry's; "
                                "was the file edited by hand? Restore it from version control")
    i = entry.get(SESSION)
    if type(i) is not int or not 0 <= i < len(table) or not {"recorded_at", "fingerprint"} <= set(table[i]):
        raise BaselineError(f"{where}: its `{SESSION}` should name a row of `{SESSIONS}` with a date and a fingerprint, "
                            f"found {shown(i)}; was the file edited by hand? Restore it from version control")
    row = table[i]
    out = {k: v for k, v in entry.items() if k != SESSION}
    out.update({name: row.get(name) for name in ENTRY_FIELDS})
    result = entry.get("result")
    if isinstance(result, dict):
        out["result"] = {"id": key, "device": slug, **result}
    return out


def sessions(table: Any, source: str) -> list[dict[str, Any]]:
    """The file's sessions table, each row an object of ROW_FIELDS only."""
    if not isinstance(table, list):
        raise BaselineError(f"{source}: schema 5 keeps the runs' sessions in a list `{SESSIONS}`, but {_found(table)}; "
                            "was the file edited by hand? Restore it from version control")
    for i, row in enumerate(table):
        if not isinstance(row, dict) or not set(row) <= set(ROW_FIELDS):
            raise BaselineError(f"{source}: {SESSIONS}[{i}] should be an object of {', '.join(ROW_FIELDS)}, found "
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
    out = [{f: table[i][f] for f in SESSION_FIELDS if f in table[i]} for i in rows]
    for name, column in columns.items():
        if name == SESSION:
            continue
        if name in ROW_FIELDS:
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
