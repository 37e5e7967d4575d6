"""A lock beside a file that is gone again once released: no `.lock` is left in the user's folder.

`flock` on `<file>.lock`, which the holder deletes before it lets go. Deleting a lock file is safe
only because of the check after each acquisition: a waiter that locked the file just deleted (or one
replaced since) finds that the path no longer names what it holds, lets go and tries again, so at
any moment only the holder of the file at the path holds the lock. A holder that is killed leaves
the file behind, unlocked: the next one to take it deletes it. Where there is no `fcntl` (Windows)
this is filelock's lock, which deletes its file there itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

POLL_S = 0.05  # filelock's own default interval between attempts
CONTENDED = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)  # some file systems answer EACCES when another holds it


class LockTimeout(Exception):
    """Another process held the lock past the timeout."""


@contextlib.contextmanager
def held(path: Path | str, timeout_s: float) -> Iterator[None]:
    """Hold the lock file `path` (timeout 0: one attempt); raises LockTimeout, or OSError when it cannot be made."""
    if fcntl is None:  # pragma: no cover - Windows
        import filelock

        try:
            with filelock.FileLock(str(path), timeout=timeout_s):
                yield
        except filelock.Timeout:
            raise LockTimeout(str(path)) from None
        return
    fd = _acquire(Path(path), timeout_s)
    try:
        yield
    finally:
        Path(path).unlink(missing_ok=True)  # while still held: a waiter on this file then starts afresh
        os.close(fd)


def _acquire(path: Path, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            # Never through a link: a planted `x.json.lock` link would otherwise make (or lock) its target.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, f"{path} is a symbolic link, which a lock file never is; remove it") from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _names(path, fd):
                return fd
        except OSError as exc:
            if exc.errno not in CONTENDED:
                os.close(fd)
                raise
        os.close(fd)
        if time.monotonic() >= deadline:
            raise LockTimeout(str(path))
        time.sleep(POLL_S)


def _names(path: Path, fd: int) -> bool:
    """Whether `path` still names the file open as `fd` (its holder may have deleted it meanwhile)."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(fd))
    except FileNotFoundError:
        return False
