"""One option set serves the plugin and the console command: the same defaults, and the same values refused."""

from __future__ import annotations

import pytest

from perfguard import defaults
from perfguard.cli import main
from perfguard.plugin.options import Options

REFUSED_PERCENTAGES = ["0", "-1", "nan", "inf", "five", ""]
ACCEPTED_PERCENTAGES = ["0.5", "1", "300"]


def plugin_threshold(pytester: pytest.Pytester, value: str) -> float:
    return Options.from_config(pytester.parseconfig(f"--perfguard-threshold={value}")).threshold_pct


def cli_threshold(tmp_path, value: str) -> int:
    """The exit status of `perfguard compare` given this threshold (2: refused before reading the records)."""
    try:
        return main(["compare", str(tmp_path / "absent.json"), str(tmp_path / "absent.json"), "--threshold", value])
    except SystemExit as exc:  # argparse refuses a bad value with its usage line
        return exc.code


@pytest.mark.parametrize("value", REFUSED_PERCENTAGES)
def test_a_threshold_the_plugin_refuses_the_cli_refuses_too(pytester, tmp_path, capsys, value):
    with pytest.raises(pytest.UsageError, match=r"--perfguard-threshold \(or ini perfguard-threshold\) must be a percentage above 0"):
        plugin_threshold(pytester, value)
    assert cli_threshold(tmp_path, value) == 2
    assert "argument --threshold: must be a percentage above 0" in capsys.readouterr().err


@pytest.mark.parametrize("value", ACCEPTED_PERCENTAGES)
def test_a_threshold_the_plugin_takes_the_cli_takes_too(pytester, tmp_path, capsys, value):
    assert plugin_threshold(pytester, value) == float(value)
    assert cli_threshold(tmp_path, value) == 2  # past the argument: the records are absent
    assert "absent.json: no such file" in capsys.readouterr().err


def test_the_plugin_and_the_cli_start_from_the_same_defaults(pytester):
    from perfguard.analysis import verdict
    from perfguard.measure import calibrate
    from perfguard.store import DEFAULT_KEEP_RUNS

    options = Options.from_config(pytester.parseconfig())
    assert (options.threshold_pct, options.budget_s, options.keep_runs, options.confirm) == (
        defaults.THRESHOLD_PCT, defaults.BUDGET_S, defaults.KEEP_RUNS, defaults.CONFIRM)
    assert (verdict.DEFAULT_THRESHOLD_PCT, verdict.DEFAULT_MEMORY_THRESHOLD_PCT) == (
        defaults.THRESHOLD_PCT, defaults.MEMORY_THRESHOLD_PCT)
    assert (DEFAULT_KEEP_RUNS, calibrate.DEFAULT_BUDGET_S) == (defaults.KEEP_RUNS, defaults.CALIBRATE_BUDGET_S)


@pytest.mark.parametrize("args", [
    ["calibrate", "--budget", "0"],
    ["ab", "--base", "HEAD", "--rounds", "0"],
    ["ab", "--base", "HEAD", "--threshold", "0"],
    ["baseline", "merge", "x.json", "--keep-runs", "0"],
])
def test_the_cli_refuses_zero_budgets_rounds_thresholds_and_runs_before_doing_anything(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert "must be" in capsys.readouterr().err


@pytest.mark.parametrize(("parse", "raw", "value"), [
    (defaults.seconds, "0.25", 0.25),
    (defaults.timeout, "0", 0.0),
    (lambda raw: defaults.count(raw, 0), " 3 ", 3),
])
def test_the_parsers_take_what_they_name(parse, raw, value):
    assert parse(raw) == value


@pytest.mark.parametrize(("parse", "raw"), [
    (defaults.seconds, "0"), (defaults.seconds, True), (defaults.timeout, "-1"), (defaults.percent, None),
    (lambda raw: defaults.count(raw, 1), "0"), (lambda raw: defaults.count(raw, 1, 100), "101"),
    (lambda raw: defaults.count(raw, 1), "2.5"),
])
def test_the_parsers_refuse_with_what_was_expected(parse, raw):
    with pytest.raises(ValueError, match=r"^must be .*, got "):
        parse(raw)
