"""torch.compile'd cases on the CPU (issue 32): the compile timed cold and warm, outside the timed
calls; graph breaks, recompiles, compiled graphs and frames given up on counted by name and judged
exactly; Inductor's kernel numbering not a change; a compile that fails is one line, and the other
cases still run. Inner runs use dynamo's `eager` backend: dynamo's part, all that perfguard times
apart and counts, is the same as Inductor's, and a graph compiles in 40 ms (70 with `aot_eager`, whose
AOT autograd perfguard does not look into; seconds with Inductor)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import textwrap

import pytest

from perfguard.analysis.counting import compare_counters
from perfguard.analysis.verdict import compare_case
from perfguard.model import CaseResult, Counters, Timing, loads_record
from perfguard.analysis.stats import summarize

CASES = '''
    import os

    import torch

    from perfguard import perf_case

    INJECT = os.environ.get("INJECT", "")


    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 64)
            self.step = 0

        def forward(self, x):
            y = torch.relu(self.lin(x))
            if INJECT == "break":
                torch._dynamo.graph_break()
            if INJECT == "recompile":
                y = y * self.step  # an int attribute that changes every step: dynamo specialises on it
            return y * 2 + 1


    def failing_backend(gm, inputs):
        raise RuntimeError("this backend cannot compile anything")


    @perf_case(compile={"backend": "eager"}, budget_s=0.05, threshold=1000)
    def declared():
        torch.manual_seed(0)
        model, x = Block(), torch.randn(32, 64)

        def call():
            if INJECT == "recompile":
                model.step += 1
            return model(x)
        return call


    @perf_case(budget_s=0.05, threshold=1000)
    def user_compiled():
        torch.manual_seed(0)
        block = Block()
        model = torch.compile(block, backend="eager")
        x = torch.randn(32, 64)

        def call():
            if INJECT == "recompile":
                block.step += 1
            return model(x)
        return call


    @perf_case(compile={"backend": failing_backend}, budget_s=0.05)
    def broken():
        x = torch.randn(8)
        return lambda: x * 2


    @perf_case(budget_s=0.05, threshold=1000)
    def eager_after():
        """After compiled cases (dynamo imported), a case that compiles nothing: which caches does it see?"""
        x = torch.randn(32, 64)
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        def call():
            if not os.path.exists(os.environ["SEEN"]):  # the first call, measured as a compile would be
                with open(os.environ["SEEN"], "w") as seen:
                    seen.write(f"{os.environ.get('TORCHINDUCTOR_CACHE_DIR')} {os.environ.get('TRITON_CACHE_DIR')} "
                               f"{default_cache_dir()}")
            return x * 2
        return call


    def test_compile_true_is_torch_compile_with_its_defaults():
        # Here, not in the outer test's process: torch.compile imports dynamo, which every later case of
        # a process then runs under.
        from perfguard.case import build_spec
        from perfguard.measure import compiling

        fn = lambda: None  # noqa: E731
        wrapped = compiling.wrap(fn, build_spec(lambda device: None, {"compile": True}, default_name="ok").compile)
        assert wrapped is not fn and hasattr(wrapped, "_torchdynamo_orig_callable"), wrapped
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory, run_pytest):
    """One recorded run, then the unchanged code, a graph break and a per-step recompile against it; and
    beside them, a run whose compile outlasts its timeout (a real second, waited for while they run)."""
    path = tmp_path_factory.mktemp("compiled")
    (path / "test_cases.py").write_text(textwrap.dedent(CASES))
    slow = tmp_path_factory.mktemp("slow")
    (slow / "test_slow.py").write_text(textwrap.dedent(SLOW_COMPILE))
    out = {"path": path}
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        slowly = pool.submit(run_pytest, slow, "--perfguard", "--perfguard-timeout=1")
        # The per-step recompile makes each call compile again (seven times, to dynamo's limit), its time a
        # thousand times the baseline's: re-measured to confirm it, the run compiled 55 times rather than 19
        # (5 s of its 6). What that run is read for is its counts, exact and never re-measured.
        # The suite's one plain test imports Inductor (torch.compile's default backend: 0.5 s a run): read
        # from the first run alone.
        plain = "--deselect=test_cases.py::test_compile_true_is_torch_compile_with_its_defaults"
        for name, args, inject in (("record", ("--perfguard-update",), ""), ("same", (plain,), ""),
                                   ("break", (plain,), "break"), ("recompile", (plain, "--perfguard-confirm=0"), "recompile")):
            # The undeclared (user-compiled) case's compile counts against its timeout: room for a busy machine.
            done = run_pytest(path, "--perfguard", "--perfguard-timeout=300", "-rA", *args,
                              env={"INJECT": inject, "SEEN": str(path / f"seen-{name}.txt")})
            record = loads_record((path / "reports" / "perfguard.json").read_text(), name)
            out[name] = (done, "\n".join(done.outlines), record)
        out["slow"] = slowly.result()
    return out


def test_a_compiled_case_is_timed_apart_from_its_compile_and_counted(runs):
    done, text, record = runs["record"]
    results = {r.id: r for r in record.results}
    for case in ("declared", "user_compiled"):
        r = results[case]
        assert r.status == "ok", r.error
        assert {"compile_cold", "compile_warm"} <= set(r.timings), r.timings.keys()
        assert all(len(r.timings[m].samples_ms) == 1 for m in ("compile_cold", "compile_warm"))  # one figure a run
        c = r.counters
        assert c.compiled and c.total("graphs") == 1 and c.total("graph_breaks") == 0 and c.total("recompiles") == 0
        assert c.frames and all(where.endswith(".py:" + where.rsplit(":", 1)[1]) for where in c.frames.values())


def test_a_case_that_compiles_nothing_keeps_the_users_caches_after_one_that_compiled(runs):
    # The cold compile's fresh cache folder is entered when dynamo starts compiling, not for every case
    # of a process that imported dynamo: a hand-written Triton kernel is not compiled again per case.
    inductor, triton, default = (runs["path"] / "seen-record.txt").read_text().split()
    assert inductor in {os.environ.get("TORCHINDUCTOR_CACHE_DIR"), default}, inductor  # (Inductor sets its default)
    assert triton == str(os.environ.get("TRITON_CACHE_DIR")), triton
    assert {r.id: r.status for r in runs["record"][2].results}["eager_after"] == "ok"


def test_the_terminal_says_how_long_each_compile_took_and_what_dynamo_made_of_it(runs):
    done, text, record = runs["break"]
    line = next(ln for ln in text.splitlines() if ln.startswith("compiled (outside the timed calls): "))
    assert "declared (" in line and " cold, " in line and " warm; 3 graph(s), 1 graph break(s))" in line, line


def test_unchanged_compiled_code_is_judged_same(runs):
    done, text, record = runs["same"]
    judged = [v for v in record.verdicts if v.case_id in ("declared", "user_compiled")]
    assert not [v for v in judged if v.status == "regressed"], text[-3000:]
    assert {"compile_cold", "compile_warm"} <= {v.metric for v in judged}


@pytest.mark.parametrize("case", ["declared", "user_compiled"])
def test_a_graph_break_is_caught_by_name_with_the_users_line(runs, case):
    done, text, record = runs["break"]
    assert done.ret == 1
    line = next(ln for ln in text.splitlines() if ln.startswith(f"{case}: graph_breaks regressed"))
    assert "graph breaks in the case 0 → 1: +1 × Call to `torch._dynamo.graph_break()` in forward (test_cases.py)" in line
    assert "test_cases.py:20)" in line  # the line of the break, not dynamo's
    graphs = next(ln for ln in text.splitlines() if ln.startswith(f"{case}: graphs regressed"))
    assert "forward, resumed (test_cases.py)" in graphs


@pytest.mark.parametrize("case, frame", [("declared", "call"), ("user_compiled", "forward")])
def test_a_recompile_every_step_is_caught_by_the_guard_that_failed(runs, case, frame):
    done, text, record = runs["recompile"]
    line = next(ln for ln in text.splitlines() if ln.startswith(f"{case}: recompiles regressed"))
    assert "recompiles in the case 0 → 7" in line and f".step == 3 in {frame} (test_cases.py)" in line
    eager = next(ln for ln in text.splitlines() if ln.startswith(f"{case}: eager_frames regressed"))
    assert f"+1 × {frame} (test_cases.py)" in eager  # dynamo's recompile limit: it runs eagerly from then on


def test_a_compile_that_fails_is_one_line_with_the_users_frame_and_the_others_still_run(runs):
    done, text, record = runs["record"]
    broken = next(r for r in record.results if r.id == "broken")
    first = broken.error.splitlines()[0]
    assert first == ("broken: torch.compile failed: BackendCompilerFailed: backend='failing_backend' raised: "
                     "RuntimeError: this backend cannot compile anything"), broken.error
    assert 'test_cases.py", line 27, in failing_backend' in broken.error
    assert "/torch/" not in broken.error  # the user's frames, not the compiler's pages
    assert {r.id: r.status for r in record.results}["declared"] == "ok"


def _counters(**kinds) -> Counters:
    return Counters(calls=5, device=True, **kinds)


def _result(counters: Counters, caller_ms: float = 0.2) -> CaseResult:
    samples = [caller_ms * (1 + 0.001 * i) for i in range(20)]
    timing = Timing(summarize(samples, "settled"), tuple(samples))
    return CaseResult(id="c", name="c", status="ok", device="nvidia-h200", timer="cuda-events", regime="enqueue-bound",
                      timings={"gpu_time": dataclasses.replace(timing), "caller_time": timing}, counters=counters)


def test_inductors_kernel_numbering_is_not_a_change_but_a_new_kernel_still_is():
    old = _counters(kernels={"triton_poi_fused_add_mul_0": 1.0, "triton_red_fused_sum_1": 1.0})
    renumbered = _counters(kernels={"triton_poi_fused_add_mul_1": 1.0, "triton_red_fused_sum_0": 1.0})
    assert compare_counters(_result(renumbered), _result(old)) == []
    more = _counters(kernels={"triton_poi_fused_add_mul_0": 1.0, "triton_poi_fused_add_mul_2": 1.0,
                              "triton_red_fused_sum_1": 1.0})
    (v,) = compare_counters(_result(more), _result(old))
    assert v.status == "regressed" and [(c.name, c.delta) for c in v.counters.counts] == [("triton_poi_fused_add_mul", 1.0)]


def test_a_compiled_calls_host_time_is_not_failed_by_its_spread_between_processes():
    compiled = dataclasses.replace(_counters(), compiled=True, graphs={"forward (model.py)": 1.0})
    base, slower = _result(compiled, 0.170), _result(compiled, 0.448)  # issue 32's unchanged run on an H200
    caller = next(v for v in compare_case(slower, base) if v.metric == "caller_time")
    assert (caller.status, caller.reason) == ("inconclusive", "compiled_host")
    eager = next(v for v in compare_case(_result(_counters(), 0.448), _result(_counters(), 0.170)) if v.metric == "caller_time")
    assert eager.status == "regressed"  # an eager call's host time is still judged


def test_asv_gets_the_compile_times_and_counters(runs):
    from perfguard.export import asv

    done, text, record = runs["record"]
    r = next(r for r in record.results if r.id == "declared")
    figures = {name: value for name, value, _ in asv._figures(r)}
    assert figures["compile_cold"] == pytest.approx(r.median_of("compile_cold") / 1e3)
    assert figures["graphs"] == 1 and figures["graph_breaks"] == 0 and figures["recompiles"] == 0


AB_SUITE = '''
    import torch
    import mylib
    from perfguard import perf_case

    @perf_case(compile={"backend": "eager"}, budget_s=0.05, threshold=1000)
    def block():
        x = torch.randn(32, 64)
        return lambda: mylib.block(x)
'''
AB_LIB = ("import torch\n\n\ndef block(x):\n    y = torch.relu(x) * 2\n{extra}    return y + 1\n")


def test_ab_judges_a_graph_break_between_two_commits(tmp_path, inner_args, forked):
    from test_ab import ab_forked, git  # perfguard ab through forked processes, as test_ab runs it

    repo = tmp_path / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_block.py").write_text(textwrap.dedent(AB_SUITE))
    (repo / "tests" / "conftest.py").write_text("import sys\nsys.path.insert(0, 'src')\n")
    git(repo, "init", "-q")
    for extra in ("", "    torch._dynamo.graph_break()\n"):
        (repo / "src" / "mylib.py").write_text(AB_LIB.format(extra=extra))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "graph break" if extra else "base")
    # Counts are exact: the fewest rounds ab takes (2) decide them (the times stay undecided, which is not the point)
    done, _ = ab_forked(repo, (*inner_args, "--perfguard-timeout=300"), forked, "--rounds", "2", "--max-rounds", "2")
    text = done.stdout + done.stderr
    assert done.returncode == 1, text[-3000:]
    assert "block: graph_breaks regressed: graph breaks in the case 0 → 1: +1 × Call to `torch._dynamo.graph_break()` in block (mylib.py)" in text


SLOW_COMPILE = '''
    import time

    import torch

    from perfguard import perf_case


    def slow_backend(gm, inputs):
        time.sleep(60)  # a compile that outlasts the case's timeout
        return gm


    @perf_case(budget_s=0.05)
    def compiles_slowly():
        x = torch.randn(8)
        return torch.compile(lambda: x * 2, backend=slow_backend)
'''


def test_a_compile_that_outlasts_the_timeout_says_so_and_how_to_allow_for_it(runs):
    done = runs["slow"]
    text = "\n".join(done.outlines)
    assert done.ret == 1, text[-2000:]
    assert ("compiles_slowly: still compiling after 1 s (torch.compile), stopped (--perfguard-timeout); declare it "
            "with @perf_case(compile=...) (600 s more for its compiles) or raise the timeout") in text


def test_compile_true_compiles_with_torch_compiles_defaults_and_a_typo_is_refused(runs):
    from perfguard.case import build_spec
    from perfguard.errors import ConfigError
    from perfguard.measure import compiling

    spec = build_spec(lambda device: None, {"compile": True}, default_name="ok")
    assert spec.compile == {}
    fn = lambda: None  # noqa: E731
    assert compiling.wrap(fn, build_spec(lambda device: None, {}, default_name="eager").compile) is fn
    assert "PASSED test_cases.py::test_compile_true_is_torch_compile_with_its_defaults" in runs["record"][1]
    with pytest.raises(ConfigError, match=r"compile: unknown keyword 'bakend'; did you mean 'backend'\?"):
        build_spec(lambda device: None, {"compile": {"bakend": "inductor"}}, default_name="typo")
