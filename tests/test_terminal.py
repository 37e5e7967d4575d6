"""The end-of-run table: regressions first, every verdict counted, environment changes shown."""

from __future__ import annotations

import dataclasses

from perfguard.analysis.stats import timing
from perfguard.model import CaseResult, Noise, RunRecord, TimeEvidence, Verdict
from perfguard.report.markdown import render_markdown
from perfguard.report import words
from perfguard.report.terminal import summary


# The rule that gives each status (analysis/decide.py).
REASONS = {"regressed": "outside", "improved": "outside", "same": "within", "inconclusive": "blind", "unstable": "imprecise", "new": "not_in_baseline", "missing": "did_not_run", "accepted": "accepted"}


def result(case_id: str, ms: float) -> CaseResult:
    return CaseResult(id=case_id, name=case_id, status="ok", timings={"gpu_time": timing([ms] * 10)})


def verdict(case_id: str, status: str, env: tuple[str, ...] = ()) -> Verdict:
    return Verdict(case_id=case_id, metric="gpu_time", status=status, baseline=1.0, current=1.0, change_pct=0.0,
                   threshold_pct=5.0, baseline_file="b.json", env_mismatch=env, reason=REASONS[status])


def test_regressions_come_first_and_each_verdict_is_counted():
    results = [result("a_same", 1.0), result("b_improved", 1.0), result("z_regressed", 2.0)]
    verdicts = (verdict("a_same", "same"), verdict("b_improved", "improved"), verdict("z_regressed", "regressed"))
    lines = [line for line, _ in summary(results, (), RunRecord("now", "0", verdicts=verdicts))]
    rows = [line.split()[0] for line in lines[1:4]]
    assert rows == ["z_regressed", "b_improved", "a_same"]
    assert ("3 verdicts (one per metric) for 3 cases: "
            "1 regressed, 0 unstable, 0 inconclusive, 1 improved, 0 missing, 0 new, 1 same") in lines
    assert f"z_regressed: {words.line(verdicts[2])}" in lines
    assert not any(line.startswith("a_same: ") for line in lines)


def test_where_each_regression_failed_its_case_above_a_case_is_one_line_of_what_moved():
    slower = dataclasses.replace(verdict("z", "regressed"), baseline=0.190, current=0.317, change_pct=66.7)
    copies = dataclasses.replace(verdict("z", "regressed"), metric="copy_bytes", baseline=0.0, current=2.0**28,
                                 change_pct=None)
    kernels = dataclasses.replace(verdict("z", "regressed"), metric="kernels", baseline=261.0, current=273.0,
                                  change_pct=None)
    record = RunRecord("now", "0", verdicts=(slower, copies, kernels, verdict("b", "improved")))
    lines = [line for line, _ in summary([result("z", 2.0), result("b", 1.0)], (), record, failed_above=True)]
    assert ("z: regressed: gpu_time +66.7%, copy_bytes 0 B → 256.0 MiB, kernels 261 → 273 "
            "(each line in its failure above)") in lines
    assert not any("190.0 µs → 317.0 µs" in line for line in lines)
    assert f"b: {words.line(verdict('b', 'improved'))}" in lines  # an improvement fails nothing: its line is here alone
    plain = [line for line, _ in summary([result("z", 2.0)], (), record)]  # perfguard show, an update
    assert f"z: {words.line(slower)}" in plain and "190.0 µs → 317.0 µs" in words.line(slower)


def test_an_environment_change_is_shown_even_when_nothing_moved():
    env = ("torch 2.11.0 → 2.13.0",)
    verdicts = (verdict("a", "same", env), verdict("b", "same", env), verdict("c", "same"))
    lines = [line for line, _ in summary([result(c, 1.0) for c in "abc"], (), RunRecord("now", "0", verdicts=verdicts))]
    assert "environment differs from the baseline for 2 more case(s): torch 2.11.0 → 2.13.0" in lines


def test_launch_bound_cases_are_named_with_their_overhead_and_the_remedy():

    from perfguard.model import Metrics

    tiny = dataclasses.replace(result("tiny_add", 0.005), metrics=Metrics(bound="launch", launch_overhead_share=0.72))
    big = dataclasses.replace(result("big_copy", 0.5), metrics=Metrics(bound="memory", launch_overhead_share=0.01))
    lines = [line for line, _ in summary([tiny, big], (), None)]
    advice = [line for line in lines if line.startswith("launch-bound")]
    assert advice == ['launch-bound: tiny_add (GPU idle 72% of a call): capture the calls in a CUDA graph (mode="graph") or fuse the kernels']
    assert "launch" in next(line for line in lines if line.startswith("tiny_add"))
    markdown = render_markdown([RunRecord("2026-11-29T00:00:00+00:00", "0", results=(tiny, big))])
    assert "launch-bound: tiny\\_add (GPU idle 72% of a call)" in markdown and "big\\_copy (" not in markdown
    assert not [line for line, _ in summary([big], (), None) if line.startswith("launch-bound")]


def test_cases_not_timed_as_plain_kernels_are_named_with_their_regime():
    tiny = dataclasses.replace(result("tiny_add", 0.005), regime="device")
    model = dataclasses.replace(result("gpt2_forward[batch=1]", 1.6), regime="enqueue-bound")
    synced = dataclasses.replace(result("synced", 0.1), regime="caller")
    lines = [line for line, _ in summary([tiny, model, synced], (), None)]
    (timing,) = [line for line in lines if line.startswith("timing:")]
    assert "1 enqueue-bound" in timing and "gpt2_forward[batch=1]" in timing
    assert "1 timed as their caller sees them" in timing and "synced" in timing and "tiny_add" not in timing
    markdown = render_markdown([RunRecord("2026-11-29T00:00:00+00:00", "0", results=(tiny, model, synced))])
    assert "timing: 1 enqueue-bound" in markdown


def test_the_table_shows_each_judged_figures_change_beside_what_the_gate_detects():
    # A case read `same` at +17.9% (GPU) and +22.8% (caller), which only the JSON showed.
    same = dataclasses.replace(verdict("wide", "same"), change_pct=17.93,
                               time=TimeEvidence(noise=Noise(runs=5, spread_pct=10.0, tolerance_pct=30.0, detectable_pct=41.0)))
    caller = dataclasses.replace(verdict("wide", "same"), metric="caller_time", change_pct=22.81)
    lines = [line for line, _ in summary([result("wide", 1.0)], (), RunRecord("now", "0", verdicts=(same, caller)))]
    header, row = lines[0].split(), lines[1].split()
    assert header[:7] == ["case", "verdict", "median", "±CI", "change", "detects", "caller"]
    assert row[0:2] == ["wide", "same"] and row[5:7] == ["+17.9%", "41.0%"]
    assert "+22.8%" in row


def test_a_row_a_count_failed_says_which_metric_beside_the_times_change():
    # Its time inconclusive at +7.8%, its ATen operators regressed: the row does not read as a time regression.
    time = dataclasses.replace(verdict("c", "inconclusive"), change_pct=7.8)
    ops = dataclasses.replace(verdict("c", "regressed"), metric="aten_ops", baseline=1.0, current=4.0, change_pct=300.0)
    lines = [line for line, _ in summary([result("c", 1.0)], (), RunRecord("now", "0", verdicts=(time, ops)))]
    assert lines[1].split()[:2] == ["c", "regressed:"] and lines[1].split()[2] == "aten_ops" and "+7.8%" in lines[1]
    slower = dataclasses.replace(verdict("d", "regressed"), change_pct=7.8)  # the time itself: nothing added
    lines = [line for line, _ in summary([result("d", 1.0)], (), RunRecord("now", "0", verdicts=(slower, ops)))]
    assert lines[1].split()[:2] == ["d", "regressed"] and "aten_ops" not in lines[1]


def test_new_cases_get_the_hint_to_record_them_once_per_run():
    verdicts = tuple(dataclasses.replace(verdict(c, "new"), change_pct=None) for c in "abc")
    lines = [line for line, _ in summary([result(c, 1.0) for c in "abc"], (), RunRecord("now", "0", verdicts=verdicts))]
    hints = [line for line in lines if "--perfguard-update" in line]
    assert hints == ["3 new case(s), not in the baseline yet: record them with `pytest --perfguard --perfguard-update` "
                     "(several runs make their tolerances tight)"]


def test_the_verdict_count_says_there_is_one_verdict_per_metric_not_per_case():
    per_metric = [dataclasses.replace(verdict(c, "same"), metric=m) for c in "ab" for m in ("gpu_time", "kernels", "peak_memory")]
    lines = [line for line, _ in summary([result("a", 1.0), result("b", 1.0)], (), RunRecord("now", "0", verdicts=tuple(per_metric)))]
    assert "6 verdicts (one per metric) for 2 cases: 0 regressed, 0 unstable, 0 inconclusive, 0 improved, 0 missing, 0 new, 6 same" in lines


def test_a_card_the_baseline_has_not_seen_gets_one_line_for_its_times_on_every_surface():
    # Issue 31: 40 cases on a card none of the baseline's runs came from; their times inconclusive,
    # judged by the fleet's runs; their counters and memory judged exactly. One line says so, with what
    # would decide the times, in the terminal, the Markdown and the HTML alike, not a line per case.
    from perfguard.report.html import render_html

    cases = [f"op[n={i}]" for i in range(40)]
    verdicts = tuple(v for c in cases for v in (
        dataclasses.replace(verdict(c, "inconclusive"), reason="blind", time=TimeEvidence(noise=Noise(
            runs=12, spread_pct=1.0, tolerance_pct=5.0, detectable_pct=6.0, judged_by="fleet", sources=4, own_runs=0))),
        Verdict(c, "peak_memory", "same", 1024.0, 1024.0, 0.0, 5.0, "b.json", reason="within")))
    record = RunRecord("2026-12-02T00:00:00+00:00", "0", results=tuple(result(c, 1.0) for c in cases), verdicts=verdicts)
    lines = [line for line, _ in summary(record.results, (), record)]
    said = [line for line in lines if "not in the baseline" in line]
    assert said == ["this card is not in the baseline for 40 cases: their counters and memory are judged exactly against "
                    "the fleet's (40 verdicts, 0 regressed), their times against the fleet's runs and the spread between "
                    "cards: 40 time verdict(s) inconclusive (median detectable change 6.0%); to decide them, record 3 runs "
                    "of this card into the baseline (`pytest --perfguard --perfguard-update`, three times) or judge a pull "
                    "request with `perfguard ab`"]
    assert not [line for line in lines if line.startswith("op[n=") and "inconclusive:" in line]
    assert "this card is not in the baseline for 40 cases" in render_markdown([record])
    assert "this card is not in the baseline for 40 cases" in render_html([record])


def test_a_verdicts_where_line_is_indented_under_it_and_wraps_under_itself():
    # Its indent was escaped as a field's edge spaces, `\x20\x20where: …`, in `perfguard show` and pytest's summary.
    from perfguard.model.verdicts import MovedRow, Where

    moved = dataclasses.replace(verdict("b", "regressed"), current=2.0, change_pct=100.0, reason="outside",
                                where=Where("kernel", (MovedRow("gemm", 1.0, 2.0, 1.0, 1.0, True),), 1.0, 4.0))
    wide = [line for line, _ in summary([result("b", 2.0)], (), RunRecord("now", "0", verdicts=(moved,)), width=1000)]
    assert "  where: gemm 1.000 ms → 2.000 ms (+100%, 100% of the change)" in wide
    narrow = [line for line, _ in summary([result("b", 2.0)], (), RunRecord("now", "0", verdicts=(moved,)), width=40)]
    at = narrow.index("  where: gemm 1.000 ms → 2.000 ms")
    assert narrow[at + 1] == "    (+100%, 100% of the change)"
