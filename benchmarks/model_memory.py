"""Does the memory breakdown explain GPT-2 small's training step (suites/test_models.py) at every batch?

Each training-step case is measured by perfguard's runner (its breakdown included) in this process;
printed per batch: the share of the peak in named categories, parameters and optimizer state against
the model's and AdamW's own tensors (Σ numel × element size), gradients, activations and temporaries,
where the peak falls; then the scaling fit of the activations along the batch.

    python benchmarks/model_memory.py                # GPT-2 small on the GPU
    python benchmarks/model_memory.py --device cpu   # a small GPT on the CPU, the profiler's path

Issue 12's target: at least 90% named at every batch; parameters, gradients and optimizer state exact
where live; activations per batch unit reported by the scaling fit.

`--device cpu` (issue 18): GPT-2 small's bf16 step takes seconds on a CPU, so a GPT of the same code
at a small size (CPU_CONFIGS), the suite's own step (bf16 autocast, AdamW), warmed up and broken down
as the runner does it, at batches 4, 8 and 16: the peak, each category, the unnamed share, and for
comparison the share torch's own memory-profiler categories (torch.profiler._memory_profiler, which
perfguard's CPU path used before) leave unnamed at the same step.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import platform
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites"))
import test_models  # noqa: E402

from perfguard.analysis.scaling import scalings  # noqa: E402
from perfguard.measure import breakdown, runner  # noqa: E402
from perfguard.measure.device import detect  # noqa: E402
from perfguard.measure.timers import SamplingRule  # noqa: E402
from perfguard.model.measured import BREAKDOWN_BYTES  # noqa: E402

MIB = 2**20
# Small enough to step in well under a second on a CPU; the first's peak falls in AdamW's step, the
# second's in the backward pass.
CPU_CONFIGS = {
    "1 layer, width 128, 8 tokens": test_models.GPTConfig(block_size=8, vocab_size=128, n_layer=1, n_head=4, n_embd=128),
    "2 layers, width 128, 64 tokens": test_models.GPTConfig(block_size=64, vocab_size=512, n_layer=2, n_head=4, n_embd=128),
}
CPU_BATCHES = (4, 8, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    if parser.parse_args().device == "cpu":
        cpu()
    else:
        gpu()


def cpu() -> None:
    device = detect("cpu")
    print(f"{datetime.date.today()} {device.name} ({platform.machine()}), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; bf16 autocast, AdamW, one step after a warm-up one; sizes in MiB")
    fields = [f for f in BREAKDOWN_BYTES if f != "autograd_detail"]  # a category of old records only
    print(f"| model | batch | peak | {' | '.join(f.replace('_', ' ') for f in fields)} | unnamed | peak in | torch's categories: unnamed |")
    print("|" + " --- |" * (len(fields) + 6))
    for name, config in CPU_CONFIGS.items():
        for batch in CPU_BATCHES:
            step = _cpu_step(config, batch)
            b = breakdown.measure(step, device)
            if b.error:
                print(f"| {name} | {batch} | {b.error} |")
                continue
            cells = " | ".join(f"{getattr(b, f) / MIB:.2f}" for f in fields)
            print(f"| {name} | {batch} | {b.peak_bytes / MIB:.2f} | {cells} | {b.unknown / b.peak_bytes:.1%} | "
                  f"{b.peak_phase} at {b.peak_at} | {_torch_categories_unnamed(step):.1%} |", flush=True)
            if b.unnamed_reason:
                print(f"|  | | unnamed: {b.unnamed_reason} |")


def _cpu_step(config, batch: int):
    model = test_models.gpt(config, "cpu")
    x, y = test_models.token_batch(config, batch, config.block_size, "cpu")
    step = test_models.train_step_call(model, x, y, torch.bfloat16)
    step()  # AdamW makes its state at the first step
    return step


def _torch_categories_unnamed(step) -> float:
    """The share of the peak torch's memory profiler ties to no category, walked as perfguard's CPU
    path walked it until issue 18 (events of one timestamp together, negative categories at 0)."""
    from torch.profiler import _memory_profiler as mp

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True, with_stack=True) as prof:
        step()
    profile = prof._memory_profile()
    live = {"named": 0, "unnamed": 0}
    best = dict(live)

    def part(key, version):
        category = profile._categories.get(key, version) if isinstance(key, mp.TensorKey) else None
        return "named" if category is not None else "unnamed"

    for _, events in itertools.groupby(profile.timeline, key=lambda e: e[0]):
        for _, action, (key, version), nbytes in events:
            if key.device.type != "cpu":
                continue
            if action in (mp.Action.PREEXISTING, mp.Action.CREATE):
                live[part(key, version)] += nbytes
            elif action == mp.Action.INCREMENT_VERSION:
                live[part(key, version)] -= nbytes
                live[part(key, version + 1)] += nbytes
            elif action == mp.Action.DESTROY:
                live[part(key, version)] -= nbytes
        if sum(live.values()) > sum(best.values()):
            best = dict(live)
    best = {k: max(v, 0) for k, v in best.items()}
    return best["unnamed"] / max(sum(best.values()), 1)


def gpu() -> None:
    device = detect("cuda")
    with torch.device("meta"):
        model = test_models.GPT(test_models.GPT2_SMALL)
    params = sum(p.numel() * 4 for p in model.parameters())  # float32 weights, the tied matrix once
    # Fused AdamW: exp_avg and exp_avg_sq per parameter (float32), and a float32 step tensor each.
    state = 2 * params + 4 * len(list(model.parameters()))
    results = []
    print(f"{datetime.date.today()} {device.name}: parameters {params / MIB:.1f} MiB, AdamW state {state / MIB:.1f} MiB expected")
    for instance in test_models.gpt2_train_step.instances("cuda"):
        r = runner.measure(instance, device, SamplingRule(budget_s=1.0))
        results.append(r)
        b = r.memory_breakdown
        if b is None or b.error:
            print(instance.id, r.status, r.error or (b.error if b else "no breakdown"))
            continue
        named = 1 - b.unknown / b.peak_bytes
        print(f"{instance.id}: peak {b.peak_bytes / MIB:,.0f} MiB, {named:.1%} named; parameters {b.parameters / MIB:.1f} MiB "
              f"({'exact' if b.parameters == params else f'{b.parameters - params:+,} B'}), optimizer state {b.optimizer_state / MIB:.1f} MiB "
              f"({'exact' if b.optimizer_state == state else f'{b.optimizer_state - state:+,} B'}), gradients {b.gradients / MIB:.1f} MiB, "
              f"activations {b.activations / MIB:,.0f} MiB, temporaries {b.temporaries / MIB:,.0f} MiB, inputs {b.inputs / MIB:.2f} MiB, "
              f"unknown {b.unknown / MIB:.1f} MiB; peak in {b.peak_phase} at {b.peak_at} ({b.method}); "
              f"allocator's peak {r.memory.peak_allocated_bytes / MIB:,.0f} MiB over the call", flush=True)
    for s in scalings(results, [device]):
        if s.activations is not None:
            per = f", {s.activations_per_unit / MIB:,.0f} MiB per unit of {s.parameter}" if s.activations_per_unit else ""
            print(f"scaling of {s.name} along {s.parameter}: activations {s.activations.label}{per} (r² {s.activations.r2:.4f})")


if __name__ == "__main__":
    main()
