"""A case's detail view as labelled text: every metric, the environment, the profile, the memory breakdown.

Figures the record does not carry (a CPU has no allocator peak nor roofline; a case that was not
profiled has no operator table) come out as "n/a" or None, never as an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from perfguard import units
from perfguard.analysis.memory_verdicts import leaks
from perfguard.analysis.moved import change
from perfguard.model import REGIMES, MovedRow, Profile, Verdict, names, shown_metric
from perfguard.report import view, words, work
from perfguard.report.advice import LAUNCH_ADVICE
from perfguard.report.view import Entry

NA = "n/a"
PROFILE_ROWS = 10  # top operators shown per case


def sections(entry: Entry) -> list[tuple[str, list[tuple[str, str]]]]:
    """(section title, [(label, value)]) for every figure of the case; a section with nothing known says so."""
    r = entry.result
    if r is None:
        return []
    lat, mem, tel = r.judged_time, r.memory, r.telemetry
    d = units.duration

    def get(obj: Any, name: str) -> Any:
        return getattr(obj, name, None) if obj is not None else None

    def metric(name: str) -> Any:
        return view.metric(r, name)

    latency = [  # the median itself is in the table row and under the distribution
        ("95% CI", f"{d(lat.ci_low_ms)} – {d(lat.ci_high_ms)} ({view.ci_text(r)})" if lat else NA),
        ("mean", d(get(lat, "mean_ms"))),
        ("min / max", f"{d(lat.min_ms)} / {d(lat.max_ms)}" if lat else NA),
        ("p10 / p90", f"{d(lat.p10_ms)} / {d(lat.p90_ms)}" if lat else NA),
        ("IQR", d(get(lat, "iqr_ms"))),
        ("samples", f"{lat.n:,} ({lat.stop_reason})" if lat else str(len(r.samples_ms))),
        ("timer", r.timer or NA),
        ("cache, mode", f"{r.cache}, {r.mode}"),
    ]
    throughput = [
        ("bytes", f"{units.size(r.bytes)} ({r.bytes:,.0f} B)" if r.bytes else NA),
        ("flops", f"{r.flops:.4g}" if r.flops else NA),
        ("bandwidth", _unit(units.number(metric("gbps")), "GB/s")),
        ("of peak BW", units.percent(metric("bandwidth_util"))),
        ("of calibrated copy", units.percent(metric("copy_util"))),
        ("compute", _unit(units.number(metric("tflops"), 3), "TFLOP/s")),
        ("of peak FLOP/s", units.percent(metric("flop_util"))),
        ("intensity", _unit(_g(metric("arithmetic_intensity")), "FLOP/B")),
        ("attainable", _unit(units.number(metric("attainable_tflops"), 3), "TFLOP/s")),
        ("bound", _bound(metric("bound"))),
        ("efficiency", units.percent(metric("efficiency"))),
        ("roofs from", str(metric("roofs") or NA)),
    ]
    caller = r.timings.get("caller_time")
    launch = [
        ("judged figure", REGIMES.get(r.regime, r.regime or NA)),
        ("caller's time", f"{d(caller.summary.median_ms)} ±{caller.summary.ci_half_width_pct:.2f}% "
                         f"({caller.summary.n:,} samples of back-to-back calls)"
         if caller else NA),
        ("launch overhead", d(metric("launch_overhead_ms"))),
        ("GPU idle share", units.percent(metric("launch_overhead_share"))),
        ("samples dropped", f"{r.dropped_samples:,} (the GPU reached them before the host had queued them)"
         if r.dropped_samples else "0"),
    ]
    memory = [
        ("peak allocated", units.size(get(mem, "peak_allocated_bytes"))),
        ("peak reserved", units.size(get(mem, "peak_reserved_bytes"))),
        ("footprint", units.size(get(mem, "footprint_bytes")) + " (the most held during a call, from before setup)"
         if get(mem, "footprint_bytes") is not None else NA),
        ("retained per call", units.size(get(mem, "retained_bytes_per_call")) + (" (a leak)" if leaks(mem) else "")
         if get(mem, "retained_bytes_per_call") is not None else NA),
        ("held between calls", units.size(get(mem, "setup_allocated_bytes"))),
        ("NVML used Δ", units.size(get(mem, "nvml_used_delta_bytes"))),
        ("fragmentation", units.percent(get(mem, "fragmentation"))),
        ("alloc retries", _g(get(mem, "alloc_retries"))),
    ]
    clocks = [
        ("SM clock", _span(get(tel, "sm_clock_mhz_before"), get(tel, "sm_clock_mhz_after"), "MHz",
                           f"mean {tel.sm_clock_mhz_mean:.0f}" if tel and tel.sm_clock_mhz_mean else "")),
        ("temperature", _span(get(tel, "temperature_c_before"), get(tel, "temperature_c_after"), "°C")),
        ("power", _span(get(tel, "power_w_before"), get(tel, "power_w_after"), "W")),
        ("clock events", ", ".join(tel.throttle_reasons) or "none" if tel else NA),
        ("throttled", _yes(get(tel, "throttled")) if tel else NA),
        ("power capped", _yes(get(tel, "power_capped")) if tel else NA),
    ]
    run = [
        ("test", r.nodeid or NA),
        ("card", entry.card or r.device_uuid or NA),
        ("parameters", view.params_text(r) or "none"),
        ("setup, wall", ", ".join(d(s * 1e3) if s is not None else NA for s in (r.setup_s, r.wall_s))),
    ]
    if r.status != "ok":
        run.append(("status", r.status))
    if r.threshold is not None or r.memory_threshold is not None:
        run.append(("thresholds", f"latency {_pct(r.threshold)}, memory {_pct(r.memory_threshold)}"))
    # The judged time's section is named for what measured it: gpu_time, caller_time, a CPU's host_time.
    named = [(shown_metric(r.judged_metric, r.regime), latency), ("gate", gate(entry)), ("throughput", throughput),
             ("host and launch", launch), ("work per call", work.section(r)), ("memory", memory), ("clocks", clocks), ("run", run)]
    return [(title, items if any(v != NA for _, v in items) else [("", "n/a on this device")]) for title, items in named]


def gate(entry: Entry) -> list[tuple[str, str]]:
    """What the latency verdict rests on: the baseline's runs, the case's noise, its tolerance and what it can see."""
    v = entry.judged()
    n = v.noise if v is not None else None
    if v is None or n is None:
        return [("baseline runs", NA)]
    items = [
        ("baseline runs", str(n.runs)),
        ("run-to-run spread", f"±{n.spread_pct:.2f}% (1 s.d.)"),
        ("tolerance", f"{words.noise_pct(n.tolerance_pct, n, '±')} (threshold {v.threshold_pct:g}%)"),
        ("detects", f"{words.noise_pct(n.detectable_pct, n)} slowdowns, 19 times in 20"),
    ]
    if v.time is not None and v.time.remeasured_ms:
        measured = ", ".join(units.duration(ms) for ms in (v.current, *v.time.remeasured_ms) if ms is not None)
        items.append(("measurements", f"{measured} ({'confirmed' if v.time.confirmed else 'not confirmed'})"))
    caller = entry.verdict("caller_time")
    if caller is not None and caller.noise is not None:
        c = caller.noise
        items.append(("caller's time", f"{caller.status}: {caller.change_pct:+.1f}% against {words.noise_pct(c.tolerance_pct, c, '±')}, "
                      f"detects {words.noise_pct(c.detectable_pct, c)}" if caller.change_pct is not None else caller.status))
    return items


def message(v: Verdict) -> str:
    """A verdict's words without the "metric status: " its badge already says."""
    return words.detail(v)


def environment(entry: Entry) -> tuple[str, bool]:
    """What the environment looks like against the baseline, and whether that is worth a warning."""
    mismatches = view.environment_mismatches(entry)
    if mismatches:
        return "differs from the baseline: " + ", ".join(mismatches), True
    if any(v.status not in ("new", "missing") for v in entry.verdicts):
        return "same driver, CUDA, torch and triton as the baseline", False
    return "no baseline to compare with", False


WHERE_HEAD = ("{by}", "{calls}", "before", "after", "change", "share")


def where_tables(entry: Entry) -> list[dict[str, Any]]:
    """For each time that moved (analysis/moved.py): its `where:` line, and every row either side named as
    cells of [text, sort figure, full name], the row that moved most first; a row beyond its noise marked."""
    tables = []
    for v in entry.verdicts:
        w = v.where
        if w is None:
            continue
        rows = []
        for r in w.rows:
            before, after = words.row_figures(r, w.by)
            of_change = words.share(r, w)
            name = words.row_name(r.name, w.by)
            rows.append([[name, name, r.name], [_launches(r), r.launches_after or r.launches_before or 0, None],
                         [before, r.before, None], [after, r.after, None], [words.row_change(r, w.by), change(r), None],
                         [f"{of_change:.0f}%" if of_change is not None else NA, of_change, None], r.beyond_noise])
        kind = words.ROW_KINDS[w.by]
        head = [h.format(by=kind.nouns[0], calls=kind.calls) for h in WHERE_HEAD]
        if kind.calls is None:  # bytes at the peak: no launches
            head, rows = [head[0], *head[2:]], [[row[0], *row[2:]] for row in rows]
        tables.append({"title": f"where the {words.label(v)} moved, by {kind.nouns[0]} ({kind.what})",
                       "line": words.where_line(v), "head": head, "rows": rows})
    return tables


def _launches(r: MovedRow) -> str:
    before, after = r.launches_before, r.launches_after
    if before == after:
        return units.count(after) if after is not None else "—"
    return f"{units.count(before) if before is not None else '0'} → {units.count(after) if after is not None else '0'}"


def profile_table(entry: Entry) -> tuple[list[str], list[list[str]]] | None:
    """The profiler's top operators as (columns, rows), or None when the case was not profiled.

    Reads `CaseResult.profile`: a `Profile`'s operators, or a sequence of records (dataclasses or mappings).
    """
    value = getattr(entry.result, "profile", None)
    if value is None:
        return None
    if isinstance(value, Profile):
        value = value.ops
    if isinstance(value, Mapping):
        value = [{"operator": k, "value": v} for k, v in value.items()]
    items = [_as_dict(x) for x in list(value)[:PROFILE_ROWS]] if isinstance(value, Sequence) else []
    if not items:
        return None
    columns = list(items[0])
    return [_heading(c) for c in columns], [[_cell(c, item.get(c)) for c in columns] for item in items]


def profile_note(entry: Entry) -> dict[str, str | None] | None:
    """What goes with the profiler's table: how it was taken, kernels per call, the trace (relative to
    the report's folder) and any problem; None when the case was not profiled."""
    p = getattr(entry.result, "profile", None)
    if not isinstance(p, Profile):
        return None
    clock = "CUDA" if p.sort_by == "cuda" else "CPU"
    facts = [f"per call, over {p.calls} profiled calls, by self {clock} time"] if p.calls else []
    if p.calls and not p.ops:
        facts = [f"no operator ran in the {p.calls} profiled calls"]
    if p.kernels_per_call is not None:
        facts.append(f"{_g(p.kernels_per_call)} GPU kernels per call")
    # Only a relative path inside the report's folder becomes a link: a record's `javascript:` or
    # `https://` trace (records come from pull requests' artifacts) is named, not linked.
    if p.trace is None or names.is_report_link(p.trace):
        return {"facts": ", ".join(facts), "trace": p.trace, "problem": p.problem}
    refused = f"trace {names.shown(p.trace)} is not a path inside the report's folder: not linked"
    return {"facts": ", ".join(facts), "trace": None, "problem": "; ".join(filter(None, (p.problem, refused)))}


def breakdown(entry: Entry) -> list[tuple[str, str, float]] | None:
    """Bytes at peak by category as (category, size, share 0..1), largest first; None when not captured.

    Reads `CaseResult.memory_breakdown` (issue 4): a mapping or a dataclass of category -> bytes.
    """
    value = getattr(entry.result, "memory_breakdown", None)
    if value is None:
        return None
    parts = {k: v for k, v in _as_dict(value).items() if isinstance(v, (int, float)) and v > 0}
    total = sum(parts.values())
    if not total:
        return None
    return [(str(k).replace("_", " "), units.size(v), v / total) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])]


def breakdown_note(entry: Entry) -> str | None:
    """Where the breakdown's peak fell and how it was taken ("peak in backward at GPT.h.11.mlp;
    from the allocator history"); None when the record says neither."""
    value = getattr(entry.result, "memory_breakdown", None)
    fields = _as_dict(value) if value is not None else {}
    phase, at, method = (fields.get(name) for name in ("peak_phase", "peak_at", "method"))
    facts = []
    if phase:
        facts.append(f"peak in {phase}" + (f" at {at}" if at else "") if phase != "start" else "peak before the call")
    if method:
        facts.append(f"from the {method}")
    return "; ".join(facts) or None


def breakdown_unnamed(entry: Entry) -> str | None:
    """What the breakdown could not name and why ("unknown 1.0 MiB, 12.5% of the peak: 1.0 MiB in 1
    block live before the call, ..."); None when it named the whole peak or says nothing."""
    value = getattr(entry.result, "memory_breakdown", None)
    fields = _as_dict(value) if value is not None else {}
    unknown, reason = fields.get("unknown"), fields.get("unnamed_reason")
    peak = getattr(value, "peak_bytes", None)
    if not isinstance(unknown, int) or unknown <= 0 or not peak:
        return None
    said = f"unknown {units.size(unknown)}, {units.percent(unknown / peak)} of the peak"
    return f"{said}: {reason}" if reason else f"{said} (the record says not why: written before perfguard said it)"


def breakdown_missing(entry: Entry) -> str:
    """Why a case has no breakdown: the profiler's reason when it was asked for and failed, else how to ask."""
    error = getattr(getattr(entry.result, "memory_breakdown", None), "error", None)
    return str(error) if error else "not captured (declare memory_breakdown=True on training-step cases)"


def _as_dict(x: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    if isinstance(x, Mapping):
        return {str(k): v for k, v in x.items()}
    return {"value": x}


def _heading(column: str) -> str:
    """A field name as a column heading; the unit goes with each value (see _cell)."""
    for suffix in ("_ms", "_bytes"):
        column = column.removesuffix(suffix)
    return column.replace("_", " ")


def _cell(column: str, value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if column.endswith("_ms"):
            return units.duration(value)
        if column.endswith("_bytes"):
            return units.size(value)
    return _g(value)


def _bound(bound: Any) -> str:
    if bound == "launch":  # what to do about it, since no faster kernel will help
        return f"launch-bound; {LAUNCH_ADVICE}"
    return str(bound or NA)


def _g(x: Any) -> str:
    if x is None:
        return NA
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _unit(text: str, unit: str) -> str:
    return text if text == NA else f"{text} {unit}"


def _span(before: Any, after: Any, unit: str, extra: str = "") -> str:
    if before is None and after is None:
        return NA
    text = f"{_g(before)} → {_g(after)} {unit}"
    return f"{text} ({extra})" if extra else text


def _yes(flag: Any) -> str:
    return NA if flag is None else "yes" if flag else "no"


def _pct(x: float | None) -> str:
    return "default" if x is None else f"{x:g}%"
