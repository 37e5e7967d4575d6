"""The commands a verdict's next steps print, with the user's own options kept, so that each works as
printed: `pytest --perfguard --perfguard-update --perfguard-baselines=nope`, not a command that
writes to another folder than the one the run judged against.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Iterable, Mapping, Sequence

from perfguard import defaults


@dataclasses.dataclass(frozen=True)
class Invocation:
    """What of a run's options a printed command must repeat: where the baselines and the report are."""

    baselines: str = defaults.BASELINES_DIR
    report: str = defaults.REPORT_DIR

    @classmethod
    def of(cls, options: Mapping[str, object] | None) -> Invocation:
        """From a run record's `options` (older records did not keep the folders: the defaults)."""
        options = options or {}
        baselines, report = options.get("baselines_dir"), options.get("report_dir")
        return cls(baselines=baselines if isinstance(baselines, str) and baselines else defaults.BASELINES_DIR,
                   report=report if isinstance(report, str) and report else defaults.REPORT_DIR)

    def _baselines_flag(self, spelling: str = "--baselines") -> list[str]:
        """The folder as pytest (`--perfguard-baselines`) or the console command (`--baselines`) takes it."""
        return [] if self.baselines == defaults.BASELINES_DIR else [f"{spelling}={self.baselines}"]

    def update(self) -> str:
        """Record this run's figures in the baseline (routine: a run outside its series is not added)."""
        return _join(["pytest", "--perfguard", "--perfguard-update", *self._baselines_flag("--perfguard-baselines")])

    def baseline_accept(self, case_ids: Iterable[str], records: Sequence[str] = ()) -> str:
        """Accept the named cases' changes from this run's record (or `records`) into the baseline (a new series)."""
        records = list(records) or [f"{self.report.rstrip('/')}/perfguard.json"]
        return _join(["perfguard", "baseline", "accept", *records, *_cases(case_ids), *self._baselines_flag()])

    def pr_accept(self, case_ids: Iterable[str]) -> str:
        """Write the named cases' changes of a pull request (perfguard ab's record) into the acceptance file."""
        record = f"{self.report.rstrip('/')}/perfguard.json"
        return _join(["perfguard", "pr", "accept", record, *_cases(case_ids), *self._baselines_flag()])


def _cases(case_ids: Iterable[str]) -> list[str]:
    return [arg for case_id in sorted(set(case_ids)) for arg in ("--case", case_id)]


def _join(argv: list[str]) -> str:
    """A command line a shell runs as it reads: each word quoted only where it needs it."""
    return shlex.join(argv)
