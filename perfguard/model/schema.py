"""The typed shape of the files perfguard reads, for msgspec's one typed decode (codec.py).

Each dataclass of the model has a twin Struct (`twin`), made once from its hints: the same fields and
defaults, unknown fields refused, a field at its default left out when written back (codec.py counts the
keys so), each figure bounded by its field's name (BOUNDS, FLOORS), words as Literals, and the strings
that become dates, file names and links as types whose rule `hook` states in words (Instant, Slug,
ReportLink). msgspec checks all of that in C as it decodes, and its errors name the field's path; what
no type can say (how deep a free-form value nests, whether a baseline's case is a measurement, a file's
own layout) is checked after, in checks.py and layout.py.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Annotated, Any

import msgspec

from perfguard.model import checks, names
from perfguard.model.acceptance import AcceptedChange
from perfguard.model.baseline import RunSummary
from perfguard.model.measured import ByteSplit, Memory, Profile, TimeSplit
from perfguard.model.records import CaseResult, TimeSummary

# The largest figure of each kind a measurement can hold: past it a number is not a measurement but an
# edit (`ci_high_ms: 1e308` parses, then overflows the report's arithmetic). Generous on purpose: no
# case runs for 11 days, and no GPU has a petabyte. By the field's name: its unit is in its suffix.
BOUNDS = (
    ("_ms", 1e9),  # samples_ms, median_ms, ci_high_ms, ...: a time of 1e6 s
    ("_s", 1e6),  # setup_s, wall_s: a time of 1e6 s
    ("bytes", 1e15),  # bytes, peak_allocated_bytes, memory_bytes, ...: a size of 1e15 bytes
)
ANY_BOUND = 1e18  # every other figure (flops, counts, clocks, GB/s): squared, still finite
MAX_INT = checks.MAX_INT  # every count and byte figure perfguard writes fits in 64 bits
# The least value of the figures that have one, (least, strictly above it): a baseline's median of 0
# or negative samples parse fine, and then every case compared with it reads `unstable` ("0.000 ns →
# 2.082 ms (+inf%)") and passes; a negative retained memory would make a real leak read "improved".
FLOORS: dict[tuple[type, str], tuple[float, bool]] = {
    (RunSummary, "medians_ms"): (0, True),
    (RunSummary, "sample_counts"): (1, False),
    **{(TimeSummary, f.name): (0, f.name == "median_ms") for f in dataclasses.fields(TimeSummary)
       if f.name.endswith("_ms") or f.name in ("n", "drift_pct")},
    (Memory, "footprint_bytes"): (0, False),
    (Memory, "retained_bytes_per_call"): (0, False),
    (CaseResult, "dropped_samples"): (0, False),
    (CaseResult, "enqueue_ms"): (0, False),
    (TimeSplit, "named_ms"): (0, False),
    (TimeSplit, "other_ms"): (0, False),
    (ByteSplit, "named_bytes"): (0, False),
    (ByteSplit, "other_bytes"): (0, False),
    (AcceptedChange, "figure"): (0, False),  # times, sizes and counts: none is negative
    (AcceptedChange, "baseline"): (0, False),
}
# The user's values and perfguard's settings, not figures: kept as parsed, bounded by checks.free_form.
FREE_FORM = ("params", "options", "fingerprint")
# When a run was made, recorded or calibrated: runs are ordered, capped and refused as dated in the
# future by these, so each must be a real instant.
DATE_FIELDS = ("created_at", "recorded_at", "measured_at")


class Instant(str):
    """A date and time as perfguard writes it (checks.is_date)."""


class Slug(str):
    """A device slug: it names a baseline file (names.is_slug)."""


class ReportLink(str):
    """A link in a report: a relative path inside the report's folder (names.is_report_link)."""


_RULES: dict[type, tuple[typing.Callable[[object], bool], str]] = {
    Instant: (checks.is_date, "is not a date and time as perfguard writes it (ISO 8601, e.g. 2026-11-29T12:00:00+00:00)"),
    Slug: (names.is_slug, "is not a device slug (lower-case letters and digits joined by dashes)"),
    ReportLink: (names.is_report_link, "is not a relative path inside the report's folder"),
}


def hook(kind: type, value: Any) -> Any:
    """msgspec's dec_hook: a value of one of the types above, if it follows its rule (a ValueError says
    why, and msgspec adds the field's path)."""
    rule = _RULES.get(kind)
    if rule is None:
        raise NotImplementedError(kind)
    test, broken = rule
    if not test(value):
        raise ValueError(f"{names.shown(value)} {broken}")
    return kind(value)


def _rule_type(cls: type, name: str) -> type | None:
    if name in DATE_FIELDS:
        return Instant
    if name == "slug" or (cls in (CaseResult, AcceptedChange) and name == "device"):
        return Slug
    if (cls, name) == (Profile, "trace"):
        return ReportLink
    return None


def _bound(name: str) -> float:
    return next((most for suffix, most in BOUNDS if name.endswith(suffix)), ANY_BOUND)


def bounded(kind: type, name: str, floor: tuple[float, bool] | None = None) -> Any:
    """`kind` (int or float) within its field's bound and floor."""
    most = _bound(name)
    least, strictly = floor if floor is not None else (-most, False)
    if kind is int:
        return Annotated[int, msgspec.Meta(ge=max(int(least) + strictly, -MAX_INT + 1), le=min(int(most), MAX_INT - 1))]
    return Annotated[float, msgspec.Meta(gt=least, le=most) if strictly else msgspec.Meta(ge=least, le=most)]


_UNIONS = (typing.Union, types.UnionType)


def field_type(cls: type, name: str, hint: Any) -> Any:
    """The twin's type of `cls`'s field `name`, of type `hint`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        inner = [a for a in args if a is not type(None)]
        if all(typing.get_origin(a) is typing.Literal for a in inner):  # Regime | Literal[""]: one set of words
            single: Any = typing.Literal[tuple(w for a in inner for w in typing.get_args(a))]
        else:
            (single,) = inner
        single = field_type(cls, name, single)
        return single | None if type(None) in args else single
    if name in FREE_FORM or hint is Any:
        return dict[str, Any] if origin is dict else Any
    rule = _rule_type(cls, name)
    if rule is not None:
        return rule
    if origin is typing.Literal or hint in (str, bool):
        return hint
    if dataclasses.is_dataclass(hint):
        return twin(hint)
    if hint in (float, int):
        return bounded(hint, name, FLOORS.get((cls, name)))
    if origin is tuple:
        if args[0] is float and name.endswith("samples_ms"):
            return tuple[bounded(float, name, (0, False)), ...]  # a time is never negative
        return tuple[field_type(cls, name, args[0]), ...]
    if origin is dict:
        return dict[args[0], field_type(cls, name, args[1])]
    raise TypeError(f"no twin for {hint!r} ({cls.__name__}.{name})")  # a new kind of field: add it here


def struct(name: str, fields: list[tuple[Any, ...]]) -> type[msgspec.Struct]:
    """A Struct as every twin is: keyword fields, unknown ones refused, defaults left out when written;
    not tracked by the cyclic collector (a twin holds no cycle, and lives for one read)."""
    return msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, gc=False)


@functools.cache
def twin(cls: type, **changed: tuple[Any, ...]) -> type[msgspec.Struct]:
    """`cls`'s Struct; `changed`: fields of another type, name=(type,) or (type, default). `schema_version`
    and `status` are required, as perfguard always writes them (a key at its default is not counted)."""
    hints = typing.get_type_hints(cls)
    fields: list[tuple[Any, ...]] = []
    for f in dataclasses.fields(cls):
        if f.name in changed:
            fields.append((f.name, *changed[f.name]))
            continue
        kind = field_type(cls, f.name, hints[f.name])
        if f.name in ("schema_version", "status"):
            fields.append((f.name, kind))
        elif f.default is not dataclasses.MISSING:
            fields.append((f.name, kind, f.default))
        elif f.default_factory is not dataclasses.MISSING:
            fields.append((f.name, kind, msgspec.field(default_factory=f.default_factory)))
        else:
            fields.append((f.name, kind))
    suffix = "".join(f"-{name}" for name in sorted(changed))
    return struct(f"{cls.__name__}{suffix}", fields)

