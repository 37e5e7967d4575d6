"""perfguard's options declared to pytest, and whether a run gave any of them.

What every pytest run in an environment where perfguard is installed loads, so it is kept to this:
the table (perfguard.options) and two functions. Parsing the values into `Options` (plugin/options.py)
waits until a run gave an option or collected a perf case: a run that gave none has every default,
and a default is valid, so there is nothing to refuse.
"""

from __future__ import annotations

import pytest

from perfguard.options import OPTIONS, escaped

_GIVEN = pytest.StashKey[bool]()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfguard", "GPU performance regression testing")
    for opt in OPTIONS:
        # A flag that takes words is a string in the ini file ("true", "force").
        kind = "bool" if opt.flag and not opt.words else "string"
        if opt.words:
            group.addoption(f"--{opt.name}", action="store_const", const="true", default=None, help=opt.argparse_help)
            for word, help in opt.words:
                # argparse takes an option string holding "=" whole before it splits at the "=", so
                # `--perfguard-update=force` is a flag of its own, and `--perfguard-update suites/`
                # still leaves suites/ a test path (a value that is optional would swallow it).
                group.addoption(f"--{opt.name}={word}", action="store_const", const=word,
                                dest=opt.name.replace("-", "_"), help=escaped(help))
        elif opt.flag:
            group.addoption(f"--{opt.name}", action="store_true", default=None, help=opt.argparse_help)
        else:
            group.addoption(f"--{opt.name}", metavar=opt.metavar, default=None, help=opt.argparse_help)
        # Each option is also an ini key, spelt with underscores (perfguard_budget) as pytest's own are,
        # and with dashes as on the command line (perfguard-budget): one key, listed once in --help.
        parser.addini(opt.ini, opt.help, type=kind, default=None, aliases=(opt.name,) if opt.name != opt.ini else ())


def given(config: pytest.Config) -> bool:
    """Whether the run set any perfguard option, on the command line, in addopts or in the ini file
    (where plugin/options.py looks for a value); kept once asked."""
    if _GIVEN not in config.stash:
        config.stash[_GIVEN] = any(
            config.getoption(opt.name.replace("-", "_")) is not None
            or config.getini(opt.ini) not in (None, "", [])
            for opt in OPTIONS)
    return config.stash[_GIVEN]
