"""The `perfguard` console command: stored records and baselines, calibration, A/B runs, asv history.

    perfguard --version
    perfguard show RUN.json
    perfguard check RUN.json
    perfguard baseline show [--device SLUG] [--baselines DIR]
    perfguard baseline accept RUN.json [RUN.json ...] [--case ID ...] [--restart] [--keep-runs N] [--baselines DIR]
    perfguard baseline merge FILE.json [FILE.json ...] [--keep-runs N] [--baselines DIR]
    perfguard pr accept RUN.json --case ID [--metric M] [--reason TEXT] [--baselines DIR]
    perfguard compare BASE.json HEAD.json [--threshold PCT] [--memory-threshold PCT] [--baselines DIR]
    perfguard report RUN.json [RUN.json ...] -o FILE.html [--markdown FILE.md]
    perfguard migrate FILE.json [FILE.json ...]
    perfguard calibrate [--baselines DIR] [--budget SECONDS]
    perfguard ab --base REF [--rounds N] [--max-rounds M] [--budget SECONDS] [-n GPUS] [--fail-inconclusive] [--strict]
                 [--threshold PCT] [--counter-allowance ALLOWANCE] [--baselines DIR] [--report DIR] [-- PYTEST ARGS]
    perfguard asv-export RUN.json [RUN.json ...] --to DIR [--repo DIR] [--branch NAME] [--commit REV]
    perfguard history DIR [--threshold PCT] [--repo DIR]

`calibrate` and `ab` are the commands that measure: `calibrate` imports torch when it runs, `ab` runs
pytest in a worktree of REF and in the working tree by turns. The others work on stored files.

Exit status: 0 done, 1 `compare` or `ab` found a regression, `history` a drift or `check` a run that did not finish, 2 a usage or file
error (one line on stderr, no traceback), 141 (128 + SIGPIPE, as a shell reports a killed writer) when
the reader of its output went away (`perfguard show RUN.json | head -1`), without a traceback. It imports neither pytest nor torch, so it is quick to start
and runs anywhere.
"""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import sys
from collections.abc import Sequence

from perfguard import __version__, inert
from perfguard.cli import accepting, history, measuring, migrating, records
from perfguard.cli.common import read_record, say
from perfguard.errors import PerfguardError

__all__ = ["main", "read_record"]


BROKEN_PIPE = 141
# The command reads whole files at once: a baseline of 5,360 cases of 18 runs is over a million objects,
# none in a cycle, which the cyclic collector's default thresholds (700, 10, 10) walked again and again
# as they were made: a third of `perfguard baseline show`'s 1.8 s (benchmarks/scaling.py). Fewer, later
# collections while a command runs, as mypy sets them for the same reason.
COLLECTOR_THRESHOLDS = (100_000, 30, 30)
# Commands renamed, and what they are now. The old spelling runs nothing (one way to do each thing): it
# gets one line with the command as it is now spelt, the user's arguments kept. `perfguard accept`
# wrote the pull request's acceptance file, and beside `perfguard baseline accept` its name did not
# say which file: now `pr accept` and `baseline accept` do.
RENAMED = {"accept": ("pr accept", "it writes the acceptance file a pull request commits; `perfguard baseline accept` "
                                   "writes the baseline")}


def main(argv: Sequence[str] | None = None) -> int:
    thresholds = gc.get_threshold()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    try:
        try:
            # Every line the command prints through perfguard.inert: ids, names, dates and messages come
            # from records, which are untrusted; none may move the cursor or command the CI runner.
            with inert.output():
                return _main(list(sys.argv[1:] if argv is None else argv))
        finally:
            sys.stdout.flush()  # here, not at exit, where a closed pipe prints a traceback of its own
            gc.set_threshold(*thresholds)
    except BrokenPipeError:
        # The reader stopped reading (`| head -1`): what is left to print goes nowhere, quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE


def _main(argv: list[str]) -> int:
    if argv[:1] and argv[0] in RENAMED:
        now, what = RENAMED[argv[0]]
        say(f"perfguard: `perfguard {argv[0]}` is now `perfguard {now}` ({what}): "
            f"`{shlex.join(['perfguard', *now.split(), *argv[1:]])}`", file=sys.stderr)
        return 2
    pytest_args: list[str] = []
    if argv[:1] == ["ab"] and "--" in argv:  # everything after `--` is pytest's, untouched by argparse
        argv, pytest_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if argv[:1] != ["ab"]:
            parser.parse_args(argv)  # argparse's own message (and exit 2) for what it does not know
        parser.exit(2, f"perfguard ab: pytest's arguments go after `--`, e.g. perfguard ab --base origin/main -- suites/ "
                       f"-k add (got {' '.join(extra)} before it)\n")
    args.pytest_args = pytest_args
    try:
        return args.command(args)
    except PerfguardError as exc:
        say(f"perfguard: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfguard", description="Work on perfguard run records and baselines.")
    # Before the required COMMAND: argparse's version action prints and exits without one.
    parser.add_argument("--version", action="version", version=f"perfguard {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module in (records, accepting, migrating, measuring, history):
        module.add_commands(commands)
    return parser
