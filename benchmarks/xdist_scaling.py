"""How does `pytest --perfguard -n N` scale over 1, 2, 4 and 8 GPUs, and where does the rest go? (issues 6, 22)

Runs `pytest --perfguard suites/ -p no:randomly -n N` for each N of --counts (default 1,2,4,8, cut to
the GPUs visible), in turns, --repeats times each (default 2, so that no count always runs on the
cooler or the warmer cards), each into its own report folder and against an empty baseline folder (so
no case fails on a verdict). Per run it prints: the wall time; the measuring time (the cases' own
setup and measuring, summed per GPU; the run's is its busiest GPU's); each GPU's case count; and the
fixed part (wall time minus the busiest GPU's measuring: interpreters, torch, CUDA contexts,
collection, the run's end) with its share of the wall time. Then per N the medians and their
speed-ups over N = 1, and per case its median under the smallest and the largest N (the last run of
each), the ratio and the GPU (UUID) each measured it on. Run it after one run of the suites on the
machine (benchmarks/gpu.sh does), so that no count pays for cold caches (Triton's kernels, CUDA's).

    python benchmarks/xdist_scaling.py [--counts 1,2,4,8] [--repeats 2] [--out DIR] [-- EXTRA PYTEST ARGS]

Targets (issue 22): measuring time >= 1.8x on 2 GPUs, >= 3.5x on 4, >= 6x on 8; the medians agree
within noise between counts (the A/A figures of benchmarks/detection.py: about 1% for most cases).
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


def shares(record: RunRecord) -> tuple[dict[str, float], dict[str, int]]:
    """Per GPU (short UUID): the cases' own time (setup + measuring), and their count."""
    work: dict[str, float] = collections.defaultdict(float)
    for r in record.results:
        work[short(r.device_uuid)] += (r.setup_s or 0) + (r.wall_s or 0)
    return dict(work), dict(collections.Counter(short(r.device_uuid) for r in record.results))


def visible_gpus() -> int:
    from perfguard.measure import gpus

    return len(gpus.visible())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,2,4,8", help="worker counts, comma-separated; cut to the visible GPUs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="folder for the records and logs (default: a temporary one)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="perfguard-xdist-"))
    out.mkdir(parents=True, exist_ok=True)
    visible = visible_gpus()
    counts = sorted({n for n in (int(c) for c in args.counts.split(",")) if n == 1 or n <= visible})
    print(f"{visible} GPU(s) visible; worker counts {', '.join(map(str, counts))}")

    runs = {(n, i): run(n, out, extra, i) for i in range(args.repeats) for n in counts}
    print(f"{'workers':>7}  {'run':>3}  {'wall s':>7}  {'measuring s':>11}  {'fixed s':>7}  {'fixed':>5}  {'exit':>4}  "
          "cases  per GPU (UUID: cases, s)")
    figures: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    for (n, i), (wall, rc, record) in runs.items():
        work, cases = shares(record)
        measuring = max(work.values(), default=0.0)
        fixed = wall - measuring
        figures[n].append((wall, measuring))
        gpus = ", ".join(f"{u}: {cases[u]}, {t:.1f}" for u, t in sorted(work.items()))
        print(f"{n:>7}  {i:>3}  {wall:>7.1f}  {measuring:>11.1f}  {fixed:>7.1f}  {fixed / wall:>5.0%}  {rc:>4}  "
              f"{len(record.results):>5}  {gpus}")
    print(f"\n{'workers':>7}  {'wall s':>7}  {'speed-up':>8}  {'measuring s':>11}  {'speed-up':>8}  {'fixed s':>7}  {'fixed':>5}")
    base_wall = statistics.median(w for w, _ in figures[counts[0]])
    base_measuring = statistics.median(m for _, m in figures[counts[0]])
    for n in counts:
        wall, measuring = (statistics.median(x[j] for x in figures[n]) for j in (0, 1))
        print(f"{n:>7}  {wall:>7.1f}  {base_wall / wall:>7.2f}x  {measuring:>11.1f}  {base_measuring / measuring:>7.2f}x  "
              f"{wall - measuring:>7.1f}  {(wall - measuring) / wall:>5.0%}")
    last = args.repeats - 1
    few, many = counts[0], counts[-1]
    one, several = runs[few, last][2], runs[many, last][2]

    a = {r.id: r for r in one.results if r.judged_time}
    b = {r.id: r for r in several.results if r.judged_time}
    rows = [(case, a[case].judged_time.median_ms, b[case].judged_time.median_ms, a[case], b[case]) for case in sorted(a.keys() & b.keys())]
    width = max((len(row[0]) for row in rows), default=4)
    print(f"\n{'case':<{width}}  {f'-n {few} ms':>9}  {f'-n {many} ms':>9}  {'ratio':>6}  GPU -n {few}  GPU -n {many}")
    for case, m1, m2, r1, r2 in rows:
        print(f"{case:<{width}}  {m1:>9.4f}  {m2:>9.4f}  {m2 / m1:>6.3f}  {short(r1.device_uuid):<8}  {short(r2.device_uuid)}")
    if rows:
        deviations = [(abs(m2 / m1 - 1), case) for case, m1, m2, _, _ in rows]
        worst = max(deviations)
        print(f"\n|ratio - 1| over {len(rows)} cases: median {statistics.median(d for d, _ in deviations):.2%}, "
              f"worst {worst[0]:.2%} ({worst[1]})")
    missing = sorted(set(r.id for r in one.results) ^ set(r.id for r in several.results))
    if missing:
        print(f"cases in one run only: {', '.join(missing)}")
    print(f"records and logs in {out}")
    return 0 if all(rc == 0 for _, rc, _ in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
