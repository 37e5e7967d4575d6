"""A pytest plugin `perfguard ab -n N` loads into a `--collect-only` run of each side
(`-p perfguard.plugin.collected`): it writes the node ids the run selected (after -k, -m and
--deselect), one a line, to the file that ab_env.COLLECTED names, whatever the run's verbosity."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfguard.ab_env import COLLECTED


def pytest_collection_finish(session: pytest.Session) -> None:
    path = os.environ.get(COLLECTED)
    if path:
        Path(path).write_text("".join(f"{item.nodeid}\n" for item in session.items), encoding="utf-8")
