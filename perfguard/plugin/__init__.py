"""The pytest layer: options, collection of `@perf_case` objects, the `perf` fixture, the run's end.

Thin on purpose: measuring is `perfguard.measure`, judging is `perfguard.analysis.verdict`, files are
`perfguard.store` and `perfguard.model`, tables are `perfguard.report`. Two objects hold a run's state:
the measurer (plugin/measurer.py), in each process that runs perf cases, made at its first perf case;
and the recorder (plugin/recorder.py), in the one process that writes the files (the xdist controller),
made only under --perfguard. A run without perf cases and without --perfguard makes neither: it parses
the options, keeps a copy of stderr, and imports nothing heavy (torch, scipy, jinja2).
"""

from __future__ import annotations

from typing import Any

import pytest

from perfguard.case import CaseSpec, InvalidCase
from perfguard.measure import watchdog
from perfguard.plugin import workers
from perfguard.plugin.items import Perf, collect
from perfguard.plugin.measurer import BEFORE_CASE
from perfguard.plugin.options import Options, add_options
from perfguard.plugin.recorder import RECORDER, Recorder
from perfguard.plugin.selection import Selection, keep_listed


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    options = Options.of(config)  # a bad option is a usage error in every run, as pytest's own are
    watchdog.keep_stderr()  # now, while pytest does not capture it: a case stuck past its timeout dumps there
    config.addinivalue_line("markers", "perfguard: a perfguard performance case")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    # A smoke run (no --perfguard) writes nothing, so it needs no recorder; an xdist worker leaves the
    # files to the controller, which hears of its cases through their test reports.
    if not options.enabled or hasattr(config, "workerinput"):
        return
    workers.refuse_shared_gpus(config, options)
    recorder = Recorder(config, cpu_workers=workers.cpu_workers(config, options))
    config.stash[RECORDER] = recorder
    config.stash[BEFORE_CASE] = recorder.mark_unfinished  # for this process's measurer, when there is no xdist
    config.pluginmanager.register(recorder, "perfguard-recorder")
    config.pluginmanager.register(Selection.of(config), "perfguard-selection")


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


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    keep_listed(config, items)  # --perfguard-cases


@pytest.fixture
def perf(request: pytest.FixtureRequest) -> Perf:
    """Measure a callable inside an ordinary test: `perf(fn, bytes=..., flops=...)`."""
    return Perf(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    # On the xdist controller, which waits while its workers start (seconds): load what the run's end
    # needs now, so that it is not paid after the last case.
    recorder = session.config.stash.get(RECORDER, None)
    if recorder is not None and session.config.pluginmanager.has_plugin("dsession"):
        recorder.prepare_finish()
    return (yield)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    recorder = session.config.stash.get(RECORDER, None)
    if recorder is None:  # no --perfguard, or an xdist worker: nothing to write here
        return
    # Ctrl-C (or pytest.exit): the cases that did not run are no evidence, so no baseline is written.
    recorder.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    if recorder.unwritten_baselines and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an update that wrote nothing must not pass for one


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    recorder = config.stash.get(RECORDER, None)
    if recorder is not None:
        recorder.summarize(terminalreporter)
