"""Does the regression gate stay quiet when nothing changed, and catch real slowdowns? (issue 3)

On the GPU, with real kernels and the same `measure` + `compare_case` the plugin runs:
  - A/A: every kernel measured `--runs` times, round-robin across kernels so drift over the run is
    included; each run compared with the next (kernels x (runs - 1) comparisons, >= 200 by default).
  - Injected slowdowns: the same kernel on 3%, 5% and 10% more data, compared with an A/A run of
    the original size. The true slowdown is whatever the bigger problem costs; its measured median
    ratio is reported beside the detection rate.
Verdicts are computed at several thresholds from the same measurements.

    python benchmarks/detection.py [--runs 26] [--reps 8] [--json OUT.json]

Targets: A/A false alarms <= 1% at the default threshold; >= 95% of 5% slowdowns detected.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from perfguard.analysis.verdict import compare_case
from perfguard.case import CaseInstance, build_spec
from perfguard.measure import runner
from perfguard.measure.device import detect
from perfguard.measure.timers import SamplingRule

SLOWDOWNS = (0.03, 0.05, 0.10)
THRESHOLDS = (5.0, 3.0, 2.0)


def _kernels():
    """name -> (setup(scale, device) -> callable, bytes(scale)). Sizes: tens to hundreds of µs on an H200."""

    def sized(base: int, scale: float, multiple: int = 1) -> int:
        return int(round(base * scale / multiple)) * multiple

    def add(scale, device):
        n = sized(2**26, scale, 1024)
        a = torch.randn(n, device=device)
        b = torch.randn_like(a)
        return lambda: a + b

    def add_small(scale, device):
        n = sized(2**23, scale, 1024)
        a = torch.randn(n, device=device, dtype=torch.float16)
        b = torch.randn_like(a)
        return lambda: a + b

    def copy(scale, device):
        n = sized(2**28, scale, 4096)
        src = torch.empty(n, dtype=torch.uint8, device=device).random_()
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)

    def softmax(scale, device):
        x = torch.randn(sized(16384, scale), 4096, device=device, dtype=torch.float16)
        return lambda: torch.softmax(x, -1)

    def layer_norm(scale, device):
        x = torch.randn(sized(16384, scale), 4096, device=device, dtype=torch.bfloat16)
        return lambda: F.layer_norm(x, (4096,))

    def sum_all(scale, device):
        x = torch.randn(sized(2**26, scale, 1024), device=device)
        return lambda: x.sum()

    def gelu(scale, device):
        x = torch.randn(sized(2**26, scale, 1024), device=device, dtype=torch.bfloat16)
        return lambda: F.gelu(x, approximate="tanh")

    def matmul(scale, device):
        a = torch.randn(sized(4096, scale, 64), 4096, device=device, dtype=torch.bfloat16)
        b = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
        return lambda: a @ b

    return {f.__name__: f for f in (add, add_small, copy, softmax, layer_norm, sum_all, gelu, matmul)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=26, help="A/A runs per kernel")
    ap.add_argument("--reps", type=int, default=8, help="slowed-down runs per kernel and slowdown")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("detection.py measures real kernels on a GPU", file=sys.stderr)
        return 2
    device = detect("cuda")
    rule = SamplingRule()
    kernels = _kernels()

    def measure(name: str, scale: float):
        setup = kernels[name]
        spec = build_spec(lambda device: setup(scale, device), {"name": f"{name}@{scale:g}"}, default_name=name)
        result = runner.measure(CaseInstance(spec), device, rule)
        if result.status != "ok":
            raise SystemExit(f"{name} x{scale}: {result.error}")
        return result

    aa = {name: [] for name in kernels}
    for _ in range(args.runs):
        for name in kernels:
            aa[name].append(measure(name, 1.0))
    slowed = {(name, s): [] for name in kernels for s in SLOWDOWNS}
    for _ in range(args.reps):
        for name in kernels:
            for s in SLOWDOWNS:
                slowed[(name, s)].append(measure(name, 1.0 + s))

    def verdict(current, baseline, threshold):
        # Same id on both sides: compare_case judges the pair as the plugin would.
        baseline = dataclasses.replace(baseline, id=current.id)
        (v, *_) = compare_case(current, baseline, threshold_pct=threshold)
        return v.status

    rows = []
    for threshold in THRESHOLDS:
        statuses = [verdict(runs[i + 1], runs[i], threshold) for runs in aa.values() for i in range(len(runs) - 1)]
        row = {
            "threshold_pct": threshold,
            "aa_comparisons": len(statuses),
            "aa_regressed": statuses.count("regressed"),
            "aa_unstable": statuses.count("unstable"),
        }
        for s in SLOWDOWNS:
            got = [
                verdict(cur, aa[name][i], threshold)
                for name in kernels
                for i, cur in enumerate(slowed[(name, s)])
            ]
            row[f"detected_{round(s * 100)}pct"] = got.count("regressed") / len(got)
            row[f"unstable_{round(s * 100)}pct"] = got.count("unstable") / len(got)
        rows.append(row)

    per_kernel = {
        f"{name}+{round(s * 100)}%": [verdict(cur, aa[name][i], 5.0) for i, cur in enumerate(slowed[(name, s)])]
        for (name, s) in slowed
    }
    for key, statuses in per_kernel.items():
        print(f"{key:16} at 5%: " + " ".join(statuses))
    ratios = {
        f"{name}+{round(s * 100)}%": statistics.median(
            cur.latency.median_ms / aa[name][i].latency.median_ms for i, cur in enumerate(slowed[(name, s)])
        )
        for (name, s) in slowed
    }
    aa_spread = {
        name: 100 * statistics.pstdev(r.latency.median_ms for r in runs) / statistics.mean(r.latency.median_ms for r in runs)
        for name, runs in aa.items()
    }
    print(f"{'kernel':12} {'median µs':>10} {'A/A CV %':>9} " + " ".join(f"{'+' + str(round(s * 100)) + '% ratio':>12}" for s in SLOWDOWNS))
    for name, runs in aa.items():
        med = statistics.median(r.latency.median_ms for r in runs) * 1e3
        print(f"{name:12} {med:10.1f} {aa_spread[name]:9.2f} " + " ".join(f"{ratios[f'{name}+{round(s * 100)}%']:12.4f}" for s in SLOWDOWNS))
    print()
    print(f"{'threshold':>9} {'A/A false alarms':>17} {'A/A unstable':>13} " + " ".join(f"{'detect ' + str(round(s * 100)) + '%':>10}" for s in SLOWDOWNS))
    for row in rows:
        print(
            f"{row['threshold_pct']:8g}% {row['aa_regressed']:>8}/{row['aa_comparisons']:<8} {row['aa_unstable']:>13} "
            + " ".join(f"{100 * row[f'detected_{round(s * 100)}pct']:9.0f}%" for s in SLOWDOWNS)
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "ratios": ratios, "aa_cv_pct": aa_spread, "per_kernel_at_5pct": per_kernel}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
