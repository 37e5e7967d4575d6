"""`perfguard baseline show` prints what the gate judges a run against: the same centre, spread and tolerance."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from perfguard import store, units
from perfguard.analysis import verdict
from perfguard.cli import main
from perfguard.model import BaselineEntry, Verdict, dumps

COMMITTED = Path(__file__).parents[1] / "baselines" / "nvidia-h200.json"
NEW_CARD = "GPU-00000000-a-card-new-to-the-baseline"


def shown(capsys, folder: Path, *args: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    """`baseline show`'s table, case -> column -> cell, and all its lines."""
    assert main(["baseline", "show", "--baselines", str(folder), *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["case", "time"])
    header = re.split(r"\s{2,}", lines[start].strip())
    rows = {}
    for line in lines[start + 1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(header):
            break
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows, lines


def cpu_file(folder: Path) -> None:
    """A CPU's baseline of one case, `add`, in `folder`: its judged time is its host clock's (cpu-a.json)."""
    from perfguard.analysis.stats import timing
    from perfguard.model import CaseResult, DeviceInfo

    cpu = DeviceInfo(kind="cpu", name="a cpu", slug="cpu-a", host="h")
    add = CaseResult(id="add", name="add", status="ok", device=cpu.slug, timer="host-clock", regime="host-clock",
                     timings={"gpu_time": timing([1.0 + 0.001 * i for i in range(20)])})
    store.update(folder, cpu, [add], commit=None, recorded_at="2026-11-29T00:00:00+00:00")


def gate(entry: BaselineEntry, card: str, threshold: float = verdict.DEFAULT_THRESHOLD_PCT) -> Verdict:
    """The gate's own verdict of the judged time for a run of the case, as the baseline last measured it, from `card`."""
    run = dataclasses.replace(entry.result, device_uuid=card)
    (judged,) = [v for v in verdict.compare_case(run, entry, threshold_pct=threshold) if v.metric == run.judged_metric]
    return judged


def agree(row: dict[str, str], v: Verdict) -> None:
    assert row["centre"] == units.precise_duration(v.baseline), v.case_id
    assert row["spread"] == f"±{v.noise.spread_pct:.2f}%", v.case_id
    assert row["tolerance"] == f"±{v.tolerance_pct:.1f}%" and row["detects"] == f"{v.detectable_pct:.1f}%", v.case_id
    assert row["runs"].startswith(f"{v.noise.runs}/"), v.case_id


def test_for_every_committed_case_show_prints_the_centre_and_spread_the_gate_judges_a_new_card_by(capsys):
    baseline = store.load_file(COMMITTED)
    rows, lines = shown(capsys, COMMITTED.parent, "--device", "nvidia-h200")
    assert sorted(rows) == sorted(baseline.cases) and len(rows) > 100
    assert any("a run from a card not in the baseline" in line for line in lines)
    for case_id, entry in baseline.cases.items():
        v = gate(entry, NEW_CARD)
        assert v.noise.judged_by == "fleet"
        agree(rows[case_id], v)


def test_with_a_card_show_prints_what_its_own_runs_judge_and_names_each_runs_card(capsys):
    baseline = store.load_file(COMMITTED)
    card = next(r.device_uuid for e in baseline.cases.values() for r in e.runs if r.device_uuid)
    rows, lines = shown(capsys, COMMITTED.parent, "--device", "nvidia-h200", "--card", card[4:12], "--threshold", "2")
    own = 0
    for case_id, entry in baseline.cases.items():
        v = gate(entry, card, threshold=2.0)
        own += v.noise.judged_by == "own"
        agree(rows[case_id], v)
        assert rows[case_id]["judged by"].startswith("its own" if v.noise.judged_by == "own" else "fleet")
    assert own > 0  # the card has its own runs of some cases: those are judged by them alone
    (legend,) = [line for line in lines if card in line]
    letter = legend.split()[1]
    assert legend.strip().startswith(f"card {letter} = {card[4:12]} on host ")
    first = baseline.cases[sorted(baseline.cases)[0]]
    mine = sum(r.device_uuid == card for r in first.runs)
    assert f"{letter}×{mine}" in rows[sorted(baseline.cases)[0]]["runs by card"].split()


def test_show_names_a_run_the_gate_leaves_out_and_why(tmp_path, capsys):
    baseline = store.load_file(COMMITTED)
    case_id = "add[n=16777216-dtype=float32]"
    entry = baseline.cases[case_id]
    last = entry.runs[-1]
    times = {m: 3 * median for m, median in last.medians_ms.items()}  # a runner 3x slower
    slow = dataclasses.replace(last, medians_ms=times, recorded_at="2026-12-02T00:00:00+00:00")
    spoiled = dataclasses.replace(baseline, cases={case_id: dataclasses.replace(entry, runs=(*entry.runs, slow))})
    (tmp_path / COMMITTED.name).write_text(dumps(spoiled))
    rows, lines = shown(capsys, tmp_path)
    agree(rows[case_id], gate(spoiled.cases[case_id], NEW_CARD))
    assert rows[case_id]["runs"] == f"{len(entry.runs)}/{len(entry.runs) + 1}"
    (said,) = [line for line in lines if "left out" in line]
    assert said.strip().startswith(f"{case_id}: left out the run of 2026-12-02T00:00:00+00:00 on ")
    assert said.endswith("far from the others")


def test_show_of_a_card_no_run_came_from_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / COMMITTED.name).write_bytes(COMMITTED.read_bytes())
    cpu_file(tmp_path)
    # Over several files (a pool of two models), one line for the folder, not one per file that lacks the card.
    assert main(["baseline", "show", "--baselines", str(tmp_path), "--card", "not-a-card"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perfguard: no run of the baselines in {tmp_path} (cpu-a, nvidia-h200) comes from a card or "
                          "host 'not-a-card'")
    assert err.count("\n") == 1
    # A card is of one model: the file that holds it is shown, the other model's is not, and it is no error.
    card = next(r.device_uuid for e in store.load_file(COMMITTED).cases.values() for r in e.runs if r.device_uuid)
    assert main(["baseline", "show", "--baselines", str(tmp_path), "--card", card]) == 0
    out = capsys.readouterr()
    assert "nvidia-h200.json: NVIDIA H200" in out.out and "cpu-a" not in out.out and not out.err
    assert main(["baseline", "show", "--baselines", str(tmp_path), "--card", "h"]) == 0
    assert "cpu-a.json: a cpu" in capsys.readouterr().out
    # One file named: its own line.
    assert main(["baseline", "show", "--baselines", str(tmp_path), "--device", "nvidia-h200", "--card", "not-a-card"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfguard: no run of nvidia-h200's baseline comes from a card or host 'not-a-card'")
    assert err.count("\n") == 1


def test_show_names_each_cases_judged_time_by_what_measured_it(tmp_path, capsys):
    # Issue 47, item 3: a CPU's judged time is its host clock's time of a call ("host time"), though the file
    # keeps it under gpu_time as a GPU's is kept; a GPU's reads as before.
    cpu_file(tmp_path)
    assert shown(capsys, tmp_path)[0]["add"]["time"] == "host time"
    rows, _ = shown(capsys, COMMITTED.parent, "--device", "nvidia-h200")
    assert {e.result.regime for e in store.load_file(COMMITTED).cases.values()} == {"device", "enqueue-bound"}
    assert {row["time"] for row in rows.values()} == {"GPU time"}
