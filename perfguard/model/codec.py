"""The only JSON (de)serialisation of records, baselines and acceptance files: one writer, one reader.

`dumps` writes every file perfguard writes, figures rounded to a fixed number of significant digits so
that a stored file reads as a clean diff. `loads_record`, `loads_baseline` and `loads_acceptances` read
them: each file is decoded once, by msgspec into the twins of its types (model/schema.py; a baseline's
own layout, model/layout.py), which checks every type, word and bound in C and names the field's path in
what it refuses; then what no type states is checked once (checks.py), and the model's dataclasses are
built. Every refusal is one line naming the file (and the case) and what to do. A file of an older schema
is refused with the command that rewrites it (`perfguard migrate`, model/migration.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
from collections.abc import Iterator
import re
from typing import Any, TypeVar

import msgspec

from perfguard.errors import BaselineError
from perfguard.model import layout, schema
from perfguard.model.acceptance import ACCEPTANCE_SCHEMA, Acceptances
from perfguard.model.baseline import BaselineEntry, BaselineFile, Calibration
from perfguard.model.checks import REFUSED, free_form, measured_case, one_entry_each
from perfguard.model.names import shown
from perfguard.model.records import (SAMPLE_DIGITS, SCHEMA_VERSION, SHOWN_ONLY, CaseResult, DeviceInfo, RunRecord,
                                     round_sig)

MAX_RUNS_PER_CASE = layout.MAX_RUNS_PER_CASE

T = TypeVar("T")

# --- the writer -----------------------------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """Dataclasses to dicts, tuples to lists, floats rounded. A field at its default is left out (a read
    gives it back): most of a result's are (no error, no profile, no copies), and they took a tenth of a
    record."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: _samples(value) if name.endswith("samples_ms") and isinstance(value, tuple)
                else _shown(value) if name in SHOWN_ONLY else to_jsonable(value)
                for name, default in _defaults(type(obj)) for value in (getattr(obj, name),)
                if default is _REQUIRED or value != default}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, layout.Runs)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, str):
        # Plain str: subclasses (torch's TorchVersion, schema.Instant) do not cross xdist's channel. A lone
        # surrogate (a path's undecodable byte, as os.fsdecode gives it) is no UTF-8, which no reader
        # takes: written as its escape's text, so that every file perfguard writes reads back.
        if obj.isascii():
            return str(obj)
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return obj.encode("utf-8", "backslashreplace").decode("utf-8")
        return str(obj)
    if isinstance(obj, float):
        # Whole numbers (byte and flop counts) stay exact; measured figures keep 6 digits.
        if obj.is_integer() and abs(obj) < 2**53:
            return int(obj)
        return round_sig(obj)
    return obj


_REQUIRED = object()
# Written even at their default: how to read the rest, and what a file or case came to, which a person
# sees in the raw JSON (a script asks `perfguard check`, which reads the whole record first).
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


# --- the reader -----------------------------------------------------------------------------------------


def loads_record(text: str | bytes, source: str) -> RunRecord:
    """A run record; any problem is a BaselineError naming `source` and what to do."""
    data = _utf8(text)
    with _paused_collector():
        _check_version(data, source, SCHEMA_VERSION)
        top = _decoded(_RECORD, data, source)
        top.results = tuple(_decoded(_RESULT, raw, source, f"results[{i}]") for i, raw in enumerate(top.results))
        results = tuple(_result(twin, f"{source}: results[{i}]: params") for i, twin in enumerate(top.results))
        record = _built(msgspec.structs.replace(top, results=()), RunRecord)
        free_form(record.options, f"{source}: options")
        _same_keys(data, top, source)
        return dataclasses.replace(record, results=results)


def loads_baseline(text: str | bytes, source: str) -> BaselineFile:
    """A baseline file, as strictly as a record; each entry's result is its case's (its key) and a measurement."""
    data = _utf8(text)
    with _paused_collector():
        _check_version(data, source, SCHEMA_VERSION)
        top = _decoded(layout.File, data, source)
        top.cases = {key: _decoded(layout.Entry, raw, source, f"case {shown(key)}") for key, raw in top.cases.items()}
        table = top.sessions
        for i, row in enumerate(table):
            if row.fingerprint is not None:
                free_form(row.fingerprint, f"{source}: {layout.SESSIONS}[{i}].fingerprint")
        device = _built(top.device, DeviceInfo)
        cases = {}
        for key, entry in top.cases.items():
            where = f"{source}: case {shown(key)}"
            row = layout.entry_row(entry, table, where)
            twin = entry.result
            if twin.id is not None and twin.id != key:
                raise BaselineError(f"{where}: its entry holds the result of case {shown(twin.id)}; {REFUSED}")
            result = _result(msgspec.structs.replace(twin, id=key, device=twin.device or device.slug), f"{where}: result.params")
            measured_case(result, where)
            layout.check_runs(entry.runs, table, where)
            cases[key] = BaselineEntry(recorded_at=row.recorded_at, commit=row.commit, fingerprint=row.fingerprint,
                                       result=result, runs=layout.Runs(entry.runs, table))
        calibration = None if top.calibration is None else _built(top.calibration, Calibration)
        if calibration is not None:
            free_form(calibration.fingerprint, f"{source}: calibration.fingerprint")
        _same_keys(data, top, source)
        return BaselineFile(device=device, cases=cases, schema_version=SCHEMA_VERSION, calibration=calibration)


def loads_acceptances(text: str | bytes, source: str) -> Acceptances:
    """An acceptance file (model/acceptance.py), read as strictly as a record: each figure a figure of its
    metric, one entry a device, case and metric. How far its figures may lie from the baseline's is the
    judge's to say (analysis/acceptance.py), which reads the baseline."""
    data = _utf8(text)
    _check_version(data, source, ACCEPTANCE_SCHEMA, "an acceptance file, written with `perfguard pr accept`")
    decoded = _decoded(_ACCEPTANCES, data, source)
    accepted = _built(decoded, Acceptances)
    one_entry_each(accepted, source)
    _same_keys(data, decoded, source)
    return accepted


def from_jsonable(cls: type[T], data: Any, source: str) -> T:
    """Dataclass `cls` from what `to_jsonable` made of one (a result riding on an xdist test report), as
    strictly as a file."""
    try:
        decoded = msgspec.convert(data, schema.twin(cls), dec_hook=schema.hook)
    except msgspec.ValidationError as exc:
        raise BaselineError(f"{source}: {exc}; {REFUSED}") from None
    return _result(decoded, f"{source}: params") if cls is CaseResult else _built(decoded, cls)


_RECORD = schema.twin(RunRecord, results=(tuple[msgspec.Raw, ...], ()))  # each result decoded in its turn
_RESULT = schema.twin(CaseResult)
_ACCEPTANCES = schema.twin(Acceptances)


def _utf8(text: str | bytes) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text


@functools.cache
def _decoder(kind: type) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(kind, dec_hook=schema.hook)


_ENCODER = msgspec.json.Encoder(enc_hook=str)  # schema's str types (Instant, Slug, ...) as the strings they are
_BYTE = re.compile(r"\(byte (\d+)\)$")


def _decoded(kind: type, data: bytes, source: str, place: str = "") -> Any:
    """`data` decoded as `kind`; what msgspec refuses, one line naming `source`, the `place` in it (a case,
    a result) and the field's path there."""
    try:
        return _decoder(kind).decode(data)
    except msgspec.ValidationError as exc:
        message, _, at = str(exc).partition(" - at `")
        path = at.removeprefix("key` in `").rstrip("`").removeprefix("$").lstrip(".")
        if at.startswith("key` in `"):
            path = f"a key of {path or 'the file'}"
        where = ": ".join(part for part in (source, place, path) if part)
        raise BaselineError(f"{where}: {message}; {REFUSED}") from None
    except msgspec.DecodeError as exc:
        raise _not_json(exc, data, source) from None
    except UnicodeDecodeError:
        raise BaselineError(f"{source}: not UTF-8 text; the file is corrupt, restore it from version control") from None
    except RecursionError:  # msgspec's own guard against nesting deeper than the interpreter's stack
        raise BaselineError(f"{source}: JSON nested too deeply to be a perfguard file; {REFUSED}") from None


_HTML = re.compile(rb"\s*<(!doctype html|html)", re.IGNORECASE)


def _not_json(exc: msgspec.DecodeError, data: bytes, source: str) -> BaselineError:
    """What msgspec found malformed, with its line and the text there (its byte offset counts from the
    start of the file)."""
    html = re.fullmatch(r"(.*)\.html?", source, flags=re.IGNORECASE)
    if html and _HTML.match(data):  # the report, given in place of the record written beside it
        return BaselineError(f"{source}: this is an HTML report, not a record; give the JSON record written beside it, "
                             f"{shown(html[1] + '.json')}")
    message = str(exc).removeprefix("JSON is malformed: ")
    found = _BYTE.search(message)
    if found is not None:
        at = int(found[1])
        line = data.count(b"\n", 0, at) + 1
        message = f"{message[:found.start()].rstrip()}, line {line}: {shown(data[at:at + 20].decode('utf-8', 'replace'))}"
    return BaselineError(f"{source}: not valid JSON ({message[:1].lower() + message[1:]}); the file is corrupt or "
                         "truncated, restore it from version control")


_Versioned = msgspec.defstruct("Versioned", [("schema_version", Any, None)])


def _check_version(data: bytes, source: str, current: int, kind: str = "a run record such as reports/perfguard.json, "
                   "or a baseline file from baselines/") -> None:
    """Refuse a file of another schema than `current`, naming what to do: an older one is migrated by a command."""
    try:
        version = msgspec.json.decode(data, type=_Versioned).schema_version
    except msgspec.ValidationError:
        raise BaselineError(f"{source}: expected a JSON object at the top; pass {kind}") from None
    except msgspec.DecodeError as exc:
        raise _not_json(exc, data, source) from None
    except RecursionError:
        raise BaselineError(f"{source}: JSON nested too deeply to be a perfguard file; {REFUSED}") from None
    if version == current and type(version) is int:
        return
    if version is None:
        raise BaselineError(f"{source}: not a perfguard file of this kind (it has no schema_version); pass {kind}")
    if type(version) is int and 1 <= version < current and current == SCHEMA_VERSION:
        raise BaselineError(f"{source}: schema {version}, which this perfguard no longer reads; rewrite it as schema "
                            f"{current} with `perfguard migrate {source}`")
    raise BaselineError(f"{source}: schema_version {shown(version)}, but this perfguard reads schema {current}; use the "
                        "perfguard version that wrote it, or record the file again")


def _same_keys(data: bytes, decoded: Any, where: str) -> None:
    """Refuse a text that holds a string its decoded file does not: a key twice, a field at its default.
    msgspec keeps the last of two equal keys, silently (msgspec#648), where a reviewer reads the first: a
    second "mul" in `cases` became the case the gate judged by. A decoded twin, written back, holds every
    key and string value it was decoded from, once, and leaves out a field at its default, none of which
    perfguard writes: so its quotes are the text's, and any key that was dropped took two of them with it.
    (A quote inside a string is escaped as `\\"` on both sides.)"""
    if data.count(b'"') != _ENCODER.encode(decoded).count(b'"'):
        raise BaselineError(f"{where}: {_odd_keys(data)}; {REFUSED}")


def _odd_keys(data: bytes) -> str:
    """What `_same_keys` refused, in words: the repeated key, if json's parser finds one."""
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if twice is not None:
            raise KeyError(twice)
        return dict(pairs)

    try:
        json.loads(data, object_pairs_hook=unique)
    except KeyError as exc:
        return (f"the key {shown(exc.args[0])} appears twice in one object, and JSON would keep the last one "
                "silently")
    except ValueError:
        pass
    return "a field written at its default (or a quote escaped as \\u0022), which perfguard never writes"


def _result(twin: Any, params_at: str) -> CaseResult:
    """A result from its twin; its params (the user's values, typed Any) bounded, naming `params_at`."""
    result = _built(twin, CaseResult)
    free_form(result.params, params_at)
    return result


def _built(twin: Any, cls: type[T]) -> T:
    """Dataclass `cls` from its decoded twin: the same fields, converted in C."""
    return msgspec.convert(twin, cls, from_attributes=True)


@contextlib.contextmanager
def _paused_collector() -> Iterator[None]:
    """The cyclic collector paused while a file's objects are built: what a read builds holds no cycle, and
    the collector's walks of the new objects took more than half of a baseline's read (benchmarks/scaling.py)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
