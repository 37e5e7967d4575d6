"""Does L% more work cost L% more time? benchmarks/ab_sensitivity.py's slowdowns, timed by hand.

Every case of benchmarks/ab_sensitivity_suite.py, built once as the base builds it (HEAD = False) and
once as the head does (HEAD = True: L% more rows or elements), is timed in this one process without
perfguard: CUDA events around --reps calls after 3 warm-up calls, base and head by turns (B H, H B,
...) for --rounds rounds. It prints per case the head's time over the base's (the median of the
rounds' ratios, and their spread), and per level how many cases moved at least 0.9 of the level.
That is the denominator ab_sensitivity's "caught at 1%" should be read against: a case whose time
moved half a percent is rightly `same` under a 1% threshold.

    python benchmarks/work_scaling_probe.py [--sizes 5] [--rounds 7] [--reps 20]
    python benchmarks/work_scaling_probe.py --device cpu --scale 1e-4   # a smoke run, no GPU: times are rough

--scale multiplies every size (a CPU cannot hold the suite's 256 MiB-1.5 GiB inputs in its caches,
nor run them in seconds).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # as when run as a script: its sibling below

from ab_sensitivity import MOVED  # noqa: E402  (what "moved" means, as ab_sensitivity counts it)
from perfguard import units  # noqa: E402

SUITE = ROOT / "benchmarks" / "ab_sensitivity_suite.py"
OPERATORS = ("copy", "add", "gelu", "scale", "layer_norm", "softmax")
WARMUP = 3


def load_suite() -> Any:
    spec = importlib.util.spec_from_file_location("ab_sensitivity_suite", SUITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(suite: Any, op: str, size: int, level: int, head: bool, device: str) -> Callable[[], Any]:
    suite.HEAD = head  # the suite's functions read it when they size their inputs
    try:
        return getattr(suite, op).setup(size=size, level=level, device=device)
    finally:
        suite.HEAD = False


def per_call_ms(fn: Callable[[], Any], reps: int, cuda: bool) -> float:
    for _ in range(WARMUP):
        fn()
    if not cuda:
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - start) * 1e3 / reps
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    begin.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) / reps


def probe(suite: Any, op: str, size: int, level: int, args: argparse.Namespace) -> tuple[float, float, float]:
    """(base ms, the head's change in % (median of the rounds' ratios), the ratios' spread in points)."""
    cuda = args.device == "cuda"
    sides = {"base": build(suite, op, size, level, False, args.device), "head": build(suite, op, size, level, True, args.device)}
    times: dict[str, list[float]] = {"base": [], "head": []}
    for r in range(args.rounds):
        for name in ("base", "head") if r % 2 == 0 else ("head", "base"):
            times[name].append(per_call_ms(sides[name], args.reps, cuda))
    del sides
    if cuda:  # up to 3 GiB a case: none of it may still be held (even by a cycle) when the next is built
        gc.collect()
        torch.cuda.empty_cache()
    ratios = [100 * (h / b - 1) for b, h in zip(times["base"], times["head"])]
    spread = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
    return statistics.median(times["base"]), statistics.median(ratios), spread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, default=5, help="the suite's first N sizes (ab_sensitivity's --sizes)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--reps", type=int, default=20, help="calls per timing")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size (a CPU smoke run: 1e-4)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("work_scaling_probe: no CUDA GPU here; --device cpu --scale 1e-4 runs it on the CPU as a smoke run")
    suite = load_suite()
    sizes = [max(1 << 12, int(s * args.scale)) for s in suite.SIZES[: args.sizes]]
    levels = [level for level in suite.LEVELS if level]
    where = torch.cuda.get_device_name() if args.device == "cuda" else "the CPU (rough)"
    print(f"# {where}, torch {torch.__version__}; {args.rounds} rounds of {args.reps} calls a side, by turns")
    print(f"{'case':<34} {'base':>10}  " + "  ".join(f"{f'+{level}% work':>16}" for level in levels))
    moved = {level: 0 for level in levels}
    cases = 0
    for op in OPERATORS:
        for size in sizes:
            cells = []
            base_ms = None
            for level in levels:
                base_ms, change, spread = probe(suite, op, size, level, args)
                moved[level] += change >= MOVED * level
                cells.append(f"{change:+6.2f}% ±{spread:4.2f}")
            cases += 1
            print(f"{f'{op}[{units.size(size)}]':<34} {base_ms:>8.4f}ms  "
                  + "  ".join(f"{c:>16}" for c in cells), flush=True)
    print(f"moved >= {MOVED} of the level: " + ", ".join(f"+{level}%: {moved[level]} of {cases}" for level in levels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
