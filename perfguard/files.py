"""Writing files: so that no reader, and no crash, ever sees half of one, and never through a link out of
the project. It stands on the standard library and errors.py alone, so that every layer that writes may
use it: the store its baselines, measure/ a profile's trace, report/ and export/ their files, the CLI.

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


def write_atomic(path: Path, text: str, *, error: type[PerfguardError] = ConfigError, within: Path | None = None) -> None:
    """Write `text` to `path` through a temporary file and a rename; failures raise `error` naming the file.

    The write lands where `writable` says, after its check: no folder on the way leads out of the
    project, and a link at `path` itself is followed only to a target inside `within`. Its target is
    replaced (the temporary file beside it, so that the rename stays on the target's file system) and
    the link stays, pointing at the new text: replacing the link itself would leave its target, the file
    the link shares, silently stale.
    """
    path = writable(path, error, within=within)
    blocker = file_for_folder(path.parent)
    if blocker is not None:
        raise error(f"cannot write {path} ({blocker} is a file, not a folder); choose a writable folder")
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
        # mkstemp makes the file owner-only; a baseline or report must read like any file the user
        # writes: the old file's mode when replacing one, else what the umask allows.
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise error(f"cannot write {path} ({exc.strerror or exc}); choose a writable folder") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def writable(path: Path | str, error: type[PerfguardError] = ConfigError, *, within: Path | str | None = None) -> Path:
    """Where a write to `path` lands (a link at `path` followed), once the one check that every writer
    makes before it writes or takes a lock passes (write_atomic, a baseline's lock, a profile's trace):

    - no folder on the way to it leads out of the project (`refuse_folder_links_out`);
    - `path`, where it is a symbolic link, leads inside `within` (default: its own folder, so that a
      `reports/perfguard.json` planted to point at `~/.bashrc` or at a baseline is refused; a baseline's
      is its project). The folder first: through a folder that leads elsewhere, the file's own check
      would compare against that elsewhere.
    """
    path = Path(path)
    refuse_folder_links_out(path.parent, error)
    refuse_links_out(path, path.parent if within is None else within, error)
    return followed(path)


def refuse_links_out(path: Path | str, within: Path | str, error: type[PerfguardError] = ConfigError) -> None:
    """Raise `error` when `path` is a symbolic link whose target lies outside the folder `within`."""
    path = Path(path)
    if not path.is_symlink():
        return
    target, folder = Path(os.path.realpath(path)), Path(os.path.realpath(within))
    if not target.is_relative_to(folder):
        raise error(f"{path} is a symbolic link to {target}, outside {folder}; perfguard writes nothing through it: "
                    "remove the link, or make it a plain file")


def refuse_folder_links_out(folder: Path | str, error: type[Exception] = ConfigError) -> None:
    """Raise `error` when `folder` lies in a project (`project_of`) but its real path, every link on the
    way resolved, does not lie inside the project's real root: a `reports`, `baselines` or
    `reports/traces` link that a pull request committed, to `~/.ssh`, to the folder above the checkout
    or to another checkout (whose `.git` shows through the link), directly or through a chain of links,
    would otherwise have every file written (and every stale one removed) there, whatever the target
    holds. A link that stays inside the project is followed; a folder named outside any project
    (`--perfguard-report /mnt/big/reports`) is the user's own choice, links and all."""
    given = Path(folder).absolute()
    folder = Path(os.path.normpath(given))  # where the user meant it (`..` taken as written); realpath: where it is
    project = project_of(folder)
    if folder == project or not folder.is_relative_to(project):
        return
    root = Path(os.path.realpath(project))
    if Path(os.path.realpath(given)).is_relative_to(root):
        return
    # The first link on the way names the mistake; without one (`link/../x`: `..` of a linked folder
    # is its target's parent) the folder as given does.
    inside = [step for step in reversed((given, *given.parents))
              if (meant := Path(os.path.normpath(step))) != project and meant.is_relative_to(project)]
    link = next((step for step in inside if step.is_symlink() and not Path(os.path.realpath(step)).is_relative_to(root)),
                given)
    target = Path(os.path.realpath(link))
    raise error(f"{link} is a symbolic link to {target}, outside {root}; perfguard writes nothing through it: "
                "remove the link, make it a plain folder, or name the folder it leads to instead")


def project_of(folder: Path | str) -> Path:
    """The project `folder` lies in, where its links may lead, found without following a link out of it:
    going down `folder`'s path as written, the last folder holding `.git` (or, before any, the current
    folder, where pytest and the console command run: a checkout without `.git`, an unpacked archive)
    until the first symbolic link below it. A link above the project (a home folder that is a link) is
    followed; one below it (`reports` -> another checkout, whose `.git` shows through the link) makes no
    project of its own. `folder` itself when it lies in none."""
    folder = Path(os.path.normpath(Path(folder).absolute()))
    here = Path.cwd()
    project = None
    for step in reversed((folder, *folder.parents)):
        if project is not None and step.is_symlink():
            break
        if (step / ".git").exists() or (project is None and step == here):
            project = step
    return folder if project is None else project


def file_for_folder(folder: Path) -> Path | None:
    """The file that stands where `folder` (or the nearest of its parents that exists) should be, if any:
    writing into it fails with the system's "File exists" or "Not a directory", which names neither
    the file nor the mistake."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def refuse_file_for_folder(folder: Path, what: str, error: type[Exception] = ConfigError, prefix: str = "") -> None:
    """Raise `error` when a file stands where `folder` should be; `what` says which folder it was meant to be."""
    blocker = file_for_folder(folder)
    if blocker is not None:
        raise error(f"{prefix}{blocker} is a file, not a folder; {what}")


def followed(path: Path | str) -> Path:
    """`path`, or where its symbolic links lead (a dangling link: the file it names, made by the write)."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    # Linux shows it without changing it; elsewhere set and restore, the only portable way to read it.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
