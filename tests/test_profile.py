"""--perfguard-profile: cases re-run under torch.profiler, for real, on CPU operators (and on a GPU where
there is one): the top operators in the record, the Chrome trace beside the report, and which cases
each choice profiles.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from report_page import panels
from report_page import rows as rows_of

from perfguard import perf_case, store
from perfguard.model import CaseResult, Profile, ProfileOp, RunRecord, dumps, loads_record
from perfguard.report.html import render_html

BUDGET = ("--perfguard-budget", "0.2")

OPERATORS = """
    import torch
    from perfguard import perf_case

    @perf_case(params={"n": [128]})
    def matmul(n, device):
        a = torch.randn(n, n, device=device)
        return lambda: a @ a

    @perf_case
    def softmax(device):
        x = torch.randn(64, 512, device=device)
        return lambda: torch.softmax(x, -1)

    def test_fixture(perf):
        x = torch.ones(1000, device=perf.device)
        perf(lambda: x + x)
"""

# Cases that sleep (a cost no CPU speed changes) and then call one operator, so that a profile of
# them has a top operator. Their baseline (conftest's write_baseline) makes one regress whatever the
# machine's load: it says `slowed` took a tenth of its sleep, and `steady` ten times its sleep.
NAPS = """
    import time

    import torch
    from perfguard import perf_case

    X = torch.ones(256)

    def nap():
        time.sleep(0.002)
        return X * 2

    @perf_case
    def steady(device):
        return nap

    @perf_case
    def slowed(device):
        return nap
"""
NAPS_BASELINE = {"test_naps.py::steady": 20.0, "test_naps.py::slowed": 0.2}


def read(path: Path) -> RunRecord:
    return loads_record(path.read_text(), str(path))


def profiles(record: RunRecord) -> dict[str, Profile | None]:
    return {r.id: r.profile for r in record.results}


# --- the profiler itself, on this machine's CPU ---------------------------------------------------


def cpu_instance(spec):
    (instance,) = spec.instances("cpu")
    return instance


def cpu():
    from perfguard.measure.device import detect

    return detect("cpu")


@perf_case(params={"n": [256]})
def matmul_softmax(n, device):
    import torch

    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return lambda: torch.softmax(a @ b, -1)


def test_a_cpu_case_is_profiled_into_its_top_aten_operators_and_a_chrome_trace(tmp_path):
    from perfguard.measure.profile import PROFILED_CALLS, profile_case

    p = profile_case(cpu_instance(matmul_softmax), cpu(), tmp_path)
    assert p.problem is None and p.sort_by == "cpu" and p.calls == PROFILED_CALLS
    assert p.kernels_per_call is None  # no GPU, no kernels
    ops = {op.operator: op for op in p.ops}
    assert {"aten::mm", "aten::_softmax", "aten::matmul", "aten::softmax"} <= set(ops)
    mm = ops["aten::mm"]
    assert mm.calls == 1 and mm.input_shapes == "[[256, 256], [256, 256]]"
    assert mm.self_memory_bytes == 256 * 256 * 4  # its float32 output, per call
    assert ops["aten::_softmax"].input_shapes.startswith("[[256, 256]")
    assert 0 < mm.self_ms <= mm.total_ms <= ops["aten::matmul"].total_ms
    selfs = [op.self_ms for op in p.ops]
    assert selfs == sorted(selfs, reverse=True)  # by self CPU time, the top first
    assert p.trace == f"traces/{Path(p.trace).name}" and Path(p.trace).suffix == ".json"
    events = json.loads((tmp_path / p.trace).read_text())["traceEvents"]
    assert sum(e.get("name") == "aten::mm" for e in events) == PROFILED_CALLS


def test_a_case_that_fails_when_profiled_gets_a_problem_line_not_an_exception(tmp_path):
    from perfguard.measure.profile import profile_case

    @perf_case
    def flaky(device):
        calls = []

        def call():
            calls.append(1)
            if len(calls) > 1:
                raise ValueError("fails from the second call on")

        return call

    p = profile_case(cpu_instance(flaky), cpu(), tmp_path)
    assert p.ops == () and p.trace is None
    assert p.problem == "flaky: not profiled: warm-up raised ValueError: fails from the second call on"
    assert not (tmp_path / "traces").exists()


def test_a_trace_folder_that_cannot_be_written_keeps_the_table_and_says_what_to_do(tmp_path):
    from perfguard.measure.profile import profile_case

    (tmp_path / "traces").write_text("a file where the traces folder should go\n")
    p = profile_case(cpu_instance(matmul_softmax), cpu(), tmp_path)
    assert "aten::mm" in [op.operator for op in p.ops] and p.trace is None
    assert p.problem.startswith(f"matmul_softmax[n=256]: cannot write the trace {tmp_path / 'traces'}/")
    assert p.problem.endswith(f"make {tmp_path / 'traces'} a writable folder or choose another --perfguard-report")


def test_the_profilers_progress_lines_stay_off_stderr_and_the_cases_own_output_does_not(tmp_path, capfd):
    import os

    from perfguard.measure.profile import profile_case

    @perf_case
    def chatty(device):
        import torch

        x = torch.ones(8)
        return lambda: (os.write(2, b"from the case\n"), x * 2)

    p = profile_case(cpu_instance(chatty), cpu(), tmp_path)
    assert "aten::mul" in [op.operator for op in p.ops]
    err = capfd.readouterr().err
    assert "profiler_start" not in err and "USDT" not in err
    assert err.count("from the case\n") == 1 + 2 + 5  # the first call, the warm-up and the profiled calls


def test_trace_names_are_safe_file_names_and_distinct_for_distinct_ids():
    from perfguard.measure.profile import trace_name

    assert trace_name("softmax") == "softmax.json"
    ids = ["attn[n=1-dtype=float16]", "attn(n=1-dtype=float16)", "a/b", "a\\b", "../x", "<img src=x>", "é"]
    names = [trace_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert name.endswith(".json") and "/" not in name and "\\" not in name and not name.startswith(".")
        assert all(c.isascii() and (c.isalnum() or c in "._=-") for c in name), name


# --- the record -----------------------------------------------------------------------------------

PROFILED = CaseResult(
    id="mm", name="mm", status="ok", device="cpu-x",
    profile=Profile(ops=(ProfileOp("aten::mm", 1.0, 0.25, 0.24, "[[256, 256], [256, 256]]", 262144),),
                    sort_by="cpu", calls=5, trace="traces/mm.json"),
)


def test_a_profile_round_trips_and_a_record_written_before_profiles_still_loads():
    record = RunRecord(created_at="2026-11-29T00:00:00+00:00", perfguard_version="0", results=(PROFILED,))
    assert loads_record(dumps(record), "run.json") == record
    old = json.loads(dumps(record))
    del old["results"][0]["profile"]  # as perfguard wrote records before --perfguard-profile
    assert loads_record(json.dumps(old), "old.json").results[0].profile is None


def test_a_baseline_keeps_no_profile(tmp_path):
    from perfguard.analysis.stats import timing

    samples = (0.25, 0.26, 0.25, 0.27)  # a baseline holds measurements: a median and the samples behind it
    measured = dataclasses.replace(PROFILED, device=cpu().slug, timings={"gpu_time": timing(samples)})
    path = store.update(tmp_path, cpu(), [measured], commit=None, recorded_at="2026-11-29T00:00:00+00:00")
    assert store.load_file(path).cases["mm"].result.profile is None
    assert '"profile"' not in path.read_text()  # at its default, None: left out


# --- the plugin -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def profiled_all(tmp_path_factory, run_pytest):
    path = tmp_path_factory.mktemp("all")
    (path / "test_ops.py").write_text(textwrap.dedent(OPERATORS))
    return path, run_pytest(path, "--perfguard", *BUDGET, "--perfguard-profile=all")


def test_all_profiles_every_case_with_real_aten_operators(profiled_all):
    path, result = profiled_all
    result.assert_outcomes(passed=3)
    record = read(path / "reports" / "perfguard.json")
    assert record.options["profile"] == "all"
    tops = {case_id: {op.operator: op for op in p.ops} for case_id, p in profiles(record).items()}
    assert "aten::mm" in tops["matmul[n=128]"] and "aten::_softmax" in tops["softmax"] and "aten::add" in tops["test_fixture"]
    assert tops["matmul[n=128]"]["aten::mm"].input_shapes == "[[128, 128], [128, 128]]"
    assert all(op.calls > 0 for ops in tops.values() for op in ops.values())
    for case_id, p in profiles(record).items():
        assert p.problem is None and p.kernels_per_call is None
        trace = json.loads((path / "reports" / p.trace).read_text())
        assert any(e.get("name", "").startswith("aten::") for e in trace["traceEvents"]), case_id


def test_the_html_report_shows_the_operator_table_and_links_the_trace(profiled_all):
    path, _ = profiled_all
    page = (path / "reports" / "perfguard.html").read_text()
    (matmul,) = panels(page, "matmul[n=128]")
    head, rows = matmul["profile"]
    assert head == ["operator", "calls", "total", "self", "input shapes", "self memory"]
    assert any(r[:2] == ["aten::mm", "1"] and r[-2:] == ["[[128, 128], [128, 128]]", "64.0 KiB"] for r in rows), rows
    (softmax,) = panels(page, "softmax")
    assert softmax["profile_note"]["facts"] == "per call, over 5 profiled calls, by self CPU time"
    assert softmax["profile_note"]["trace"] == "traces/softmax.json"  # panel.js links it
    assert all("profile" in p for case in rows_of(page) for p in panels(page, case))  # none "not captured"


def test_a_traces_folder_that_cannot_be_written_is_one_line_not_a_failure(tmp_path, run_pytest):
    (tmp_path / "test_ops.py").write_text(textwrap.dedent(OPERATORS))
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "traces").write_text("a file where the traces folder should go\n")
    result = run_pytest(tmp_path, "--perfguard", *BUDGET, "--perfguard-profile=all", "-k", "softmax")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["perfguard: softmax: cannot write the trace */reports/traces/softmax.json (*); "
                                 "make */reports/traces a writable folder or choose another --perfguard-report"])
    (p,) = profiles(read(tmp_path / "reports" / "perfguard.json")).values()
    assert p.trace is None and "aten::_softmax" in [op.operator for op in p.ops]


def test_a_profile_without_operators_or_with_a_problem_says_so_in_the_report():
    empty = dataclasses.replace(PROFILED, id="nap", profile=Profile(sort_by="cuda", calls=5, kernels_per_call=0.0))
    broken = dataclasses.replace(PROFILED, id="broken", profile=Profile(problem="broken: not profiled: <oops>"))
    page = render_html([RunRecord(created_at="2026-11-29T00:00:00+00:00", perfguard_version="0", results=(empty, broken))])
    (nap,), (bad,) = panels(page, "nap"), panels(page, "broken")
    assert "profile" not in nap and nap["profile_note"] == {  # panel.js: "profiler: " and the facts
        "facts": "no operator ran in the 5 profiled calls, 0 GPU kernels per call", "trace": None, "problem": None}
    assert "profile" not in bad and bad["profile_note"] == {"facts": "", "trace": None, "problem": "broken: not profiled: <oops>"}


@pytest.fixture(scope="module")
def gate(tmp_path_factory, run_pytest, write_baseline, fake_clock):
    """The two napping cases against a baseline in which `slowed` regressed, on CI: profiled by default,
    and with --perfguard-profile=none. (Which choice each environment and option gives is tested on
    the options themselves, below.) The naps are on the run's own clock (fake_clock.py): a sampled
    budget takes no real time, and the profiler's operators are real."""
    root = tmp_path_factory.mktemp("gate")
    scenarios = {"ci_default": (), "none_on_ci": ("--perfguard-profile=none",)}

    def run(name: str) -> tuple[Path, pytest.RunResult]:
        path = root / name
        path.mkdir()
        (path / "conftest.py").write_text(fake_clock)
        (path / "test_naps.py").write_text(textwrap.dedent(NAPS))
        write_baseline(path, NAPS_BASELINE)
        return path, run_pytest(path, "--perfguard", *BUDGET, *scenarios[name], env={"CI": "true"})

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # one a core: wall time, not verdicts
        return dict(zip(scenarios, pool.map(run, scenarios)))


CHOICES = {  # CI variable, arguments: the choice
    "local default": (None, (), "none"),
    "CI=true default": ("true", (), "regressed"),
    "CI=false default": ("false", (), "none"),
    "CI=0 default": ("0", (), "none"),
    "CI=off default": ("off", (), "none"),  # the option table's false words (perfguard.options.FALSE_WORDS)
    "CI=1 default": (" 1 ", (), "regressed"),
    "none on CI": ("true", ("--perfguard-profile=none",), "none"),
    "regressed locally": (None, ("--perfguard-profile=regressed",), "regressed"),
    "all, in capitals": (None, ("--perfguard-profile=ALL",), "all"),
}


@pytest.mark.parametrize("case", CHOICES)
def test_the_profile_choice_defaults_to_regressed_on_ci_and_to_none_elsewhere(pytester, monkeypatch, case):
    from perfguard.plugin.options import Options

    ci, args, choice = CHOICES[case]
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    assert Options.from_config(pytester.parseconfig("--perfguard", *args)).profile == choice


def test_regressed_profiles_only_the_case_that_regressed(gate):
    path, result = gate["ci_default"]
    result.assert_outcomes(passed=1, failed=1)
    record = read(path / "reports" / "perfguard.json")
    assert record.options["profile"] == "regressed"
    status = {v.case_id: v.status for v in record.verdicts}
    assert status["slowed"] == "regressed" and status["steady"] != "regressed"
    got = profiles(record)
    assert got["steady"] is None
    assert "aten::mul" in [op.operator for op in got["slowed"].ops]
    assert (path / "reports" / got["slowed"].trace).is_file()
    assert [p.name for p in (path / "reports" / "traces").iterdir()] == ["slowed.json"]
    # The profiler's own chatter on stderr ("USDT: ... profiler_start") stays out of the failure report.
    assert "Captured stderr" not in "\n".join(result.outlines), "\n".join(result.outlines)
    summary = (path / "reports" / "perfguard.md").read_text()
    (line,) = [line for line in summary.splitlines() if line.startswith("- `slowed`: host\\_time regressed")]
    assert "· top operator `aten::" in line and "self CPU time per call (trace `traces/slowed.json`)" in line


def test_none_profiles_nothing(gate):
    path, result = gate["none_on_ci"]
    result.assert_outcomes(passed=1, failed=1)  # the slowdown still fails the case
    record = read(path / "reports" / "perfguard.json")
    assert record.options["profile"] == "none"
    assert profiles(record) == {"slowed": None, "steady": None}
    assert not (path / "reports" / "traces").exists()


@pytest.mark.parametrize("where", ["command line", "ini"])
def test_a_bad_profile_choice_is_a_usage_error(pytester, where):
    # (That a usage error stops the run with its one line is test_plugin.py's.)
    from perfguard.plugin.options import Options

    if where == "ini":
        pytester.makeini("[pytest]\nperfguard_profile = sometimes\n")
        config = pytester.parseconfig("--perfguard")
    else:
        config = pytester.parseconfig("--perfguard", "--perfguard-profile=sometimes")
    with pytest.raises(pytest.UsageError) as info:
        Options.from_config(config)
    assert str(info.value) == "--perfguard-profile (or ini perfguard_profile) must be one of none, regressed, all, got 'sometimes'"


# --- on a GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_cuda_matmul_is_profiled_by_cuda_time_with_its_kernels(tmp_path):
    import torch

    from perfguard.measure.device import detect
    from perfguard.measure.profile import PROFILED_CALLS, profile_case

    @perf_case
    def cuda_matmul(device):
        a = torch.randn(2048, 2048, device=device)
        return lambda: a @ a

    (instance,) = cuda_matmul.instances("cuda")
    allocated = torch.cuda.memory_allocated()
    p = profile_case(instance, detect("cuda"), tmp_path)
    assert p.problem is None and p.sort_by == "cuda" and p.calls == PROFILED_CALLS
    assert p.kernels_per_call is not None and p.kernels_per_call >= 1
    selfs = [op.self_ms for op in p.ops]
    assert selfs[0] > 0 and selfs == sorted(selfs, reverse=True)  # by self CUDA time, the top first
    mm = next(op for op in p.ops if op.operator == "aten::mm")
    assert mm.total_ms > 0 and mm.input_shapes == "[[2048, 2048], [2048, 2048]]"
    events = json.loads((tmp_path / p.trace).read_text())["traceEvents"]
    assert sum(e.get("cat") == "kernel" for e in events) >= PROFILED_CALLS
    assert torch.cuda.memory_allocated() == allocated  # the case's tensors are freed
