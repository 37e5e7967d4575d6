"""The typed pass of a load: one function per dataclass, generated from its hints once, that checks and
builds an instance from parsed JSON (issue 34).

`compiled.py`'s closures cost a Python call per value; a load of the committed baseline made 60k of
them, 31 ms against json.loads' 10. Here each class's fields become straight-line code (`exec`, once
per class, cached): a figure is checked by two comparisons inline, a list of samples by its sum, min
and max, a word by one lookup in the mapping of its Literal's words. What `checks.py` checks (bounds by
the field's name, dates, each class's rules) is checked in the same code, so the pass that builds also
clears: `Refused` (or any error) when a value might not pass, and `codec` then reads the file the
strict, slow way, whose walks word the refusal. A false alarm here costs time, never a wrong refusal.

Equal strings and samples are shared, not copied (`Interned`): every run of a recording session has
the same commit, card and date, and an event timer's samples take a few hundred values; a baseline
then takes half the memory it took (`benchmarks/scaling.py`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from perfguard.model import checks, compiled

Refused = compiled.Refused
Build = Callable[[Any, "Interned"], Any]
_UNIONS = (typing.Union, types.UnionType)
_NUMBERS = {float, int}  # type() of each: a bool is neither


class Interned:
    """One load's shared values: each string or sample figure is kept once, however often it is read."""

    __slots__ = ("str", "float")

    def __init__(self) -> None:
        self.str: dict[str, str] = {}
        self.float: dict[float, float] = {}


def builder(cls: type) -> Build:
    """`cls`'s generated function: (parsed JSON, Interned) -> a checked instance, or an exception."""
    return _builder(cls)


@functools.lru_cache(maxsize=4096)
def _is_date(text: str) -> bool:
    return checks.is_date(text)  # a recording session's runs share their dates: most calls are hits


def _free_form(value: Any) -> Any:
    return checks.free_form(value, "", "")


def _figures(v: Any, low: float, high: float, memo: dict[float, float]) -> tuple[float, ...]:
    """A list of figures, each within [low, high], as a tuple of floats (ints converted), shared in `memo`."""
    if type(v) is not list:
        raise Refused
    if not v:
        return ()
    kinds = set(map(type, v))  # in C, as are sum, min, max and the sharing below: 21k samples a baseline
    if not kinds <= _NUMBERS:
        raise Refused
    total = sum(v)  # nan or inf among them make it non-finite; a finite total past a float's range is a
    if total - total != 0.0 or min(v) < low or max(v) > high:  # false alarm, which the strict walk clears
        raise Refused
    if int in kinds:
        v = list(map(float, v))
    return tuple(map(memo.setdefault, v, v))


def _figure_map(v: Any, low: float, high: float, kind: type, strs: dict[str, str]) -> dict[str, Any]:
    if type(v) is not dict:
        raise Refused
    if not v:
        return {}
    values = v.values()
    if not set(map(type, values)) <= (_NUMBERS if kind is float else {int}) or min(values) < low or max(values) > high:
        raise Refused  # nan compares false with both bounds: sum() tells
    if kind is float:
        total = sum(values)
        if total - total != 0.0:
            raise Refused
        return {strs(k, k): float(x) for k, x in v.items()}
    return {strs(k, k): x for k, x in v.items()}


def _words(v: Any, strs: dict[str, str]) -> Any:
    """A tuple of strings, or a mapping of strings to strings."""
    get = strs.setdefault
    if type(v) is list:
        for x in v:
            if type(x) is not str:
                raise Refused
        return tuple([get(x, x) for x in v])
    if type(v) is dict:
        for x in v.values():
            if type(x) is not str:
                raise Refused
        return {get(k, k): get(x, x) for k, x in v.items()}
    raise Refused


def _slow(hint: Any, name: str) -> Callable[[Any], Any]:
    """A hint the generated code has no shape for: the closures, then checks.py's judgement of the value."""
    convert, most = compiled.converter(hint), checks._bound(name)[0]
    free, samples = name in checks.FREE_FORM, name.endswith("samples_ms")

    def slow(v: Any) -> Any:
        value = convert(v)
        if value is not None and not checks._value_clean(value, most, free, samples):
            raise Refused
        return value
    return slow


class _Source:
    """The text of one class's function, and the values it names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"Refused": Refused, "_figures": _figures, "_figure_map": _figure_map,
                                    "_words": _words, "_free_form": _free_form, "_is_date": _is_date}

    def name(self, value: Any, prefix: str) -> str:
        key = f"{prefix}{len(self.env)}"
        self.env[key] = value
        return key

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _check(src: _Source, hint: Any, name: str, floor: tuple[float, bool] | None, at: int) -> None:
    """Lines that check `x`, a value of `hint` (field `name`), and leave it converted in `x`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        inner = [a for a in args if a is not type(None)]
        if type(None) in args:
            src.add(at, "if x is not None:")
            at += 1
        else:
            src.add(at, "if x is None: raise Refused")
        if all(typing.get_origin(a) is typing.Literal for a in inner):
            hint = typing.Literal[tuple(w for a in inner for w in typing.get_args(a))]
        else:
            (hint,) = inner
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    most = checks._bound(name)[0]
    low, strictly = floor if floor else (-most, False)
    within = f"{low!r} {'<' if strictly else '<='} x <= {most!r}"  # nan fails either comparison
    if name in checks.FREE_FORM or hint is Any:
        if origin is dict:
            src.add(at, "if type(x) is not dict: raise Refused")
        src.add(at, "x = _free_form(x)")
    elif origin is typing.Literal:
        src.add(at, f"x = {src.name({w: w for w in args}, 'W')}[x]")  # an unknown word: KeyError
    elif dataclasses.is_dataclass(hint):
        src.add(at, f"x = {src.name(_builder(hint), 'B')}(x, memo)")
    elif hint is float:
        src.add(at, "if type(x) is float:")
        src.add(at + 1, f"if not {within}: raise Refused")
        src.add(at, "elif type(x) is int:")  # type() is int: a bool is not a figure
        src.add(at + 1, f"if not {within}: raise Refused")
        src.add(at + 1, "x = float(x)")
        src.add(at, "else: raise Refused")
    elif hint is int:
        src.add(at, f"if type(x) is not int or not {within}: raise Refused")
    elif hint is str:
        src.add(at, "if type(x) is not str: raise Refused")
        src.add(at, "x = strs(x, x)")
    elif hint is bool:
        src.add(at, "if type(x) is not bool: raise Refused")
    elif origin is tuple and args[0] is float:
        low = 0.0 if name.endswith("samples_ms") else -most  # a time is never negative
        src.add(at, f"x = _figures(x, {low!r}, {most!r}, memo.float)")
    elif origin is tuple and args[0] is str or origin is dict and args == (str, str):
        src.add(at, "x = _words(x, memo.str)")
    elif origin is tuple and dataclasses.is_dataclass(args[0]):
        src.add(at, "if type(x) is not list: raise Refused")
        src.add(at, f"x = tuple([{src.name(_builder(args[0]), 'B')}(i, memo) for i in x])")
    elif origin is dict and dataclasses.is_dataclass(args[1]):
        keys = (f"{src.name({w: w for w in typing.get_args(args[0])}, 'W')}[k]"  # an unknown word: KeyError
                if typing.get_origin(args[0]) is typing.Literal else "strs(k, k)")
        src.add(at, "if type(x) is not dict: raise Refused")
        src.add(at, f"x = {{{keys}: {src.name(_builder(args[1]), 'B')}(i, memo) for k, i in x.items()}}")
    elif origin is dict and args[0] is str and args[1] in (float, int):
        src.add(at, f"x = _figure_map(x, {-most!r}, {most!r}, {args[1].__name__}, strs)")
    else:
        src.add(at, f"x = {src.name(_slow(hint, name), 'S')}(x)")


@functools.cache
def _builder(cls: type) -> Build:
    fields = [f for f in dataclasses.fields(cls)]
    hints = typing.get_type_hints(cls)
    slots = "__slots__" in cls.__dict__
    src = _Source()
    new, klass = src.name(object.__new__, "N"), src.name(cls, "C")
    src.add(0, "def build(v, memo):")
    src.add(1, "if type(v) is not dict: raise Refused")
    src.add(1, "strs = memo.str.setdefault")
    src.add(1, "n = 0")
    src.add(1, f"o = {new}({klass})" if slots else "kw = {}")
    for f in fields:
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        put = f"{src.name(getattr(cls, f.name).__set__, 'P')}(o, x)" if slots else f"kw[{f.name!r}] = x"
        src.add(1, f"if {f.name!r} in v:")
        src.add(2, f"x = v[{f.name!r}]")
        src.add(2, "n += 1")
        _check(src, hints[f.name], f.name, checks.FLOORS.get((cls, f.name)), 2)
        if f.name in checks.DATE_FIELDS:
            src.add(2, "if x is not None and (type(x) is not str or not _is_date(x)): raise Refused")
        src.add(2, put)
        if required:
            src.add(1, "else: raise Refused")
        elif slots:
            default = (f"{src.name(f.default_factory, 'F')}()" if f.default is dataclasses.MISSING
                       else src.name(f.default, "D"))
            src.add(1, f"else: {put.replace('(o, x)', f'(o, {default})')}")
    src.add(1, "if n != len(v): raise Refused")  # a field this class does not have
    if not slots:
        src.add(1, f"o = {klass}(**kw)")
    if cls in checks.WORDED_RULES:  # slugs and links: few objects, so the rules' own words decide
        src.add(1, f"if next({src.name(checks._kind_problems, 'K')}(o, ''), None) is not None: raise Refused")
    src.add(1, "return o")
    namespace = dict(src.env)
    exec("\n".join(src.lines), namespace)  # noqa: S102 - text made above from the class's own hints
    return namespace["build"]  # type: ignore[no-any-return]


