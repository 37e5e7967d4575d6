"""Writing report files: atomically, and with one clear line instead of a crash when it cannot."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from perfguard.errors import ConfigError


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: readers never see half a file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write {path} ({exc.strerror or exc}); choose a writable folder") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path} ({exc.strerror or exc}); choose a writable folder") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
