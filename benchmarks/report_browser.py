"""How long headless Chromium takes to load the 1,000-case HTML report and to sort it by a column.

    python benchmarks/report_browser.py [--cases 1000] [--samples 1000] [--repeats 5] [--column median]

The page is report_render.py's synthetic record (every case with its 1,000 samples and its detail
view), opened from a file in Debian's headless Chromium through Selenium, with the flags of
tests/test_report_browser.py. The times are the page's own, from its performance API, not
Selenium's round trips:

    load   navigation start to the first page of rows in the table: the report's script marks it
           (`perfguard-rows`) once it has inflated the packed rows and built a page of them, after
           the load event (parsing the page, its CSS, SVG and script)
    paint  navigation start to the first contentful paint
    sort   a click on the column's header to the next frame (performance.mark / measure): the
           report's script sorts every case and shows the first page; the browser lays it out again;
           "script" is the click handler alone

Each repeat loads the page afresh (no back-forward cache: about:blank in between) and sorts once.
Needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium chromium-driver) and selenium.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from machine import describe
from report_render import synthetic_record
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from perfguard.report.html import render_html

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--no-first-run", "--window-size=1400,1000")
LOAD_JS = """
const nav = performance.getEntriesByType("navigation")[0];
const paint = performance.getEntriesByName("first-contentful-paint")[0];
const rows = performance.getEntriesByName("perfguard-rows")[0];
return [Math.max(nav.loadEventEnd, rows ? rows.startTime : 0), paint ? paint.startTime : null,
        document.getElementById("shown").textContent];
"""
READY_JS = "return document.readyState === 'complete' && !!document.getElementById('cases').dataset.state.match(/ready|failed/)"
# Click the header, then wait for the frame after it: requestAnimationFrame runs before the browser
# lays out and paints that frame, the timeout after it.
SORT_JS = """
const done = arguments[arguments.length - 1];
const th = Array.from(document.querySelectorAll("#cases thead th[data-col]"))
  .find(h => h.textContent.trim().startsWith(arguments[0]));
performance.mark("sort");
th.click();
const script = performance.now() - performance.getEntriesByName("sort")[0].startTime;
requestAnimationFrame(() => setTimeout(() => {
  const m = performance.measure("sorted", "sort");
  done([m.duration, script, th.getAttribute("aria-sort")]);
}, 0));
"""


def browser(profile: Path) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(120)
    return driver


def _spread(ms: list[float]) -> str:
    """"1.42 s (0.64–2.10)": the median of the repeats and their range, in seconds."""
    return f"{statistics.median(ms) / 1e3:.2f} s ({min(ms) / 1e3:.2f}–{max(ms) / 1e3:.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--column", default="median", help="the header the sort clicks (its text's start)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfguard-browser-") as tmp:
        page = Path(tmp, "perfguard.html")
        page.write_text(render_html([synthetic_record(args.cases, args.samples)]), encoding="utf-8")
        driver = browser(Path(tmp, "profile"))
        try:
            version = driver.capabilities.get("browserVersion", "?")
            loads, paints, sorts, scripts = [], [], [], []
            for _ in range(args.repeats):
                driver.get("about:blank")
                driver.get(page.as_uri())
                WebDriverWait(driver, 120, poll_frequency=0.05).until(lambda d: d.execute_script(READY_JS))
                load_ms, paint_ms, shown = driver.execute_script(LOAD_JS)
                if shown != f"{args.cases} of {args.cases} cases":
                    raise SystemExit(f"the page shows {shown!r}, not all {args.cases} cases")
                sort_ms, script_ms, order = driver.execute_async_script(SORT_JS, args.column)
                if order != "ascending":
                    raise SystemExit(f"clicking {args.column!r} did not sort the table (aria-sort {order!r})")
                loads.append(load_ms)
                paints.append(paint_ms)
                sorts.append(sort_ms)
                scripts.append(script_ms)
        finally:
            driver.quit()
    print(describe())
    print(f"headless Chromium {version}; {args.cases} cases, {args.samples} samples each; median of {args.repeats} loads")
    print(f"load:  {_spread(loads)}" + (f", first paint {_spread([p for p in paints if p is not None])}" if any(paints) else ""))
    print(f"sort by {args.column}: {_spread(sorts)}, its script {_spread(scripts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
