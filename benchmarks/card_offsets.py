"""How far cards of one GPU model sit apart, per kind of time and case: the table behind the card-to-card
priors (perfguard/analysis/priors.py CARD_PCT) and docs/gate.md.

    python benchmarks/card_offsets.py [BASELINE.json]   (default: baselines/nvidia-h200.json)

For each case and kind of time with runs from two cards or more, the median of each card's runs, then
the standard deviation of those per-card medians (on the log scale, %) and the largest offset of one
card from their median. Printed per kind of time, roofline bound and size (under or over 20 µs, where
an absolute host-to-host offset of about a microsecond dominates): cases, cards, and the 50th / 90th
percentile and the largest of the spread, and the 90th percentile of the largest offset. Reads the
baseline only: no device.
"""

from __future__ import annotations

import collections
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard.model import TIME_METRICS, BaselineFile, loads_baseline  # noqa: E402

SMALL_MS = 0.02


def table(baseline: BaselineFile) -> tuple[dict[str, int], dict[tuple[str, str, str], list[tuple[float, float, int]]]]:
    rows: dict[tuple[str, str, str], list[tuple[float, float, int]]] = collections.defaultdict(list)
    cards: dict[str, set[str]] = collections.defaultdict(set)
    for entry in baseline.cases.values():
        bound = str(entry.result.metrics.bound if entry.result.metrics else None)
        for metric in TIME_METRICS:
            by_card: dict[str, list[float]] = collections.defaultdict(list)
            for run in entry.runs:
                median = run.median_of(metric)
                if median and run.device_uuid:
                    by_card[run.device_uuid].append(median)
            if len(by_card) < 2:
                continue
            medians = [statistics.median(v) for v in by_card.values()]
            spread = 100 * statistics.stdev(math.log(m) for m in medians)
            centre = statistics.median(medians)
            largest = 100 * max(abs(m / centre - 1) for m in medians)
            size = "<20us" if centre < SMALL_MS else ">=20us"
            rows[metric, bound, size].append((spread, largest, len(by_card)))
            cards[metric] |= set(by_card)
    return {m: len(c) for m, c in cards.items()}, rows


def q(xs: list[float], p: float) -> float:
    """The p-quantile of sorted `xs`, as the table prints it."""
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def busy_above_gpu(baseline: BaselineFile, over: float = 1.08, at_least_ms: float = 0.3) -> list[str]:
    """Per card and run: of the memory-bound cases of `at_least_ms` or more, how many read a busy time more
    than `over` times their GPU time in that run. The profiled pass sometimes reads a long kernel's busy time
    about 10% long and sometimes not, whatever the card: that is run-to-run noise, which a card's median of
    three runs turns into an apparent card offset in the busy-time rows above."""
    runs: dict[tuple[str, str], list[bool]] = collections.defaultdict(list)
    for entry in baseline.cases.values():
        if not (entry.result.metrics and str(entry.result.metrics.bound) == "memory"):
            continue
        for run in entry.runs:
            gpu, busy = run.median_of("gpu_time"), run.median_of("busy_time")
            if gpu and busy and gpu >= at_least_ms and run.device_uuid:
                runs[run.device_uuid, run.recorded_at].append(busy > over * gpu)
    return [f"{card[:12]} run of {at[:19]}: {sum(high)} of {len(high)}" for (card, at), high in sorted(runs.items())]


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else ROOT / "baselines" / "nvidia-h200.json"
    baseline = loads_baseline(path.read_text(encoding="utf-8"), str(path))
    cards, rows = table(baseline)
    print(f"# {path.name}: cards with runs of each kind of time: " + ", ".join(f"{m} {n}" for m, n in cards.items()))
    print(f"{'time':12} {'bound':8} {'size':7} {'cases':>5} {'cards':>5} {'sd p50':>7} {'sd p90':>7} {'sd max':>7} {'off p90':>8}")
    for key in sorted(rows):
        values = rows[key]
        sds, offs = sorted(v[0] for v in values), sorted(v[1] for v in values)
        cards_median = statistics.median(v[2] for v in values)
        print(f"{key[0]:12} {key[1]:8} {key[2]:7} {len(values):5} {cards_median:5.0f} {q(sds, .5):6.2f}% {q(sds, .9):6.2f}% "
              f"{sds[-1]:6.2f}% {q(offs, .9):7.2f}%")
    print("# memory-bound cases of 0.3 ms or more whose busy time reads over 8% above their GPU time, per run")
    print("\n".join(busy_above_gpu(baseline)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
