"""The HTML report and the Markdown summary, rendered from records on the CPU (no browser)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from report_page import packed, panels, rows, sections, text

from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.errors import ReportError
from perfguard.model import (CaseResult, CountChange, CounterEvidence, DeviceInfo, Memory, Metrics, NextStep, Noise, RunRecord,
                             TimeEvidence, Verdict, dumps)
from perfguard.report import words
from perfguard.report import html as html_report
from perfguard.report.html import render_html
from perfguard.report.markdown import LIMIT_BYTES, render_markdown
from perfguard.report.view import merge

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", uuid="GPU-1", driver="580.159.04", cuda="13.0",
                  torch="2.11.0", peak_bandwidth_gbps=4814.3)
A100 = DeviceInfo(kind="cuda", name="NVIDIA A100-SXM4-80GB", slug="nvidia-a100-sxm4-80gb", uuid="GPU-2",
                  driver="570.86", cuda="12.8", torch="2.11.0", peak_bandwidth_gbps=2039.0)
CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0")
HOSTILE = "<img src=x onerror=alert(1)>"


def result(case_id: str, device: DeviceInfo = H200, median_ms: float = 0.5, flops: float | None = 1e9,
           samples: int = 50, **fields) -> CaseResult:
    xs = tuple(float(x) for x in np.random.default_rng(len(case_id)).lognormal(np.log(median_ms), 0.01, samples))
    nbytes = 3e8
    seconds = float(np.median(xs)) / 1e3
    metrics = Metrics(gbps=nbytes / seconds / 1e9, tflops=flops / seconds / 1e12 if flops else None,
                      arithmetic_intensity=flops / nbytes if flops else None,
                      bandwidth_util=nbytes / seconds / 1e9 / device.peak_bandwidth_gbps if device.peak_bandwidth_gbps else None)
    return CaseResult(id=case_id, name=case_id.split("[")[0], status="ok", device=device.slug, timer="cuda-events",
                      bytes=nbytes, flops=flops, timings={"gpu_time": timing(xs)}, metrics=metrics,
                      memory=Memory(peak_allocated_bytes=2**21), **fields)


# The rule that gives each status (analysis/decide.py).
REASONS = {"regressed": "outside", "improved": "outside", "same": "within", "inconclusive": "blind", "unstable": "imprecise",
           "new": "not_in_baseline", "missing": "did_not_run", "accepted": "accepted"}


def verdict(case_id: str, status: str, change: float | None = None, env: tuple[str, ...] = (),
            baseline_file: str = "baselines/nvidia-h200.json") -> Verdict:
    compared = status not in ("new", "missing")
    return Verdict(case_id, "gpu_time", status, None if change is None else 0.5, 0.5 * (1 + (change or 0) / 100), change,
                   5.0, baseline_file, env, reason=REASONS[status],
                   time=TimeEvidence(noise=Noise(runs=3, spread_pct=0.2, tolerance_pct=5.0, detectable_pct=5.4)) if compared
                   else None)


def record(*results: CaseResult, verdicts: tuple[Verdict, ...] = (), devices: tuple[DeviceInfo, ...] = (H200,),
           created_at: str = "2026-11-29T12:00:00+00:00", commit: str = "0123456789abcdef") -> RunRecord:
    return RunRecord(created_at=created_at, perfguard_version="0.1.0", devices=devices, results=results,
                     verdicts=verdicts, commit=commit)


def many(n: int, statuses=("same", "regressed", "improved", "new", "unstable")) -> RunRecord:
    results = [result(f"op[n={i}-dtype=float16]", samples=20, flops=None if i % 4 == 3 else 1e9) for i in range(n)]
    changes = {"regressed": 12.0, "improved": -9.0}
    verdicts = [verdict(r.id, statuses[i % len(statuses)], changes.get(statuses[i % len(statuses)], 1.0))
                for i, r in enumerate(results)]
    return record(*results, verdicts=tuple(verdicts))


# --- Markdown ------------------------------------------------------------------------------------


def test_markdown_lists_regressions_first_then_improvements_new_and_unstable():
    run = record(result("a"), result("b"), result("c"), result("d"), result("e"),
                 verdicts=(verdict("a", "same", 0.1), verdict("b", "unstable", 6.0), verdict("c", "new"),
                           verdict("d", "improved", -9.0), verdict("e", "regressed", 12.0)))
    md = render_markdown([run])
    headings = re.findall(r"^### (\w[\w ]*?) \(\d+\)$", md, flags=re.M)
    assert headings == ["Regressions", "Improvements", "New cases", "Unstable"]
    assert md.startswith("## perfguard: 1 regressed, 1 unstable, 1 improved, 1 new, 1 same on NVIDIA H200")
    assert md.index("`e`: gpu\\_time regressed: 500.0 µs → 560.0 µs (+12.0%)") < md.index("### Improvements")
    table = md[md.index("| case |"):]
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:7]] == ["`e`", "`b`", "`d`", "`c`", "`a`"]


def test_markdown_of_5000_cases_stays_under_60_kb_and_counts_what_it_left_out():
    md = render_markdown([many(5000)])
    assert len(md.encode("utf-8")) < LIMIT_BYTES
    assert "### Regressions (1000)" in md and "more: see the HTML report" in md
    assert "more rows: see the HTML report" in md and md.rstrip().endswith("</details>")


def test_markdown_shows_hostile_ids_and_messages_as_text():
    bad = f"{HOSTILE}|x`y"
    run = record(result(bad), verdicts=(dataclasses.replace(verdict(bad, "regressed", 12.0), baseline_file="<b>bold</b> *x*"),))
    md = render_markdown([run])
    assert "<b>" not in md and "&lt;b&gt;bold&lt;/b&gt; \\*x\\*" in md
    assert f"`` {HOSTILE}|x`y ``" in md  # a code span (padded: it holds a backtick): shown, not rendered
    row = next(line for line in md.splitlines() if line.startswith("| ``"))
    assert row.count(" | ") == 8 and "\\|" in row  # the pipe in the id does not add a column


# --- HTML ----------------------------------------------------------------------------------------


def test_html_shows_a_case_whose_name_or_parameters_hold_html_as_text():
    run = record(result(HOSTILE, params={"mode": "<script>alert(2)</script>"}),
                 devices=(dataclasses.replace(H200, name='"><b>gpu'),), verdicts=(verdict(HOSTILE, "regressed", 12.0),))
    page = render_html([run])
    for raw in (HOSTILE, "<script>alert(2)", '"><b>gpu'):
        assert raw not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # in what needs attention: markup, escaped
    assert rows(page) == [HOSTILE]  # the table's rows and details are data, which the page shows as text
    assert "<script>alert(2)</script>" in sections(panels(page, HOSTILE)[0])["run"]["parameters"]


def test_html_of_one_case_renders_with_header_roofline_and_detail():
    page = render_html([record(result("add[n=1024]"), verdicts=(verdict("add[n=1024]", "regressed", 12.0),))])
    assert rows(page) == ["add[n=1024]"]
    for said in ("NVIDIA H200", "580.159.04", "0123456789ab", "2026-11-29 12:00 UTC", "1</b> regressed",
                 "memory roof 4,814 GB/s"):
        assert said in page, said
    (panel,) = panels(page, "add[n=1024]")
    assert panel["hist"]["bars"].startswith("M") and "95% CI" in panel["hist"]["rest"]
    assert "95% CI" in sections(panel)["gpu_time"] and "not captured" in panel["breakdown_missing"]


def test_html_of_1000_cases_has_every_case_once():
    run = many(1000)
    page = render_html([run])
    assert sorted(rows(page)) == sorted(r.id for r in run.results)
    assert len(packed(page)[1]) == 1000  # a detail view per case, in the rows' order
    assert "250 cases without both declared bytes and flops not on the chart" in page
    assert len(page.encode("utf-8")) < 10**6  # as markup it was 4 MB


def test_html_is_one_self_contained_file():
    page = render_html([many(5)])
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # panel.js names SVG's namespace, a name that is never fetched.
    fetched = page.replace('"http://www.w3.org/2000/svg"', "")
    assert not re.search(r"<(link|img|iframe)\b|<script\s+src|@import|url\(|https?://", fetched)
    assert page.count("<style>") == 1 and page.count("<script>") == 1


def test_the_tables_data_is_base64_in_attributes_and_holds_record_text_as_strings():
    run = record(result(HOSTILE), verdicts=(verdict(HOSTILE, "regressed", 12.0),))
    page = render_html([run])
    values = re.findall(r'<data class="(?:rows|details)" value="([^"]*)"', page)
    assert len(values) == 2 and all(re.fullmatch(r"[A-Za-z0-9+/]*=*", v) for v in values)
    table, details = packed(page)
    assert table[0][:2] == ["case-0", HOSTILE] and details[0][0]["verdicts"][0][:2] == ["regressed", "gpu time"]


def test_without_scripts_the_page_lists_what_needs_attention_and_says_the_table_needs_them():
    page = render_html([many(400)])  # 80 regressed, 80 improved, 80 unstable
    static = page[page.index('<section class="attention">'):page.index('<div class="controls">')]
    shown, hidden = static.split("<noscript>", 1)
    assert shown.count("<li>") == html_report.ATTENTION_ITEMS
    assert hidden.count("<li>") == html_report.STATIC_ITEMS - html_report.ATTENTION_ITEMS
    assert 'badge v-regressed">regressed</span> <a href="#case-0" class="id">op[n=1' in shown
    assert "The table of cases is built by the page's script" in hidden and "(200 of 240)" in hidden


def test_html_orders_cases_by_verdict_and_counts_them_in_the_header():
    run = many(10)
    page = render_html([run])
    assert [r.split("[")[0] for r in rows(page)] == ["op"] * 10
    first = [v.case_id for v in run.verdicts if v.status == "regressed"]
    assert rows(page)[:2] == sorted(first)
    assert "<b>2</b> regressed" in page and "<b>2</b> same" in page


def test_merging_two_devices_shows_one_row_per_case_with_both_devices():
    ids = ["add[n=1]", "add[n=2]", "mul[n=1]"]
    h200 = record(*(result(i) for i in ids), verdicts=tuple(verdict(i, "same", 0.5) for i in ids))
    a100 = record(*(result(i, A100, median_ms=1.1) for i in ids[:2]), devices=(A100,),
                  verdicts=tuple(verdict(i, "new", baseline_file="baselines/nvidia-a100-sxm4-80gb.json") for i in ids[:2]),
                  created_at="2026-11-29T13:00:00+00:00")
    page = render_html([h200, a100])
    assert sorted(rows(page)) == sorted(ids)
    assert re.search(r'<tr class="groups">.*NVIDIA H200.*NVIDIA A100-SXM4-80GB', page)
    table, details = packed(page)
    assert [c[5] for c in table[0][5] if len(c) > 5] == ["same", "new"]  # a verdict badge per device
    assert [p["device"] for p in details[0]] == ["NVIDIA H200", "NVIDIA A100-SXM4-80GB"]
    assert details[2][1] == {"device": "NVIDIA A100-SXM4-80GB", "absent": True}  # not run on this device
    assert "merged from 2 run records" in page


def test_merge_takes_the_later_record_per_device_and_case_and_keeps_measured_over_missing():
    early = record(result("a", median_ms=1.0), result("b", median_ms=1.0), created_at="2026-11-29T10:00:00+00:00")
    late = record(result("a", median_ms=2.0), verdicts=(verdict("b", "missing"),), created_at="2026-11-29T11:00:00+00:00")
    merged = merge([late, early])  # out of order on purpose: created_at decides, not argument order
    assert merged.cases["a"]["nvidia-h200"].result.judged_time.median_ms == pytest.approx(2.0, rel=0.05)
    assert merged.cases["b"]["nvidia-h200"].result is not None  # worker 2 did not run b; worker 1 measured it
    assert merged.replaced == 1 and list(merged.devices) == ["nvidia-h200"]


def test_cases_without_flops_are_listed_beside_the_roofline_and_a_cpu_has_no_roof():
    page = render_html([record(result("copy", CPU, flops=None), result("add", CPU), devices=(CPU,))])
    assert "1 case without both declared bytes and flops not on the chart" in page and 'href="#case-' in page
    assert "no memory roof" in page and "memory roof 4" not in page
    assert page.count('<circle class="pt') == 1


def test_missing_and_errored_cases_render_with_what_is_known():
    broken = CaseResult(id="broken", name="broken", status="error", device=H200.slug, error="setup raised ValueError: <x>")
    page = render_html([record(result("a"), broken, verdicts=(verdict("a", "same", 0.2), verdict("gone", "missing")))])
    assert rows(page)[0] == "broken" and set(rows(page)) == {"a", "broken", "gone"}
    assert panels(page, "broken")[0]["error"] == "setup raised ValueError: <x>" and "setup raised ValueError: &lt;x&gt;" in page
    assert panels(page, "gone")[0]["verdicts"][0][0] == "missing" and 'badge v-missing">missing' in page


def test_environment_mismatches_are_shown_on_the_case():
    page = render_html([record(result("a"), verdicts=(verdict("a", "same", 0.2, env=("torch 2.11.0 → 2.12.0",)),))])
    assert panels(page, "a")[0]["env"] == ["differs from the baseline: torch 2.11.0 → 2.12.0", True]


@dataclasses.dataclass(frozen=True)
class _Result4(CaseResult):  # what issue 4 adds to the model, as far as the report reads it
    profile: tuple = ()
    memory_breakdown: dict | None = None


def test_figures_issue_4_adds_appear_once_the_record_carries_them():
    base = result("step")
    later = _Result4(**{f.name: getattr(base, f.name) for f in dataclasses.fields(CaseResult)})
    later = dataclasses.replace(
        later, metrics=dataclasses.replace(base.metrics, bound="memory", efficiency=0.9),
        profile=({"operator": "aten::add", "cuda_ms": 0.41, "calls": 1},),
        memory_breakdown={"parameters": 2**30, "activations": 3 * 2**30},
    )
    page = render_html([record(later)])
    (panel,) = panels(page, "step")
    assert sections(panel)["throughput"]["bound"] == "memory" and sections(panel)["throughput"]["efficiency"] == "90.0%"
    assert [c[0] for c in packed(page)[0][0][5]][-1] == "memory"  # the table's bound column
    assert panel["profile"][1][0][0] == "aten::add" and ["activations", "3.0 GiB", 0.75] in panel["breakdown"]
    (plain,) = panels(render_html([record(base)]), "step")
    assert "profile" not in plain and "profile_note" not in plain  # panel.js: "not captured (profile with …)"
    assert plain["breakdown_missing"].startswith("not captured (declare memory_breakdown")


def test_the_roofline_of_a_known_gpu_has_its_compute_roofs_and_each_case_its_bound():
    from perfguard.analysis.metrics import derive
    from perfguard.analysis.peaks import lookup

    h200 = dataclasses.replace(H200, peak_tflops=lookup("NVIDIA H200").tflops())

    def case(case_id: str, median_ms: float, nbytes: float, flops: float | None, eager_ms: float, dtype: str) -> CaseResult:
        base = result(case_id, h200, median_ms=median_ms, flops=flops)
        return dataclasses.replace(base, bytes=nbytes, metrics=derive(base.judged_time.median_ms, nbytes, flops, h200,
                                                                       eager_ms, dtype))

    run = record(case("copy", 0.505, 2 * 2**30, None, 0.52, "float32"),
                 case("matmul", 1.5, 3 * 8192**2 * 2, 2 * 8192**3, 1.52, "bfloat16"),
                 case("add", 0.006, 3 * 4 * 2**20, 2**20, 0.02, "float32"), devices=(h200,))
    page = render_html([run])
    for roof in ("memory roof 4,814 GB/s", "bf16, fp16 990 TFLOP/s", "tf32 494 TFLOP/s", "fp32, fp64 67 TFLOP/s"):
        assert roof in page, roof
    assert "compute roof not drawn" not in page
    assert sorted(row[5][-1][0] for row in packed(page)[0]) == ["compute", "launch", "memory"]
    assert sections(panels(page, "add")[0])["throughput"]["bound"].startswith("launch-bound; capture the calls in a CUDA graph")
    assert re.search(r"matmul: 2\.73e\+03 FLOP/B, 7\d\d TFLOP/s, 7\d\.\d% of its roof", page)


def test_a_template_error_is_one_report_error_line(monkeypatch):
    import jinja2

    broken = jinja2.Environment(loader=jinja2.DictLoader({"report.html.j2": "{% for x in %}"}), autoescape=True)
    monkeypatch.setattr(html_report, "_environment", lambda: broken)
    with pytest.raises(ReportError) as caught:
        render_html([record(result("a"))])
    assert str(caught.value).startswith("cannot render the HTML report: TemplateSyntaxError")
    assert "\n" not in str(caught.value)


def test_a_heavy_tailed_distribution_gets_a_log_time_axis_and_no_negative_times():
    from perfguard.report.charts import histogram

    typical = [0.12 + 0.001 * i for i in range(90)]
    tail = histogram(typical + [8.0] * 10, 0.15, (0.14, 0.16), None)
    assert tail.log and tail.lo.endswith("µs") and tail.hi.endswith("ms")
    narrow = histogram([1.0 + 0.01 * i for i in range(50)], 1.25, (1.2, 1.3), 1.1)
    assert not narrow.log and narrow.lo == "980 µs" and narrow.baseline_x < narrow.median_x
    assert histogram([1.0], 1.0, (1.0, 1.0), None) is None


# --- perfguard report ----------------------------------------------------------------------------


def test_perfguard_report_writes_html_and_markdown_from_several_records(tmp_path, capsys):
    a = tmp_path / "h200.json"
    b = tmp_path / "a100.json"
    a.write_text(dumps(record(result("x"), verdicts=(verdict("x", "regressed", 12.0),))))
    b.write_text(dumps(record(result("x", A100), devices=(A100,))))
    out, md = tmp_path / "out" / "report.html", tmp_path / "summary.md"
    assert main(["report", str(a), str(b), "-o", str(out), "--markdown", str(md)]) == 0
    assert f"wrote {out} and {md} from 2 record(s), 2 case result(s)" in capsys.readouterr().out
    assert rows(out.read_text()) == ["x"] and "NVIDIA A100-SXM4-80GB" in out.read_text()
    assert md.read_text().startswith("## perfguard: 1 regressed, 1 not compared")


def test_perfguard_report_fits_the_scalings_once_for_both_reports(tmp_path, monkeypatch):
    from perfguard.analysis import scaling

    sweep = [result(f"mm[n={n}]", median_ms=0.1 * n, params={"n": n}) for n in (1, 2, 4, 8)]
    path, out, md = tmp_path / "run.json", tmp_path / "r.html", tmp_path / "r.md"
    path.write_text(dumps(record(*sweep)))
    made = []
    monkeypatch.setattr(scaling, "scalings", lambda *a, real=scaling.scalings: made.append(1) or real(*a))
    assert main(["report", str(path), "-o", str(out), "--markdown", str(md)]) == 0
    assert len(made) == 1  # a fifth of a large report's render when made for each
    assert "### Scaling (1)" in md.read_text() and "mm over n" in md.read_text() and "mm over n" in out.read_text()


def test_perfguard_report_whose_fits_fail_says_so_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from perfguard.analysis import scaling

    path, out = tmp_path / "run.json", tmp_path / "r.html"
    path.write_text(dumps(record(*(result(f"mm[n={n}]", params={"n": n}) for n in (1, 2, 4)))))
    monkeypatch.setattr(scaling, "scalings", lambda *a: 1 / 0)
    assert main(["report", str(path), "-o", str(out)]) != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "cannot render the HTML report: ZeroDivisionError" in line and not out.exists()


def test_perfguard_report_of_a_bad_record_is_one_line_and_writes_nothing(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(dumps(record(result("x"))))
    bad.write_text(json.dumps({"schema_version": 1, "results": []}))
    out = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-m", "perfguard.cli", "report", str(good), str(bad), "-o", str(out)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith(f"perfguard: {bad}: ") and done.stderr.count("\n") == 1
    assert not out.exists()


# --- what the gate rests on, and clocks that were not locked ----------------------------------------------


def test_every_report_shows_each_cases_detectable_change_and_the_html_what_it_rests_on():
    regressed = verdict("add[n=1024]", "regressed", 12.0)
    confirmed = dataclasses.replace(regressed, time=dataclasses.replace(regressed.time, remeasured_ms=(0.561, 0.559),
                                                                        confirmed=True))
    run = record(result("add[n=1024]"), result("fresh"), verdicts=(confirmed, verdict("fresh", "new")))
    page = render_html([run])
    assert ">detects<" in page and "5.4% · 3 runs" in text(page)
    assert sections(panels(page, "add[n=1024]")[0])["gate"] == {
        "baseline runs": "3", "run-to-run spread": "±0.20% (1 s.d.)", "tolerance": "±5.0% (threshold 5%)",
        "detects": "5.4% slowdowns, 19 times in 20", "measurements": "560 µs, 561 µs, 559 µs (confirmed)"}
    markdown = render_markdown([run])
    assert "| detects |" in markdown and "5.4% · 3 runs" in markdown
    from perfguard.report.terminal import table

    lines = table(run.results, run.devices, run.verdicts)
    assert "detects" in lines[1] and "5.4%" in next(line for line in lines if line.startswith("add[n=1024]"))


def test_clocks_that_moved_over_a_run_are_said_once_with_the_command_that_locks_them():
    from perfguard.model import Telemetry
    from perfguard.report.advice import clock_line
    from perfguard.report.terminal import record_lines

    steady = [result(f"a{i}", telemetry=Telemetry(sm_clock_mhz_mean=1980.0)) for i in range(3)]
    assert clock_line(steady) is None
    moved = steady + [result("heavy", telemetry=Telemetry(sm_clock_mhz_mean=1755.0, power_capped=True))]
    line = clock_line(moved)
    assert "1755-1980 MHz" in line and "1 case(s) held down by the power cap" in line
    assert "sudo nvidia-smi --lock-gpu-clocks=1755,1755" in line
    run = record(*moved)
    assert sum("clocks are not locked" in x for x in record_lines(run)) == 1
    assert render_html([run]).count("clocks are not locked") == 1
    assert render_markdown([run]).count("clocks are not locked") == 1


def test_a_cpu_run_says_its_figures_are_rough_in_every_report_and_marks_the_unsettled_ones():
    from perfguard.analysis.scaling import scalings
    from perfguard.report.advice import scaling_line
    from perfguard.report.terminal import record_lines

    def on_cpu(case_id: str, n: int, stop: str) -> CaseResult:
        r = result(f"{case_id}[n={n}]", CPU, median_ms=0.1 * n, flops=None, params={"n": n})
        xs = tuple(x * (1 + 3 * (i % 2)) for i, x in enumerate(r.samples_ms))  # a host clock's spread
        return dataclasses.replace(r, timer="host-clock", timings={"gpu_time": timing(xs, stop)})

    cases = [on_cpu("mm", n, "budget") for n in (1, 2, 4)] + [on_cpu("calm", 1, "converged")]
    run = dataclasses.replace(record(*cases, devices=(CPU,)), options={"cpu_threads": 1, "cpu_workers": 2})
    lines = record_lines(run)
    (said,) = [line for line in lines if line.startswith("CPU figures (host clock) are rough")]
    widest = max(r.judged_time.ci_half_width_pct for r in cases)
    assert f"3 of 4 case(s) ran out of budget before their interval settled (marked ~), intervals up to ±{widest:.0f}%" in said
    assert "torch measured with 1 thread(s)" in said and "2 xdist workers measured on this CPU at once" in said
    medians = {line.split()[0]: line.split()[2] for line in lines if line.startswith(("mm[", "calm["))}
    assert {case: m.startswith("~") for case, m in medians.items()} == {"mm[n=1]": True, "mm[n=2]": True, "mm[n=4]": True,
                                                                        "calm[n=1]": False}
    (fit,) = scalings(cases, (CPU,))
    assert "time ~" in scaling_line(fit)  # a fit of rough medians is marked too
    markdown = render_markdown([run])
    assert markdown.count("CPU figures (host clock) are rough") == 1 and markdown.count("| ~") == 3
    page = render_html([run])
    assert page.count("<b>CPU</b>: CPU figures (host clock) are rough") == 1
    medians = {row[1] + row[2]: row[5][1] for row in packed(page)[0]}  # [text, sort, class, note, title]
    assert sorted(case for case, m in medians.items() if m[0].startswith("~") and m[4] == html_report.ROUGH_TITLE) == [
        "mm[n=1]", "mm[n=2]", "mm[n=4]"]


def test_a_gpu_run_carries_no_cpu_warning_nor_marks():
    from perfguard.report.advice import cpu_line
    from perfguard.report.terminal import record_lines

    slow = dataclasses.replace(result("slow"), timings={"gpu_time": timing([0.5, 0.9] * 10, "budget")})  # the mark is the host clock's
    run = record(slow)
    assert cpu_line(run.results) is None
    assert not [line for line in record_lines(run) if "CPU figures" in line or "~" in line]
    assert "CPU figures" not in render_markdown([run]) and "CPU figures" not in render_html([run])


def test_a_report_of_several_records_says_each_gate_line_and_the_cpu_note_once(tmp_path):
    gate = ["gate: threshold 1%, 2 re-measurements must agree", "2 case(s) new to the baseline"]
    paths = []
    for i, case_id in enumerate(("add[n=1]", "mul[n=1]")):  # two jobs of one suite, as a CI matrix uploads them
        on_cpu = dataclasses.replace(result(case_id, CPU, flops=None), timer="host-clock")
        run = dataclasses.replace(record(on_cpu, devices=(CPU,), created_at=f"2026-11-29T12:0{i}:00+00:00"),
                                  options={"gate": gate, "cpu_threads": 2, "cpu_workers": 1 + i})
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(dumps(run))
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", *map(str, paths), "-o", str(page), "--markdown", str(md)]) == 0
    markdown, html = md.read_text(), page.read_text()
    for line in gate:
        assert markdown.count(line) == 1, line
    for text in (markdown, html):
        assert text.count("CPU figures (host clock) are rough") == 1
        assert "0 of 2 case(s)" in text and "torch measured with 2 thread(s)" in text
        assert "xdist workers" not in text  # the records disagree on it: neither record's count stands for both


def _regressed_twice(case_id: str) -> tuple[Verdict, Verdict]:
    """A case whose latency and ATen operators both regressed, the operators' line long, as a model's is."""
    counted = Verdict(case_id, "aten_ops", "regressed", 40.0, 52.0, 30.0, 0.0, "baselines/nvidia-h200.json", (),
                      reason="grew", next_steps=(NextStep("allow_counter"), NextStep("accept")),
                      counters=CounterEvidence(counts=tuple(CountChange(f"aten::op{i}", 1.0) for i in range(12)),
                                               allowance="0", allowed_more=0.0))
    noise = Noise(runs=10, spread_pct=0.41, tolerance_pct=2.0, detectable_pct=5.4, judged_by="fleet", sources=3)
    slower = dataclasses.replace(verdict(case_id, "regressed", 20.0), reason="outside", time=TimeEvidence(noise=noise))
    return counted, slower


def test_the_markdown_gives_every_verdicts_words_in_full_each_on_its_own_line():
    counted, slower = _regressed_twice("gpt2_forward[batch=1]")
    markdown = render_markdown([record(result("gpt2_forward[batch=1]"), verdicts=(counted, slower))])
    for v in (counted, slower):
        assert words.line(v).replace("_", "\\_") in markdown, v.metric
    (item,) = [line for line in markdown.splitlines() if "gpt2" in line and "regressed:" in line]
    assert "  - gpu\\_time regressed: 500.0 µs → 600.0 µs (+20.0%)" in markdown  # folded below the item, not cut


def test_the_htmls_needs_attention_names_the_metric_and_status_of_each_verdict():
    counted, slower = _regressed_twice("gpt2_forward[batch=1]")
    page = render_html([record(result("gpt2_forward[batch=1]"), verdicts=(counted, slower))])
    attention = page.split("<h2>Needs attention</h2>", 1)[1].split("</section>", 1)[0]
    assert "gpu_time regressed: 500.0 µs → 600.0 µs (+20.0%)" in attention
    assert "aten_ops regressed: ATen operators per call 40 → 52" in attention


def test_what_many_cases_did_alike_is_one_line_that_names_five_of_them():
    """A suite's shared fixture that leaves a setting changed made a line per case: 5,280 of them were
    2 MB of Markdown, forced past its limit."""
    from perfguard.report.advice import case_lines

    cases = [dataclasses.replace(result(f"add[n={i}]", samples=5), restored_state=("default dtype",)) for i in range(5280)]
    (line,) = case_lines(cases)  # ids in sorted order
    assert line.startswith("add[n=0], add[n=1000], add[n=1001], add[n=1002], add[n=1003] and 5275 more changed torch's default dtype")
    assert line.endswith("perfguard restored it after each case")
    markdown = render_markdown([record(*cases)])
    assert len(markdown.encode("utf-8")) < LIMIT_BYTES and markdown.count("changed torch's") == 1


# --- what a time is called (issue 47, item 3) ------------------------------------------------------

# How each device times a case, and what every surface calls that time: a CPU's is the host clock's time of
# a call ("host_time"), though its record keeps it under "gpu_time", as a GPU's is kept.
TIMED = [(CPU, "host-clock", "host-clock", "host_time", "host time"), (H200, "device", "cuda-events", "gpu_time", "GPU time")]


@pytest.mark.parametrize(("device", "regime", "timer", "name", "label"), TIMED, ids=["on-a-cpu", "on-an-h200"])
def test_every_surface_names_a_time_by_what_measured_it(device, regime, timer, name, label, tmp_path, capsys):
    from perfguard.analysis.verdict import compare_records
    from perfguard.model import MovedRow, Where
    from perfguard.report.terminal import summary

    def run(medians: dict[str, float]) -> RunRecord:
        results = [dataclasses.replace(result(case_id, device, median_ms=ms, flops=None), regime=regime, timer=timer)
                   for case_id, ms in medians.items()]
        return record(*results, devices=(device,))

    base, head = run({"slowed": 0.5, "gone": 0.5}), run({"slowed": 5.0, "fresh": 0.5})
    where = Where("operator", (MovedRow("aten::add", 0.5, 5.0, beyond_noise=True),), moved=4.5, noise_pct=5.0)
    verdicts = tuple(dataclasses.replace(v, where=where) if v.case_id == "slowed" else v for v in compare_records(base, head))
    head = dataclasses.replace(head, verdicts=verdicts)
    times = {v.case_id: (v.metric, v.status) for v in verdicts if v.metric != "peak_memory"}
    assert times == {"slowed": ("gpu_time", "regressed"), "gone": ("gpu_time", "missing"), "fresh": ("gpu_time", "new")}  # the key stays
    (base_file := tmp_path / "base.json").write_text(dumps(base))
    (head_file := tmp_path / "head.json").write_text(dumps(head))
    page = render_html([head])
    said = {}
    said["terminal"] = "\n".join(line for line, _ in summary(head.results, head.devices, head, failed_above=True))
    assert f"slowed: regressed: {name} +900.0%" in said["terminal"] and f"gone: {name} missing: " in said["terminal"]
    said["markdown"] = render_markdown([head])
    assert f"`slowed`: {name.replace('_', chr(92) + '_')} regressed: " in said["markdown"]
    said["html"] = text(page)
    assert f"{name} regressed: " in said["html"] and f"{name} missing: " in said["html"]
    (panel,) = panels(page, "slowed")
    assert [badge for _, badge, _ in panel["verdicts"]] == [name.replace("_", " "), "peak memory"]
    assert name in sections(panel) and panel["moved"][0]["title"].startswith(f"where the {label} moved")
    assert main(["show", str(head_file)]) == 0
    said["show"] = capsys.readouterr().out
    assert f"slowed: {name} regressed: " in said["show"]
    assert main(["compare", str(base_file), str(head_file), "--baselines", str(tmp_path)]) == 1
    said["compare"] = capsys.readouterr().out
    assert f"slowed: {name} regressed: " in said["compare"] and f"gone: {name} missing: " in said["compare"]
    other = r"host[ _]time" if device.kind == "cuda" else r"gpu[ _]time"
    assert {surface: re.findall(other, words, re.I) for surface, words in said.items()} == dict.fromkeys(said, [])
