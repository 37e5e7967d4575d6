"""Every verdict of a record's results against a baseline file, as the gate judges them, as JSON: what two
versions of perfguard make of the same measurement (run it under each, and compare the two files).

    python benchmarks/judge_record.py RUN.json BASELINE.json > verdicts.json

Per "case | metric": the status, the reason and the tolerance (6 digits). The record's first device is
the run's card and host.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfguard.analysis.verdict import compare_case
from perfguard.model import loads_baseline, loads_record


def main(argv: list[str]) -> int:
    record = loads_record(Path(argv[0]).read_text(encoding="utf-8"), argv[0])
    baseline = loads_baseline(Path(argv[1]).read_text(encoding="utf-8"), argv[1])
    device = record.devices[0]
    out = {}
    for r in record.results:
        for v in compare_case(r, baseline.cases.get(r.id), baseline_file=argv[1], host=device.host,
                              current_fingerprint=device.fingerprint()):
            out[f"{r.id} | {v.metric}"] = [v.status, v.reason, None if v.tolerance_pct is None else round(v.tolerance_pct, 6)]
    json.dump(out, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
