"""The acceptance file beside the baselines: `baselines/accepted-changes.json` (model/acceptance.py).

Read by the gate and `perfguard ab`, written by `perfguard pr accept` only, under the baselines' lock and
by an atomic rename, as a baseline is; a file that cannot be read is never overwritten.
"""

from __future__ import annotations

from pathlib import Path

from perfguard.errors import BaselineError
from perfguard.files import project_of, writable, write_atomic
from perfguard.model import AcceptedChange, Acceptances, dumps, loads_acceptances
from perfguard.model.acceptance import FILE_NAME
from perfguard.store.lock import LockTimeout, held

LOCK_TIMEOUT_S = 60.0


def path_in(directory: Path | str) -> Path:
    return Path(directory) / FILE_NAME


def load(directory: Path | str) -> Acceptances:
    """The acceptances in `directory`; none when there is no file."""
    path = path_in(directory)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Acceptances()
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read it ({exc}); restore it from version control") from None
    return loads_acceptances(text, str(path))


def read(directory: Path | str) -> Acceptances | BaselineError:
    """As `load`, the error returned: a file that cannot be read accepts nothing, and the judgement says
    why (analysis/judgement.py), after the run, not in place of it."""
    try:
        return load(directory)
    except BaselineError as exc:
        return exc


def add(directory: Path | str, changes: list[AcceptedChange]) -> Path:
    """Write `changes` into the file (each in place of an earlier entry for its case and metric)."""
    path = path_in(directory)
    project = project_of(path.parent)
    writable(path, BaselineError, within=project)  # before its lock is made there
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with held(path.with_name(f"{FILE_NAME}.lock"), LOCK_TIMEOUT_S):
            accepted = load(directory)  # inside the lock, and refused whole if it is not a valid file
            for change in changes:
                accepted = accepted.with_change(change)
            write_atomic(path, dumps(accepted), error=BaselineError, within=project)
    except LockTimeout:
        raise BaselineError(f"{path}: another process holds its lock; wait for it to finish") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write it ({exc.strerror or exc}); choose a writable --perfguard-baselines") from None
    return path
