"""What keeping where a call's time and memory went costs the counting pass (issue 45), on a GPU.

    python3 benchmarks/split_cost.py [ROUNDS]

For three cases (a 1M-element add, a 4096² bf16 matmul, and nanoGPT's GPT-2 small training step as
suites/models/nanogpt publishes it, batch 8 x 256, bf16 autocast), the counting pass
(measure/counters.py `count`) with the allocations by operator off and on (profile_memory: the
profiler's memory events), alternating, ROUNDS times each (default 3): the pass's wall time (median),
what the split itself took of it, and the rows kept. The suite's cost follows from the cases' passes:
docs/gate.md, "Where a time moved".
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard.measure import counters  # noqa: E402
from suites.models.nanogpt import model as nanogpt  # noqa: E402


def cases() -> dict[str, object]:
    a, b = torch.randn(2**20, device="cuda"), torch.randn(2**20, device="cuda")
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.manual_seed(0)
    model = nanogpt.GPT(nanogpt.GPTConfig(block_size=1024, vocab_size=50304, n_layer=12, n_head=12, n_embd=768,
                                          dropout=0.0)).cuda()
    opt = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")
    idx = torch.randint(0, 50304, (8, 256), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(idx, idx)[1]
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return {"add[n=2^20]": lambda: a + b, "matmul[4096 bf16]": lambda: x @ x, "gpt2_train_step[batch=8]": step}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    spent = {"split": 0.0}
    plain = counters.split

    def timed(*args):
        started = time.perf_counter()
        out = plain(*args)
        spent["split"] += time.perf_counter() - started
        return out

    counters.split = timed
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {rounds} rounds a side")
    print(f"{'case':26} {'pass, allocations off':>22} {'on':>9} {'cost':>8} {'split':>8} {'kernel rows':>11} {'alloc rows':>10}")
    for name, fn in cases().items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        walls: dict[bool, list[float]] = {False: [], True: []}
        split_ms, kept = 0.0, None
        for i in range(2 * rounds):
            on = bool(i % 2) != bool((i // 2) % 2)  # off on, on off, ...: neither side always first
            spent["split"] = 0.0
            started = time.perf_counter()
            counted, _ = counters.count(fn, True, allocations=on)
            walls[on].append(time.perf_counter() - started)
            if on:
                split_ms, kept = spent["split"] * 1e3, counted
        off, on_ = statistics.median(walls[False]), statistics.median(walls[True])
        print(f"{name:26} {off * 1e3:19.1f} ms {on_ * 1e3:6.1f} ms {100 * (on_ / off - 1):+7.1f}% {split_ms:6.1f} ms "
              f"{len(kept.kernel_time.named_ms):11d} {len(kept.alloc_bytes.named_bytes):10d}")


if __name__ == "__main__":
    main()
