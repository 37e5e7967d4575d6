"""What can `perfguard history` find? asv's step detection on synthetic histories, by run-to-run noise.

Each history is a list of per-commit levels (1.0 = the figure at the first commit); every commit's
figure gets Gaussian run-to-run noise of the given relative size; a history counts as flagged when
asv's `detect_regressions(detect_steps(y), 0.05)` (the calls `perfguard history` makes, at its
default 5% threshold, with equal weights) reports a regression. CPU only, about 10 s.

    python benchmarks/history_detection.py [--seeds 100]
"""

from __future__ import annotations

import argparse

import numpy as np
from asv.step_detect import detect_regressions, detect_steps

HISTORIES = {
    "+20% at commit 3 of 6": [1.0] * 2 + [1.2] * 4,
    "+10% at commit 3 of 6": [1.0] * 2 + [1.1] * 4,
    "two +3.5% steps, 9 commits": [1.0] * 3 + [1.035] * 3 + [1.035**2] * 3,
    "two +3.5% steps, 15 commits": [1.0] * 5 + [1.035] * 5 + [1.035**2] * 5,
    "+2.5% a commit for 4 of 6 commits": [1.0, 1.0] + [1.025**i for i in range(1, 5)],
    "steady, 9 commits": [1.0] * 9,
}
NOISE = (0.001, 0.003, 0.01)


def flagged(levels: list[float], noise: float, seeds: int) -> int:
    hits = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        y = [v * (1 + rng.normal(0, noise)) for v in levels]
        hits += detect_regressions(detect_steps(y), 0.05)[2] is not None
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    print("| history | " + " | ".join(f"noise {100 * n:.1f}%" for n in NOISE) + " |")
    print("| --- |" + " ---: |" * len(NOISE))
    for name, levels in HISTORIES.items():
        print(f"| {name} | " + " | ".join(f"{flagged(levels, n, args.seeds)}/{args.seeds}" for n in NOISE) + " |")


if __name__ == "__main__":
    main()
