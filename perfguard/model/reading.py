"""The second fast way in: a current record or baseline parsed and built one case at a time (issue 34),
where model/typed.py's msgspec way declines the text (a key with space before its colon, a string that
starts with a colon, a lone surrogate).

`json.loads` of a whole baseline holds its every value at once, about 3× the file's size in Python
objects; building the dataclasses from that tree then holds both. Here the two outer levels (the
file's object, and its `cases` object or `results` list) are read in Python, and each case is parsed
by json's own C scanner, built and checked by model/generated.py's code and dropped: what is held at
once is the text, what has been built, and one case's tree. Repeated keys are refused as the strict
parse refuses them (by the outer levels' own sets, and the scanner's pairs hook inside a case).

Only the current schema version is read here, and nothing is worded: any doubt (an older version, a
value the typed pass cannot clear, text json refuses) returns None, and codec.py reads the file the
strict, slow way, which says what is wrong; so a file reads here exactly as it reads there.
"""

from __future__ import annotations

import dataclasses
import json
import json.decoder
import re
from collections.abc import Callable
from typing import Any

from perfguard.model import generated, layout
from perfguard.model.baseline import BaselineEntry, BaselineFile
from perfguard.model.checks import check_baseline, check_record
from perfguard.model.records import SCHEMA_VERSION, CaseResult, RunRecord

_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace
_string = json.decoder.scanstring


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # a key twice: codec._parse names it
        raise generated.Refused
    return obj


def _no_constant(_: str) -> Any:
    raise generated.Refused  # NaN, Infinity: codec._parse refuses them


_scan = json.JSONDecoder(object_pairs_hook=_unique, parse_constant=_no_constant).scan_once


def _object(text: str, at: int, value: Callable[[str, int], int]) -> int:
    """Reads the object at `at`, handing each key and where its value starts to `value`, which returns
    where that value ends; returns where the object ends."""
    space = _SPACE.match
    if text[at] != "{":
        raise generated.Refused
    at = space(text, at + 1).end()
    if text[at] == "}":
        return at + 1
    seen: set[str] = set()
    while True:
        if text[at] != '"':
            raise generated.Refused
        key, at = _string(text, at + 1)
        if key in seen:
            raise generated.Refused
        seen.add(key)
        at = space(text, at).end()
        if text[at] != ":":
            raise generated.Refused
        at = space(text, value(key, space(text, at + 1).end())).end()
        if text[at] == "}":
            return at + 1
        if text[at] != ",":
            raise generated.Refused
        at = space(text, at + 1).end()


def _array(text: str, at: int, item: Callable[[int], int]) -> int:
    """As `_object`, for the array at `at`: `item` reads the value at an index and returns its end."""
    space = _SPACE.match
    if text[at] != "[":
        raise generated.Refused
    at = space(text, at + 1).end()
    if text[at] == "]":
        return at + 1
    while True:
        at = space(text, item(at)).end()
        if text[at] == "]":
            return at + 1
        if text[at] != ",":
            raise generated.Refused
        at = space(text, at + 1).end()


def _file(text: str, cls: type, big: str, read_big: Callable[[int], int], empty: Any,
          side: Callable[[str, int], int | None] | None = None) -> Any:
    """The file's object as `cls`, its field `big` read by `read_big` and its other fields as parsed;
    `big` itself holds `empty`, for the caller to replace with what `read_big` built. `side` may read a
    member that is not `cls`'s (returns where it ends) or decline it (None)."""
    rest: dict[str, Any] = {}

    def value(key: str, at: int) -> int:
        if key == big:
            return read_big(at)
        end = side(key, at) if side else None
        if end is None:
            rest[key], end = _scan(text, at)
        return end

    at = _object(text, _SPACE.match(text).end(), value)
    if _SPACE.match(text, at).end() != len(text) or type(rest.get("schema_version")) is not int:
        raise generated.Refused
    if rest["schema_version"] != SCHEMA_VERSION or big in rest:
        raise generated.Refused  # an older version is migrated on the strict way
    return generated.builder(cls)({**rest, big: empty}, generated.Interned())


def baseline(text: str, source: str) -> BaselineFile | None:
    """The baseline in `text`, built and checked; None where codec.py's strict reading must decide."""
    memo = generated.Interned()
    build = generated.builder(BaselineEntry)
    cases: dict[str, BaselineEntry] = {}
    seen = False
    table: list[dict[str, Any]] | None = None  # the sessions table, which codec.dumps writes before the cases

    def read_sessions(key: str, at: int) -> int | None:
        nonlocal table
        if key != layout.SESSIONS:
            return None
        parsed, end = _scan(text, at)
        table = layout.sessions(parsed, source)
        return end

    def read_cases(at: int) -> int:
        nonlocal seen
        seen = True
        if table is None:
            raise generated.Refused  # cases before the table: not as perfguard writes it

        def case(key: str, at: int) -> int:
            parsed, end = _scan(text, at)
            if type(parsed) is not dict or "runs" not in parsed:
                raise generated.Refused
            parsed["runs"] = layout.runs(parsed["runs"], table, source, key)
            entry = build(parsed, memo)
            if entry.result.id != key or not entry.runs:
                raise generated.Refused
            cases[entry.result.id] = entry  # the id's string, shared with the result
            return end
        return _object(text, at, case)

    try:
        file = _file(text, BaselineFile, "cases", read_cases, {}, read_sessions)
        if not seen:
            return None
        return check_baseline(dataclasses.replace(file, cases=cases), source, known_clean=True)
    except Exception:  # noqa: BLE001 - the strict reading decides, and words it
        return None


def record(text: str, source: str) -> RunRecord | None:
    """The run record in `text`, built and checked; None where codec.py's strict reading must decide."""
    memo = generated.Interned()
    build = generated.builder(CaseResult)
    results: list[CaseResult] = []

    def read_results(at: int) -> int:
        def item(at: int) -> int:
            parsed, end = _scan(text, at)
            results.append(build(parsed, memo))
            return end
        return _array(text, at, item)

    try:
        file = _file(text, RunRecord, "results", read_results, [])
        return check_record(dataclasses.replace(file, results=tuple(results)), source, known_clean=True)
    except Exception:  # noqa: BLE001 - the strict reading decides, and words it
        return None

