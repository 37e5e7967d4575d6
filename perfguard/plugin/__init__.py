"""The pytest layer: options, collection of `@perf_case` objects, the `perf` fixture, the run's end.

Thin on purpose: measuring is `perfguard.measure`, judging is `perfguard.analysis.verdict`, files are
`perfguard.store` and `perfguard.model`, tables are `perfguard.report`. Two objects hold a run's state:
the measurer (plugin/measurer.py), in each process that runs perf cases, made at its first perf case;
and the recorder (plugin/recorder.py), in the one process that writes the files (the xdist controller),
made only under --perfguard. A run without perf cases and without --perfguard makes neither: it declares
the options (parsing them only where one was given), keeps a copy of stderr, and imports nothing heavy
(torch, scipy, jinja2).

This module is loaded by every pytest run in an environment where perfguard is installed, most of
which never use it, so it imports only the option table at load time (hypothesis's plugin is the
model): the rest of perfguard is imported by the hook that first needs it (plugin/run.py, where an
option was given). pytest loads a plugin's modules through its assertion rewriter, which parses
each one again wherever it cannot keep its cache, so every module imported here costs every run. A run
that neither asks for --perfguard nor declares a perf case costs a few milliseconds of CPU
(benchmarks/unused_cost.py, docs/development.md).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import pytest

from perfguard.plugin.register import add_options, given

if TYPE_CHECKING:
    from perfguard.plugin.items import Perf
    from perfguard.plugin.recorder import Recorder

RECORDER_NAME = "perfguard-recorder"  # the recorder's name as a registered plugin: found without importing it

# A copy of this process's stderr, taken at the first configure, while pytest does not capture it: a case
# stuck past its timeout dumps its stack there (measure/watchdog.py, which the measurer hands it to).
stderr_copy: int | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    _keep_stderr()
    config.addinivalue_line("markers", "perfguard: a perfguard performance case")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    if not given(config):  # every option at its default: nothing to refuse, no recorder
        return
    from perfguard.plugin import run

    run.configure(config, RECORDER_NAME)


def _keep_stderr() -> None:
    global stderr_copy
    if stderr_copy is None:
        try:
            stderr_copy = os.dup(sys.stderr.fileno())
        except (AttributeError, OSError, ValueError):  # no real stderr (closed, or a StringIO)
            pass


def _recorder(config: pytest.Config) -> Recorder | None:
    """This run's recorder; None without --perfguard, and on an xdist worker."""
    return config.pluginmanager.get_plugin(RECORDER_NAME)


# pytest-xdist's hooks (perfguard/plugin/workers.py); optional, so that perfguard runs without xdist.
# Without a perfguard option given, a run does not measure, so its workers are neither counted nor pinned.


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if not given(config):
        return None
    from perfguard.plugin import workers

    return workers.auto_count(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Any) -> None:
    if not given(config):
        return
    from perfguard.plugin import workers

    workers.pin(config, specs)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    if not given(node.config):
        return
    from perfguard.plugin import workers

    workers.tell(node)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[pytest.Item] | None:
    # Called for every name in every test module. A perf case is an object of perfguard.case, so in a
    # process that never imported that module (no test file declares a case) nothing can be one. A mark
    # written above `@perf_case` leaves a mark holding the case (plugin/items.unwrap).
    case = sys.modules.get("perfguard.case")
    if case is None or not isinstance(obj, (case.CaseSpec, case.InvalidCase, pytest.MarkDecorator)):
        return None
    from perfguard.plugin.items import collect, unwrap

    found = unwrap(obj)
    return collect(collector, *found) if found else None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if given(config):  # perhaps --perfguard-cases FILE
        from perfguard.plugin.selection import keep_listed

        keep_listed(config, items)


@pytest.fixture
def perf(request: pytest.FixtureRequest) -> Perf:
    """Measure a callable inside an ordinary test: `perf(fn, bytes=..., flops=...)`."""
    from perfguard.plugin.items import Perf

    return Perf(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    # On the xdist controller, which waits while its workers start (seconds): load what the run's end
    # needs now, so that it is not paid after the last case.
    recorder = _recorder(session.config)
    if recorder is not None and session.config.pluginmanager.has_plugin("dsession"):
        recorder.prepare_finish()
    return (yield)


# Innermost of the wrappers (inside the terminal reporter's, which prints the summary after it): around
# every plain hook, the conftests' included, so that their Ctrl-C and errors find the files written.
@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> object:
    recorder = _recorder(session.config)
    if recorder is None:  # no --perfguard, or an xdist worker: nothing to write here
        return (yield)
    from perfguard.plugin import run

    return (yield from run.finishing(recorder, session, exitstatus))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    recorder = _recorder(config)
    if recorder is not None:
        recorder.summarize(terminalreporter, recorder.session)


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = _recorder(config)
    if recorder is not None:
        recorder.ctrl_c.stop()  # Ctrl-C is pytest's again, even where no terminal summary ran
