"""perfguard's options, declared once: each one's name, parser, default and help.

The pytest plugin offers every option here as `--perfguard-NAME` and as an ini key (plugin/register.py);
the console command offers the ones it shares under a short spelling of its own (`--threshold`,
`--keep-runs`; cli/common.add_option). Both take a value through the option's one parser (from
perfguard.parsers), so a value one of them accepts the other accepts, and a value one refuses the
other refuses with the same words. A command may give its own default and help where it means the
option otherwise (calibrate's budget is per measurement, not per case), never its own parser.

Standard library only, like perfguard.defaults: the console command builds its help from it without
loading pytest, torch or numpy. Every pytest run where perfguard is installed loads it, so it holds
the parsers' names, not the parsers (benchmarks/unused_cost.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from perfguard import defaults

# A case's default timeout, in budgets: a case's setup, first call (compilation) and memory passes lie
# outside its budget, so the timeout allows for them many times over; only a call that does not end
# should meet it (60 s at the default budget).
TIMEOUT_BUDGETS = 120
# A compiled case's cold and warm compiles (measure/compiling.py): GPT-2 small's training step took
# 17-25 s cold on an H200; a larger model, minutes.
COMPILE_TIMEOUT_S = 600.0


def escaped(help: str) -> str:
    return help.replace("%", "%%")


class Option(NamedTuple):
    """One option. A flag (no `metavar`) takes no value and has no parser.

    A NamedTuple, not a frozen dataclass: every pytest run builds this class, and a dataclass writes
    and compiles its methods anew in each process (half a millisecond of every run, docs/development.md)."""

    name: str  # pytest's spelling without the dashes: "perfguard-threshold"
    help: str
    default: Any = None
    # The name of its parser in perfguard.parsers: raw text or ini value -> the value; ValueError says
    # what was expected. A name, not the function: every pytest run loads this table, few parse a value.
    parser: str | None = None
    metavar: str | None = None
    cli: str | None = None  # the console command's spelling without the dashes, where it takes the option too
    # A flag that may also be given as --NAME=WORD, for each (WORD, its help) here, and as the ini value WORD.
    words: tuple[tuple[str, str], ...] = ()

    @property
    def flag(self) -> bool:
        return self.metavar is None

    @property
    def argparse_help(self) -> str:
        """Its help as argparse takes it: argparse formats a help with %, so a percent sign is doubled."""
        return escaped(self.help)

    @property
    def ini(self) -> str:
        """Its ini key: the name with underscores (perfguard_threshold), as pytest's own keys are spelt; the
        name itself is an alias of it (plugin/register.py)."""
        return self.name.replace("-", "_")

    @property
    def parse(self) -> Callable[[Any], Any] | None:
        """The parser itself (perfguard.parsers loaded on first use); None for a flag."""
        if self.parser is None:
            return None
        from perfguard import parsers

        return getattr(parsers, self.parser)


# What a yes-or-no says in an ini file (`perfguard-strict = off`) and in the environment (`CI=false`):
# one of these words, in any case and with spaces around it; any other word is a yes.
FALSE_WORDS = ("", "0", "false", "no", "off")
TRUE_WORDS = ("1", "true", "yes", "on")


def is_false(raw: Any) -> bool:
    """Whether an option's value or an environment variable's says no: unset, or one of FALSE_WORDS."""
    return raw is None or raw is False or str(raw).strip().lower() in FALSE_WORDS


OPTIONS: tuple[Option, ...] = (
    Option("perfguard", "measure perf cases (without it they run once, as functional tests)"),
    Option("perfguard-baselines", f"folder of the per-GPU baseline files (default: {defaults.BASELINES_DIR})",
           defaults.BASELINES_DIR, "folder", "DIR", cli="baselines"),
    Option("perfguard-update", "add this run's figures to this GPU's baseline file; a case whose run lies outside "
           "its series (the code changed?) is not added, with a line saying so",
           words=(("force", "as --perfguard-update, and a case whose run lies outside its series starts a new "
                   "series with it (its earlier runs are dropped)"),)),
    Option("perfguard-report", f"folder for perfguard.json and the reports (default: {defaults.REPORT_DIR})",
           defaults.REPORT_DIR, "folder", "DIR", cli="report"),
    Option("perfguard-threshold",
           f"the smallest latency change that matters, in percent (default: {defaults.THRESHOLD_PCT:g}); "
           "a case's tolerance is this or what its run-to-run noise needs, whichever is larger",
           defaults.THRESHOLD_PCT, "percent", "PCT", cli="threshold"),
    Option("perfguard-counter-allowance",
           "how much a work counter (kernels, syncs, copies, ...) may grow per call before the case fails: "
           "a count (2), a percentage of the baseline's count (10%), or by kind "
           "(kernels=2,aten_ops=5%); "
           "a case's counters= overrides it per kind (default: 0, any growth fails)",
           None, "counter_allowance", "ALLOWANCE", cli="counter-allowance"),
    Option("perfguard-budget", f"wall-time budget per case in seconds (default: {defaults.BUDGET_S:g})",
           defaults.BUDGET_S, "seconds", "SECONDS", cli="budget"),
    Option("perfguard-profile", "re-run cases under torch.profiler: none, regressed or all "
           "(default: regressed where the CI environment variable is set, else none)",
           None, "profile", "{" + ",".join(defaults.PROFILE_CHOICES) + "}"),
    Option("perfguard-baseline-runs",
           f"runs kept per case in a baseline; each --perfguard-update adds one (default: {defaults.KEEP_RUNS})",
           defaults.KEEP_RUNS, "keep_runs", "N", cli="keep-runs"),
    Option("perfguard-confirm",
           f"re-measurements that must agree before a slower case fails; 0: fail at once (default: {defaults.CONFIRM})",
           defaults.CONFIRM, "confirm", "N"),
    Option("perfguard-timeout", "stop a case still running after SECONDS and fail it, the others run on "
           f"(default: {TIMEOUT_BUDGETS} times the case's budget; 0: never)", None, "timeout", "SECONDS"),
    Option("perfguard-fail-inconclusive", "fail a case whose verdict is inconclusive (its tolerance is wider than "
           "the threshold, so a change of the threshold's size would pass unseen)", cli="fail-inconclusive"),
    Option("perfguard-strict", "for CI: fail the run on what would let a regression pass unseen (no baseline file, "
           "a missing, new, skipped, xfail or deselected perf case), and refuse --perfguard-update, a counter "
           "allowance, and a threshold above --perfguard-max-threshold unless given on the command line"),
    Option("perfguard-max-threshold",
           "the highest threshold the run or a case's threshold= may use, in percent; give it on the command line "
           f"(default under --perfguard-strict: {defaults.THRESHOLD_PCT:g}, the default threshold; else none)",
           None, "percent", "PCT"),
    Option("perfguard-max-counter-allowance",
           "the most the run's --perfguard-counter-allowance or a case's counters= may allow a work counter to "
           "grow, in the same form; give it on the command line (default under --perfguard-strict: 0, no growth; "
           "else none)", None, "counter_allowance", "ALLOWANCE"),
    Option("perfguard-cases", "run only the tests whose node ids FILE lists, one a line, the others deselected "
           "(how perfguard ab re-runs its undecided cases and gives each GPU its share)", None, "file", "FILE"),
    Option("perfguard-allow-shared-gpu", "under pytest-xdist, allow more workers than GPUs (they disturb each other's timings)"),
)

_BY_NAME = {option.name: option for option in OPTIONS}


def option(name: str) -> Option:
    """The option of this (pytest) name."""
    return _BY_NAME[name]


def shared() -> tuple[Option, ...]:
    """The options the console command takes too."""
    return tuple(o for o in OPTIONS if o.cli)
