"""How reading, updating and reporting scale with the number of cases: copies of the committed baseline
(baselines/nvidia-h200.json, 134 cases) and of a run record of the suites on an H200, ×1, ×10, ×40 and ×~150.

    python benchmarks/scaling.py [--copies 1 10 40 150] [--repeats 5] [--render-up-to 5360]
        [--record benchmarks/data/h200-record-2026-12-03.json] [--baseline baselines/nvidia-h200.json]

Every copy of a case is renamed (`c7_add[...]`), so a file of 20,100 cases holds 20,100 distinct ones,
each with its runs, counters and samples as committed (the record's as `pytest --perfguard` wrote them).
Per size it prints the files' sizes and
median case, `store.load_file` and `codec.loads_record` against `json.load` of the same file (medians
of reads by turns, so that the machine's load falls on both), their peak memory (tracemalloc: Python's
heap, the file's text included) against the file's size, a `--perfguard-update` of every case (`store.update`: read,
admit one more run, write), and the HTML and Markdown reports' render times (the scaling fits made
once for both, as `pytest --perfguard` and `perfguard report` make them, and counted in the HTML's), and
`perfguard baseline show` of the whole file, as a user runs it. Targets (issue 44): a load ≤ 2× json.load,
`baseline show` of 5,280 cases ≤ 2 s in all; (issue 34) a median case ≤ 3 KB.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine import describe

from perfguard import store
from perfguard.store.baselines import MAX_BASELINE_BYTES
from perfguard.model import BaselineFile, RunRecord, dumps, loads_baseline, loads_record
from perfguard.report.advice import report_fits
from perfguard.report.html import render_html
from perfguard.report.markdown import render_markdown

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "baselines" / "nvidia-h200.json"
RECORD = ROOT / "benchmarks" / "data" / "h200-record-2026-12-03.json"  # pytest --perfguard suites/, GPU-a92f917c


def case_line(line: str) -> bool:
    """A line that holds one case (codec.dumps writes each on its own): a baseline's entry, a record's result."""
    return line.startswith('"c') and '"result":' in line or line.startswith("{") and '"status":' in line and '"id":' in line


def copies_of(baseline: BaselineFile, copies: int) -> BaselineFile:
    """`baseline` with each case `copies` times, every copy renamed."""
    cases = {}
    for k in range(copies):
        for entry in baseline.cases.values():
            r = entry.result
            renamed = dataclasses.replace(r, id=f"c{k}_{r.id}", name=f"c{k}_{r.name}")
            cases[renamed.id] = dataclasses.replace(entry, result=renamed)
    return dataclasses.replace(baseline, cases=dict(sorted(cases.items())))


def renamed(record: RunRecord, copies: int) -> RunRecord:
    """`record` with each result `copies` times, every copy renamed, and no verdicts."""
    results = tuple(dataclasses.replace(r, id=f"c{k}_{r.id}", name=f"c{k}_{r.name}") for k in range(copies) for r in record.results)
    return dataclasses.replace(record, results=results, verdicts=())


def median_s(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):  # by turns
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        kept = fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        del kept


def median_line(text: str) -> float:
    """The median byte size of the lines that hold one case (a baseline's entry, a record's result)."""
    return statistics.median(len(line.encode()) for line in text.splitlines() if case_line(line))


def codec_load(path: Path) -> BaselineFile:
    """The codec's read of a baseline file (store.load_file's, without its size cap)."""
    return loads_baseline(path.read_bytes(), str(path))


def show_s(folder: Path) -> float:
    """Seconds `perfguard baseline show` takes on the folder's files, in a process of its own, as a user runs it."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "perfguard.cli", "baseline", "show", "--baselines", str(folder)], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def render_times(record: RunRecord) -> tuple[float, float]:
    """Seconds to render the HTML report, its scaling fits included, and then the Markdown from those fits."""
    start = time.perf_counter()
    fits = report_fits([record])
    render_html([record], fits)
    middle = time.perf_counter()
    render_markdown([record], fits)
    return middle - start, time.perf_counter() - middle


def json_load(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10, 40, 150])
    parser.add_argument("--record", type=Path, default=RECORD, help="a run record of the suites (written by pytest --perfguard)")
    parser.add_argument("--baseline", type=Path, default=COMMITTED, help="a baseline of the suites (named nvidia-h200.json)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--render-up-to", type=int, default=5360, help="render the reports up to this many cases")
    args = parser.parse_args(argv)
    committed = store.load_file(args.baseline)
    assert committed is not None
    measured = loads_record(args.record.read_text(encoding="utf-8"), str(args.record))
    print(describe())
    print(f"{args.baseline}: {args.baseline.stat().st_size / 1e6:.2f} MB, {len(committed.cases)} cases, "
          f"{sum(len(e.runs) for e in committed.cases.values())} runs; {args.record.name}: {len(measured.results)} results")
    head = ("cases", "baseline MB", "median case KB", "load ms", "× json.load", "peak × file", "show s",
            "record MB", "median case KB", "load ms", "× json.load", "peak × file", "update s", "HTML s", "Markdown s")
    rows = []
    for copies in args.copies:
        with tempfile.TemporaryDirectory() as tmp:
            baseline = copies_of(committed, copies)
            record = renamed(measured, copies)
            folder = Path(tmp) / "baselines"
            folder.mkdir()
            bpath, rpath = folder / "nvidia-h200.json", Path(tmp) / "perfguard.json"
            btext, rtext = dumps(baseline), dumps(record)
            bpath.write_text(btext, encoding="utf-8")
            rpath.write_text(rtext, encoding="utf-8")
            del baseline  # what is measured below is what a load holds, not this copy
            repeats = max(1, args.repeats if copies <= 10 else args.repeats // 2)
            # Past store.MAX_BASELINE_BYTES the store refuses the file; the codec's read of it is timed instead,
            # and no update or `baseline show` is made (they would be refused).
            capped = bpath.stat().st_size > MAX_BASELINE_BYTES
            load = (lambda: codec_load(bpath)) if capped else lambda: store.load_file(bpath)
            load()  # once first: imports and the per-class code
            t = median_s({"load": load, "json": lambda: json_load(bpath),
                          "record": lambda: loads_record(rpath.read_text(encoding="utf-8"), str(rpath)),
                          "rjson": lambda: json_load(rpath)}, repeats)
            bpeak = peak_bytes(load)
            rpeak = peak_bytes(lambda: loads_record(rpath.read_text(encoding="utf-8"), str(rpath)))
            bsize, rsize = bpath.stat().st_size, rpath.stat().st_size  # the files read, before the update rewrites one
            show = None if capped else statistics.median(show_s(folder) for _ in range(3))
            start = time.perf_counter()
            if not capped:
                store.update(folder, committed.device, record.results, commit="scaling", recorded_at="2026-12-03T00:00:00+00:00")
            update_s = None if capped else time.perf_counter() - start
            html_s = md_s = None
            if len(record.results) <= args.render_up_to:
                html_s, md_s = render_times(record)
            rows.append((f"{len(record.results):,}", f"{bsize / 1e6:.2f}", f"{median_line(btext) / 1e3:.1f}",
                         f"{t['load'] * 1e3:.0f}", f"{t['load'] / t['json']:.2f}", f"{bpeak / bsize:.2f}",
                         "-" if show is None else f"{show:.2f}",
                         f"{rsize / 1e6:.2f}", f"{median_line(rtext) / 1e3:.1f}",
                         f"{t['record'] * 1e3:.0f}", f"{t['record'] / t['rjson']:.2f}", f"{rpeak / rsize:.2f}",
                         "over the cap" if update_s is None else f"{update_s:.2f}", "-" if html_s is None else f"{html_s:.2f}", "-" if md_s is None else f"{md_s:.2f}"))
            print("  " + " | ".join(rows[-1]), flush=True)
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
