"""Issue 34 part 4: where each case's wall time goes, by pass, before making any of it cheaper.

    python3 benchmarks/pass_split.py run OUTDIR [PYTEST ARGS...]    # on a GPU: pytest --perfguard suites/ once
    python3 benchmarks/pass_split.py summary RECORD [DURATIONS]     # anywhere: from a record (and pytest's log)

`run` measures `suites/` in one process, with pytest's `--durations=0`, into OUTDIR (record.json,
durations.txt). `summary` prints, for operator cases and model cases apart (a model case is one in
suites/test_model*.py or suites/test_compiled.py), the median and the total of each pass
(`CaseResult.passes_s`, the setup's `setup_s`), and, where pytest's durations are given, the whole
test (setup, call and teardown phases) and what the passes leave out of it (`other`: perfguard's own
work around a case: the device's detection, NVML, the baseline's comparison, the record).
"""

from __future__ import annotations

import collections
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # perfguard from the tree; machine.py beside

from machine import plugin_args  # noqa: E402

from perfguard.model import loads_record  # noqa: E402

DURATION = re.compile(r"^(?P<s>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<nodeid>\S.*)$")
MODEL_FILES = ("suites/test_model", "suites/test_compiled")
ORDER = ("setup", "first_call", "compile_warm", "warm_up", "samples", "caller_samples", "memory", "counters",
         "memory_breakdown")


def durations(path: Path | None) -> dict[str, float]:
    """Each test's whole wall time (its setup, call and teardown phases), s, from pytest's --durations=0."""
    total: dict[str, float] = collections.defaultdict(float)
    if path is not None:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = DURATION.match(line.strip())
            if m:
                total[m["nodeid"]] += float(m["s"])
    return total


def summary(record_path: Path, durations_path: Path | None = None) -> list[str]:
    record = loads_record(record_path.read_text(encoding="utf-8"), str(record_path))
    whole = durations(durations_path)
    groups: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    for r in record.results:
        if r.status != "ok":
            continue
        row = {"setup": r.setup_s or 0.0, **r.passes_s}
        if r.nodeid in whole:
            row["test"] = whole[r.nodeid]
            row["other"] = row["test"] - sum(v for k, v in row.items() if k != "test")
        groups["model" if r.nodeid.startswith(MODEL_FILES) else "operator"].append(row)
    tally = collections.Counter(v.status for v in record.verdicts)
    out = [f"{len(record.results)} cases, {sum(r.status == 'ok' for r in record.results)} ok; {len(record.verdicts)} verdicts: "
           + ", ".join(f"{n} {status}" for status, n in sorted(tally.items()))]
    for group, rows in sorted(groups.items(), key=lambda kv: kv[0] != "operator"):
        names = [k for k in (*ORDER, "other", "test") if any(k in row for row in rows)]
        out.append(f"{group} cases: {len(rows)}")
        out.append(f"  {'pass':<16} {'median s':>9} {'mean s':>8} {'total s':>8} {'share':>6}")
        total = sum(row.get("test", sum(row.values())) for row in rows)
        for k in names:
            values = [row.get(k, 0.0) for row in rows]
            share = "" if k == "test" else f"{100 * sum(values) / total:5.1f}%"
            out.append(f"  {k:<16} {statistics.median(values):9.3f} {statistics.fmean(values):8.3f} "
                       f"{sum(values):8.1f} {share:>6}")
    return out


def run(out: Path, args: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args(), "--perfguard",
           f"--perfguard-report={out / 'report'}", "--durations=0", "--durations-min=0", *args, "suites/"]
    start = time.perf_counter()
    with open(out / "durations.txt", "w", encoding="utf-8") as log:
        done = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    print(f"pytest --perfguard suites/: exit {done.returncode} in {time.perf_counter() - start:.0f} s")
    record = out / "report" / "perfguard.json"
    (out / "record.json").write_bytes(record.read_bytes())
    print("\n".join(summary(out / "record.json", out / "durations.txt")))
    return done.returncode


if __name__ == "__main__":
    verb, *rest = sys.argv[1:] or ["?"]
    if verb == "run" and rest:
        sys.exit(run(Path(rest[0]), rest[1:]))
    elif verb == "summary" and rest:
        print("\n".join(summary(Path(rest[0]), Path(rest[1]) if len(rest) > 1 else None)))
    else:
        sys.exit(__doc__)
