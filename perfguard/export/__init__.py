"""History: run records exported to asv's result format, and asv's step detection over them.

    from perfguard.export import export, find_drifts

`export` (perfguard/export/asv.py) writes plain JSON and needs only git; `find_drifts`
(perfguard/export/history.py) imports asv when called, never when perfguard is imported.
"""

from __future__ import annotations

from perfguard.export.asv import Summary, export, machine_name
from perfguard.export.history import Drift, History, Step, find_drifts

__all__ = ["Drift", "History", "Step", "Summary", "export", "find_drifts", "machine_name"]
