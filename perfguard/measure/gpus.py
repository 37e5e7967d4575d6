"""Which GPUs this process may use, listed without initialising CUDA, one CUDA_VISIBLE_DEVICES entry each.

The pytest-xdist controller needs the list before any worker starts (to size `-n auto`, to refuse more
workers than GPUs, and to give each worker its own GPU), and must not initialise CUDA to get it. NVML
names the machine's GPUs; CUDA_VISIBLE_DEVICES is read by CUDA's own rules, as torch's
`torch.cuda._parse_visible_devices` reads it (private there, hence this copy of the rules):

- unset: every GPU; empty, or a first entry that is not a GPU (`-1`, `none`): no GPU;
- indexes (`0,2`; like strtoul, `1gpu` reads as 1) or UUIDs (`GPU-8e6a…`, a unique prefix is enough),
  or MIG instances (`MIG-…`), not mixed: the kind of the first entry decides;
- the list ends at the first entry that names no GPU; a repeated entry hides every GPU.

Each entry returned here, set alone as a worker's CUDA_VISIBLE_DEVICES, makes that worker see exactly
that GPU, in the same numbering the parent would have used (CUDA_DEVICE_ORDER is inherited).
No torch here: the controller imports this without paying for torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from perfguard.measure import nvml

VARIABLE = "CUDA_VISIBLE_DEVICES"
_LEADING_NUMBER = re.compile(r"\s*\+?(\d+)")


def parse(value: str | None) -> list[str] | None:
    """The entries of a CUDA_VISIBLE_DEVICES value as CUDA reads them; None when it is unset (every GPU)."""
    if value is None:
        return None
    entries: list[str] = []
    if value.startswith(("GPU-", "MIG-")):
        prefix = value[:4]
        for raw in value.split(","):
            entry = raw.strip()
            if not entry.startswith(prefix):
                break
            if entry in entries:
                return []
            entries.append(entry)
        return entries
    for raw in value.split(","):
        match = _LEADING_NUMBER.match(raw)
        if match is None:  # "-1", "none", "": the list stops here
            break
        entry = str(int(match.group(1)))
        if entry in entries:
            return []
        entries.append(entry)
    return entries


def select(entries: list[str] | None, uuids: Sequence[str]) -> tuple[str, ...]:
    """One entry per GPU the entries name among NVML's `uuids` (by NVML index), in CUDA's order.

    A UUID prefix comes back as the full UUID, so that a worker's variable names one GPU whatever
    else the machine holds. MIG instances are passed on as given: NVML lists their parents only.
    """
    if not uuids:
        return ()
    if entries is None:
        return tuple(str(i) for i in range(len(uuids)))
    chosen: list[str] = []
    for entry in entries:
        if entry.isdigit():
            if int(entry) >= len(uuids):
                break
            chosen.append(entry)
        elif entry.startswith("GPU-"):
            matches = [u for u in uuids if u.startswith(entry)]
            if len(matches) != 1:  # unknown or ambiguous: CUDA stops here too
                break
            chosen.append(matches[0])
        else:
            chosen.append(entry)
    return tuple(chosen)


def visible() -> tuple[str, ...]:
    """This process's GPUs, one CUDA_VISIBLE_DEVICES entry each; empty without NVML (no NVIDIA driver)."""
    return select(parse(os.environ.get(VARIABLE)), nvml.uuids())


def spread(workers: int, gpus: Sequence[str]) -> list[str]:
    """Worker i's GPU: one each while they last, then round again (only when sharing was allowed)."""
    return [gpus[i % len(gpus)] for i in range(workers)] if gpus else []
