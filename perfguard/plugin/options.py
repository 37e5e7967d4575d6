"""perfguard's options as pytest takes them: each option of perfguard.options, declared to pytest as
`--perfguard-NAME` and as an ini key (plugin/register.py), parsed once into a frozen `Options`.

The table (names, parsers, defaults, help) is perfguard.options, which the console command reads too;
what is pytest's alone is here: where a value comes from, and the usage error. Loaded only by a run
that gave a perfguard option or collected a perf case (plugin/register.given).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from perfguard import defaults
from perfguard.options import COMPILE_TIMEOUT_S, TIMEOUT_BUDGETS, TRUE_WORDS, is_false, option

if TYPE_CHECKING:
    from perfguard.report.commands import Invocation


@dataclasses.dataclass(frozen=True)
class Options:
    enabled: bool
    update: bool
    baselines_dir: Path
    report_dir: Path
    threshold_pct: float
    budget_s: float
    profile: str = "none"  # which cases to re-run under the profiler: "none", "regressed" or "all"
    allow_shared_gpu: bool = False
    keep_runs: int = defaults.KEEP_RUNS  # runs a baseline keeps per case
    confirm: int = defaults.CONFIRM  # re-measurements of a case that looks regressed before it fails
    timeout_s: float | None = None  # --perfguard-timeout; None: TIMEOUT_BUDGETS times the case's budget; 0: never
    force_update: bool = False  # --perfguard-update=force: a run outside its case's series starts a new one
    fail_inconclusive: bool = False  # an inconclusive case fails
    counter_allowance: Mapping[str, str] = dataclasses.field(default_factory=dict)  # --perfguard-counter-allowance
    strict: bool = False  # --perfguard-strict (plugin/strict.py)
    max_threshold_pct: float | None = None  # the ceiling on thresholds; None: none (strict: the default threshold)
    # The ceiling on counter allowances ({kind or "*": "2" or "10%"}); None: none (strict: no growth at all).
    max_counter_allowance: Mapping[str, str] | None = None
    cases_file: Path | None = None  # --perfguard-cases: run only the node ids it lists
    # The folders as the user named them, for the commands a verdict prints (report/commands.py).
    baselines_arg: str = defaults.BASELINES_DIR
    report_arg: str = defaults.REPORT_DIR
    # PERFGUARD_HOST: the machine's name where runners get a new hostname each job (containers); None:
    # its hostname. The verdict adds the host-to-host offset of tiny kernels only for hosts a baseline
    # has not seen.
    host: str | None = None

    @property
    def invocation(self) -> Invocation:
        """The run's folders as the commands a verdict prints repeat them (report/commands.py)."""
        from perfguard.report.commands import Invocation  # here, not at load: the unused plugin stays light

        return Invocation(baselines=self.baselines_arg, report=self.report_arg)

    @classmethod
    def of(cls, config: pytest.Config) -> Options:
        """The run's options, parsed on first use and kept in the config's stash (xdist's controller
        asks for them in three hooks, the first before pytest_configure)."""
        if _STASHED not in config.stash:
            config.stash[_STASHED] = cls.from_config(config)
        return config.stash[_STASHED]

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        """The options, with the two environment variables that say where the run is, read here once and
        passed down as values: CI (the profile's default), PERFGUARD_HOST (`host`)."""
        _refuse_spaced_folders(config)
        update = _update(config)
        options = cls(
            enabled=bool(_value(config, "perfguard")) or bool(update),  # an update needs figures to write
            update=bool(update),
            force_update=update == "force",
            fail_inconclusive=_flag(config, "perfguard-fail-inconclusive"),
            baselines_dir=folder(config, "perfguard-baselines"),
            report_dir=folder(config, "perfguard-report"),
            threshold_pct=_parsed(config, "perfguard-threshold"),
            budget_s=_parsed(config, "perfguard-budget"),
            profile=_profile(config, ci=not is_false(os.environ.get("CI"))),
            allow_shared_gpu=bool(_value(config, "perfguard-allow-shared-gpu")),
            keep_runs=_parsed(config, "perfguard-baseline-runs"),
            confirm=_parsed(config, "perfguard-confirm"),
            timeout_s=_parsed(config, "perfguard-timeout"),
            counter_allowance=_parsed(config, "perfguard-counter-allowance") or {},
            strict=bool(_value(config, "perfguard-strict")),
            max_threshold_pct=_parsed(config, "perfguard-max-threshold"),
            max_counter_allowance=_parsed(config, "perfguard-max-counter-allowance"),
            cases_file=_cases_file(config),
            baselines_arg=str(_parsed(config, "perfguard-baselines")),
            report_arg=str(_parsed(config, "perfguard-report")),
            host=os.environ.get("PERFGUARD_HOST", "").strip() or None,
        )
        if options.enabled:  # before any case is measured, not after all of them (reports never fail a run)
            from perfguard.files import refuse_file_for_folder
            from perfguard.store.baselines import BASELINES_FOLDER

            refuse_file_for_folder(options.baselines_dir, BASELINES_FOLDER, pytest.UsageError)
        if options.update:  # an update that could only end refused is refused before it measures
            from perfguard.files import refuse_folder_links_out

            refuse_folder_links_out(options.baselines_dir, pytest.UsageError)
        return options

    @property
    def ceiling_pct(self) -> float | None:
        """The highest threshold allowed: the one given, else under strict the default threshold."""
        if self.max_threshold_pct is None and self.strict:
            return defaults.THRESHOLD_PCT
        return self.max_threshold_pct

    @property
    def counter_ceiling(self) -> Mapping[str, str] | None:
        """The most a counter allowance may allow: the one given, else under strict none at all (the default
        allowance: any growth fails), as the threshold's ceiling is the default threshold."""
        if self.max_counter_allowance is None and self.strict:
            return {"*": "0"}
        return self.max_counter_allowance

    def timeout_for(self, budget_s: float, compiles: bool = False) -> float | None:
        """Seconds after which a case of this budget is stopped; None: never. A case declared with
        `compile=` gets COMPILE_TIMEOUT_S more by default: its two compiles run before its samples."""
        if self.timeout_s is None:
            return TIMEOUT_BUDGETS * budget_s + (COMPILE_TIMEOUT_S if compiles else 0.0)
        return self.timeout_s or None


_STASHED = pytest.StashKey[Options]()


def source(config: pytest.Config, name: str) -> str:
    """Where the option's value came from: "the command line" (the arguments pytest was started with),
    "addopts" (the ini file's or PYTEST_ADDOPTS: parsed as options, not typed by whoever ran pytest),
    "ini NAME in FILE", or "the default"."""
    args = [str(a) for a in config.invocation_params.args]
    if any(a == f"--{name}" or a.startswith(f"--{name}=") for a in args):
        return "the command line"
    if config.getoption(name.replace("-", "_")) is not None:
        return "addopts"
    key = option(name).ini
    if config.getini(key) not in (None, "", []):
        return f"ini {key} in {config.inipath.name if config.inipath else 'the ini file'}"
    return "the default"


def _value(config: pytest.Config, name: str) -> Any:
    cli = config.getoption(name.replace("-", "_"))
    if cli is not None:
        return cli
    value = config.getini(option(name).ini)
    return value if value not in (None, "", []) else option(name).default


def _flag(config: pytest.Config, name: str) -> bool:
    return not is_false(_value(config, name))


def _update(config: pytest.Config) -> str | None:
    """None (no update), "true" or "force"; the ini value is any of those words."""
    raw = _value(config, "perfguard-update")
    if is_false(raw):
        return None
    word = str(raw).strip().lower()
    if word in TRUE_WORDS:
        return "true"
    if word in (w for w, _ in option("perfguard-update").words):
        return word
    raise pytest.UsageError(f"--perfguard-update (or ini perfguard_update) must be true, false or force, got {raw!r}")


def _parsed(config: pytest.Config, name: str) -> Any:
    """The option's value through its parser (perfguard.options; the console command uses it too); an
    option without a default that was not given stays None."""
    raw = _value(config, name)
    if raw is None:
        return None
    try:
        return option(name).parse(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"--{name} (or ini {option(name).ini}) {exc}") from None


def _profile(config: pytest.Config, ci: bool) -> str:
    if _value(config, "perfguard-profile") is None:
        # CI runs (GitHub Actions sets CI=true) profile what regressed, so the failing job carries
        # the operator table and trace a person needs; a laptop run does not pay for it unasked.
        return "regressed" if ci else "none"
    return _parsed(config, "perfguard-profile")


def folder(config: pytest.Config, name: str) -> Path:
    """A folder option's path, resolved as pytest resolves its own: given on the command line, from the
    folder pytest was started in; in the ini file, from the ini file's folder; in addopts, and the default,
    from the rootdir (pytest's project folder: where the ini file is, else the tests' and the start's common
    folder)."""
    return Path(folder_base(config, name)[0], _parsed(config, name))


def folder_base(config: pytest.Config, name: str) -> tuple[Path, str]:
    """The folder a folder option's relative path is taken from (`folder`), and its name in words."""
    given = source(config, name)
    if given == "the command line":
        return config.invocation_params.dir, "the folder pytest was started in"
    if given.startswith("ini ") and config.inipath is not None:
        return config.inipath.parent, "the ini file's folder"
    return config.rootpath, "pytest's rootdir"


def _cases_file(config: pytest.Config) -> Path | None:
    raw = _parsed(config, "perfguard-cases")
    return None if raw is None else Path(config.invocation_params.dir, raw)


def _refuse_spaced_folders(config: pytest.Config) -> None:
    # pytest picks the rootdir from the command line before it knows plugin options, so the DIR
    # of a spaced `--perfguard-baselines DIR` is taken for a test path: the rootdir (and with it
    # the baselines folder and the ini file) silently moves. Only the `=` form is safe.
    args = [str(a) for a in config.invocation_params.args]
    for name in ("perfguard-baselines", "perfguard-report"):
        if f"--{name}" in args:
            raise pytest.UsageError(f"write --{name}=DIR (with '='): pytest would take a separate DIR for a test path")
