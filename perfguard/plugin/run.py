"""A run that gave a perfguard option: its set-up at configure time, and its end.

Kept out of the plugin's module (perfguard/plugin/__init__.py), which every pytest run where perfguard
is installed loads: only a run that gave an option (plugin/register.given) imports this one, and only
such a run registers the hooks it needs (pytest registers each hook a plugin holds, in every run):
`--perfguard-cases` its deselection (plugin/selection.py); a run that records, its recorder, the
xdist workers' GPUs (plugin/workers.py) and the run's end, this module's hooks.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from perfguard.plugin.options import Options

if TYPE_CHECKING:
    from perfguard.plugin.recorder import Recorder

RECORDER_NAME = "perfguard-recorder"  # the recorder's name as a registered plugin (its hooks)


def configure(config: pytest.Config) -> None:
    """Refuse bad or weakening options; under --perfguard, outside an xdist worker, make and register the
    recorder and the hooks of a run that records."""
    options = Options.of(config)  # a bad option is a usage error in every run, as pytest's own are
    if options.cases_file is not None:  # in every process that collects: each xdist worker collects
        from perfguard.plugin import selection

        config.pluginmanager.register(selection, "perfguard-cases")
    if not hasattr(config, "workerinput") and (options.strict or options.max_threshold_pct is not None
                                                or options.max_counter_allowance is not None):
        from perfguard.plugin import strict  # the controller judges where the options came from

        strict.refuse_weakening(config, options)
    # A smoke run (no --perfguard) writes nothing, so it needs no recorder; an xdist worker leaves the
    # files to the controller, which hears of its cases through their test reports.
    if not options.enabled or hasattr(config, "workerinput"):
        return
    from perfguard.plugin import workers
    from perfguard.plugin.measurer import BEFORE_CASE
    from perfguard.plugin.recorder import RECORDER, Recorder
    from perfguard.plugin.selection import Selection

    workers.refuse_shared_gpus(config, options)
    on_cpu = workers.cpu_workers(config, options)
    workers.refuse_shared_cpu(on_cpu, options)
    recorder = Recorder(config, cpu_workers=on_cpu)
    config.stash[RECORDER] = recorder
    config.stash[BEFORE_CASE] = recorder.mark_unfinished  # for this process's measurer, when there is no xdist
    config.pluginmanager.register(recorder, RECORDER_NAME)
    config.pluginmanager.register(recorder.watch, "perfguard-watch")
    config.pluginmanager.register(Selection.of(config), "perfguard-selection")
    config.pluginmanager.register(workers, "perfguard-workers")
    config.pluginmanager.register(sys.modules[__name__], "perfguard-run")


def _recorder(config: pytest.Config) -> Recorder:
    from perfguard.plugin.recorder import RECORDER  # loaded by now: configure made the recorder

    return config.stash[RECORDER]


# The run's end: hooks of a run that records, registered with its recorder (configure, above).


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    # On the xdist controller, which waits while its workers start (seconds): load what the run's end
    # needs now, so that it is not paid after the last case.
    if session.config.pluginmanager.has_plugin("dsession"):
        _recorder(session.config).prepare_finish()
    return (yield)


# Innermost of the wrappers (inside the terminal reporter's, which prints the summary after it): around
# every plain hook, the conftests' included, so that their Ctrl-C and errors find the files written.
@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> object:
    return (yield from finishing(_recorder(session.config), session, exitstatus))


# After every other plugin's and conftest's (registered last, these would otherwise come first): perfguard's
# lines end the summary, and Ctrl-C is pytest's again once the others have unconfigured.
@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    recorder = _recorder(config)
    recorder.summarize(terminalreporter, recorder.session)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _recorder(config).ctrl_c.stop()  # Ctrl-C is pytest's again, even where no terminal summary ran


def finishing(recorder: Recorder, session: pytest.Session, exitstatus: int) -> Generator[None, Any, Any]:
    """The innermost wrapper of `pytest_sessionfinish`: Ctrl-C is held back from before the other plugins'
    and the conftests' hooks (plugin/interrupt.py), and the run's files are written after them, whatever
    they raised. A KeyboardInterrupt one of them raised is Ctrl-C at the run's end: one line, exit 2, not
    a traceback over a record left `unfinished`; any other error is pytest's to show, once the files
    are written."""
    recorder.ctrl_c.start()
    try:
        result = yield
    except KeyboardInterrupt:
        recorder.ctrl_c.press()
        result = None
    except BaseException:
        finish(recorder, session, exitstatus)
        raise
    finish(recorder, session, exitstatus)
    return result


def finish(recorder: Recorder, session: pytest.Session, exitstatus: int) -> None:
    """Write the run's files, and set the exit status from what they say."""
    # Ctrl-C (or pytest.exit): the cases that did not run are no evidence, so no baseline is written.
    recorder.finish(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
    recorder.session = session  # the terminal summary, which may still see a Ctrl-C, sets its exit status
    if recorder.ctrl_c.pressed:
        session.exitstatus = pytest.ExitCode.INTERRUPTED  # Ctrl-C after the last case (plugin/interrupt.py)
        return
    if (recorder.unwritten_baselines or recorder.strict_failures) and session.exitstatus == pytest.ExitCode.OK:
        # An update that wrote nothing must not pass for one; under strict, nor a gate that judged less than it should.
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
