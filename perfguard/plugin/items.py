"""How perf cases become pytest items, and the `perf` fixture."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from perfguard import inert
from perfguard.case import (OPTIONS, CaseInstance, CaseSpec, InvalidCase, build_spec, check_keywords, label,
                            rename_advice)
from perfguard.errors import ConfigError, PerfguardError
from perfguard.model import CaseResult, to_jsonable
from perfguard.plugin.measurer import CaseFailure, Measurer
from perfguard.plugin.properties import RESULT_KEY

# Case id -> the case that took it: a second case of the same id errors, naming where the first is declared.
DECLARED = pytest.StashKey[dict[str, CaseSpec]]()


class PerfCaseItem(pytest.Item):
    """One grid point of a `@perf_case`."""

    def __init__(self, *, instance: CaseInstance, **kwargs: Any):
        super().__init__(**kwargs)
        self.instance = instance
        self.add_marker("perfguard")

    def runtest(self) -> None:
        Measurer.of(self.config).run(self, self.instance)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (CaseFailure, PerfguardError)):
            return inert.lines(excinfo.value)  # it quotes ids, messages and files: data
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        code = getattr(self.instance.spec.setup, "__code__", None)
        return self.path, (code.co_firstlineno - 1) if code else None, self.name


class InvalidCaseItem(pytest.Item):
    """A case whose declaration is wrong: an error of this case alone, in one line, at its setup."""

    def __init__(self, *, error: str, declared_at: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.error, self.declared_at = error, declared_at  # "file.py:12"
        self.add_marker("perfguard")

    def setup(self) -> None:
        pytest.fail(inert.lines(self.error), pytrace=False)  # an error in setup, reported as the message alone

    def runtest(self) -> None:  # never reached: setup fails
        pytest.fail(inert.lines(self.error), pytrace=False)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        line = self.declared_at.rpartition(":")[2]
        return self.path, int(line) - 1 if line.isdigit() else None, self.name


def unwrap(obj: object) -> tuple[CaseSpec | InvalidCase, list[pytest.MarkDecorator]] | None:
    """The perf case in a module attribute, and the marks written above its `@perf_case`; None if it is none.

    pytest stores a mark on a function; a case is not one, so a mark above `@perf_case` leaves a mark
    holding the case as its last argument (and marks above that, the same around it). Unwrapped here,
    `@pytest.mark.skip` above `@perf_case` skips the case as it does below it."""
    marks = []
    while isinstance(obj, pytest.MarkDecorator) and obj.args:
        marks.append(getattr(pytest.mark, obj.name).with_args(*obj.args[:-1], **obj.kwargs))
        obj = obj.args[-1]
    return (obj, marks) if isinstance(obj, (CaseSpec, InvalidCase)) else None


def _marks_below(spec: CaseSpec | InvalidCase) -> list[pytest.MarkDecorator]:
    """The marks written below `@perf_case`: pytest stored them on the setup function."""
    stored = getattr(spec.setup, "pytestmark", [])
    return [getattr(pytest.mark, m.name).with_args(*m.args, **m.kwargs) for m in (stored if isinstance(stored, list) else [stored])]


def collect(collector: pytest.Collector, spec: CaseSpec | InvalidCase, marks: list[pytest.MarkDecorator] = ()) -> list[pytest.Item]:
    items = _collect(collector, spec)
    for item in items:
        for mark in [*marks, *_marks_below(spec)]:
            item.add_marker(mark)
    return items


def _collect(collector: pytest.Collector, spec: CaseSpec | InvalidCase) -> list[pytest.Item]:
    measurer = Measurer.of(collector.config)  # made here, at the run's first perf case
    try:
        instances = spec.instances(measurer.kind)
    except ConfigError as exc:  # a bad declaration, or a grid callable that fails on this device
        return [InvalidCaseItem.from_parent(collector, name=spec.name, error=str(exc), declared_at=spec.location)]
    declared = collector.config.stash.setdefault(DECLARED, {})
    items = []
    for instance in instances:
        first = declared.setdefault(instance.id, spec)
        if first is not spec:  # two declarations of one id: the second is an error naming the first
            error = (f"{label(instance.id, spec.location)}: case id {instance.id!r} is already used by the case at "
                     f"{first.location}; {rename_advice(first, spec)}")
            items.append(InvalidCaseItem.from_parent(collector, name=instance.id, error=error, declared_at=spec.location))
            continue
        item = PerfCaseItem.from_parent(collector, name=instance.id, instance=instance)
        if measurer.kind not in spec.device_kinds:
            item.add_marker(pytest.mark.skip(reason=_elsewhere(instance.id, spec, measurer.kind)))
        items.append(item)
    return items


# The fixture measures one callable per call; it takes every decorator keyword but the grid (and the
# name, which is its own argument).
FIXTURE_OPTIONS = tuple(k for k in OPTIONS if k not in ("name", "params"))


class Perf:
    """The `perf` fixture: `perf(fn, bytes=..., flops=...)` measures `fn` like a perf case."""

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request
        self._calls = 0

    @property
    def _measurer(self) -> Measurer:
        return Measurer.of(self._request.config)

    @property
    def device(self) -> str:
        """"cuda" or "cpu": where to put the tensors."""
        return self._measurer.kind

    @property
    def enabled(self) -> bool:
        """True under --perfguard; False when the test is a smoke run."""
        return self._measurer.options.enabled

    def __call__(self, fn: Any, *, name: str | None = None, **options: Any) -> Any:
        node = self._request.node
        caller = sys._getframe(1)  # where the test calls perf(): the line its one-line errors name
        location = f"{_relative(caller.f_code.co_filename)}:{caller.f_lineno}"
        try:
            spec = self._spec(fn, name, options, f"perf() in {node.nodeid} ({location})", location)
            if self.device not in spec.device_kinds:
                reason, skipped = _elsewhere(spec.name, spec, self.device), True
            else:
                return self._measurer.run(node, CaseInstance(spec))
        except (ConfigError, CaseFailure) as exc:  # a misuse of the fixture, or the case's failure: one line,
            reason, skipped = str(exc), False  # not perfguard's source (and failed outside this block, so without a chain)
            if all(key != RESULT_KEY for key, _ in node.user_properties):  # a misuse: an error result of its own
                error = CaseResult(id=name or node.name, name=name or node.name, status="error", nodeid=node.nodeid, error=reason)
                node.user_properties.append((RESULT_KEY, to_jsonable(error)))
        if skipped:
            pytest.skip(inert.lines(reason))
        pytest.fail(inert.lines(reason), pytrace=False)

    def _spec(self, fn: Any, name: str | None, options: dict[str, Any], where: str, location: str) -> CaseSpec:
        check_keywords(where, options, ("name", *FIXTURE_OPTIONS))
        if not callable(fn):
            raise ConfigError(f"{where}: needs the callable to time, got {type(fn).__name__}")
        self._calls += 1
        if self._calls > 1 and name is None:
            raise ConfigError(f"{where}: called more than once; give each call its own name=")
        return build_spec(lambda: fn, options, default_name=name or self._request.node.name, location=location)


def _elsewhere(case_id: str, spec: CaseSpec, kind: str) -> str:
    """Why a case declared for other devices (`device_kinds`) is skipped here."""
    return f"{case_id} runs on {', '.join(spec.device_kinds)} only, this is {kind}"


def _relative(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
