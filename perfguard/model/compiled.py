"""Converters from parsed JSON to the record's dataclasses, built once per type (issue 34).

`codec.from_jsonable` reads a class's hints and asks `typing` what each one is for every value it
converts: a baseline of 132 cases asked 77k times, most of its load. Here each hint is turned once into
a closure that only checks and converts. The closures keep no path: they say only *whether* a value is
one `from_jsonable` takes. When one is not (Refused, or any other error), `from_jsonable` walks the same
data reflectively, which names the first field that is wrong in the words it always used; so a refusal
reads as it did, and a value the closures refuse wrongly still loads (slowly) rather than being refused.

`checked` builds the same objects and does checks.py's checks in the same pass (bounds, dates, slugs,
each class's rules), so that loading a record or baseline walks it once; a file it refuses goes to
`from_jsonable` and `checks._problems`, which say what is wrong.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from perfguard.model import checks

MAX_INT = 2**63  # as codec.MAX_INT: the codec imports this module


class Refused(Exception):
    """A value the reflective converter would refuse (or might: it decides, and says why)."""


Convert = Callable[[Any], Any]


def converter(hint: Any) -> Convert:
    """The closure for `hint`, built on its first use."""
    return _converter(hint)


def checked(cls: type) -> Convert:
    """As `converter`, and every dataclass under `cls` passes checks.py's `_problems` too (Refused if
    one might not): the checks of a load in the pass that converts, each field by what its hint holds."""
    return _converter(cls, True)


@functools.cache
def _converter(hint: Any, checked: bool = False) -> Convert:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        inner = [a for a in args if a is not type(None)] or [Any]
        if all(typing.get_origin(a) is typing.Literal for a in inner):
            item = _word(frozenset(w for a in inner for w in typing.get_args(a)))
        else:
            (single,) = inner
            item = _converter(single, checked)
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
        return _dataclass(hint, checked)
    if origin is tuple:
        return _tuple(_converter(typing.get_args(hint)[0], checked))
    if origin is dict:
        return _dict(hint, checked)
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


def _dict(hint: Any, checked: bool) -> Convert:
    key, value = typing.get_args(hint) or (str, Any)
    keys = _word(frozenset(typing.get_args(key))) if typing.get_origin(key) is typing.Literal else None
    if value is Any:
        item = None
    else:
        item = _converter(value, checked)

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
    """codec._free_form's bounds; its BaselineError, like Refused, sends `from_jsonable` to its walk."""
    from perfguard.model.codec import _free_form as bounded  # the codec imports this module

    return bounded(value, "", "")


def _dataclass(cls: type, checked: bool) -> Convert:
    fields = dataclasses.fields(cls)
    names = frozenset(f.name for f in fields)
    required = frozenset(f.name for f in fields
                         if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    # A frozen dataclass's __init__ sets each field through object.__setattr__: a third of the time of
    # converting a baseline. A class with nothing more to its __init__ (no __post_init__, no slots, every
    # field an init field) is filled in one step instead; any other goes through its __init__.
    dates = checks.date_fields(cls) if checked else ()
    kind = checked and issubclass(cls, checks.KINDS)
    plain = (not hasattr(cls, "__post_init__") and "__slots__" not in cls.__dict__ and all(f.init for f in fields))
    # The hints are resolved when the first value is converted, not here: a class may refer to itself.
    plan: list[tuple[str, Convert, Any, Any]] | None = None

    def build(v: Any) -> Any:
        nonlocal plan
        if type(v) is not dict or not names.issuperset(v) or not required.issubset(v):
            raise Refused
        if plan is None:  # two threads may both build it: the same list, either is kept
            hints = typing.get_type_hints(cls)
            field = _checked_field if checked else lambda hint, _: _converter(hint)
            plan = [(f.name, field(hints[f.name], f.name), f.default,
                     None if f.default_factory is dataclasses.MISSING else f.default_factory) for f in fields]
        if plain:
            obj = object.__new__(cls)
            obj.__dict__.update({name: conv(v[name]) if name in v else default if factory is None else factory()
                                 for name, conv, default, factory in plan})
        else:
            obj = cls(**{name: conv(v[name]) for name, conv, _, _ in plan if name in v})
        for name in dates:
            value = getattr(obj, name, None)
            if value is not None and not checks.is_date(value):
                raise Refused
        if kind and next(checks._kind_problems(obj, ""), None) is not None:
            raise Refused
        return obj
    return build


_UNIONS = (typing.Union, types.UnionType)


def _bounded(kind: type, optional: bool, most: float) -> Convert:
    """A number of `kind` within the field's bound, in one call: most of a record's fields are these."""
    def number(v: Any) -> Any:
        t = type(v)
        if (t is int or (t is float and kind is float)) and -most <= v <= most:  # nan and inf fail the bound
            return float(v) if kind is float else v  # every bound is below 2**63, and exact in a float
        if v is None and optional:
            return None
        raise Refused
    return number


def _leaves(hint: Any) -> set[Any]:
    """The types a value of `hint` is made of: dict[str, float] | None is str, float and None."""
    if typing.get_origin(hint) is typing.Literal:
        return {str}
    args = [a for a in typing.get_args(hint) if a is not Ellipsis]
    return set().union(*map(_leaves, args)) if args else {hint}


def _checked_field(hint: Any, name: str) -> Convert:
    """Field `name`'s converter in a checked pass: its dataclasses checked by their own converters,
    words as they are, and figures judged as `checks.clean` judges them (bounds by the field's name)."""
    leaves = _leaves(hint)
    if any(dataclasses.is_dataclass(t) for t in leaves):
        return _converter(hint, True)  # no figure sits beside a dataclass in any hint of the record
    free, samples, most = name in checks.FREE_FORM, name.endswith("samples_ms"), checks._bound(name)[0]
    plain = _converter(hint)
    if free or leaves <= {str, bool, type(None)}:
        return plain
    if leaves in ({float}, {int}, {float, type(None)}, {int, type(None)}) and typing.get_origin(hint) in _UNIONS + (None,):
        return _bounded(int if int in leaves else float, type(None) in leaves, most)

    def figures(v: Any) -> Any:
        value = plain(v)
        if value is not None and not checks._value_clean(value, most, free, samples):
            raise Refused
        return value
    return figures
