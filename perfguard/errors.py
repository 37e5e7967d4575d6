"""The exceptions perfguard raises.

    PerfguardError            anything perfguard reports as its own, never a crash
    ├── ConfigError           a mistake in a case declaration, an option or an argument
    ├── BaselineError         a baseline or run-record file that cannot be used as it is
    ├── MeasurementError      a case that could not be measured (setup raised, OOM, bad timings)
    └── ReportError           a report that could not be rendered (a broken or missing template)

Every message is one line that names the case or file and says what to do.
"""

from __future__ import annotations


class PerfguardError(Exception):
    """Base class of every error perfguard raises on purpose."""


class ConfigError(PerfguardError):
    """A case declaration, command-line option or CLI argument is wrong."""


class BaselineError(PerfguardError):
    """A baseline or run record is corrupt, of an unknown schema, or for another device."""


class MeasurementError(PerfguardError):
    """A case could not be measured; the other cases run on."""


class ReportError(PerfguardError):
    """A report could not be rendered; the run record it was rendered from is unaffected."""


def first_line(text: str, default: str = "") -> str:
    """The first line of a message (every perfguard message is one line), or `default` when it is empty."""
    text = text.strip()
    return text.splitlines()[0] if text else default
