"""The `perfguard` command on real record and baseline files: output, files written, exit codes."""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfguard import store
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, RunRecord, Verdict, dumps

CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0", python="3.11.7")


def result(case_id: str, rng: np.random.Generator, slowdown: float = 1.0, status: str = "ok") -> CaseResult:
    if status != "ok":
        return CaseResult(id=case_id, name=case_id, status=status, device=CPU.slug, error="setup raised ValueError")
    samples = tuple(float(x) for x in rng.lognormal(np.log(0.5), 0.02, 100) * slowdown)
    return CaseResult(id=case_id, name=case_id.split("[")[0], status="ok", device=CPU.slug, timer="host-clock",
                      timings={"gpu_time": timing(samples)})


def record(path: Path, *results: CaseResult, commit: str = "0123456789abcdef", **fields) -> Path:
    run = RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0.1.0", devices=(CPU,),
                    results=results, commit=commit, **fields)
    path.write_text(dumps(run))
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(99)


def test_show_prints_the_table_of_a_record(tmp_path, rng, capsys):
    run = record(tmp_path / "run.json", result("vector_add[n=1024]", rng), result("broken", rng, status="error"))
    assert main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "device: AMD EPYC 9654 (cpu-amd-epyc-9654)" in out
    assert "vector_add[n=1024]" in out and "median" in out
    assert "error: setup raised ValueError" in out


def test_show_lists_the_verdicts_a_record_carries(tmp_path, rng, capsys):
    verdict = Verdict(case_id="a", metric="gpu_time", status="regressed", baseline=1.0, current=1.2, change_pct=20.0,
                      threshold_pct=5.0, baseline_file="baselines/x.json",
                      env_mismatch=(), reason="outside")
    run = record(tmp_path / "run.json", result("a", rng), verdicts=(verdict,))
    assert main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "1 regressed" in out and "a: gpu_time regressed: 1.000 ms → 1.200 ms (+20.0%)" in out


@pytest.mark.parametrize(("status", "exit", "line"), [
    ("complete", 0, "{run}: a complete run, 2 case results"),
    ("unfinished", 1, "perfguard: {run}: its status is 'unfinished', not complete: the run did not finish (Ctrl-C, a "
                      "crash, os._exit in a case), so its cases are not a run of the suite"),
    ("forged", 2, "perfguard: {run}: not a perfguard file of this kind (it has no schema_version); pass a run record "
                  "such as reports/perfguard.json, or a baseline file from baselines/"),
])
def test_check_passes_only_a_complete_run_record_that_perfguard_reads(tmp_path, rng, capsys, status, exit, line):
    """Issue 46, item 5: what the workflow's steps ask of reports/perfguard.json. A case can write
    `{"status": "complete"}` there and end the process with os._exit(0)."""
    run = tmp_path / "perfguard.json"
    if status == "forged":
        run.write_text('{"status": "complete"}\n')
    else:
        record(run, result("a", rng), result("b", rng), status=status)
    assert main(["check", str(run)]) == exit
    out, err = capsys.readouterr()
    assert (out if exit == 0 else err).splitlines() == [line.format(run=run)]


def test_baseline_accept_writes_the_measured_cases_and_show_lists_them(tmp_path, rng, capsys):
    run = record(tmp_path / "run.json", result("a", rng), result("b", rng), result("broken", rng, status="error"))
    baselines = tmp_path / "baselines"
    assert main(["baseline", "accept", str(run), "--baselines", str(baselines)]) == 0
    out = capsys.readouterr().out
    assert f"{baselines / 'cpu-amd-epyc-9654.json'}: runs of 2 case(s) added from 1 record" in out
    assert "skipped broken: not measured (status error)" in out
    saved = store.load(baselines, CPU)
    assert sorted(saved.cases) == ["a", "b"]
    assert saved.cases["a"].commit == "0123456789abcdef" and saved.cases["a"].recorded_at == "2026-11-29T12:00:00+00:00"

    for args in (["baseline", "show", "--baselines", str(baselines)],
                 ["baseline", "show", "--device", CPU.slug, "--baselines", str(baselines)]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "AMD EPYC 9654 (cpu-amd-epyc-9654), 2 case(s)" in out
        assert "case" in out and "centre" in out and "spread" in out and "runs" in out and "recorded_at" in out
        line = next(line for line in out.splitlines() if line.strip().startswith("a "))
        assert " 1/1 " in line and "2026-11-29T12:00:00+00:00" in line and "0123456789ab" in line


def test_baseline_show_counts_a_hosts_runs_not_its_case_runs(tmp_path, rng, capsys):
    baselines, paths = tmp_path / "baselines", []
    for i in range(3):  # three runs of two cases each, on one host
        run = RunRecord(created_at=f"2026-11-29T12:0{i}:00+00:00", perfguard_version="0.1.0",
                        devices=(dataclasses.replace(CPU, host="runner-a"),), results=(result("a", rng), result("b", rng)))
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(dumps(run))
    assert main(["baseline", "accept", *map(str, paths), "--baselines", str(baselines)]) == 0
    assert main(["baseline", "show", "--baselines", str(baselines)]) == 0
    assert "  card A = runner-a: 3 runs of 2 cases (full id runner-a)" in capsys.readouterr().out.splitlines()


def test_baseline_accept_merges_a_fleets_records_into_one_run_each(tmp_path, rng, capsys):
    # The records of a CI matrix over three runners of one GPU model: each is one run of its cases.
    baselines = tmp_path / "baselines"
    paths = []
    for i, host in enumerate(("runner-a", "runner-b", "runner-c")):
        run = RunRecord(created_at=f"2026-11-29T12:0{i}:00+00:00", perfguard_version="0.1.0",
                        devices=(dataclasses.replace(CPU, host=host),), results=(result("a", rng, 1 + i / 100),))
        paths.append(tmp_path / f"{host}.json")
        paths[-1].write_text(dumps(run))
    assert main(["baseline", "accept", *map(str, paths), "--baselines", str(baselines), "--keep-runs", "2"]) == 0
    assert "cpu-amd-epyc-9654.json: runs of 1 case(s) added from 3 records" in capsys.readouterr().out
    runs = store.load(baselines, CPU).cases["a"].runs
    assert [r.host for r in runs] == ["runner-b", "runner-c"]  # --keep-runs 2: the newest two
    assert main(["baseline", "show", "--baselines", str(baselines)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("a "))
    assert " 2 " in line and "%" in line  # two runs, and how far apart they lie
    assert main(["baseline", "accept", str(paths[0]), "--restart", "--baselines", str(baselines)]) == 0
    assert [r.host for r in store.load(baselines, CPU).cases["a"].runs] == ["runner-a"]


def test_baseline_accept_of_chosen_cases_keeps_the_others(tmp_path, rng, capsys):
    baselines = tmp_path / "baselines"
    first = record(tmp_path / "first.json", result("a", rng), result("b", rng), commit="first")
    second = record(tmp_path / "second.json", result("a", rng), result("b", rng), commit="second")
    assert main(["baseline", "accept", str(first), "--baselines", str(baselines)]) == 0
    assert main(["baseline", "accept", str(second), "--case", "b", "--baselines", str(baselines)]) == 0
    cases = store.load(baselines, CPU).cases
    assert (cases["a"].commit, cases["b"].commit) == ("first", "second")


def test_baseline_accept_of_an_unknown_case_is_a_one_line_error(tmp_path, rng, capsys):
    run = record(tmp_path / "run.json", result("a", rng))
    assert main(["baseline", "accept", str(run), "--case", "nope", "--baselines", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfguard: ") and "nope" in err and err.count("\n") == 1
    assert not (tmp_path / "b").exists()


def test_baseline_accept_refuses_a_corrupt_baseline_and_leaves_it(tmp_path, rng, capsys):
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    corrupt = baselines / "cpu-amd-epyc-9654.json"
    corrupt.write_text('{"schema_version": 2, "device": {')
    run = record(tmp_path / "run.json", result("a", rng))
    assert main(["baseline", "accept", str(run), "--baselines", str(baselines)]) == 2
    err = capsys.readouterr().err
    assert str(corrupt) in err and "Traceback" not in err
    assert corrupt.read_text() == '{"schema_version": 2, "device": {'


def test_baseline_show_without_baselines_and_with_an_unknown_device(tmp_path, capsys):
    assert main(["baseline", "show", "--baselines", str(tmp_path)]) == 0
    assert "no baselines in" in capsys.readouterr().out
    assert main(["baseline", "show", "--device", "nvidia-h200", "--baselines", str(tmp_path)]) == 2
    assert "no baseline for nvidia-h200" in capsys.readouterr().err


def test_baseline_show_reports_a_bad_file_and_still_lists_the_good_ones(tmp_path, rng, capsys):
    store.update(tmp_path, CPU, [result("a", rng)], commit=None, recorded_at="2026-11-29T12:00:00+00:00")
    (tmp_path / "nvidia-h200.json").write_text("{truncated")
    assert main(["baseline", "show", "--baselines", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "cpu-amd-epyc-9654" in captured.out
    assert str(tmp_path / "nvidia-h200.json") in captured.err and "not valid JSON" in captured.err


@pytest.mark.parametrize("command", [["show", "RUN"], ["baseline", "accept", "RUN"], ["report", "RUN", "-o", "out.html"]])
def test_the_html_report_given_for_its_record_says_so_and_names_the_json_beside_it(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").mkdir()
    Path("reports/perfguard.html").write_text("<!doctype html>\n<html><head><title>perfguard</title></head></html>\n")
    assert main(["reports/perfguard.html" if word == "RUN" else word for word in command]) == 2
    assert capsys.readouterr().err == ("perfguard: reports/perfguard.html: this is an HTML report, not a record; give the JSON "
                                       "record written beside it, 'reports/perfguard.json'\n")


def test_compare_of_two_runs_of_the_same_code_passes(tmp_path, rng, capsys):
    base = record(tmp_path / "base.json", result("a", rng), result("b", rng))
    head = record(tmp_path / "head.json", result("a", rng), result("b", rng))
    assert main(["compare", str(base), str(head)]) == 0
    assert "for 2 cases: 0 regressed" in capsys.readouterr().out


def test_compare_fails_on_an_injected_slowdown_and_lists_it_first(tmp_path, rng, capsys):
    base = record(tmp_path / "base.json", result("a", rng), result("b", rng), result("gone", rng))
    # A record against one record is a baseline of one run: on a CPU's host clock its tolerance is
    # wide (tens of percent), so the slowdown here is threefold.
    head = record(tmp_path / "head.json", result("a", rng), result("b", rng, 3.0), result("added", rng))
    assert main(["compare", str(base), str(head)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("regressed  b: gpu_time regressed:") and str(base) in lines[0]
    assert any(line.startswith("missing    gone") for line in lines)
    assert any(line.startswith("new        added") for line in lines)
    # "a" did not move, but one host-clock run cannot see a 1% change: inconclusive, not same.
    assert lines[-1] == ("perfguard: 4 verdicts (one per metric) for 4 cases: "
                         "1 regressed, 0 unstable, 1 inconclusive, 0 improved, 1 missing, 1 new, 0 same")
    # The same slowdown is within a 300% threshold.
    assert main(["compare", str(base), str(head), "--threshold", "300"]) == 0
    capsys.readouterr()
    # --fail-inconclusive: at 300% (wider than a's tolerance) a reads same and nothing fails; at the
    # default 1% an unchanged record against itself is inconclusive everywhere, and fails.
    assert main(["compare", str(base), str(head), "--threshold", "300", "--fail-inconclusive"]) == 0
    assert main(["compare", str(base), str(base), "--fail-inconclusive"]) == 1
    assert main(["compare", str(base), str(base)]) == 0


def test_compare_judges_the_work_counters_exactly_and_takes_the_runs_allowance(tmp_path, rng, capsys):
    from perfguard.model import Counters

    def counted(aten_ops: float) -> CaseResult:
        return dataclasses.replace(result("a", rng), counters=Counters(calls=5, aten_ops={"aten::add": 1.0, "aten::mul": aten_ops}))

    base = record(tmp_path / "base.json", counted(1.0))
    head = record(tmp_path / "head.json", counted(2.0))
    assert main(["compare", str(base), str(head)]) == 1
    out = capsys.readouterr().out
    assert "regressed  a: aten_ops regressed: ATen operators per call 2 → 3: +1 × aten::mul" in out
    assert main(["compare", str(base), str(head), "--counter-allowance", "aten_ops=1"]) == 0
    assert main(["compare", str(base), str(head), "--counter-allowance", "50%"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as usage:
        main(["compare", str(base), str(head), "--counter-allowance", "launches=1"])
    assert usage.value.code == 2
    assert "names 'launches', not a work counter" in capsys.readouterr().err


def test_compare_judges_by_the_acceptance_file_as_the_gate_and_ab_do(tmp_path, rng, capsys):
    from perfguard.model import AcceptedChange, Acceptances

    slower = result("b", rng, 3.0)
    base, head = record(tmp_path / "base.json", result("b", rng)), record(tmp_path / "head.json", slower)
    folder = tmp_path / "baselines"
    folder.mkdir()
    accepted = folder / "accepted-changes.json"
    change = AcceptedChange("b", "gpu_time", CPU.slug, slower.median_of("gpu_time"), 0.5, "fused")
    accepted.write_text(dumps(Acceptances((change,))))
    assert main(["compare", str(base), str(head), "--baselines", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("accepted   b: gpu_time accepted: ") and f"; accepted up to 2.893 ms by {accepted}: 'fused'" in out
    # Judged against itself, the head holds the accepted figure already: the entry is spent.
    assert main(["compare", str(head), str(head), "--baselines", str(folder)]) == 0
    assert (f"perfguard: {accepted}: the accepted gpu_time of 'b' is spent: the base holds it already; "
            "remove the entry") in capsys.readouterr().out.splitlines()
    # A file that cannot be read accepts nothing, and says why.
    accepted.write_text("{truncated")
    assert main(["compare", str(base), str(head), "--baselines", str(folder)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("regressed  b: gpu_time regressed:")
    assert lines[-1].startswith(f"perfguard: not accepted: {accepted}: ")
    # Issue 46, 3: an entry ten times past the base's figure accepts nothing (the regression fails), and one
    # for a case the head does not hold is named; another device's entries are another run's.
    ghost = AcceptedChange("ghost[n=1]", "kernels", CPU.slug, 3.0, 2.0, "edited")
    accepted.write_text(dumps(Acceptances((dataclasses.replace(change, figure=1e5), ghost,
                                           dataclasses.replace(ghost, device="nvidia-h200")))))
    assert main(["compare", str(base), str(head), "--baselines", str(folder)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("regressed  b: gpu_time regressed:")
    assert lines[-2].startswith(f"perfguard: not accepted: {accepted}: the entry for the gpu_time of 'b' on {CPU.slug} "
                                "accepts 100.0 s, more than 10× the baseline's ")
    assert lines[-1] == (f"perfguard: {accepted}: 1 entry for a case this run did not measure (removed, renamed, skipped "
                         f"or not selected), accepting nothing: kernels of 'ghost[n=1]' on {CPU.slug}; remove the "
                         "entries of cases that are gone")


def test_accept_writes_no_figure_the_gate_would_refuse(tmp_path, rng, capsys):
    # Issue 46, 3: what an acceptance file may hold is at most 10x the baseline's figure; a change past
    # it is recorded into the baseline itself, and the command says so, writing nothing.
    huge = Verdict(case_id="b", metric="gpu_time", status="regressed", baseline=0.5, current=5.5, change_pct=1000.0,
                   threshold_pct=1.0, baseline_file="baselines/x.json", reason="outside")
    run = record(tmp_path / "run.json", result("b", rng, 11.0), verdicts=(huge,))
    assert main(["pr", "accept", str(run), "--case", "b", "--baselines", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"perfguard: 'b': gpu_time 500.0 µs → 5.500 ms is more than the 10× of its baseline that an acceptance "
                   f"file accepts; record it into the baseline with `perfguard baseline accept {run} --case b "
                   f"--baselines={tmp_path / 'b'}`; nothing was written")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("argv", [["pr", "accept"], ["baseline", "accept"]])
def test_an_unknown_case_is_one_line_naming_the_record_and_the_closest_ids(tmp_path, rng, capsys, argv):
    """Issue 47, item 8: an id the record does not hold (a typo, an id of another parameter) gets the ids
    closest to it, as a declaration's keyword typo does, and the command that lists them, in one line
    with no placeholder; nothing is written."""
    run = record(tmp_path / "run.json", *(result(f"vector_add[n={n}]", rng) for n in (1024, 4096)), result("softmax", rng))
    folder = tmp_path / "b"
    for asked, offered in (("vector_add[n=1204]", " (did you mean 'vector_add[n=1024]' or 'vector_add[n=4096]'?)"),
                           ("sofmtax", " (did you mean 'softmax'?)"), ("layer_norm", "")):
        assert main([*argv, str(run), "--case", "softmax", "--case", asked, "--baselines", str(folder)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == (f"perfguard: {run}: no case {asked!r}{offered}; `perfguard show {run}` lists its cases; "
                                     "nothing was written\n")
    assert not folder.exists()


def test_the_old_accept_spelling_names_the_new_command_and_runs_nothing(tmp_path, rng, capsys):
    """Issue 47, item 10: `perfguard accept` (the pull request's acceptance file) and `perfguard baseline
    accept` (the baseline) had names that did not say which file each writes. The first is `perfguard pr
    accept` now, and the old spelling is one line with the command as it is now spelt, never a second way."""
    slower = Verdict(case_id="b", metric="gpu_time", status="regressed", baseline=0.5, current=0.6, change_pct=20.0,
                     threshold_pct=1.0, baseline_file="baselines/x.json", reason="outside")
    run = record(tmp_path / "run.json", result("b", rng), verdicts=(slower,))
    folder = tmp_path / "b"
    assert main(["accept", str(run), "--case", "b", "--reason", "a fused epilogue", "--baselines", str(folder)]) == 2
    out, err = capsys.readouterr()
    now = f"perfguard pr accept {run} --case b --reason 'a fused epilogue' --baselines {folder}"
    assert out == "" and err == ("perfguard: `perfguard accept` is now `perfguard pr accept` (it writes the acceptance file a "
                                 "pull request commits; `perfguard baseline accept` writes the baseline): "
                                 f"`{now}`\n")
    assert not folder.exists()
    assert main(shlex.split(now)[1:]) == 0  # the command as it is spelt now, as a shell splits it
    assert "'b' gpu_time" in capsys.readouterr().out and (folder / "accepted-changes.json").is_file()


def test_compare_of_a_missing_or_corrupt_record_is_one_line_and_exit_2(tmp_path, rng, capsys):
    good = record(tmp_path / "good.json", result("a", rng))
    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:200])
    for bad in (tmp_path / "absent.json", truncated):
        assert main(["compare", str(good), str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"perfguard: {bad}: ") and err.count("\n") == 1


def test_bad_threshold_is_a_usage_error(tmp_path, rng):
    good = record(tmp_path / "good.json", result("a", rng))
    with pytest.raises(SystemExit) as info:
        main(["compare", str(good), str(good), "--threshold", "five"])
    assert info.value.code == 2


def test_the_module_runs_as_a_command_without_importing_pytest(tmp_path, rng):
    base = record(tmp_path / "base.json", result("a", rng))
    head = record(tmp_path / "head.json", dataclasses.replace(result("a", rng, 3.0)))
    code = ("import sys; from perfguard.cli import main; rc = main(sys.argv[1:]); "
            "assert 'pytest' not in sys.modules and 'torch' not in sys.modules; sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, "compare", str(base), str(head)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "gpu_time regressed" in done.stdout
    done = subprocess.run([sys.executable, "-m", "perfguard.cli", "show", str(tmp_path / "absent.json")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("perfguard: ") and "absent.json" in done.stderr


def test_baseline_merge_folds_another_hosts_baseline_in_keeping_every_run_once(tmp_path, rng, capsys):
    here, there = tmp_path / "here", tmp_path / "there"
    for folder, host, hour in ((here, "host-a", 1), (there, "host-b", 2), (here, "host-a", 3)):
        store.update(folder, dataclasses.replace(CPU, host=host), [result("a", rng)], commit=None,
                     recorded_at=f"2026-11-30T0{hour}:00:00+00:00")
    store.update(there, dataclasses.replace(CPU, host="host-b"), [result("b", rng)], commit=None, recorded_at="2026-11-30T04:00:00+00:00")
    theirs = str(there / f"{CPU.slug}.json")
    assert main(["baseline", "merge", theirs, "--baselines", str(here)]) == 0
    assert main(["baseline", "merge", theirs, "--baselines", str(here)]) == 0  # twice: nothing doubles
    assert "merged 1 file(s)" in capsys.readouterr().out
    cases = store.load(here, CPU).cases
    assert [r.host for r in cases["a"].runs] == ["host-a", "host-b", "host-a"]
    assert [r.host for r in cases["b"].runs] == ["host-b"]
    assert main(["baseline", "merge", str(tmp_path / "absent.json"), "--baselines", str(here)]) == 2
    assert "absent.json: no such file" in capsys.readouterr().err


def test_show_of_a_baseline_file_points_at_baseline_show(tmp_path, rng, capsys):
    store.update(tmp_path, CPU, [result("a", rng)], commit=None, recorded_at="2026-11-29T12:00:00+00:00")
    baseline = tmp_path / f"{CPU.slug}.json"
    assert main(["show", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert err == (f"perfguard: {baseline}: a baseline file, not a run record; list its cases with "
                   f"`perfguard baseline show --baselines {tmp_path} --device {CPU.slug}`\n")
    assert main(["baseline", "show", "--baselines", str(tmp_path), "--device", CPU.slug]) == 0  # and that works
    assert "a " in capsys.readouterr().out


def test_baseline_merge_of_a_run_record_points_at_baseline_accept(tmp_path, rng, capsys):
    run = record(tmp_path / "run.json", result("a", rng))
    assert main(["baseline", "merge", str(run), "--baselines", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err == (f"perfguard: {run}: a run record, not a baseline file; add its runs with "
                                       f"`perfguard baseline accept {run}`\n")
    assert not (tmp_path / "b").exists()


def test_ab_with_pytests_arguments_before_the_double_dash_says_where_they_go(capsys):
    with pytest.raises(SystemExit) as info:
        main(["ab", "--base", "HEAD", "suites/", "-k", "add"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "pytest's arguments go after `--`" in err and "(got suites/ -k add before it)" in err
    with pytest.raises(SystemExit):  # other commands keep argparse's own message
        main(["show", "a.json", "b.json"])
    assert "unrecognized arguments: b.json" in capsys.readouterr().err


def test_output_cut_short_by_its_reader_ends_quietly(tmp_path, rng):
    # More output than a pipe holds (64 KiB), so that the command is still writing when `head` has gone.
    run = record(tmp_path / "run.json", *(result(f"case_{i:04d}[n={i}]", rng) for i in range(1500)))
    # 141: perfguard stopped at the closed pipe (--help may fit in it, and end with 0 first).
    for args, statuses in ((["show", str(run)], (141,)), (["--help"], (0, 141))):
        done = subprocess.run(["bash", "-o", "pipefail", "-c", '"$0" -m perfguard.cli "$@" | head -1', sys.executable, *args],
                              capture_output=True, text=True, timeout=120)
        assert done.stdout.count("\n") == 1, done.stdout
        assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
        assert done.returncode in statuses, args


def _subcommands(parser, prefix=()):
    """(words, parser, the one-line help its parent lists) for every subcommand, nested ones too."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*prefix, name), sub, listed[name]
                yield from _subcommands(sub, (*prefix, name))


def test_every_subcommands_help_opens_with_its_one_line_description_and_names_every_argument(capsys):
    from perfguard.cli import _parser

    subcommands = list(_subcommands(_parser()))
    assert len(subcommands) >= 11  # show, baseline (show, accept, merge), compare, report, calibrate, ab, asv-export, history
    for words, sub, listed in subcommands:
        with pytest.raises(SystemExit):
            main([*words, "--help"])
        text = capsys.readouterr().out
        assert text.startswith(f"usage: perfguard {' '.join(words)} "), words  # argparse's own usage line
        usage = " ".join(text.split("\n\n")[0].split())
        for action in sub._actions:  # every option in it, none left out of a usage line written by hand
            assert not action.option_strings or action.option_strings[0] in re.split(r"[\s\[\]|]+", usage), (words, action.option_strings)
        opening = " ".join(text.split("\n\n")[1].split())  # the paragraph after the usage, unwrapped
        assert listed and opening.lower().startswith(listed.lower()), (words, opening, listed)
        for action in sub._actions:  # every positional (a list of actions below explains itself)
            if not action.option_strings and action.help is None and not action.choices:
                raise AssertionError(f"perfguard {' '.join(words)}: {action.metavar or action.dest} has no help text")


def test_the_options_page_lists_every_option_with_its_default():
    from perfguard.options import OPTIONS

    page = (Path(__file__).parents[1] / "docs" / "options.md").read_text()
    rows = {line.split("`")[1].split()[0].split("=")[0]: line for line in page.splitlines() if line.startswith("| `--")}
    assert sorted(rows) == sorted(f"--{o.name}" for o in OPTIONS)
    for option in OPTIONS:
        if isinstance(option.default, (int, float)) and not isinstance(option.default, bool):
            assert f"| {option.default:g} |" in rows[f"--{option.name}"], option.name
    assert "below" not in page  # the page is a table: every pointer is a link to the page that explains


def test_version_prints_the_packages_version(capsys):
    import tomllib

    import perfguard

    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"perfguard {declared}\n" and perfguard.__version__ == declared
