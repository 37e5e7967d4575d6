"""Run records to asv's result format (asv 0.6: results api_version 2), for `asv publish` and step detection.

    DIR/asv.conf.json                             project, repo (relative to DIR), branches, folders
    DIR/results/benchmarks.json                   one asv benchmark per case name and metric
    DIR/results/<machine>/machine.json            one per GPU card (per CPU model on a CPU)
    DIR/results/<machine>/<hash[:8]>-perfguard.json   one per commit: full hash, commit date, figures

asv reads every figure as lower-is-better and flags an upward step as a regression, so the
higher-is-better figures are stored inverted, as time: achieved bandwidth as seconds per GB moved
(1 / GB/s) and FLOP/s as seconds per TFLOP (1 / TFLOP/s). Both are the median time divided by the
case's declared work, so their confidence intervals scale with the latency's.

Writing needs no asv (only `git`): this module is plain JSON. asv itself is needed to publish and
by `perfguard history` (perfguard/export/history.py).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from perfguard.errors import BaselineError, ConfigError
from perfguard.files import write_atomic
from perfguard import git
from perfguard.export import asv_files
from perfguard.model import CaseResult, DeviceInfo, RunRecord
from perfguard.model.names import is_slug, shown


@dataclasses.dataclass(frozen=True)
class Metric:
    suffix: str  # the asv benchmark is "<case name>.<suffix>"
    type: str
    unit: str
    code: str  # shown by the asv site as the benchmark's source


METRICS = {m.suffix: m for m in (
    Metric("judged_time", "time", "seconds", "median per-call time of the judged figure: the GPU time, or the caller's in the caller regime"),
    Metric("time_per_gb", "track", "seconds", "seconds per GB of declared bytes = 1 / achieved GB/s (inverted: lower is better)"),
    Metric("time_per_tflop", "track", "seconds", "seconds per TFLOP of declared flops = 1 / achieved TFLOP/s (inverted: lower is better)"),
    Metric("peak_memory", "memory", "bytes", "peak allocated bytes during one call"),
    Metric("busy_time", "time", "seconds", "GPU busy time per call: the union of its kernel and copy intervals"),
    Metric("kernels", "track", "kernels", "kernels launched per call (work counter)"),
    Metric("syncs", "track", "syncs", "host-device synchronisations per call (work counter)"),
    Metric("aten_ops", "track", "operators", "ATen operators per call (work counter)"),
    Metric("footprint", "memory", "bytes", "the most the case held during a call, in bytes counted from before its setup"),
    Metric("compile_cold", "time", "seconds", "torch.compile: the first call with its compile, Inductor and Triton caches empty"),
    Metric("compile_warm", "time", "seconds", "torch.compile: the compile again, served from the caches the cold one filled"),
    Metric("graphs", "track", "graphs", "torch.compile: graphs dynamo compiled in the case (compile counter)"),
    Metric("graph_breaks", "track", "breaks", "torch.compile: graph breaks in the case (compile counter)"),
    Metric("recompiles", "track", "recompiles", "torch.compile: recompiles in the case (compile counter)"),
)}


@dataclasses.dataclass(frozen=True)
class Summary:
    records: int
    commits: int
    machines: tuple[str, ...]
    benchmarks: int
    not_on_branch: tuple[str, ...]  # commits asv publish will not draw: not in the branches' history
    config: Path


def export(records: Sequence[tuple[str, RunRecord]], to: Path | str, *, repo: Path | str = ".",
           commit: str | None = None, branch: str | None = None, project: str | None = None) -> Summary:
    """Merge the records' measured cases into the asv folder `to`; re-exporting a record changes nothing."""
    to = Path(to)
    if to.exists() and not to.is_dir():
        raise ConfigError(f"{to}: exists and is not a folder; pass --to a folder for the asv results")
    top = git.check_repo(Path(repo))
    results_dir = to / "results"
    benchmarks = asv_files.read_json(results_dir / "benchmarks.json", asv_files.BENCHMARKS_API) or {}
    benchmarks.pop("version", None)
    files: dict[tuple[str, str], dict[str, Any]] = {}  # (machine, commit) → result file content
    rows: dict[tuple[str, str], dict[str, asv_files.Row]] = {}
    machines: dict[str, dict[str, str]] = {}
    names: dict[str, str] = {}  # asv-safe name → case name, to catch two cases that would share one
    newest: dict[tuple[str, str], int] = {}  # (machine, commit) → start of the newest record in its file
    resolved: dict[str, tuple[str, int]] = {}  # rev → (full hash, commit date): records often share a commit
    measured = 0
    for started, path, record in sorted(((_js_time(r.created_at, p), p, r) for p, r in records), key=lambda t: t[0]):
        rev = record.commit or commit
        if not rev:
            raise ConfigError(f"{path}: record has no commit; run pytest --perfguard inside a git checkout, or pass --commit REV")
        if rev not in resolved:
            full = git.full_hash(top, rev)
            if full is None:
                raise ConfigError(f"{path}: commit {rev} is not in the git repository {top}; pass --repo the checkout it was measured in")
            resolved[rev] = (full, git.commit_date_ms(top, full))
        full, date = resolved[rev]
        for result in record.results:
            if result.status != "ok" or result.judged_time is None:
                continue
            device = _device(record, result)
            machine = machine_name(result.device, result.device_uuid or (device.uuid if device else None))
            if not is_slug(machine):  # it names a folder under results/: never a path of the record's making
                raise BaselineError(f"{path}: case {shown(result.id)} was measured on {shown(result.device)}, "
                                    "not a device slug, so it names no asv machine; was the file edited by hand?")
            machines[machine] = _machine_json(machine, result.device, device)
            key = (machine, full)
            if key not in files:
                files[key] = asv_files.read_results(results_dir, machine, full)
                rows[key] = asv_files.read_rows(files[key], asv_files.result_path(results_dir, machine, full))
                newest[key] = max((row.started_at for row in rows[key].values()), default=0)
            for suffix, value, stats in _figures(result):
                name = f"{_safe(result.name, names, path)}.{suffix}"
                param_names = sorted(result.params)
                _define(benchmarks, name, METRICS[suffix], param_names, result)
                grid = tuple(_param_repr(result.params[p]) for p in param_names)
                row = rows[key].setdefault(name, asv_files.Row({}, started))
                if grid not in row.points or started >= row.started_at:
                    row.points[grid] = {"result": value, **stats}
                row.started_at = max(row.started_at, started)
            if started >= newest[key]:
                newest[key] = started
                files[key].update(_header(record, device, machine, full, date))
            measured += 1
    if not measured:
        raise ConfigError(f"{', '.join(p for p, _ in records)}: no measured case to export; run pytest --perfguard first")

    config = to / "asv.conf.json"
    conf, branches = _config(config, to, top, branch, project)
    texts = {results_dir / "benchmarks.json": asv_files.dumps({**benchmarks, "version": asv_files.BENCHMARKS_API})}
    for machine, info in machines.items():
        texts[results_dir / machine / "machine.json"] = asv_files.dumps({**info, "version": asv_files.MACHINE_API})
    for key, content in files.items():
        content.update(result_columns=list(asv_files.RESULT_COLUMNS), results=asv_files.current_rows(rows[key], benchmarks))
        texts[asv_files.result_path(results_dir, *key)] = asv_files.dumps({**content, "version": asv_files.RESULTS_API})
    texts[config] = asv_files.dumps(conf)
    for path, text in texts.items():  # everything rendered first: a failure leaves no file half-merged
        write_atomic(path, text)
    commits = sorted({c for _, c in files})
    drawn = set().union(*(git.branch_commits(top, b) for b in branches))
    off_branch = tuple(c for c in commits if c not in drawn)
    return Summary(len(records), len(commits), tuple(sorted(machines)), len(benchmarks), off_branch, config)


def machine_name(slug: str, uuid: str | None) -> str:
    """One asv machine per card: the model's slug plus the first 8 hex digits of the GPU's UUID.

    Cards of one model differ by a few percent; pooling them in one series would show a step each
    time CI lands on another card. Without a UUID (a CPU) the machine is the model.
    """
    tag = "".join(c for c in (uuid or "").lower().removeprefix("gpu-") if c in "0123456789abcdef")[:8]
    return f"{slug}-{tag}" if tag else slug


# --- figures ------------------------------------------------------------------------------------


def _figures(r: CaseResult) -> Iterable[tuple[str, float | int, dict[str, Any]]]:
    """(metric suffix, value in asv's lower-is-better unit, asv stats) of one measured case."""
    assert r.judged_time is not None
    stats = _latency_stats(r.samples_ms)
    scales = {"judged_time": 1e-3, "time_per_gb": 1e-3 / (r.bytes / 1e9) if r.bytes else None,
              "time_per_tflop": 1e-3 / (r.flops / 1e12) if r.flops else None}
    for suffix, scale in scales.items():
        if scale is not None:  # ms → seconds, then per unit of declared work
            yield suffix, r.judged_time.median_ms * scale, {k: v * scale if k.startswith(("ci", "q")) else v for k, v in stats.items()}
    if r.memory is not None and r.memory.peak_allocated_bytes is not None:
        yield "peak_memory", r.memory.peak_allocated_bytes, {}
    busy = r.timings.get("busy_time")
    if busy is not None:
        yield "busy_time", busy.summary.median_ms * 1e-3, {k: v * 1e-3 if k.startswith(("ci", "q")) else v
                                                            for k, v in _latency_stats(busy.samples_ms).items()}
    for metric in ("compile_cold", "compile_warm"):  # one figure a run: no interval of its own
        timing = r.timings.get(metric)
        if timing is not None:
            yield metric, timing.summary.median_ms * 1e-3, {}
    c = r.counters
    if c is not None:  # counts are exact: asv's step detection sees any change
        for kind in ("kernels", "syncs", "aten_ops", "graphs", "graph_breaks", "recompiles"):
            if c.counted(kind):
                yield kind, c.total(kind), {}
    if r.memory is not None and r.memory.footprint_bytes is not None:
        yield "footprint", r.memory.footprint_bytes, {}


def _latency_stats(samples_ms: Sequence[float]) -> dict[str, Any]:
    """asv's stats of the median, in ms: a 99% interval (asv weighs each commit by its width) and quartiles."""
    if len(samples_ms) < 2:
        return {}
    import numpy as np

    from perfguard.analysis.stats import median_ci

    lo, hi = median_ci(samples_ms, confidence=0.99)
    q25, q75 = np.percentile(samples_ms, [25, 75])
    return {"ci_99_a": lo, "ci_99_b": hi, "q_25": float(q25), "q_75": float(q75), "number": 1, "repeat": len(samples_ms)}


def _define(benchmarks: dict[str, Any], name: str, metric: Metric, param_names: list[str], r: CaseResult) -> None:
    """Add the case's grid point to the benchmark's asv params; a changed set of parameter names replaces them."""
    entry = benchmarks.get(name)
    if entry is None or entry.get("param_names") != param_names:
        entry = benchmarks[name] = {"name": name, "param_names": param_names, "params": [[] for _ in param_names]}
    entry.update(type=metric.type, unit=metric.unit, version=asv_files.BENCHMARK_VERSION,
                 code=f"perfguard case {r.name}: {metric.code}")
    for values, p in zip(entry["params"], param_names):
        if _param_repr(r.params[p]) not in values:
            values.append(_param_repr(r.params[p]))
            values.sort(key=asv_files.param_order)


def _param_repr(value: Any) -> str:
    """asv stores parameter values as their Python repr ('float16' with its quotes, 1048576)."""
    return repr(value)


def _safe(case: str, names: dict[str, str], source: str) -> str:
    """An asv name for the case: asv splits names at dots and puts them in its pages unescaped."""
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in case) or "_"
    if names.setdefault(safe, case) != case:
        raise ConfigError(f"{source}: cases {names[safe]!r} and {case!r} would both be asv benchmark {safe!r}; rename one")
    return safe


# --- files --------------------------------------------------------------------------------------


def _header(record: RunRecord, device: DeviceInfo | None, machine: str, commit: str, date: int) -> dict[str, Any]:
    """A result file's fields besides its rows; the software versions go in `requirements`, which asv only
    shows, because asv draws one line per distinct `params` and an upgrade of torch must stay on the line."""
    versions = {k: str(v) for k, v in (device.fingerprint() if device else {}).items() if v}
    return {"commit_hash": commit, "env_name": asv_files.ENV_NAME, "date": date, "params": {"machine": machine},
            "python": (device.python if device else None) or "", "requirements": versions, "env_vars": {},
            "durations": {}}


def _device(record: RunRecord, r: CaseResult) -> DeviceInfo | None:
    same = [d for d in record.devices if d.slug == r.device]
    return next((d for d in same if r.device_uuid and d.uuid == r.device_uuid), same[0] if same else None)


def _machine_json(machine: str, slug: str, d: DeviceInfo | None) -> dict[str, str]:
    """What does not change for a card: asv shows it as the machine's tooltip."""
    fields = {"machine": machine, "slug": slug}
    if d is not None:
        for key in ("name", "kind", "uuid", "compute_capability", "memory_bytes", "sm_count", "l2_bytes",
                    "bus_width_bits", "peak_bandwidth_gbps", "max_sm_clock_mhz", "cpu_count"):
            if getattr(d, key) is not None:
                fields[key] = str(getattr(d, key))
    return fields


def _config(path: Path, to: Path, top: Path, branch: str | None, project: str | None) -> tuple[dict[str, Any], list[str]]:
    """asv.conf.json: kept as the user left it, but for the repository (and branch and project when given)."""
    conf = asv_files.read_json(path, asv_files.CONFIG_API) or {}
    conf.setdefault("project", project or top.name)
    if project:
        conf["project"] = project
    conf["repo"] = os.path.relpath(top, to.resolve())  # relative, so the folder can move with the checkout
    conf.update(dvcs="git", version=asv_files.CONFIG_API)
    for key, value in (("results_dir", "results"), ("html_dir", "html"), ("project_url", "#"),
                       ("show_commit_url", "#"), ("hash_length", 8)):
        conf.setdefault(key, value)
    if branch or not conf.get("branches"):
        branch = branch or git.current_branch(top)
        if not branch:
            raise ConfigError(f"{top}: HEAD is detached; pass --branch, the branch whose history asv draws (e.g. main)")
        conf["branches"] = [branch]
    for b in conf["branches"]:
        if git.full_hash(top, b) is None:
            raise ConfigError(f"{path}: branch {b!r} is not in {top}; pass --branch a branch of that repository")
    return conf, list(conf["branches"])


def _js_time(created_at: str, source: str) -> int:
    try:
        t = datetime.datetime.fromisoformat(created_at)
    except ValueError:
        raise BaselineError(f"{source}: created_at {created_at!r} is not an ISO date; was the file edited by hand?") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp() * 1000)


