"""A verdict in words: the one place that turns a verdict's data (model/verdicts.py) into the line a
person reads.

Every surface (the terminal, a test's failure, Markdown, HTML, `perfguard show`, `compare` and `ab`)
takes a verdict's words from here, so that they say the same thing everywhere; nothing reads them
back. A line is "metric status: what moved, against what noise; what to do", built from the
verdict's reason code (one template a code) and its figures.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from perfguard import defaults, units
from perfguard.analysis.counting import SHOWN_NAMES, figure, short_name
from perfguard.analysis.moved import change
from perfguard.analysis.memory_verdicts import RETAINED_FLOOR_BYTES
from perfguard.analysis.noise import judges
from perfguard.model import (COMPILE_KINDS, COUNTER_KINDS, COUNTER_LABELS, TIME_METRICS, MovedRow, Noise, TimeEvidence, Verdict,
                             Where, shown_metric, time_label)
from perfguard.model.names import shown
from perfguard.report import steps
from perfguard.report.commands import Invocation

DEFAULT = Invocation()
WHERE_WIDTH = 100  # a `where:` line fits a terminal of this many columns (the trace's path may run past it)


def line(v: Verdict, run: Invocation = DEFAULT) -> str:
    """The verdict's whole line: "gpu_time regressed: 1.000 ms → 1.200 ms (+20.0%), outside ±2.0%: ..."."""
    return f"{name(v)} {v.status}: {detail(v, run)}"


def name(v: Verdict) -> str:
    """The verdict's figure by what was measured: its metric, "host_time" for a CPU's device time."""
    return shown_metric(v.metric, v.kind_of_time)


def label(v: Verdict) -> str:
    """The verdict's figure in words: "GPU time", "host time", "the caller's time", "peak memory"."""
    return time_label(v.metric, v.kind_of_time) if v.metric in TIME_METRICS else v.metric.replace("_", " ")


def detail(v: Verdict, run: Invocation = DEFAULT) -> str:
    """The line without the "metric status: " that a badge beside it already says."""
    if v.metric in COUNTER_KINDS:
        text = f"{_counted(v)} against {_against(v)}"
    else:
        text = _what(v)
        if v.compared:
            text += f" against {_against(v)}"
            text += f" ({_bound(v)})"
    said = [s for s in (_held(v), _remeasured(v), *steps.said(v, run), _accepted(v)) if s]
    text += "".join(f"; {s}" for s in said)
    if v.env_mismatch and v.reason != "other_model":  # that one's words say what differs
        text += f"; environment differs from the {'base' if v.paired else 'baseline'}: {', '.join(v.env_mismatch)}"
    return text


def _against(v: Verdict) -> str:
    """The file a verdict was judged against, and its GPU model where it is another's than the run's."""
    file = v.baseline_file or ('the base' if v.paired else 'the baseline')
    return f"{file} of {v.baseline_model}, another GPU model" if v.baseline_model else file


def _accepted(v: Verdict) -> str:
    """What an acceptance entry accepted of it: "accepted up to 2.090 ms by baselines/accepted-changes.json:
    'fused'", or, for a regression past it, how much that was. A record written before a verdict kept the
    ceiling says the reason alone."""
    if v.accepted_ceiling is None:
        return f"accepted: {shown(v.accepted_reason, 200)}" if v.accepted_reason is not None else ""
    most = steps.amount(v.metric, v.accepted_ceiling)
    if v.status == "accepted":
        return f"accepted up to {most} by {v.accepted_file}: {shown(v.accepted_reason, 200)}"
    return f"more than the {most} that {v.accepted_file} accepts"


def _bound(v: Verdict) -> str:
    if v.metric == "retained_memory":
        return f"any growth past {RETAINED_FLOOR_BYTES} B a call fails"
    return f"threshold {v.threshold_pct:g}%"


# --- times and memory ----------------------------------------------------------------------------


def _what(v: Verdict) -> str:
    if v.metric in TIME_METRICS:
        return _TIME.get(v.reason, _plain)(v)
    return _MEMORY.get(v.reason, _plain)(v)


def _figures(v: Verdict) -> str:
    """"1.000 ms → 1.200 ms (+20.0%)", named when it is not the device's time (the GPU's, a CPU's host time),
    with a change of how it was timed."""
    text = f"{_ms(v.baseline)} → {_ms(v.current)}" + (f" ({v.change_pct:+.1f}%)" if v.change_pct is not None else "")
    if v.metric != "gpu_time":
        text = f"{label(v)} {text}"
    regimes = v.time.regimes if v.time else ()
    if len(regimes) == 2:
        text += f", timed as {regimes[1]} (the baseline: {regimes[0]}), each figure judged against its own kind"
    return text


def _ms(ms: float | None) -> str:
    return units.precise_duration(ms) if ms is not None and math.isfinite(ms) else "n/a"


def _noise(v: Verdict) -> str:
    """What the tolerance came from: whose runs (or ab's rounds), their spread, and what widened it."""
    n = v.noise
    if n is None:
        return "no runs judged it"
    if v.paired:
        floor = " (a prior, the floor while rounds are few)" if n.floored else ""
        said = (f"round-to-round spread ±{n.spread_pct:.2f}%{floor} over {units.plural(n.runs, 'round')}, "
                "paired on one card")
    else:
        said = (f"judged by {judges(n)}: one run shows no spread of its own, so ±{n.spread_pct:.2f}% is assumed "
                 "until more runs measure it" if n.runs == 1 else f"judged by {judges(n)}, run-to-run spread ±{n.spread_pct:.2f}%")
        if n.card_pct:
            said += f", ±{n.card_pct:.1f}% {n.source} to {n.source}"
        if n.floor_pct:
            said += f", +{n.floor_pct:.1f}% for a {n.source} it has not seen"
        if n.left_out:
            said += f", {units.plural(len(n.left_out), 'run')} far from the others left out (" + ", ".join(
                f"{shown(r.recorded_at)} on {shown(r.source or 'an unknown machine')}: {r.change_pct:+.1f}%"
                for r in n.left_out) + ")"
    return said + ("" if n.past_bound else f"; smallest detectable change {n.detectable_pct:.1f}%")


def noise_pct(pct: float, n: Noise, sign: str = "") -> str:
    """A tolerance or smallest detectable change of `n` as every surface shows it: "±2.3%", or where the
    tolerance went past the widest decided by (analysis/decide.py), that bound: "past ±1000%"."""
    return f"past {sign}{pct:g}%" if n.past_bound else f"{sign}{pct:.1f}%"


def _unbounded(v: Verdict) -> str:
    if v.noise is None:  # no rule gives it so (a hand-edited record)
        return _plain(v)
    return (f"{_figures(v)}: too few {'rounds' if v.paired else 'runs'} to decide: the tolerance would be "
            f"{noise_pct(v.noise.tolerance_pct, v.noise, '±')} ({_noise(v)})")


def _outside(v: Verdict) -> str:
    return f"{_figures(v)}, outside ±{v.tolerance_pct or 0:.1f}%: {_noise(v)}"


def _within(v: Verdict) -> str:
    return f"{_figures(v)}, within ±{v.tolerance_pct or 0:.1f}%: {_noise(v)}"


def _blind(v: Verdict) -> str:
    tol, thr = v.tolerance_pct or 0, v.threshold_pct
    if v.paired:
        return f"{_figures(v)}, within ±{tol:.1f}%, but a {thr:g}% change could have hidden in it: {_noise(v)}"
    return (f"{_figures(v)}, within ±{tol:.1f}%, wider than the {thr:g}% threshold, so a change of {thr:g}% would pass "
            f"unseen: {_noise(v)}")


def _throttled(v: Verdict) -> str:
    t = v.time or TimeEvidence()
    where = " and ".join({"baseline": "the baseline", "run": "this run", "rounds": "its rounds"}.get(w, w) for w in t.throttled_in)
    why = f" ({', '.join(t.throttle_reasons)})" if t.throttle_reasons else ""
    return f"{_figures(v)} measured while throttled in {where}{why}, which may account for it"


def _imprecise(v: Verdict) -> str:
    own = v.time.own_half_width_pct if v.time else None
    return (f"{_figures(v)}, ±{own or 0:.1f}% within this run against a tolerance of "
            f"±{v.tolerance_pct or 0:.1f}%: too noisy to decide")


def _missing(v: Verdict) -> str:
    how = f"was not measured in this run (status {v.status_in})" if v.status_in else "did not run"
    return f"in {v.baseline_file or 'the baseline'} ({_ms(v.baseline)}) but {how}"


def _new_case(v: Verdict) -> str:
    return f"{_ms(v.current)}, not in {v.baseline_file or 'the baseline'} yet"


def _other_model(v: Verdict) -> str:
    file = v.baseline_file or "the baseline"
    said = (f"not comparable: another GPU model ({v.baseline_model}), so not judged against {file}: times depend "
            "on the model")
    if v.env_mismatch:
        return (f"{_ms(v.current)}, {said}; nothing is judged across models where more than the model differs: "
                f"{', '.join(v.env_mismatch)}")
    return (f"{_ms(v.current)}, {said}; its counters but kernels and memsets, and its memory, are judged against "
            f"{file} (same compute capability, SM count and software)")


def _new_kind(v: Verdict) -> str:
    said = label(v)
    t = v.time or TimeEvidence()
    how = _figures(v).split(", ", 1)[1] if len(t.regimes) == 2 else f"timed as {t.kind_of_time}"
    return f"{said} {_ms(v.current)}, {how}: the baseline holds no {said} to compare it with"


def _plain(v: Verdict) -> str:
    """A verdict whose reason has no words for its kind of figure (no rule gives it: a hand-edited record):
    its figures."""
    if v.metric in TIME_METRICS:
        tol = f", tolerance ±{v.tolerance_pct:.1f}%" if v.tolerance_pct is not None else ""
        return _figures(v) + tol
    return _sizes(v)


def _sizes(v: Verdict) -> str:
    change = f"{v.change_pct:+.1f}%" if v.change_pct is not None else units.size((v.current or 0) - (v.baseline or 0))
    return f"{units.size(v.baseline)} → {units.size(v.current)} ({change}, deterministic)"


def _held(v: Verdict) -> str:
    """What stays allocated between calls, where it moved with the footprint."""
    held = v.memory.held_bytes if v.memory else None
    if not held:
        return ""
    old, new = held
    return (f"held between calls {units.size(old)} → {units.size(new)}: the setup's tensors, or what each call "
            "keeps for the next (gradients kept between steps, optimizer state, caches)")


def _retained(v: Verdict) -> str:
    figures = f"{units.size(v.baseline)} → {units.size(v.current)} retained per call"
    if v.status != "regressed":
        return f"{figures} (deterministic)"
    what = ("the call keeps what it allocates: a leak" if v.reason == "leak"
            else "the call keeps more of what it allocates")
    return (f"{figures} ({what}, which grows a long run by {units.size((v.current or 0) - (v.baseline or 0))} every call "
            "until it runs out of memory)")


def _both_leak(v: Verdict) -> str:
    retained = v.memory.retained_bytes if v.memory else None
    return (f"{units.size(v.baseline)} → {units.size(v.current)}; the case retains {units.size(retained)} per "
            "call here and in the baseline, so its footprint grows with the calls made; its retained memory is judged instead")


def _new_figure(v: Verdict) -> str:
    per_call = " per call" if v.metric == "retained_memory" else ""
    return (f"{units.size(v.current)}{per_call}, not in {v.baseline_file or 'the baseline'} yet "
            "(recorded before perfguard measured it)")


def _no_spread(v: Verdict) -> str:
    return "measured in fewer than two rounds on both sides, so no round-to-round spread to judge it by"


def _compiled_host(v: Verdict) -> str:
    return (f"{_figures(v)}, outside ±{v.tolerance_pct:.1f}%: not failed, as the host's time of a compiled call "
            "(dynamo's guards and frame) moves between processes by more than a few runs can bound; its GPU and "
            "busy time and its compile counters judge what it does")


_TIME: dict[str, Callable[[Verdict], str]] = {
    "outside": _outside, "within": _within, "blind": _blind, "few_samples": lambda v: f"{_figures(v)} from too few samples to decide",
    "throttled": _throttled, "imprecise": _imprecise, "not_confirmed": _outside, "did_not_run": _missing,
    "not_measured": _missing, "not_in_baseline": _new_case, "kind_not_in_baseline": _new_kind, "other_model": _other_model, "no_spread": _no_spread,
    "accepted": _outside, "compiled_host": _compiled_host, "unbounded": _unbounded,
}
def _bytes(v: Verdict) -> str:
    return _retained(v) if v.metric == "retained_memory" else _sizes(v)


_MEMORY: dict[str, Callable[[Verdict], str]] = {
    "outside": _bytes, "within": _bytes, "leak": _retained, "both_leak": _both_leak,
    "figure_not_in_baseline": _new_figure, "accepted": _bytes,
}


# --- counters --------------------------------------------------------------------------------------


def _counted(v: Verdict) -> str:
    """"kernels per call 5 → 6: +1 × triton_poi_fused_add_0", or for syncs "1 new sync per call: ..."."""
    kind, before, after = v.metric, v.baseline or 0.0, v.current or 0.0
    counts = v.counters.counts if v.counters else ()
    if kind == "syncs":
        named = [f"{units.count(abs(c.delta))} × {c.name}" + (f" ({c.cause})" if c.cause else "") for c in counts]
        grown = sum(c.delta for c in counts if c.delta > 0)
        head = (f"{units.count(after - before)} new sync{'s' if after - before != 1 else ''} per call" if grown and after > before
                else f"syncs per call {units.count(before)} → {units.count(after)}")
    else:
        named = [f"{'+' if c.delta > 0 else '−'}{figure(kind, abs(c.delta))} × {short_name(c.name) if kind == 'kernels' else c.name}"
                 + (f" (at {c.cause})" if c.cause else "") for c in counts]
        # torch.compile's counters are the whole case's (measure/compiling.py), the others one call's.
        per = " in the case" if kind in COMPILE_KINDS else " per call"
        head = f"{COUNTER_LABELS.get(kind, (kind, kind))[1]}{per} {figure(kind, before)} → {figure(kind, after)}"
    return f"{head}: {listed(named)}" if named else head


def listed(names: Sequence[str], shown_names: int = SHOWN_NAMES) -> str:
    """The first few names, then "and N more": a line stays readable; the HTML lists them all."""
    more = len(names) - shown_names
    return ", ".join(names[:shown_names]) + (f" and {more} more" if more > 0 else "")


# --- re-measurements -------------------------------------------------------------------------------


def _remeasured(v: Verdict) -> str:
    t = v.time or TimeEvidence()
    if t.not_remeasured == "spent":
        return f"not re-measured: this run's allowance of {defaults.CONFIRM_CASES} re-measured cases is spent"
    if t.not_remeasured == "failed":
        return f"its re-measurement failed: {t.remeasure_error or 'an error'}"
    if t.confirmed is None or not v.baseline:
        return ""
    medians = [m for m in (v.current, *t.remeasured_ms) if m is not None]
    moved = [100.0 * (m / v.baseline - 1.0) for m in medians]
    changes = ", ".join(f"{c:+.1f}%" for c in moved)
    if t.confirmed:
        return f"confirmed by {len(t.remeasured_ms)} re-measurements (the {len(medians)} measurements: {changes})"
    if v.status != "unstable":
        return f"a first measurement looked slower; not confirmed ({changes})"
    tol = v.tolerance_pct
    outside = sum(c > tol for c in moved) if tol is not None else 0
    said = f"not confirmed: {outside} of the {len(moved)} measurements ({changes}) are outside the tolerance ±{tol or 0:.1f}%"
    spread = max(moved) - min(moved) if moved else 0.0
    if tol is None or not moved:
        return said
    if spread < tol:
        return (f"{said}; they agree with each other within {spread:.1f} points, so the change sits at the edge of what "
                "this case's noise allows (more baseline runs narrow the tolerance)")
    return f"{said}; they disagree with each other by {spread:.1f} points"


# --- where a time moved (analysis/moved.py) --------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RowKind:
    """How the rows of a Where read, by what they are (Where.by)."""

    nouns: tuple[str, str]  # one, several
    what: str  # what a row's figures are
    in_bytes: bool  # else ms a call
    calls: str | None  # what a row's launches (MovedRow.launches_*) are, where it has them
    kernel: bool = False  # a kernel's name, shortened (analysis.counting.short_name)


ROW_KINDS: dict[str, RowKind] = {
    "kernel": RowKind(("kernel", "kernels"), "a call", in_bytes=False, calls="launches a call", kernel=True),
    "operator": RowKind(("operator", "operators"), "a call", in_bytes=False, calls="calls a call"),
    "category": RowKind(("category", "categories"), "bytes at the peak", in_bytes=True, calls=None),
    "allocation": RowKind(("allocating operator", "allocating operators"), "bytes allocated a call", in_bytes=True,
                          calls="calls a call"),
}


def row_name(name: str, by: str) -> str:
    return short_name(name) if ROW_KINDS[by].kernel else name


def where_line(v: Verdict, trace: str | None = None) -> str | None:
    """"where: gemm_kernel<…> 1.200 ms → 1.450 ms (+21%, 96% of the change); 1 more moved":
    the row that moved most beyond its noise, or that the change is spread; times a call; the profile's
    trace where one was written. None where there is nothing to say (a time that did not move, no split)."""
    w = v.where
    if w is None:
        return None
    kind = ROW_KINDS[w.by]
    of = f"{len(w.rows)} {kind.nouns[len(w.rows) != 1]}"
    tail = f"; trace: {trace}" if trace else ""
    culprits = w.culprits
    if v.change_pct and w.moved * v.change_pct < 0:
        return (f"where: its {of} moved the other way in all ({_signed(w.moved, w.by)} a call): they do not say "
                f"where this change came from{tail}")
    if not culprits:
        if kind.in_bytes:
            return f"where: spread over {of}, none by more than the allocator's rounding{tail}"
        return f"where: spread over {of}, none beyond its noise ({w.noise_pct:.3g}% of each one's time){tail}"
    more = f"; {len(culprits) - 1} more moved" if len(culprits) > 1 else ""
    after = f" {_row_change(culprits[0], w)}{more}"
    room = WHERE_WIDTH - len("where: ") - len(after)
    return f"where: {_fit(row_name(culprits[0].name, w.by), room)}{after}{tail}"


def row_figures(row: MovedRow, by: str) -> tuple[str, str]:
    """A row's figure before and after (a time a call; bytes), as the reports show them: "—" where it did
    not run, "in other" where it ran but was too small to be named."""
    def side(x: float | None, launches: float | None) -> str:
        return row_figure(x, by) if x is not None else ("in other" if launches else "—")

    return side(row.before, row.launches_before), side(row.after, row.launches_after)


def row_figure(x: float, by: str) -> str:
    return units.size(x) if ROW_KINDS[by].in_bytes else _ms(x)


def row_change(row: MovedRow, by: str) -> str:
    """"+25.0 µs", "+512.0 MiB": a row's change."""
    return _signed(change(row), by)


def _signed(d: float, by: str) -> str:
    return ("+" if d >= 0 else "−") + units.size(abs(d)) if ROW_KINDS[by].in_bytes else f"{d * 1e3:+.1f} µs"


def share(row: MovedRow, w: Where) -> float | None:
    """A row's share of the whole change, percent (None where nothing moved overall)."""
    return 100.0 * change(row) / w.moved if w.moved else None


def _row_change(row: MovedRow, w: Where) -> str:
    """"1.200 ms → 1.450 ms (+21%, 96% of the change)", or "appeared, 10.00 µs (...)", "vanished, was ..."."""
    of_change = share(row, w)
    part = f"{of_change:.0f}% of the change" if of_change is not None and 0 < of_change <= 999 else ""
    if row.before is None and not row.launches_before:
        return f"appeared, {row_figure(row.after or 0.0, w.by)}" + (f" ({part})" if part else "")
    if row.after is None and not row.launches_after:
        return f"vanished, was {row_figure(row.before or 0.0, w.by)}" + (f" ({part})" if part else "")
    before, after = row_figures(row, w.by)
    relative = f"{100 * (row.after / row.before - 1):+.0f}%" if row.before and row.after else ""
    said = ", ".join(x for x in (relative, part) if x)
    return f"{before} → {after}" + (f" ({said})" if said else "")


def _fit(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(1, room - 1)] + "…"
