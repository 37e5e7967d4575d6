"""Memory across calls, judged: the footprint (from before setup) and the bytes a call retains for the next.

Constructed results, nothing measured: the figures are the allocator's counts, deterministic, so
each verdict follows from the two figures and the threshold alone.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from report_page import panels, sections

from perfguard.analysis.stats import timing
from perfguard.analysis.verdict import compare_case
from perfguard.errors import BaselineError
from perfguard.model import BaselineEntry, BaselineFile, CaseResult, DeviceInfo, Memory, dumps, loads_baseline, run_summary
from perfguard.report import words

MIB = 2**20
GB = 10**9
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200")


def result(memory: Memory | None) -> CaseResult:
    samples = tuple(1.0 + 0.001 * i for i in range(20))
    return CaseResult(id="train_step", name="train_step", status="ok", device="nvidia-h200", timer="cuda-events",
                      timings={"gpu_time": timing(samples)}, memory=memory)


def memory(footprint: int | None = 4_110 * 10**6, retained: int | None = 0, held: int = 3_000 * 10**6) -> Memory:
    return Memory(peak_allocated_bytes=1_100 * 10**6, setup_allocated_bytes=held, footprint_bytes=footprint,
                  retained_bytes_per_call=retained)


def judged(current: Memory, baseline: Memory, metric: str):
    (v,) = [v for v in compare_case(result(current), result(baseline), baseline_file="baselines/nvidia-h200.json")
            if v.metric == metric]
    return v


def test_a_call_that_keeps_a_mib_for_good_is_a_leak_and_fails():
    v = judged(memory(retained=MIB), memory(retained=0), "retained_memory")
    assert v.status == "regressed"
    assert words.line(v).startswith("retained_memory regressed: 0 B → 1.0 MiB retained per call (the call keeps what it "
                                "allocates: a leak, which grows a long run by 1.0 MiB every call until it runs out of "
                                "memory) against baselines/nvidia-h200.json (any growth past 256 B a call fails); ")
    assert "threshold" not in words.line(v)  # the memory threshold's percentage does not apply


def test_any_block_retained_per_call_is_a_leak_but_nothing_is_not():
    assert judged(memory(retained=512), memory(retained=0), "retained_memory").status == "regressed"
    assert judged(memory(retained=0), memory(retained=0), "retained_memory").status == "same"
    grown = judged(memory(retained=2 * MIB), memory(retained=MIB), "retained_memory")
    assert grown.status == "regressed" and "keeps more of what it allocates" in words.line(grown)
    fixed = judged(memory(retained=0), memory(retained=MIB), "retained_memory")
    assert fixed.status == "improved" and "--perfguard-update" in words.line(fixed)


def test_gradients_kept_between_steps_grow_the_footprint_and_fail():
    # The nanoGPT step with zero_grad(set_to_none=False): 475 MiB of gradients stay allocated
    # between steps; the call's own peak over what was live before it does not move.
    grads = 475 * MIB
    now = memory(footprint=4_110 * 10**6 + grads, held=3_000 * 10**6 + grads)
    v = judged(now, memory(), "footprint")
    assert v.status == "regressed"
    assert v.change_pct == pytest.approx(100 * grads / (4_110 * 10**6))
    assert words.line(v).startswith("footprint regressed: 3.8 GiB → 4.3 GiB (+12.1%, deterministic) against "
                                "baselines/nvidia-h200.json (threshold 5%); held between calls 2.8 GiB → 3.3 GiB: ")
    assert "gradients kept between steps" in words.line(v)
    assert judged(now, memory(), "peak_memory").status == "same"


def test_the_footprint_is_held_to_the_memory_threshold_and_the_floor():
    assert judged(memory(footprint=int(4.11 * GB * 1.04)), memory(), "footprint").status == "same"
    assert judged(memory(footprint=int(4.11 * GB * 0.9)), memory(), "footprint").status == "improved"
    tiny = judged(memory(footprint=40 * 1024), memory(footprint=20 * 1024), "footprint")
    assert tiny.status == "same"  # +100%, but 20 KiB: allocator rounding, not a change
    strict = dataclasses.replace(result(memory(footprint=int(4.11 * GB * 1.04))), memory_threshold=2.0)
    (v,) = [v for v in compare_case(strict, result(memory())) if v.metric == "footprint"]
    assert v.status == "regressed"  # the case's own memory threshold


def test_a_baseline_that_leaks_already_does_not_fail_on_a_footprint_the_number_of_calls_decides():
    # Both leak 1 MiB a call: the footprint is larger the more calls ran before the memory pass.
    v = judged(memory(footprint=5 * GB, retained=MIB), memory(footprint=4 * GB, retained=MIB), "footprint")
    assert v.status == "unstable" and "grows with the calls made" in words.line(v)
    assert judged(memory(footprint=5 * GB, retained=MIB), memory(footprint=4 * GB, retained=MIB),
                  "retained_memory").status == "same"
    # A leak new in this run fails on both.
    assert judged(memory(footprint=5 * GB, retained=MIB), memory(footprint=4 * GB), "footprint").status == "regressed"


def test_a_baseline_from_before_the_figures_gives_new_not_a_failure():
    old = Memory(peak_allocated_bytes=1_100 * 10**6, setup_allocated_bytes=3 * GB)  # as older perfguard wrote it
    verdicts = {v.metric: v for v in compare_case(result(memory(retained=MIB)), result(old))}
    assert verdicts["footprint"].status == "new" and verdicts["retained_memory"].status == "new"
    assert "not in the baseline yet" in words.line(verdicts["retained_memory"])
    assert verdicts["peak_memory"].status == "same"
    assert not any(v.status == "regressed" for v in verdicts.values())
    # A run without the figures (a CPU) gets no memory verdicts at all.
    assert [v.metric for v in compare_case(result(None), result(memory()))] == ["gpu_time"]


def baseline_text(mem: Memory) -> str:
    r = result(mem)
    entry = BaselineEntry(recorded_at="2026-12-01", commit=None, fingerprint={}, result=r, runs=(run_summary(r, "2026-12-01"),))
    return dumps(BaselineFile(device=H200, cases={r.id: entry}))


def test_an_older_baseline_without_the_fields_loads_and_new_ones_round_trip():
    data = json.loads(baseline_text(memory()))
    for key in ("footprint_bytes", "retained_bytes_per_call"):
        del data["cases"]["train_step"]["result"]["memory"][key]
    loaded = loads_baseline(json.dumps(data), "old.json").cases["train_step"].result.memory
    assert loaded.footprint_bytes is None and loaded.retained_bytes_per_call is None
    again = loads_baseline(baseline_text(memory(retained=MIB)), "new.json").cases["train_step"].result.memory
    assert again == memory(retained=MIB)


@pytest.mark.parametrize("field", ["footprint_bytes", "retained_bytes_per_call"])
def test_a_baseline_whose_memory_figure_is_negative_is_refused(field):
    # A negative retained memory would make any real leak read "improved": a weakened gate.
    data = json.loads(baseline_text(memory()))
    data["cases"]["train_step"]["result"]["memory"][field] = -MIB
    with pytest.raises(BaselineError, match=f"result.memory.{field}: Expected `int` >= 0"):
        loads_baseline(json.dumps(data), "hand-edited.json")


def test_a_one_off_allocation_among_the_watched_calls_is_not_a_leak():
    # The measurement's arithmetic (measure/memory.py): the median step between the watched calls.
    from perfguard.measure.memory import _Call, _retained

    def never_called():
        raise AssertionError("no growth to confirm: the confirming calls must not run")

    lazy = [_Call(live=0, peak=0, after=a) for a in (100, 100, 100 + 8 * MIB, 100 + 8 * MIB, 100 + 8 * MIB, 100 + 8 * MIB)]
    assert _retained(never_called, lazy) == 0


def test_the_reports_show_the_footprint_and_what_a_call_retains():
    from perfguard.model import RunRecord
    from perfguard.report.html import render_html
    from perfguard.report.markdown import render_markdown
    from perfguard.report.terminal import summary

    leaky = result(memory(footprint=200 * MIB, retained=MIB))
    record = RunRecord("2026-12-01T00:00:00+00:00", "0", devices=(H200,), results=(leaky,),
                       verdicts=tuple(compare_case(leaky, result(memory(footprint=150 * MIB)))))
    lines = [line for line, _ in summary(record.results, record.devices, record, width=250)]  # wide: every column
    assert lines[1].split()[-1] == "footprint" and lines[2].endswith("200.0 MiB +1.0 MiB/call")
    assert any(line.startswith("train_step: retained_memory regressed: 0 B → 1.0 MiB") for line in lines)
    assert "| 200.0 MiB +1.0 MiB/call |" in render_markdown([record])
    held = sections(panels(render_html([record]), leaky.id)[0])["memory"]
    assert held["retained per call"] == "1.0 MiB (a leak)" and "held between calls" in held


def test_a_case_whose_baseline_predates_the_figures_reads_judged_not_new_in_the_reports():
    from perfguard.model import RunRecord
    from perfguard.report.html import render_html
    from perfguard.analysis.decide import case_statuses
    from perfguard.report.terminal import summary

    old = Memory(peak_allocated_bytes=1_100 * 10**6, setup_allocated_bytes=3 * GB)  # as older perfguard wrote it
    now = result(memory())
    verdicts = tuple(compare_case(now, result(old)))
    assert {v.metric: v.status for v in verdicts}["footprint"] == "new"
    assert case_statuses(verdicts) == {"train_step": "inconclusive"}  # its one-run baseline cannot see 1%
    record = RunRecord("2026-12-01T00:00:00+00:00", "0", devices=(H200,), results=(now,), verdicts=verdicts)
    lines = [line for line, _ in summary(record.results, record.devices, record)]
    assert not any("new case(s)" in line for line in lines)
    assert "1 case(s) with figures their baseline does not hold yet (footprint, retained_memory): judged once " \
           "`--perfguard-update` records them" in lines
    assert "1 inconclusive" in render_html([record])
