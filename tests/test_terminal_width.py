"""The terminal table fits the terminal: no row wraps at 80 or 100 columns, a wider one shows more."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfguard import store
from perfguard.analysis import verdict
from perfguard.analysis.metrics import complete
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, Metrics, RunRecord, dumps
from perfguard.report.fitting import KEPT
from perfguard.report.terminal import COLUMNS, table

COMMITTED = Path(__file__).parents[1] / "baselines" / "nvidia-h200.json"
CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654", torch="2.13.0")
# Blank in every row of a CPU run: GPU figures, and the caller's time (the host clock's is the median).
CPU_BLANK = {"caller", "caller Δ", "GPU idle", "% peak BW", "TFLOP/s", "bound", "peak mem", "footprint", "kernels/syncs"}


def h200_run() -> RunRecord:
    """The committed H200 baseline's cases as a run from a card new to it, with the gate's verdicts."""
    baseline = store.load_file(COMMITTED)
    device = baseline.calibrated()
    # With the derived figures a run's record has and a baseline does not keep.
    results = [complete(dataclasses.replace(e.result, device_uuid="GPU-new"), device) for e in baseline.cases.values()]
    verdicts = tuple(verdict.compare_to_baseline(results, baseline, baseline_file=str(COMMITTED)))
    return RunRecord("2026-12-01T00:00:00+00:00", "0.1.0", devices=(baseline.device,), results=tuple(results),
                     verdicts=verdicts)


def cpu_run() -> RunRecord:
    """A CPU run of a parameter grid, judged against a run of its own: the GPU columns n/a in every row."""
    def case(n: int, slower: float) -> CaseResult:
        xs = [0.01 * n * slower * (1 + 0.01 * (i % 7)) for i in range(40)]
        return CaseResult(id=f"layer_norm[batch=64-hidden={n}-dtype=float32-elementwise_affine=True]", name="layer_norm",
                          status="ok", device=CPU.slug, timer="host-clock", timings={"gpu_time": timing(xs)},
                          bytes=8 * n, metrics=Metrics(gbps=1.5 * n))
    base = [case(2**k, 1.0) for k in range(8, 14)]
    head = [case(2**k, 1.3 if k == 10 else 1.0) for k in range(8, 14)]
    verdicts = verdict.compare_records(RunRecord("2026-11-30T00:00:00+00:00", "0.1.0", devices=(CPU,), results=tuple(base)),
                                       RunRecord("2026-12-01T00:00:00+00:00", "0.1.0", devices=(CPU,), results=tuple(head)))
    return RunRecord("2026-12-01T00:00:00+00:00", "0.1.0", devices=(CPU,), results=tuple(head), verdicts=tuple(verdicts))


def split(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The table's header cells, its lines (header and rows) and the legend of shortened ids."""
    body = [line for line in lines if not line.startswith(("device: ", "#"))]
    header = [cell for cell in body[0].split("  ") if cell]
    return [c.strip() for c in header], body, [line for line in lines if line.startswith("#")]


@pytest.fixture(scope="module")
def runs() -> dict[str, RunRecord]:
    return {"h200": h200_run(), "cpu": cpu_run()}


@pytest.mark.parametrize("kind", ["h200", "cpu"])
@pytest.mark.parametrize("width", [80, 100])
def test_at_80_and_100_columns_no_row_wraps_and_the_verdicts_figures_stay(runs, kind, width):
    run = runs[kind]
    header, body, legend = split(table(run.results, run.devices, run.verdicts, width=width))
    assert max(map(len, body)) <= width
    assert len(body) == 1 + len(run.results)
    assert header[:3] == ["case", "verdict", "median"] and {"change", "detects"} <= set(header)
    for case_id in {r.id for r in run.results}:  # every id is whole in the table or in its legend
        assert any(line.startswith(case_id + " ") for line in body) or f"= {case_id}" in [line[line.index("="):] for line in legend]


@pytest.mark.parametrize("kind", ["h200", "cpu"])
def test_a_wide_terminal_shows_every_column_that_says_something(runs, kind):
    run = runs[kind]
    header, body, legend = split(table(run.results, run.devices, run.verdicts, width=400))
    assert not legend
    blank = CPU_BLANK if kind == "cpu" else set()
    assert set(header) == set(COLUMNS) - blank
    narrow, *_ = split(table(run.results, run.devices, run.verdicts, width=80))
    assert len(header) > len(narrow) and set(KEPT) <= set(narrow)


def test_a_cpu_runs_table_leaves_out_the_columns_that_are_na_in_every_row(runs):
    run = runs["cpu"]
    header, body, _ = split(table(run.results, run.devices, run.verdicts, width=400))
    assert not CPU_BLANK & set(header)
    assert "GB/s" in header and "±CI" in header


def test_perfguard_show_reads_the_width_from_columns(runs, tmp_path, monkeypatch, capsys):
    path = tmp_path / "run.json"
    path.write_text(dumps(runs["h200"]))
    for width in (80, 100):
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["show", str(path)]) == 0
        lines = capsys.readouterr().out.splitlines()
        _, body, _ = split(lines[: 2 + len(runs["h200"].results)])
        assert max(map(len, body)) <= width
