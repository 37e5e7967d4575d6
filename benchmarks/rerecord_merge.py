"""Issue 31: the refreshed H200 baseline from the re-recorded runs (benchmarks/rerecord.sh), and why the
old file's runs are not kept.

    python benchmarks/rerecord_merge.py RERECORDED.json OLD.json [--write]

Prints each card's runs per case, and what the old file's runs would do to the gate if kept in the
newest-ten window beside the new ones: how many the gate would leave out (noise.far_runs) and how far
they would move each case's tolerance for GPU time, judged from a card neither file holds. With
--write, replaces OLD.json (atomically) by the re-recorded cases, old runs dropped, the old file's
calibration kept where its software is the same. Reads files only: no device.

RERECORDED.json may be a copy of OLD.json that rerecord.sh added runs to (its first run is then judged
by the old file on a card it has not seen): the runs of OLD.json's cards are dropped from it first. A case
none of whose runs is new is left out, and named.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard import defaults  # noqa: E402
from perfguard.analysis import noise  # noqa: E402
from perfguard.model import dumps, loads_baseline  # noqa: E402
from perfguard.files import write_atomic  # noqa: E402


def _pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]


def main(argv: list[str]) -> int:
    write = "--write" in argv
    new_path, old_path = (Path(a) for a in argv if a != "--write")
    new = loads_baseline(new_path.read_text(encoding="utf-8"), str(new_path))
    old = loads_baseline(old_path.read_text(encoding="utf-8"), str(old_path))
    old_cards = {r.device_uuid for e in old.cases.values() for r in e.runs}
    cases = {}
    for case_id, entry in new.cases.items():
        runs = tuple(r for r in entry.runs if r.device_uuid not in old_cards)
        if runs:
            cases[case_id] = dataclasses.replace(entry, runs=runs)
        else:
            print(f"left out {case_id}: none of its runs is new")
    new = dataclasses.replace(new, cases=cases)

    per_card: collections.Counter[tuple[str, int]] = collections.Counter()
    for entry in new.cases.values():
        for card, n in collections.Counter(r.device_uuid for r in entry.runs).items():
            per_card[(str(card), n)] += 1
    print(f"# {new_path}: {len(new.cases)} cases")
    for (card, n), cases in sorted(per_card.items()):
        print(f"{card}: {n} runs in {cases} cases")

    kept = left = 0
    moved: list[float] = []
    offsets: list[float] = []
    for case_id, entry in new.cases.items():
        before = old.cases.get(case_id)
        room = defaults.KEEP_RUNS - len(entry.runs)
        if before is None or room <= 0:
            continue
        olds = sorted(before.runs, key=lambda r: r.recorded_at)[-room:]
        old_ms = [r.median_of("gpu_time") for r in before.runs if r.median_of("gpu_time")]
        new_ms = [r.median_of("gpu_time") for r in entry.runs if r.median_of("gpu_time")]
        if old_ms and new_ms:
            offsets.append(100.0 * (statistics.median(old_ms) / statistics.median(new_ms) - 1.0))
        current = dataclasses.replace(entry.result, device_uuid="GPU-none-of-these")
        alone = noise.estimate(current, entry, 0.0, metric="gpu_time")
        mixed = noise.estimate(current, dataclasses.replace(entry, runs=(*olds, *entry.runs)), 0.0, metric="gpu_time")
        if alone is None or mixed is None:
            continue
        out = {(run.recorded_at, run.source) for run in mixed.left_out}
        left += sum((r.recorded_at, noise.run_source(r)) in out for r in olds)
        kept += sum((r.recorded_at, noise.run_source(r)) not in out for r in olds)
        moved.append(mixed.tolerance_pct - alone.tolerance_pct)
    print(f"old runs' median GPU time against the new runs', %: p10 {_pct(offsets, 0.1):+.2f}, p50 {_pct(offsets, 0.5):+.2f}, "
          f"p90 {_pct(offsets, 0.9):+.2f}, largest {max(offsets):+.2f}")
    print(f"old runs in the window: the gate keeps {kept}, leaves out {left}; GPU time's tolerance with them, "
          f"points: p50 {_pct(moved, 0.5):+.2f}, p90 {_pct(moved, 0.9):+.2f}, largest {max(moved):+.2f}")

    if write:
        # The old file's calibration still places the cases where the software it measured is the same.
        same = old.calibration and old.calibration.fingerprint == next(iter(new.cases.values())).fingerprint
        calibration = new.calibration or (old.calibration if same else None)
        write_atomic(old_path, dumps(dataclasses.replace(new, calibration=calibration)))
        print(f"wrote {old_path}: {len(new.cases)} cases, calibration {'measured ' + calibration.measured_at if calibration else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
