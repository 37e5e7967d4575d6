"""How a baseline file lays out its cases: a case's runs as columns, and who recorded what when as rows
of the file's `sessions` table, which every case of that recording session shares.

Written as objects, one run took ~500 bytes, 110 of them its commit, card and date, repeated by every
case of its session; as columns it takes ~100 (issue 34). A column holds one value a run, or one value
for every run (`"sm_clock_mhz": 1980`); a run without a field holds null there (the field's default).
An entry's own commit, date and software versions (its `fingerprint`) are a row too (`"session": 3`),
and its result leaves out what the file says already: its id (the case's key) and its device (the
file's). `pack` lays a baseline's JSON out so on the way out; on the way in, the file decodes into the
Structs below (model/schema.py's twins, for the layout's own parts) and `runs` builds a case's runs
from its columns. Nothing else knows the layout.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator, Sequence
import types
import typing
from typing import Annotated, Any

import msgspec

from perfguard import defaults
from perfguard.errors import BaselineError
from perfguard.model import schema
from perfguard.model.baseline import Calibration, RunSummary
from perfguard.model.checks import REFUSED
from perfguard.model.records import CaseResult, DeviceInfo, TimeMetric

SESSIONS = "sessions"  # the file's table; written before `cases`, so that a reader meets it first
SESSION = "session"  # a case's column of rows in that table; an entry's row
SESSION_FIELDS = ("commit", "device_uuid", "host", "recorded_at")  # a run's, in its row
ENTRY_FIELDS = ("commit", "fingerprint", "recorded_at")  # an entry's, in its row
ROW_FIELDS = ("commit", "device_uuid", "fingerprint", "host", "recorded_at")
TIMINGS = "timings"
# Runs of one case a baseline may hold. perfguard keeps `keep_runs` (defaults.KEEP_RUNS, 10; a
# fleet's baseline keeps 3 × its runners), so a thousand is far above any setting in use; past it a file
# is not a baseline but an edit: one case of 1,000,000 runs (324 MB) made `baseline show` take 125 s
# and 1.86 GB. Refused at load (check_runs), before a run is built.
MAX_RUNS_PER_CASE = 1000
# A run's figures by kind of time, as the file's columns under `timings` name them: {metric: {column: cells}}.
TIME_FIELDS = {"medians_ms": "median_ms", "sample_counts": "n"}
# The fields a run keeps in its own columns (the rest are its session row's, and its times).
COLUMN_FIELDS = tuple(f for f in dataclasses.fields(RunSummary) if f.name not in (*SESSION_FIELDS, *TIME_FIELDS))
assert [f.name for f in dataclasses.fields(RunSummary)] == ["recorded_at", "medians_ms", "sample_counts", "sm_clock_mhz",
                                                           "power_capped", "peak_allocated_bytes", "device_uuid", "host",
                                                           "commit", "regime", "accepted"], "a run's new field: add it to `built_runs`"


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
    for name in sorted({k for run in runs for k in run} - {*SESSION_FIELDS, *TIME_FIELDS}):
        out[name] = _column([run.get(name) for run in runs])
    times = {column: [run.get(field, {}) for run in runs] for field, column in TIME_FIELDS.items()}
    metrics = sorted({m for figures in times["median_ms"] for m in figures})
    if metrics:
        out[TIMINGS] = {m: {column: _column([figures.get(m) for figures in times[column]]) for column in TIME_FIELDS.values()
                            if any(m in figures for figures in times[column])}
                        for m in metrics}
    return out


def _column(values: list[Any]) -> Any:
    return values[0] if all(v == values[0] and type(v) is type(values[0]) for v in values) else values


# --- the way in: the layout's Structs ------------------------------------------------------------------

def _column_type(cls: type, name: str, hint: Any) -> Any:
    """One value for every run, or a list of one a run; null: the field's default."""
    one = schema.field_type(cls, name, hint)
    if typing.get_origin(one) in (typing.Union, types.UnionType):
        (one,) = [a for a in typing.get_args(one) if a is not type(None)]
    return one | list[one | None] | None


_RUN_HINTS = typing.get_type_hints(RunSummary)
TimeColumns = schema.struct("TimeColumns", [
    ("median_ms", _column_type(RunSummary, "medians_ms", float), None),
    ("n", _column_type(RunSummary, "sample_counts", int), None),
    # A run's own half-width, written by perfguard of 2026-12-03 and 12-04 and read by no verdict: not kept.
    ("ci_half_pct", _column_type(RunSummary, "ci_half_pct", float), None),
])
Columns = schema.struct("Columns", [
    (SESSION, list[Annotated[int, msgspec.Meta(ge=0)]]),
    *((f.name, _column_type(RunSummary, f.name, _RUN_HINTS[f.name]), None) for f in COLUMN_FIELDS),
    (TIMINGS, dict[TimeMetric, TimeColumns], msgspec.field(default_factory=dict)),
])
SessionRow = schema.struct("SessionRow", [
    ("recorded_at", schema.Instant),
    *((name, str | None, None) for name in ROW_FIELDS if name not in ("recorded_at", "fingerprint")),
    ("fingerprint", dict[str, Any] | None, None),
])
# A result leaves out its id (the case's key) and, where it is the file's, its device (the default "").
Entry = schema.struct("Entry", [(SESSION, Annotated[int, msgspec.Meta(ge=0)]),
                                ("result", schema.twin(CaseResult, id=(str | None, None))), ("runs", Columns)])
# Each case stays raw until its turn, so that what is wrong in one is said with its key.
File = schema.struct("BaselineFile", [("schema_version", int), ("device", schema.twin(DeviceInfo)),
                                      (SESSIONS, list[SessionRow]), ("cases", dict[str, msgspec.Raw]),
                                      ("calibration", schema.twin(Calibration) | None, None)])


def refused(where: str, what: str) -> BaselineError:
    return BaselineError(f"{where}: {what}; {REFUSED}")


def entry_row(entry: Any, table: list[Any], where: str) -> Any:
    """The row of `sessions` an entry names: one with a date and a fingerprint (an entry's, not a run's)."""
    i = entry.session
    if i >= len(table) or table[i].fingerprint is None:
        raise refused(where, f"its `{SESSION}` should name a row of `{SESSIONS}` with a date and a fingerprint, found {i}")
    return table[i]


def check_runs(columns: Any, table: list[Any], where: str) -> None:
    """Refuse, at load, a case's columns that `built_runs` could not make runs of: a run that names no
    row of the sessions table, a column of another length, a run's time without its median."""
    n = len(columns.session)
    if n == 0:
        raise refused(where, "its entry holds no runs")
    if n > MAX_RUNS_PER_CASE:
        raise refused(where, f"holds {n:,} runs, more than the {MAX_RUNS_PER_CASE:,} perfguard reads (it keeps "
                             f"--perfguard-baseline-runs, default {defaults.KEEP_RUNS})")
    for i in columns.session:
        if i >= len(table):
            raise refused(where, f"a run names session {i}, but `{SESSIONS}` has {len(table)} row(s)")
    for f in COLUMN_FIELDS:
        _check_length(getattr(columns, f.name), n, f.name, where)
    for metric, times in columns.timings.items():
        for name in ("median_ms", "n", "ci_half_pct"):
            _check_length(getattr(times, name), n, f"{TIMINGS}.{metric}.{name}", where)
        if times.median_ms is None or type(times.median_ms) is list and None in times.median_ms:
            medians = _cells(times.median_ms, n)
            if any(m is None and k is not None for m, k in zip(medians, _cells(times.n, n))):
                raise refused(where, f"a run's `{TIMINGS}.{metric}` has no median")


def _check_length(column: Any, n: int, name: str, where: str) -> None:
    if type(column) is list and len(column) != n:
        raise refused(where, f"its runs' column `{name}` holds {len(column)} value(s) for {n} run(s)")


def _cells(column: Any, n: int) -> Any:
    """A column's n cells (checked by check_runs); None in a cell, or for the column: the field's default."""
    return column if type(column) is list else itertools.repeat(column, n)


def built_runs(columns: Any, table: list[Any]) -> tuple[RunSummary, ...]:
    """One case's runs, oldest first, from its columns (checked by `check_runs`) and the sessions table."""
    n = len(columns.session)
    medians: list[dict[str, float]] = [{} for _ in range(n)]
    counts: list[dict[str, int]] = [{} for _ in range(n)]
    for metric, times in columns.timings.items():
        for median_ms, count_of, median, count in zip(medians, counts, _cells(times.median_ms, n), _cells(times.n, n)):
            if median is not None:
                median_ms[metric] = median
                if count is not None:
                    count_of[metric] = count
    own = [_cells(getattr(columns, f.name), n) for f in COLUMN_FIELDS]
    return tuple(RunSummary(row.recorded_at, median_ms, count_of, clock, bool(capped), peak, row.device_uuid, row.host,
                            row.commit, regime or "", accepted)
                 for row, median_ms, count_of, clock, capped, peak, regime, accepted
                 in zip(map(table.__getitem__, columns.session), medians, counts, *own))


class Runs(Sequence[RunSummary]):
    """A case's runs as a read baseline holds them: the tuple of RunSummary that `built_runs` makes of the
    case's columns, built when first read, then kept. Built at load, the runs of a baseline of 5,360 cases
    of 18 runs (benchmarks/scaling.py) took 1.5× json.load's time of the whole file; a gate reads the
    runs of the cases it runs. Reads, compares, copies and pickles as that tuple."""

    __slots__ = ("_columns", "_table", "_runs")

    def __init__(self, columns: Any, table: list[Any]) -> None:
        self._columns, self._table, self._runs = columns, table, None

    def _built(self) -> tuple[RunSummary, ...]:
        if self._runs is None:
            self._runs = built_runs(self._columns, self._table)
            self._columns = self._table = None  # what the tuple was built from
        return self._runs

    def __len__(self) -> int:
        return len(self._runs if self._runs is not None else self._columns.session)

    def __getitem__(self, i: Any) -> Any:
        return self._built()[i]

    def __iter__(self) -> Iterator[RunSummary]:
        return iter(self._built())

    def __reversed__(self) -> Iterator[RunSummary]:
        return reversed(self._built())

    def __eq__(self, other: object) -> bool:
        return self._built() == (tuple(other) if isinstance(other, Runs) else other)

    __hash__ = None  # type: ignore[assignment]  # as a tuple of RunSummary (each holds a dict)

    def __repr__(self) -> str:
        return repr(self._built())

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (self._built(),)
