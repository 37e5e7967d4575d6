"""Where a time moved (issue 45): the counting pass's split of a call's time by kernel and by ATen
operator (measure/counters.py), and the rows a moved verdict names (analysis/moved.py), on constructed
traces, splits and verdicts; the CPU profiler's own trace; a gate run end to end."""

from __future__ import annotations

import dataclasses
import random
import textwrap
from collections import Counter

import pytest

from perfguard.analysis import moved
from perfguard.analysis.judgement import judge
from perfguard.measure import counters
from perfguard.model import loads_record
from perfguard.model import (MAX_SPLIT_ROWS, Acceptances, ByteSplit, CaseResult, Counters, NextStep, Noise, TimeEvidence,
                             TimeSplit, Verdict)
from perfguard.report import words

KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::MulFunctor<float>, at::detail::Array<char*, 3>)"


# --- the split --------------------------------------------------------------------------------------


def test_a_split_names_each_rows_median_call_most_first_and_sums_the_last_percent_as_other():
    calls = [Counter({"big": 10.0, "small": 0.05, "tiny": 0.02}), Counter({"big": 12.0, "small": 0.06, "tiny": 0.02}),
             Counter({"big": 11.0, "small": 0.04, "once": 5.0})]
    named, other = counters.split(calls, counters._digits)
    # "once" ran in one call of three: its median is 0, so it is not a row of a call's time.
    assert list(named) == ["big"] and named["big"] == 11.0
    assert other == pytest.approx(0.05 + 0.02)  # under 1% of the time: summed


def test_a_split_names_at_most_forty_rows():
    calls = [Counter({f"k{i:03d}": 1.0 for i in range(100)})] * 3
    named, other = counters.split(calls, round)
    assert len(named) == MAX_SPLIT_ROWS and other == 60 and sum(named.values()) + other == 100


def test_an_operators_self_time_leaves_out_the_operators_inside_it():
    def op(name, ts, dur, tid=1):
        return {"name": name, "ts": ts, "dur": dur, "tid": tid, "ph": "X", "cat": "cpu_op"}

    ops = [op("aten::linear", 0, 100), op("aten::t", 10, 20), op("aten::addmm", 40, 30), op("aten::copy_", 45, 5),
           op("aten::add", 0, 7, tid=2)]
    selves = {o["name"]: t for o, t in counters._self_times(ops)}
    assert selves == {"aten::linear": 50, "aten::t": 20, "aten::addmm": 25, "aten::copy_": 5, "aten::add": 7}


def _call(ts: float) -> dict:
    return {"name": counters.CALL_RANGE, "cat": "user_annotation", "ph": "X", "ts": ts, "dur": 50}


def _device(cat: str, name: str, ts: float, dur: float) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur}


def test_a_gpu_trace_splits_each_calls_time_by_kernel_copy_and_memset_inductors_numbers_merged():
    events = []
    for i in range(3):
        t = 1000.0 * i
        events += [_call(t), _device("kernel", "triton_poi_fused_add_0", t + 60, 10), _device("kernel", "triton_poi_fused_add_1", t + 80, 10),
                   _device("kernel", KERNEL, t + 100, 200 + 10 * i), _device("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", t + 400, 4),
                   _device("gpu_memset", "Memset (Device)", t + 420, 2)]
    fields, busy = counters.read_trace(events, 3, cuda=True)
    # 99% of the time is named (the memset's 2 µs of 236 is not): each row the median of its calls.
    assert fields["kernel_time"].named_ms == {KERNEL: 0.21, "triton_poi_fused_add": 0.02, "copy HtoD": 0.004}
    assert fields["kernel_time"].other_ms == 0.002
    assert fields["kernels"]["triton_poi_fused_add_0"] == 1.0 and len(busy) == 3


def test_the_cpu_profilers_trace_splits_a_call_by_its_aten_operators_self_time():
    import torch

    a, b = torch.randn(128, 128), torch.randn(128)
    counted, _ = counters.count(lambda: torch.nn.functional.linear(a, a, b).relu(), cuda=False)
    assert counted.kernel_time is None and counted.op_time is not None
    # The matmul named; the relu named too, or in `other` where a loaded host's matmul took 99% of the time.
    assert "aten::addmm" in counted.op_time.named_ms and counted.op_time.total_ms() > counted.op_time.named_ms["aten::addmm"]
    assert all(ms > 0 for ms in counted.op_time.named_ms.values())


def _op(name: str, ts: float, dur: float, tid: int = 1) -> dict:
    return {"name": name, "ts": ts, "dur": dur, "tid": tid, "ph": "X", "cat": "cpu_op"}


def _memory(ts: float, nbytes: int, tid: int = 1, device_type: int = 1) -> dict:
    return {"name": "[memory]", "ph": "i", "cat": "cpu_instant_event", "ts": ts, "tid": tid,
            "args": {"Bytes": nbytes, "Device Type": device_type, "Total Allocated": 0}}


def test_a_calls_allocations_go_to_the_outermost_operator_on_their_thread_frees_and_other_devices_left_out():
    events = []
    for i in range(3):
        t = 1000.0 * i
        events += [_call(t), _op("aten::linear", t + 1, 20), _op("aten::addmm", t + 2, 10), _op("aten::empty", t + 3, 1),
                   _memory(t + 3.5, 4096 * (i + 1)),  # linear's output, made by aten::empty inside aten::addmm
                   _memory(t + 4, 512, device_type=0),  # the host's
                   _memory(t + 15, -4096),  # a free
                   _op("aten::mm", t + 5, 20, tid=2), _memory(t + 6, 2048, tid=2),  # backward's thread
                   _memory(t + 30, 1024)]  # between operators
    fields, _ = counters.read_trace(events, 3, cuda=True, allocations=True)
    assert fields["alloc_bytes"] == ByteSplit(named_bytes={"aten::linear": 8192, "aten::mm": 2048,
                                                           counters.OUTSIDE_OPERATORS: 1024}, other_bytes=0)
    assert "alloc_bytes" not in counters.read_trace(events, 3, cuda=True)[0]  # not asked: not kept


def test_the_cpu_profilers_memory_events_name_the_operator_the_user_called():
    import torch

    a, b = torch.randn(256, 256), torch.randn(256)
    counted, _ = counters.count(lambda: torch.nn.functional.linear(a, a, b).relu(), cuda=False, allocations=True)
    # 256 x 256 float32 each: the linear's output (made by the aten::empty in its aten::addmm) and relu's
    assert counted.alloc_bytes is not None
    assert counted.alloc_bytes.named_bytes == {"aten::linear": 262144, "aten::relu": 262144}, counted.alloc_bytes


# --- what moved -------------------------------------------------------------------------------------


def split(**named: float) -> TimeSplit:
    return TimeSplit(named_ms=named)


def launches(*names: str) -> dict[str, float]:
    return dict.fromkeys(names, 1.0)


def test_the_kernel_that_got_slower_is_named_first_with_its_share_of_the_change():
    rng = random.Random(7)
    before = {f"k{i}": 0.1 + 0.01 * i for i in range(12)}
    after = {name: ms * (1 + rng.uniform(-0.02, 0.02)) for name, ms in before.items()}  # the noise between processes
    after["k3"] = before["k3"] * 1.5
    w = moved.compare("kernel", split(**before), split(**after), launches(*before), launches(*after))
    assert [r.name for r in w.culprits] == ["k3"]
    assert w.rows[0].name == "k3" and words.share(w.rows[0], w) > 50  # the others' noise is the rest


def test_a_change_spread_over_kernels_within_their_noise_names_no_culprit():
    before = {f"k{i}": 0.2 for i in range(10)}
    after = {name: ms * 1.03 for name, ms in before.items()}  # each 3%, the whole 3%: no one kernel did it
    w = moved.compare("kernel", split(**before), split(**after), launches(*before), launches(*after))
    assert w.culprits == () and len(w.rows) == 10
    line = words.where_line(verdict("regressed", where=w))
    assert line == "where: spread over 10 kernels, none beyond its noise (4% of each one's time)"


def test_a_kernel_that_appeared_or_vanished_is_named_as_such_where_it_moved_the_time_the_way_it_moved():
    slower = moved.compare("kernel", split(a=1.0, gone=0.5), split(a=1.0, new=0.8), launches("a", "gone"), launches("a", "new"))
    assert [(r.name, r.before, r.after) for r in slower.rows] == [("new", None, 0.8), ("gone", 0.5, None), ("a", 1.0, 1.0)]
    assert [r.name for r in slower.culprits] == ["new"]  # the vanished one made it faster, not slower
    assert words.where_line(verdict("regressed", where=slower)) == "where: new appeared, 800.0 µs (267% of the change)"
    faster = moved.compare("kernel", split(a=1.0, gone=0.5), split(a=1.0, new=0.1), launches("a", "gone"), launches("a", "new"))
    assert [r.name for r in faster.culprits] == ["gone"]
    assert words.where_line(verdict("improved", where=faster, change_pct=-20.0)) == ("where: gone vanished, was 500.0 µs "
                                                                                      "(125% of the change)")


def test_rows_that_moved_the_other_way_in_all_from_the_verdict_name_nothing():
    # A baseline's split from a pass that ran slow throughout: the operators got faster in all while the
    # time regressed; naming the add (faster) as the slowdown's culprit would be a false lead.
    before = CaseResult(id="mm", name="mm", status="ok", device="cpu-x",
                        counters=Counters(calls=5, aten_ops={"aten::add": 1.0}, op_time=TimeSplit({"aten::add": 1.937})))
    after = CaseResult(id="mm", name="mm", status="ok", device="cpu-x", regime="host-clock",
                       counters=Counters(calls=5, aten_ops={"aten::add": 1.0, "aten::copy_": 1.0},
                                         op_time=TimeSplit({"aten::add": 0.5348, "aten::copy_": 0.3844})))
    judged = judge([after], [verdict("regressed", metric="gpu_time")], Acceptances(), before={"mm": before})
    v = judged.verdicts[0]
    assert v.where.by == "operator" and v.where.culprits == () and v.where.moved < 0
    assert words.where_line(v) == ("where: its 2 operators moved the other way in all (-1017.8 µs a call): they do not say "
                                   "where this change came from")


def test_rows_that_moved_against_the_change_are_not_where_it_came_from():
    w = moved.compare("kernel", split(a=1.0, b=1.0), split(a=1.5, b=0.9), launches("a", "b"), launches("a", "b"))
    assert [r.name for r in w.rows] == ["a", "b"] and [r.name for r in w.culprits] == ["a"]


def test_an_operators_noise_is_the_hosts():
    # 10% on the host is within an operator's noise (15%); on the GPU it is beyond a kernel's (4%).
    args = (split(a=1.0, b=1.0), split(a=1.1, b=1.0), launches("a", "b"), launches("a", "b"))
    assert moved.compare("operator", *args).culprits == () and [r.name for r in moved.compare("kernel", *args).culprits] == ["a"]


def test_a_row_is_named_only_past_the_verdicts_tolerance_and_a_sole_culprit_always_is():
    # An H100 host's operators between unchanged processes: aten::as_strided 130.8 -> 66.0 us a call in a
    # forward whose caller time has a tolerance of +-111% (2026-12-07); past the host's 15%, within the case's noise.
    before = {"aten::as_strided": 0.1308, "aten::mm": 2.0, "aten::addmm": 3.0, "aten::copy_": 1.0}
    after = {**before, "aten::as_strided": 0.0660}
    args = (split(**before), split(**after), launches(*before), launches(*after))
    assert [r.name for r in moved.compare("operator", *args).culprits] == ["aten::as_strided"]
    w = moved.compare("operator", *args, tolerance_pct=110.881)
    assert w.culprits == () and w.noise_pct == 110.881
    assert words.where_line(verdict("improved", where=w, change_pct=-1.0)).endswith("none beyond its noise (111% of each one's time)")
    # One row that made the whole change past the tolerance T moved by T / (its share) > T: the tolerance
    # never hides it, whatever its share and T; past the kernel's own noise (4%), it is named.
    for share in (0.05, 0.5, 0.95):
        for tol in (1.0, 6.0, 40.0):
            for sign in (1, -1):
                old = {"a": share, "b": (1 - share) / 2, "c": (1 - share) / 2}
                new = {**old, "a": share + sign * 1.01 * tol / 100}
                if new["a"] <= 0:
                    continue
                named = [[r.name for r in moved.compare("kernel", split(**old), split(**new), launches(*old), launches(*new),
                                                        tolerance_pct=t).culprits] for t in (0.0, tol)]
                assert named[0] == named[1] == (["a"] if tol / share > 4.1 else named[0]), (share, tol, sign)
                assert named[1] == ["a"] or tol < 4, (share, tol, sign)


def test_a_kernel_too_small_to_be_named_on_one_side_moved_only_if_it_outgrew_all_of_that_sides_rest():
    before = TimeSplit(named_ms={"a": 1.0}, other_ms=0.01)
    small = moved.compare("kernel", before, split(a=1.0, b=0.011), launches("a", "b"), launches("a", "b"))
    large = moved.compare("kernel", before, split(a=1.0, b=0.2), launches("a", "b"), launches("a", "b"))
    assert small.culprits == () and [r.name for r in large.culprits] == ["b"]
    assert words.row_figures(large.rows[0], "kernel") == ("in other", "200.0 µs")


# --- the judge attaches it ----------------------------------------------------------------------------


NOISE = Noise(runs=5, spread_pct=1.0, tolerance_pct=5.0, detectable_pct=6.6)


def verdict(status: str, metric: str = "busy_time", change_pct: float = 50.0, **fields) -> Verdict:
    return Verdict("mm", metric, status, 1.0, 1.0 + change_pct / 100, change_pct, 1.0, None, reason="outside", time=TimeEvidence(noise=NOISE),
                   next_steps=(NextStep("accept"),) if status == "regressed" else (), **fields)


def result(ms: float, regime: str = "device") -> CaseResult:
    work = Counters(calls=5, device=True, kernels={KERNEL: 1.0}, kernel_time=split(**{KERNEL: ms}))
    return CaseResult(id="mm", name="mm", status="ok", device="cpu-x", regime=regime, counters=work)


@pytest.mark.parametrize("status", ["regressed", "improved", "unstable", "inconclusive", "same"])
def test_the_judge_says_where_a_time_moved_and_never_changes_a_verdict(status):
    plain = judge([result(1.5)], [verdict(status)], Acceptances())
    judged = judge([result(1.5)], [verdict(status)], Acceptances(), before={"mm": result(1.0)})
    def bare(verdicts):
        return [dataclasses.replace(v, where=None) for v in verdicts]

    assert bare(judged.verdicts) == list(plain.verdicts) and bare(judged.failing) == list(plain.failing)
    assert judged.accept == plain.accept
    where = judged.verdicts[0].where
    if status in ("regressed", "improved", "unstable"):
        assert where is not None and where.by == "kernel" and [r.name for r in where.culprits] == [KERNEL]
    else:
        assert where is None


def test_a_counted_metric_or_a_side_without_a_split_gets_no_where():
    judged = judge([result(1.5)], [verdict("regressed", metric="kernels")], Acceptances(), before={"mm": result(1.0)})
    assert judged.verdicts[0].where is None
    bare = dataclasses.replace(result(1.0), counters=Counters(calls=5, device=True))
    assert judge([result(1.5)], [verdict("regressed")], Acceptances(), before={"mm": bare}).verdicts[0].where is None


def test_the_line_names_the_kernel_as_a_person_reads_it_within_a_hundred_columns_and_the_trace_after():
    judged = judge([result(1.5)], [verdict("regressed")], Acceptances(), before={"mm": result(1.0)})
    line = words.where_line(judged.verdicts[0])
    assert line.startswith("where: vectorized_elementwise_kernel<MulFunctor> 1.000 ms → 1.500 ms (+50%")
    assert len(line) <= words.WHERE_WIDTH
    traced = words.where_line(judged.verdicts[0], "reports/traces/mm.json")
    assert traced == f"{line}; trace: reports/traces/mm.json"


# --- end to end -------------------------------------------------------------------------------------


SUITE = """
    import os
    import time

    import torch

    from perfguard import perf_case

    @perf_case(budget_s=0.01)
    def scaled(device):
        x, z = torch.randn(1000), torch.randn(2_000_000)
        extra = os.environ.get("EXTRA_OP") == "1"

        def call():
            y = x * 2
            if extra:  # milliseconds of real work: more than any other operator's time moves under load
                torch.cumsum(z, 0)
            time.sleep(0.02 if extra else 0.01)  # the run's own clock (fake_clock.py): it regresses on any machine
            return y
        return call
"""


def test_a_gate_failure_ends_with_the_operator_that_appeared(tmp_path, run_pytest, fake_clock):
    (tmp_path / "conftest.py").write_text(fake_clock)
    (tmp_path / "test_scaled.py").write_text(textwrap.dedent(SUITE))
    run_pytest(tmp_path, "--perfguard", "--perfguard-update").assert_outcomes(passed=1)
    failed = run_pytest(tmp_path, "--perfguard", "--perfguard-profile=regressed", env={"EXTRA_OP": "1"})
    failed.assert_outcomes(failed=1)
    text = "\n".join(failed.outlines)
    failure = text.partition(" scaled _")[2].partition("\n===")[0].strip().splitlines()
    # The failure's last line, the profile's trace named on it.
    assert failure[-1].startswith("scaled: where: aten::cumsum appeared, "), text
    trace = failure[-1].partition("; trace: ")[2]
    assert trace.endswith("reports/traces/scaled.json") and (tmp_path / trace).is_file(), failure[-1]
    # The Markdown summary says it under the case's line, and the JSON record holds it as data.
    assert "where: aten::cumsum appeared, " in (tmp_path / "reports" / "perfguard.md").read_text()
    record = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record")
    (gpu_time,) = [v for v in record.verdicts if v.metric == "gpu_time"]
    assert gpu_time.where is not None and gpu_time.where.by == "operator"
    assert [r.name for r in gpu_time.where.culprits][:1] == ["aten::cumsum"]


# --- memory by category -------------------------------------------------------------------------------


GIB = 2**30


def with_breakdown(**bytes_: int) -> CaseResult:
    from perfguard.model import MemoryBreakdown

    breakdown = MemoryBreakdown(**{"parameters": GIB // 2, "gradients": GIB // 2, "activations": GIB, **bytes_},
                                method="allocator history")
    return CaseResult(id="mm", name="mm", status="ok", device="cpu-x", memory_breakdown=breakdown)


def test_memory_that_grew_says_which_category_of_the_bytes_at_the_peak_grew():
    before, after = with_breakdown(), with_breakdown(activations=3 * GIB // 2, temporaries=GIB // 4)
    judged = judge([after], [verdict("regressed", metric="peak_memory")], Acceptances(), before={"mm": before})
    w = judged.verdicts[0].where
    assert w.by == "category" and [r.name for r in w.culprits] == ["activations", "temporaries"]
    assert words.where_line(judged.verdicts[0]) == ("where: activations 1.0 GiB → 1.5 GiB (+50%, 67% of the change); "
                                                    "1 more moved")


def test_memory_within_the_allocators_rounding_names_no_category_and_no_breakdown_says_nothing():
    w = moved.where("footprint", with_breakdown(), with_breakdown(activations=GIB + 4096))
    assert w.culprits == ()
    assert words.where_line(verdict("regressed", metric="footprint", where=w)) == (
        "where: spread over 3 categories, none by more than the allocator's rounding")
    assert moved.where("peak_memory", result(1.0), result(1.5)) is None  # neither took a breakdown, nor kept allocations


def allocating(**bytes_: float) -> CaseResult:
    work = Counters(calls=5, device=True, aten_ops=dict.fromkeys(bytes_, 1.0), alloc_bytes=ByteSplit(named_bytes=bytes_))
    return CaseResult(id="mm", name="mm", status="ok", device="cpu-x", counters=work)


def test_memory_without_a_breakdown_says_which_operator_allocated_more():
    before = allocating(**{"aten::linear": 4 * GIB, "aten::layer_norm": GIB, "aten::gelu": GIB})
    after = allocating(**{"aten::linear": 8 * GIB, "aten::layer_norm": GIB, "aten::gelu": GIB, "aten::_to_copy": 512.0})
    judged = judge([after], [verdict("regressed", metric="peak_memory")], Acceptances(), before={"mm": before})
    w = judged.verdicts[0].where
    assert w.by == "allocation" and [r.name for r in w.culprits] == ["aten::linear"]  # 512 B: the allocator's rounding
    assert words.where_line(judged.verdicts[0]) == "where: aten::linear 4.0 GiB → 8.0 GiB (+100%, 100% of the change)"
    from perfguard.report.details import where_tables
    from perfguard.report.view import Entry

    (table,) = where_tables(Entry("mm", "cpu-x", after, judged.verdicts, "2026-12-07T00:00:00+00:00", None))
    assert table["title"] == "where the peak memory moved, by allocating operator (bytes allocated a call)"
    assert table["head"] == ["allocating operator", "calls a call", "before", "after", "change", "share"]
    assert [cell[0] for cell in table["rows"][0][:6]] == ["aten::linear", "1", "4.0 GiB", "8.0 GiB", "+4.0 GiB", "100%"]
    # A breakdown, where both sides took one, says more: what the bytes at the peak hold.
    both = dataclasses.replace(with_breakdown(), counters=before.counters)
    assert moved.where("peak_memory", both, dataclasses.replace(with_breakdown(activations=2 * GIB), counters=after.counters)).by == "category"


def test_rows_that_all_moved_alike_are_a_slower_process_and_one_that_moved_past_them_is_named():
    # An H100's host ran a whole process about 18% slower: every operator alike, none the culprit.
    before = {f"op{i}": 0.1 * (i + 1) for i in range(10)}
    slower = {name: ms * 1.18 for name, ms in before.items()}
    assert moved.compare("operator", split(**before), split(**slower), launches(*before), launches(*before)).culprits == ()
    culprit = {**slower, "op4": before["op4"] * 1.8}
    w = moved.compare("operator", split(**before), split(**culprit), launches(*before), launches(*before))
    assert [r.name for r in w.culprits] == ["op4"]


def test_ab_pools_its_rounds_splits_by_each_rows_median():
    from perfguard.analysis.pooling import pool_case
    from perfguard.analysis.stats import timing

    def round_(ms: float, other: float) -> CaseResult:
        work = Counters(calls=5, device=True, kernels={"k": 1.0}, kernel_time=TimeSplit(named_ms={"k": ms}, other_ms=other))
        return CaseResult(id="mm", name="mm", status="ok", device="cpu-x", counters=work,
                          timings={"gpu_time": timing([ms] * 10)})

    pooled = pool_case([round_(1.0, 0.1), round_(5.0, 0.3), round_(1.2, 0.2)], None)
    assert pooled.counters.kernel_time == TimeSplit(named_ms={"k": 1.2}, other_ms=0.2)  # one slow round does not lead it
    assert moved.median_split([ByteSplit({"a": 1.0}, 0.0), ByteSplit({"a": 3.0, "b": 2.0}, 4.0), ByteSplit({"a": 2.0}, 1.0)]) == \
        ByteSplit({"a": 2.0, "b": 2.0}, 1.0)
