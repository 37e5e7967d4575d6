"""The pytest layer: options, collection of `@perf_case` objects, the `perf` fixture, the run's end.

Thin on purpose: measuring is `perfguard.measure`, judging is `perfguard.analysis.verdict`, files are
`perfguard.store` and `perfguard.model`, tables are `perfguard.report`. Nothing heavy (torch, scipy)
is imported until a perf case is collected.
"""

from __future__ import annotations

from typing import Any

import pytest

from perfguard.case import CaseSpec, InvalidCase
from perfguard.measure import watchdog
from perfguard.plugin import workers
from perfguard.plugin.items import STATE, Perf, collect
from perfguard.plugin.options import add_options
from perfguard.plugin.selection import Selection
from perfguard.plugin.session import State


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    state = State(config)
    config.stash[STATE] = state
    config.pluginmanager.register(state, "perfguard-state")
    watchdog.keep_stderr()  # now, while pytest does not capture it: a case stuck past its timeout dumps there
    config.pluginmanager.register(Selection.of(config), "perfguard-selection")
    config.addinivalue_line("markers", "perfguard: a perfguard performance case")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    if not hasattr(config, "workerinput"):
        workers.refuse_shared_gpus(config, state.options)
        state.cpu_workers = workers.cpu_workers(config, state.options)


# pytest-xdist's hooks (perfguard/plugin/workers.py); optional, so that perfguard runs without xdist.


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    return workers.auto_count(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Any) -> None:
    workers.pin(config, specs)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    workers.tell(node)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[pytest.Item] | None:
    return collect(collector, obj) if isinstance(obj, (CaseSpec, InvalidCase)) else None


@pytest.fixture
def perf(request: pytest.FixtureRequest) -> Perf:
    """Measure a callable inside an ordinary test: `perf(fn, bytes=..., flops=...)`."""
    return Perf(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    # On the xdist controller, which waits while its workers start (seconds): load what the run's end
    # needs now, so that it is not paid after the last case.
    if session.config.pluginmanager.has_plugin("dsession"):
        session.config.stash[STATE].prepare_finish()
    return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):  # xdist workers leave the files to the controller
        return
    state = session.config.stash[STATE]
    # Ctrl-C (or pytest.exit): the cases that did not run are no evidence, so no baseline is written.
    state.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    if state.unwritten_baselines and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an update that wrote nothing must not pass for one


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or hasattr(config, "workerinput") or not state.options.enabled:
        return
    if not (state.results or state.problems):
        return
    from perfguard.report.terminal import summary

    terminalreporter.section("perfguard")
    for line, style in summary(state.results.values(), state.devices.values(), state.record, state.fits):
        terminalreporter.write_line(line, **style)
    left_out = Selection.of(config).left_out
    if left_out:
        terminalreporter.write_line(f"perfguard: {len(left_out)} baseline case(s) not selected in this run "
                                    "(-k, -m, --deselect or the test paths): not compared")
    if state.options.update and state.record and state.record.verdicts and state.record.status == "complete":
        terminalreporter.write_line("perfguard: the verdicts above are against the previous baseline; this run's figures replace it")
    for path in state.written:
        terminalreporter.write_line(f"perfguard: wrote {path}")
    for problem in state.problems:
        terminalreporter.write_line(f"perfguard: {problem}", red=True)
