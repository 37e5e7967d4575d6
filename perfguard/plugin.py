"""The pytest layer: options, collection of `@perf_case` objects, the `perf` fixture, and the run record.

Thin on purpose: measuring is `perfguard.measure.runner`, the record is `perfguard.model`, files and
tables are `perfguard.report`. Per-case results ride on the test reports (`user_properties`, plain
dicts) so that they reach the controller under pytest-xdist, which alone writes files.
"""

from __future__ import annotations

import dataclasses
import datetime
import subprocess
from pathlib import Path
from typing import Any

import pytest

import perfguard
from perfguard.case import CaseInstance, CaseSpec, build_spec
from perfguard.errors import ConfigError, PerfguardError
from perfguard.model import CaseResult, DeviceInfo, RunRecord, dumps, from_jsonable, to_jsonable

RESULT_KEY = "perfguard"
DEVICE_KEY = "perfguard_device"
RECORD_NAME = "perfguard.json"


@dataclasses.dataclass(frozen=True)
class Options:
    enabled: bool
    report_dir: Path
    budget_s: float

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        budget = _value(config, "perfguard-budget", 0.5)
        try:
            budget = float(budget)
            if not budget > 0:
                raise ValueError
        except ValueError:
            raise pytest.UsageError(f"--perfguard-budget must be a positive number of seconds, got {budget!r}") from None
        return cls(
            enabled=bool(_value(config, "perfguard", False)),
            report_dir=Path(config.rootpath, _value(config, "perfguard-report", "reports")),
            budget_s=budget,
        )


# Each option is also an ini key without the leading dashes (an underscore spelling is accepted too).
_OPTIONS = {
    "perfguard": ("bool", "measure perf cases (without it they run once, as functional tests)"),
    "perfguard-report": ("string", "folder for perfguard.json and the reports (default: reports)"),
    "perfguard-budget": ("string", "wall-time budget per case in seconds (default: 0.5)"),
}


def _value(config: pytest.Config, name: str, default: Any) -> Any:
    cli = config.getoption(name.replace("-", "_"))
    if cli is not None:
        return cli
    for key in (name, name.replace("-", "_")):
        value = config.getini(key)
        if value not in (None, "", []):
            return value
    return default


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfguard", "GPU performance regression testing")
    group.addoption("--perfguard", action="store_true", default=None, help=_OPTIONS["perfguard"][1])
    group.addoption("--perfguard-report", metavar="DIR", default=None, help=_OPTIONS["perfguard-report"][1])
    group.addoption("--perfguard-budget", metavar="SECONDS", default=None, help=_OPTIONS["perfguard-budget"][1])
    for name, (kind, text) in _OPTIONS.items():
        parser.addini(name, text, type=kind, default=None)
        parser.addini(name.replace("-", "_"), f"alias of {name}", type=kind, default=None)


class State:
    """Per-session state, kept in `config.stash`."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.options = Options.from_config(config)
        self.results: dict[str, CaseResult] = {}  # by case id, on whichever process sees the reports
        self.devices: dict[str, DeviceInfo] = {}
        self.owners: dict[str, str] = {}  # case id -> nodeid, to refuse duplicate ids
        self.written: list[Path] = []
        self.write_error: str | None = None
        self._kind: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Registered as a plugin: sees every report, the workers' too on the xdist controller.
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == RESULT_KEY:
                result = from_jsonable(CaseResult, value, "test report")
                self.results[result.id] = result
            elif key == DEVICE_KEY:
                device = from_jsonable(DeviceInfo, value, "test report")
                self.devices[device.uuid or device.slug] = device

    @property
    def kind(self) -> str:
        if self._kind is None:
            from perfguard.measure.device import default_kind

            self._kind = default_kind()
        return self._kind

    def device(self) -> DeviceInfo:
        from perfguard.measure.device import detect

        return detect(self.kind)

    def run(self, instance: CaseInstance, nodeid: str) -> tuple[CaseResult, DeviceInfo]:
        from perfguard.measure import runner
        from perfguard.measure.timers import SamplingRule

        device = self.device()
        if not self.options.enabled:
            return runner.smoke(instance, device, nodeid), device
        rule = SamplingRule(budget_s=instance.spec.budget_s or self.options.budget_s)
        return runner.measure(instance, device, rule, nodeid), device


STATE = pytest.StashKey[State]()


def pytest_configure(config: pytest.Config) -> None:
    state = State(config)
    config.stash[STATE] = state
    config.pluginmanager.register(state, "perfguard-state")
    config.addinivalue_line("markers", "perfguard: a perfguard performance case")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")


# --- collection ---------------------------------------------------------------------------------


class CaseFailure(Exception):
    """A case that errored: reported as its one-line reason, not as a perfguard traceback."""


class PerfCaseItem(pytest.Item):
    def __init__(self, *, instance: CaseInstance, **kwargs: Any):
        super().__init__(**kwargs)
        self.instance = instance
        self.add_marker("perfguard")

    def runtest(self) -> None:
        _run_and_attach(self, self.instance)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (CaseFailure, PerfguardError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        code = getattr(self.instance.spec.setup, "__code__", None)
        return self.path, (code.co_firstlineno - 1) if code else None, self.name


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[pytest.Item] | None:
    if not isinstance(obj, CaseSpec):
        return None
    state = collector.config.stash[STATE]
    try:
        instances = obj.instances(state.kind)
    except ConfigError as exc:
        raise collector.CollectError(str(exc)) from None
    items = []
    for instance in instances:
        item = PerfCaseItem.from_parent(collector, name=instance.id, instance=instance)
        if state.kind not in obj.device_kinds:
            item.add_marker(
                pytest.mark.skip(reason=f"{instance.id} runs on {', '.join(obj.device_kinds)} only, this is {state.kind}")
            )
        items.append(item)
    return items


def _run_and_attach(item: pytest.Item, instance: CaseInstance) -> CaseResult:
    state = item.config.stash[STATE]
    owner = state.owners.setdefault(instance.id, item.nodeid)
    if owner != item.nodeid:
        raise CaseFailure(f"{item.nodeid}: case id {instance.id!r} is already used by {owner}; give one of them name=...")
    result, device = state.run(instance, item.nodeid)
    item.user_properties.append((RESULT_KEY, to_jsonable(result)))
    item.user_properties.append((DEVICE_KEY, to_jsonable(device)))
    if result.status == "error":
        raise CaseFailure(result.error)
    return result


# --- the fixture ---------------------------------------------------------------------------------

_FIXTURE_OPTIONS = ("bytes", "flops", "cache", "mode", "threshold", "memory_threshold", "budget_s", "check")


class Perf:
    """The `perf` fixture: `perf(fn, bytes=..., flops=...)` measures `fn` like a perf case."""

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request
        self._calls = 0

    @property
    def device(self) -> str:
        """"cuda" or "cpu": where to put the tensors."""
        return self._request.config.stash[STATE].kind

    @property
    def enabled(self) -> bool:
        return self._request.config.stash[STATE].options.enabled

    def __call__(self, fn: Any, *, name: str | None = None, **options: Any) -> CaseResult:
        node = self._request.node
        bad = [k for k in options if k not in _FIXTURE_OPTIONS]
        if bad:
            raise ConfigError(
                f"{node.nodeid}: perf() got unknown keyword(s) {', '.join(bad)}; it takes name, {', '.join(_FIXTURE_OPTIONS)}"
            )
        if not callable(fn):
            raise ConfigError(f"{node.nodeid}: perf() needs the callable to time, got {type(fn).__name__}")
        self._calls += 1
        if self._calls > 1 and name is None:
            raise ConfigError(f"{node.nodeid}: perf() called more than once; give each call its own name=")
        spec = build_spec(lambda: fn, options, default_name=name or node.name)
        return _run_and_attach(node, CaseInstance(spec))


@pytest.fixture
def perf(request: pytest.FixtureRequest) -> Perf:
    return Perf(request)


# --- collecting results and writing the record -------------------------------------------------


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):  # an xdist worker: the controller writes the record
        return
    state = config.stash[STATE]
    if not state.options.enabled or not state.results:
        return
    record = RunRecord(
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        perfguard_version=perfguard.__version__,
        devices=tuple(state.devices.values()),
        results=tuple(sorted(state.results.values(), key=lambda r: r.id)),
        commit=_git_commit(config.rootpath),
        options={"budget_s": state.options.budget_s},
    )
    from perfguard.report.files import write_atomic

    path = state.options.report_dir / RECORD_NAME
    try:
        write_atomic(path, dumps(record))
        state.written.append(path)
    except PerfguardError as exc:
        state.write_error = str(exc)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or hasattr(config, "workerinput") or not state.options.enabled:
        return
    from perfguard.report.terminal import table

    if state.results:
        terminalreporter.section("perfguard")
        for line in table(sorted(state.results.values(), key=lambda r: r.id), state.devices.values()):
            terminalreporter.write_line(line)
    for path in state.written:
        terminalreporter.write_line(f"perfguard: wrote {path}")
    if state.write_error:
        terminalreporter.write_line(f"perfguard: {state.write_error}", red=True)


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
