"""Older schema versions of records and baselines, brought to the current one as parsed JSON.

Called by codec.py only, before the strict parse, so that a version-1 or version-2 file (the
`baselines/nvidia-h200.json` committed before schema 3, say) loads as if it had been written now and
is written back as SCHEMA_VERSION at its next update. Nothing here guesses a figure: what an older
file did not keep stays unknown (a run's sample count, its regime).
"""

from __future__ import annotations

import math
from typing import Any

from perfguard.model.records import SCHEMA_VERSION, drift_pct


def record(data: dict[str, Any], version: int) -> dict[str, Any]:
    """A run record of `version` as the current version's JSON."""
    if version >= 5:  # 6 changed baselines only
        return {**data, "schema_version": SCHEMA_VERSION}
    data = dict(data)
    # Version 1 verdicts carried a rank test's p-value and "confidence", which within-run samples
    # cannot support; versions 1-3 carried their words (`message`), which report/words.py now renders
    # from the figures. Both are dropped, the rest of the verdict kept as it was judged; its reason,
    # which those versions did not keep, reads "legacy".
    verdicts = data.get("verdicts")
    if isinstance(verdicts, list):
        data["verdicts"] = [_verdict({k: v for k, v in item.items() if k not in ("p_value", "confidence", "message")})
                            if isinstance(item, dict) else item for item in verdicts]
    results = data.get("results")
    if isinstance(results, list):
        data["results"] = [_result(r) for r in results]
    data["schema_version"] = SCHEMA_VERSION
    return data


def baseline(data: dict[str, Any], version: int) -> dict[str, Any]:
    """A baseline file of `version` as the current version's JSON (a version-1 entry's runs are made
    from its result by the codec, once the result is parsed)."""
    if version == SCHEMA_VERSION:
        return data
    data = dict(data)
    cases = data.get("cases")
    if isinstance(cases, dict):
        data["cases"] = {key: _entry(entry) for key, entry in cases.items()}
    data["schema_version"] = SCHEMA_VERSION
    return data


# Versions 1-3 called the GPU time "latency" (a word that also named the judged figure, any time
# summary, the launch-bound regime and the caller's time); version 4 gives each its own name.
TIME_NAMES = {"latency": "gpu_time", "caller_latency": "caller_time"}


def _verdict(verdict: dict[str, Any]) -> dict[str, Any]:
    metric = verdict.get("metric")
    return {**verdict, "metric": TIME_NAMES.get(metric, metric)} if isinstance(metric, str) else verdict


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


def _entry(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    result = entry.get("result")
    regime = result.get("regime") if isinstance(result, dict) else None
    entry = {**entry, "result": _result(result)}
    if isinstance(entry.get("runs"), list):
        entry["runs"] = [_run(run, regime) for run in entry["runs"]]
    return entry


def _result(result: Any) -> Any:
    """Schema 2's parallel fields (`latency`/`samples_ms`, `caller`/`caller_samples_ms`) as `timings`.
    In the caller regime `latency` was the caller's time, and `caller` the same figure again."""
    if not isinstance(result, dict):
        return result
    if "timings" in result:
        return {**result, "timings": _drifts(_renamed(result["timings"])), "metrics": _metrics(result.get("metrics"))}
    result = dict(result)
    result["metrics"] = _metrics(result.get("metrics"))
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
    """A schema-2 run summary: its median was the judged figure, the caller's time beside it. A run
    whose two medians are the same figure was timed in the caller regime (its caller's time was
    its judged one), whatever the entry's newest result says; one without a caller's time, by the
    entry's regime."""
    if not isinstance(run, dict):
        return run
    if "timings" in run:
        return {**run, "timings": _renamed(run["timings"])}
    run = dict(run)
    median, n, half = run.pop("median_ms", None), run.pop("n", None), run.pop("ci_half_pct", None)
    caller, caller_half = run.pop("caller_median_ms", None), run.pop("caller_ci_half_pct", None)
    judged = {"median_ms": median, "n": n, "ci_half_pct": half}
    if caller == median if caller is not None else regime == "caller":
        run["timings"] = {"caller_time": judged}
    else:
        run["timings"] = {"gpu_time": judged}
        if caller is not None:
            run["timings"]["caller_time"] = {"median_ms": caller, "ci_half_pct": caller_half}
    return run
