"""Does the memory breakdown explain GPT-2 small's training step (suites/test_models.py) at every batch?

Each training-step case is measured by perfguard's runner (its breakdown included) in this process;
printed per batch: the share of the peak in named categories, parameters and optimizer state against
the model's and AdamW's own tensors (Σ numel × element size), gradients, activations and temporaries,
where the peak falls; then the scaling fit of the activations along the batch.

    python benchmarks/model_memory.py

Issue 12's target: at least 90% named at every batch; parameters, gradients and optimizer state exact
where live; activations per batch unit reported by the scaling fit.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites"))
import test_models  # noqa: E402

from perfguard.analysis.scaling import scalings  # noqa: E402
from perfguard.measure import runner  # noqa: E402
from perfguard.measure.device import detect  # noqa: E402
from perfguard.measure.timers import SamplingRule  # noqa: E402

MIB = 2**20


def main() -> None:
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
