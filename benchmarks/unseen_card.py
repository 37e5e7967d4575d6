"""Issue 31 item 4 (issue 48: any model's): how the committed baseline judges unchanged runs on a card that is not in it.

    python benchmarks/unseen_card.py run OUTDIR [RUNS]     (on a GPU machine; default 3 runs)
    python benchmarks/unseen_card.py summarise RECORD...   (anywhere: reads perfguard.json records)

`run` reads this card's model's file (baselines/<slug>.json, e.g. nvidia-h100-80gb-hbm3.json), refuses a
card it already holds runs of (a held machine stays the same card), then runs
`pytest --perfguard suites/` RUNS times, one process each (the run is the unit of evidence, DESIGN §5),
keeping each record as OUTDIR/runN.json. Both print, per run: the exit status, the verdicts by metric
and status (every verdict that is not a time lumped as counts/memory), and the median detectable change
of GPU time overall and per kind of case (roofline bound, and under or over 20 µs).
"""

from __future__ import annotations

import collections
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # perfguard from the tree; machine.py beside

from machine import plugin_args  # noqa: E402

from perfguard.model import TIME_METRICS, CaseResult, Verdict, loads_baseline, loads_record, names  # noqa: E402

SMALL_MS = 0.02  # as benchmarks/card_offsets.py: under 20 µs a host-to-host offset of ~1 µs dominates


def summarise(path: Path) -> list[str]:
    record = loads_record(path.read_text(encoding="utf-8"), str(path))
    return tally_lines(record.verdicts, record.results)


def tally_lines(verdicts: Iterable[Verdict], results: Iterable[CaseResult]) -> list[str]:
    """The verdicts by metric and status, and the median detectable change of GPU time per kind of case."""
    results = {r.id: r for r in results}
    tally: collections.Counter[tuple[str, str]] = collections.Counter()
    detectable: dict[str, list[float]] = collections.defaultdict(list)
    for v in verdicts:
        tally["counts/memory" if v.metric not in TIME_METRICS else v.metric, v.status] += 1
        if v.metric != "gpu_time" or v.detectable_pct is None:
            continue
        result = results.get(v.case_id)
        bound = str(result.metrics.bound if result and result.metrics else None)
        size = "<20us" if (v.baseline or 0) < SMALL_MS else ">=20us"
        for key in ("all", f"bound={bound}", f"size={size}", f"bound={bound} size={size}"):
            detectable[key].append(v.detectable_pct)
    new = sum(n for (metric, status), n in tally.items() if metric == "counts/memory" and status == "new")
    lines = [
        "  verdicts: " + "; ".join(f"{m} {s} {n}" for (m, s), n in sorted(tally.items())),
        f"  counts/memory verdicts new: {new}; regressed: "
        + str(sum(n for (_, s), n in tally.items() if s == "regressed")),
    ]
    for key in sorted(detectable, key=lambda k: (k != "all", k)):
        values = detectable[key]
        lines.append(f"  median detectable gpu_time {key:34} {statistics.median(values):6.2f}% over {len(values)}")
    return lines


def card() -> tuple[str, str]:
    """This machine's first card: its UUID and model name, as nvidia-smi gives them."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=uuid,name", "--format=csv,noheader"], capture_output=True, text=True, check=True)
    uuid, name = (part.strip() for part in out.stdout.splitlines()[0].split(",", 1))
    return uuid, name


def run(outdir: Path, runs: int) -> int:
    uuid, name = card()
    path = ROOT / "baselines" / f"{names.device_slug('cuda', name)}.json"
    if not path.is_file():
        print(f"refused: no baseline file {path.relative_to(ROOT)} for {name}; this judges a model's own file")
        return 3
    baseline = loads_baseline(path.read_text(encoding="utf-8"), str(path))
    seen = {r.device_uuid for e in baseline.cases.values() for r in e.runs}
    print(f"# card {uuid} ({name}); baseline {path.relative_to(ROOT)} holds runs of {len(seen)} cards")
    if uuid in seen:
        print(f"refused: {path.name} already holds runs of {uuid}; this needs a card it has not seen")
        return 3
    outdir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args(), "--perfguard", "suites/"]
    print("# " + " ".join(command[2:]) + " --perfguard-report=OUTDIR/runN")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for i in range(1, runs + 1):
        report = outdir / f"report{i}"
        start = time.monotonic()
        proc = subprocess.run([*command, f"--perfguard-report={report}"], cwd=ROOT, env=env, capture_output=True, text=True)
        (outdir / f"run{i}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"run {i}: exit {proc.returncode} in {time.monotonic() - start:.0f} s: {last}")
        if (report / "perfguard.json").exists():
            shutil.copy(report / "perfguard.json", outdir / f"run{i}.json")
            print("\n".join(summarise(outdir / f"run{i}.json")))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"] and len(argv) in (2, 3):
        return run(Path(argv[1]), int(argv[2]) if len(argv) == 3 else 3)
    if argv[:1] == ["summarise"] and len(argv) > 1:
        for name in argv[1:]:
            print(name)
            print("\n".join(summarise(Path(name))))
        return 0
    print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
