"""The pytest layer: options, collection of `@perf_case` objects, the `perf` fixture, the run's end.

Thin on purpose: measuring is `perfguard.measure`, judging is `perfguard.analysis.verdict`, files are
`perfguard.store` and `perfguard.model`, tables are `perfguard.report`. Two objects hold a run's state:
the measurer (plugin/measurer.py), in each process that runs perf cases, made at its first perf case;
and the recorder (plugin/recorder.py), in the one process that writes the files (the xdist controller),
made only under --perfguard. A run without perf cases and without --perfguard makes neither: it parses
the options, keeps a copy of stderr, and imports nothing heavy (torch, scipy, jinja2).

This module is loaded by every pytest run in an environment where perfguard is installed, most of
which never use it, so it imports only the option table at load time (hypothesis's plugin is the
model): the rest of perfguard is imported by the hook that first needs it. A run that neither asks
for --perfguard nor declares a perf case costs a few milliseconds of CPU (benchmarks/unused_cost.py,
docs/development.md).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

from perfguard.plugin.options import Options, add_options

if TYPE_CHECKING:
    from perfguard.plugin.items import Perf
    from perfguard.plugin.recorder import Recorder

RECORDER_NAME = "perfguard-recorder"  # the recorder's name as a registered plugin: found without importing it


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    options = Options.of(config)  # a bad option is a usage error in every run, as pytest's own are
    if not hasattr(config, "workerinput") and (options.strict or options.max_threshold_pct is not None):
        from perfguard.plugin import strict  # the controller judges where the options came from

        strict.refuse_weakening(config, options)
    from perfguard.measure import watchdog  # torch-free and small

    watchdog.keep_stderr()  # now, while pytest does not capture it: a case stuck past its timeout dumps there
    config.addinivalue_line("markers", "perfguard: a perfguard performance case")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    # A smoke run (no --perfguard) writes nothing, so it needs no recorder; an xdist worker leaves the
    # files to the controller, which hears of its cases through their test reports.
    if not options.enabled or hasattr(config, "workerinput"):
        return
    from perfguard.plugin import workers
    from perfguard.plugin.measurer import BEFORE_CASE
    from perfguard.plugin.recorder import RECORDER, Recorder
    from perfguard.plugin.selection import Selection

    workers.refuse_shared_gpus(config, options)
    recorder = Recorder(config, cpu_workers=workers.cpu_workers(config, options))
    config.stash[RECORDER] = recorder
    config.stash[BEFORE_CASE] = recorder.mark_unfinished  # for this process's measurer, when there is no xdist
    config.pluginmanager.register(recorder, RECORDER_NAME)
    config.pluginmanager.register(recorder.watch, "perfguard-watch")
    config.pluginmanager.register(Selection.of(config), "perfguard-selection")


def _recorder(config: pytest.Config) -> Recorder | None:
    """This run's recorder; None without --perfguard, and on an xdist worker."""
    return config.pluginmanager.get_plugin(RECORDER_NAME)


# pytest-xdist's hooks (perfguard/plugin/workers.py); optional, so that perfguard runs without xdist.


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    from perfguard.plugin import workers

    return workers.auto_count(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Any) -> None:
    from perfguard.plugin import workers

    workers.pin(config, specs)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
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
    if Options.of(config).cases_file is not None:  # --perfguard-cases FILE
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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    recorder = _recorder(session.config)
    if recorder is None:  # no --perfguard, or an xdist worker: nothing to write here
        return
    # Ctrl-C (or pytest.exit): the cases that did not run are no evidence, so no baseline is written.
    recorder.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    recorder.session = session  # the terminal summary, which may still see a Ctrl-C, sets its exit status
    if recorder.ctrl_c.pressed:
        session.exitstatus = pytest.ExitCode.INTERRUPTED  # Ctrl-C after the last case (plugin/interrupt.py)
        return
    if (recorder.unwritten_baselines or recorder.strict_failures) and session.exitstatus == pytest.ExitCode.OK:
        # An update that wrote nothing must not pass for one; under strict, nor a gate that judged less than it should.
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    recorder = _recorder(config)
    if recorder is not None:
        recorder.summarize(terminalreporter, recorder.session)


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = _recorder(config)
    if recorder is not None:
        recorder.ctrl_c.stop()  # Ctrl-C is pytest's again, even where no terminal summary ran
