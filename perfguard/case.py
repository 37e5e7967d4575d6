"""`@perf_case`: the declaration of a measured operator, its parameter grid and its validation.

A case is declared once and expanded per device into instances, one per point of its parameter grid.
Everything a user can get wrong in a declaration is caught here, at import (that is, collection)
time, with one line that names the case, where it is declared and the keyword. The decorator does not
raise it: it returns an InvalidCase holding it, which the plugin collects as that case's error, so
that one bad declaration never stops the rest of its file from running.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from perfguard import parsers
from perfguard.errors import ConfigError
from perfguard import inert

CACHE_MODES = ("cold", "hot")
TIMING_MODES = ("eager", "graph")
DEVICE_KINDS = ("cuda", "cpu")

# Every keyword @perf_case takes; anything else is a typo we want to name at collection time.
OPTIONS = (
    "name",
    "params",
    "bytes",
    "flops",
    "cache",
    "mode",
    "threshold",
    "memory_threshold",
    "counters",
    "budget_s",
    "memory_breakdown",
    "device_kinds",
    "check",
    "compile",
)
# What `compile=` may pass on to torch.compile (True: its defaults). fullgraph=True makes a graph break
# an error, which is the user's choice; perfguard counts breaks either way.
COMPILE_OPTIONS = ("backend", "mode", "fullgraph", "dynamic", "options")


@dataclasses.dataclass(frozen=True, eq=False)
class CaseSpec:
    """A declared case: the setup function and how to measure what it returns."""

    name: str
    setup: Callable[..., Any]
    params: Mapping[str, tuple[Any, ...]] | Callable[[str], Mapping[str, Any]] = dataclasses.field(
        default_factory=dict
    )
    bytes: float | Callable[..., float] | None = None
    flops: float | Callable[..., float] | None = None
    cache: str = "cold"
    mode: str = "eager"
    threshold: float | None = None
    memory_threshold: float | None = None
    # How much each work counter may grow per call without failing (parsers.counter_allowance's form).
    counters: Mapping[str, str] = dataclasses.field(default_factory=dict)
    budget_s: float | None = None
    memory_breakdown: bool = False
    device_kinds: tuple[str, ...] = DEVICE_KINDS
    check: Callable[..., Any] | None = None
    # torch.compile's keywords for the callable the setup returns ({}: its defaults; None: not compiled by
    # perfguard, though a callable the user compiled is measured as compiled all the same: measure/compiling.py).
    compile: Mapping[str, Any] | None = None
    location: str = ""
    named: bool = False  # given name=, rather than named after its function (or test)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The decorated function stays callable, so a user can still call the setup by hand.
        return self.setup(*args, **kwargs)

    def grid(self, device: str) -> dict[str, tuple[Any, ...]]:
        """The parameter grid on `device` (a grid may be a callable of the device kind)."""
        if callable(self.params):
            try:
                grid = self.params(device)
            except Exception as exc:  # noqa: BLE001 - any failure is the user's grid callable
                raise ConfigError(f"{label(self.name, self.location)}: params({device!r}) raised {exc!r}") from None
            return _check_grid(label(self.name, self.location), self.name, grid, self.setup)
        return dict(self.params)

    def instances(self, device: str) -> list[CaseInstance]:
        grid = self.grid(device)
        names = list(grid)
        return [
            CaseInstance(self, tuple(zip(names, values)))
            for values in itertools.product(*(grid[n] for n in names))
        ]


@dataclasses.dataclass(frozen=True, eq=False)
class InvalidCase:
    """A declaration @perf_case refused: the plugin collects it as one case that errors with `error`
    (one line, naming the case and where it is declared). Used any other way, it raises that error."""

    name: str
    setup: Callable[..., Any]
    error: str
    location: str = ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError(self.error)

    def grid(self, device: str) -> dict[str, tuple[Any, ...]]:
        raise ConfigError(self.error)

    def instances(self, device: str) -> list[CaseInstance]:
        raise ConfigError(self.error)


@dataclasses.dataclass(frozen=True, eq=False)
class CaseInstance:
    """One point of a case's grid: what is measured and reported under one id."""

    spec: CaseSpec
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def id(self) -> str:
        return case_id(self.spec.name, self.params)

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    def params_for_record(self) -> dict[str, Any]:
        """Parameters as JSON values: numbers stay numbers (scaling fits need them), the rest text."""
        return {k: v if v is None or isinstance(v, (bool, int, float, str)) else format_value(v) for k, v in self.params}

    def setup_kwargs(self, device: str) -> dict[str, Any]:
        return call_kwargs(self.spec.setup, {**self.kwargs, "device": device}, f"perf_case {self.spec.name!r}")

    def bytes_moved(self, device: str) -> float | None:
        return self._model("bytes", self.spec.bytes, device)

    def flop_count(self, device: str) -> float | None:
        return self._model("flops", self.spec.flops, device)

    def _model(self, what: str, value: Any, device: str) -> float | None:
        if value is None:
            return None
        if callable(value):
            where = f"perf_case {self.id!r}: {what}"
            try:
                value = value(**call_kwargs(value, {**self.kwargs, "device": device}, where))
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - a broken model is a declaration mistake
                raise ConfigError(f"{where}(...) raised {exc!r}; fix the {what} model") from None
        return _nonnegative(f"perf_case {self.id!r}: {what}", value)


def case_id(name: str, params: Sequence[tuple[str, Any]]) -> str:
    """The id of a case's grid point. Printable, whatever the name and values hold, and unlike any other
    id (inert.py: a space at an end, a form NFC would change): the id is printed by pytest, not only by
    perfguard. Two points can still print alike (1024 and "1024"; "a\\x00" and "a" + NUL, escaped;
    a value holding "-b="): _one_id_each refuses such a grid."""
    if not params:
        return inert.line(inert.printable(name))
    return inert.line(inert.printable(f"{name}[{'-'.join(f'{k}={format_value(v)}' for k, v in params)}]"))


def format_value(value: Any) -> str:
    """A short, readable form of a parameter value for test ids (torch.float16 -> float16)."""
    if isinstance(value, (tuple, list)):
        return "x".join(format_value(v) for v in value)
    text = str(value)
    return text[len("torch.") :] if text.startswith("torch.") else text


def call_kwargs(fn: Callable[..., Any], available: Mapping[str, Any], where: str, skip: int = 0) -> dict[str, Any]:
    """The subset of `available` that `fn` declares; a required parameter we cannot give is an error.

    `skip` leading parameters are the caller's to pass positionally (a check's output argument).
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return dict(available)
    params = list(sig.parameters.values())[skip:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return dict(available)
    kwargs = {}
    for p in params:
        name = p.name
        if p.kind is p.VAR_POSITIONAL:
            continue
        if name in available:
            kwargs[name] = available[name]
        elif p.default is p.empty:
            known = ", ".join(sorted(available)) or "none"
            raise ConfigError(
                f"{where}: needs argument {name!r}, which is neither a parameter nor 'device' "
                f"(available: {known}); add it to params or give it a default"
            )
    return kwargs


def perf_case(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Declare a performance case. The setup function returns the callable that is timed.

    Used bare (`@perf_case`) or with keywords (`@perf_case(params=..., bytes=...)`); the keywords are
    listed in `OPTIONS` and described in the README. A declaration mistake gives an InvalidCase.
    """

    def decorate(setup: Callable[..., Any]) -> CaseSpec | InvalidCase:
        # The function's own name labels errors until `name=` is known to be a usable one.
        name = getattr(setup, "__name__", None)
        location = _location(setup)
        try:
            return build_spec(setup, options, default_name=name, location=location)
        except ConfigError as exc:
            given = options.get("name")
            usable = given if isinstance(given, str) and given else name
            return InvalidCase(name=usable or "perf_case", setup=setup, error=str(exc), location=location)

    if fn is not None:
        if not callable(fn):
            raise ConfigError(f"perf_case takes keywords only (got a positional {fn!r})")
        return decorate(fn)
    return decorate


def build_spec(
    setup: Callable[..., Any], options: Mapping[str, Any], *, default_name: str | None, location: str = ""
) -> CaseSpec:
    """Validate `options` and build a CaseSpec; shared by the decorator and the `perf` fixture."""
    where = label(default_name, location)
    check_keywords(where, options, OPTIONS)
    if not callable(setup):
        raise ConfigError(f"{where}: decorate a function, not {setup!r}")
    name = options.get("name")
    if name is None:
        name = default_name
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: name must be a non-empty string")
    where = label(name, location)
    opts = dict(options)
    opts["name"] = name
    params = opts.get("params", {})
    if not callable(params):
        opts["params"] = _check_grid(where, name, params, setup)
        # The models and the check get the parameters they name: ask their signatures now, so a
        # misspelt parameter fails at collection, not when the case runs.
        probe = {**{k: v[0] for k, v in opts["params"].items()}, "device": "cpu"}
        for key, skip in (("bytes", 0), ("flops", 0), ("check", 1)):
            if callable(opts.get(key)):
                call_kwargs(opts[key], probe, f"{where}: {key}", skip=skip)
    for key in ("bytes", "flops"):
        value = opts.get(key)
        if value is not None and not callable(value):
            _nonnegative(f"{where}: {key}", value)
    _choice(where, "cache", opts.get("cache", "cold"), CACHE_MODES)
    _choice(where, "mode", opts.get("mode", "eager"), TIMING_MODES)
    for key in ("threshold", "memory_threshold", "budget_s"):
        value = opts.get(key)
        if value is not None and not (_is_number(value) and value > 0):
            raise ConfigError(f"{where}: {key} must be a positive number, got {value!r}")
    if opts.get("counters") is not None:
        if not isinstance(opts["counters"], (dict, str)):
            raise ConfigError(f"{where}: counters must be a mapping such as {{'kernels': 2}} or a string such as '10%', "
                              f"got {opts['counters']!r}")
        try:
            opts["counters"] = parsers.counter_allowance(opts["counters"])
        except ValueError as exc:
            raise ConfigError(f"{where}: counters {exc}") from None
    else:
        opts.pop("counters", None)
    kinds = opts.get("device_kinds", DEVICE_KINDS)
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    for kind in kinds:
        _choice(where, "device_kinds", kind, DEVICE_KINDS)
    opts["device_kinds"] = kinds
    if opts.get("check") is not None and not callable(opts["check"]):
        raise ConfigError(f"{where}: check must be callable, got {opts['check']!r}")
    opts["memory_breakdown"] = bool(opts.get("memory_breakdown", False))
    opts["compile"] = _compile_options(where, opts.get("compile"), opts.get("mode", "eager"))
    return CaseSpec(setup=setup, location=location, named=options.get("name") is not None, **opts)


def _compile_options(where: str, value: Any, mode: str) -> dict[str, Any] | None:
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: compile must be True or a mapping of torch.compile's keywords "
                          f"({', '.join(COMPILE_OPTIONS)}), got {value!r}")
    check_keywords(f"{where}: compile", value, COMPILE_OPTIONS)
    if mode == "graph":
        raise ConfigError(f"{where}: mode='graph' captures the call in a CUDA graph, which a compiled call does "
                          "its own way: use compile={'mode': 'reduce-overhead'} instead")
    return {**value}


def rename_advice(first: CaseSpec, second: CaseSpec) -> str:
    """What to do about a second declaration (`second`) of the case id of `first`: it depends on which
    of them chose the name. Said after "is already used by the case at FIRST"."""
    if first.named and second.named:
        return f"both give name={first.name!r}; change one of them"
    if first.named:
        return "give this one a name= of its own"
    if second.named:
        return "give that one a name= of its own, or this one another name="
    return "give one of them name=..."


def label(name: str | None, location: str = "") -> str:
    """How messages name a case: "perf_case 'softmax' (tests/test_ops.py:12)"."""
    return f"perf_case {name!r}" + (f" ({location})" if location else "")


def check_keywords(where: str, given: Iterable[str], known: Sequence[str]) -> None:
    """A ConfigError for the first keyword of `given` not in `known`, with the closest known one."""
    for key in given:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"{where}: unknown keyword {key!r}; {hint}known keywords: {', '.join(known)}")


def _one_id_each(where: str, name: str, grid: Mapping[str, tuple[Any, ...]]) -> None:
    """Every point of the grid names its own test: two of one id would be two tests that pytest runs and
    one record of the two, a baseline entry written by both."""
    keys = list(grid)
    seen: dict[str, tuple[int, ...]] = {}
    for at in itertools.product(*(range(len(grid[k])) for k in keys)):
        point = case_id(name, [(k, grid[k][i]) for k, i in zip(keys, at, strict=True)])
        other = seen.setdefault(point, at)
        if other == at:
            continue
        differ = [k for k, i, j in zip(keys, at, other, strict=True) if i != j]
        if len(differ) == 1:
            key = differ[0]
            a, b = grid[key][other[keys.index(key)]], grid[key][at[keys.index(key)]]
            if format_value(a) == format_value(b):  # 1024 and 1024, or 1024 and "1024"
                raise ConfigError(f"{where}: params[{key!r}] gives {format_value(a)} more than once ({list(grid[key])!r}); "
                                  "each value names a test, so give each once")
            raise ConfigError(f"{where}: params[{key!r}] gives {a!r} and {b!r}, which name one test, {point}; "
                              "each value names a test, so give values that print differently")
        first = {k: grid[k][i] for k, i in zip(keys, other, strict=True)}
        second = {k: grid[k][i] for k, i in zip(keys, at, strict=True)}
        raise ConfigError(f"{where}: params {first!r} and {second!r} name one test, {point}; each point of the grid "
                          "names a test, so give values that print differently (a value holding '-' and '=' reads as two)")


def _check_grid(where: str, name: str, grid: Any, setup: Callable[..., Any]) -> dict[str, tuple[Any, ...]]:
    if not isinstance(grid, Mapping):
        raise ConfigError(f"{where}: params must be a dict of name -> list of values, got {type(grid).__name__}")
    checked: dict[str, tuple[Any, ...]] = {}
    for key, values in grid.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise ConfigError(f"{where}: parameter name {key!r} is not a Python identifier")
        if key == "device":
            raise ConfigError(f"{where}: 'device' is injected by perfguard; remove it from params")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise ConfigError(f"{where}: params[{key!r}] must be a list of values, e.g. [{values!r}]")
        values = tuple(values)
        if not values:
            raise ConfigError(f"{where}: params[{key!r}] is empty; give at least one value")
        checked[key] = values
    _one_id_each(where, name, checked)
    # Ask the setup's signature now, so a missing or misspelt parameter fails at collection.
    probe = {k: v[0] for k, v in checked.items()}
    call_kwargs(setup, {**probe, "device": "cpu"}, where)
    try:
        sig = inspect.signature(setup)
        if not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            unknown = [k for k in checked if k not in sig.parameters]
            if unknown:
                raise ConfigError(f"{where}: setup does not take parameter(s) {', '.join(unknown)}; add them to its signature")
    except (TypeError, ValueError):
        pass
    return checked


def _choice(where: str, key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{where}: {key} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _nonnegative(where: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise ConfigError(f"{where} must be a finite number >= 0, got {value!r}")
    return number


def _location(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    path = code.co_filename
    try:
        path = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        pass
    return f"{path}:{code.co_firstlineno}"
