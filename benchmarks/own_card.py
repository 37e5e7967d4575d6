"""What a card's own runs in the baseline buy: the memory-bound cases judged by this card's runs and by the fleet's.

    python benchmarks/own_card.py OUT [--own DIR] [--fleet DIR] [--record 5] [--runs 3] [-- PYTEST ARGS]

1. Unless `--own` names a baseline folder already recorded on this card, record one: `--record` runs
   of `pytest --perfguard --perfguard-update` into OUT/own (five: three is the fewest that judge a
   card alone, five bring a memory-bound case's detectable change to about 1.5%).
2. Run the unchanged suites `--runs` times against that folder (`pytest --perfguard`, with the plugin's
   re-measurements), each run's record kept in OUT/judge-N.
3. Judge each of those records again, here, against the fleet's baseline (`--fleet`, default the
   committed `baselines/`: runs from other cards, so this card is judged by the fleet).

It prints, per baseline: whose runs judged (own / fleet), the memory-bound cases in both baselines,
their median and p90 smallest detectable change, how many of them are at 2% or less, and the
regressed (false alarms: nothing changed) and inconclusive verdicts over the runs. Issue 20's goal:
own card median <= 2% and 0 false alarms in 3 runs; the fleet: its figures, 0 false alarms.
Default PYTEST ARGS: -n auto suites/.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard import store  # noqa: E402
from perfguard.analysis.verdict import compare_to_baseline  # noqa: E402
from perfguard.cli import read_record  # noqa: E402

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perfguard")


def _pytest(args: list[str], out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "pytest.log", "w") as log:
        return subprocess.call([*PYTEST, f"--perfguard-report={out}", *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def _row(name: str, verdicts_per_run: list[list], cases: set[str]) -> tuple[str, ...]:
    latency = [v for vs in verdicts_per_run for v in vs if v.metric == "gpu_time" and v.case_id in cases]
    detects = sorted(v.detectable_pct for v in latency if v.detectable_pct is not None)
    judged = sorted({(v.noise.judged_by if v.noise else None) or "-" for v in latency})
    p90 = f"{detects[int(0.9 * (len(detects) - 1))]:.2f}%" if detects else "-"
    return (name, "/".join(judged) or "-", str(len(cases)), f"{statistics.median(detects):.2f}%" if detects else "-",
            p90, f"{sum(d <= 2.0 for d in detects)}/{len(detects)}",
            str(sum(v.status == "regressed" for v in latency)), str(sum(v.status == "inconclusive" for v in latency)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--own", type=Path, help="a baseline folder with >= 3 runs from this card (else one is recorded)")
    parser.add_argument("--fleet", type=Path, default=ROOT / "baselines", help="the fleet's baseline folder")
    parser.add_argument("--record", type=int, default=5, help="runs recorded into OUT/own when --own is not given")
    parser.add_argument("--runs", type=int, default=3, help="unchanged runs judged")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.pytest_args = argv[split + 1:] or ["-n", "auto", "suites/"]
    own = args.own or args.out / "own"
    if args.own is None:
        for i in range(args.record):
            rc = _pytest([f"--perfguard-baselines={own}", "--perfguard-update", *args.pytest_args], args.out / f"record-{i + 1}")
            print(f"recorded run {i + 1}/{args.record} into {own} (exit {rc})", flush=True)
    judged_own, judged_fleet, cases = [], [], set()
    exits = []
    for i in range(args.runs):
        out = args.out / f"judge-{i + 1}"
        exits.append(_pytest([f"--perfguard-baselines={own}", *args.pytest_args], out))
        record = read_record(out / "perfguard.json")
        hosts = {d.host for d in record.devices}
        host = hosts.pop() if len(hosts) == 1 else None
        mine = list(record.verdicts)
        theirs = []
        for slug in {r.device for r in record.results}:
            results = [r for r in record.results if r.device == slug]
            fleet = store.load(args.fleet, slug)
            theirs += compare_to_baseline(results, fleet, host=host, baseline_file=str(store.path_for(args.fleet, slug)))
            ours = store.load(own, slug)
            memory = {r.id for r in results if r.metrics and r.metrics.bound == "memory"}
            cases |= {c for c in memory if fleet and ours and c in fleet.cases and c in ours.cases}
        judged_own.append(mine)
        judged_fleet.append(theirs)
        print(f"judged run {i + 1}/{args.runs} (pytest exit {exits[-1]})", flush=True)
    header = ("baseline", "judged by", "memory-bound cases", "median detectable", "p90", "<= 2%", "regressed", "inconclusive")
    rows = [header, _row(f"this card ({own})", judged_own, cases), _row(f"fleet ({args.fleet})", judged_fleet, cases)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    print(f"\n{datetime.date.today()}: {args.runs} unchanged runs, pytest exits {exits}")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
