"""The few git questions perfguard asks: the checkout's top, a commit's full hash and date, branches.

A run record names the commit it measured; `perfguard ab` checks a revision out beside the working
tree; an asv export keys results by the full 40-character hash and orders its graphs by the
repository's history, so a record's commit (a short hash works too) is resolved in its checkout.
Every failure of git itself (missing, hung, killed) is one ConfigError line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from perfguard.errors import ConfigError


def run(repo: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`git -C repo ARGS`; the caller reads the return code."""
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise ConfigError("git is not installed or not on PATH; perfguard needs it for commits and revisions") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"{repo}: git failed ({exc})") from None


def toplevel(path: Path) -> Path | None:
    """The top of the git checkout holding `path`, or None when it is not in one."""
    out = run(path, "rev-parse", "--show-toplevel") if Path(path).is_dir() else None
    return Path(out.stdout.strip()) if out is not None and out.returncode == 0 else None


def check_repo(repo: Path) -> Path:
    """The top of the git checkout at `repo`; anything else is one error saying what to pass."""
    top = toplevel(repo)
    if top is None:
        raise ConfigError(f"{repo}: not a git checkout; pass --repo the checkout the records were measured in")
    return top


def full_hash(repo: Path, rev: str) -> str | None:
    """The 40-character hash of commit `rev` (a full or short hash, a branch, a tag), or None if unknown."""
    if not rev or rev.startswith("-"):
        return None
    out = run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return out.stdout.strip() if out.returncode == 0 else None


def commit_date_ms(repo: Path, commit: str) -> int:
    """The commit's author date as a JavaScript timestamp: what `asv run` stores as a result's date."""
    out = run(repo, "log", "-1", "--format=%at", commit)
    return int(out.stdout.strip()) * 1000


def current_branch(repo: Path) -> str | None:
    """The branch checked out, or None on a detached HEAD (as in a pull request's CI checkout)."""
    out = run(repo, "symbolic-ref", "--short", "--quiet", "HEAD")
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def branch_commits(repo: Path, branch: str) -> set[str]:
    """The commits `asv publish` draws for `branch`: its first-parent history (asv's get_branch_commits)."""
    return set(run(repo, "rev-list", "--first-parent", branch, "--").stdout.split())
