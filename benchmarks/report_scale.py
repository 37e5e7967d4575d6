"""How the HTML report and the Markdown summary scale: 132, 1,320 and 5,280 cases of real H200 figures.

    python benchmarks/report_scale.py [--copies 1 10 40] [--repeats 3] [--no-browser]

The record is the committed baselines/nvidia-h200.json (132 cases, each with its runs' samples,
counters and memory) as one run, with verdicts of every kind, copied `--copies` times with every
case renamed (`add[n=1024]` becomes `add[n=1024-copy=7]`): 40 copies is 5,280 cases, a suite of
a large project on several cards. Printed per size: the time to render the HTML and the Markdown
(median of the repeats, wall and CPU), their sizes, and how long headless Chromium takes to open
the page (navigation start to the first page of rows in the table: the load event, or the report's
`perfguard-rows` mark where its script builds the rows after it; median of the repeats). Targets
(issue 34): at 5,280 cases at most 5 MB and 2 s to open; at most 1 s to render per 1,000 cases.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

from perfguard.analysis.metrics import complete
from perfguard.model import Noise, RunRecord, TimeEvidence, Verdict, loads_baseline
from perfguard.report.html import render_html
from perfguard.report.markdown import render_markdown

ROOT = Path(__file__).resolve().parents[1]
# Open time: the later of the load event and the script's mark (none on a page whose rows are markup).
OPEN_JS = """
const nav = performance.getEntriesByType("navigation")[0];
const rows = performance.getEntriesByName("perfguard-rows")[0];
return [Math.max(nav.loadEventEnd, rows ? rows.startTime : 0), document.querySelectorAll("#cases > tbody").length];
"""
READY_JS = ("return document.readyState === 'complete' && (!document.getElementById('report-data') || "
            "performance.getEntriesByName('perfguard-rows').length > 0)")


def h200_run() -> RunRecord:
    """The H200 baseline as a run: one case in ten regressed, others improved, unstable or new."""
    baseline = loads_baseline((ROOT / "baselines" / "nvidia-h200.json").read_text(), "baselines/nvidia-h200.json")
    results, verdicts = [], []
    device = baseline.calibrated()
    for i, (_, entry) in enumerate(sorted(baseline.cases.items())):
        r = complete(entry.result, device)  # the derived figures a run's record has and a baseline does not keep
        status, change = {0: ("regressed", 12.4), 3: ("improved", -9.8), 5: ("unstable", 6.1), 9: ("new", None)}.get(
            i % 10, ("same", 0.3))
        median = r.judged_time.median_ms if r.judged_time else None
        verdicts.append(Verdict(r.id, "gpu_time", status, None if change is None else median / (1 + change / 100), median,
                                change, 5.0, "baselines/nvidia-h200.json", (), reason="outside" if status != "same" else "within",
                                time=TimeEvidence(noise=Noise(runs=9, spread_pct=0.4, tolerance_pct=5.0, detectable_pct=5.3))))
        results.append(r)
    return RunRecord(created_at="2026-11-29T20:54:30+00:00", perfguard_version="0.1.0", devices=(baseline.device,),
                     results=tuple(results), verdicts=tuple(verdicts), commit="24e51ad615dfb1b6c157adff23a9a68e0ffa452d")


def copies(run: RunRecord, n: int) -> RunRecord:
    """`run` with its cases `n` times over, each copy's ids renamed so that no two cases share one."""
    def renamed(case_id: str, k: int) -> str:
        name, bracket, rest = case_id.partition("[")
        return f"{name}[{rest[:-1]}-copy={k}]" if bracket else f"{name}[copy={k}]"

    results = tuple(dataclasses.replace(r, id=renamed(r.id, k)) for k in range(n) for r in run.results)
    verdicts = tuple(dataclasses.replace(v, case_id=renamed(v.case_id, k)) for k in range(n) for v in run.verdicts)
    return dataclasses.replace(run, results=results, verdicts=verdicts)


def timed(render, record: RunRecord, repeats: int) -> tuple[float, float, str]:
    """The median wall and CPU seconds of `repeats` renders, and the text."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        text = render([record])
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu), text


def open_seconds(driver, page: Path, repeats: int) -> float:
    from selenium.webdriver.support.ui import WebDriverWait

    times = []
    for _ in range(repeats):
        driver.get("about:blank")
        driver.get(page.as_uri())
        WebDriverWait(driver, 120, poll_frequency=0.05).until(lambda d: d.execute_script(READY_JS))
        ms, bodies = driver.execute_script(OPEN_JS)
        if not bodies:
            raise SystemExit(f"{page}: no row of the table was shown")
        times.append(ms / 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10, 40])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true", help="leave out Chromium's open time")
    args = parser.parse_args(argv)
    run = h200_run()
    render_html([run])  # template compilation and imports, not counted
    driver = None
    if not args.no_browser:
        from report_browser import browser

        tmp = tempfile.TemporaryDirectory(prefix="perfguard-scale-")
        driver = browser(Path(tmp.name, "profile"))
    print(describe())
    print(f"median of {args.repeats}; render: wall (CPU) seconds; open: headless Chromium, navigation to the first rows")
    print("| cases | HTML render | HTML size | Markdown render | Markdown size | Chromium open |")
    print("|---:|---:|---:|---:|---:|---:|")
    try:
        for n in args.copies:
            record = copies(run, n)
            html_s, html_cpu, html = timed(render_html, record, args.repeats)
            md_s, md_cpu, md = timed(render_markdown, record, args.repeats)
            opened = "n/a"
            if driver is not None:
                with tempfile.TemporaryDirectory(prefix="perfguard-scale-page-") as folder:
                    page = Path(folder, "perfguard.html")
                    page.write_text(html, encoding="utf-8")
                    opened = f"{open_seconds(driver, page, args.repeats):.2f} s"
            print(f"| {len(record.results):,} | {html_s:.2f} s ({html_cpu:.2f}) | {len(html.encode()) / 1e6:.2f} MB "
                  f"| {md_s:.2f} s ({md_cpu:.2f}) | {len(md.encode()) / 1e3:.1f} KB | {opened} |", flush=True)
    finally:
        if driver is not None:
            driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
