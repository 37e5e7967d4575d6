"""Accepting an intended change (issue 28): a case made to do more work fails; the one command its
failure prints, run as printed, makes it the baseline (a new series, the reason kept, no other case
touched); the next gate passes. Bad accepts get one line and change nothing.

Real pytest runs and the real console command; times on the run's own clock (fake_clock.py), so a
20 ms case measures 20.001 ms whatever the load, and the counted work (ATen operators, counted on a
CPU too) is the real profiler's.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfguard import store
from test_terminal_width import too_wide

MEASURE = ("--perfguard", "--perfguard-budget", "0.1")

SUITE = """
    import json
    import pathlib
    import time

    import torch

    from perfguard import perf_case

    CHANGE = pathlib.Path(__file__).with_name("change.json")
    MORE = json.loads(CHANGE.read_text()) if CHANGE.exists() else {}

    @perf_case(params={"n": [512]})
    def matmul(n, device):
        a = torch.ones(8, 8)

        def call():
            time.sleep(0.04 if MORE.get("matmul") else 0.02)
            y = a + 1
            return y.neg() if MORE.get("matmul") else y  # the more work: one more ATen operator a call
        return call

    @perf_case
    def steady(device):
        return lambda: time.sleep(0.02)
"""
CHANGED = "matmul[n=512]"
ACCEPT = re.compile(r"^perfguard: to accept these changes into the baseline: `(?P<command>.+)`$", re.M)


def perfguard_command(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """The printed command as a person runs it: the console script, words split as a shell splits them."""
    argv = shlex.split(command)
    assert argv[0] == "perfguard", command
    script = shutil.which("perfguard", path=str(Path(sys.executable).parent))
    launcher = [script] if script else [sys.executable, "-m", "perfguard.cli"]
    return subprocess.run([*launcher, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, run_pytest, fake_clock) -> Path:
    """The suite and its baseline of two runs a case, which each test below that changes it copies."""
    root = tmp_path_factory.mktemp("recorded")
    (root / "conftest.py").write_text(fake_clock)
    (root / "test_ops.py").write_text(textwrap.dedent(SUITE))
    for _ in range(2):  # two runs a case
        done = run_pytest(root, *MEASURE, "--perfguard-update")
        assert done.ret == 0, done.outlines[-30:]
    shutil.rmtree(root / "reports")
    return root


def copy_of(recorded: Path, folder: Path) -> Path:
    shutil.copytree(recorded, folder, dirs_exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def accepted(tmp_path_factory, run_pytest, recorded):
    root = copy_of(recorded, tmp_path_factory.mktemp("accept"))
    (baseline_path,) = store.list_files(root / "baselines")
    before = store.load_file(baseline_path)
    (root / "change.json").write_text(json.dumps({"matmul": True}))
    failed = run_pytest(root, *MEASURE)
    match = ACCEPT.search("\n".join(failed.outlines))
    accept = perfguard_command(match["command"], root) if match else None
    after = store.load_file(baseline_path)
    passed = run_pytest(root, *MEASURE)
    return dict(root=root, before=before, failed=failed, command=match["command"] if match else None, accept=accept,
                after=after, passed=passed, baseline=baseline_path)


def test_the_intended_change_fails_on_its_counter_and_its_time_and_prints_one_command(accepted):
    failed = accepted["failed"]
    assert failed.ret == 1, failed.outlines[-30:]
    text = "\n".join(failed.outlines)
    assert f"{CHANGED}: aten_ops regressed: ATen operators per call" in text and "+1 × aten::neg" in text
    assert f"{CHANGED}: host_time regressed: " in text
    assert accepted["command"] == f"perfguard baseline accept reports/perfguard.json --case '{CHANGED}'"
    assert text.count(accepted["command"]) >= 2  # in the case's failure, and once in the perfguard summary


def test_the_printed_command_works_as_printed_and_starts_a_new_series_with_its_reason(accepted):
    accept = accepted["accept"]
    assert accept is not None and accept.returncode == 0, (accept.stdout, accept.stderr)
    assert f"{CHANGED}: accepted (accepted with perfguard baseline accept): its series starts again with 1 run" in accept.stdout
    entry = accepted["after"].cases[CHANGED]
    assert len(entry.runs) == 1 and entry.runs[0].accepted == "accepted with perfguard baseline accept"
    assert entry.result.counters.total("aten_ops") == accepted["before"].cases[CHANGED].result.counters.total("aten_ops") + 1
    assert entry.result.judged_time.median_ms == pytest.approx(40.001)
    # Other cases are not weakened: steady's series is byte for byte what it was.
    assert accepted["after"].cases["steady"] == accepted["before"].cases["steady"]


def test_after_accepting_the_gate_passes(accepted):
    passed = accepted["passed"]
    assert passed.ret == 0, passed.outlines[-30:]
    text = "\n".join(passed.outlines)
    assert "regressed:" not in text and "to accept these changes" not in text


def test_a_routine_update_does_not_take_in_a_counted_regression(tmp_path, run_pytest, fake_clock):
    # The time did not move, so the run lies within its series; the extra operator must still not
    # become the baseline by a routine --perfguard-update: only a named accept may.
    (tmp_path / "conftest.py").write_text(fake_clock)
    (tmp_path / "test_ops.py").write_text(textwrap.dedent(SUITE.replace("0.04 if", "0.02 if")))
    for _ in range(2):
        assert run_pytest(tmp_path, *MEASURE, "--perfguard-update", "-k", "matmul").ret == 0
    (path,) = store.list_files(tmp_path / "baselines")
    before = path.read_bytes()
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    update = run_pytest(tmp_path, *MEASURE, "--perfguard-update", "-k", "matmul")
    text = "\n".join(update.outlines)
    assert f"perfguard: {CHANGED}: the run of " in text and "not added: aten_ops grew" in text, text[-3000:]
    assert f"accept it: `perfguard baseline accept reports/perfguard.json --case '{CHANGED}'`" in text
    assert "this run joined the baseline of 0 case(s), not of 1 (below)" in text
    assert path.read_bytes() == before


def test_at_80_columns_the_runs_end_is_wrapped_and_its_command_still_works_as_printed(tmp_path, run_pytest, recorded):
    """Issue 47, item 11: the lines under pytest's summary ran to 414 characters at 80 columns. Wrapped,
    the accept command is on a line of its own, whole, and runs as printed."""
    copy_of(recorded, tmp_path)
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    failed = run_pytest(tmp_path, *MEASURE, env={"COLUMNS": "80"})
    assert failed.ret == 1, failed.outlines[-30:]
    start = failed.outlines.index(next(line for line in failed.outlines if re.fullmatch(r"=+ perfguard =+", line)))
    end = next(n for n in range(start + 1, len(failed.outlines)) if failed.outlines[n].startswith("="))
    section = failed.outlines[start + 1:end]
    assert not too_wide(section, 80), section
    said = section.index("perfguard: to accept these changes into the baseline:")
    command = section[said + 1].strip().strip("`")
    assert command == f"perfguard baseline accept reports/perfguard.json --case '{CHANGED}'"
    done = perfguard_command(command, tmp_path)
    assert done.returncode == 0 and f"{CHANGED}: accepted" in done.stdout, done.stdout + done.stderr
    assert run_pytest(tmp_path, *MEASURE).ret == 0


@pytest.mark.parametrize(("args", "says"), [
    (["--metric", "gpu_time"], "--metric and --reason say what of a named case to accept: name the case(s) with --case ID "
                               "(the ids are in `perfguard show reports/perfguard.json`)"),
    # A case the record does not hold: the record named, its closest ids offered, no placeholder (issue 47, 8).
    (["--case", "nope"], "perfguard: reports/perfguard.json: no case 'nope'; `perfguard show reports/perfguard.json` "
                         "lists its cases; nothing was written"),
    (["--case", "matmul[n=521]"], "perfguard: reports/perfguard.json: no case 'matmul[n=521]' (did you mean "
                                  "'matmul[n=512]'?); `perfguard show reports/perfguard.json` lists its cases; "
                                  "nothing was written"),
    (["--case", "steady", "--metric", "aten_ops"], "'steady': 'aten_ops' did not change against baselines"),
])
def test_a_bad_accept_is_one_line_and_changes_nothing(accepted, args, says, monkeypatch, capsys):
    # The console command's own main, in this process: the printed command's launcher is run above.
    from perfguard import cli

    monkeypatch.chdir(accepted["root"])
    before = accepted["baseline"].read_bytes()
    status = cli.main(["baseline", "accept", "reports/perfguard.json", *args])
    out, err = capsys.readouterr()
    assert status == 2 and says in err, (out, err)
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert accepted["baseline"].read_bytes() == before


def test_a_cpus_time_is_accepted_by_the_name_its_lines_give_it(tmp_path, run_pytest, recorded, monkeypatch, capsys):
    # Issue 47, item 3: on a CPU every line calls the time host_time, so --metric takes that name (the files keep
    # the key gpu_time); a name that did not change is refused with the names that did.
    from perfguard import cli

    copy_of(recorded, tmp_path)
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    assert run_pytest(tmp_path, *MEASURE).ret == 1
    monkeypatch.chdir(tmp_path)
    (path,) = store.list_files(tmp_path / "baselines")
    before, acceptances = path.read_bytes(), tmp_path / "baselines" / "accepted-changes.json"
    for command in (["pr", "accept"], ["baseline", "accept"]):
        assert cli.main([*command, "reports/perfguard.json", "--case", CHANGED, "--metric", "gpu_time"]) == 2
    nothing = "so there is nothing of it to accept; nothing was written"
    assert capsys.readouterr().err.splitlines() == [
        f"perfguard: '{CHANGED}': 'gpu_time' did not regress in reports/perfguard.json (aten_ops, host_time did), {nothing}",
        f"perfguard: '{CHANGED}': 'gpu_time' did not change against baselines (aten_ops, host_time did), {nothing}"]
    assert path.read_bytes() == before and not acceptances.exists()
    assert cli.main(["pr", "accept", "reports/perfguard.json", "--case", CHANGED, "--metric", "host_time"]) == 0
    assert capsys.readouterr().out.startswith(f"accepted '{CHANGED}' host_time: 20.00 ms → 40.00 ms ")
    assert [c["metric"] for c in json.loads(acceptances.read_text())["changes"]] == ["gpu_time"]
    assert cli.main(["baseline", "accept", "reports/perfguard.json", "--case", CHANGED, "--metric", "host_time"]) == 0
    assert store.load_file(path).cases[CHANGED].runs[0].accepted == "accepted with perfguard baseline accept"


def test_mains_gate_reads_the_acceptance_file_then_an_update_records_it_and_the_entry_is_spent(tmp_path, run_pytest, recorded):
    # A pull request accepted its change with `perfguard pr accept` (the file in its diff); after the merge,
    # main's gate passes it, main's update starts the case's new series without force, and the next run
    # says the entry is spent.
    copy_of(recorded, tmp_path)
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    assert run_pytest(tmp_path, *MEASURE).ret == 1
    done = perfguard_command(f"perfguard pr accept reports/perfguard.json --case '{CHANGED}' --reason 'a fused epilogue'", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "baselines" / "accepted-changes.json").is_file()
    gate = run_pytest(tmp_path, *MEASURE)
    text = "\n".join(gate.outlines)
    assert gate.ret == 0, text[-3000:]
    # Each line an acceptance decided says the most it accepted, and from which file (issue 46, 3).
    accepted_by = "by baselines/accepted-changes.json: 'a fused epilogue'"
    assert f"{CHANGED}: aten_ops accepted: " in text and f"; accepted up to 6 {accepted_by}" in text
    assert re.search(rf"{re.escape(CHANGED)}: host_time accepted: .*; accepted up to \d+\.\d+ ms {accepted_by}", text)
    update = run_pytest(tmp_path, *MEASURE, "--perfguard-update")
    assert update.ret == 0 and f"{CHANGED}: accepted (a fused epilogue): its series starts again" in "\n".join(update.outlines)
    (path,) = store.list_files(tmp_path / "baselines")
    assert store.load_file(path).cases[CHANGED].runs[0].accepted == "a fused epilogue"
    after = "\n".join(run_pytest(tmp_path, *MEASURE).outlines)
    assert f"the accepted aten_ops of '{CHANGED}' is spent: the baseline holds it now; remove the entry" in after


def test_an_entry_for_another_gpu_model_starts_no_series_on_this_ones_update(tmp_path, run_pytest, recorded):
    # An entry is one model's reviewed figure (a mixed pool's H100 runner accepted its change): the judge
    # reads it for that model alone, and so does an update. Before, main's update on any model started the
    # case's new series without force wherever the file named its id.
    copy_of(recorded, tmp_path)
    (baseline_path,) = store.list_files(tmp_path / "baselines")
    before = store.load_file(baseline_path).cases[CHANGED]
    other = "nvidia-h100-80gb-hbm3"
    assert baseline_path.stem != other
    change = {"baseline": 20.001, "case_id": CHANGED, "device": other, "figure": 40.001, "metric": "gpu_time",
              "reason": "reviewed on the H100"}
    (tmp_path / "baselines" / "accepted-changes.json").write_text(json.dumps({"changes": [change], "schema_version": 1}))
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    update = run_pytest(tmp_path, *MEASURE, "--perfguard-update")
    text = "\n".join(update.outlines)
    assert "not accepted" not in text  # the file was read and its entry stands; only its model differs
    assert "its series starts again" not in text and f"perfguard: {CHANGED}: the run of " in text, text[-3000:]
    assert store.load_file(baseline_path).cases[CHANGED] == before


def test_the_gate_refuses_an_entry_past_its_bound_and_names_one_for_a_case_it_did_not_measure(tmp_path, run_pytest, recorded):
    # Issue 46, 3: a hand-edited file whose figures accept anything (1e5 ms, 9.99e17 operators), and an
    # entry for a case that does not exist, passed silently, under --perfguard-strict too.
    copy_of(recorded, tmp_path)
    (baseline_path,) = store.list_files(tmp_path / "baselines")
    slug = baseline_path.stem
    accepted = tmp_path / "baselines" / "accepted-changes.json"

    def write(*entries: tuple[str, str, float, float]) -> None:
        changes = [{"baseline": baseline, "case_id": case, "device": slug, "figure": figure, "metric": metric,
                    "reason": "edited"} for case, metric, figure, baseline in entries]
        accepted.write_text(json.dumps({"changes": changes, "schema_version": 1}))

    ghost = ("ghost[n=1]", "gpu_time", 30.0, 20.0)
    write((CHANGED, "gpu_time", 1e5, 20.001), (CHANGED, "aten_ops", 9.99e17, 5.0), ghost)
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    gate = run_pytest(tmp_path, *MEASURE)
    text = "\n".join(gate.outlines)
    assert gate.ret == 1 and f"{CHANGED}: host_time regressed: " in text, text[-3000:]
    refused = (f"not accepted: baselines/accepted-changes.json: the entry for the gpu_time of '{CHANGED}' on {slug} "
               "accepts 100.0 s, more than 10× the baseline's 20.00 ms (at most 200.0 ms): refused, it accepts nothing; ")
    assert f"{CHANGED}: {refused}" in text and f"perfguard: {refused}" in text  # in its failure, and at the run's end
    assert (f"the entry for the aten_ops of '{CHANGED}' on {slug} accepts 999,000,000,000,000,000, more than 10× the "
            "baseline's 5 (at most 50): refused") in text
    unmeasured = (f"baselines/accepted-changes.json: 1 entry for a case this run did not measure (removed, renamed, "
                  f"skipped or not selected), accepting nothing: gpu_time of 'ghost[n=1]' on {slug}; remove the entries "
                  "of cases that are gone")
    assert f"perfguard: {unmeasured}" in gate.outlines
    # Nor does an entry past its bound start the case's new series on main's update, as a reviewed one does.
    before = store.load_file(baseline_path).cases[CHANGED]
    update = run_pytest(tmp_path, *MEASURE, "--perfguard-update")
    assert f"perfguard: {CHANGED}: the run of " in "\n".join(update.outlines), update.outlines[-20:]
    assert store.load_file(baseline_path).cases[CHANGED] == before
    # The entry for a case that is not there fails a strict run, on its line.
    (tmp_path / "change.json").unlink()
    write(ghost)
    loose = run_pytest(tmp_path, *MEASURE)
    assert loose.ret == 0 and f"perfguard: {unmeasured}" in loose.outlines, loose.outlines[-20:]
    strict = run_pytest(tmp_path, *MEASURE, "--perfguard-strict")
    assert strict.ret == 1 and f"perfguard: strict: {unmeasured}" in strict.outlines, strict.outlines[-20:]
    assert "perfguard: strict: the 1 line(s) above fail this run" in strict.outlines


def test_an_acceptance_covers_its_figure_and_no_more():
    from perfguard.analysis.acceptance import apply
    from perfguard.model import AcceptedChange, Acceptances, Noise, TimeEvidence, Verdict
    from perfguard.report import words

    accepted = Acceptances((AcceptedChange("mm", "kernels", "cpu-x", 6.0, 5.0, "fused"),
                            AcceptedChange("mm", "gpu_time", "cpu-x", 2.0, 1.0, "fused")))
    kernels = [Verdict("mm", "kernels", "regressed", 5.0, n, None, 0.0, None, reason="grew") for n in (6.0, 7.0)]
    noise = TimeEvidence(noise=Noise(runs=5, spread_pct=1.0, tolerance_pct=5.0, detectable_pct=6.6))
    times = [Verdict("mm", "gpu_time", "regressed", 1.0, ms, None, 1.0, None, reason="outside", time=noise)
             for ms in (2.09, 2.2)]
    applied = apply([*kernels, *times], accepted, {"mm": "cpu-x"}, "b/accepted-changes.json")
    marked = applied.verdicts
    assert [v.status for v in marked] == ["accepted", "regressed", "accepted", "regressed"]
    assert marked[0].accepted_reason == "fused" and not applied.spent and not applied.refused
    # Each line says the most its entry accepts (a time: its tolerance above the figure) and the file.
    assert [v.accepted_ceiling for v in marked] == [6.0, 6.0, pytest.approx(2.1), pytest.approx(2.1)]
    assert words.line(marked[2]).endswith("; accepted up to 2.100 ms by b/accepted-changes.json: 'fused'")
    assert words.line(marked[3]).endswith("; more than the 2.100 ms that b/accepted-changes.json accepts")
    other_card = apply(kernels, accepted, {"mm": "nvidia-h200"}, "b/accepted-changes.json")  # for the device it names
    assert [v.status for v in other_card.verdicts] == ["regressed", "regressed"]


# (metric, the baseline's figure, the most an entry may accept: 10x it, a count or size of 0 from 1 or 64 KiB)
BOUNDS = [("gpu_time", 20.0, 200.0), ("peak_memory", 2.0**20, 10 * 2.0**20), ("kernels", 0.0, 10.0),
          ("copy_bytes", 0.0, 640 * 1024.0), ("retained_memory", 0.0, 640 * 1024.0)]


@pytest.mark.parametrize(("metric", "baseline", "most"), BOUNDS)
@pytest.mark.parametrize("past", [1.0001, 5e3, None])  # a little past the bound, far past, 9.99e17 (a hand edit)
def test_an_entry_far_past_the_baselines_figure_accepts_nothing_and_is_named(metric, baseline, most, past):
    # Issue 46, 3: `"figure": 1e5` (or 9.99e17) accepted any regression, silently. Now an entry accepts at
    # most 10x the figure its verdict was judged against; past it, the regression stays one, and the
    # entry is named with the file and the bound, whatever the verdict (it would lie in wait).
    from perfguard.analysis.judgement import judge
    from perfguard.model import AcceptedChange, Acceptances, CaseResult, Verdict
    from perfguard.report import steps

    figure = 9.99e17 if past is None else most * past
    accepted = Acceptances((AcceptedChange("mm", metric, "cpu-x", figure, baseline, "fused"),))
    case = CaseResult(id="mm", name="mm", status="ok", device="cpu-x")
    regressed = Verdict("mm", metric, "regressed", baseline, most, None, 5.0, "b/cpu-x.json", reason="grew")
    judged = judge([case], [regressed], accepted)
    assert [v.status for v in judged.failing] == ["regressed"] and judged.verdicts[0].accepted_ceiling is None
    (refused,) = judged.refused
    assert (refused.change.figure, refused.baseline, refused.bound) == (figure, baseline, pytest.approx(most))
    line = steps.refused_line(refused, "b/accepted-changes.json")
    assert line.startswith(f"b/accepted-changes.json: the entry for the {metric} of 'mm' on cpu-x accepts ")
    assert f", more than 10× the baseline's {steps.amount(metric, baseline)} (at most {steps.amount(metric, most)}): " \
           "refused, it accepts nothing; " in line
    same = judge([case], [dataclasses.replace(regressed, status="same", current=baseline)], accepted)
    assert [r.change for r in same.refused] == [accepted.changes[0]]
    # At the bound itself, the entry accepts what it says.
    at = Acceptances((AcceptedChange("mm", metric, "cpu-x", most, baseline, "fused"),))
    assert judge([case], [regressed], at).verdicts[0].status == "accepted"


def test_every_printed_command_keeps_the_runs_own_folders(tmp_path, run_pytest, recorded):
    # Issue 29, 7: with --perfguard-baselines=nope, the advice was `pytest --perfguard --perfguard-update`,
    # which records into baselines/ and leaves nope/ as it was. Every command printed names nope/.
    shutil.copy(recorded / "conftest.py", tmp_path)
    shutil.copy(recorded / "test_ops.py", tmp_path)
    folders = ("--perfguard-baselines=nope", "--perfguard-report=out")
    new = "\n".join(run_pytest(tmp_path, *MEASURE, *folders).outlines)
    commands = re.findall(r"`(pytest [^`]+|perfguard [^`]+)`", new)
    assert commands and all("--perfguard-baselines=nope" in c or "--baselines=nope" in c for c in commands), commands
    # The recorded two runs a case, and a third that the update writes into nope/.
    shutil.copytree(recorded / "baselines", tmp_path / "nope")
    assert run_pytest(tmp_path, *MEASURE, *folders, "--perfguard-update").ret == 0
    (path,) = store.list_files(tmp_path / "nope")
    assert len(store.load_file(path).cases[CHANGED].runs) == 3 and not (tmp_path / "baselines").exists()
    (tmp_path / "change.json").write_text(json.dumps({"matmul": True}))
    failed = "\n".join(run_pytest(tmp_path, *MEASURE, *folders).outlines)
    (accept,) = set(ACCEPT.findall(failed))
    assert accept == f"perfguard baseline accept out/perfguard.json --case '{CHANGED}' --baselines=nope"
    assert perfguard_command(accept, tmp_path).returncode == 0
    assert run_pytest(tmp_path, *MEASURE, *folders).ret == 0
