"""The command-line options, each also an ini key, parsed once into a frozen `Options`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfguard import defaults

# A case's default timeout, in budgets: a case's setup, first call (compilation) and memory passes lie
# outside its budget, so the timeout allows for them many times over; only a call that does not end
# should meet it (60 s at the default budget).
TIMEOUT_BUDGETS = 120

# name: (ini type, default, help). Each option is also an ini key spelt without the leading
# dashes; the underscore spelling (perfguard_budget) is accepted too, as pytest users expect.
_OPTIONS: dict[str, tuple[str, Any, str]] = {
    "perfguard": ("bool", False, "measure perf cases (without it they run once, as functional tests)"),
    "perfguard-baselines": ("string", defaults.BASELINES_DIR,
                            f"folder of the per-GPU baseline files (default: {defaults.BASELINES_DIR})"),
    "perfguard-update": ("bool", False, "write this run's figures into this GPU's baseline file"),
    "perfguard-report": ("string", defaults.REPORT_DIR,
                         f"folder for perfguard.json and the reports (default: {defaults.REPORT_DIR})"),
    "perfguard-threshold": ("string", defaults.THRESHOLD_PCT,
                            f"the smallest latency change that matters, in percent (default: {defaults.THRESHOLD_PCT:g}); "
                            "a case's tolerance is this or what its run-to-run noise needs, whichever is larger"),
    "perfguard-budget": ("string", defaults.BUDGET_S, f"wall-time budget per case in seconds (default: {defaults.BUDGET_S:g})"),
    "perfguard-profile": ("string", None, "re-run cases under torch.profiler: none, regressed or all "
                          "(default: regressed where the CI environment variable is set, else none)"),
    "perfguard-baseline-runs": ("string", defaults.KEEP_RUNS,
                                f"runs kept per case in a baseline; each --perfguard-update adds one (default: {defaults.KEEP_RUNS})"),
    "perfguard-confirm": ("string", defaults.CONFIRM,
                          f"re-measurements that must agree before a slower case fails; 0: fail at once (default: {defaults.CONFIRM})"),
    "perfguard-timeout": ("string", None, "stop a case still running after SECONDS and fail it, the others run on "
                          f"(default: {TIMEOUT_BUDGETS} times the case's budget; 0: never)"),
    "perfguard-allow-shared-gpu": ("bool", False, "under pytest-xdist, allow more workers than GPUs (they disturb each other's timings)"),
}
PROFILE_CHOICES = ("none", "regressed", "all")
_FLAGS = ("perfguard", "perfguard-update", "perfguard-allow-shared-gpu")
_METAVARS = {"perfguard-baselines": "DIR", "perfguard-report": "DIR", "perfguard-threshold": "PCT", "perfguard-budget": "SECONDS",
             "perfguard-timeout": "SECONDS", "perfguard-baseline-runs": "N", "perfguard-confirm": "N",
             "perfguard-profile": "{" + ",".join(PROFILE_CHOICES) + "}"}


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

    @classmethod
    def of(cls, config: pytest.Config) -> Options:
        """The run's options, parsed on first use and kept in the config's stash (xdist's controller
        asks for them in three hooks, the first before pytest_configure)."""
        if _STASHED not in config.stash:
            config.stash[_STASHED] = cls.from_config(config)
        return config.stash[_STASHED]

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        root = config.rootpath
        _refuse_spaced_folders(config)
        update = bool(_value(config, "perfguard-update"))
        return cls(
            enabled=bool(_value(config, "perfguard")) or update,  # an update needs figures to write
            update=update,
            baselines_dir=Path(root, _value(config, "perfguard-baselines")),
            report_dir=Path(root, _value(config, "perfguard-report")),
            threshold_pct=_parsed(config, "perfguard-threshold", defaults.percent),
            budget_s=_parsed(config, "perfguard-budget", defaults.seconds),
            profile=_profile(config),
            allow_shared_gpu=bool(_value(config, "perfguard-allow-shared-gpu")),
            keep_runs=_parsed(config, "perfguard-baseline-runs", lambda raw: defaults.count(raw, 1)),
            confirm=_parsed(config, "perfguard-confirm", lambda raw: defaults.count(raw, 0)),
            timeout_s=_timeout(config),
        )

    def timeout_for(self, budget_s: float) -> float | None:
        """Seconds after which a case of this budget is stopped; None: never."""
        if self.timeout_s is None:
            return TIMEOUT_BUDGETS * budget_s
        return self.timeout_s or None


_STASHED = pytest.StashKey[Options]()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfguard", "GPU performance regression testing")
    for name, (kind, _default, text) in _OPTIONS.items():
        if name in _FLAGS:
            group.addoption(f"--{name}", action="store_true", default=None, help=text)
        else:
            group.addoption(f"--{name}", metavar=_METAVARS[name], default=None, help=text)
        parser.addini(name, text, type=kind, default=None)
        if "-" in name:  # `perfguard` has no other spelling
            parser.addini(name.replace("-", "_"), f"same as {name}: {text}", type=kind, default=None)


def _value(config: pytest.Config, name: str) -> Any:
    cli = config.getoption(name.replace("-", "_"))
    if cli is not None:
        return cli
    for key in (name, name.replace("-", "_")):
        value = config.getini(key)
        if value not in (None, "", []):
            return value
    return _OPTIONS[name][1]


def _parsed(config: pytest.Config, name: str, parse: Callable[[Any], Any]) -> Any:
    """The option's value through one of perfguard.defaults' parsers (the console command uses them too)."""
    raw = _value(config, name)
    try:
        return parse(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"--{name} (or ini {name}) {exc}") from None


def _timeout(config: pytest.Config) -> float | None:
    return None if _value(config, "perfguard-timeout") is None else _parsed(config, "perfguard-timeout", defaults.timeout)


def _profile(config: pytest.Config) -> str:
    raw = _value(config, "perfguard-profile")
    if raw is None:
        # CI runs (GitHub Actions sets CI=true) profile what regressed, so the failing job carries
        # the operator table and trace a person needs; a laptop run does not pay for it unasked.
        return "regressed" if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "none"
    value = str(raw).strip().lower()
    if value not in PROFILE_CHOICES:
        raise pytest.UsageError(
            f"--perfguard-profile (or ini perfguard-profile) must be one of {', '.join(PROFILE_CHOICES)}, got {raw!r}"
        )
    return value


def _refuse_spaced_folders(config: pytest.Config) -> None:
    # pytest picks the rootdir from the command line before it knows plugin options, so the DIR
    # of a spaced `--perfguard-baselines DIR` is taken for a test path: the rootdir (and with it
    # the baselines folder and the ini file) silently moves. Only the `=` form is safe.
    args = [str(a) for a in config.invocation_params.args]
    for name in ("perfguard-baselines", "perfguard-report"):
        if f"--{name}" in args:
            raise pytest.UsageError(f"write --{name}=DIR (with '='): pytest would take a separate DIR for a test path")
