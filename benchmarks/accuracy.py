"""How close perfguard's figures are to careful hand measurement, and how repeatable (issue 2).

For every case of `suites/` on the GPU, in one process, five interleaved rounds of:
  - perfguard's median (the same `measure` the plugin runs, default budget),
  - `triton.testing.do_bench` (median; it flushes the L2 before each call, like cache="cold"),
  - `triton.testing.do_bench_cudagraph` (median; graph replay, hot cache: a floor, not a peer).
Prints one row per case: medians, perfguard/do_bench ratio, the CV of perfguard's median across the
five rounds, perfguard's wall time per case, % of peak bandwidth. Writes the rows as JSON too.

    python benchmarks/accuracy.py [--rounds 5] [--only SUBSTRING] [--json OUT.json]

Targets: within 3% of do_bench for cases of 50 µs and more; CV ≤ 1%; wall ≤ 0.5 s a case;
the 1 GiB copy at ≥ 85% of theoretical bandwidth.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import torch

from perfguard.case import CaseInstance, CaseSpec
from perfguard.measure import runner
from perfguard.measure.device import detect
from perfguard.measure.timers import SamplingRule

ROOT = Path(__file__).resolve().parent.parent


def suite_instances(kind: str, only: str | None) -> list[CaseInstance]:
    found = []
    sys.path.insert(0, str(ROOT / "suites"))  # as pytest does: a suite may import from another
    for path in sorted((ROOT / "suites").glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(f"suites_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        for obj in vars(module).values():
            # A training step (memory_breakdown) is no operator to check timers on, and an Adam step
            # cannot be captured in the CUDA graph do_bench_cudagraph needs.
            if isinstance(obj, CaseSpec) and kind in obj.device_kinds and not obj.memory_breakdown:
                found.extend(i for i in obj.instances(kind) if not only or only in i.id)
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=None, help="only cases whose id contains this")
    ap.add_argument("--json", default=None, help="write the rows to this file")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("accuracy.py compares against triton's CUDA timers: it needs a GPU", file=sys.stderr)
        return 2
    from triton.testing import do_bench, do_bench_cudagraph

    device = detect("cuda")
    rule = SamplingRule()
    rows = []
    print(f"{device.name}: peak {device.peak_bandwidth_gbps:.0f} GB/s, L2 {device.l2_bytes / 2**20:.0f} MiB", flush=True)
    for inst in suite_instances("cuda", args.only):
        pg, pg_wall, db, dbg, stops, util = [], [], [], [], [], []
        error = None
        for _ in range(args.rounds):
            result = runner.measure(inst, device, rule)
            if result.status != "ok":
                error = (result.error or "").splitlines()[0]
                break
            pg.append(result.judged_time.median_ms)
            pg_wall.append(result.wall_s)
            stops.append(result.judged_time.stop_reason)
            util.append(result.metrics.bandwidth_util)
            fn = inst.spec.setup(**inst.setup_kwargs("cuda"))
            db.append(do_bench(fn, return_mode="median"))
            dbg.append(do_bench_cudagraph(fn, return_mode="median"))
            del fn
            gc.collect()
            torch.cuda.empty_cache()
        if error:
            rows.append({"case": inst.id, "error": error})
            print(f"{inst.id}: ERROR {error}", flush=True)
            continue
        med = statistics.median(pg)
        row = {
            "case": inst.id,
            "perfguard_us": med * 1e3,
            "do_bench_us": statistics.median(db) * 1e3,
            "cudagraph_us": statistics.median(dbg) * 1e3,
            "ratio_do_bench": med / statistics.median(db),
            "ratio_cudagraph": med / statistics.median(dbg),
            "cv_pct": 100 * statistics.pstdev(pg) / statistics.mean(pg),
            "wall_s": max(pg_wall),
            "converged": stops.count("converged"),
            "bw_util_pct": 100 * statistics.median(util) if util[0] is not None else None,
            "medians_us": [m * 1e3 for m in pg],
        }
        rows.append(row)
        print(_fmt(row), flush=True)
    _table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device.name, "rows": rows}, indent=1))
    return 0


def _fmt(r: dict) -> str:
    bw = f"{r['bw_util_pct']:.1f}%" if r.get("bw_util_pct") is not None else "-"
    return (
        f"{r['case'][:44]:44} {r['perfguard_us']:10.1f} {r['do_bench_us']:10.1f} {r['ratio_do_bench']:6.3f} "
        f"{r['cudagraph_us']:10.1f} {r['ratio_cudagraph']:6.3f} {r['cv_pct']:6.2f} {r['wall_s']:6.2f} "
        f"{r['converged']:>4} {bw:>7}"
    )


def _table(rows: list[dict]) -> None:
    print()
    print(
        f"{'case':44} {'pg µs':>10} {'do_bench':>10} {'ratio':>6} {'graph µs':>10} {'ratio':>6} "
        f"{'CV %':>6} {'wall s':>6} {'conv':>4} {'% BW':>7}"
    )
    for r in rows:
        print(_fmt(r) if "error" not in r else f"{r['case'][:44]:44} ERROR {r['error']}")
    ok = [r for r in rows if "error" not in r]
    big = [r for r in ok if r["perfguard_us"] >= 50]
    print()
    print(f"within 3% of do_bench (cases ≥ 50 µs): {sum(abs(r['ratio_do_bench'] - 1) <= 0.03 for r in big)}/{len(big)}")
    print(f"CV of the median ≤ 1%: {sum(r['cv_pct'] <= 1 for r in ok)}/{len(ok)}")
    print(f"wall per case ≤ 0.5 s: {sum(r['wall_s'] <= 0.5 for r in ok)}/{len(ok)}")
    for r in ok:
        if "copy" in r["case"] and r.get("bw_util_pct") is not None:
            print(f"{r['case']}: {r['bw_util_pct']:.1f}% of theoretical bandwidth (target ≥ 85%)")


if __name__ == "__main__":
    sys.exit(main())
