"""The few git questions an asv export asks: a commit's full hash, its date, the branch checked out.

asv keys results by the full 40-character hash and orders its graphs by the repository's history,
so a record's commit (often written as `git rev-parse HEAD`, but a short hash works too) must be
resolved in the checkout it was measured in.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from perfguard.errors import ConfigError


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ConfigError("git is not installed; an asv export needs it to resolve the records' commits") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"{repo}: git failed ({exc})") from None


def check_repo(repo: Path) -> Path:
    """The top of the git checkout at `repo`; anything else is one error saying what to pass."""
    out = _git(repo, "rev-parse", "--show-toplevel") if Path(repo).is_dir() else None
    if out is None or out.returncode != 0:
        raise ConfigError(f"{repo}: not a git checkout; pass --repo the checkout the records were measured in")
    return Path(out.stdout.strip())


def full_hash(repo: Path, rev: str) -> str | None:
    """The 40-character hash of commit `rev` (a full or short hash, a branch, a tag), or None if unknown."""
    if not rev or rev.startswith("-"):
        return None
    out = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return out.stdout.strip() if out.returncode == 0 else None


def commit_date_ms(repo: Path, commit: str) -> int:
    """The commit's author date as a JavaScript timestamp: what `asv run` stores as a result's date."""
    out = _git(repo, "log", "-1", "--format=%at", commit)
    return int(out.stdout.strip()) * 1000


def current_branch(repo: Path) -> str | None:
    """The branch checked out, or None on a detached HEAD (as in a pull request's CI checkout)."""
    out = _git(repo, "symbolic-ref", "--short", "--quiet", "HEAD")
    return (out.stdout.strip() or None) if out.returncode == 0 else None



def branch_commits(repo: Path, branch: str) -> set[str]:
    """The commits `asv publish` draws for `branch`: its first-parent history (asv's get_branch_commits)."""
    return set(_git(repo, "rev-list", "--first-parent", branch, "--").stdout.split())
