"""Issue 4's checks on a GPU run record: bounds, Triton against torch softmax, the training-step breakdown.

    python benchmarks/explain.py reports/perfguard.json

Prints one row per check with the figure it rests on and PASS or FAIL; exits 1 when a check fails.
The record must come from `pytest --perfguard suites/` on a GPU (the suites' GPU sizes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard.model import CaseResult, loads_record  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path)
    args = parser.parse_args()
    record = loads_record(args.record.read_text(encoding="utf-8"), str(args.record))
    results = {r.id: r for r in record.results if r.status == "ok"}
    rows: list[tuple[str, str, bool]] = []

    def find(prefix: str, *parts: str) -> CaseResult | None:
        hits = [r for cid, r in sorted(results.items()) if cid.startswith(prefix + "[") and all(p in cid for p in parts)]
        return hits[0] if hits else None

    def bound(label: str, r: CaseResult | None, want: str) -> None:
        if r is None:
            rows.append((label, "case not in the record", False))
            return
        m = r.metrics
        text = (f"{r.id}: bound={m.bound}, {r.judged_time.median_ms * 1e3:.1f} µs, overhead share "
                f"{m.launch_overhead_share:.2f}, BW util {m.bandwidth_util or 0:.3f}, efficiency {m.efficiency or 0:.3f}, "
                f"roofs {m.roofs}")
        rows.append((label, text, m.bound == want))

    bound("1 GiB copy is memory-bound", find("device_copy", "nbytes=1073741824"), "memory")
    bound("softmax is memory-bound", find("softmax", "cols=4096", "float16"), "memory")
    bound("8192³ bf16 matmul is compute-bound", find("matmul", "m=8192", "bfloat16"), "compute")
    bound("1M-element add is launch-bound", find("add", "n=1048576", "float32"), "launch")

    for dtype in ("float16", "float32"):
        torch_sm, triton_sm = find("softmax", "cols=4096", dtype), find("triton_softmax", "cols=4096", dtype)
        if torch_sm is None or triton_sm is None:
            rows.append((f"Triton vs torch softmax ({dtype})", "a case is missing", False))
            continue
        faster = triton_sm.judged_time.median_ms < torch_sm.judged_time.median_ms
        ut, uo = triton_sm.metrics.bandwidth_util, torch_sm.metrics.bandwidth_util
        text = (f"triton {triton_sm.judged_time.median_ms * 1e3:.1f} µs util {ut:.3f}; torch "
                f"{torch_sm.judged_time.median_ms * 1e3:.1f} µs util {uo:.3f}; triton faster: {faster}")
        # The claim to check: if Triton is faster, its utilisation is clearly (>1%) higher.
        rows.append((f"Triton vs torch softmax ({dtype})", text, (ut > uo * 1.01) if faster else True))

    for step in sorted((r for r in results.values() if r.name.startswith("training_step")), key=lambda r: r.id):
        rows.extend(_breakdown_rows(step))

    width = max(len(label) for label, _, _ in rows)
    for label, text, ok in rows:
        print(f"{'PASS' if ok else 'FAIL'}  {label.ljust(width)}  {text}")
    return 0 if all(ok for _, _, ok in rows) else 1


def _breakdown_rows(step: CaseResult) -> list[tuple[str, str, bool]]:
    import torch

    sys.path.insert(0, str(ROOT / "suites"))
    from test_training_step import block  # the suite's own model: its parameters, counted by hand

    b = step.memory_breakdown
    p = step.params
    label = f"training step breakdown (B={p.get('batch')} S={p.get('seq')} {p.get('dtype')})"
    if b is None or b.error:
        return [(label, f"no breakdown: {b.error if b else 'not captured'}", False)]
    model = block(step.params["d_model"], step.params["heads"], device="meta")
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    del torch
    gib = 2**30
    text = (f"parameters {b.parameters / gib:.4f} GiB (hand: {params / gib:.4f}), Adam state {b.optimizer_state / gib:.4f} "
            f"(2x: {2 * params / gib:.4f}), gradients {b.gradients / gib:.4f}, activations {b.activations / gib:.3f}, "
            f"temporaries {b.temporaries / gib:.3f}, unknown {b.unknown / gib:.3f}, peak {b.peak_bytes / gib:.3f} GiB "
            f"in {b.peak_phase or 'n/a'} ({b.method or 'method not recorded'})")
    return [(label, text, b.parameters == params and b.optimizer_state == 2 * params)]


if __name__ == "__main__":
    sys.exit(main())
