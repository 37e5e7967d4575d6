"""The work counters as the reports show them: a section of figures per call, the kernels by name, and
what changed against the baseline (the counter verdicts' lines)."""

from __future__ import annotations

from perfguard import units
from perfguard.model import COMPILE_KINDS, COUNTER_KINDS, COUNTER_LABELS, TIME_LABELS, CaseResult, Counters
from perfguard.report.view import Entry
from perfguard.report import words

KERNEL_ROWS = 20  # kernels by name shown per case, most launched first
NA = "n/a"


def section(r: CaseResult) -> list[tuple[str, str]]:
    """(label, value) rows: each counter per call, the GPU's busy time, and why there are none."""
    c = r.counters
    if c is None:
        return [("counted", r.counters_problem or NA)]
    rows = [("calls counted", str(c.calls))]
    if c.device:
        rows += [
            ("kernels", units.count(c.total("kernels"))),
            ("host-device syncs", "; ".join(f"{units.count(n)} × {name}" + (f" ({c.sync_causes[name]})" if name in c.sync_causes else "")
                                           for name, n in c.syncs.items()) or "0"),
            ("copies", ", ".join(f"{units.count(n)} {d} ({units.size(c.copy_bytes.get(d, 0))})" for d, n in c.copies.items()) or "0"),
            ("memsets", units.count(c.total("memsets"))),
            ("allocator calls", units.count(c.total("allocations"))),
            ("new segments", units.count(c.total("segments"))),
        ]
    if c.calls:
        rows.append(("ATen operators", units.count(c.total("aten_ops"))))
    if c.compiled:  # torch.compile's counters: the whole case's, each by name and the user's line
        for kind in COMPILE_KINDS:
            named = "; ".join(f"{units.count(n)} × {name}" + (f" (at {c.frames[name]})" if name in c.frames else "")
                              for name, n in getattr(c, kind).items())
            rows.append((f"{COUNTER_LABELS[kind][1]} (in the case)", named or "0"))
    for metric in ("compile_cold", "compile_warm"):
        ms = r.median_of(metric)
        if ms is not None:
            rows.append((TIME_LABELS[metric], units.duration(ms)))
    busy = r.median_of("busy_time")
    if busy is not None:
        rows.append(("GPU busy time", units.duration(busy)))
    if c.wall_s is not None:
        rows.append(("counting pass", units.duration(c.wall_s * 1e3)))
    return rows


def kernel_rows(entry: Entry) -> tuple[list[str], list[list[str]]] | None:
    """The case's kernels by name, launches per call, most first (ATen operators on a CPU)."""
    c = entry.result.counters if entry.result else None
    if c is None:
        return None
    kind, label = ("kernels", "kernel") if c.device else ("aten_ops", "ATen operator")
    ranked = sorted(getattr(c, kind).items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [[name, units.count(n)] for name, n in ranked[:KERNEL_ROWS]]
    if len(ranked) > KERNEL_ROWS:
        rows.append([f"… and {len(ranked) - KERNEL_ROWS} more", units.count(sum(n for _, n in ranked[KERNEL_ROWS:]))])
    return [label, "per call"], rows


def changes(entry: Entry) -> list[str]:
    """What changed against the baseline: the message of every counter verdict that moved."""
    return [words.line(v) for v in entry.verdicts if v.metric in COUNTER_KINDS]


def compact(c: Counters | None) -> str:
    """kernels/syncs per call on a GPU ("140/1"), ATen operators on a CPU ("12 ops"); "-" without counters."""
    if c is None:
        return "-"
    return f"{units.count(c.total('kernels'))}/{units.count(c.total('syncs'))}" if c.device else f"{units.count(c.total('aten_ops'))} ops"
