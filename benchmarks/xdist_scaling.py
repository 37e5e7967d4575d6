"""Does `-n 2` on two GPUs halve the suite's time without changing its figures? (issue 6)

Runs `pytest --perfguard suites/ -p no:randomly` with one worker, then with N (default 2), each into its
own report folder and against an empty baseline folder (so no case fails on a verdict), and prints:
the wall time of each run and the speed-up; per case its median under each run, the ratio, and the
GPU (UUID) each run measured it on; then the median and the worst |ratio - 1| over the cases.

    python benchmarks/xdist_scaling.py [--workers 2] [--out DIR] [-- EXTRA PYTEST ARGS]

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


def run(workers: int, out: Path, extra: list[str]) -> tuple[float, int, RunRecord]:
    folder = out / f"n{workers}"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--perfguard",
           "suites/", "-n", str(workers), "--durations=6", f"--perfguard-report={folder}", f"--perfguard-baselines={out / 'no-baselines'}",
           *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    with open(out / f"n{workers}.log", "w") as log:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    return wall, proc.returncode, loads_record((folder / "perfguard.json").read_text(), str(folder))


def short(uuid: str | None) -> str:
    return (uuid or "-").removeprefix("GPU-")[:8]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="folder for the records and logs (default: a temporary one)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="perfguard-xdist-"))
    out.mkdir(parents=True, exist_ok=True)

    runs = {n: run(n, out, extra) for n in (1, args.workers)}
    one, many = runs[1][2], runs[args.workers][2]
    print(f"{'workers':>7}  {'wall s':>7}  {'exit':>4}  cases  GPUs (UUID: cases)")
    for n, (wall, rc, record) in runs.items():
        per_gpu = collections.Counter(short(r.device_uuid) for r in record.results)
        gpus = ", ".join(f"{u}: {c}" for u, c in sorted(per_gpu.items()))
        print(f"{n:>7}  {wall:>7.1f}  {rc:>4}  {len(record.results):>5}  {gpus}")
    print(f"speed-up of -n {args.workers} over -n 1: {runs[1][0] / runs[args.workers][0]:.2f}x")
    # Where the time goes: per GPU, the cases' own time (setup + measuring) against the run's wall
    # time; the rest is start-up (interpreters, torch, CUDA contexts, collection) and scheduling.
    for n, (wall, _rc, record) in runs.items():
        work = collections.defaultdict(float)
        for r in record.results:
            work[short(r.device_uuid)] += (r.setup_s or 0) + (r.wall_s or 0)
        print(f"-n {n}: case time per GPU " + ", ".join(f"{u} {t:.1f} s" for u, t in sorted(work.items()))
              + f"; the rest of {wall:.1f} s is start-up and scheduling")
        log = (out / f"n{n}.log").read_text().splitlines()
        start = next((i for i, line in enumerate(log) if "slowest" in line), None)
        for line in log[start:start + 8] if start is not None else []:
            print(f"   {line}")

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
