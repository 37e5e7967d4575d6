"""The memory verdicts: a call's peak, the case's footprint and what a call retains for the next.

All three come from the caching allocator's counts, deterministic for one case on one software stack:
a change is compared with its threshold directly, without a noise model. The peak and the footprint
regress when they grow by more than the memory threshold (and MEMORY_FLOOR_BYTES); retained memory
regresses when it grows at all past RETAINED_FLOOR_BYTES, since a call that keeps what it allocates
runs out of memory given calls enough, whatever its size. A baseline recorded before a figure was
measured gives `new` for it, never a failure. Pure functions of the results.
"""

from __future__ import annotations

from typing import Any, Protocol

from perfguard.model import CaseResult, Memory, MemoryEvidence, NextStep, Verdict

# Peak memory below this much change never flips a verdict: allocator rounding (512 B blocks, 2 MiB
# segments for large tensors) moves tiny cases by whole percents without anything having changed.
MEMORY_FLOOR_BYTES = 64 * 1024
# Below one allocator block (512 B): every block a call keeps for good is a leak, and the figure has
# no finer noise to absorb (the allocator counts whole blocks; a one-off allocation is outvoted in
# the measurement, measure/memory.py).
RETAINED_FLOOR_BYTES = 256
# The memory metrics a baseline from before perfguard measured them lacks: `new` for them.
ACROSS_CALLS = ("footprint", "retained_memory")


class Context(Protocol):
    """What makes a verdict of one case (analysis.verdict._Context)."""

    baseline_file: str | None

    def verdict(self, metric: str, status: Any, reason: Any, threshold: float, baseline: float | None = None,
                current: float | None = None, change: float | None = None, **figures: Any) -> Verdict: ...


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
            out.append(_new(ctx, "retained_memory", now.retained_bytes_per_call, threshold))
        else:
            out.append(_retained(ctx, old, now.retained_bytes_per_call, threshold))
    return out


def leaks(memory: Memory | None) -> bool:
    """Whether a result's calls keep memory from one to the next."""
    return bool(memory and (memory.retained_bytes_per_call or 0) > RETAINED_FLOOR_BYTES)


def _change(old: int, new: int) -> float | None:
    return 100.0 * (new - old) / old if old else None


def _grown(ctx: Context, metric: str, old: int, new: int, threshold: float, memory: MemoryEvidence | None = None) -> Verdict:
    """A deterministic figure in bytes: regressed past the threshold (and the floor), improved symmetrically;
    `memory`: what a change rests on besides."""
    allowed = max(old * threshold / 100.0, MEMORY_FLOOR_BYTES)
    status = "regressed" if new - old > allowed else "improved" if old - new > allowed else "same"
    steps = {"regressed": (NextStep("accept"),), "improved": (NextStep("record"),)}.get(status, ())
    return ctx.verdict(metric, status, "outside" if status != "same" else "within", threshold, float(old), float(new),
                       _change(old, new), next_steps=steps, memory=memory if status != "same" else None)


def _footprint(ctx: Context, old: int, now: Memory, was: Memory | None, threshold: float) -> Verdict:
    new = now.footprint_bytes or 0
    if leaks(now) and leaks(was) and abs(new - old) > MEMORY_FLOOR_BYTES:
        # Both leak: the footprint then grows with the calls made before the memory pass, which the
        # time budget decides, and says nothing about the code; the retained memory is judged instead.
        return ctx.verdict("footprint", "unstable", "both_leak", threshold, float(old), float(new), _change(old, new),
                           memory=MemoryEvidence(retained_bytes=now.retained_bytes_per_call))
    held_old, held_new = (was.setup_allocated_bytes if was else None), now.setup_allocated_bytes
    # What stays allocated between calls: the parameters and inputs, and what each call keeps for the next.
    held = (held_old, held_new) if held_old is not None and held_new is not None and held_new != held_old else None
    return _grown(ctx, "footprint", old, new, threshold, memory=MemoryEvidence(held_bytes=held) if held else None)


def _retained(ctx: Context, old: int, new: int, threshold: float) -> Verdict:
    change = _change(old, new)
    if new - old > RETAINED_FLOOR_BYTES:
        return ctx.verdict("retained_memory", "regressed", "leak" if old <= RETAINED_FLOOR_BYTES else "outside",
                           threshold, float(old), float(new), change, next_steps=(NextStep("find_leak"), NextStep("accept")))
    if old - new > RETAINED_FLOOR_BYTES:
        return ctx.verdict("retained_memory", "improved", "outside", threshold, float(old), float(new), change,
                           next_steps=(NextStep("record"),))
    return ctx.verdict("retained_memory", "same", "within", threshold, float(old), float(new), change)


def _new(ctx: Context, metric: str, value: int, threshold: float) -> Verdict:
    return ctx.verdict(metric, "new", "figure_not_in_baseline", threshold, current=float(value),
                       next_steps=(NextStep("record"),))
