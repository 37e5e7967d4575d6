"""Issue 34 part 4: does cheaper sampling read the same figures? The old rule against the new, per case.

For every operator case of `suites/` on the GPU, in one process, --rounds interleaved rounds of
`measure` under two sampling rules (the plugin's default budget):
  - old: the rule before issue 34's part 4: 100 ms of GPU samples after the 25 ms warm-up (0.125 s of
    load from the warm-up's start), then the caller's samples of 10 ms each, each synchronised before
    and after, 50 ms to 175 ms of them (about what the old deadline left);
  - new: the default SamplingRule (timers.py): 100 ms of load counted from the warm-up's start (40 ms
    for a case its declared work puts against the memory roof), the caller's samples of 4 ms, 40 ms to
    75 ms of them, none synchronised (timers.CallerTimer).
Prints per case the new/old ratio of the GPU time's and the caller's time's medians (the median over
the rounds), and each rule's measuring wall time (warm-up to the memory pass's end, and every pass of
CaseResult.passes_s); then the summary: how many cases agree within 1% and 2%, the worst, and the
median measuring time per case under each rule. The ratio holds two measurements' own noise: an
unchanged rule reads about 1 +- the case's within-process spread.

    python3 benchmarks/sampling_cost.py [--rounds 3] [--only SUBSTRING] [--trace]

--trace also prints, for the 8192^3 bf16 matmul after 1 s idle, each 10 ms of back-to-back calls'
median event time against the last 100 ms of a 400 ms stretch: how long its clocks take to settle,
which is what the GPU samples' minimum time is for.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from accuracy import suite_instances  # noqa: E402

from perfguard.measure import passes, runner, timers  # noqa: E402
from perfguard.measure.device import detect  # noqa: E402
from perfguard.measure.timers import SamplingRule  # noqa: E402


class SyncedCallerTimer(timers.CallerTimer):
    """The caller's timer before issue 34's part 4: each sample synchronised before and after."""

    def take(self, k: int) -> list[float]:
        out = []
        for _ in range(k):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(self.calls):
                self.fn()
            torch.cuda.synchronize()
            out.append((time.perf_counter_ns() - t0) / 1e6 / self.calls)
        return out


TIMERS = {"old": SyncedCallerTimer, "new": timers.CallerTimer}
RULES = {
    "old": SamplingRule(min_time_s=0.1 + passes.WARMUP_S, memory_min_time_s=0.1 + passes.WARMUP_S, caller_sample_s=0.01,
                        caller_min_time_s=0.05, caller_share=0.35),
    "new": SamplingRule(),
}


def measured(inst, device, name: str) -> tuple[float, float | None, float]:
    passes.CallerTimer = TIMERS[name]  # the one the passes make the caller's samples with
    try:
        r = runner.measure(inst, device, RULES[name])
    finally:
        passes.CallerTimer = timers.CallerTimer
    if r.status != "ok":
        raise RuntimeError((r.error or "").splitlines()[0])
    caller = r.timings.get("caller_time")
    pass_s = sum(v for k, v in r.passes_s.items() if k not in ("counters", "memory_breakdown", "first_call"))
    return r.judged_time.median_ms, caller.summary.median_ms if caller and r.regime != "caller" else None, pass_s


def trace(device) -> list[str]:
    """Each 10 ms of back-to-back calls after 1 s idle: the median event time against the last 100 ms
    of 400 ms, with NVML's SM clock and the power-cap bit read as the device reaches that window."""
    from perfguard.measure import nvml

    handle = nvml.handle(device.uuid)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(2**28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    x = torch.randn(2**20, device="cuda")
    out = []
    for name, fn in (("8192^3 bf16 matmul", lambda: a @ b), ("1 GiB copy", lambda: dst.copy_(src)),
                     ("4 MiB add", lambda: x + 1)):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        time.sleep(1.0)
        marks: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        snaps: list[tuple[int, object]] = []  # (calls queued when read, snapshot)
        started = time.perf_counter()
        chunk_end: list[torch.cuda.Event] = []
        while time.perf_counter() - started < 0.4:
            # ~5 ms a chunk, two in flight: the device never idles, and each NVML read is within a chunk
            # of where the device is.
            for _ in range(8):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                marks.append((s, e))
            chunk_end.append(marks[-1][1])
            if len(chunk_end) > 2:
                chunk_end[-3].synchronize()
                snaps.append((len(marks), nvml.snapshot(handle)))
        torch.cuda.synchronize()
        times, at = [], 0.0
        for s, e in marks:
            ms = s.elapsed_time(e)
            times.append((at, ms))
            at += ms
        end = times[-1][0]
        steady = statistics.median(ms for t, ms in times if t >= end - 100)
        out.append(f"trace: {name}, {len(times)} calls over {end:.0f} ms, steady (last 100 ms) {steady:.4f} ms")
        for lo in range(0, min(int(end), 200), 10):
            idx = [i for i, (t, _) in enumerate(times) if lo <= t < lo + 10]
            if not idx:
                continue
            med = statistics.median(times[i][1] for i in idx)
            snap = next((sn for n, sn in snaps if n >= idx[-1]), None)
            clock = getattr(snap, "sm_clock_mhz", None)
            capped = "cap" if snap is not None and "sw_power_cap" in " ".join(snap.throttle_reasons) else ""
            out.append(f"  {lo:4d}-{lo + 10:<4d} ms  {med:.4f} ms  {med / steady:.3f}  {clock} MHz {capped}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None)
    ap.add_argument("--trace", action="store_true")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("sampling_cost.py compares GPU sampling rules: it needs a GPU", file=sys.stderr)
        return 2
    device = detect("cuda")
    print(f"{device.name} {device.uuid}, torch {torch.__version__}", flush=True)
    if args.trace:
        print("\n".join(trace(device)), flush=True)
    print(f"{'case':52} {'gpu new/old':>11} {'caller new/old':>14} {'old s':>6} {'new s':>6}", flush=True)
    rows = []
    for inst in suite_instances("cuda", args.only):
        got: dict[str, list[tuple[float, float | None, float]]] = {name: [] for name in RULES}
        try:
            for k in range(args.rounds):  # old first in even rounds, new first in odd ones
                for name in (RULES if k % 2 == 0 else reversed(RULES)):
                    got[name].append(measured(inst, device, name))
        except RuntimeError as exc:
            print(f"{inst.id[:52]:52} ERROR {exc}", flush=True)
            continue
        gpu = statistics.median(n[0] / o[0] for o, n in zip(got["old"], got["new"]))
        callers = [n[1] / o[1] for o, n in zip(got["old"], got["new"]) if o[1] and n[1]]
        caller = statistics.median(callers) if callers else None
        walls = {name: statistics.median(x[2] for x in got[name]) for name in RULES}
        rows.append((inst.id, gpu, caller, walls))
        print(f"{inst.id[:52]:52} {gpu:11.4f} {caller if caller else float('nan'):14.4f} "
              f"{walls['old']:6.3f} {walls['new']:6.3f}", flush=True)
    print()
    for label, i in (("GPU time", 1), ("caller's time", 2)):
        ratios = [r[i] for r in rows if r[i]]
        worst = max(ratios, key=lambda x: abs(x - 1))
        print(f"{label}: {len(ratios)} cases, median new/old {statistics.median(ratios):.4f}, within 1%: "
              f"{sum(abs(x - 1) <= 0.01 for x in ratios)}, within 2%: {sum(abs(x - 1) <= 0.02 for x in ratios)}, "
              f"worst {worst:.4f}")
    for name in RULES:
        print(f"{name}: median sampling time a case (warm-up, GPU and caller samples, memory) "
              f"{statistics.median(r[3][name] for r in rows):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
