"""The pytest layer: options, collection of `@perf_case` objects, the `perf` fixture.

Thin on purpose: measuring is `perfguard.measure`, judging is `perfguard.analysis.verdict`, files are
`perfguard.store` and `perfguard.model`, tables are `perfguard.report`. Two objects hold a run's state:
the measurer (plugin/measurer.py), in each process that runs perf cases, made at its first perf case;
and the recorder (plugin/recorder.py), in the one process that writes the files (the xdist controller),
made only under --perfguard. A run without perf cases and without --perfguard makes neither: it declares
the options (parsing them only where one was given), keeps a copy of stderr, and imports nothing heavy
(torch, scipy, jinja2).

This module is loaded by every pytest run in an environment where perfguard is installed, most of
which never use it, so it holds only the hooks such a run calls and imports only the option table at
load time (hypothesis's plugin is the model). A run that gave an option registers the rest where it
sets up (plugin/run.py): the run's end, the xdist workers' GPUs, `--perfguard-cases`. pytest loads a
plugin's modules through its assertion rewriter, which parses each one again wherever it cannot keep
its cache, and registers each hook it finds: so every line here and every hook costs every run. A run
that neither asks for --perfguard nor declares a perf case costs a few milliseconds of CPU
(benchmarks/unused_cost.py, docs/development.md).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import pytest

from perfguard.plugin.register import add_options, given

if TYPE_CHECKING:
    from perfguard.plugin.items import Perf

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

    run.configure(config)


def _keep_stderr() -> None:
    global stderr_copy
    if stderr_copy is None:
        try:
            stderr_copy = os.dup(sys.stderr.fileno())
        except (AttributeError, OSError, ValueError):  # no real stderr (closed, or a StringIO)
            pass


# pytest-xdist asks for its worker count before any plugin's pytest_configure: this hook is here, where
# every run has it; perfguard's other xdist hooks are registered by a run that measures (plugin/run.py).
# Optional, so that perfguard runs without xdist. Without a perfguard option given, a run does not measure,
# so its workers are not counted.


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if not given(config):
        return None
    from perfguard.plugin import workers

    return workers.auto_count(config)


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


@pytest.fixture
def perf(request: pytest.FixtureRequest) -> Perf:
    """Measure a callable inside an ordinary test: `perf(fn, bytes=..., flops=...)`."""
    from perfguard.plugin.items import Perf

    return Perf(request)
