"""`memory_breakdown=True`: bytes at a training step's peak by category.

On the CPU (the profiler's memory events, perfguard/measure/profiler_history.py) an MLP with Adam is
measured for real:
parameters are exactly numel x element size, Adam's state twice that (plus its step counters, which
live on the parameters' device on a CPU), gradients as many bytes as the parameters when the peak
falls in the optimizer step, activations on top when the peak falls in the backward pass. The same
on CUDA, with the suite's transformer block, is `gpu`-marked at the end.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from report_page import panels

from perfguard import perf_case
from perfguard.model import CaseResult, MemoryBreakdown, RunRecord, dumps, loads_record

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "suites" / "test_training_step.py"


def mlp_step(batch: int, width: int, breakdown: bool = True):
    """A case stepping Linear-ReLU-Linear with Adam; `built` gets its model and optimizer once set up."""
    built: dict = {}

    @perf_case(name=f"mlp_step_b{batch}_w{width}", memory_breakdown=breakdown, budget_s=0.2)
    def case(device):
        import torch

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.ReLU(), torch.nn.Linear(4 * width, width))
        opt = torch.optim.Adam(model.parameters())
        x = torch.randn(batch, width)
        built.update(model=model, opt=opt)

        def step():
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        return step

    return case, built


def measure_cpu(spec) -> CaseResult:
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    (instance,) = spec.instances("cpu")
    return runner.measure(instance, detect("cpu"), SamplingRule(budget_s=0.2))


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def adam_state(opt) -> list:
    return [t for state in opt.state.values() for t in state.values()]


@pytest.fixture(scope="module")
def optimizer_bound():
    """A wide MLP on 8 rows: its activations are small, so the peak is in Adam's step."""
    spec, built = mlp_step(batch=8, width=256)
    return measure_cpu(spec), built


@pytest.fixture(scope="module")
def activation_bound():
    """A narrow MLP on 4096 rows: its activations outweigh it, so the peak is in forward or backward."""
    spec, built = mlp_step(batch=4096, width=32)
    return measure_cpu(spec), built


def test_parameters_are_numel_times_element_size_and_adam_state_twice_that(optimizer_bound):
    result, built = optimizer_bound
    parts = result.memory_breakdown
    assert result.status == "ok" and parts is not None and parts.error is None, result
    params = nbytes(built["model"].parameters())
    state = adam_state(built["opt"])
    steps = [t for t in state if t.dim() == 0]  # Adam's step counter, a 0-d tensor per parameter
    assert len(steps) == 4 and len(state) == 12
    assert parts.parameters == params
    assert parts.optimizer_state == nbytes(state) == 2 * params + nbytes(steps)


def test_on_a_cpu_the_profiler_takes_the_breakdown_and_says_where_the_peak_fell(optimizer_bound):
    parts = optimizer_bound[0].memory_breakdown
    assert parts.method == "profiler" and parts.peak_phase == "optimizer" and parts.peak_at == "Adam"
    assert parts.buffers == 0 and parts.unknown == 0 and parts.unnamed_reason is None


def test_a_block_the_profiler_saw_made_before_the_call_and_nothing_names_is_unknown_and_says_why():
    """The CPU allocator reports the free of a block made while an earlier profile ran, with its size:
    live from the call's start until that free, tied to no tensor the step used."""
    import torch

    from perfguard.measure import breakdown
    from perfguard.measure.device import detect

    held = {}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True):
        held["cache"] = torch.ones(2**18)  # 1 MiB

    model = torch.nn.Linear(64, 64)
    x = torch.randn(8, 64)

    def step():
        model(x).sum().backward()
        model.zero_grad(set_to_none=True)
        held.pop("cache", None)

    parts = breakdown.measure(step, detect("cpu"))
    assert parts.error is None and parts.unknown == 2**20, parts
    assert parts.parameters == 64 * 64 * 4 + 64 * 4 and parts.inputs == 8 * 64 * 4
    assert parts.unnamed_reason == (
        "1.0 MiB in 1 block: live before the call and holding no parameter, buffer, gradient, optimizer state or input the call used")


def test_at_a_peak_in_the_optimizer_step_every_gradient_is_live(optimizer_bound):
    result, built = optimizer_bound
    parts = result.memory_breakdown
    assert parts.gradients == parts.parameters
    assert parts.peak_bytes >= parts.parameters + parts.gradients + parts.optimizer_state


def test_at_a_peak_in_the_backward_pass_activations_outweigh_the_model(activation_bound):
    result, built = activation_bound
    parts = result.memory_breakdown
    assert parts is not None and parts.error is None, result
    params = nbytes(built["model"].parameters())
    assert parts.parameters == params
    assert parts.optimizer_state == nbytes(adam_state(built["opt"]))
    assert parts.activations > parts.parameters + parts.optimizer_state
    assert parts.inputs == 4096 * 32 * 4  # x, the data fed to the model
    assert parts.gradients <= params


def test_a_case_without_memory_breakdown_has_none():
    spec, _ = mlp_step(batch=8, width=16, breakdown=False)
    result = measure_cpu(spec)
    assert result.status == "ok" and result.memory_breakdown is None


def test_a_call_the_profiler_cannot_take_is_a_note_on_the_breakdown_not_a_case_error():
    @perf_case(memory_breakdown=True, budget_s=0.1)
    def refuses_profiling(device):
        import torch

        def call():
            if torch.autograd.profiler._is_profiler_enabled:
                raise RuntimeError("not under the profiler")
            return torch.ones(4) * 2

        return call

    result = measure_cpu(refuses_profiling)
    assert result.status == "ok" and result.error is None and result.judged_time is not None
    assert result.memory_breakdown == MemoryBreakdown(
        error="memory breakdown failed: RuntimeError: not under the profiler", method="profiler"
    )
    assert result.memory_breakdown.peak_bytes == 0


# --- the record -----------------------------------------------------------------------------------


def record_of(*results: CaseResult) -> RunRecord:
    return RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0.1.0", results=results)


def test_a_breakdown_survives_the_record_round_trip(optimizer_bound):
    result, _ = optimizer_bound
    run = record_of(result)
    back = loads_record(dumps(run), "run.json")
    assert back.results[0].memory_breakdown == result.memory_breakdown
    assert json.loads(dumps(run))["results"][0]["memory_breakdown"]["parameters"] == result.memory_breakdown.parameters


def test_a_record_written_before_the_breakdown_existed_still_loads():
    old = json.loads(dumps(record_of(CaseResult(id="add", name="add", status="smoke"))))
    old["results"][0].pop("memory_breakdown", None)  # schema 5 leaves a field at its default out anyway
    (loaded,) = loads_record(json.dumps(old), "old.json").results
    assert loaded.memory_breakdown is None


def test_a_breakdown_written_before_buffers_phase_method_and_unnamed_reason_existed_still_loads():
    data = json.loads(dumps(record_of(CaseResult(id="s", name="s", status="ok", memory_breakdown=MemoryBreakdown(parameters=8)))))
    for name in ("buffers", "peak_phase", "peak_at", "method", "unnamed_reason"):
        data["results"][0]["memory_breakdown"].pop(name, None)
    (loaded,) = loads_record(json.dumps(data), "old.json").results
    assert loaded.memory_breakdown == MemoryBreakdown(parameters=8)
    assert loaded.memory_breakdown.method is None and loaded.memory_breakdown.peak_bytes == 8


def test_an_unknown_category_in_a_record_is_refused():
    data = json.loads(dumps(record_of(CaseResult(id="s", name="s", status="ok", memory_breakdown=MemoryBreakdown(parameters=8)))))
    data["results"][0]["memory_breakdown"]["weights"] = 8
    from perfguard.errors import BaselineError

    with pytest.raises(BaselineError, match="unknown field.*weights"):
        loads_record(json.dumps(data), "edited.json")


# --- the report -----------------------------------------------------------------------------------


def test_the_html_report_draws_a_bar_per_category_and_shows_why_one_is_missing(optimizer_bound):
    from perfguard.measure.device import detect
    from perfguard.report.html import render_html

    result, _ = optimizer_bound
    failed = dataclasses.replace(result, id="failed", memory_breakdown=MemoryBreakdown(error="memory breakdown failed: <b>x</b>"))
    run = dataclasses.replace(record_of(result, failed), devices=(detect("cpu"),))
    page = render_html([run])
    (drawn,), (failed_panel,) = panels(page, result.id), panels(page, "failed")
    assert {"parameters", "gradients", "optimizer state"} <= {name for name, _, _ in drawn["breakdown"]}  # a bar each
    assert failed_panel["breakdown_missing"] == "memory breakdown failed: <b>x</b>"
    assert drawn["breakdown_note"] == "peak in optimizer at Adam; from the profiler"
    assert drawn["breakdown_unnamed"] is None  # the profiler named the whole peak


def test_the_html_report_says_how_much_is_unnamed_and_why():
    from perfguard.report.html import render_html

    parts = MemoryBreakdown(parameters=3 * 2**20, unknown=2**20, method="profiler",
                            unnamed_reason="1.0 MiB in 1 block <script>live</script> before the call")
    old = MemoryBreakdown(parameters=3 * 2**20, unknown=2**20)  # a record written before the reason was
    page = render_html([record_of(CaseResult(id="s", name="s", status="ok", memory_breakdown=parts),
                                  CaseResult(id="old", name="old", status="ok", memory_breakdown=old))])
    assert panels(page, "s")[0]["breakdown_unnamed"] == ("unknown 1.0 MiB, 25.0% of the peak: 1.0 MiB in 1 block "
                                                         "<script>live</script> before the call")
    assert panels(page, "old")[0]["breakdown_unnamed"] == (
        "unknown 1.0 MiB, 25.0% of the peak (the record says not why: written before perfguard said it)")


def test_the_case_detail_says_where_the_peak_fell_and_how_it_was_taken():
    from perfguard.report.details import breakdown_note
    from perfguard.report.view import Entry

    def note(**fields):
        parts = MemoryBreakdown(parameters=8, **fields)
        result = CaseResult(id="s", name="s", status="ok", memory_breakdown=parts)
        return breakdown_note(Entry("s", "cpu", result, verdicts=(), created_at="", commit=None))

    assert note(peak_phase="backward", peak_at="GPT.h.1.mlp at model.py:57 (forward)", method="allocator history") == (
        "peak in backward at GPT.h.1.mlp at model.py:57 (forward); from the allocator history")
    assert note(peak_phase="start", method="allocator history") == "peak before the call; from the allocator history"
    assert note() is None  # a record written before either was said



def test_the_markdown_and_the_terminal_name_a_breakdown_that_leaves_a_tenth_of_its_peak_unnamed():
    from perfguard.report.markdown import render_markdown
    from perfguard.report.terminal import record_lines

    def case(id, unknown, reason=None):
        parts = MemoryBreakdown(parameters=9 * 2**20, unknown=unknown, unnamed_reason=reason, method="profiler")
        return CaseResult(id=id, name=id, status="ok", memory_breakdown=parts)

    run = record_of(case("step_b4", 2**20, "1.0 MiB in 1 block: live <b>before</b> the call"),
                    case("step_b8", 2**20 - 1, "just under a tenth"), case("old", 2**20))
    said = "step_b4: the memory breakdown leaves 1.0 MiB (10.0% of its peak) unnamed: 1.0 MiB in 1 block: live"
    lines = record_lines(run)
    assert any(line.startswith(said) and line.endswith("<b>before</b> the call") for line in lines), lines
    assert any(line.startswith("old: ") and line.endswith("the record does not say why (written before perfguard said it)")
               for line in lines), lines
    assert not any("step_b8" in line for line in lines)
    md = render_markdown([run])
    assert ("- step\\_b4: the memory breakdown leaves 1.0 MiB (10.0% of its peak) unnamed: "
            "1.0 MiB in 1 block: live &lt;b&gt;before&lt;/b&gt; the call\n") in md, md


# --- through the plugin ---------------------------------------------------------------------------


def load_suite():
    spec = importlib.util.spec_from_file_location("suite_training_step", SUITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_step_suite_records_its_breakdown_under_perfguard(tmp_path, run_pytest):
    shutil.copy(SUITE, tmp_path / SUITE.name)
    out = run_pytest(tmp_path, SUITE.name, "--perfguard", "--perfguard-budget", "0.2", "--perfguard-report=reports")
    assert out.ret == 0, "\n".join(out.outlines[-30:] + out.errlines[-30:])
    (result,) = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "run").results
    parts = result.memory_breakdown
    assert result.status == "ok" and parts is not None and parts.error is None, result
    suite = load_suite()
    (instance,) = suite.training_step.instances("cpu")
    kw = instance.kwargs
    model = suite.block(kw["d_model"], kw["heads"])
    params = list(model.parameters())
    assert parts.parameters == nbytes(params)
    # Adam's state: exp_avg and exp_avg_sq, and on a CPU a 4-byte step counter per parameter.
    assert parts.optimizer_state == 2 * nbytes(params) + 4 * len(params)
    assert parts.activations > 0
    assert panels((tmp_path / "reports" / "perfguard.html").read_text(), result.id)[0]["breakdown"]  # drawn


# --- on CUDA --------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_the_training_step_on_cuda_has_exact_parameter_bytes_and_adam_state_twice_them():
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    suite = load_suite()
    instances = suite.training_step.instances("cuda")
    assert instances
    device = detect("cuda")
    for instance in instances:
        result = runner.measure(instance, device, SamplingRule(budget_s=0.3))
        assert result.status == "ok", result.error
        parts = result.memory_breakdown
        assert parts is not None and parts.error is None, (instance.id, parts)
        kw = instance.kwargs
        params = nbytes(suite.block(kw["d_model"], kw["heads"], device="meta").parameters())
        # On CUDA Adam keeps its step counters on the host: the device holds exp_avg and exp_avg_sq.
        assert parts.parameters == params, (instance.id, parts)
        assert parts.optimizer_state == 2 * params, (instance.id, parts)
        assert parts.activations > 0, (instance.id, parts)
        assert parts.gradients <= params, (instance.id, parts)
        print(instance.id, {k: v for k, v in dataclasses.asdict(parts).items()})
