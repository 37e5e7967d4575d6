"""Does `-n 2` on two GPUs halve the suite's time without changing its figures? (issue 6)

Runs `pytest --perfguard suites/ -p no:randomly` with one worker and with N (default 2), alternating,
--repeats times each (default 2, so that neither count always runs on the cooler or the warmer card),
each into its own report folder and against an empty baseline folder (so no case fails on a verdict),
and prints: the wall time of every run and the speed-up of the medians; per GPU the cases' own time;
per case its median under each count (the last run of each), the ratio, and the GPU (UUID) each
measured it on; then the median and the worst |ratio - 1| over the cases. Run it after one run of the
suites on the machine (benchmarks/gpu.sh does), so that neither count pays for cold caches (Triton's
kernels, CUDA's).

    python benchmarks/xdist_scaling.py [--workers 2] [--repeats 2] [--out DIR] [-- EXTRA PYTEST ARGS]

Targets (2 x H200): speed-up >= 1.8; with -n 2 the record holds two UUIDs, one per worker; the
medians agree within noise (the A/A figures of benchmarks/detection.py: about 1% for most cases).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard.model import RunRecord, loads_record  # noqa: E402


def run(workers: int, out: Path, extra: list[str], repeat: int) -> tuple[float, int, RunRecord]:
    folder = out / f"n{workers}-{repeat}"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--perfguard",
           "suites/", "-n", str(workers), "--durations=6", f"--perfguard-report={folder}", f"--perfguard-baselines={out / 'no-baselines'}",
           *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    with open(folder.with_suffix(".log"), "w") as log:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    return wall, proc.returncode, loads_record((folder / "perfguard.json").read_text(), str(folder))


def short(uuid: str | None) -> str:
    return (uuid or "-").removeprefix("GPU-")[:8]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="folder for the records and logs (default: a temporary one)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="perfguard-xdist-"))
    out.mkdir(parents=True, exist_ok=True)

    counts = (1, args.workers)
    runs = {(n, i): run(n, out, extra, i) for i in range(args.repeats) for n in counts}
    print(f"{'workers':>7}  {'run':>3}  {'wall s':>7}  {'exit':>4}  cases  case time per GPU (UUID: cases, s)")
    for (n, i), (wall, rc, record) in runs.items():
        work = collections.defaultdict(float)
        for r in record.results:
            # The cases' own time (setup + measuring); the rest of the wall time is start-up
            # (interpreters, torch, CUDA contexts, collection), scheduling and the run's end.
            work[short(r.device_uuid)] += (r.setup_s or 0) + (r.wall_s or 0)
        per_gpu = collections.Counter(short(r.device_uuid) for r in record.results)
        gpus = ", ".join(f"{u}: {per_gpu[u]}, {t:.1f}" for u, t in sorted(work.items()))
        print(f"{n:>7}  {i:>3}  {wall:>7.1f}  {rc:>4}  {len(record.results):>5}  {gpus}")
    walls = {n: statistics.median(runs[n, i][0] for i in range(args.repeats)) for n in counts}
    print(f"speed-up of -n {args.workers} over -n 1 (median wall times {walls[1]:.1f} s and "
          f"{walls[args.workers]:.1f} s): {walls[1] / walls[args.workers]:.2f}x")
    last = args.repeats - 1
    one, many = runs[1, last][2], runs[args.workers, last][2]

    a = {r.id: r for r in one.results if r.latency}
    b = {r.id: r for r in many.results if r.latency}
    rows = [(case, a[case].latency.median_ms, b[case].latency.median_ms, a[case], b[case]) for case in sorted(a.keys() & b.keys())]
    width = max((len(row[0]) for row in rows), default=4)
    print(f"\n{'case':<{width}}  {'-n 1 ms':>9}  {f'-n {args.workers} ms':>9}  {'ratio':>6}  GPU -n 1  GPU -n {args.workers}")
    for case, m1, m2, r1, r2 in rows:
        print(f"{case:<{width}}  {m1:>9.4f}  {m2:>9.4f}  {m2 / m1:>6.3f}  {short(r1.device_uuid):<8}  {short(r2.device_uuid)}")
    if rows:
        deviations = [(abs(m2 / m1 - 1), case) for case, m1, m2, _, _ in rows]
        worst = max(deviations)
        print(f"\n|ratio - 1| over {len(rows)} cases: median {statistics.median(d for d, _ in deviations):.2%}, "
              f"worst {worst[0]:.2%} ({worst[1]})")
    missing = sorted(set(r.id for r in one.results) ^ set(r.id for r in many.results))
    if missing:
        print(f"cases in one run only: {', '.join(missing)}")
    print(f"records and logs in {out}")
    return 0 if all(rc == 0 for _, rc, _ in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
