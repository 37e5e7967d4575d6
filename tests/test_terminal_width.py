"""The terminal table fits the terminal: no row wraps at 80 or 100 columns, a wider one shows more; every
other line of the run's end is wrapped to the width, never inside a command in backticks."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from perfguard import store
from perfguard.analysis import verdict
from perfguard.analysis.metrics import complete
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, Metrics, RunRecord, dumps
from perfguard.report.fitting import KEPT, wrap
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


# A line may be longer than the width only when it is one thing that is not broken: its indent, then a
# word or a command in backticks (with what is glued to it, "`...`;").
UNBROKEN = re.compile(r" *(?:`[^`]*`|[^\s`])+")


def too_wide(lines: list[str], width: int) -> list[str]:
    return [line for line in lines if len(line) > width and not UNBROKEN.fullmatch(line)]


ACCEPT = "`perfguard baseline accept reports/perfguard.json --case 'add[n=1]'`"


@pytest.mark.parametrize(("line", "width", "lines"), [
    ("verdicts: 0 regressed", 80, ["verdicts: 0 regressed"]),
    # A command that does not fit after the words goes to the next line whole.
    (f"perfguard: to accept these changes into the baseline: {ACCEPT}", 80,
     ["perfguard: to accept these changes into the baseline:", f"  {ACCEPT}"]),
    # Longer than the width, it stands alone, unbroken; what is glued to it stays with it.
    (f"a: regressed; accept it: {ACCEPT}; or rerun", 40, ["a: regressed; accept it:", f"  {ACCEPT};", "  or rerun"]),
    # Continuation lines are indented past the line's own indent.
    ("  where: aten::mm 2.342 ms → 5.374 ms (+129%, 18% of the change); 38 more moved", 40,
     ["  where: aten::mm 2.342 ms → 5.374 ms", "    (+129%, 18% of the change); 38 more", "    moved"]),
    # A word longer than the width is not cut.
    ("#1 = " + "x" * 50 + " tail", 20, ["#1 =", "  " + "x" * 50, "  tail"]),
    # The spaces inside a line (a status padded to a column) are kept where it is not broken.
    ("same       add: gpu_time same", 80, ["same       add: gpu_time same"]),
])
def test_a_line_wraps_at_spaces_and_never_inside_a_command(line, width, lines):
    assert wrap(line, width) == lines
    assert not too_wide(lines, width)


def words_from(lines: list[str], start: str) -> list[str]:
    """The words of `lines` from the first that starts with `start`: what they say, however wrapped."""
    first = next(n for n, line in enumerate(lines) if line.startswith(start))
    return " ".join(lines[first:]).split()


@pytest.mark.parametrize("kind", ["h200", "cpu"])
def test_at_80_columns_show_and_compare_wrap_every_line_and_say_the_same(runs, kind, tmp_path, monkeypatch, capsys):
    """Issue 47, item 11: the lines under the table ran to 414 characters at 80 columns."""
    path = tmp_path / "run.json"
    path.write_text(dumps(runs[kind]))
    for argv, start in ((["show", str(path)], f"{len(runs[kind].verdicts)} verdicts"),
                        (["compare", str(path), str(path)], "")):
        said = {}
        for width in (80, 1000):
            monkeypatch.setenv("COLUMNS", str(width))
            main(argv)
            said[width] = capsys.readouterr().out.splitlines()
        assert max(map(len, said[1000])) > 80, argv  # there was something to wrap
        assert not too_wide(said[80], 80), argv
        assert words_from(said[80], start) == words_from(said[1000], start), argv
