"""The HTML report in a real browser: Debian's headless Chromium, driven by Selenium.

Every case is in the table, a page of rows at a time, sorting and filtering work over all of them, a
detail view opens, the page logs no JavaScript error, and a case named like an HTML tag stays text,
in its row and in its details (both built from the data packed into the page: report/packed.py). A record as a hostile pull request
could make it runs no script however its links are clicked, and the page's policy runs no inline
script but the report's own. The driver is Debian's
/usr/bin/chromedriver, named explicitly, so Selenium never downloads one. Where either is absent
(a fresh machine: the README's test command installs neither) each test is skipped by the `browser`
fixture, so the file's tests are still collected (its work unit is one the scheduler hands out first,
tests/conftest.py) and the run's end says why in one line; `.ci/run` runs the tests once where no
chromium can be found and once with it.
Each test saves a screenshot in its tmp_path; `PERFGUARD_SCREENSHOT=FILE.png` also copies the
H200 report's screenshot there (the README's `benchmarks/report.png` is made that way).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from perfguard.analysis.metrics import complete
from perfguard.model import CaseResult, MovedRow, Profile, RunRecord, Verdict, Where, loads_baseline
from perfguard.report.html import render_html

# Debian's paths; PERFGUARD_TEST_BROWSER_DIR names another folder holding both, or an empty one to hide them
# (.ci/run's first test run, which shows the fresh state on a machine that has chromium too).
BROWSER_DIR = Path(os.environ.get("PERFGUARD_TEST_BROWSER_DIR") or "/usr/bin")
CHROMIUM, CHROMEDRIVER = BROWSER_DIR / "chromium", BROWSER_DIR / "chromedriver"
NO_BROWSER = "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install -e '.[test]')")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "<img src=x onerror=alert(1)>"
ROWS = "#cases > tbody"
PAGE = 100  # rows a page of the table shows (html.PAGE_ROWS)
IDS_JS = f"return Array.from(document.querySelectorAll('{ROWS} > tr.case > th')).map(th => th.textContent)"
# Every page's rows, from the first page to the last by the pager's "next", then back to the first:
# each click shows its page at once, so one script reads them all.
EVERY_JS = """
const read = new Function(arguments[0]), next = document.querySelector(".pager [data-step='1']");
const prev = document.querySelector(".pager [data-step='-1']");
while (!prev.disabled) prev.click();
const pages = [read()];
while (!next.disabled) { next.click(); pages.push(read()); }
while (!prev.disabled) prev.click();
return pages;
"""


# The rule that gives each status (analysis/decide.py).
REASONS = {"regressed": "outside", "improved": "outside", "same": "within", "inconclusive": "blind", "unstable": "imprecise", "new": "not_in_baseline", "missing": "did_not_run", "accepted": "accepted"}


def h200_record() -> RunRecord:
    """The H200 baseline of suites/ as a run: real GPU figures, with verdicts of every kind and a hostile case."""
    baseline = loads_baseline((ROOT / "baselines" / "nvidia-h200.json").read_text(), "baselines/nvidia-h200.json")
    results: list[CaseResult] = []
    verdicts: list[Verdict] = []
    statuses = {0: ("regressed", 12.4), 3: ("improved", -9.8), 5: ("unstable", 6.1), 9: ("new", None)}
    device = baseline.calibrated()
    for i, (_, entry) in enumerate(sorted(baseline.cases.items())):
        r = complete(entry.result, device)  # the derived figures a run's record has and a baseline does not keep
        if i == 9:
            r = dataclasses.replace(r, id=HOSTILE, name=HOSTILE, params={"html": HOSTILE})
        status, change = statuses.get(i, ("same", 0.3))
        median = r.judged_time.median_ms if r.judged_time else None
        verdicts.append(Verdict(
            r.id, "gpu_time", status, None if change is None else median / (1 + change / 100), median, change,
            5.0, "baselines/nvidia-h200.json",
            ("torch 2.11.0+cu130 → 2.12.0",) if i == 5 else (), reason=REASONS[status]))
        results.append(r)
    return RunRecord(created_at="2026-11-29T20:54:30+00:00", perfguard_version="0.1.0", devices=(baseline.device,),
                     results=tuple(results), verdicts=tuple(verdicts), commit="24e51ad615dfb1b6c157adff23a9a68e0ffa452d")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(NO_BROWSER)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                "--window-size=1400,1000", f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def open_report(browser, tmp_path: Path, records: list[RunRecord]) -> Path:
    page = tmp_path / "perfguard.html"
    page.write_text(render_html(records), encoding="utf-8")
    browser.get_log("browser")  # drop what an earlier page logged
    load(browser, page)
    return page


def load(browser, page: Path) -> None:
    """Open `page` and wait for its table: report.js builds the rows after inflating them."""
    browser.get(page.as_uri())
    WebDriverWait(browser, 60, poll_frequency=0.05).until(lambda b: b.execute_script(
        "return document.readyState === 'complete' && document.getElementById('cases').dataset.state"))
    assert browser.find_element(By.ID, "cases").get_attribute("data-state") == "ready"


def every_page(browser, read_js: str) -> list:
    """What `read_js` returns on each page of the table, concatenated; the first page is shown after."""
    return [item for page in browser.execute_script(EVERY_JS, read_js) for item in page]


def built(browser) -> None:
    """Wait for the detail views opened on this page: each is built when its block of data is inflated."""
    WebDriverWait(browser, 30, poll_frequency=0.05).until(lambda b: b.execute_script(
        f"return Array.from(document.querySelectorAll('{ROWS} > tr.detail:not([hidden])'))"
        ".every(tr => tr.dataset.built === 'done')"))


def assert_no_javascript_errors(browser) -> None:
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018


def screenshot(browser, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    assert browser.save_screenshot(str(path)) and path.stat().st_size > 10_000
    return path


def test_the_h200_report_has_every_case_sorts_filters_and_opens_details(browser, tmp_path):
    record = h200_record()
    open_report(browser, tmp_path, [record])
    assert len(browser.execute_script(IDS_JS)) == PAGE < len(record.results)  # a page at a time
    ids = every_page(browser, IDS_JS)
    assert sorted(ids) == sorted(r.id for r in record.results)
    assert ids[0].startswith("add[n=1048576") and browser.execute_script(
        f"return document.querySelector('{ROWS}').getAttribute('data-status')") == "regressed"
    where = browser.find_element(By.CSS_SELECTOR, ".pager .where").text
    assert where == f"rows 1–{PAGE} of {len(ids)} (page 1 of 2)"

    # Open the regressed case and one further down, for the screenshot and the detail view.
    rows = browser.find_elements(By.CSS_SELECTOR, f"{ROWS} > tr.case")
    rows[0].click()
    built(browser)
    detail = browser.find_element(By.CSS_SELECTOR, f"{ROWS} > tr.detail")
    assert detail.is_displayed() and detail.find_element(By.CSS_SELECTOR, "svg.hist path.bars").is_displayed()
    assert "gpu time regressed" in detail.text and "environment:" in detail.text
    browser.set_window_size(1400, 1600)  # the header, the overview and the open case in one picture
    browser.execute_script("window.scrollTo(0, 0)")
    shot = screenshot(browser, tmp_path, "report-h200.png")
    browser.set_window_size(1400, 1000)
    if os.environ.get("PERFGUARD_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["PERFGUARD_SCREENSHOT"])
    rows[0].click()
    assert not detail.is_displayed()

    # Sorting by median, over every case and not a page: ascending, then descending on a second click.
    header = browser.find_element(By.XPATH, "//table[@id='cases']/thead//th[starts-with(., 'median')]")
    medians_js = (f"return Array.from(document.querySelectorAll('{ROWS}'))"
                  ".map(tb => Number(tb.rows[0].cells[2].getAttribute('data-sort')))")
    before = browser.execute_script(IDS_JS)
    header.click()
    ascending = every_page(browser, medians_js)
    assert ascending == sorted(ascending) and len(ascending) == len(ids) and browser.execute_script(IDS_JS) != before
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert every_page(browser, medians_js) == sorted(ascending, reverse=True)
    browser.find_element(By.XPATH, "//table[@id='cases']/thead//th[.='case']").click()
    assert every_page(browser, IDS_JS) == sorted(ids, key=str.lower)

    # Filtering: by text, then by a verdict chip, then nothing.
    box = browser.find_element(By.ID, "filter")
    box.send_keys("matmul bfloat16")
    assert browser.execute_script(IDS_JS) == ["matmul[m=8192-n=8192-k=8192-dtype=bfloat16]"]
    assert browser.find_element(By.ID, "shown").text == f"1 of {len(ids)} cases"
    assert not browser.find_element(By.CSS_SELECTOR, ".pager").is_displayed()  # one page: no pager
    box.clear()
    box.send_keys(" ")  # an input event with no terms: everything back
    assert len(every_page(browser, IDS_JS)) == len(ids)
    browser.find_element(By.CSS_SELECTOR, ".chip[data-status=improved]").click()
    improved = [v.case_id for v in record.verdicts if v.status == "improved"]
    assert browser.execute_script(IDS_JS) == improved and len(improved) == 1
    browser.find_element(By.CSS_SELECTOR, ".chip[data-status=improved]").click()
    assert len(every_page(browser, IDS_JS)) == len(ids)

    # The roofline: a point per case with flops; clicking one opens its case.
    points = browser.find_elements(By.CSS_SELECTOR, "svg.roof circle.pt")
    assert len(points) == sum(1 for r in record.results if r.metrics and r.metrics.tflops and r.metrics.arithmetic_intensity)
    target = points[-1].get_attribute("data-case")
    points[-1].click()  # the case's page is shown, the case opened, whatever page was shown before
    assert browser.find_element(By.CSS_SELECTOR, f"#{target} > tr.detail").is_displayed()
    built(browser)
    assert_no_javascript_errors(browser)


def test_a_case_named_like_html_is_shown_as_text(browser, tmp_path):
    open_report(browser, tmp_path, [h200_record()])
    browser.find_element(By.ID, "filter").send_keys("onerror")
    assert browser.execute_script(IDS_JS) == [HOSTILE]
    open_everything(browser)  # its details too: the parameters hold the same text
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    assert HOSTILE in browser.find_element(By.ID, "cases").text
    assert f"html={HOSTILE}" in browser.find_element(By.CSS_SELECTOR, f"{ROWS} > tr.detail").text
    assert_no_javascript_errors(browser)


MOVED_JS = ("return Array.from(document.querySelectorAll('table.moved tr')).slice(1)"
            ".map(tr => Array.from(tr.cells).map(td => td.textContent))")


def test_a_moved_time_shows_its_kernels_in_a_table_sorted_by_any_column_names_as_text(browser, tmp_path):
    record = h200_record()
    rows = (MovedRow(HOSTILE, 0.100, 0.150, 1.0, 1.0, True), MovedRow("triton_poi_fused_add", None, 0.020, None, 1.0, True),
            MovedRow("gemm", 1.000, 1.010, 2.0, 2.0, False))  # as analysis/moved.py orders them
    where = Where("kernel", rows, moved=0.08, noise_pct=4.0)
    verdicts = (dataclasses.replace(record.verdicts[0], where=where), *record.verdicts[1:])
    open_report(browser, tmp_path, [dataclasses.replace(record, verdicts=verdicts)])
    browser.find_element(By.ID, "filter").send_keys(record.verdicts[0].case_id)
    open_everything(browser)
    shown = browser.execute_script(MOVED_JS)
    assert [r[0] for r in shown] == [HOSTILE, "triton_poi_fused_add", "gemm"]
    assert shown[1][2:] == ["—", "20.00 µs", "+20.0 µs", "25%"]
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    after = browser.find_element(By.XPATH, "//table[contains(@class,'moved')]//th[text()='after']")
    after.click()  # most first
    assert [r[0] for r in browser.execute_script(MOVED_JS)] == ["gemm", HOSTILE, "triton_poi_fused_add"]
    after.click()  # least first
    assert [r[0] for r in browser.execute_script(MOVED_JS)] == ["triton_poi_fused_add", HOSTILE, "gemm"]
    where_line = browser.find_element(By.CSS_SELECTOR, "table.moved").find_element(By.XPATH, "preceding-sibling::p[1]").text
    assert where_line.startswith("where: <img src=x onerror=alert(1)> 100.0 µs → 150.0 µs (+50%, 62% of the change)")
    screenshot(browser, tmp_path, "moved.png")
    assert_no_javascript_errors(browser)


def test_two_gpus_sit_side_by_side(browser, tmp_path):
    h200 = h200_record()
    other = dataclasses.replace(h200.devices[0], name="NVIDIA A100-SXM4-80GB", slug="nvidia-a100-sxm4-80gb",
                                peak_bandwidth_gbps=2039.0)
    a100 = dataclasses.replace(h200, devices=(other,), verdicts=(), created_at="2026-11-29T21:00:00+00:00",
                               results=tuple(dataclasses.replace(r, device=other.slug) for r in h200.results[:5]))
    open_report(browser, tmp_path, [h200, a100])
    assert len(every_page(browser, IDS_JS)) == len(h200.results)
    groups = browser.find_element(By.CSS_SELECTOR, "#cases thead tr.groups").text
    assert "NVIDIA H200" in groups and "NVIDIA A100-SXM4-80GB" in groups
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.roof")) == 2
    browser.find_element(By.CSS_SELECTOR, f"{ROWS} > tr.case").click()
    built(browser)
    panels = browser.find_elements(By.CSS_SELECTOR, f"{ROWS}:first-of-type > tr.detail .panel")
    assert [p.find_element(By.TAG_NAME, "h3").text for p in panels] == ["NVIDIA H200", "NVIDIA A100-SXM4-80GB"]
    screenshot(browser, tmp_path, "report-two-gpus.png")
    assert_no_javascript_errors(browser)


@pytest.mark.parametrize("cases", [1, 1000])
def test_reports_of_1_and_1000_cases_render_every_case(browser, tmp_path, cases):
    template = h200_record().results[0]
    results = tuple(dataclasses.replace(template, id=f"add[n={i}]", timings=dict(template.timings)) for i in range(cases))
    record = RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0.1.0",
                       devices=h200_record().devices, results=results)
    open_report(browser, tmp_path, [record])
    assert sorted(every_page(browser, IDS_JS)) == sorted(r.id for r in results)
    browser.find_element(By.ID, "filter").send_keys("n=0")
    visible = browser.execute_script(IDS_JS)
    assert sorted(visible) == sorted(r.id for r in results if "n=0" in r.id) and len(visible) == min(cases, 1)
    screenshot(browser, tmp_path, f"report-{cases}.png")
    assert_no_javascript_errors(browser)


def copies(record: RunRecord, n: int) -> RunRecord:
    """`record`'s cases `n` times over, each copy's ids renamed (as benchmarks/report_scale.py makes them)."""
    def renamed(case_id: str, k: int) -> str:
        return f"{case_id[:-1]}-copy={k}]" if case_id.endswith("]") else f"{case_id}[copy={k}]"

    return dataclasses.replace(
        record, results=tuple(dataclasses.replace(r, id=renamed(r.id, k)) for k in range(n) for r in record.results),
        verdicts=tuple(dataclasses.replace(v, case_id=renamed(v.case_id, k)) for k in range(n) for v in record.verdicts))


def test_a_report_of_5280_cases_is_small_and_pages_sorts_filters_and_opens_any_case(browser, tmp_path):
    """Issue 34: 40 copies of the H200 run. As markup the page was 32 MB and took Chromium 8 s to open;
    benchmarks/report_scale.py times it (docs/development.md), this test checks what it shows."""
    h200 = h200_record()  # its first 132 cases, whatever the baseline gains: 40 copies are 5,280
    kept = {r.id for r in h200.results[:132]}
    h200 = dataclasses.replace(h200, results=tuple(r for r in h200.results if r.id in kept),
                               verdicts=tuple(v for v in h200.verdicts if v.case_id in kept))
    record = copies(h200, 40)
    page = open_report(browser, tmp_path, [record])
    assert page.stat().st_size <= 5 * 10**6
    assert len(browser.execute_script(IDS_JS)) == PAGE
    assert browser.find_element(By.ID, "shown").text == "5280 of 5280 cases"
    ids = every_page(browser, IDS_JS)
    assert len(ids) == len(set(ids)) == 5280 and set(ids) == {r.id for r in record.results}
    # To the last page: 51 clicks in one script (a script call each took 3 s in all), the last one on
    # the pager under the table, as a person's.
    browser.execute_script("const next = document.querySelector(\".pager [data-step='1']\");"
                           "for (let i = 0; i < 51; i++) next.click();")
    browser.find_elements(By.CSS_SELECTOR, ".pager [data-step='1']")[1].click()
    assert browser.find_element(By.CSS_SELECTOR, ".pager .where").text == "rows 5201–5280 of 5280 (page 53 of 53)"
    last = browser.find_elements(By.CSS_SELECTOR, f"{ROWS} > tr.case")
    assert len(last) == 80
    last[-1].click()  # a case from the last block of details
    built(browser)
    assert "environment:" in browser.find_element(By.CSS_SELECTOR, f"{ROWS}:last-of-type > tr.detail").text
    browser.find_element(By.XPATH, "//table[@id='cases']/thead//th[starts-with(., 'median')]").click()
    medians = every_page(browser, f"return Array.from(document.querySelectorAll('{ROWS}'))"
                                  ".map(tb => Number(tb.rows[0].cells[2].getAttribute('data-sort')))")
    assert len(medians) == 5280 and medians == sorted(medians)
    browser.find_element(By.ID, "filter").send_keys("copy=39]")
    assert browser.find_element(By.ID, "shown").text == "132 of 5280 cases"
    assert all(case.endswith("copy=39]") for case in every_page(browser, IDS_JS))
    assert_no_javascript_errors(browser)


# --- a hostile record ----------------------------------------------------------------------------

SCRIPTS = ("javascript:alert(document.title)", "JaVaScRiPt:document.title='pwned'",
           "data:text/html,<script>alert(1)</script>", " javascript:alert(2)", "https://evil.example/t.json",
           "/etc/passwd", "../../escaped.json", "traces/../../escaped.json")
TITLE_JS = "return document.title"


def hostile_record() -> RunRecord:
    """A few real cases whose traces are scripts or paths out of the report's folder, one with a trace
    inside it, and one errored case whose id and error are HTML with a script link."""
    h200 = h200_record()
    results = [dataclasses.replace(r, profile=Profile(calls=5, trace=trace))
               for r, trace in zip(h200.results, (*SCRIPTS, "traces/add.json"))]
    link = '<a href="javascript:alert(3)">click</a>'
    results.append(CaseResult(id=link, name=link, status="error", device=h200.devices[0].slug,
                              error=f"setup raised: {link} <script>alert(4)</script>"))
    return dataclasses.replace(h200, results=tuple(results), verdicts=())


def csp(browser) -> dict[str, list[str]]:
    content = browser.execute_script(
        "return document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]').content")
    return {d.split()[0]: d.split()[1:] for d in content.split(";") if d.strip()}


def open_everything(browser) -> None:
    browser.find_element(By.ID, "expand").click()
    built(browser)
    browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; })")


def test_no_link_of_a_hostile_record_runs_a_script_when_clicked(browser, tmp_path):
    page = open_report(browser, tmp_path, [hostile_record()])
    policy = csp(browser)
    assert "'unsafe-inline'" not in policy["script-src"] and policy["script-src"][0].startswith("'sha256-")
    title = browser.execute_script(TITLE_JS)
    open_everything(browser)
    hrefs = browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))")
    assert "traces/add.json" in hrefs and all(h.startswith("#case-") or h == "traces/add.json" for h in hrefs)
    for i in range(len(hrefs)):
        load(browser, page)
        open_everything(browser)
        link = browser.find_elements(By.CSS_SELECTOR, "a[href]")[i]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
        link.click()
        assert_no_javascript_errors(browser)  # no alert() ran
        if browser.current_url.startswith(page.as_uri()):
            assert browser.execute_script(TITLE_JS) == title
    load(browser, page)
    open_everything(browser)
    assert browser.execute_script("return document.querySelectorAll('script').length") == 1
    assert "not a path inside the report's folder: not linked" in browser.find_element(By.ID, "cases").get_attribute("textContent")


def test_the_policy_runs_the_reports_own_script_and_no_inline_script(browser, tmp_path):
    """Were an escaping bug to let record text in as markup, the page's policy still runs none of it."""
    injected = ("<script>document.title = 'inline script ran'</script>"
                "<img src=\"data:image/png;base64,AAAA\" onerror=\"document.title = 'handler ran'\">"
                "<a id=\"injected\" href=\"javascript:document.title = 'link ran'\">injected</a>")
    page = tmp_path / "perfguard.html"
    page.write_text(render_html([hostile_record()]).replace("<main>", "<main>" + injected, 1), encoding="utf-8")
    load(browser, page)
    browser.find_element(By.ID, "injected").click()
    assert browser.execute_script(TITLE_JS).startswith("perfguard: ")
    browser.find_element(By.ID, "filter").send_keys("no-such-case")  # the report's own script runs: it filters
    assert browser.find_element(By.ID, "shown").text.startswith("0 of ")
    violations = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
    assert len(violations) >= 3  # the script, the handler and the link, each refused

