"""What the console commands share: reading a record, columns, argument types."""

from __future__ import annotations

import argparse
import difflib
import json
import shlex
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from perfguard import inert, options, parsers
from perfguard.errors import BaselineError, ConfigError
from perfguard.model import RunRecord, loads_record, names

# At most this many known ids are offered for one that is not there (difflib's closest, as a declaration's
# keyword typo is offered the keyword it meant: case.check_keywords).
CLOSE_MATCHES = 3

def read_text(path: Path, wanted: str) -> str:
    """The text of a file the command was given; a missing or unreadable one is one clear error naming it
    and, for a missing one, the files `wanted` ("a run record such as reports/perfguard.json")."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; pass {wanted}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None


def read_record(path: Path | str) -> RunRecord:
    """A run record from disk; a missing or unreadable file is one clear error naming it."""
    path = Path(path)
    text = read_text(path, "a run record such as reports/perfguard.json")
    try:
        return loads_record(text, str(path))
    except BaselineError:
        if file_kind(text) != "baseline":
            raise
    raise ConfigError(f"{path}: a baseline file, not a run record; list its cases with "
                      f"`perfguard baseline show --baselines {path.parent} --device {path.stem}`")


def show_command(path: Path | str) -> str:
    """The command that lists a record's cases, as a shell runs it."""
    return shlex.join(["perfguard", "show", str(path)])


def check_cases(named: Iterable[str], known: Collection[str], runs: Sequence[Path | str]) -> None:
    """A ConfigError, one line, for the ids of `named` that no record of `runs` holds: each with the known
    ids closest to it, and the command that lists a record's cases; nothing is written."""
    missing = [case_id for case_id in dict.fromkeys(named) if case_id not in known]
    if not missing:
        return
    said, ids = [], list(known)
    for case_id in missing:
        close = difflib.get_close_matches(case_id, ids, n=CLOSE_MATCHES)
        said.append(names.shown(case_id) + (f" (did you mean {' or '.join(map(names.shown, close))}?)" if close else ""))
    whose = "its" if len(runs) == 1 else "a record's"
    raise ConfigError(f"{', '.join(map(str, runs))}: no case {', '.join(said)}; `{show_command(runs[0])}` lists "
                      f"{whose} cases; nothing was written")


def file_kind(text: str) -> str | None:
    """"baseline" or "record" when `text` is a JSON object shaped like one at the top, else None: for
    pointing a command given the other kind of file at the command that reads it."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if "cases" in data and "device" in data:
        return "baseline"
    if "results" in data and "created_at" in data:
        return "record"
    return None


def say(*lines: object, file: Any = None) -> None:
    """Print each of `lines` as one line. A record's or a baseline's text (a device name, a case id) may
    hold a line break: printed raw, it would start a line of its own that passes for perfguard's (a
    forged `verdicts: 0 regressed`), so it is shown as `\\n`, with the rest `inert.line` escapes."""
    for line in lines:
        print(inert.line(line), file=file)


def tell(*lines: object) -> None:
    """Print each of `lines` as `say` does, wrapped to the terminal's width as the table is fitted to it
    (report/fitting.wrap): what `show`, `compare` and `ab` print. An error is one line, and `say`'s."""
    from perfguard.report.fitting import wrap

    say(*(part for line in lines for part in wrap(inert.line(line))))


def columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    rows = [tuple(inert.printable(cell) for cell in row) for row in rows]  # one line a cell, counted as shown
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """One of perfguard.parsers' parsers (which the plugin's options use too) as an argparse type."""

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parsed


def add_option(parser: argparse.ArgumentParser, name: str, **changes: Any) -> None:
    """Add one of perfguard.options' options, which the plugin offers as `--NAME`, under the console
    command's spelling: its parser, metavar, default and help; `changes` (a default or help of the
    command's own) go to argparse as they are."""
    option = options.option(name)
    if option.flag:
        parser.add_argument(f"--{option.cli}", **{"action": "store_true", "help": option.argparse_help, **changes})
        return
    kwargs: dict[str, Any] = {"metavar": option.metavar, "default": option.default, "help": option.argparse_help}
    if option.parse is not None:
        kwargs["type"] = argument(option.parse)
    parser.add_argument(f"--{option.cli}", **{**kwargs, **changes})


def command(commands: argparse._SubParsersAction, name: str, summary: str, details: str = "") -> argparse.ArgumentParser:
    """A subcommand whose `--help` opens with the same one line that `perfguard --help` lists for it,
    then `details` where there is more to say."""
    description = summary[0].upper() + summary[1:] + "." + (f" {details}" if details else "")
    return commands.add_parser(name, help=summary, description=description)


percent = argument(parsers.percent)
