"""What a record or baseline must hold beyond the types the codec checks: values that make sense.

A baseline whose medians are 0 or whose samples are negative or empty parses fine, and then every
case compared with it reads `unstable` ("0.000 ns → 2.082 ms (+inf%)") and passes. A slug that
is a path, a trace that is a `javascript:` link, a status no renderer knows: each is a file that was
not written by perfguard as it is, so it is refused with one line naming the file and the field,
before anything is compared, written or rendered. `codec.loads_record` and `codec.loads_baseline`
call these; the walk is generic (every TimeSummary and run time, every `*samples_ms` field, wherever it sits), so a
field that holds more of them later is checked without a change here.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from perfguard.errors import BaselineError
from perfguard.model import names
from perfguard.model.baseline import BaselineFile, RunTime
from perfguard.model.columns import ColumnRuns
from perfguard.model.measured import Memory, Profile
from perfguard.model.records import CaseResult, DeviceInfo, TimeSummary, RunRecord

REFUSED = "refused: re-record the file, or restore it from version control"

# The largest figure of each kind a measurement can hold: past it a number is not a measurement but an
# edit (`ci_high_ms: 1e308` parses, then overflows the report's arithmetic). Generous on purpose: no
# case runs for 11 days, and no GPU has a petabyte. By the field's name: its unit is in its suffix.
BOUNDS = (
    ("_ms", 1e9, "a time of 1e6 s"),  # samples_ms, median_ms, ci_high_ms, ...
    ("_s", 1e6, "a time of 1e6 s"),  # setup_s, wall_s
    ("bytes", 1e15, "a size of 1e15 bytes"),  # bytes, peak_allocated_bytes, memory_bytes, ...
)
ANY_BOUND = (1e18, "a figure of 1e18")  # every other figure (flops, counts, clocks, GB/s): squared, still finite
FREE_FORM = ("params", "options", "fingerprint")  # the user's values and perfguard's settings, not figures
# When a run was made, recorded or calibrated: runs are ordered, capped and refused as dated in the
# future by these, so each must be a real instant. The shape perfguard writes (ISO 8601, a date alone
# in files of its first versions, "Z" or an offset), by pattern, not by datetime.fromisoformat: what
# that takes differs between Python 3.10 and 3.11, and a file must read the same on both.
DATE_FIELDS = ("created_at", "recorded_at", "measured_at")
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2}))?)?", re.ASCII)


def check_record(record: RunRecord, source: str, known_clean: bool = False) -> RunRecord:
    """`record` itself, or a BaselineError naming `source` and the first field that makes no sense.
    `known_clean`: the pass that built it (compiled.checked) found nothing to refuse."""
    if not known_clean and not clean(record):
        _refuse_first(_problems(record, "RunRecord"), source, REFUSED)
    return record


def check_baseline(baseline: BaselineFile, source: str, advice: str = REFUSED, known_clean: bool = False) -> BaselineFile:
    """As `check_record`, and every case must be a measurement a later run can be compared with.
    `advice` ends the message: what to do about it (the store, about to write, says it did not)."""
    if not known_clean and not clean(baseline):
        _refuse_first(_problems(baseline, "BaselineFile"), source, advice)
    for key, entry in baseline.cases.items():
        r, where = entry.result, f"BaselineFile.cases[{names.shown(key)}].result"
        judged = r.timings.get(r.judged_metric)
        if r.status != "ok" or judged is None:
            raise BaselineError(f"{source}: {where} is not a measured case (status {names.shown(r.status)}, "
                                f"{r.judged_metric} {'missing' if judged is None else 'present'}); {advice}")
        if not judged.samples_ms:
            raise BaselineError(f"{source}: {where}.timings['{r.judged_metric}'].samples_ms is empty; a baseline "
                                f"keeps its newest run's samples; {advice}")
    return baseline


def clean(obj: Any) -> bool:
    """Whether `_problems` finds nothing in dataclass `obj`, by a walk compiled once per class: no paths,
    no generator per field, a tuple's figures judged by its min, max and sum. False may be a false alarm
    (figures whose sum is past a float's range, a list where a tuple was typed): the checks then run
    `_problems`, which clears it or names the field, so what a refusal says is its walk's, as before."""
    return _cleaner(type(obj))(obj)


@functools.cache
def _cleaner(cls: type) -> Callable[[Any], bool]:
    fields = dataclasses.fields(cls)
    plan = [(f.name, _bound(f.name)[0], f.name in FREE_FORM, f.name.endswith("samples_ms")) for f in fields]
    dates = date_fields(cls)
    kind = issubclass(cls, KINDS)

    def ok(obj: Any) -> bool:
        for name, most, free, samples in plan:
            value = getattr(obj, name)
            if value is None or type(value) is str:  # most fields: nothing to check, no call
                continue
            if not _value_clean(value, most, free, samples):
                return False
        for name in dates:
            value = getattr(obj, name, None)
            if value is not None and not is_date(value):
                return False
        return not kind or next(_kind_problems(obj, ""), None) is None
    return ok


def date_fields(cls: type) -> tuple[str, ...]:
    """The DATE_FIELDS that `_dates` finds on an instance of dataclass `cls`."""
    return tuple(n for n in DATE_FIELDS if hasattr(cls, n) or n in {f.name for f in dataclasses.fields(cls)})


def _value_clean(value: Any, most: float, free: bool, samples: bool) -> bool:
    """Whether one field's value passes `_out_of_bounds`, the samples' sign and its dataclasses' checks."""
    t = type(value)
    if value is None or t is str or t is bool:
        return True
    if t is float or t is int:
        return free or -most <= value <= most  # nan fails both comparisons
    if t is ColumnRuns:
        return True  # checked as it was read (model/typed.py), and never changed since
    if t is tuple or t is dict:
        items = tuple(value.values()) if t is dict else value
        if not items:
            return True
        if dataclasses.is_dataclass(items[0]):
            return all(dataclasses.is_dataclass(i) and not isinstance(i, type) and clean(i) for i in items)
        if free or all(type(i) is str for i in items):
            return True
        try:
            total, low, high = sum(items), min(items), max(items)
        except TypeError:  # figures and words mixed: the walk judges each
            return False
        # nan or inf among them make the sum so; min and max alone would miss a nan.
        return total - total == 0 and -most <= low and high <= most and not (samples and t is tuple and low < 0)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return clean(value)
    return False


def _refuse_first(problems: Iterator[str], source: str, advice: str) -> None:
    first = next(problems, None)
    if first is not None:
        raise BaselineError(f"{source}: {first}; {advice}")


def _problems(obj: Any, where: str) -> Iterator[str]:
    """What is wrong in `obj` and every dataclass under it, in the file's order."""
    if not dataclasses.is_dataclass(obj):
        return
    yield from _own_problems(obj, where)
    for f in dataclasses.fields(obj):
        value, at = getattr(obj, f.name), f"{where}.{f.name}"
        if f.name.endswith("samples_ms") and isinstance(value, tuple) and value and min(value) < 0:
            yield f"{at} holds {min(value)!r}; a time is never negative"
        elif isinstance(value, (tuple, ColumnRuns)) and value and dataclasses.is_dataclass(value[0]):
            for i, item in enumerate(value):
                yield from _problems(item, f"{at}[{i}]")
        elif isinstance(value, dict) and value and dataclasses.is_dataclass(next(iter(value.values()))):
            for key, item in value.items():
                yield from _problems(item, f"{at}[{names.shown(key)}]")
        else:
            yield from _problems(value, at)


def _bound(name: str) -> tuple[float, str]:
    return next(((most, what) for suffix, most, what in BOUNDS if name.endswith(suffix)), ANY_BOUND)


def _out_of_bounds(obj: Any, where: str) -> Iterator[str]:
    """Every number of `obj`'s own fields (a tuple's or a mapping's numbers too) within its kind's bound."""
    for f in dataclasses.fields(obj):
        if f.name in FREE_FORM:
            continue
        value = getattr(obj, f.name)
        values = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else (value,)
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not numbers:
            continue
        most, what = _bound(f.name)
        worst = max(numbers, key=abs)
        if not abs(worst) <= most or not math.isfinite(worst):
            yield f"{where}.{f.name} holds {worst!r}, past any figure perfguard measures ({what})"


def is_date(text: object) -> bool:
    """Whether `text` is an instant as perfguard writes it (DATE): a real day and time, nothing around it."""
    match = DATE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return False
    year, month, day, hour, minute, second, off_h, off_m = (int(g) if g else 0 for g in match.groups())
    try:
        datetime.datetime(year, month, day, hour, minute, second)  # 2026-02-30, hour 24: not a day or time
    except ValueError:
        return False
    return off_h < 24 and off_m < 60


def _dates(obj: Any, where: str) -> Iterator[str]:
    for name in DATE_FIELDS:
        value = getattr(obj, name, None)
        if value is not None and not is_date(value):
            yield (f"{where}.{name} {names.shown(value)} is not a date and time as perfguard writes it "
                   "(ISO 8601, e.g. 2026-11-29T12:00:00+00:00)")


def _own_problems(obj: Any, where: str) -> Iterator[str]:
    yield from _out_of_bounds(obj, where)
    yield from _dates(obj, where)
    yield from _kind_problems(obj, where)


# The classes _kind_problems has rules for (`clean` asks it only of these).
KINDS = (DeviceInfo, CaseResult, Profile, RunTime, Memory, TimeSummary)
# The figures among those rules, as the least value each field takes ((least, strictly above it)), for
# model/generated.py's typed pass, which checks them inline (thousands of run times a file); the rules
# of slugs and links it leaves to _kind_problems, on the classes named here (one device, a result per
# case). tests/test_compiled_codec.py checks that _kind_problems refuses what each floor does.
FLOORS: dict[tuple[type, str], tuple[float, bool]] = {
    (RunTime, "median_ms"): (0, True),
    (RunTime, "n"): (1, False),
    **{(TimeSummary, f.name): (0, f.name == "median_ms") for f in dataclasses.fields(TimeSummary)
       if f.name.endswith("_ms") or f.name in ("n", "drift_pct")},
    (Memory, "footprint_bytes"): (0, False),
    (Memory, "retained_bytes_per_call"): (0, False),
    (CaseResult, "dropped_samples"): (0, False),
    (CaseResult, "enqueue_ms"): (0, False),
}
WORDED_RULES = (DeviceInfo, CaseResult, Profile)


def _kind_problems(obj: Any, where: str) -> Iterator[str]:
    """What the rules of `obj`'s own class find wrong in it."""
    if isinstance(obj, DeviceInfo) and not names.is_slug(obj.slug):
        yield f"{where}.slug {names.shown(obj.slug)} is not a device slug (lower-case letters and digits joined by dashes)"
    elif isinstance(obj, CaseResult):
        if obj.device and not names.is_slug(obj.device):
            yield f"{where}.device {names.shown(obj.device)} is not a device slug (lower-case letters and digits joined by dashes)"
        if obj.dropped_samples < 0 or (obj.enqueue_ms is not None and not obj.enqueue_ms >= 0):
            yield f"{where} holds a negative count or time (dropped_samples {obj.dropped_samples}, enqueue_ms {obj.enqueue_ms!r})"
    elif isinstance(obj, Profile) and obj.trace is not None and not names.is_report_link(obj.trace):
        yield f"{where}.trace {names.shown(obj.trace)} is not a relative path inside the report's folder"
    elif isinstance(obj, RunTime):
        if not obj.median_ms > 0:
            yield f"{where}.median_ms is {obj.median_ms!r}; a run's median is above 0"
        if obj.n is not None and obj.n < 1:
            yield f"{where}.n is {obj.n}; a run has samples"
    elif isinstance(obj, Memory):
        # A baseline's negative retained memory or footprint would make a real leak read "improved".
        for name in ("footprint_bytes", "retained_bytes_per_call"):
            value = getattr(obj, name)
            if value is not None and value < 0:
                yield f"{where}.{name} is {value!r}; a size is never negative"
    elif isinstance(obj, TimeSummary):
        if obj.median_ms <= 0:
            yield f"{where}.median_ms is {obj.median_ms!r}; a measured median is above 0"
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.name.endswith("_ms") and value is not None and value < 0:  # a baseline keeps no spread
                yield f"{where}.{f.name} is {value!r}; a time is never negative"
        if obj.n < 0:
            yield f"{where}.n is {obj.n}; a count is never negative"
        if obj.drift_pct is not None and obj.drift_pct < 0:
            yield f"{where}.drift_pct is {obj.drift_pct!r}; a spread is never negative"


# Values typed Any (a case's params, a run's options, a fingerprint) are kept as parsed. A few levels
# is all perfguard writes; bounding them keeps writing or showing them later (a baseline update, a
# report) from recursing past Python's limit on a hostile file. Every way into a file bounds them here.
MAX_FREE_FORM_DEPTH = 16
MAX_INT = 2**63  # every count and byte figure perfguard writes fits in 64 bits


def finite(value: Any, source: str, where: str) -> float:
    try:
        value = float(value)  # a huge JSON integer overflows here
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise BaselineError(f"{source}: {where} is not a finite number")
    return value


def free_form(value: Any, source: str, where: str) -> Any:
    """`value` as parsed, once its nesting is bounded and its numbers are ones JSON can write back."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_FREE_FORM_DEPTH:
                raise BaselineError(f"{source}: {where} is nested more than {MAX_FREE_FORM_DEPTH} levels deep; "
                                    "was the file edited by hand?")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, float):
            finite(item, source, where)
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= MAX_INT:
            raise BaselineError(f"{source}: {where} holds {names.shown(item)}, larger than any figure perfguard writes")
    return value
