"""Converters from parsed JSON to the record's dataclasses, built once per type (issue 34).

`codec.from_jsonable` reads a class's hints and asks `typing` what each one is for every value it
converts: a baseline of 132 cases asked 77k times, most of its load. Here each hint is turned once into
a closure that only checks and converts. The closures keep no path: they say only *whether* a value is
one `from_jsonable` takes. When one is not (Refused, or any other error), `from_jsonable` walks the same
data reflectively, which names the first field that is wrong in the words it always used; so a refusal
reads as it did, and a value the closures refuse wrongly still loads (slowly) rather than being refused.

`checked` builds the same objects and does checks.py's checks in the same pass: model/generated.py's
code, one function per class, which a load of a record or baseline runs (codec.py); a file it refuses
goes to `from_jsonable` and `checks._problems`, which say what is wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from perfguard.model.checks import MAX_INT, free_form


class Refused(Exception):
    """A value the reflective converter would refuse (or might: it decides, and says why)."""


Convert = Callable[[Any], Any]


def converter(hint: Any) -> Convert:
    """The closure for `hint`, built on its first use."""
    return _converter(hint)


def checked(cls: type) -> Convert:
    """As `converter`, and every dataclass under `cls` passes checks.py's `_problems` too (Refused if
    one might not): model/generated.py's typed pass, with values shared within the one value converted."""
    from perfguard.model import generated  # it builds on this module

    build = generated.builder(cls)
    return lambda data: build(data, generated.Interned())


@functools.cache
def _converter(hint: Any) -> Convert:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        inner = [a for a in args if a is not type(None)] or [Any]
        if all(typing.get_origin(a) is typing.Literal for a in inner):
            item = _word(frozenset(w for a in inner for w in typing.get_args(a)))
        else:
            (single,) = inner
            item = _converter(single)
        if type(None) in args:
            return lambda v: None if v is None else item(v)

        def not_null(v: Any) -> Any:
            if v is None:
                raise Refused
            return item(v)
        return not_null
    if origin is typing.Literal:
        return _word(frozenset(typing.get_args(hint)))
    if dataclasses.is_dataclass(hint):
        return _dataclass(hint)
    if origin is tuple:
        return _tuple(_converter(typing.get_args(hint)[0]))
    if origin is dict:
        return _dict(hint)
    if hint is Any:
        return _free_form
    if hint is float:
        return _float
    if hint is int:
        return _int
    if hint in (str, bool):
        return _exactly(hint)
    return lambda v: v  # a hint the reflective converter passes through unchecked


def _word(words: frozenset[str]) -> Convert:
    def word(v: Any) -> Any:
        if type(v) is not str or v not in words:
            raise Refused
        return v
    return word


def _exactly(kind: type) -> Convert:
    def exactly(v: Any) -> Any:
        if type(v) is not kind:  # subclasses (a str of torch's) go the reflective way, which decides
            raise Refused
        return v
    return exactly


def _float(v: Any) -> float:
    if type(v) is float:
        if v - v != 0.0:  # inf - inf and nan - nan are nan: the one test of both
            raise Refused
        return v
    if type(v) is int and abs(v) < 2**1023:  # a larger integer overflows float(); let the walk say so
        return float(v)
    raise Refused


def _int(v: Any) -> int:
    if type(v) is not int or not -MAX_INT < v < MAX_INT:
        raise Refused
    return v


def _tuple(item: Convert) -> Convert:
    if item is _float:
        def floats(v: Any) -> tuple[Any, ...]:
            if type(v) is not list:
                raise Refused
            if all(type(x) is float for x in v):
                # Samples: one sum answers whether all are finite (nan or inf make it non-finite; a
                # finite sum too large to be finite is a false alarm, which the walk then clears).
                s = sum(v)
                if s - s != 0.0:
                    raise Refused
                return tuple(v)
            return tuple(map(_float, v))
        return floats

    def items(v: Any) -> tuple[Any, ...]:
        if type(v) is not list:
            raise Refused
        return tuple(map(item, v))
    return items


def _dict(hint: Any) -> Convert:
    key, value = typing.get_args(hint) or (str, Any)
    keys = _word(frozenset(typing.get_args(key))) if typing.get_origin(key) is typing.Literal else None
    if value is Any:
        item = None
    else:
        item = _converter(value)

    def mapping(v: Any) -> Any:
        if type(v) is not dict:
            raise Refused
        if keys is not None:
            for k in v:
                keys(k)
        if item is None:
            return _free_form(v)
        return {k: item(x) for k, x in v.items()}
    return mapping


def _free_form(value: Any) -> Any:
    """checks.free_form's bounds; its BaselineError, like Refused, sends `from_jsonable` to its walk."""
    return free_form(value, "", "")


def _dataclass(cls: type) -> Convert:
    fields = dataclasses.fields(cls)
    names = frozenset(f.name for f in fields)
    required = frozenset(f.name for f in fields
                         if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    # The hints are resolved when the first value is converted, not here: a class may refer to itself.
    plan: list[tuple[str, Convert]] | None = None

    def build(v: Any) -> Any:
        nonlocal plan
        if type(v) is not dict or not names.issuperset(v) or not required.issubset(v):
            raise Refused
        if plan is None:  # two threads may both build it: the same list, either is kept
            hints = typing.get_type_hints(cls)
            plan = [(f.name, _converter(hints[f.name])) for f in fields]
        return cls(**{name: conv(v[name]) for name, conv in plan if name in v})
    return build
