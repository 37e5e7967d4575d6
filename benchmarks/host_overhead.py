"""Is host work per call caught by the caller's-time verdict, and is it quiet when nothing changed?

Whole `pytest --perfguard` runs in fresh processes over benchmarks/host_overhead_suite.py (a 1M-element
add and GPT-2 small's batch-1 forward): a baseline of --record runs, then --runs runs each unchanged,
with 20 µs of Python per call, and with 20 µs per call of each transformer block; every verdict of
both times (GPU and caller's) is counted per run, with the plugin's re-measurement before a failure.

    python benchmarks/host_overhead.py OUT [--record 3] [--runs 3]

Issue 12's target: the injected runs `regressed` 3 of 3, the unchanged `same` 3 of 3.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from detection import _pytest  # noqa: E402

from perfguard.cli import read_record  # noqa: E402

SUITE = "benchmarks/host_overhead_suite.py"
SCENARIOS = {"unchanged": {}, "20us/call": {"PERFGUARD_INJECT_HOST_US": "20"},
             "20us/block": {"PERFGUARD_INJECT_HOST_US": "20", "PERFGUARD_INJECT_WHERE": "block"}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--record", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    baselines = args.out / "baselines"
    common = [f"--perfguard-baselines={baselines}", SUITE]
    for i in range(args.record):
        rc, _ = _pytest(["--perfguard-update", *common], args.out / f"record{i}")
        print(f"record {i}: exit {rc}", flush=True)
    rows = []
    for name, env in SCENARIOS.items():
        for i in range(args.runs):
            out = args.out / f"{name.replace('/', '-')}{i}"
            rc, _ = _pytest(common, out, env)
            record = read_record(out / "perfguard.json")
            results = {r.id: r for r in record.results}
            for v in record.verdicts:
                r = results.get(v.case_id)
                figure = r.timings[v.metric].summary if r and v.metric in r.timings else None
                rows.append({"scenario": name, "run": i, "exit": rc, "case": v.case_id, "metric": v.metric,
                             "status": v.status, "change_pct": v.change_pct, "tolerance_pct": v.tolerance_pct,
                             "regime": r.regime if r else None, "median_ms": figure.median_ms if figure else None,
                             "ci_pct": figure.ci_half_width_pct if figure else None, "confirmed": v.time.confirmed if v.time else None})
    print(f"{datetime.date.today()}: {args.record}-run baseline, {args.runs} runs per scenario")
    print(f"{'scenario':11} {'case':36} {'metric':15} {'statuses':34} {'changes %':24} {'tolerance %':12} {'±CI % (max)'}")
    keys = sorted({(r["scenario"], r["case"], r["metric"]) for r in rows}, key=lambda k: (list(SCENARIOS).index(k[0]), k[1], k[2]))
    for key in keys:
        got = [r for r in rows if (r["scenario"], r["case"], r["metric"]) == key]
        statuses = ", ".join(r["status"] for r in got)
        changes = ", ".join(f"{r['change_pct']:+.1f}" for r in got if r["change_pct"] is not None)
        tols = [r["tolerance_pct"] for r in got if r["tolerance_pct"] is not None]
        tol = statistics.median(tols) if tols else None
        ci = max((r["ci_pct"] for r in got if r["ci_pct"] is not None), default=None)
        print(f"{key[0]:11} {key[1][:36]:36} {key[2]:15} {statuses:34} {changes:24} {tol or 0:12.1f} {ci or 0:.2f}")
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
