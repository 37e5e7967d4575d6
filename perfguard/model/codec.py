"""The only JSON (de)serialisation of records and baselines, strict on the way in.

Every file perfguard writes or reads (run records and baselines) goes through `dumps` and
`loads_record` / `loads_baseline` here, so the format has one owner and one schema version. Figures
are rounded to a fixed number of significant digits so that a stored file reads as a clean diff.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import mmap
import types
import typing
from typing import Any, TypeVar

from perfguard import defaults
from perfguard.errors import BaselineError
from perfguard.model import checks, compiled, layout, migration, typed
from perfguard.model.checks import check_baseline, check_record, finite, free_form
from perfguard.model.names import shown
from perfguard.model.acceptance import ACCEPTANCE_SCHEMA, Acceptances
from perfguard.model.baseline import BaselineFile, run_summary
from perfguard.model.columns import ColumnRuns
from perfguard.model.records import SAMPLE_DIGITS, SCHEMA_VERSION, SHOWN_ONLY, SIGNIFICANT_DIGITS, RunRecord

# Versions this perfguard reads; older ones are migrated on the way in and written as SCHEMA_VERSION.
READABLE_VERSIONS = (1, 2, 3, 4, 5, SCHEMA_VERSION)

MAX_FREE_FORM_DEPTH = checks.MAX_FREE_FORM_DEPTH  # values typed Any are bounded by checks.free_form
MAX_INT = checks.MAX_INT
MAX_RUNS_PER_CASE = layout.MAX_RUNS_PER_CASE

T = TypeVar("T")


def round_sig(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def to_jsonable(obj: Any) -> Any:
    """Dataclasses to dicts, tuples to lists, floats rounded; the inverse of `from_jsonable`. A field at its
    default is left out (`from_jsonable` gives it back): most of a result's are (no error, no profile, no
    copies), and they took a tenth of a record."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: _samples(value) if name.endswith("samples_ms") and isinstance(value, tuple)
                else _shown(value) if name in SHOWN_ONLY else to_jsonable(value)
                for name, default in _defaults(type(obj)) for value in (getattr(obj, name),)
                if default is _REQUIRED or value != default or type(value) is not type(default)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, ColumnRuns)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, str):
        return str(obj)  # plain str: subclasses (torch's TorchVersion) do not cross xdist's channel
    if isinstance(obj, float):
        # Whole numbers (byte and flop counts) stay exact; measured figures keep 6 digits.
        if obj.is_integer() and abs(obj) < 2**53:
            return int(obj)
        return round_sig(obj)
    return obj


_REQUIRED = object()
# Written even at their default: how to read the rest, and what a file or case came to, which scripts
# read from the raw JSON (the workflow's `.get("status") != "complete"`: a record left unfinished).
ALWAYS_WRITTEN = frozenset({"schema_version", "status"})


@functools.cache
def _defaults(cls: type) -> tuple[tuple[str, Any], ...]:
    """Each field of dataclass `cls` with its default (a factory's value), or _REQUIRED: a field without one,
    and the ALWAYS_WRITTEN."""
    return tuple((f.name, _REQUIRED if f.name in ALWAYS_WRITTEN or f.default is dataclasses.MISSING
                  and f.default_factory is dataclasses.MISSING
                  else f.default if f.default is not dataclasses.MISSING else f.default_factory())
                 for f in dataclasses.fields(cls))


def _shown(value: Any) -> Any:
    """A figure (or a mapping of them) no verdict reads, at SAMPLE_DIGITS (records.SHOWN_ONLY)."""
    if isinstance(value, dict):
        return {str(k): _shown(v) for k, v in value.items()}
    return _samples((value,))[0] if isinstance(value, float) else to_jsonable(value)


def _samples(samples: tuple[float, ...]) -> list[Any]:
    """Raw samples at SAMPLE_DIGITS: what reads them (a histogram, asv's quartiles) asks no more (records.py).
    Rounded first, so that one that rounds to a whole number (1.99996) is written as that number (2), as
    it is written again when read back."""
    rounded = (round_sig(x, SAMPLE_DIGITS) if isinstance(x, float) else x for x in samples)
    return [int(x) if isinstance(x, float) and x.is_integer() and abs(x) < 2**53 else x for x in rounded]


# No spaces after separators: 9% of a file. A case is a line, so a diff still reads by case.
_compact = functools.partial(json.dumps, sort_keys=True, allow_nan=False, separators=(",", ":"))


def dumps(obj: Any) -> str:
    """The text of a record, baseline or acceptance file: sorted keys (a baseline's `sessions` first, which
    its cases' runs name: model/layout.py), and one line per member of the top object and per item of
    each container in it (a baseline's case, a record's result), so that a stored file diffs by case."""
    data = to_jsonable(obj)
    if not isinstance(data, dict):
        return _compact(data) + "\n"
    if isinstance(obj, BaselineFile):
        data = layout.pack(data)
    members = []
    for key in sorted(data, key=lambda k: (k != layout.SESSIONS, k)):
        value = data[key]
        if isinstance(value, dict) and value:
            inner = ",\n".join(f"{_compact(k)}:{_compact(value[k])}" for k in sorted(value))
            members.append(f"{_compact(key)}:{{\n{inner}\n}}")
        elif isinstance(value, list) and value:
            members.append(f"{_compact(key)}:[\n" + ",\n".join(map(_compact, value)) + "\n]")
        else:
            members.append(f"{_compact(key)}:{_compact(value)}")
    return "{\n" + ",\n".join(members) + "\n}\n"


def loads_record(text: str, source: str) -> RunRecord:
    """Parse a run record; any problem is a BaselineError naming `source` and what to do."""
    fast = typed.record(text)  # None for a text it declines (an older version, a space before a colon): the strict way
    if fast is not None:
        return fast
    data = _parse(text, source)
    data = migration.record(data, _check_schema(data, source))
    record, known_clean = _checked(RunRecord, data, source)
    return check_record(record, source, known_clean=known_clean)


def loads_baseline(text: str | bytes | mmap.mmap, source: str) -> BaselineFile:
    """Parse a baseline file with the same strictness as a record; each entry must be filed under its own id.
    `text` may be the file's bytes, mapped (store.load_file): UTF-8, read as text only on the strict way."""
    fast = typed.baseline(text)
    if fast is not None:
        return fast
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise BaselineError(f"{source}: not UTF-8 text; the file is corrupt, restore it from version control") from None
    data = _parse(text, source)
    version = _check_schema(data, source)
    data = layout.unpack(data, source, version) if version >= layout.SINCE else migration.baseline(data, version)
    _check_run_counts(data, source)
    built, known_clean = _checked(BaselineFile, data, source)
    baseline = check_baseline(built, source, known_clean=known_clean)
    for key, entry in baseline.cases.items():
        if key != entry.result.id:
            raise BaselineError(
                f"{source}: entry {key!r} holds the result of case {entry.result.id!r}; was the file edited by hand?"
            )
        if not entry.runs and version != 1:
            raise BaselineError(f"{source}: entry {key!r} holds no runs; was the file edited by hand?")
    if version == 1:
        # A version-1 entry is one run: its result. It becomes the first of the case's runs.
        cases = {
            key: dataclasses.replace(entry, runs=(run_summary(entry.result, entry.recorded_at, entry.commit),))
            for key, entry in baseline.cases.items()
        }
        baseline = dataclasses.replace(baseline, cases=cases)
    return baseline


def _checked(cls: type[T], data: Any, source: str) -> tuple[T, bool]:
    """`cls` built from `data`, and whether the pass that built it checked it too (checks.py then need not)."""
    try:
        return compiled.checked(cls)(data), True
    except Exception:  # noqa: BLE001 - a refusal, or a value only the checks' walk clears: both decide below
        return from_jsonable(cls, data, source), False


def _check_run_counts(data: dict[str, Any], source: str) -> None:
    cases = data.get("cases")
    for key, entry in cases.items() if isinstance(cases, dict) else ():
        runs = entry.get("runs") if isinstance(entry, dict) else None
        if isinstance(runs, list):
            check_run_count(len(runs), source, key)


def check_run_count(count: int, source: str, key: str) -> None:
    """Refuse a case of more runs than MAX_RUNS_PER_CASE, before they are built."""
    if count > MAX_RUNS_PER_CASE:
        raise BaselineError(f"{source}: case {shown(key)} holds {count:,} runs, more than the {MAX_RUNS_PER_CASE:,} "
                            "perfguard reads (it keeps --perfguard-baseline-runs, default "
                            f"{defaults.KEEP_RUNS}); was the file edited by hand? Restore it from version control")


def loads_acceptances(text: str, source: str) -> Acceptances:
    """Parse an acceptance file (model/acceptance.py) as strictly as a record; every string is checked as a record's."""
    data = _parse(text, source)
    if not isinstance(data, dict) or data.get("schema_version") != ACCEPTANCE_SCHEMA:
        raise BaselineError(f"{source}: not a perfguard acceptance file of schema {ACCEPTANCE_SCHEMA}; restore it from "
                            "version control, or write it with `perfguard accept`")
    accepted = from_jsonable(Acceptances, data, source)
    for change in accepted.changes:
        if not math.isfinite(change.figure) or change.figure < 0:
            raise BaselineError(f"{source}: the accepted figure of {shown(change.case_id)} {shown(change.metric)} is "
                                f"{change.figure!r}, not a figure perfguard measures; was the file edited by hand?")
    return accepted


def _parse(text: str, source: str) -> Any:
    def refuse(constant: str) -> Any:
        # NaN and Infinity are not JSON; Python's parser takes them, so refuse them wherever they are.
        raise BaselineError(f"{source}: holds {constant}, which is not a number a record can hold; was the file edited by hand?")

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # json keeps the last of two equal keys, silently: a second "mul" in `cases` became the case the
        # gate judged by, unseen in a review that read the first. No file perfguard writes repeats one.
        obj = dict(pairs)
        if len(obj) != len(pairs):  # the cheap test first: every object of every file goes through here
            keys = [k for k, _ in pairs]
            twice = next(k for i, k in enumerate(keys) if k in keys[:i])
            raise BaselineError(f"{source}: the key {shown(twice)} appears twice in one object (of keys "
                                f"{', '.join(shown(k) for k in list(obj)[:5])}{', …' if len(obj) > 5 else ''}); "
                                "JSON would keep the last one silently; was the file edited by hand?")
        return obj

    try:
        return json.loads(text, parse_constant=refuse, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}); the file is corrupt or truncated, "
            "restore it from version control"
        ) from None
    except RecursionError:  # the parser's own guard against nesting deeper than the interpreter's stack
        raise BaselineError(f"{source}: JSON nested too deeply to be a record or baseline; was the file edited by hand?") from None
    except ValueError:  # an integer of more digits than Python converts (sys.set_int_max_str_digits)
        raise BaselineError(f"{source}: holds a number of more digits than any figure perfguard writes; was the file edited by hand?") from None


def _check_schema(data: Any, source: str) -> int:
    if not isinstance(data, dict):
        raise BaselineError(f"{source}: expected a JSON object at the top, found {type(data).__name__}")
    if "schema_version" not in data:
        raise BaselineError(f"{source}: not a perfguard record or baseline (it has no schema_version); pass a run "
                            "record such as reports/perfguard.json, or a baseline file from baselines/")
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise BaselineError(
            f"{source}: schema_version {version!r}, but this perfguard reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}; use the perfguard version that wrote it, or re-record the file"
        )
    return int(version)


def from_jsonable(cls: type[T], data: Any, source: str, path: str = "") -> T:
    """Build dataclass `cls` from parsed JSON, strictly: unknown or missing fields are errors."""
    try:
        return compiled.converter(cls)(data)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - the walk below decides, and names the field
        return _walk(cls, data, source, path)


def _walk(cls: type[T], data: Any, source: str, path: str = "") -> T:
    """`from_jsonable` field by field, reflectively: what a refusal says, and what it is."""
    where = path or cls.__name__
    if not isinstance(data, dict):
        raise BaselineError(f"{source}: {where} should be an object, found {type(data).__name__}")
    hints, fields = _schema(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise BaselineError(f"{source}: unknown field(s) {', '.join(unknown)} in {where}; was the file edited by hand?")
    kwargs = {}
    for name, field in fields.items():
        if name not in data:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise BaselineError(f"{source}: {where} lacks required field {name!r}; was the file edited by hand?")
            continue
        kwargs[name] = _convert(hints[name], data[name], source, f"{where}.{name}")
    return cls(**kwargs)


@functools.cache
def _schema(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    # Resolving the string annotations is most of the cost of loading a record: once per class.
    return typing.get_type_hints(cls), {f.name: f for f in dataclasses.fields(cls)}


def _convert(hint: Any, value: Any, source: str, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None:
            if type(None) in args:
                return None
            raise BaselineError(f"{source}: {where} must not be null")
        inner = [a for a in args if a is not type(None)] or [Any]
        if all(typing.get_origin(a) is typing.Literal for a in inner):  # Regime | Literal[""]: one set of words
            return _word(tuple(w for a in inner for w in typing.get_args(a)), value, source, where)
        (single,) = inner
        return _convert(single, value, source, where)
    if origin is typing.Literal:
        return _word(typing.get_args(hint), value, source, where)
    if dataclasses.is_dataclass(hint):
        return _walk(hint, value, source, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise BaselineError(f"{source}: {where} should be a list, found {type(value).__name__}")
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, v, source, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise BaselineError(f"{source}: {where} should be an object, found {type(value).__name__}")
        key, item = typing.get_args(hint) or (str, Any)
        if typing.get_origin(key) is typing.Literal:
            for k in value:
                _word(typing.get_args(key), k, source, f"{where} key")
        if dataclasses.is_dataclass(item):
            return {k: _walk(item, v, source, f"{where}[{k!r}]") for k, v in value.items()}
        if item is Any:
            return free_form(value, source, where)
        return {k: _convert(item, v, source, f"{where}[{k!r}]") for k, v in value.items()}
    if hint is Any:
        return free_form(value, source, where)
    expected = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}.get(hint)
    if expected and (not isinstance(value, expected) or (hint is not bool and isinstance(value, bool))):
        raise BaselineError(f"{source}: {where} should be {hint.__name__}, found {shown(value)}")
    if hint is int and abs(value) >= MAX_INT:
        raise BaselineError(f"{source}: {where} is {shown(value)}, larger than any count perfguard writes")
    if hint is float:
        value = finite(value, source, where)
    return value


def _word(words: tuple[str, ...], value: Any, source: str, where: str) -> str:
    """`value` if it is one of `words` (a Literal type's), else the line that names them."""
    if not isinstance(value, str) or value not in words:
        known = ", ".join(repr(w) for w in words if w)
        raise BaselineError(f"{source}: {where} {shown(value)} is none of {known}; was the file edited by hand?")
    return value
