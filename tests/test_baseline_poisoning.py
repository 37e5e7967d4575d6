"""One bad run or runner cannot switch the gate off: `perfguard baseline accept` and `merge` on real files.

Four good records of a memory-bound case from four H200 runners (their medians 0.3% apart, as the
H200's are) make the good baseline; each poisoning adds one bad thing to them: a runner twice as
slow, a run disturbed by 40%, a record dated in the future, one that was interrupted, one record
given five times. Each must leave the case's smallest detectable change (on a card the baseline has
not seen) within 1.5 times the good runs' figure, and say what it left out in one line.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from perfguard import store
from perfguard.analysis import noise
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, Metrics, RunRecord, dumps

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", driver="580.159.04", torch="2.11.0")
CASE = "copy[n=67108864]"
GOOD = (1.000, 1.003, 0.997, 1.002)  # the four good runners' medians, ms


def result(median_ms: float, card: str) -> CaseResult:
    samples = tuple(float(x) for x in median_ms * np.random.default_rng(7).lognormal(0.0, 0.001, 200))
    return CaseResult(id=CASE, name="copy", status="ok", device=H200.slug, device_uuid=card, timer="cuda-events",
                      regime="device", timings={"gpu_time": timing(samples)}, metrics=Metrics(bound="memory"))


def record(folder: Path, name: str, median_ms: float, runner: int, day: int, **fields) -> str:
    card = f"GPU-{runner}"
    device = dataclasses.replace(H200, uuid=card, host=f"runner-{runner}")
    run = RunRecord(created_at=fields.pop("created_at", f"2026-11-{day:02d}T12:00:00+00:00"), perfguard_version="0.1.0",
                    devices=(device,), results=(result(median_ms, card),), commit="abc", **fields)
    path = folder / name
    path.write_text(dumps(run))
    return str(path)


@pytest.fixture
def good(tmp_path) -> list[str]:
    return [record(tmp_path, f"good{i}.json", m, i, 10 + i) for i, m in enumerate(GOOD, 1)]


def accept(folder: Path, capsys, *paths: str, extra: tuple[str, ...] = ()) -> tuple[float, list[str]]:
    """Accept `paths` into a fresh baseline folder: the case's detectable change on a new card, and the lines said."""
    assert main(["baseline", "accept", *paths, "--baselines", str(folder), *extra]) == 0
    return detectable(folder), capsys.readouterr().out.splitlines()


def detectable(folder: Path) -> float:
    entry = store.load(folder, H200).cases[CASE]
    est = noise.estimate(result(1.0, "GPU-new"), entry, 1.0, host="runner-new")
    return est.detectable_pct


@pytest.fixture
def good_figure(tmp_path, good, capsys) -> float:
    figure, _ = accept(tmp_path / "good", capsys, *good)
    assert figure < 10.0  # a tight case: the poisonings below would widen it many times over
    return figure


def test_a_runner_twice_as_slow_is_left_out_and_named(tmp_path, good, good_figure, capsys):
    slow = record(tmp_path, "slow.json", 2.0, 5, 15)
    figure, lines = accept(tmp_path / "b", capsys, *good, slow)
    assert figure <= 1.5 * good_figure
    (line,) = [line for line in lines if "left out" in line]
    assert line.startswith(f"{CASE}: gpu_time the run of 2026-11-15T12:00:00+00:00 on 'GPU-5' (+")
    assert line.endswith(f"from {slow}, left out: far from the others")
    assert len(store.load(tmp_path / "b", H200).cases[CASE].runs) == 4


def test_without_the_robust_spread_the_slow_runner_would_widen_the_tolerance(tmp_path, good, good_figure, capsys, monkeypatch):
    # The defence above, switched off: the same five records widen the detectable change many times.
    monkeypatch.setattr(noise, "far_runs", lambda *args, **kwargs: set())
    figure, _ = accept(tmp_path / "b", capsys, *good, record(tmp_path, "slow.json", 2.0, 5, 15))
    assert figure > 5 * good_figure


def test_a_disturbed_run_is_left_out_in_a_batch_and_not_added_to_a_series(tmp_path, good, good_figure, capsys):
    disturbed = record(tmp_path, "disturbed.json", 1.4, 2, 16)  # runner 2 again, 40% slow this once
    figure, lines = accept(tmp_path / "b", capsys, *good, disturbed)
    assert figure <= 1.5 * good_figure and sum("left out: far from the others" in line for line in lines) == 1
    # Accepted later, on its own, into the good baseline: outside the case's tolerance, so not added.
    figure, lines = accept(tmp_path / "good", capsys, disturbed)
    assert figure == pytest.approx(good_figure)
    (line,) = [line for line in lines if line.startswith(f"{CASE}: ")]
    assert f"from {disturbed} not added: gpu_time +39.9% from the centre of the fleet's 4 runs on 4 cards" in line
    assert line.endswith(f"if the change is intended, name it: `perfguard baseline accept {disturbed} --case '{CASE}' "
                         f"--baselines={tmp_path / 'good'}`")


def test_a_record_dated_in_the_future_is_refused(tmp_path, good, good_figure, capsys):
    future = record(tmp_path, "future.json", 2.0, 5, 1, created_at="2099-01-01T00:00:00+00:00")
    figure, lines = accept(tmp_path / "b", capsys, *good, future)
    assert figure <= 1.5 * good_figure
    assert f"refused {future}: dated '2099-01-01T00:00:00+00:00', in the future: check the clock of the machine that wrote it" in lines


def test_an_interrupted_record_is_refused(tmp_path, good, good_figure, capsys):
    interrupted = record(tmp_path, "interrupted.json", 2.0, 5, 15, status="interrupted")
    figure, lines = accept(tmp_path / "b", capsys, *good, interrupted)
    assert figure <= 1.5 * good_figure
    assert any(line.startswith(f"refused {interrupted}: its status is 'interrupted', not complete") for line in lines)


def test_one_record_given_five_times_counts_once(tmp_path, good, good_figure, capsys):
    figure, lines = accept(tmp_path / "b", capsys, *good[:3], *[good[3]] * 5)
    assert figure == pytest.approx(good_figure)
    assert sum(line == f"refused {good[3]}: the same run as {good[3]} (the same samples, whatever its date, commit, host "
               "or card say): counted once" for line in lines) == 4
    # Given again later: already in the series, counted once.
    figure, lines = accept(tmp_path / "b", capsys, good[3])
    assert figure == pytest.approx(good_figure) and len(store.load(tmp_path / "b", H200).cases[CASE].runs) == 4
    assert any("is in the series already (the same figures, whatever its date, host or card say): counted once" in line
               for line in lines)


def test_merging_a_slow_runners_file_leaves_its_run_out(tmp_path, good, good_figure, capsys):
    accept(tmp_path / "slow", capsys, record(tmp_path, "slow.json", 2.0, 5, 15))
    accept(tmp_path / "future", capsys, record(tmp_path, "future.json", 1.001, 6, 1))  # not good1's figures: another run
    dated = store.load(tmp_path / "future", H200)  # then dated ahead by hand: accept would have refused it
    entry = dated.cases[CASE]
    entry = dataclasses.replace(entry, runs=tuple(dataclasses.replace(r, recorded_at="2099-01-01T00:00:00+00:00") for r in entry.runs))
    store.path_for(tmp_path / "future", H200.slug).write_text(dumps(dataclasses.replace(dated, cases={CASE: entry})))
    others = [str(tmp_path / folder / "nvidia-h200.json") for folder in ("slow", "future")]
    assert main(["baseline", "merge", *others, "--baselines", str(tmp_path / "good")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert detectable(tmp_path / "good") <= 1.5 * good_figure
    assert any("'GPU-5'" in line and f"from {others[0]}, left out: far from the others" in line for line in lines), lines
    assert f"{CASE}: the run of '2099-01-01T00:00:00+00:00' in {others[1]} left out: dated in the future" in lines


def test_a_busy_time_the_gate_does_not_judge_does_not_keep_a_good_run_out(tmp_path, good, capsys):
    # layer_norm on one H200: its event time steady, its busy time (5 profiled calls) 351 or 380 µs by
    # process. In the device regime the gate judges the event time alone, and so does the update,
    # whatever the busy time's own tolerance (tight here: 500 kernels a call).
    def with_busy(path: str, busy_ms: float, regime: str) -> str:
        from perfguard.model import Counters, loads_record

        run = loads_record(Path(path).read_text(), path)
        busy = timing(tuple(busy_ms * (1 + 0.001 * i) for i in range(5)), "counted")
        (r,) = run.results
        counted = dataclasses.replace(r, regime=regime, timings={**r.timings, "busy_time": busy},
                                      counters=Counters(calls=5, kernels={"copy": 500.0}, device=True))
        Path(path).write_text(dumps(dataclasses.replace(run, results=(counted,))))
        return path

    goods = [with_busy(p, 0.351, "device") for p in good]
    jumped = with_busy(record(tmp_path, "jumped.json", 1.001, 2, 16), 0.380, "device")
    _, lines = accept(tmp_path / "b", capsys, *goods, extra=())
    _, lines = accept(tmp_path / "b", capsys, jumped)
    assert not [line for line in lines if "not added" in line]
    assert len(store.load(tmp_path / "b", H200).cases[CASE].runs) == 5
    # Host-bound, the busy time is judged, and a run far outside it is refused (one line).
    host_bound = [with_busy(p, 0.351, "enqueue-bound") for p in good]
    far = with_busy(record(tmp_path, "far.json", 1.001, 2, 17), 0.380, "enqueue-bound")
    accept(tmp_path / "c", capsys, *host_bound)
    _, lines = accept(tmp_path / "c", capsys, far)
    (line,) = [line for line in lines if "not added" in line]
    assert "not added: busy_time +8.3% from the centre of the fleet's 4 runs" in line
