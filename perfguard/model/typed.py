"""The fast way in, in C: a current record or baseline decoded and validated by msgspec (issue 34).

Each dataclass of the model has a twin msgspec Struct, made once from its hints (`twin`): the same
fields and defaults, unknown fields refused (`forbid_unknown_fields`), each figure bounded by its
field's name and `checks.FLOORS` (`Meta(ge=, le=)`), words as Literals, samples as tuples of bounded
floats. msgspec decodes each case's text into the twins and checks all of that in C; the twins are
converted to the dataclasses (`msgspec.convert`, in C too); a baseline's runs stay the columns they
were decoded as (model/columns.py's ColumnRuns, which builds the RunSummary objects as they are read,
and whose `check` refuses what they could not be built from). What msgspec does not check is checked
after it, on the few objects that need it: dates (`checks.is_date`), the rules of `checks.WORDED_RULES`
(slugs, links), the bounds of free-form values (`checks.free_form`). The other twins are dropped a case
at a time.

msgspec keeps the last of two equal keys, silently, where perfguard refuses the file. So the keys are
counted twice. In the text: `":`, which every key ends with (where none has space before its colon:
else the file is handed on); an escaped quote or a string that starts with a colon only adds to it.
And in what was built (`_counter`): each field not at its default (a field the text left out is at
it) and each key of a mapping, which a repeated key adds to once. So the built count is at most the
text's, and equal only where no key repeats (and no field is written at its default, which perfguard
never writes): the read is handed on unless the two are equal.

Nothing here is worded: any doubt returns None, and codec.py reads the file again the strict way, which
says what is wrong; so a file reads here as it reads there. (A second fast way, json's scanner a case at
a time, read what this declines until no file perfguard writes was declined: removed.)
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import mmap
import re
import types
import typing
from typing import Annotated, Any

import msgspec

from perfguard.model import checks, layout
from perfguard.model.baseline import BaselineEntry, BaselineFile, Calibration, RunSummary, RunTime
from perfguard.model.columns import COLUMN_FIELDS, ColumnRuns
from perfguard.model.columns import check as check_runs
from perfguard.model.checks import check_baseline
from perfguard.model.checks import MAX_INT as _MAX_INT
from perfguard.model.generated import _is_date
from perfguard.model.records import SCHEMA_VERSION, CaseResult, DeviceInfo, RunRecord

_UNIONS = (typing.Union, types.UnionType)
_KEY_SPACE = re.compile(r'"[ \t\n\r]+:')  # a key with space before its colon: the text's count would miss it
_KEY_SPACE_BYTES = re.compile(_KEY_SPACE.pattern.encode())


class _Refused(Exception):
    pass


def _bounded(kind: type, name: str, floor: tuple[float, bool] | None, low: float | None = None) -> Any:
    """`kind` within its field's bound (checks.BOUNDS) and floor (checks.FLOORS), or at least `low`."""
    most = checks._bound(name)[0]
    least, strictly = floor if floor is not None else (-most if low is None else low, False)
    if kind is int:
        return Annotated[int, msgspec.Meta(ge=max(int(least) + (1 if strictly else 0), -_MAX_INT + 1),
                                           le=min(int(most), _MAX_INT - 1))]
    return Annotated[float, msgspec.Meta(gt=least, le=most) if strictly else msgspec.Meta(ge=least, le=most)]


def _type(hint: Any, name: str, floor: tuple[float, bool] | None) -> Any:
    """The twin's type of a field `name` of `hint`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        inner = [a for a in args if a is not type(None)]
        if all(typing.get_origin(a) is typing.Literal for a in inner):
            single: Any = typing.Literal[tuple(w for a in inner for w in typing.get_args(a))]
        else:
            (single,) = inner
        single = _type(single, name, floor)
        return single | None if type(None) in args else single  # type: ignore[operator]
    if name in checks.FREE_FORM or hint is Any:
        return dict[str, Any] if origin is dict else Any  # bounded after (checks.free_form)
    if origin is typing.Literal or hint in (str, bool):
        return hint
    if dataclasses.is_dataclass(hint):
        return twin(hint)
    if hint in (float, int):
        return _bounded(hint, name, floor)
    if origin is tuple:
        item = args[0]
        if item is float:
            return tuple[_bounded(float, name, None, 0.0 if name.endswith("samples_ms") else None), ...]  # type: ignore[misc]
        return tuple[_type(item, name, None), ...]  # type: ignore[misc]
    if origin is dict:
        key, value = args
        if value in (float, int):
            value = _bounded(value, name, None)
        else:
            value = _type(value, name, None)
        return dict[key, value]  # type: ignore[valid-type]
    raise TypeError(f"no twin for {hint!r} ({name})")  # a new kind of field: add it here


def _defaults(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return msgspec.field(default_factory=f.default_factory)
    return msgspec.NODEFAULT


@functools.cache
def twin(cls: type) -> type[msgspec.Struct]:
    """`cls`'s Struct: its fields, types bounded, defaults; `schema_version` and `status` required, as
    perfguard always writes them (a key at its default would not be counted). Not tracked by the cyclic
    collector: a twin holds no cycle, and lives for one case."""
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        default = msgspec.NODEFAULT if f.name in ("schema_version", "status") else _defaults(f)
        kind = _type(hints[f.name], f.name, checks.FLOORS.get((cls, f.name)))
        fields.append((f.name, kind) if default is msgspec.NODEFAULT else (f.name, kind, default))
    return msgspec.defstruct(f"{cls.__name__}Twin", fields, kw_only=True, forbid_unknown_fields=True,
                             gc=False)


@functools.cache
def _post(cls: type) -> Any:
    """What msgspec left to check in an instance of dataclass `cls` and under it: a function that raises,
    or None where nothing is left."""
    hints = typing.get_type_hints(cls)
    steps = []
    for f in dataclasses.fields(cls):
        name, hint = f.name, hints[f.name]
        if name in checks.DATE_FIELDS:
            steps.append((name, _date))
        elif name in checks.FREE_FORM or hint is Any:
            steps.append((name, _free_form))
        else:
            inner = _classes(hint)
            if inner is not None:
                check = _post(inner[0])
                if check is not None:
                    steps.append((name, _each(check, inner[1])))
    rules = cls in checks.WORDED_RULES
    if not steps and not rules:
        return None

    def post(obj: Any) -> None:
        for name, check in steps:
            value = getattr(obj, name)
            if value is not None:
                check(value)
        if rules and next(checks._kind_problems(obj, ""), None) is not None:
            raise _Refused
    return post


def _classes(hint: Any) -> tuple[type, str] | None:
    """The dataclass a field holds (one, a tuple of them, a mapping to them), and how."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        inner = [a for a in args if a is not type(None)]
        return _classes(inner[0]) if len(inner) == 1 else None
    if dataclasses.is_dataclass(hint):
        return hint, "one"  # type: ignore[return-value]
    if origin is tuple and dataclasses.is_dataclass(args[0]):
        return args[0], "tuple"
    if origin is dict and dataclasses.is_dataclass(args[1]):
        return args[1], "dict"
    return None


def _each(check: Any, how: str) -> Any:
    if how == "one":
        return check
    if how == "tuple":
        return lambda v: [check(x) for x in v]
    return lambda v: [check(x) for x in v.values()]


def _date(value: Any) -> None:
    if type(value) is not str or not _is_date(value):  # cached: a session's cases share their dates
        raise _Refused


def _free_form(value: Any) -> None:
    """checks.free_form's bounds. msgspec decodes no NaN or infinity, so of a flat object's values only an
    integer can be out of bounds; anything nested goes to its walk."""
    for v in value.values() if type(value) is dict else (value,):
        t = type(v)
        if t is str or t is float or t is bool or v is None or t is int and -_MAX_INT < v < _MAX_INT:
            continue
        checks.free_form(value, "", "")
        return


@functools.cache
def _decoder(kind: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(kind)


def _text_keys(text: str | bytes | mmap.mmap) -> int:
    """The keys of `text` as counted (the module's words): at least as many as it holds, where no key has
    space before its colon (refused: the count would miss it). `text` may be the file's bytes, mapped
    (store.load_file): counted in a copy, dropped before anything is built."""
    if isinstance(text, str):
        if _KEY_SPACE.search(text):
            raise _Refused
        return text.count('":')
    data = bytes(text)
    if _KEY_SPACE_BYTES.search(data):
        raise _Refused
    return data.count(b'":')


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, msgspec.Struct)


def _plain(kind: Any) -> Any:
    """`kind` without its bounds (Annotated) and without `| None`."""
    if typing.get_origin(kind) is Annotated:
        return _plain(typing.get_args(kind)[0])
    if typing.get_origin(kind) in _UNIONS:
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return _plain(inner[0]) if len(inner) == 1 else kind
    return kind


@functools.cache
def _counter(struct: type) -> Any:
    """A function that counts the keys a decoded `struct` was built from: each field not at its default
    (a field the text left out is at it), each key of its mappings, and so on under it; at most the keys
    the text holds, fewer where one repeats (it was built once) or a field was written at its default."""
    env: dict[str, Any] = {"free": _free_keys}
    lines = ["def count(o):", "    n = 0"]
    for i, f in enumerate(msgspec.structs.fields(struct)):
        kind = _plain(f.type)
        origin, args = typing.get_origin(kind), typing.get_args(kind)
        inner = []
        if _is_struct(kind):
            env[f"c{i}"] = _counter(kind)
            inner.append(f"n += c{i}(v)")
        elif origin is dict:
            inner.append("n += len(v)")
            value = _plain(args[1])
            if _is_struct(value):
                env[f"c{i}"] = _counter(value)
                inner.append(f"n += sum(map(c{i}, v.values()))")
            elif value is Any:
                inner.append("n += free(v) - len(v)")
        elif origin in (tuple, list) and _is_struct(_plain(args[0])):
            env[f"c{i}"] = _counter(_plain(args[0]))
            inner.append(f"n += sum(map(c{i}, v))")
        elif kind is Any:
            inner.append("n += free(v)")
        lines.append(f"    v = o.{f.name}")
        if f.required:
            lines.append("    n += 1")
            guard = "    if v is not None:" if inner else None
        elif f.default_factory is not msgspec.NODEFAULT:
            guard = "    if v:"
        elif f.default is None:
            guard = "    if v is not None:"
        else:
            env[f"d{i}"] = f.default
            guard = f"    if v != d{i}:"
        if guard is not None:
            lines.append(guard)
            if not f.required:
                lines.append("        n += 1")
            lines.extend(f"        {line}" for line in inner)
    lines.append("    return n")
    exec("\n".join(lines), env)  # noqa: S102 - text made here from the Struct's own fields
    return env["count"]


def _shared(result: Any, s: Any) -> Any:
    """A decoded result (twin) with its strings that repeat from case to case made one object each: `s`
    is the load's setdefault. msgspec makes every string anew, and the copies were half a file's size:
    kernel names (0.29× the committed baseline), then the words of a time's stop, a result's timer,
    device, name, outputs and roofline (measured with benchmarks/scaling.py's files). These fields only,
    not every string: a walk of every field took twice as long for 0.05× more. In place: the Struct is
    this load's own, and `msgspec.convert` keeps the strings it holds."""
    result.name, result.timer, result.device = s(result.name, result.name), s(result.timer, result.timer), s(result.device, result.device)
    if result.outputs is not None:
        result.outputs = s(result.outputs, result.outputs)
    if result.params:
        result.params = {s(k, k): s(x, x) if type(x) is str else x for k, x in result.params.items()}
    for timing in result.timings.values():
        timing.summary.stop_reason = s(timing.summary.stop_reason, timing.summary.stop_reason)
    counters, metrics = result.counters, result.metrics
    if counters is not None:
        if counters.kernels:
            counters.kernels = {s(k, k): x for k, x in counters.kernels.items()}
        if counters.aten_ops:
            counters.aten_ops = {s(k, k): x for k, x in counters.aten_ops.items()}
    if metrics is not None:
        if metrics.roofs is not None:
            metrics.roofs = s(metrics.roofs, metrics.roofs)
        if metrics.bound is not None:
            metrics.bound = s(metrics.bound, metrics.bound)
    return result


def _free_keys(value: Any) -> int:
    """The keys in a free-form value (bounded already: checks.free_form)."""
    if type(value) is dict:
        n = len(value)
        for v in value.values():
            if type(v) is dict or type(v) is list:
                n += _free_keys(v)
        return n
    if type(value) is list:
        return sum(_free_keys(v) for v in value if type(v) is dict or type(v) is list)
    return 0


def _converted(obj: Any, cls: type) -> Any:
    value = msgspec.convert(obj, cls, from_attributes=True)
    check = _post(cls)
    if check is not None:
        check(value)
    return value


# --- a baseline: the file's object, its sessions table, and each case (kept raw until its turn) ----------

@functools.cache
def _baseline_types() -> tuple[Any, Any]:
    hints = typing.get_type_hints(RunSummary)

    def column(hint: Any, name: str, floor: tuple[float, bool] | None) -> Any:
        """One value for every run, or a list of one a run; null: the field's default (a time's median:
        no such time in that run, which columns.check refuses)."""
        one = _type(hint, name, floor)
        if typing.get_origin(one) in _UNIONS:
            (one,) = [a for a in typing.get_args(one) if a is not type(None)]
        return one | list[one | None] | None  # type: ignore[valid-type]

    time_hints = typing.get_type_hints(RunTime)
    times = msgspec.defstruct("RunTimeColumns", [
        (f.name, column(time_hints[f.name], f.name, checks.FLOORS.get((RunTime, f.name))), None)
        for f in dataclasses.fields(RunTime)], kw_only=True, forbid_unknown_fields=True, gc=False)
    columns = msgspec.defstruct("RunColumns", [
        (layout.SESSION, list[Annotated[int, msgspec.Meta(ge=0)]]),
        *((f.name, column(hints[f.name], f.name, None), None) for f in COLUMN_FIELDS),
        (layout.TIMINGS, dict[hints[layout.TIMINGS].__args__[0], times], msgspec.field(default_factory=dict)),
    ], kw_only=True, forbid_unknown_fields=True, gc=False)
    session = msgspec.defstruct("SessionRow", [
        ("recorded_at", str), *((name, str | None, None) for name in layout.SESSION_FIELDS if name != "recorded_at"),
        ("fingerprint", dict[str, Any] | None, None)], kw_only=True, forbid_unknown_fields=True, gc=False)
    # A result in a baseline leaves out its id, the case's key (layout._result); its device is the file's
    # where it is left out (the default "").
    result = _variant("BaselineResultTwin", twin(CaseResult), id=(str | None, None))
    entry = msgspec.defstruct("EntryTwin", [
        (layout.SESSION, Annotated[int, msgspec.Meta(ge=0)]), ("result", result), ("runs", columns)],
        kw_only=True, forbid_unknown_fields=True, gc=False)
    top = msgspec.defstruct("BaselineTop", [
        ("schema_version", int), ("device", twin(DeviceInfo)), (layout.SESSIONS, list[session]),
        ("cases", dict[str, msgspec.Raw]), ("calibration", twin(Calibration) | None, None)],
        kw_only=True, forbid_unknown_fields=True, gc=False)
    return top, entry


_NEW = object.__new__


def baseline(text: str | bytes | mmap.mmap) -> BaselineFile | None:
    """The baseline in `text`, decoded, checked and counted; None where codec.py's other ways decide."""
    return _quietly(_baseline, text)


def _quietly(read: Any, text: str) -> Any:
    """`read(text)`, or None for any doubt, with the cyclic collector paused: what is built holds no
    cycle, and the collector's walks of the objects a load makes took near a third of its time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return read(text)
    except Exception:  # noqa: BLE001 - another way decides, and the strict one words it
        return None
    finally:
        if collecting:
            gc.enable()


def _baseline(text: str | bytes | mmap.mmap) -> BaselineFile:
    top_type, entry_type = _baseline_types()
    expected = _text_keys(text)
    top = _decoder(top_type).decode(text)
    if top.schema_version != SCHEMA_VERSION:
        raise _Refused  # an older version is migrated on the strict way
    raw = top.cases
    counted = _counter(top_type)(top)  # the cases' keys, not what is under them (kept raw)
    rows = top.sessions
    for row in rows:
        _date(row.recorded_at)
        if row.fingerprint is not None:
            _free_form(row.fingerprint)
    table = [[getattr(row, name) for row in rows] for name in layout.SESSION_FIELDS]
    slug = top.device.slug
    decode, count = _decoder(entry_type).decode, _counter(entry_type)
    strs: dict[str, str] = {}
    share = strs.setdefault
    cases: dict[str, BaselineEntry] = {}
    for key, item in raw.items():
        twin_entry = decode(item)
        row = rows[twin_entry.session]  # an index past the table raises: handed on
        if row.fingerprint is None:
            raise _Refused  # a run's row, not an entry's
        twin_result = twin_entry.result
        if twin_result.id is not None and twin_result.id != key:
            raise _Refused
        left_out = (twin_result.id is None) + (twin_result.device == "")  # keys the text has not: not counted
        twin_result.id = key
        if twin_result.device == "":
            twin_result.device = slug
        _shared(twin_result, share)
        result = _converted(twin_result, CaseResult)  # its free-form values bounded before they are counted
        counted += count(twin_entry) - left_out
        entry = _NEW(BaselineEntry)
        # The row's strings and fingerprint, one object for every case of the session (never changed).
        BaselineEntry.recorded_at.__set__(entry, row.recorded_at)  # type: ignore[attr-defined]
        BaselineEntry.commit.__set__(entry, row.commit)  # type: ignore[attr-defined]
        BaselineEntry.fingerprint.__set__(entry, row.fingerprint)  # type: ignore[attr-defined]
        BaselineEntry.result.__set__(entry, result)  # type: ignore[attr-defined]
        check_runs(twin_entry.runs, len(rows))
        BaselineEntry.runs.__set__(entry, ColumnRuns(twin_entry.runs, table))  # type: ignore[attr-defined]
        cases[result.id] = entry  # the id's string, shared with the result
    if counted != expected:
        raise _Refused  # a key twice, or a field written at its default
    device = _converted(top.device, DeviceInfo)
    calibration = None if top.calibration is None else _converted(top.calibration, Calibration)
    built = BaselineFile(device=device, cases=cases, schema_version=SCHEMA_VERSION, calibration=calibration)
    return check_baseline(built, "", known_clean=True)  # each case a measurement (its words are the strict way's)


# --- a record ---------------------------------------------------------------------------------------------

@functools.cache
def _record_types() -> tuple[Any, Any]:
    top = _variant("RecordTop", twin(RunRecord), results=(list[msgspec.Raw],))  # each result decoded in its turn
    return top, twin(CaseResult)


def _variant(name: str, struct: type[msgspec.Struct], **changed: tuple[Any, ...]) -> type[msgspec.Struct]:
    """`struct` with some fields changed: name=(type,) or (type, default)."""
    spec: list[Any] = []
    for f in msgspec.structs.fields(struct):
        if f.name in changed:
            spec.append((f.name, *changed[f.name]))
        elif f.required:
            spec.append((f.name, f.type))
        elif f.default_factory is not msgspec.NODEFAULT:
            spec.append((f.name, f.type, msgspec.field(default_factory=f.default_factory)))
        else:
            spec.append((f.name, f.type, f.default))
    return msgspec.defstruct(name, spec, kw_only=True, forbid_unknown_fields=True, gc=False)


def record(text: str) -> RunRecord | None:
    """The run record in `text`, decoded, checked and counted; None where codec.py's other ways decide."""
    return _quietly(_record, text)


def _record(text: str) -> RunRecord:
    top_type, result_type = _record_types()
    expected = _text_keys(text)
    top = _decoder(top_type).decode(text)
    if top.schema_version != SCHEMA_VERSION:
        raise _Refused
    _free_form(top.options)
    raw = top.results
    counted = _counter(top_type)(top)  # `results` itself, if it is there, and none of what is in it
    decode, count = _decoder(result_type).decode, _counter(result_type)
    strs: dict[str, str] = {}
    share = strs.setdefault
    results = []
    for item in raw:
        twin_result = _shared(decode(item), share)
        results.append(_converted(twin_result, CaseResult))  # its free-form values bounded before they are counted
        counted += count(twin_result)
    if counted != expected:
        raise _Refused
    rest = msgspec.structs.replace(top, results=())
    record = _converted(rest, RunRecord)
    return dataclasses.replace(record, results=tuple(results))


__all__ = ["baseline", "record", "twin"]
