"""The date and machine a benchmark ran on, printed above its figures so that a figure quoted in the
README says where it came from (issue 13 item 8). CPU timings on a shared machine move with its load,
so the load averages are part of the line."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe() -> str:
    """One line: `2026-11-30, Intel(R) Xeon(R) Processor ×2 (load 3.2 4.1 4.0), Linux 6.8.0, Python 3.11.7`."""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"{datetime.date.today().isoformat()}, {cpu_model()} ×{os.cpu_count()} (load {load}), "
            f"{platform.system()} {platform.release()}, Python {sys.version.split()[0]}")


def plugin_args() -> list[str]:
    """pytest's arguments that load perfguard: none where it is installed (its pytest11 entry point), else
    `-p perfguard.plugin` (run from the tree, as on the GPU machine). Both at once is refused by pytest."""
    import importlib.metadata  # noqa: PLC0415

    installed = any(e.value == "perfguard.plugin" for e in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "perfguard.plugin"]
