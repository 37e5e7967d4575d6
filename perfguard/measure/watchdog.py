"""A case's timeout: a hung Python call is interrupted; a call Python cannot interrupt ends the process.

On POSIX, in the main thread, a SIGALRM timer raises `CaseTimeout` at the case's next Python bytecode:
a Python loop, a `time.sleep`, a lock or queue wait all stop there, and the case fails alone. A call
stuck inside C code that never returns to Python (a hung CUDA kernel waited on by `synchronize`, a
deadlock in an extension) runs no Python, so no handler can run: for that, faulthandler's own
thread dumps every thread's stack to stderr and ends the process GRACE_S after the timeout. Under
pytest-xdist the worker is replaced and the other cases run on; without it the run ends, and the
record on disk says the run did not finish (perfguard/report: `mark_unfinished`).

Torch-free. The plugin copies stderr at configure time, before pytest captures it, and its measurer
hands that copy here (`keep_stderr`).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

# How long past its timeout a case stuck where Python cannot interrupt it has before the process ends.
GRACE_S = 30.0

_stderr_fd: int | None = None


class CaseTimeout(BaseException):
    """Raised in the main thread when a case runs past its timeout.

    A BaseException, as KeyboardInterrupt is: neither the case's own `except Exception` nor
    perfguard's error handling may take it for an error of the case and carry on.
    """


def keep_stderr(copy: int | None = None) -> None:
    """Keep a copy of the process's stderr, for the stack dump of a case that has to be ended: during a
    test pytest captures file descriptor 2 into a file that dies with the process. Once per process.
    `copy`: one taken already, before pytest captured stderr (the plugin's, taken at configure time so
    that this module loads only with the first perf case); None: copy it now."""
    global _stderr_fd
    if _stderr_fd is None:
        if copy is not None:
            _stderr_fd = copy
            return
        try:
            _stderr_fd = os.dup(sys.stderr.fileno())
        except (AttributeError, OSError, ValueError):  # no real stderr (closed, or a StringIO)
            pass


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[Callable[[], None]]:
    """Raise CaseTimeout in the body after `seconds` (None: never) until the function it yields is
    called; end the process GRACE_S later if the body is stuck where no Python runs. The hard stop lasts
    to the end of the block: the case's clean-up may wait on the same hung kernel."""
    armed = [bool(seconds)]

    def stop_alarm() -> None:
        armed[0] = False  # first: an alarm that fires from here on is ignored, not raised in the clean-up
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if armed[0]:
            raise CaseTimeout()

    alarm = bool(seconds) and _can_alarm()
    hard = bool(seconds) and _stderr_fd is not None
    if hard:
        faulthandler.dump_traceback_later(seconds + GRACE_S, exit=True, file=_stderr_fd)
    if alarm:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield stop_alarm
    finally:
        stop_alarm()
        if alarm:
            signal.signal(signal.SIGALRM, previous)
        if hard:
            faulthandler.cancel_dump_traceback_later()


def _can_alarm() -> bool:
    # Signals reach the main thread only; Windows has no SIGALRM. Another SIGALRM handler (pytest-timeout's
    # signal method) owns the timer: it is left to it, and only the hard stop stays ours.
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.SIG_IGN, None)
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
