"""Issue 32's evidence: nanoGPT's model.py compiled as its train.py compiles it (suites/test_compiled.py).

    python3 benchmarks/compiled_gpu.py OUT record [RUNS]   # RUNS fresh `--perfguard-update` processes (A/A)
    python3 benchmarks/compiled_gpu.py OUT inject           # a graph break, then a recompile per step
    python3 benchmarks/compiled_gpu.py OUT summary          # the table, from OUT's records

Each run is its own process, one after the other on one card, into one baseline (OUT/baselines): run k
is judged against runs 1..k-1 before it joins them, so runs 2..RUNS are the A/A test. `inject` judges,
against that baseline, the same cases with one change each, made from outside model.py (which stays as
published): `torch._dynamo.graph_break()` in every transformer block's forward, and a step counter on
each block that its forward reads (an int attribute: dynamo specialises on it, so every step recompiles).
`summary` prints per run: exit status, verdicts, the compile counters and kernels per call (identical
run to run?), compile time cold and warm, and the counting pass's wall time; for `inject`, the lines
that caught it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # perfguard from the tree; machine.py beside

from machine import plugin_args  # noqa: E402

from perfguard.model import loads_record  # noqa: E402

SUITE = ROOT / "suites" / "test_compiled.py"
INJECT = '''
import os as _os
import torch as _torch
from models.nanogpt import model as _nanogpt

_WHAT = _os.environ.get("PERFGUARD_INJECT", "")
_forward = _nanogpt.Block.forward


def _injected(self, x):
    if _WHAT == "graph_break":
        _torch._dynamo.graph_break()
    out = _forward(self, x)
    if _WHAT == "recompile":
        self.steps = getattr(self, "steps", 0) + 1
        out = out + 0 * self.steps
    return out


_nanogpt.Block.forward = _injected
'''


def run(out: Path, name: str, update: bool, inject: str = "") -> None:
    cases = out / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    (cases / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'suites')!r})\n")
    (cases / "test_nanogpt_compiled.py").write_text(SUITE.read_text() + "\n" + INJECT)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args(), "--perfguard",
           f"--perfguard-baselines={out / 'baselines'}", f"--perfguard-report={out / name}", str(cases)]
    if update:
        cmd.insert(-1, "--perfguard-update")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "PERFGUARD_INJECT": inject}
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    (out / f"{name}.log").write_text(proc.stdout + proc.stderr)
    print(f"{name}: exit {proc.returncode} in {time.monotonic() - start:.0f} s: {(proc.stdout.strip().splitlines() or ['-'])[-1]}",
          flush=True)


def summary(out: Path) -> None:
    rows = []
    paths = [*out.glob("*/perfguard.json"), *out.glob("*.json")]  # a run's report folder, or its record fetched
    for path in sorted(paths, key=lambda p: p.stat().st_mtime):
        record = loads_record(path.read_text(), str(path))
        name = path.parent.name if path.name == "perfguard.json" else path.stem
        for r in record.results:
            c = r.counters
            counts = {k: c.total(k) if c else 0 for k in ("graphs", "graph_breaks", "recompiles", "eager_frames", "kernels")}
            odd = sorted({(v.metric, v.status) for v in record.verdicts if v.case_id == r.id and v.status != "same"})
            rows.append((name, r.id.split("[")[0], r.status, counts, r.median_of("compile_cold"), r.median_of("compile_warm"),
                         r.median_of("gpu_time"), r.median_of("caller_time"), c.wall_s if c else None, odd))
    s = lambda ms: f"{ms / 1e3:.1f} s" if ms else "-"  # noqa: E731
    ms = lambda x: f"{x:.3f} ms" if x is not None else "-"  # noqa: E731
    for run_name, case, status, counts, cold, warm, gpu, caller, wall, odd in rows:
        print(f"{run_name:18} {case:28} {status:5} {json.dumps(counts)} cold {s(cold)} warm {s(warm)} gpu {ms(gpu)} "
              f"caller {ms(caller)} counting {wall or 0:.2f} s; not same: {odd}")
    for case in sorted({r[1] for r in rows}):
        runs = [r for r in rows if r[1] == case and r[0].startswith("run")]
        for i, label in ((4, "cold"), (5, "warm")):
            xs = [r[i] for r in runs if r[i]]
            if len(xs) > 1:
                print(f"{case}: compile {label} over {len(xs)} runs: median {statistics.median(xs) / 1e3:.1f} s, "
                      f"sd {100 * statistics.stdev(xs) / statistics.mean(xs):.1f}%, range {min(xs) / 1e3:.1f}-{max(xs) / 1e3:.1f} s")
        print(f"{case}: counters identical across {len(runs)} processes: {len({json.dumps(r[3]) for r in runs}) == 1}")
    for log in sorted(out.glob("inject-*.log")):
        print(f"--- {log.stem}")
        for line in log.read_text().splitlines():
            if " regressed: " in line and any(f"{k} regressed" in line for k in ("graph_breaks", "recompiles", "graphs", "eager_frames")):
                print("  " + line[:400])


def main(argv: list[str]) -> int:
    out, what = Path(argv[0]), argv[1]
    if what == "record":
        first = len(list(out.glob("run*.log"))) + 1
        for i in range(first, first + (int(argv[2]) if len(argv) > 2 else 5)):
            run(out, f"run{i}", update=True)
    elif what == "inject":
        for inject in ("graph_break", "recompile"):
            run(out, f"inject-{inject}", update=False, inject=inject)
    summary(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
