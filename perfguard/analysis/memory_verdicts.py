"""The memory verdicts: a call's peak, the case's footprint and what a call retains for the next.

All three come from the caching allocator's counts, deterministic for one case on one software stack:
a change is compared with its threshold directly, without a noise model. The peak and the footprint
regress when they grow by more than the memory threshold (and MEMORY_FLOOR_BYTES); retained memory
regresses when it grows at all past RETAINED_FLOOR_BYTES, since a call that keeps what it allocates
runs out of memory given calls enough, whatever its size. A baseline recorded before a figure was
measured gives `new` for it, never a failure. Pure functions of the results.
"""

from __future__ import annotations

from typing import Protocol

from perfguard import units
from perfguard.model import CaseResult, Memory, Verdict

# Peak memory below this much change never flips a verdict: allocator rounding (512 B blocks, 2 MiB
# segments for large tensors) moves tiny cases by whole percents without anything having changed.
MEMORY_FLOOR_BYTES = 64 * 1024
# Below one allocator block (512 B): every block a call keeps for good is a leak, and the figure has
# no finer noise to absorb (the allocator counts whole blocks; a one-off allocation is outvoted in
# the measurement, measure/memory.py).
RETAINED_FLOOR_BYTES = 256
IMPROVED_HINT = "run with --perfguard-update to make it the baseline"
# The metrics of these verdicts; the ones a baseline from before this perfguard lacks: `new` for them.
MEMORY_METRICS = ("peak_memory", "footprint", "retained_memory")
ACROSS_CALLS = ("footprint", "retained_memory")


class Context(Protocol):
    """What makes a verdict of one case (analysis.verdict._Context)."""

    baseline_file: str | None

    def verdict(self, metric: str, status: str, threshold: float, baseline: float | None = None,
                current: float | None = None, change: float | None = None,
                *, detail: str, hint: str = "", bound: str | None = None, **judged: object) -> Verdict: ...


def memory_verdicts(ctx: Context, current: CaseResult, baseline: CaseResult, threshold: float) -> list[Verdict]:
    """The peak, footprint and retained-memory verdicts the two results have figures for (none on a CPU)."""
    now, was = current.memory, baseline.memory
    if now is None:
        return []
    out = []
    if now.peak_allocated_bytes is not None and was is not None and was.peak_allocated_bytes is not None:
        out.append(_grown(ctx, "peak_memory", was.peak_allocated_bytes, now.peak_allocated_bytes, threshold))
    if now.footprint_bytes is not None:
        old = was.footprint_bytes if was else None
        if old is None:
            out.append(_new(ctx, "footprint", now.footprint_bytes, threshold))
        else:
            out.append(_footprint(ctx, old, now, was, threshold))
    if now.retained_bytes_per_call is not None:
        old = was.retained_bytes_per_call if was else None
        if old is None:
            out.append(_new(ctx, "retained_memory", now.retained_bytes_per_call, threshold, " per call"))
        else:
            out.append(_retained(ctx, old, now.retained_bytes_per_call, threshold))
    return out


def leaks(memory: Memory | None) -> bool:
    """Whether a result's calls keep memory from one to the next."""
    return bool(memory and (memory.retained_bytes_per_call or 0) > RETAINED_FLOOR_BYTES)


def _grown(ctx: Context, metric: str, old: int, new: int, threshold: float, why: str = "") -> Verdict:
    """A deterministic figure in bytes: regressed past the threshold (and the floor), improved symmetrically;
    `why` is said when it moved."""
    allowed = max(old * threshold / 100.0, MEMORY_FLOOR_BYTES)
    change = 100.0 * (new - old) / old if old else None
    status = "regressed" if new - old > allowed else "improved" if old - new > allowed else "same"
    shown = f"{change:+.1f}%" if change is not None else f"{units.size(new - old)}"
    hint = "; ".join(t for t in (why if status != "same" else "", IMPROVED_HINT if status == "improved" else "") if t)
    return ctx.verdict(metric, status, threshold, float(old), float(new), change,
                       detail=f"{units.size(old)} → {units.size(new)} ({shown}, deterministic)", hint=hint)


def _footprint(ctx: Context, old: int, now: Memory, was: Memory | None, threshold: float) -> Verdict:
    new = now.footprint_bytes or 0
    if leaks(now) and leaks(was) and abs(new - old) > MEMORY_FLOOR_BYTES:
        # Both leak: the footprint then grows with the calls made before the memory pass, which the
        # time budget decides, and says nothing about the code; the retained memory is judged instead.
        change = 100.0 * (new - old) / old if old else None
        return ctx.verdict("footprint", "unstable", threshold, float(old), float(new), change,
                           detail=f"{units.size(old)} → {units.size(new)}; the case retains "
                                  f"{units.size(now.retained_bytes_per_call)} per call here and in the baseline, so "
                                  "its footprint grows with the calls made; its retained memory is judged instead")
    held_old, held_new = (was.setup_allocated_bytes if was else None), now.setup_allocated_bytes
    why = ""
    if held_old is not None and held_new is not None and held_new != held_old:
        # What stays allocated between calls: the parameters and inputs, and what each call keeps for the next.
        why = (f"held between calls {units.size(held_old)} → {units.size(held_new)}: the setup's tensors, or what "
               "each call keeps for the next (gradients kept between steps, optimizer state, caches)")
    return _grown(ctx, "footprint", old, new, threshold, why)


def _retained(ctx: Context, old: int, new: int, threshold: float) -> Verdict:
    change = 100.0 * (new - old) / old if old else None
    figures = f"{units.size(old)} → {units.size(new)} retained per call"
    held = dict(bound=f"any growth past {RETAINED_FLOOR_BYTES} B a call fails")
    if new - old > RETAINED_FLOOR_BYTES:
        what = ("the call keeps what it allocates: a leak" if old <= RETAINED_FLOOR_BYTES
                else "the call keeps more of what it allocates")
        return ctx.verdict("retained_memory", "regressed", threshold, float(old), float(new), change,
                           detail=f"{figures} ({what}, which grows a long run by {units.size(new - old)} every call "
                                  "until it runs out of memory)",
                           hint="look for tensors kept across calls: appended to a list, cached, or held by a graph",
                           **held)
    if old - new > RETAINED_FLOOR_BYTES:
        return ctx.verdict("retained_memory", "improved", threshold, float(old), float(new), change,
                           detail=f"{figures} (deterministic)", hint=IMPROVED_HINT, **held)
    return ctx.verdict("retained_memory", "same", threshold, float(old), float(new), change,
                       detail=f"{figures} (deterministic)", **held)


def _new(ctx: Context, metric: str, value: int, threshold: float, unit: str = "") -> Verdict:
    where = ctx.baseline_file or "the baseline"
    return ctx.verdict(metric, "new", threshold, current=float(value),
                       detail=f"{units.size(value)}{unit}, not in {where} yet (recorded before perfguard measured it)",
                       hint="record it with `pytest --perfguard --perfguard-update`")
