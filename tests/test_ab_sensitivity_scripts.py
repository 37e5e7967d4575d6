"""The scripts behind issue 20's ab target, on the CPU (the benchmarks themselves need a GPU):
benchmarks/ab_sensitivity.py --tables, counting saved runs (constructed here) as the runs of three
device calls are counted, and benchmarks/work_scaling_probe.py, as a smoke run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from perfguard.model import Noise, RunRecord, TimeEvidence, Verdict, dumps

ROOT = Path(__file__).resolve().parents[1]


def script(name: str, *args: str, capsys) -> tuple[int, str, str]:
    """`python benchmarks/NAME.py ARGS` run in this process (torch is imported already): exit status, stdout, stderr."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "path", list(sys.path))  # a script puts the checkout first on the path; not for later tests
        mp.setattr(sys, "argv", [f"{name}.py", *args])
        spec = importlib.util.spec_from_file_location(f"benchmark_{name}", ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        try:
            status = module.main()
        except SystemExit as exc:  # sys.exit("message"): the message on stderr, status 1
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            status = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return status, out.out, out.err


def verdict(op: str, level: int, status: str, change: float, spread: float, rounds: int = 7) -> Verdict:
    reason = {"regressed": "outside", "improved": "outside", "same": "within"}.get(status, "blind")
    return Verdict(f"{op}[size=268435456-level={level}]", "gpu_time", status, 1.0, 1 + change / 100, change, 1.0, None,
                   reason=reason, time=TimeEvidence(noise=Noise(runs=rounds, spread_pct=spread, tolerance_pct=0.8,
                                                                detectable_pct=1.0), paired=True))


def save(folder: Path, n: int, verdicts: list[Verdict], wall_s: float) -> None:
    record = RunRecord(created_at="2026-12-01T00:00:00+00:00", perfguard_version="0.1.0", verdicts=tuple(verdicts),
                       options={"ab": {"rounds": 7, "wall_s": wall_s, "cases_per_round": [8, 8, 8]}})
    (folder / f"run-{n}").mkdir(parents=True)
    (folder / f"run-{n}" / "perfguard.json").write_text(dumps(record))


def test_runs_saved_by_two_invocations_are_counted_together_and_each_missed_one_percent_case_is_listed(tmp_path, capsys):
    save(tmp_path / "call-1", 0, [verdict("add", 0, "same", 0.1, 0.1), verdict("add", 1, "regressed", 1.1, 0.1, rounds=4),
                                  verdict("scale", 1, "same", 0.5, 0.13), verdict("add", 2, "regressed", 2.0, 0.3),
                                  verdict("gelu", 3, "regressed", 2.5, 0.1)], 326.0)
    save(tmp_path / "call-2", 0, [verdict("add", 0, "regressed", 1.5, 0.1), verdict("add", 1, "inconclusive", 0.9, 0.25),
                                  verdict("scale", 1, "regressed", 1.0, 0.15, rounds=5), verdict("add", 2, "regressed", 2.1, 0.1),
                                  verdict("gelu", 3, "regressed", 2.6, 0.1)], 540.0)
    status, stdout, stderr = script("ab_sensitivity", "--tables", str(tmp_path / "call-1"), str(tmp_path / "call-2"),
                                    capsys=capsys)
    assert status == 0, stderr
    rows = {line.split()[0]: line.split() for line in stdout.splitlines() if line.strip()[:1].isdigit()}
    # level 1: 2 of 4 caught; 2 of 3 where the spread is <= 0.2%, the three decided in 4, 7 and 5 rounds
    # (median 5); of those, the 2 that moved >= 0.9%: 2 of 2
    assert rows["1%"][1] == "4" and rows["1%"][5] == "2/4" and rows["1%"][6] == "2/3", stdout
    assert rows["1%"][7] == "5" and rows["1%"][8] == "2/2", stdout
    assert "A/A run 1: 0 false alarm(s); 326 s" in stdout
    assert "A/A run 2: 1 false alarm(s): add[size=268435456-level=0]; 540 s" in stdout
    assert "run 1: scale[size=268435456-level=1] same: measured +0.50%, spread 0.13%" in stdout
    assert "run 2: add[size=268435456-level=1] inconclusive: measured +0.90%, spread 0.25%" in stdout
    # each case's change in every run; * where every run moved under 0.9 of the level (gelu: 2.5, 2.6 < 2.7)
    listed = [line.strip().split("] ", 1) for line in stdout.splitlines() if line.startswith("  ") and "MiB] " in line]
    per_case = {case + "]": cells.strip() for case, cells in listed}
    assert per_case["add[256.0 MiB]"] == "0%: +0.10 +1.50    1%: +1.10 +0.90    2%: +2.00 +2.10", stdout
    assert per_case["scale[256.0 MiB]"] == "1%: +0.50 +1.00", stdout
    assert per_case["gelu[256.0 MiB]"] == "3%: +2.50 +2.60*", stdout


def test_a_folder_with_no_saved_run_is_one_line(tmp_path, capsys):
    status, _, stderr = script("ab_sensitivity", "--tables", str(tmp_path), capsys=capsys)
    assert status == 1 and stderr.strip() == f"{tmp_path}: no run-N/perfguard.json; give a folder that " \
        "benchmarks/ab_sensitivity.py --out wrote"


def test_the_work_scaling_probe_times_every_case_at_every_level_on_the_cpu(capsys):
    status, stdout, stderr = script("work_scaling_probe", "--device", "cpu", "--scale", "1e-3", "--sizes", "1",
                                    "--rounds", "3", "--reps", "2", capsys=capsys)
    assert status == 0, stderr
    rows = [line for line in stdout.splitlines() if "[" in line and "% work" not in line]
    assert [row.split("[")[0] for row in rows] == ["copy", "add", "gelu", "scale", "layer_norm", "softmax"], stdout
    assert all(row.count("%") == 3 for row in rows), stdout  # +1%, +2% and +3% work for each
    assert stdout.splitlines()[-1].startswith("moved >= 0.9 of the level: +1%: ") and "of 6" in stdout
