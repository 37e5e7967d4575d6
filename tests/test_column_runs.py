"""A baseline's runs stay columns in memory (model/columns.py, issue 34): read the typed way, a case's
runs are a ColumnRuns, which reads as the tuple of RunSummary objects the strict way builds, builds
them as it is read and keeps none, and a load holds at most 3× its file on the heap."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import tracemalloc
from pathlib import Path

import pytest

from perfguard import store
from perfguard.model import RunSummary, checks, dumps, loads_baseline, typed
from perfguard.model.columns import ColumnRuns

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "baselines" / "nvidia-h200.json"


@pytest.fixture(scope="module")
def loads() -> tuple:
    """The committed baseline read the typed way, and the strict way."""
    text = COMMITTED.read_text(encoding="utf-8")
    fast = typed.baseline(text)
    assert fast is not None
    original = typed.baseline
    typed.baseline = lambda text: None  # the codec then reads it the strict way
    try:
        slow = loads_baseline(text, str(COMMITTED))
    finally:
        typed.baseline = original
    return fast, slow


def test_a_case_s_runs_read_as_the_strict_way_s_tuple(loads):
    fast, slow = loads
    assert fast.cases.keys() == slow.cases.keys()
    for key, entry in fast.cases.items():
        runs, expected = entry.runs, slow.cases[key].runs
        assert type(runs) is ColumnRuns and type(expected) is tuple
        assert runs == expected and expected == runs and not runs != expected  # both ways
        assert len(runs) == len(expected) and bool(runs)
        assert runs[0] == expected[0] and runs[-1] == expected[-1] and runs[1:4] == expected[1:4]
        assert isinstance(runs[1:4], tuple)
        assert list(runs) == list(expected) and expected[-1] in runs
        assert list(reversed(runs)) == list(reversed(expected))
        assert runs.index(expected[-1]) == expected.index(expected[-1]) and runs.count(expected[0]) == expected.count(expected[0])
        assert all(type(r) is RunSummary for r in runs)
    one = next(iter(fast.cases.values())).runs
    assert one != dataclasses.replace(one[0], host="another")  # not a tuple: never equal
    assert one != (*one[:-1], dataclasses.replace(one[-1], sm_clock_mhz=1.0))


def test_reading_builds_new_runs_and_keeps_none(loads):
    fast, _ = loads
    runs = next(iter(fast.cases.values())).runs
    assert runs[0] == runs[0] and runs[0] is not runs[0]
    assert copy.deepcopy(runs) == runs and type(copy.deepcopy(runs)) is tuple  # a copy is the tuple it reads as
    assert pickle.loads(pickle.dumps(runs)) == tuple(runs)
    with pytest.raises(TypeError):
        hash(runs)  # as the tuple: its runs hold dicts


def test_a_file_of_column_runs_is_checked_clean_and_written_as_read(loads):
    fast, slow = loads
    assert checks.clean(fast) and checks.check_baseline(fast, "b.json") is fast
    assert dumps(fast) == dumps(slow) == COMMITTED.read_text(encoding="utf-8")
    entry = next(iter(fast.cases.values()))
    assert list(checks._problems(entry, "e")) == []  # the walk that words a refusal reads them too


def test_a_load_holds_at_most_3x_its_file_on_the_heap():
    """Issue 34's target, on the committed file (18 runs a case): the file is mapped, not read, and the
    runs are columns; built as objects they took 3.7× (tracemalloc counts allocations, not time: the
    same on a busy machine)."""
    store.load_file(COMMITTED)  # imports and per-class caches first
    tracemalloc.start()
    try:
        loaded = store.load_file(COMMITTED)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert loaded is not None and type(next(iter(loaded.cases.values())).runs) is ColumnRuns
    assert peak <= 3 * COMMITTED.stat().st_size, peak / COMMITTED.stat().st_size
