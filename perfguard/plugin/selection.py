"""Which cases a run selected, for the baseline cases that did not run.

A baseline case that did not run is `missing` (a line each) when the run selected it, or would have
had it still existed: the run left nothing out with -k, -m or --deselect, and its test paths take in
the case's file. Any other was left out on purpose (`-k softmax` leaves out most of a suite): those
are counted in one line, not compared. `--perfguard-cases FILE` selects by a list of node ids (what
`perfguard ab` re-runs): everything it does not list is deselected, and left out on purpose.
"""

from __future__ import annotations

from typing import Any

import pytest

from perfguard.plugin.options import Options

SELECTION = pytest.StashKey["Selection"]()


class Selection:
    """Registered as a plugin on the process that writes the record: the controller, under xdist."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.selected: set[str] = set()  # node ids of the items this run was to run
        self.left_out: list[str] = []  # baseline case ids not selected, filled in at the run's end

    @classmethod
    def of(cls, config: pytest.Config) -> Selection:
        if SELECTION not in config.stash:
            config.stash[SELECTION] = cls(config)
        return config.stash[SELECTION]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected.update(item.nodeid for item in session.items)  # after -k, -m and --deselect

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.selected.update(ids)  # what each worker collected and kept

    def selects(self, nodeid: str) -> bool:
        """Whether this run meant to run the case that ran under `nodeid` when its baseline was recorded."""
        if nodeid in self.selected:
            return True
        option = self.config.option
        if (getattr(option, "keyword", "") or getattr(option, "markexpr", "") or getattr(option, "deselect", None)
                or Options.of(self.config).cases_file is not None):
            return False  # a case that is gone might have been left out by these too: not missing
        return bool(nodeid) and any(_takes_in(self.config, arg, nodeid) for arg in self.config.args)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under --perfguard-cases FILE (plugin/run.py registers this module then): deselect every item whose
    node id FILE does not list."""
    path = Options.of(config).cases_file
    try:
        listed = {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    except (OSError, UnicodeDecodeError) as exc:
        raise pytest.UsageError(f"--perfguard-cases {path}: cannot read it ({exc.__class__.__name__}); "
                                "give a file of node ids, one a line") from None
    kept = [item for item in items if item.nodeid in listed]
    left_out = [item for item in items if item.nodeid not in listed]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def _takes_in(config: pytest.Config, arg: str, nodeid: str) -> bool:
    """Whether the test path `arg` ("dir", "file.py" or "file.py::name", from the invocation folder)
    takes in `nodeid` (relative to the rootdir)."""
    path, sep, rest = arg.partition("::")
    try:
        rel = (config.invocation_params.dir / path).resolve().relative_to(config.rootpath.resolve()).as_posix()
    except ValueError:  # outside the rootdir: no node id is under it
        return False
    if sep:
        test = f"{rel}::{rest}"
        return nodeid == test or nodeid.startswith((f"{test}[", f"{test}::"))
    file = nodeid.partition("::")[0]
    return rel == "." or file == rel or file.startswith(f"{rel}/")
