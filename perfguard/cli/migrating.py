"""`perfguard migrate FILE...`: run records and baselines of an older schema, rewritten in place as the
current one (model/migration.py). perfguard reads the current schema alone: a read of an older file
refuses it in one line that names this command."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfguard.cli.common import command, read_text, say
from perfguard.errors import BaselineError
from perfguard.model import SCHEMA_VERSION, BaselineFile, dumps, migration


def _migrate(args: argparse.Namespace) -> int:
    from perfguard import store
    from perfguard.files import write_atomic

    for name in args.files:
        path = Path(name)
        found = migration.migrate(read_text(path, "run records (reports/perfguard.json) or baseline files"), str(path))
        if found.version == SCHEMA_VERSION:
            say(f"{path}: schema {SCHEMA_VERSION} already; left as it is")
            continue
        if isinstance(found.migrated, BaselineFile):  # under its lock, as every write of a baseline
            store.migrate(path, lambda again: migration.migrate(again, str(path)).migrated)
        else:
            write_atomic(path, dumps(found.migrated), error=BaselineError)
        dropped = (f"; its {found.dropped_verdicts} verdict(s), written before a verdict kept its reason, were "
                   f"dropped (`perfguard compare` judges its results again)" if found.dropped_verdicts else "")
        say(f"{path}: schema {found.version} → {SCHEMA_VERSION}{dropped}")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    migrate = command(commands, "migrate", "rewrite run records and baselines of an older schema as the current one",
                      f"Each file is rewritten in place as schema {SCHEMA_VERSION}, its figures as they were; a "
                      "baseline under its lock. A file of the current schema is left as it is.")
    migrate.add_argument("files", metavar="FILE.json", nargs="+", help="run records or baseline files")
    migrate.set_defaults(command=_migrate)
