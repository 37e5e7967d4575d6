"""Issue 34 part 5: how many rounds `perfguard ab` needs to decide, simulated through its loop.

Each simulated case is judged as ab judges it (perfguard.analysis.paired.judge, the default threshold
and rounds): `--rounds` rounds first, then one more at a time while the case is undecided and more
rounds could decide it (paired.needs_round, the rule ab's loop asks), up to `--max-rounds`.
A round's two medians carry independent normal noise of the given spread a side (each side's
round-to-round standard deviation, as ab's verdict reports it); the head is slower by the change.
Prints, per change and spread: cases regressed / same / inconclusive, and the median and mean rounds
at which the cases were decided. "varied" draws each case's spread from a log-normal around 0.17%
(0.08-0.35% for the middle 90%), the spreads ab_sensitivity.py measured on an H200.

    python3 benchmarks/ab_rounds.py [--cases 1000] [--seed 1]

Targets: +1% decided in a median of <= 6 rounds where the spread is <= 0.2%; unchanged cases never
regressed (the false-alarm rate, ALPHA = 0.001 a case).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfguard import defaults  # noqa: E402
from perfguard.analysis import paired  # noqa: E402

SPREADS = (0.05, 0.1, 0.2, "varied")


def one_case(rng: np.random.Generator, change_pct: float, spread_pct: float, first: int, most: int,
             threshold_pct: float) -> tuple[str, int]:
    base: list[float] = []
    head: list[float] = []
    while True:
        for _ in range(first if not base else 1):
            base.append(math.exp(rng.normal(0.0, spread_pct / 100)))
            head.append((1 + change_pct / 100) * math.exp(rng.normal(0.0, spread_pct / 100)))
        p = paired.judge(base, head, threshold_pct, bound="memory")
        assert p is not None
        if len(base) >= most or not paired.needs_round(p, most):
            return p.status, len(base)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=defaults.AB_ROUNDS)
    ap.add_argument("--max-rounds", type=int, default=defaults.AB_MAX_ROUNDS)
    ap.add_argument("--threshold", type=float, default=defaults.THRESHOLD_PCT)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"ab's loop simulated: {args.rounds} rounds, then one at a time up to {args.max_rounds}; threshold "
          f"{args.threshold:g}%; {args.cases} cases a row, seed {args.seed}")
    print(f"{'change':>7} {'spread':>7} {'regressed':>9} {'same':>6} {'inconcl.':>8} {'rounds median':>13} {'mean':>6}")
    for change in (0.0, 1.0):
        for spread in SPREADS:
            statuses, rounds = [], []
            for _ in range(args.cases):
                s = float(np.exp(rng.normal(math.log(0.17), 0.45))) if spread == "varied" else float(spread)
                status, n = one_case(rng, change, s, args.rounds, args.max_rounds, args.threshold)
                statuses.append(status)
                if status != "inconclusive":
                    rounds.append(n)
            label = spread if isinstance(spread, str) else f"{spread:.2f}%"
            print(f"{change:>+6.1f}% {label:>7} {statuses.count('regressed'):>9} {statuses.count('same'):>6} "
                  f"{statuses.count('inconclusive'):>8} {statistics.median(rounds) if rounds else '-':>13} "
                  f"{statistics.fmean(rounds) if rounds else float('nan'):>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
