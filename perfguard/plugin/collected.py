"""A pytest plugin `perfguard ab -n N` loads into a `--collect-only` run of each side
(`-p perfguard.plugin.collected`): it writes the node ids the run selected (after -k, -m and
--deselect), one a line, to the file that PERFGUARD_AB_COLLECTED names, whatever the run's verbosity."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

VARIABLE = "PERFGUARD_AB_COLLECTED"


def pytest_collection_finish(session: pytest.Session) -> None:
    path = os.environ.get(VARIABLE)
    if path:
        Path(path).write_text("".join(f"{item.nodeid}\n" for item in session.items), encoding="utf-8")
