"""Every verdict's status over the committed baselines, as one JSON object: what issue 28's rewrite of
verdicts into data must keep (tests/test_verdict_statuses.py compares today's with the file written
by the code before it, tests/data/verdict-statuses.json).

    python tests/verdict_statuses.py > tests/data/verdict-statuses.json

Each baseline's newest result of every case (as measured, and 2% and 30% slower and 30% faster) is judged against each other committed baseline (and
against its own file with that case's newest run dropped), as the gate judges a run: the gate's
rules on real runs of six cards and two hosts.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINES = ["baselines/nvidia-h200.json", "benchmarks/data/h200-host-a.json", "benchmarks/data/h200-host-b.json"]


# Each result as measured, and slower or faster by a factor: regressions and improvements too.
FACTORS = (1.0, 1.02, 1.3, 0.7)
# One letter a status, in the order of VERDICT_STATUSES; "." where a case has no such verdict.
LETTERS = {"regressed": "r", "unstable": "u", "inconclusive": "c", "improved": "i", "accepted": "a", "missing": "m",
           "new": "n", "same": "s"}


def scaled(result, factor: float):
    """`result` with every time `factor` times as long (its samples and summaries)."""
    if factor == 1.0:
        return result
    timings = {}
    for metric, timing in result.timings.items():
        s = timing.summary
        summary = dataclasses.replace(s, **{f.name: getattr(s, f.name) * factor for f in dataclasses.fields(s)
                                            if f.name.endswith("_ms") and getattr(s, f.name) is not None})
        timings[metric] = dataclasses.replace(timing, summary=summary, samples_ms=tuple(x * factor for x in timing.samples_ms))
    return dataclasses.replace(result, timings=timings)


def statuses() -> dict[str, dict[str, str]]:
    """Per (judged file, judging file, factor), per metric: one letter a case, in the order of its ids."""
    grouped: dict[str, dict[str, dict[str, str]]] = {}
    for key, status in _statuses().items():
        judged, judge, factor, case_id, metric = key.split(" | ")
        grouped.setdefault(f"{judged} | {judge} | {factor}", {}).setdefault(metric, {})[case_id] = status
    out: dict[str, dict[str, str]] = {}
    for group, metrics in grouped.items():
        cases = sorted({c for by_case in metrics.values() for c in by_case})
        out[group] = {m: "".join(LETTERS[by_case[c]] if c in by_case else "." for c in cases) for m, by_case in metrics.items()}
    return out


def _statuses() -> dict[str, str]:
    return {key: v.status for key, v in _judged(BASELINES).items()}


def verdicts(paths: list[str]) -> dict[str, list[object]]:
    """Per (judged file, judging file, factor, case, metric), by the files' names: each verdict's status,
    reason and tolerance (4 digits), as tests/data/migrated-verdicts.json keeps them."""
    from perfguard.model import round_sig

    return {" | ".join((Path(judged).name, Path(judge).name, *rest)): [v.status, v.reason, None if v.tolerance_pct is None
                                                                      else round_sig(v.tolerance_pct, 4)]
            for (judged, judge, *rest), v in ((key.split(" | "), v) for key, v in _judged(paths).items())}


def _judged(paths: list[str]) -> dict[str, object]:
    """Every verdict, by "judged file | judging file | x factor | case | metric"."""
    from perfguard.analysis.verdict import compare_case
    from perfguard.model import loads_baseline

    # loads_baseline, not store.load_file: the data files are not named after their device.
    files = {name: loads_baseline((ROOT / name).read_text(encoding="utf-8"), name) for name in paths}
    out: dict[str, object] = {}
    for judged_name, judged in files.items():
        for judge_name, judge in files.items():
            for case_id, entry in sorted(judged.cases.items()):
                against = judge.cases.get(case_id)
                if judge_name == judged_name and against is not None:
                    if len(against.runs) < 2:
                        continue
                    against = dataclasses.replace(against, runs=against.runs[:-1])
                run = entry.runs[-1] if entry.runs else None
                for factor in FACTORS:
                    result = dataclasses.replace(scaled(entry.result, factor), device_uuid=run.device_uuid if run else None)
                    for v in compare_case(result, against, baseline_file=judge_name, host=run.host if run else None,
                                          current_fingerprint=entry.fingerprint):
                        out[f"{judged_name} | {judge_name} | x{factor:g} | {case_id} | {v.metric}"] = v
    return out


if __name__ == "__main__":
    json.dump(statuses(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
