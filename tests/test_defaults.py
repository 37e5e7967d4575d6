"""One option set serves the plugin and the console command: the same defaults, and the same values refused."""

from __future__ import annotations

import pytest

import argparse
from pathlib import Path

from perfguard import defaults, options, parsers
from perfguard.cli import _parser, main
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
    with pytest.raises(pytest.UsageError, match=r"--perfguard-threshold \(or ini perfguard_threshold\) must be a percentage above 0"):
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


def test_every_option_with_a_value_names_a_parser_that_exists():
    # The table names its parsers (every pytest run loads it; few parse a value): a misspelt name would
    # fail only when someone gives that option.
    for option in options.OPTIONS:
        assert (option.parser is None) == option.flag, option.name
        assert option.flag or callable(getattr(parsers, option.parser, None)), option.name


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
    (parsers.seconds, "0.25", 0.25),
    (parsers.timeout, "0", 0.0),
    (lambda raw: parsers.count(raw, 0), " 3 ", 3),
    (parsers.folder, "reports/gpu", "reports/gpu"),
    (lambda raw: parsers.choice(raw, ("none", "all")), " All ", "all"),
])
def test_the_parsers_take_what_they_name(parse, raw, value):
    assert parse(raw) == value


@pytest.mark.parametrize(("parse", "raw"), [
    (parsers.seconds, "0"), (parsers.seconds, True), (parsers.timeout, "-1"), (parsers.percent, None),
    (lambda raw: parsers.count(raw, 1), "0"), (lambda raw: parsers.count(raw, 1, 100), "101"),
    (lambda raw: parsers.count(raw, 1), "2.5"),
    (parsers.folder, ""), (parsers.folder, "  "), (lambda raw: parsers.choice(raw, ("none", "all")), "some"),
])
def test_the_parsers_refuse_with_what_was_expected(parse, raw):
    with pytest.raises(ValueError, match=r"^must be .*, got "):
        parse(raw)


# Each option the console command shares, and the field of the plugin's Options that holds its value.
SHARED_FIELDS = {
    "perfguard-baselines": "baselines_dir",
    "perfguard-report": "report_dir",
    "perfguard-threshold": "threshold_pct",
    "perfguard-budget": "budget_s",
    "perfguard-baseline-runs": "keep_runs",
    "perfguard-counter-allowance": "counter_allowance",
}
INPUTS = ["0", "-1", "abc", "", " ", "nan", "inf", "-0.5", "0.5", "1", "2.5", "3", "101", "1e3", "reports"]


def cli_flags(parser: argparse.ArgumentParser, flag: str) -> list[tuple[str, argparse.Action]]:
    """(command, action) for every command of the console command that takes `flag`."""
    found = []
    for action in parser._actions:
        if flag in action.option_strings:
            found.append((parser.prog, action))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += cli_flags(sub, flag)
    return found


def cli_value(action: argparse.Action, text: str) -> object:
    try:
        return action.type(text) if action.type else text
    except argparse.ArgumentTypeError as exc:
        return f"refused: {exc}"


def plugin_value(pytester: pytest.Pytester, inner_args: tuple[str, ...], name: str, text: str) -> object:
    # Without the two plugins the inner runs leave out (conftest.INNER_ARGS): half of each config's making.
    config = pytester.parseconfig(*inner_args, f"--{name}={text}")
    try:
        value = getattr(Options.from_config(config), SHARED_FIELDS[name])
    except pytest.UsageError as exc:
        return f"refused: {str(exc).removeprefix(f'--{name} (or ini {options.option(name).ini}) ')}"
    return value.relative_to(config.rootpath).as_posix() if isinstance(value, Path) else value


# Each flag the console command shares, and the field of the plugin's Options that holds it.
SHARED_FLAGS = {"perfguard-fail-inconclusive": "fail_inconclusive"}


def test_the_shared_options_are_the_ones_checked_here():
    assert {o.name for o in options.shared() if not o.flag} == set(SHARED_FIELDS)
    assert {o.name for o in options.shared() if o.flag} == set(SHARED_FLAGS)


@pytest.mark.parametrize("name", SHARED_FLAGS)
def test_a_shared_flag_is_off_unless_given_in_the_plugin_its_ini_and_every_command(pytester, name):
    field = SHARED_FLAGS[name]
    assert getattr(Options.from_config(pytester.parseconfig()), field) is False
    assert getattr(Options.from_config(pytester.parseconfig(f"--{name}")), field) is True
    pytester.makeini(f"[pytest]\n{name.replace('-', '_')} = true\n")
    assert getattr(Options.from_config(pytester.parseconfig()), field) is True
    commands = cli_flags(_parser(), f"--{options.option(name).cli}")
    assert commands and all(isinstance(action, argparse._StoreTrueAction) for _, action in commands)


@pytest.mark.parametrize("name", SHARED_FIELDS)
def test_a_shared_option_parses_every_input_alike_in_the_plugin_and_every_command(pytester, inner_args, name):
    option = options.option(name)
    commands = cli_flags(_parser(), f"--{option.cli}")
    assert commands, f"no command takes --{option.cli}"
    for text in INPUTS:
        expected = plugin_value(pytester, inner_args, name, text)
        got = {command: cli_value(action, text) for command, action in commands}
        assert got == dict.fromkeys(got, expected), (name, text)
    # The same words in both: the plugin's usage error and argparse's both say what was expected.
    assert plugin_value(pytester, inner_args, name, "abc" if option.metavar != "DIR" else " ").startswith("refused: must ")


@pytest.mark.parametrize(("args", "ini", "update", "force"), [
    ((), "", False, False), (("--perfguard-update",), "", True, False), (("--perfguard-update=force",), "", True, True),
    ((), "perfguard_update = true", True, False), ((), "perfguard_update = force", True, True),
    ((), "perfguard_update = false", False, False),
])
def test_an_update_is_asked_for_plainly_or_forced_on_the_command_line_or_in_the_ini(pytester, args, ini, update, force):
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    parsed = Options.from_config(pytester.parseconfig(*args))
    assert (parsed.update, parsed.force_update, parsed.enabled) == (update, force, update)


def test_an_update_word_that_is_none_of_true_false_or_force_is_refused(pytester):
    pytester.makeini("[pytest]\nperfguard_update = always\n")
    with pytest.raises(pytest.UsageError, match="must be true, false or force, got 'always'"):
        Options.from_config(pytester.parseconfig())


def test_a_folder_is_resolved_as_pytest_resolves_its_own_paths(pytester, monkeypatch):
    # The command line's from where pytest was started, the ini file's from its folder, the default from the rootdir.
    pytester.makeini("[pytest]\nperfguard_report = out\n")
    start = pytester.mkdir("sub")
    monkeypatch.chdir(start)
    parsed = Options.from_config(pytester.parseconfig("--perfguard-baselines=b", str(start)))
    assert (parsed.baselines_dir, parsed.report_dir) == (start / "b", pytester.path / "out")
    assert Options.from_config(pytester.parseconfig(str(start))).baselines_dir == pytester.path / "baselines"
