"""Baseline files: one per device model, loaded strictly, written only through a lock and a rename.

    from perfguard.store import load, update, path_for

Nothing else in perfguard writes a baseline: the pytest plugin (`--perfguard-update`) and the CLI
(`perfguard baseline accept`) both call `update` / `update_runs`; `perfguard calibrate` stores its roofs with `calibrate`.
"""

from __future__ import annotations

from perfguard.store.baselines import (
    DEFAULT_KEEP_RUNS,
    LOCK_TIMEOUT_S,
    calibrate,
    list_files,
    load,
    load_file,
    merge_files,
    migrate,
    path_for,
    update,
    update_runs,
)

__all__ = [
    "DEFAULT_KEEP_RUNS",
    "LOCK_TIMEOUT_S",
    "calibrate",
    "list_files",
    "load",
    "load_file",
    "merge_files",
    "migrate",
    "path_for",
    "update",
    "update_runs",
]
