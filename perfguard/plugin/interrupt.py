"""Ctrl-C at the run's end: noted, not raised, so that the baseline is either written whole or untouched,
and the run says which.

pytest turns a Ctrl-C during the cases into status `interrupted` itself. After the last case it would
raise KeyboardInterrupt wherever the end of the run happened to be: between the record and the
baseline, inside a baseline update, in the terminal summary; the traceback then hid whether the
baseline had been written, and the record said `complete`. From `pytest_sessionfinish` to the end of
the terminal summary SIGINT only sets `pressed`: the recorder writes no baseline once it is set, lets
an update that has begun finish (it takes a lock and a rename, under a second), marks the record
`interrupted`, prints one line saying what became of the baseline, and the run exits 2.

The hold begins before the first `pytest_sessionfinish` hook (plugin/run.finishing, the innermost
wrapper of that hook): a conftest's own hook runs just before perfguard's finish, and a Ctrl-C there
(a SIGINT, or a KeyboardInterrupt it raises) is the same key pressed at the run's end.
"""

from __future__ import annotations

import signal
import threading
from typing import Any


class Deferred:
    """SIGINT held back while active; `pressed` says whether it came."""

    def __init__(self) -> None:
        self.pressed = False
        self._previous: Any = None
        self._active = False

    def start(self) -> None:
        # Signal handlers belong to the main thread (a run inside another thread keeps pytest's own way).
        if self._active or threading.current_thread() is not threading.main_thread():
            return
        self._previous = signal.signal(signal.SIGINT, self._note)
        self._active = True

    def stop(self) -> None:
        if self._active:
            signal.signal(signal.SIGINT, self._previous)
            self._active = False

    def press(self) -> None:
        """Ctrl-C noted without its signal: a KeyboardInterrupt that a hook raised itself."""
        self.pressed = True

    def _note(self, signum: int, frame: Any) -> None:
        self.pressed = True
