"""Issue 31: top up cases of the re-recorded H200 baseline that lack 3 runs on a card, from a card it
has not seen.

    bash benchmarks/rerecord.sh baselines/nvidia-h200.json OUT 3 -k 'CASES'   (on a card not in the file)
    python benchmarks/rerecord_topup.py OUT/baselines/nvidia-h200.json baselines/nvidia-h200.json [--write]

`--perfguard-update` keeps the newest ten runs, so adding three runs to a case that holds eight drops its
oldest run, and with it a card's third. Here each topped-up case keeps instead the baseline's runs of the
cards it holds 3 runs of, and the new card's runs: at least 3 runs on each card it holds. Prints each
case's runs per card, before and after. With --write, replaces BASELINE.json (atomically). Reads files
only: no device.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfguard.model import dumps, loads_baseline  # noqa: E402
from perfguard.files import write_atomic  # noqa: E402

RUNS_PER_CARD = 3


def _cards(runs) -> dict[str, int]:
    return dict(collections.Counter(str(r.device_uuid)[:12] for r in runs))


def main(argv: list[str]) -> int:
    write = "--write" in argv
    topup_path, base_path = (Path(a) for a in argv if a != "--write")
    topup = loads_baseline(topup_path.read_text(encoding="utf-8"), str(topup_path))
    base = loads_baseline(base_path.read_text(encoding="utf-8"), str(base_path))
    cases = dict(base.cases)
    for case_id, entry in topup.cases.items():
        before = base.cases.get(case_id)
        if before is None or entry == before:
            continue
        seen = collections.Counter(r.device_uuid for r in before.runs)
        kept = [r for r in before.runs if seen[r.device_uuid] >= RUNS_PER_CARD]
        added = [r for r in entry.runs if r.device_uuid not in seen]
        runs = tuple(sorted((*kept, *added), key=lambda r: r.recorded_at))
        cases[case_id] = dataclasses.replace(entry, runs=runs)
        print(f"{case_id}: {_cards(before.runs)} -> {_cards(runs)}")
    if write:
        write_atomic(base_path, dumps(dataclasses.replace(base, cases=cases)))
        print(f"wrote {base_path}: {len(cases)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
