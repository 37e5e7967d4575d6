"""How long the HTML and Markdown reports of a 1,000-case run take to render, and how big they are.

    python benchmarks/report_render.py [--cases 1000] [--samples 1000] [--repeats 5] [--out report.html]

The record is synthetic (rendering does not care where the figures came from) but shaped like a
real GPU run at its largest: every case carries the full 1,000 raw samples a record may keep, its
memory and clock readings, and latency and peak-memory verdicts of every kind, with one case in
four without declared flops (off the roofline). Targets (issue 5): under 1 s to render, under 5 MB.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from machine import describe

from perfguard.analysis.stats import timing
from perfguard.model import CaseResult, DeviceInfo, Memory, Metrics, Noise, RunRecord, Telemetry, TimeEvidence, Verdict
from perfguard.report.html import render_html
from perfguard.report.markdown import render_markdown

TARGET_S = 1.0
TARGET_BYTES = 5 * 10**6
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", uuid="GPU-0", driver="580.159.04", cuda="13.0",
                  torch="2.11.0+cu130", triton="3.6.0", python="3.12.3", compute_capability="9.0",
                  memory_bytes=150109880320, bus_width_bits=6016, max_memory_clock_mhz=3201, max_sm_clock_mhz=1980,
                  peak_bandwidth_gbps=4814.3, sm_count=132, l2_bytes=62914560, ecc_enabled=True)
STATUSES = ("same",) * 14 + ("regressed", "improved", "unstable", "new")
OPS = ("add", "mul", "gelu_tanh", "softmax", "layer_norm", "rms_norm", "sum_all", "matmul", "sdpa", "conv2d_3x3")


# The rule that gives each status (analysis/decide.py).
REASONS = {"regressed": "outside", "improved": "outside", "same": "within", "inconclusive": "blind", "unstable": "imprecise",
           "new": "not_in_baseline", "missing": "did_not_run", "accepted": "accepted"}


def synthetic_record(cases: int, samples: int, seed: int = 5) -> RunRecord:
    rng = np.random.default_rng(seed)
    results, verdicts = [], []
    for i in range(cases):
        op = OPS[i % len(OPS)]
        n = 2 ** (16 + i // len(OPS) % 14)
        case_id = f"{op}[n={n}-dtype={('float16', 'bfloat16', 'float32')[i % 3]}-variant={i}]"
        median = float(rng.uniform(0.004, 30.0))
        xs = tuple(float(x) for x in median * rng.lognormal(0.0, 0.01, samples))
        nbytes = float(n * 6)
        flops = None if i % 4 == 3 else float(n * (2 ** (i % 11)))
        seconds = float(np.median(xs)) / 1e3
        metrics = Metrics(gbps=nbytes / seconds / 1e9, bandwidth_util=nbytes / seconds / 1e9 / H200.peak_bandwidth_gbps,
                          tflops=flops / seconds / 1e12 if flops else None,
                          arithmetic_intensity=flops / nbytes if flops else None,
                          caller_ms=median + 0.012, launch_overhead_ms=0.012,
                          launch_overhead_share=0.012 / (median + 0.012))
        results.append(CaseResult(
            id=case_id, name=op, status="ok", nodeid=f"suites/test_{op}.py::{case_id}", params={"n": n, "variant": i},
            device=H200.slug, device_uuid="GPU-0", timer="cuda-events", bytes=nbytes, flops=flops,
            timings={"gpu_time": timing(xs)}, metrics=metrics,
            memory=Memory(peak_allocated_bytes=n * 2, peak_reserved_bytes=n * 4, setup_allocated_bytes=n * 4,
                          nvml_used_delta_bytes=0, fragmentation=0.3, alloc_retries=0),
            telemetry=Telemetry(1965, 1980, 1979.5, 41, 44, 350.0, 420.0, ("sw_power_cap",)), setup_s=0.01, wall_s=0.2))
        status = STATUSES[i % len(STATUSES)]
        change = {"regressed": 12.0, "improved": -9.0, "unstable": 6.0}.get(status, 0.3)
        compared = status != "new"
        # A compared case carries what its verdict rests on (runs, spread, tolerance) and, past the
        # tolerance, the re-measurements that confirmed it or not, as the gate writes them.
        judged = TimeEvidence(noise=Noise(runs=10, spread_pct=0.4, tolerance_pct=5.0, detectable_pct=5.3)) if compared else None
        if judged is not None and status in ("regressed", "unstable"):
            judged = dataclasses.replace(judged, remeasured_ms=(median * 1.001, median * (1.002 if status == "regressed" else 0.95)),
                                         confirmed=status == "regressed")
        verdicts.append(Verdict(case_id, "gpu_time", status, median / (1 + change / 100) if compared else None, median,
                                change if compared else None, 5.0, "baselines/nvidia-h200.json", (), reason=REASONS[status],
                                time=judged))
        if compared:
            verdicts.append(Verdict(case_id, "peak_memory", "same", float(n * 2), float(n * 2), 0.0, 5.0,
                                    "baselines/nvidia-h200.json", (), reason="within"))
    return RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0.1.0", devices=(H200,),
                     results=tuple(results), commit="0123456789abcdef0123", verdicts=tuple(verdicts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, help="also write the HTML here, to look at")
    args = parser.parse_args(argv)
    record = synthetic_record(args.cases, args.samples)
    render_html([record])  # first render: template compilation and imports, reported apart
    # Wall time is what a person waits; the process's CPU time is what the render costs on a
    # machine that other jobs share (the wall time there moves with their load).
    html_s, html_cpu, md_s = [], [], []
    for _ in range(args.repeats):
        start, cpu = time.perf_counter(), time.process_time()
        html = render_html([record])
        html_s.append(time.perf_counter() - start)
        html_cpu.append(time.process_time() - cpu)
        start = time.perf_counter()
        md = render_markdown([record])
        md_s.append(time.perf_counter() - start)
    html_bytes, md_bytes = len(html.encode("utf-8")), len(md.encode("utf-8"))
    if args.out:
        args.out.write_text(html, encoding="utf-8")
    ok_time, ok_size, ok_md = statistics.median(html_s) < TARGET_S, html_bytes < TARGET_BYTES, md_bytes < 60_000
    verdict = {True: "met", False: "MISSED"}
    print(describe())
    print(f"{args.cases} cases, {args.samples} samples each, median of {args.repeats} renders")
    print(f"html:     {statistics.median(html_s):.3f} s (min {min(html_s):.3f}, CPU {statistics.median(html_cpu):.3f}), {html_bytes / 1e6:.2f} MB"
          f"  [targets: < {TARGET_S:g} s {verdict[ok_time]}, < {TARGET_BYTES / 1e6:g} MB {verdict[ok_size]}]")
    print(f"markdown: {statistics.median(md_s):.3f} s, {md_bytes / 1e3:.1f} KB  [target: < 60 KB {verdict[ok_md]}]")
    return 0 if ok_time and ok_size and ok_md else 1


if __name__ == "__main__":
    sys.exit(main())
