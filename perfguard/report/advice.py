"""What the figures say to do: launch-bound cases and their remedy; how far a case scales."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from typing import TYPE_CHECKING

from perfguard import units
from perfguard.report import view
from perfguard.model import CaseResult, DeviceInfo, MemoryBreakdown, RunRecord

if TYPE_CHECKING:  # the fits need numpy; a table of launch-bound cases does not
    from perfguard.analysis.scaling import Scaling

LAUNCH_ADVICE = 'capture the calls in a CUDA graph (mode="graph") or fuse the kernels'
NAMED = 5  # cases named in the line; the rest are counted
UNNAMED_NOTED = 0.10  # a memory breakdown that leaves this share of its peak unknown gets a line of its own


def launch_bound(results: Iterable[CaseResult]) -> list[CaseResult]:
    return sorted((r for r in results if r.metrics and r.metrics.bound == "launch"), key=lambda r: r.id)


def launch_line(results: Iterable[CaseResult]) -> str | None:
    """One line naming the launch-bound cases with their overhead share, and the remedy; None without any.

    No faster kernel helps such a case: the GPU finishes before the host has launched the next call.
    """
    cases = launch_bound(results)
    if not cases:
        return None
    named = []
    for r in cases[:NAMED]:
        share = r.metrics.launch_overhead_share
        named.append(f"{r.id} (GPU idle {100 * share:.0f}% of a call)" if share is not None else r.id)
    more = f" and {len(cases) - NAMED} more" if len(cases) > NAMED else ""
    return f"launch-bound: {', '.join(named)}{more}: {LAUNCH_ADVICE}"


def regime_line(results: Iterable[CaseResult]) -> str | None:
    """One line naming the cases not timed as plain GPU kernels (docs/method.md, timing regimes); None
    when every case was. Such a case's figures mean something else, and its user should know which."""
    named = {"enqueue-bound": "enqueue-bound (GPU time with each call queued whole; the host, not the GPU, "
                              "sets what a caller waits)",
             "caller": "timed as their caller sees them (they wait for the GPU inside a call)"}
    parts = []
    for regime, text in named.items():
        cases = sorted(r.id for r in results if r.regime == regime)
        if cases:
            parts.append(f"{len(cases)} {text}: {_named(cases)}")
    return "timing: " + "; ".join(parts) if parts else None


def compile_line(results: Iterable[CaseResult]) -> str | None:
    """One line naming the torch.compile'd cases with their compile times and what dynamo made of them;
    None without any. The compile is outside the timed calls: said here, judged as its own kind of time."""
    cases = sorted((r for r in results if r.counters and r.counters.compiled), key=lambda r: r.id)
    if not cases:
        return None
    named = []
    for r in cases[:NAMED]:
        cold, warm = r.median_of("compile_cold"), r.median_of("compile_warm")
        times = f"{units.duration(cold)} cold" + (f", {units.duration(warm)} warm" if warm is not None else "") if cold else ""
        c = r.counters
        shape = ", ".join(f"{units.count(c.total(k))} {label}" for k, label in (
            ("graphs", "graph(s)"), ("graph_breaks", "graph break(s)"), ("recompiles", "recompile(s)"),
            ("eager_frames", "frame(s) run eagerly")) if k in ("graphs", "graph_breaks") or c.total(k))
        named.append(f"{r.id} ({'; '.join(p for p in (times, shape) if p)})")
    more = f" and {len(cases) - NAMED} more" if len(cases) > NAMED else ""
    return f"compiled (outside the timed calls): {', '.join(named)}{more}"


# SM clocks that spread more than this over a run were not held still.
CLOCK_SPREAD = 0.02


def clock_line(results: Iterable[CaseResult]) -> str | None:
    """One line when the run's SM clocks moved (not locked), naming the command that holds them; else None.

    Under the power cap a compute-bound kernel's time moves with the clock, which differs between
    cards and runs; the gate's tolerance for such cases is wide, and locked clocks narrow it.
    """
    tel = [r.telemetry for r in results if r.telemetry is not None and r.telemetry.sm_clock_mhz_mean]
    if len(tel) < 2:
        return None
    clocks = [t.sm_clock_mhz_mean for t in tel]
    low, high = min(clocks), max(clocks)  # type: ignore[type-var]
    capped = sum(t.power_capped for t in tel)
    if high - low <= CLOCK_SPREAD * high and not capped:
        return None
    held = f", {capped} case(s) held down by the power cap" if capped else ""
    return (f"clocks are not locked: the SM clock ran at {low:.0f}-{high:.0f} MHz over this run{held}; compute-bound "
            "cases move with it and get wide tolerances. A runner admin can lock them with "
            f"`sudo nvidia-smi --lock-gpu-clocks={low:.0f},{low:.0f}` (a clock the card holds under load)")


# The mark of a figure timed on a CPU's host clock whose interval did not settle (`rough`).
ROUGH = "~"


def rough(result: CaseResult) -> bool:
    """Whether a case's latency was timed on a CPU's host clock and its budget ran out before its 95%
    interval settled (on a 2-core VM, 23 of 26 suite cases did, with intervals up to ±575%), so it is
    shown marked."""
    lat = result.judged_time
    return result.timer == "host-clock" and lat is not None and lat.stop_reason != "converged"


def cpu_line(results: Iterable[CaseResult], options: Mapping[str, object] | None = None) -> str | None:
    """One line for a run measured on a CPU: how far to trust its figures, and what it did about it
    (torch's threads, xdist workers sharing the CPU); None when no case was timed on the host clock.

    A CPU's figures are not GPU figures: the host clock times the op with whatever else the machine
    runs, and on a small VM the spread is wide enough to turn a scaling fit from x^1.45 to cubic
    between two runs. The gate knows (a CPU's tolerances are wide); the reader is told here."""
    timed = [r for r in results if r.timer == "host-clock" and r.judged_time is not None]
    if not timed:
        return None
    options = options or {}
    unsettled = [r for r in timed if rough(r)]
    widest = max(r.judged_time.ci_half_width_pct for r in timed)  # type: ignore[union-attr]
    text = (f"CPU figures (host clock) are rough: {len(unsettled)} of {len(timed)} case(s) ran out of budget before "
            f"their interval settled (marked {ROUGH}), intervals up to ±{units.number(widest, 0 if widest >= 10 else 1)}%, "
            "and a CPU's medians move between runs with what else the machine runs: read its medians, verdicts and "
            "scaling fits as indications, not as a GPU's figures")
    threads = options.get("cpu_threads")
    if isinstance(threads, int):
        text += f"; torch measured with {threads} thread(s) (OMP_NUM_THREADS sets it)"
    workers = options.get("cpu_workers")
    if isinstance(workers, int) and workers > 1:
        text += f"; {workers} xdist workers measured on this CPU at once and timed each other's work: use -n 0 for figures to keep"
    return text


RUN_LINES = {
    "interrupted": "run interrupted: the record holds the {n} case(s) that finished before it",
    "unfinished": "run unfinished: its pytest ended before writing its record (killed, os._exit in a case, a case "
                  "stuck past its timeout) or could not write it; this marker holds no figures",
}


def run_line(record: RunRecord) -> str | None:
    """One line for a record of a run that did not complete; None for a complete one."""
    text = RUN_LINES.get(record.status)
    return text.format(n=len(record.results)) if text else None


def case_lines(results: Iterable[CaseResult]) -> list[str]:
    """What the cases did that their figures do not show: outputs nobody checked (NaN or inf among them),
    torch settings a case changed and left changed (perfguard put them back after it), processes a
    case started and left running, and memory breakdowns that could not name a tenth of their peak."""
    results = sorted(results, key=lambda r: r.id)
    ran = [r for r in results if r.outputs]
    lines = []
    broken = [r.id for r in ran if r.outputs == "non-finite"]
    if broken:
        lines.append(f"NaN or inf in the output of {_named(broken)}: "
                     "measured all the same; declare check= to fail such a case")
    unchecked = [r for r in ran if r.outputs != "checked"]
    if unchecked:
        lines.append(f"outputs not checked: {len(unchecked)} of {len(ran)} case(s) declare no check=")
    # A line per case would be a line per case of a suite whose shared fixture leaves a setting
    # changed: 5,280 of them made the Markdown 2 MB. Cases that did the same share a line, and each
    # kind names NAMED cases at most and counts the rest.
    settings: dict[tuple[str, ...], list[str]] = {}
    for r in results:
        if r.restored_state:
            settings.setdefault(tuple(r.restored_state), []).append(r.id)
    lines += [f"{_named(ids)} changed torch's {', '.join(state)} and left it so; perfguard restored it after "
              + ("the case" if len(ids) == 1 else "each case") for state, ids in settings.items()]
    left = [r for r in results if r.left_processes]
    lines += [f"{r.id} left {len(r.left_processes)} process(es) running: {', '.join(r.left_processes)}; "
              "they take the machine from every case after it: end them in the case (terminate and wait, "
              "or a with-block)" for r in left[:NAMED]]
    if len(left) > NAMED:
        lines.append(f"{len(left) - NAMED} more case(s) left processes running: "
                     f"{_named([r.id for r in left[NAMED:]])}")
    unnamed = [(r.id, line) for r in results if (line := unnamed_line(r))]
    lines += [line for _, line in unnamed[:NAMED]]
    if len(unnamed) > NAMED:
        lines.append(f"{len(unnamed) - NAMED} more case(s) whose memory breakdown leaves a tenth of its peak or more "
                     f"unnamed: {_named([case_id for case_id, _ in unnamed[NAMED:]])}")
    return lines


def _named(ids: Sequence[str]) -> str:
    """"a, b, c, d, e and 12 more": NAMED ids at most, the rest counted."""
    more = f" and {len(ids) - NAMED} more" if len(ids) > NAMED else ""
    return ", ".join(ids[:NAMED]) + more


def unnamed_line(r: CaseResult) -> str | None:
    """A line for a case whose memory breakdown leaves a tenth of its peak or more unknown, with why."""
    parts = getattr(r, "memory_breakdown", None)
    # Reports take what records hold, and tests hand them mappings: only a breakdown says its share.
    if not isinstance(parts, MemoryBreakdown) or parts.error or not parts.peak_bytes or parts.unknown < UNNAMED_NOTED * parts.peak_bytes:
        return None
    why = parts.unnamed_reason or "the record does not say why (written before perfguard said it)"
    return (f"{r.id}: the memory breakdown leaves {units.size(parts.unknown)} "
            f"({units.percent(parts.unknown / parts.peak_bytes)} of its peak) unnamed: {why}")


def ranked_scalings(results: Iterable[CaseResult], devices: Iterable[DeviceInfo]) -> list[Scaling]:
    """Every scaling fit, the nearest to running out of device memory first: a swept suite has dozens,
    and a list cut short should keep the ones that matter before a larger run."""
    from perfguard.analysis.scaling import scalings

    return sorted(scalings(results, devices), key=_headroom)


def shared_fits(results: Iterable[CaseResult], devices: Iterable[DeviceInfo]) -> list[Scaling] | None:
    """`ranked_scalings`, made once for a run's reports; None where fitting fails, so that each renderer
    tries again and says what went wrong in its one line (a report never takes the run down)."""
    try:
        return ranked_scalings(results, devices)
    except Exception:  # noqa: BLE001
        return None


def report_fits(records: Sequence[RunRecord]) -> list[Scaling] | None:
    """`shared_fits` of the records as the reports merge them (view.merge): for both of their reports."""
    merged = view.merge(records)
    return shared_fits(merged.results(), [d.info for d in merged.devices.values()])


def _headroom(s: Scaling) -> float:
    """How many times its largest measured value the parameter can grow before the memory runs out."""
    return s.fits_up_to / max(s.values) if s.fits_up_to else math.inf


def scaling_lines(fits: Sequence[Scaling], limit: int | None = None) -> list[str]:
    """One line per fit (at most `limit`, then one that counts the rest)."""
    lines = [scaling_line(s) for s in fits[:limit]]
    if len(fits) > len(lines):
        lines.append(f"… and {len(fits) - len(lines)} more series in the HTML report")
    return lines


def scaling_line(s: Scaling) -> str:
    """One line: how latency and memory grow, and how far the parameter can go on this device."""
    parts = []
    if s.time:
        parts.append(f"time {_marked(s)}{s.time.label} in {s.parameter} (k={s.time.exponent:.2f}, R²={s.time.r2:.3f})")
    if s.memory:
        parts.append(f"memory {_memory(s)}")
    if s.bytes_per_unit is not None:
        parts.append(f"{units.size(s.bytes_per_unit)} per unit of {s.parameter} at the top")
    if s.activations:
        parts.append(f"activations {_activations(s)}")
    if s.fits_up_to is not None:
        parts.append(f"fits in device memory up to {s.parameter} ≈ {_round(s.fits_up_to):,} (extrapolated)")
    return f"{s.title}: " + "; ".join(parts)


def scaling_cells(s: Scaling) -> tuple[str, str, str, str, str, str]:
    """The HTML report's row: series, latency growth, memory growth, bytes per unit at the top, the
    activations' growth, how far it fits."""
    return (
        s.title,
        f"{_marked(s)}{s.time.label} (k={s.time.exponent:.2f}, R²={s.time.r2:.3f})" if s.time else "",
        _memory(s) if s.memory else "",
        units.size(s.bytes_per_unit) if s.bytes_per_unit is not None else "",
        _activations(s) if s.activations else "",
        f"{s.parameter} ≈ {_round(s.fits_up_to):,}" if s.fits_up_to is not None else "",
    )


def _memory(s: Scaling) -> str:
    """How the footprint grows: "linear (k=1.00, R²=1.000)", from where when its smallest values sit on
    a floor, and why a poor fit forecasts nothing."""
    from perfguard.analysis.scaling import MIN_FORECAST_R2

    m = s.memory
    poor = "; too poor a fit to forecast from" if m.exponent and m.r2 < MIN_FORECAST_R2 else ""
    text = f"{m.label} (k={m.exponent:.2f}, R²={m.r2:.3f}{poor})"
    if s.memory_from is not None:
        text += f" from {s.parameter}={s.memory_from:g} up (below it the call peaks where nothing grows with {s.parameter})"
    return text


def _activations(s: Scaling) -> str:
    """How the breakdown's activations grow: "linear, 96.0 MiB per unit of batch", or "x^1.45 (k=1.45)"."""
    if s.activations_per_unit is not None:
        return f"{s.activations.label}, {units.size(s.activations_per_unit)} per unit of {s.parameter}"
    return f"{s.activations.label} (k={s.activations.exponent:.2f})"


def _marked(s: Scaling) -> str:
    """The latency fit of a CPU's series is marked rough: its points are host-clock medians (`cpu_line`)."""
    return ROUGH if s.device.startswith("cpu-") else ""


def _round(x: float) -> int:
    """Two significant figures: a fit's extrapolation is not more precise than that."""
    if x < 100:
        return int(x)
    digits = int(math.floor(math.log10(x))) - 1
    return int(round(x, -digits))
