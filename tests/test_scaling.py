"""Scaling fits: latency and memory against a numeric parameter, and how far it fits on the card."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from perfguard.analysis.scaling import fit, largest_fitting, scalings
from perfguard.analysis.stats import timing
from perfguard.model import CaseResult, DeviceInfo, Memory, MemoryBreakdown, RunRecord
from perfguard.report.advice import scaling_line
from perfguard.report.html import render_html
from perfguard.report.markdown import render_markdown
from perfguard.report.terminal import summary

GIB = 2**30
GPU = DeviceInfo(kind="cuda", name="GPU", slug="gpu", memory_bytes=140 * GIB)


def result(name: str, ms: float, held: float | None = None, **params) -> CaseResult:
    memory = Memory(peak_allocated_bytes=int(held) - 10**6, setup_allocated_bytes=10**6) if held is not None else None
    case_id = f"{name}[{'-'.join(f'{k}={v}' for k, v in params.items())}]"
    return CaseResult(id=case_id, name=name, status="ok", device="gpu", params=params,
                      timings={"gpu_time": timing([ms] * 10)}, memory=memory)


@pytest.mark.parametrize(
    ("ys", "exponent", "constant"),
    [
        ([0.01 + 1e-7 * x**2 for x in (512, 1024, 2048, 4096)], 2.0, 0.01),  # a launch floor, then quadratic
        ([5e6 + 3000 * x for x in (512, 1024, 2048, 4096)], 1.0, 5e6),  # weights, then linear activations
        ([0.005] * 4, 0.0, 0.005),  # flat: nothing grows
    ],
)
def test_the_fit_separates_what_grows_from_what_does_not(ys, exponent, constant):
    growth = fit([512, 1024, 2048, 4096], ys)
    assert growth.exponent == pytest.approx(exponent, abs=0.06)
    assert growth.constant == pytest.approx(constant, rel=0.05)
    assert growth.r2 > 0.99


def test_noisy_quadratic_growth_reads_as_quadratic():
    noise = (1.02, 0.98, 1.01, 0.99, 1.0)
    xs = (1024, 2048, 4096, 8192, 16384)
    growth = fit(xs, [(2e8 + 64 * x * x) * e for x, e in zip(xs, noise)])
    assert growth.label == "quadratic"


def test_the_largest_fitting_value_solves_the_fitted_memory_for_the_device():
    growth = fit([1024, 2048, 4096, 8192], [GIB + 1000 * s * s for s in (1024, 2048, 4096, 8192)])
    top = largest_fitting(growth, 140 * GIB)
    assert top == pytest.approx(((140 - 1) * GIB / 1000) ** 0.5, rel=0.02)  # about 12,200
    assert largest_fitting(growth, GIB // 2) is None  # not even the constant fits
    assert largest_fitting(None, 140 * GIB) is None


def test_series_hold_the_other_parameters_fixed_and_need_three_values():
    results = [result("attn", 0.1 * s * s / 1e6, GIB + 1000 * s * s, s=s, dtype=dt)
               for s in (1024, 2048, 4096) for dt in ("bf16", "fp16")]
    results.append(result("attn", 1.0, GIB, s=1024, dtype="fp32"))  # one point: no series
    results.append(dataclasses.replace(result("attn", 9.0, s=8192, dtype="bf16"), status="error"))  # not measured
    results.append(result("flag", 1.0, flag=True))  # booleans are not sizes
    found = scalings(results, [GPU])
    assert [(s.parameter, s.fixed) for s in found] == [("s", (("dtype", "bf16"),)), ("s", (("dtype", "fp16"),))]
    series = found[0]
    assert series.values == (1024, 2048, 4096)
    assert series.memory.label == "quadratic" and series.time.label == "quadratic"
    assert series.bytes_per_unit == pytest.approx(1000 * (4096**2 - 2048**2) / 2048)
    line = scaling_line(series)
    assert line.startswith("attn over s (dtype=bf16): time quadratic in s")
    assert "memory quadratic" in line and "fits in device memory up to s ≈ 12,000" in line


MIB = 2**20


def footprint_step(batch: int, footprint: float) -> CaseResult:
    """A training step measured with its footprint; its setup and peak fields sum to something else,
    which the fit must not read."""
    memory = Memory(peak_allocated_bytes=MIB, setup_allocated_bytes=MIB, footprint_bytes=int(footprint))
    return dataclasses.replace(result("step", 0.5 * batch, batch=batch), memory=memory)


@pytest.mark.parametrize("offset", [0, 8e6, 500e6, 4 * GIB])
def test_a_constant_offset_plus_a_linear_term_reads_linear_with_its_slope_and_forecast(offset):
    # The nanoGPT sweep: linear at 4.4 MiB per unit of batch; a 4 GiB offset made the 5% flat
    # rule of the latency read it as constant (growth of 31 MiB at batch 8 is under 1% of 4 GiB).
    slope = 4.4 * MIB
    (series,) = scalings([footprint_step(b, offset + slope * b) for b in (1, 2, 4, 8)], [GPU])
    assert series.memory.label == "linear"
    assert series.memory.coefficient == pytest.approx(slope)
    assert series.memory.constant == pytest.approx(offset, abs=1)
    assert series.bytes_per_unit == pytest.approx(slope)
    assert series.fits_up_to == pytest.approx((140 * GIB - offset) / slope)
    assert "memory linear (k=1.00, R²=1.000); 4.4 MiB per unit of batch at the top" in scaling_line(series)


def test_memory_that_does_not_grow_by_a_mib_on_a_large_constant_is_flat():
    (series,) = scalings([footprint_step(b, 4 * GIB + 1024 * b) for b in (1, 2, 4, 8)], [GPU])
    assert series.memory.label == "constant" and series.fits_up_to is None


def test_a_training_step_on_a_floor_at_batch_1_reads_linear_from_batch_2():
    # nanoGPT's GPT-2 training step (H200, 2026-12-01, benchmarks/retained_memory.py): the footprint
    # is the larger of two phases' peaks; at batch 1 the one where nothing grows with the batch.
    footprints = [max(2071 * MIB, 1683 * MIB + 229.4 * MIB * b) for b in (1, 2, 4, 8)]
    (series,) = scalings([footprint_step(b, f) for b, f in zip((1, 2, 4, 8), footprints)], [GPU])
    assert series.memory.label == "linear" and series.memory_from == 2
    assert series.memory.coefficient == pytest.approx(229.4 * MIB)
    assert series.fits_up_to == pytest.approx((140 * GIB - 1683 * MIB) / (229.4 * MIB))
    assert "from batch=2 up (below it the call peaks where nothing grows with batch)" in scaling_line(series)
    # Fitted whole, it read x^1.30 and forecast batch ≈ 250 instead of ≈ 600.


def test_a_series_the_growth_law_does_not_describe_forecasts_nothing():
    # One point off in the middle of a linear sweep (67 MB more, as cuBLAS's workspaces once were).
    held = [18e6 + 4.4 * MIB * b for b in (1, 2, 4, 8, 16)]
    held[2] += 67e6
    (series,) = scalings([footprint_step(b, h) for b, h in zip((1, 2, 4, 8, 16), held)], [GPU])
    assert series.memory.r2 < 0.9 and series.memory_from is None
    assert series.fits_up_to is None
    line = scaling_line(series)
    assert "too poor a fit to forecast from" in line and "fits in device memory" not in line


def test_a_record_without_the_footprint_is_fitted_on_setup_plus_peak():
    (series,) = scalings([result("step", 0.5 * b, GIB + 4 * MIB * b, batch=b) for b in (1, 2, 4)], [GPU])
    assert series.memory.label == "linear" and series.bytes_per_unit == pytest.approx(4 * MIB)


def step(batch: int, activations: int, error: str | None = None) -> CaseResult:
    """A training step whose breakdown holds 1 GiB of weights and state and `activations` on top."""
    parts = MemoryBreakdown(parameters=GIB, activations=activations, error=error)
    return dataclasses.replace(result("step", 0.5 * batch, GIB + activations, batch=batch), memory_breakdown=parts)


def test_a_training_steps_activations_are_fitted_and_priced_per_unit_of_the_batch():
    mib = 2**20
    (series,) = scalings([step(b, 96 * mib * b) for b in (4, 8, 16)], [GPU])
    assert series.activations.label == "linear"
    assert series.activations_per_unit == pytest.approx(96 * mib)
    assert "activations linear, 96.0 MiB per unit of batch" in scaling_line(series)
    record = RunRecord("2026-11-29T00:00:00+00:00", "0", devices=(GPU,), results=tuple(step(b, 96 * mib * b) for b in (4, 8, 16)))
    assert "<td>linear, 96.0 MiB per unit of batch</td>" in render_html([record])
    # Quadratic growth is said as such, with no price per unit; a point without a breakdown drops the fit.
    (series,) = scalings([step(b, mib * b * b) for b in (4, 8, 16)], [GPU])
    assert series.activations.label == "quadratic" and series.activations_per_unit is None
    assert "activations quadratic (k=2.00)" in scaling_line(series)
    (series,) = scalings([step(4, mib), step(8, 2 * mib), step(16, 0, error="memory breakdown failed")], [GPU])
    assert series.activations is None and "activations" not in scaling_line(series)


def test_the_reports_show_the_fits():
    results = tuple(result("attn", 0.1 * s * s / 1e6, GIB + 1000 * s * s, s=s) for s in (1024, 2048, 4096))
    record = RunRecord("2026-11-29T00:00:00+00:00", "0", devices=(GPU,), results=results)
    html = render_html([record])
    assert "<td>attn over s</td><td>quadratic (k=2.00, R²=1.000)</td><td>quadratic (k=2.00, R²=1.000)</td>" in html
    assert '<details class="scaling" open>' in html  # a few fits are shown at once
    assert "### Scaling (1)" in render_markdown([record])


def test_many_fits_are_listed_nearest_to_filling_the_memory_first_and_cut_short_outside_the_html():
    # Eight series whose memory grows ever faster: op7 runs out first, op0 last.
    results = tuple(result(f"op{i}", 0.1 * s / 1e3, GIB + (i + 1) * 1e3 * s * s, s=s)
                    for i in range(8) for s in (1024, 2048, 4096))
    record = RunRecord("2026-11-29T00:00:00+00:00", "0", devices=(GPU,), results=results)
    order = [f"op{i} over s" for i in reversed(range(8))]

    lines = [line for line, _ in summary(results, [GPU], record) if line.startswith("scaling: ")]
    assert [line.split(":")[1].strip() for line in lines[:5]] == order[:5]
    assert lines[5:] == ["scaling: … and 3 more series in the HTML report"]

    markdown = render_markdown([record])
    assert "### Scaling (8)" in markdown and "- … and 3 more series in the HTML report" in markdown
    assert [name in markdown for name in order] == [True] * 5 + [False] * 3

    html = render_html([record])
    assert '<details class="scaling">' in html  # closed: eight rows would push the cases down the page
    positions = [html.index(f"<td>{name}</td>") for name in order]
    assert positions == sorted(positions)


SUITE = """
    import time
    from perfguard import perf_case

    @perf_case(params={"n": [1, 2, 4]})
    def nap(n, device):
        return lambda: time.sleep(0.002 * n)
"""


def test_a_measured_run_prints_the_fit_of_a_grid_over_a_size(tmp_path, run_pytest, fake_clock):
    # The sleeps are on the run's own clock (fake_clock.py): 2, 4 and 8 ms measure 2.001, 4.001 and
    # 8.001 ms whatever the machine's load, so the fit the run prints is always the same.
    (tmp_path / "conftest.py").write_text(fake_clock)
    (tmp_path / "test_naps.py").write_text(textwrap.dedent(SUITE))
    run = run_pytest(tmp_path, "--perfguard", "--perfguard-budget=0.2")
    assert run.ret == 0
    lines = [line for line in run.outlines if line.startswith("scaling: ")]
    assert lines == ["scaling: nap over n: time ~linear in n (k=1.00, R²=1.000)"]  # ~: a CPU's fits are rough


def test_a_series_that_only_shrinks_gets_no_line():
    results = [result("noisy", ms, s=s) for s, ms in ((64, 36.0), (128, 20.0), (256, 15.0))]
    assert scalings(results, [GPU]) == []
