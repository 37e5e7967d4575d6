"""A case's runs kept in memory as its baseline file keeps them: columns (issue 34).

The typed way (model/typed.py) decodes a case's runs as its file lays them out (model/layout.py): one
column a field, one value a run or one for every run, and each run's row of the file's `sessions`
table. `ColumnRuns` keeps those columns and reads as the tuple of RunSummary objects the strict way
builds: a Sequence of them, equal to that tuple, built each time it is read and never kept. Built at
load, the objects were half of a baseline's load time and most of its heap: 5,360 cases of 18 runs
took 3.6x the file's size, and a run took ~600 bytes of objects against ~55 of text. A gate reads the
runs of the cases it judges, a few times each (a case's 18 runs build in ~60 µs); `baseline show` and
an update's write read every case's once or twice.

`check` refuses at load what the build would not make sense of (a column of the wrong length, a time's
count without its median), so that reading never fails later.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
from collections.abc import Iterator, Sequence
from typing import Any, overload

from perfguard.model import layout
from perfguard.model.baseline import RunSummary, RunTime

# The fields a run keeps in its own columns (the rest are its session row's, and its timings).
COLUMN_FIELDS = tuple(f for f in dataclasses.fields(RunSummary) if f.name not in (*layout.SESSION_FIELDS, layout.TIMINGS))
TIME_FIELDS = tuple(f.name for f in dataclasses.fields(RunTime))

_NEW = object.__new__
_consume = collections.deque(maxlen=0).extend  # runs a map to its end, keeping nothing
_TIME_SET = [getattr(RunTime, name).__set__ for name in TIME_FIELDS]
_RUN_SET = [(f.name, getattr(RunSummary, f.name).__set__, f.default) for f in COLUMN_FIELDS]
_SESSION_SET = [(i, getattr(RunSummary, name).__set__) for i, name in enumerate(layout.SESSION_FIELDS)]
_SET_TIMINGS = RunSummary.timings.__set__  # type: ignore[attr-defined]


class ColumnRuns(Sequence[RunSummary]):
    """One case's runs: `columns`, the case's decoded columns (attributes `session`, each of
    COLUMN_FIELDS, and `timings`: the kind of time to an object of TIME_FIELDS columns); `table`, each
    of layout.SESSION_FIELDS as a column over the file's sessions table, shared by every case."""

    __slots__ = ("_columns", "_table")

    def __init__(self, columns: Any, table: list[list[Any]]) -> None:
        self._columns, self._table = columns, table

    def __len__(self) -> int:
        return len(self._columns.session)

    @overload
    def __getitem__(self, i: int) -> RunSummary: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[RunSummary, ...]: ...

    def __getitem__(self, i: int | slice) -> RunSummary | tuple[RunSummary, ...]:
        return self.built()[i]

    def __iter__(self) -> Iterator[RunSummary]:
        return iter(self.built())

    # Sequence's own would read an item at a time, each read building every run.
    def __reversed__(self) -> Iterator[RunSummary]:
        return reversed(self.built())

    def index(self, value: Any, start: int = 0, stop: int = 2**63) -> int:
        return self.built().index(value, start, stop)

    def count(self, value: Any) -> int:
        return self.built().count(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, ColumnRuns)):
            return self.built() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a tuple of RunSummary (each holds a dict)

    def __repr__(self) -> str:
        return repr(self.built())

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (self.built(),)  # a copy or a pickle is the tuple it reads as

    def built(self) -> tuple[RunSummary, ...]:
        """The runs, as new RunSummary objects."""
        return _built(self._columns, self._table)


def check(columns: Any, sessions: int) -> None:
    """Raises ValueError where `columns` (of a file with `sessions` rows) is not what perfguard writes;
    what it says is the strict way's (codec.py reads the file again)."""
    rows = columns.session
    n = len(rows)
    if not 0 < n <= layout.MAX_RUNS_PER_CASE or max(rows) >= sessions:
        raise ValueError("run count or session")
    for f in COLUMN_FIELDS:
        _check_length(getattr(columns, f.name), n)
    for fields in columns.timings.values():
        median = fields.median_ms
        for name in TIME_FIELDS:
            _check_length(getattr(fields, name), n)
        if median is None or type(median) is list and None in median:  # a run without this kind of time
            others = [_cells(getattr(fields, name), n, None) for name in TIME_FIELDS if name != "median_ms"]
            if any(m is None and any(x is not None for x in xs) for m, *xs in zip(_cells(median, n, None), *others)):
                raise ValueError("a run's time without its median")


def _check_length(column: Any, n: int) -> None:
    if type(column) is list and len(column) != n:
        raise ValueError("column length")


def _cells(column: Any, n: int, default: Any) -> Any:
    """A column's n cells, a null cell (or column) as the field's default."""
    if type(column) is not list:
        return itertools.repeat(default if column is None else column, n)
    return [default if x is None else x for x in column] if None in column else column


def _made(cls: type, n: int) -> list[Any]:
    """`n` new instances of frozen, slotted `cls`, their fields unset: set column by column below, each
    column one map of a slot's own setter (no Python call a value: a third of what __init__ took)."""
    return list(map(_NEW, itertools.repeat(cls, n)))


@functools.cache
def _timings_of(metrics: tuple[str, ...]) -> Any:
    """A function of one RunTime per metric that makes a run's `timings` (a literal: dict(zip()) took 3×)."""
    env: dict[str, Any] = {}
    exec(f"def timings({', '.join(f't{i}' for i in range(len(metrics)))}):\n"  # noqa: S102 - made from words
         f"    return {{{', '.join(f'{m!r}: t{i}' for i, m in enumerate(metrics))}}}", env)
    return env["timings"]


def _built(columns: Any, table: list[list[Any]]) -> tuple[RunSummary, ...]:
    rows = columns.session
    n = len(rows)
    metrics, times, gaps = [], [], False
    for metric, fields in columns.timings.items():
        made: list[Any] = _made(RunTime, n)
        for put, name in zip(_TIME_SET, TIME_FIELDS):
            _consume(map(put, made, _cells(getattr(fields, name), n, None)))
        median = fields.median_ms
        if median is None or type(median) is list and None in median:  # runs without this kind of time
            gaps = True
            made = [None if m is None else t for m, t in zip(_cells(median, n, None), made)]
        metrics.append(metric)
        times.append(made)
    if not metrics:
        timings: Any = [{} for _ in range(n)]
    elif gaps:
        timings = [{m: t for m, t in zip(metrics, ts) if t is not None} for ts in zip(*times)]
    else:
        timings = list(map(_timings_of(tuple(metrics)), *times))
    runs = _made(RunSummary, n)
    for i, put in _SESSION_SET:
        _consume(map(put, runs, map(table[i].__getitem__, rows)))
    _consume(map(_SET_TIMINGS, runs, timings))
    for name, put, default in _RUN_SET:
        _consume(map(put, runs, _cells(getattr(columns, name), n, default)))
    return tuple(runs)
