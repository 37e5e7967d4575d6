"""Does the gate stay quiet when nothing changed, across runs, cards and hosts, and catch real slowdowns?

Every figure comes from whole `pytest --perfguard` runs in fresh processes, so each run carries the
run-to-run (and, on another machine, the card-to-card and host-to-host) variation a verdict must
know, and slowed cases go through the plugin's re-measurement before they fail.

    python benchmarks/detection.py record DIR [--runs 5] [-- PYTEST ARGS]
        record a baseline into DIR/baselines: --runs runs of `pytest --perfguard --perfguard-update`
        (default PYTEST ARGS: -n auto suites/)
    python benchmarks/detection.py judge DIR BASELINES [--runs 3] [-- PYTEST ARGS]
        run the unchanged suites --runs times against BASELINES (recorded elsewhere: another host)
        and count verdicts per run; a run fails when pytest exits non-zero
    python benchmarks/detection.py inject DIR [--runs 5] [-- PYTEST ARGS]
        benchmarks/detection_suite.py (36 memory-bound cases, 50 µs-2 ms on an H200): a --runs-run
        baseline, then one run each with the work scaled by 1.00, 1.03, 1.05 and 1.10, and one with
        an extra output-sized buffer; caught = `regressed`, per case, against its detectable change
    python benchmarks/detection.py runs BASELINE.json
        how many runs a baseline needs: each case's detectable change with its first 1, 2, ... runs
        (judging its newest run, on the same card), median per roofline bound; no GPU needed
    python benchmarks/detection.py table DIR [DIR ...]
        the README's tables from the summaries the commands above wrote (DIR/summary.json, or a copy of
        one: `python benchmarks/detection.py table benchmarks/data/judge-*.json benchmarks/data/inject-*.json`)

Targets (issue 11): unchanged runs on another host never fail, at most 1% of comparisons regressed;
>= 95% of 3% slowdowns caught where the detectable change is <= 2%; every 10% slowdown caught where
it is < 10%; every extra output-sized buffer caught.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from perfguard.cli import read_record

ROOT = Path(__file__).resolve().parent.parent
SUITE = "benchmarks/detection_suite.py"
FACTORS = (1.00, 1.03, 1.05, 1.10)
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perfguard")


def _pytest(args: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[int, float]:
    """One pytest run writing its record to `out`; its output goes to out/pytest.log."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(out / "pytest.log", "w") as log:
        rc = subprocess.call([*PYTEST, f"--perfguard-report={out}", *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                             env={**os.environ, **(env or {})})
    return rc, time.monotonic() - start


def _tally(path: Path) -> dict[str, object]:
    record = read_record(path / "perfguard.json")
    latency = [v for v in record.verdicts if v.metric == "gpu_time"]
    statuses = [v.status for v in record.verdicts]
    return {
        "comparisons": len(statuses),
        **{s: statuses.count(s) for s in ("regressed", "unstable", "improved", "same", "new", "missing")},
        "regressed_cases": sorted({v.case_id for v in record.verdicts if v.status == "regressed"}),
        "median_detectable_pct": _median([v.detectable_pct for v in latency if v.detectable_pct is not None]),
        "hosts": sorted({d.host or "?" for d in record.devices}),
        "cards": sorted({d.uuid or "?" for d in record.devices}),
    }


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def record(args: argparse.Namespace) -> dict[str, object]:
    baselines = Path(args.dir, "baselines")
    runs = []
    for k in range(args.runs):
        rc, wall = _pytest([f"--perfguard-baselines={baselines}", "--perfguard-update", *args.pytest],
                           Path(args.dir, f"record{k + 1}"))
        runs.append({"run": k + 1, "rc": rc, "wall_s": round(wall, 1), **_tally(Path(args.dir, f"record{k + 1}"))})
        print(f"record {k + 1}: rc={rc} {wall:.0f} s  " + _line(runs[-1]), flush=True)
    return {"mode": "record", "runs": runs}


def judge(args: argparse.Namespace) -> dict[str, object]:
    runs = []
    for k in range(args.runs):
        out = Path(args.dir, f"judge{k + 1}")
        rc, wall = _pytest([f"--perfguard-baselines={args.baselines}", *args.pytest], out)
        runs.append({"run": k + 1, "rc": rc, "wall_s": round(wall, 1), **_tally(out)})
        print(f"judge {k + 1}: rc={rc} {wall:.0f} s  " + _line(runs[-1]), flush=True)
    return {"mode": "judge", "runs": runs}


def inject(args: argparse.Namespace) -> dict[str, object]:
    baselines = Path(args.dir, "baselines")
    suite = [SUITE, *args.pytest]
    for k in range(args.runs):
        rc, _ = _pytest([f"--perfguard-baselines={baselines}", "--perfguard-update", *suite], Path(args.dir, f"base{k + 1}"))
        print(f"baseline run {k + 1}: rc={rc}", flush=True)
    rows = {}
    for name, env in [(f"x{f:.2f}", {"PERFGUARD_INJECT": str(f)}) for f in FACTORS] + [("memory", {"PERFGUARD_INJECT_MEMORY": "1"})]:
        out = Path(args.dir, name)
        rc, wall = _pytest([f"--perfguard-baselines={baselines}", *suite], out, env)
        record = read_record(out / "perfguard.json")
        cases = {}
        for v in record.verdicts:
            case = cases.setdefault(v.case_id, {})
            if v.metric == "gpu_time":
                case.update(latency=v.status, change_pct=v.change_pct, detectable_pct=v.detectable_pct,
                            confirmed=v.time.confirmed if v.time else None, median_ms=v.current)
            elif v.metric == "peak_memory":  # not the caller's time, nor the footprint or retained memory
                case.update(memory=v.status, memory_change_pct=v.change_pct)
        rows[name] = {"rc": rc, "wall_s": round(wall, 1), "cases": cases}
        print(f"{name}: rc={rc} {wall:.0f} s  " + _inject_line(name, cases), flush=True)
    return {"mode": "inject", "rows": rows}


def _line(run: dict[str, object]) -> str:
    return (f"{run['regressed']} regressed / {run['comparisons']} ({run['unstable']} unstable, {run['improved']} improved), "
            f"median detectable {run['median_detectable_pct'] or 0:.1f}%, hosts {','.join(run['hosts'])}, "
            f"{len(run['cards'])} card(s)" + (f"; regressed: {', '.join(run['regressed_cases'])}" if run["regressed_cases"] else ""))


def _inject_line(name: str, cases: dict[str, dict[str, object]]) -> str:
    if name == "memory":
        caught = sum(c.get("memory") == "regressed" for c in cases.values())
        return f"peak memory regressed in {caught}/{len(cases)}"
    factor = float(name[1:])
    limit = 2.0 if factor < 1.04 else 10.0 if factor > 1.09 else 5.0
    eligible = [c for c in cases.values() if c.get("detectable_pct") is not None and c["detectable_pct"] <= limit]
    caught = sum(c["gpu_time"] == "regressed" for c in eligible)
    everywhere = sum(c.get("gpu_time") == "regressed" for c in cases.values())
    return (f"caught {caught}/{len(eligible)} with detectable <= {limit:g}%, {everywhere}/{len(cases)} in all; "
            f"median change {_median([c['change_pct'] for c in cases.values() if c.get('change_pct') is not None]) or 0:+.2f}%")


def table(args: argparse.Namespace) -> None:
    pooled: dict[str, dict[str, dict[str, object]]] = {}
    summaries = {folder: json.loads(_summary_path(folder).read_text()) for folder in args.dirs}
    for folder, summary in summaries.items():
        print(f"## {folder}: {summary['mode']} on {summary['machine']} ({summary['date']})")
        if summary["mode"] == "inject":
            for name, row in summary["rows"].items():
                print(f"  {name}: {_inject_line(name, row['cases'])}")
                pooled.setdefault(name, {}).update({f"{folder}:{case}": c for case, c in row["cases"].items()})
        else:
            for run in summary["runs"]:
                print(f"  run {run['run']}: exit {run['rc']}, {_line(run)}")
    if sum(summary["mode"] == "inject" for summary in summaries.values()) > 1:
        print("## all inject experiments together")
        for name, cases in pooled.items():
            print(f"  {name}: {_inject_line(name, cases)}")


def runs_needed(args: argparse.Namespace) -> None:
    import dataclasses
    from collections import defaultdict

    from perfguard.analysis.noise import estimate
    from perfguard.model import loads_baseline

    baseline = loads_baseline(Path(args.baseline).read_text(), args.baseline)
    most = max(len(e.runs) for e in baseline.cases.values())
    table: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for entry in baseline.cases.values():
        newest = entry.runs[-1]
        current = dataclasses.replace(entry.result, device_uuid=newest.device_uuid)
        bound = (entry.result.metrics.bound if entry.result.metrics else None) or "undeclared"
        for k in range(1, len(entry.runs)):
            est = estimate(current, dataclasses.replace(entry, runs=entry.runs[:k]), 1.0, host=newest.host)
            table[bound][k].append(est.detectable_pct)
    print(f"{args.baseline}: median smallest detectable change (%) by baseline runs, judging each case's newest run")
    print(f"{'bound':>10} {'cases':>5} " + " ".join(f"{k:>6}" for k in range(1, most)))
    for bound, by_k in sorted(table.items()):
        print(f"{bound:>10} {len(by_k[1]):>5} " + " ".join(f"{_median(by_k[k]) or 0:6.1f}" for k in range(1, most)))


def _summary_path(folder: str) -> Path:
    """A run folder's summary.json, or a summary saved under a name of its own (benchmarks/data/)."""
    return Path(folder) if folder.endswith(".json") else Path(folder, "summary.json")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else None
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    for mode, runs in (("record", 5), ("judge", 3), ("inject", 5)):
        p = sub.add_parser(mode)
        p.add_argument("dir")
        if mode == "judge":
            p.add_argument("baselines")
        p.add_argument("--runs", type=int, default=runs)
    sub.add_parser("table").add_argument("dirs", nargs="+")
    sub.add_parser("runs").add_argument("baseline")
    args = ap.parse_args(argv)
    if args.mode in ("table", "runs"):
        (table if args.mode == "table" else runs_needed)(args)
        return 0
    # inject runs in one process, on one card: pin it with CUDA_VISIBLE_DEVICES (one experiment per GPU).
    args.pytest = pytest_args if pytest_args is not None else ([] if args.mode == "inject" else ["-n", "auto", "suites/"])
    summary = {"record": record, "judge": judge, "inject": inject}[args.mode](args)
    try:
        machine = subprocess.run(["nvidia-smi", "--query-gpu=name,uuid", "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip().replace("\n", "; ")
    except FileNotFoundError:
        machine = "no GPU"
    summary.update(date=datetime.date.today().isoformat(), machine=f"{os.uname().nodename}: {machine}",
                   pytest=args.pytest, runs_asked=args.runs)
    Path(args.dir, "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
