"""Records and baselines of older schemas, rewritten as the current one: what `perfguard migrate` does.

No read of a file goes through here: codec.py reads the current schema alone, and refuses an older one
with the command that runs this. A file is parsed as plain JSON, brought to the current schema's JSON
(as `to_jsonable` and, for a baseline, `layout.pack` lay it out), and then read by codec.py like any
file, so that nothing here can hand on what the reader would refuse. Nothing here guesses a figure:
what an older file did not keep stays unknown (a run's sample count, its regime).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from perfguard.errors import BaselineError
from perfguard.model import codec, layout
from perfguard.model.baseline import BaselineFile, kept_entry, run_summary
from perfguard.model.checks import REFUSED
from perfguard.model.names import shown
from perfguard.model.kinds import TIME_METRICS
from perfguard.model.records import SCHEMA_VERSION, CaseResult, RunRecord, drift_pct

# Versions 1-3 called the GPU time "latency" (a word that also named the judged figure, any time
# summary, the launch-bound regime and the caller's time); version 4 gives each its own name.
TIME_NAMES = {"latency": "gpu_time", "caller_latency": "caller_time"}


@dataclasses.dataclass(frozen=True)
class Migrated:
    """A file as the current schema has it: `migrated` (a RunRecord or BaselineFile) and what changed."""

    version: int  # the schema it was written in
    migrated: RunRecord | BaselineFile
    dropped_verdicts: int = 0  # a record's verdicts written before a verdict kept its reason


def migrate(text: str, source: str) -> Migrated:
    """The record or baseline in `text` (of any schema perfguard wrote) as the current schema's: built by
    the model's types from the upgraded JSON (a field an older version wrote at its default is welcome
    there), and read back by codec.py as it will be written."""
    data = _parsed(text, source)
    version = data.get("schema_version")
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        raise BaselineError(f"{source}: schema_version {shown(version)} is none that perfguard wrote (1 to "
                            f"{SCHEMA_VERSION}); use the perfguard version that wrote it")
    if version == SCHEMA_VERSION:  # nothing to migrate: read as it is
        read = codec.loads_baseline if "cases" in data else codec.loads_record
        return Migrated(version, read(text, source))
    if "cases" in data and "device" in data:
        migrated: RunRecord | BaselineFile = _baseline(data, version, source)
        codec.loads_baseline(codec.dumps(migrated), source)
        return Migrated(version, migrated)
    if "results" in data or "created_at" in data:
        upgraded, dropped = _record(data, version)
        record = codec.from_jsonable(RunRecord, upgraded, source)
        codec.loads_record(codec.dumps(record), source)
        return Migrated(version, record, dropped)
    raise BaselineError(f"{source}: neither a run record nor a baseline file; pass reports/perfguard.json or a file "
                        "from baselines/")


def _parsed(text: str, source: str) -> dict[str, Any]:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            raise BaselineError(f"{source}: a key appears twice in one object; {REFUSED}")
        return obj

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except ValueError as exc:
        raise BaselineError(f"{source}: not valid JSON ({exc}); restore it from version control") from None
    if not isinstance(data, dict):
        raise BaselineError(f"{source}: expected a JSON object at the top")
    return data


# --- records ------------------------------------------------------------------------------------------


def _record(data: dict[str, Any], version: int) -> tuple[dict[str, Any], int]:
    """A run record of `version` as the current version's JSON, and how many verdicts it dropped.
    Version 1 verdicts carried a rank test's p-value and "confidence", which within-run samples cannot
    support, and versions 1-3 their words; none kept its reason, which every verdict now has: they are
    dropped (`perfguard compare` judges the record's results again). Versions 4 to 6 kept a verdict's
    evidence as flat fields beside its figures (`_verdict`)."""
    data = {"status": "complete", **data, "schema_version": SCHEMA_VERSION}  # one finished before it was said
    dropped = 0
    if version <= 3:
        dropped = len(data.pop("verdicts", None) or ())
    elif isinstance(data.get("verdicts"), list):
        data["verdicts"] = [_verdict(v) for v in data["verdicts"]]
    if version <= 4 and isinstance(data.get("results"), list):
        data["results"] = [_result(r) for r in data["results"]]
    return data, dropped


# Schema 6's flat fields of a verdict, by the evidence they are now: {old name: new name}.
NOISE_FIELDS = {"baseline_runs": "runs", "noise_pct": "spread_pct", "tolerance_pct": "tolerance_pct",
                "detectable_pct": "detectable_pct", "floored": "floored", "judged_by": "judged_by", "judged_sources": "sources",
                "source": "source", "own_runs": "own_runs", "card_pct": "card_pct", "floor_pct": "floor_pct",
                "left_out": "left_out"}
TIME_FIELDS = ("paired", "own_half_width_pct", "throttled_in", "throttle_reasons", "regimes", "kind_of_time",
               "remeasured_ms", "confirmed", "not_remeasured", "remeasure_error")
MEMORY_FIELDS = ("held_bytes", "retained_bytes")
COUNTER_FIELDS = ("counts", "allowance", "allowed_more")


def _verdict(verdict: Any) -> Any:
    """A verdict of schema 4 to 6 as schema 7 keeps it: its core, and the evidence of its kind of figure.
    The noise's figures those schemas did not keep (the runs' centre, the predicted and observed spread,
    the prior) stay unknown."""
    if not isinstance(verdict, dict):
        return verdict
    flat = {k: v for k, v in verdict.items() if k != "baseline_runs" or verdict.get("tolerance_pct") is not None}
    out = {k: v for k, v in flat.items() if k not in (*NOISE_FIELDS, *TIME_FIELDS, *MEMORY_FIELDS, *COUNTER_FIELDS)}
    noise = {new: flat[old] for old, new in NOISE_FIELDS.items() if old in flat}
    time = {name: flat[name] for name in TIME_FIELDS if name in flat}
    if flat.get("tolerance_pct") is not None:
        time["noise"] = noise
    if time or verdict.get("metric") in TIME_METRICS and verdict.get("status") not in ("new", "missing"):
        out["time"] = time
    for group, names in (("memory", MEMORY_FIELDS), ("counters", COUNTER_FIELDS)):
        evidence = {name: flat[name] for name in names if name in flat}
        if evidence:
            out[group] = evidence
    return out


# --- baselines ----------------------------------------------------------------------------------------


def _baseline(data: dict[str, Any], version: int, source: str) -> BaselineFile:
    """A baseline of `version` as the current schema's, each case as a write keeps it (model.kept_entry)."""
    if version == 6:  # the layout of 7: read as it is
        baseline = codec.loads_baseline(json.dumps({**data, "schema_version": SCHEMA_VERSION}), source)
        return dataclasses.replace(baseline, cases={k: kept_entry(e) for k, e in baseline.cases.items()})
    cases = data.get("cases")
    if not isinstance(cases, dict):
        raise BaselineError(f"{source}: its `cases` should be an object; {REFUSED}")
    table = data.get(layout.SESSIONS) if version == 5 else None
    entries = {key: _entry(entry, key, version, table, source) for key, entry in cases.items()}
    unpacked = {**{k: v for k, v in data.items() if k != layout.SESSIONS}, "cases": entries, "schema_version": SCHEMA_VERSION}
    baseline = codec.from_jsonable(BaselineFile, unpacked, source)
    for key, entry in baseline.cases.items():
        if entry.result.id != key:
            raise BaselineError(f"{source}: case {shown(key)} holds the result of case {shown(entry.result.id)}; {REFUSED}")
    return dataclasses.replace(baseline, cases={k: kept_entry(e) for k, e in baseline.cases.items()})


def _entry(entry: Any, key: str, version: int, table: Any, source: str) -> Any:
    if not isinstance(entry, dict):
        return entry
    result = entry.get("result")
    entry = {**entry, "result": result if version == 5 else _result(result)}
    if version == 5:
        entry["runs"] = _unpacked_runs(entry.get("runs"), table, f"{source}: case {shown(key)}")
    elif version == 1:
        # A version-1 entry is one run: its result. It becomes the first of the case's runs.
        built = codec.from_jsonable(CaseResult, entry["result"], f"{source}: case {shown(key)}")
        entry["runs"] = [codec.to_jsonable(run_summary(built, entry.get("recorded_at", ""), entry.get("commit")))]
    else:
        regime = result.get("regime") if isinstance(result, dict) else None
        entry["runs"] = [_run(run, regime) for run in entry.get("runs") or ()]
    return entry


def _unpacked_runs(columns: Any, table: Any, where: str) -> list[dict[str, Any]]:
    """Schema 5's runs, columns over its sessions table, as a list of run objects."""
    if not isinstance(columns, dict) or not isinstance(columns.get(layout.SESSION), list) or not isinstance(table, list):
        raise BaselineError(f"{where}: its runs should be columns over the file's `{layout.SESSIONS}`; {REFUSED}")
    rows = columns[layout.SESSION]
    n = len(rows)

    def cells(column: Any) -> list[Any]:
        return column if isinstance(column, list) and len(column) == n else [column] * n

    try:
        out = [{f: table[i][f] for f in layout.SESSION_FIELDS if f in table[i]} for i in rows]
    except (TypeError, IndexError, KeyError):
        raise BaselineError(f"{where}: a run names no row of `{layout.SESSIONS}`; {REFUSED}") from None
    for name, column in columns.items():
        if name == layout.SESSION:
            continue
        if name != layout.TIMINGS:
            for run, value in zip(out, cells(column)):
                if value is not None:
                    run[name] = value
            continue
        for metric, fields in (column.items() if isinstance(column, dict) else ()):
            for field, column_of in (fields.items() if isinstance(fields, dict) else ()):
                for run, value in zip(out, cells(column_of)):
                    if value is not None:
                        run.setdefault(layout.TIMINGS, {}).setdefault(metric, {})[field] = value
    return [{**{k: v for k, v in run.items() if k != layout.TIMINGS}, **_times(run.get(layout.TIMINGS, {}))} for run in out]


def _renamed(timings: Any) -> Any:
    return {TIME_NAMES.get(k, k): v for k, v in timings.items()} if isinstance(timings, dict) else timings


def _metrics(metrics: Any) -> Any:
    """Version 3's `eager_latency_ms` is the caller's time (`caller_ms`); its bound "latency" is "launch"."""
    if not isinstance(metrics, dict):
        return metrics
    metrics = dict(metrics)
    if "eager_latency_ms" in metrics:
        metrics["caller_ms"] = metrics.pop("eager_latency_ms")
    if metrics.get("bound") == "latency":
        metrics["bound"] = "launch"
    return metrics


def _result(result: Any) -> Any:
    """Schema 2's parallel fields (`latency`/`samples_ms`, `caller`/`caller_samples_ms`) as `timings`.
    In the caller regime `latency` was the caller's time, and `caller` the same figure again."""
    if not isinstance(result, dict):
        return result
    result = {k: v for k, v in result.items() if v is not None or k not in ("metrics", "caller")}
    if "timings" in result:
        return {**result, "timings": _drifts(_renamed(result["timings"])),
                **({"metrics": _metrics(result["metrics"])} if "metrics" in result else {})}
    if "metrics" in result:
        result["metrics"] = _metrics(result["metrics"])
    latency, samples = result.pop("latency", None), result.pop("samples_ms", [])
    caller, caller_samples = result.pop("caller", None), result.pop("caller_samples_ms", [])
    timings: dict[str, Any] = {}
    if result.get("regime") == "caller":
        if latency is not None:
            timings["caller_time"] = {"summary": latency, "samples_ms": samples}
    else:
        if latency is not None:
            timings["gpu_time"] = {"summary": latency, "samples_ms": samples}
        if caller is not None:
            timings["caller_time"] = {"summary": caller, "samples_ms": caller_samples}
    result["timings"] = _drifts(timings)
    return result


def _drifts(timings: Any) -> Any:
    """Schema 4 and older took a run's drift from the samples a file kept; schema 5 keeps it in the summary
    (of every sample), and keeps fewer samples. Taken here from what the file kept, so that a migrated
    baseline judges as it did."""
    if not isinstance(timings, dict):
        return timings
    out = {}
    for metric, timing in timings.items():
        summary, samples = (timing.get("summary"), timing.get("samples_ms")) if isinstance(timing, dict) else (None, None)
        if (isinstance(summary, dict) and "drift_pct" not in summary and isinstance(samples, list)
                and all(type(x) in (int, float) and math.isfinite(x) for x in samples)):
            timing = {**timing, "summary": {**summary, "drift_pct": drift_pct(samples)}}
        out[metric] = timing
    return out


def _run(run: Any, regime: Any) -> Any:
    """A run summary of schema 4 or older, its times as the model keeps them (medians, and the samples
    behind each). A schema-2 run's median was the judged figure, the caller's time beside it: a run whose
    two medians are the same figure was timed in the caller regime (its caller's time was its judged
    one), whatever the entry's newest result says; one without a caller's time, by the entry's regime."""
    if not isinstance(run, dict):
        return run
    run = dict(run)
    timings = run.pop(layout.TIMINGS, None)
    if timings is None:
        median, n = run.pop("median_ms", None), run.pop("n", None)
        caller = run.pop("caller_median_ms", None)
        for name in ("ci_half_pct", "caller_ci_half_pct"):  # a run's own half-width: no verdict read it
            run.pop(name, None)
        judged = "caller_time" if (caller == median if caller is not None else regime == "caller") else "gpu_time"
        timings = {judged: {"median_ms": median, "n": n}}
        if caller is not None and judged == "gpu_time":
            timings["caller_time"] = {"median_ms": caller}
    return {**run, **_times(_renamed(timings))}


def _times(timings: Any) -> dict[str, Any]:
    """A run's `timings` as older files wrote them ({metric: {median_ms, n, ci_half_pct}}) as the model's
    medians and sample counts."""
    if not isinstance(timings, dict):
        return {"medians_ms": timings}  # refused by the read, naming it
    medians = {m: t.get("median_ms") for m, t in timings.items() if isinstance(t, dict)}
    counts = {m: t["n"] for m, t in timings.items() if isinstance(t, dict) and t.get("n") is not None}
    return {"medians_ms": {m: v for m, v in medians.items() if v is not None}, "sample_counts": counts}
