"""Writing a file so that no reader, and no crash, ever sees half of it.

The text goes to a temporary file in the target's own folder (so the rename stays on one file
system), is flushed to disk, and then replaces the target in one `os.replace`: a process killed at
any point leaves either the old file or the new one, plus at worst a stray `.<name>.*.tmp`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from perfguard.errors import ConfigError, PerfguardError


def temp_prefix(path: Path) -> str:
    """How the temporary files of `path` begin: hidden, so listings and globs of `*.json` skip them."""
    return f".{Path(path).name}."


def write_atomic(path: Path, text: str, *, error: type[PerfguardError] = ConfigError) -> None:
    """Write `text` to `path` through a temporary file and a rename; failures raise `error` naming the file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(f"cannot write {path} ({exc.strerror or exc}); choose a writable folder") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise error(f"cannot write {path} ({exc.strerror or exc}); choose a writable folder") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
