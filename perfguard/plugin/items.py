"""How perf cases become pytest items, and the `perf` fixture."""

from __future__ import annotations

from typing import Any

import pytest

from perfguard.case import OPTIONS, CaseInstance, CaseSpec, build_spec
from perfguard.errors import ConfigError, PerfguardError
from perfguard.plugin.session import CaseFailure, State

STATE = pytest.StashKey[State]()


class PerfCaseItem(pytest.Item):
    """One grid point of a `@perf_case`."""

    def __init__(self, *, instance: CaseInstance, **kwargs: Any):
        super().__init__(**kwargs)
        self.instance = instance
        self.add_marker("perfguard")

    def runtest(self) -> None:
        self.config.stash[STATE].run(self, self.instance)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (CaseFailure, PerfguardError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        code = getattr(self.instance.spec.setup, "__code__", None)
        return self.path, (code.co_firstlineno - 1) if code else None, self.name


def collect(collector: pytest.Collector, spec: CaseSpec) -> list[pytest.Item]:
    state = collector.config.stash[STATE]
    try:
        instances = spec.instances(state.kind)
    except ConfigError as exc:
        raise collector.CollectError(str(exc)) from None
    items = []
    for instance in instances:
        item = PerfCaseItem.from_parent(collector, name=instance.id, instance=instance)
        if state.kind not in spec.device_kinds:
            item.add_marker(pytest.mark.skip(reason=_elsewhere(instance.id, spec, state.kind)))
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
    def _state(self) -> State:
        return self._request.config.stash[STATE]

    @property
    def device(self) -> str:
        """"cuda" or "cpu": where to put the tensors."""
        return self._state.kind

    @property
    def enabled(self) -> bool:
        """True under --perfguard; False when the test is a smoke run."""
        return self._state.options.enabled

    def __call__(self, fn: Any, *, name: str | None = None, **options: Any) -> Any:
        node = self._request.node
        bad = [k for k in options if k not in FIXTURE_OPTIONS]
        if bad:
            raise ConfigError(
                f"{node.nodeid}: perf() got unknown keyword(s) {', '.join(bad)}; it takes name, {', '.join(FIXTURE_OPTIONS)}"
            )
        if not callable(fn):
            raise ConfigError(f"{node.nodeid}: perf() needs the callable to time, got {type(fn).__name__}")
        self._calls += 1
        if self._calls > 1 and name is None:
            raise ConfigError(f"{node.nodeid}: perf() called more than once; give each call its own name=")
        spec = build_spec(lambda: fn, options, default_name=name or node.name)
        if self.device not in spec.device_kinds:
            pytest.skip(_elsewhere(spec.name, spec, self.device))
        try:
            return self._state.run(node, CaseInstance(spec))
        except CaseFailure as exc:  # the reason alone, as for a @perf_case item: no perfguard traceback
            reason = str(exc)
        pytest.fail(reason, pytrace=False)


def _elsewhere(case_id: str, spec: CaseSpec, kind: str) -> str:
    """Why a case declared for other devices (`device_kinds`) is skipped here."""
    return f"{case_id} runs on {', '.join(spec.device_kinds)} only, this is {kind}"
