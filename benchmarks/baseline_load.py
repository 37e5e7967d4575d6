"""How long reading a normal baseline takes: `store.load_file` on the committed baselines/nvidia-h200.json
(132 cases, 1,240 runs, 1.2 MB), against `json.load` of the same file, which any reader pays.

    python benchmarks/baseline_load.py [--file baselines/nvidia-h200.json] [--repeats 20]

Every run of `pytest --perfguard`, `perfguard baseline show|accept|merge` and `perfguard ab` reads its
baselines this way: one typed decode (msgspec, model/schema.py), the checks no type states (model/checks.py),
the dataclasses built (a case's runs when first read, model/layout.py). The ratio to json.load says what perfguard adds, and moves less with the machine's
load than the seconds do (a shared CPU's timings move with what else runs; both are measured by turns).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from machine import describe

from perfguard import store

ROOT = Path(__file__).resolve().parent.parent


def timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=ROOT / "baselines" / "nvidia-h200.json")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)

    def plain() -> None:
        with args.file.open(encoding="utf-8") as f:
            json.load(f)

    baseline = store.load_file(args.file)  # once first: imports and the codec's per-class caches
    assert baseline is not None, args.file
    loads, parses = [], []
    for _ in range(args.repeats):  # by turns, so that a change in the machine's load falls on both
        loads += timed(lambda: store.load_file(args.file), 1)
        parses += timed(plain, 1)
    runs = sum(len(e.runs) for e in baseline.cases.values())
    print(describe())
    print(f"{args.file.name}: {args.file.stat().st_size / 1e6:.2f} MB, {len(baseline.cases)} cases, {runs} runs; "
          f"{args.repeats} reads each, by turns")
    for name, times in (("store.load_file", loads), ("json.load", parses)):
        print(f"  {name:<16} median {statistics.median(times) * 1e3:7.1f} ms  min {min(times) * 1e3:7.1f} ms")
    print(f"  ratio (medians)  {statistics.median(loads) / statistics.median(parses):.1f}× json.load")
    return 0


if __name__ == "__main__":
    sys.exit(main())
