"""Memory across calls on nanoGPT's training step (its model.py as published, not rewritten): issue 19, item 2.

    python benchmarks/retained_memory.py --nanogpt DIR     # DIR holds nanoGPT's model.py

In one process, on a CUDA GPU, with perfguard's runner as the plugin runs it:
1. a batch sweep (1, 2, 4, 8) measured first, so that batch 1 is the first case of the process to
   multiply: its footprint fit must read linear, with the slope a hand measurement gives (the growth
   of torch's own peak over a fresh setup and three steps, between batch 4 and 8; at batch 1 the step
   peaks where nothing grows with the batch, so the fit may start at batch 2);
2. a baseline of the unchanged step (batch 8), then 3 runs each of: the unchanged step (A/A: no false
   alarm), gradients kept between steps (`optimizer.zero_grad(set_to_none=False)`), and a tensor
   appended to a list every call (1 MiB: a leak). Each run is judged against the baseline by the
   memory verdicts (peak, footprint, retained per call); latency is not judged here.
Prints a short table: per run the footprint, what a call retains, the memory verdicts; then caught n/3
with the message, and the sweep's fit.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import sys
from pathlib import Path

import torch

from perfguard import perf_case
from perfguard.analysis.scaling import scalings
from perfguard.analysis.verdict import as_entry, compare_case
from perfguard.measure import runner
from perfguard.measure.device import detect
from perfguard.measure.timers import SamplingRule
from perfguard.report import words

MIB = 2**20
BLOCK = 256  # tokens per sequence: GPT-2 small's weights and AdamW state, a step that fits at batch 8 quickly
MEMORY_METRICS = ("peak_memory", "footprint", "retained_memory")
VARIANTS = {"unchanged": "unchanged step (A/A)", "grads_kept": "gradients kept between steps",
            "leak": "1 MiB appended to a list every call"}


def make_case(model_py: Path):
    sys.path.insert(0, str(model_py))
    from model import GPT, GPTConfig  # nanoGPT's own

    @perf_case(params={"batch": [1, 2, 4, 8], "variant": list(VARIANTS)}, budget_s=0.5)
    def nanogpt_train_step(batch, variant, device):
        torch.manual_seed(0)
        with contextlib.redirect_stdout(io.StringIO()), torch.device(device):  # nanoGPT prints its parameter counts
            model = GPT(GPTConfig(block_size=BLOCK, dropout=0.0))  # made on the GPU: seconds faster than .to()
            optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")
        x = torch.randint(0, 50304, (batch, BLOCK), device=device)
        y = torch.randint(0, 50304, (batch, BLOCK), device=device)
        history = []

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                _, loss = model(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=variant != "grads_kept")
            if variant == "leak":
                history.append(torch.empty(MIB, dtype=torch.uint8, device=device))
            return loss

        return step

    return nanogpt_train_step


def hand_footprint(spec, batch: int) -> int:
    """torch's own peak over a fresh setup and three steps, from before the setup."""
    (instance,) = [i for i in spec.instances("cuda") if i.kwargs == {"batch": batch, "variant": "unchanged"}]
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step = spec.setup(batch=batch, variant="unchanged", device="cuda")
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del step
    torch.cuda.empty_cache()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanogpt", type=Path, required=True, help="the folder holding nanoGPT's model.py")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    spec = make_case(args.nanogpt)
    device = detect("cuda")
    instances = {(i.kwargs["batch"], i.kwargs["variant"]): i for i in spec.instances("cuda")}

    def measure(batch: int, variant: str):
        r = runner.measure(instances[batch, variant], device, SamplingRule(budget_s=0.5))
        if r.status != "ok":
            raise SystemExit(f"{r.id}: {r.error}")
        return r

    print(f"{datetime.date.today()} {device.name} ({device.uuid}), torch {torch.__version__}; nanoGPT GPT-2 small, "
          f"block {BLOCK}, bf16 autocast, fused AdamW")
    sweep = [measure(b, "unchanged") for b in (1, 2, 4, 8)]  # first in the process: batch 1 multiplies first
    baseline = measure(8, "unchanged")
    entry = as_entry(baseline, "baseline")
    rows, caught = [], {}
    for variant in VARIANTS:
        for run in range(1, args.runs + 1):
            r = measure(8, variant)
            verdicts = [v for v in compare_case(r, entry) if v.metric in MEMORY_METRICS]
            failed = [v for v in verdicts if v.status == "regressed"]
            caught.setdefault(variant, []).append(failed)
            m = r.memory
            rows.append((VARIANTS[variant], str(run), f"{m.footprint_bytes / MIB:,.1f} MiB",
                         f"{m.retained_bytes_per_call / MIB:.3f} MiB", f"{m.setup_allocated_bytes / MIB:,.1f} MiB",
                         ", ".join(f"{v.metric} {v.status}" for v in verdicts)))
    bm = baseline.memory
    print(f"baseline (batch 8, unchanged): footprint {bm.footprint_bytes / MIB:,.1f} MiB, held between calls "
          f"{bm.setup_allocated_bytes / MIB:,.1f} MiB, peak over live {bm.peak_allocated_bytes / MIB:,.1f} MiB, "
          f"retained {bm.retained_bytes_per_call} B per call")
    header = ("variant", "run", "footprint", "retained/call", "held", "memory verdicts")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    for variant, runs in caught.items():
        n = sum(bool(f) for f in runs)
        if variant == "unchanged":
            print(f"{VARIANTS[variant]}: no false alarm {args.runs - n}/{args.runs}")
        else:
            first = next((words.line(f[0]) for f in runs if f), "not caught")
            print(f"{VARIANTS[variant]}: caught {n}/{args.runs}: {first}")

    (fit,) = [s for s in scalings(sweep, [device]) if s.parameter == "batch"]
    hand = {b: hand_footprint(spec, b) for b in (4, 8)}
    hand_slope = (hand[8] - hand[4]) / 4
    m = fit.memory
    print("sweep (batch 1, 2, 4, 8; batch 1 first in the process): footprint "
          + ", ".join(f"{r.memory.footprint_bytes / MIB:,.1f}" for r in sweep) + " MiB; held between calls "
          + ", ".join(f"{r.memory.setup_allocated_bytes / MIB:,.1f}" for r in sweep) + " MiB")
    forecast = f"fits up to batch ≈ {fit.fits_up_to:,.0f}" if fit.fits_up_to else "no forecast"
    start = f" from batch {fit.memory_from:g}" if fit.memory_from is not None else ""
    print(f"fit: memory {m.label}{start} (k={m.exponent:.2f}, R²={m.r2:.4f}), {m.coefficient / MIB:.2f} MiB per unit of "
          f"batch (hand, torch's peak between batch 4 and 8: {hand_slope / MIB:.2f} MiB), constant {m.constant / MIB:,.1f} "
          f"MiB; {forecast}")

if __name__ == "__main__":
    main()
