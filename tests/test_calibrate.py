"""`perfguard calibrate`: this card's roofs, measured once, stored with its baseline, used by later runs."""

from __future__ import annotations

import dataclasses
import json
import textwrap

import pytest

from perfguard import store
from perfguard.analysis.metrics import derive
from perfguard.cli import main
from perfguard.model import Calibration, DeviceInfo, loads_record

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", peak_bandwidth_gbps=4800.0,
                  peak_tflops={"bf16": 989.5, "fp32": 67.0})
CALIBRATION = Calibration(measured_at="2026-11-29T00:00:00+00:00", fingerprint={}, copy_gbps=4000.0,
                          copy_bytes=2**30, tflops={"bf16": 700.0, "fp32": 50.0}, matmul_n={"bf16": 8192, "fp32": 8192})

SUITE = """
    import time
    from perfguard import perf_case

    @perf_case(bytes=2_000_000)
    def nap(device):
        return lambda: time.sleep(0.002)
"""


def test_calibrated_roofs_place_the_case_and_flop_utilisation_stays_against_the_datasheet():
    device = CALIBRATION.apply_to(H200)
    # 8192³ bf16 in 2 ms: 549.8 TFLOP/s, at an intensity far over either ridge point.
    m = derive(2.0, 3 * 8192 * 8192 * 2, 2 * 8192**3, device, dtype="bfloat16")
    assert m.roofs == "calibrated" and m.bound == "compute"
    assert m.efficiency == pytest.approx(m.tflops / 700.0)
    assert m.flop_util == pytest.approx(m.tflops / 989.5)
    # A copy of 2 GB in 1 ms: 2000 GB/s, held to the calibrated 4000 and to the theoretical 4800.
    copy = derive(1.0, 2e9, None, device)
    assert (copy.efficiency, copy.copy_util, copy.bandwidth_util) == pytest.approx((0.5, 0.5, 2000 / 4800))
    plain = derive(1.0, 2e9, None, H200)
    assert (plain.roofs, plain.copy_util, plain.efficiency) == ("datasheet", None, pytest.approx(2000 / 4800))


def test_a_measured_result_comes_back_with_its_figures_against_the_roofs_of_the_device_it_is_handed():
    # measure/ derives the figures itself, the plugin adds none: against the calibrated copy where the
    # device it is handed carries one (the caller's BaselineFile.calibrated: measuring reads no baseline).
    import torch

    from perfguard import perf_case
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    nbytes = 2 * 4 * 2**16

    @perf_case(bytes=nbytes)
    def copy(device):
        src = torch.ones(2**16)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)

    (instance,) = copy.instances("cpu")
    plain = detect("cpu")
    for device, copy_gbps in ((plain, None), (CALIBRATION.apply_to(plain), CALIBRATION.copy_gbps)):
        result = runner.measure(instance, device, SamplingRule(budget_s=0.05))
        gbps = nbytes / result.judged_time.median_ms / 1e6
        assert result.metrics.gbps == pytest.approx(gbps)
        assert result.metrics.copy_util == (None if copy_gbps is None else pytest.approx(gbps / copy_gbps))


def test_a_calibration_survives_baseline_updates_and_an_update_keeps_it(tmp_path):
    from perfguard.analysis.stats import timing
    from perfguard.model import CaseResult

    samples = (1.0, 1.01, 1.02)  # a baseline keeps measurements: a median and the samples behind it
    result = CaseResult(id="nap", name="nap", status="ok", device="nvidia-h200", timings={"gpu_time": timing(samples)})
    store.update(tmp_path, H200, [result], commit=None, recorded_at="2026-11-29T12:00:00+00:00")
    store.calibrate(tmp_path, CALIBRATION.apply_to(H200), CALIBRATION)
    store.update(tmp_path, CALIBRATION.apply_to(H200), [dataclasses.replace(result, id="other", name="other")],
                 commit=None, recorded_at="2026-11-29T12:01:00+00:00")
    baseline = store.load(tmp_path, "nvidia-h200")
    assert baseline.calibration == CALIBRATION
    assert sorted(baseline.cases) == ["nap", "other"]
    # The roofs are stored once, in `calibration`, not copied into the device of the file.
    assert baseline.device.calibrated_bandwidth_gbps is None and baseline.device.calibrated_tflops is None


def test_calibrate_refuses_to_overwrite_a_corrupt_baseline(tmp_path):
    path = store.path_for(tmp_path, "nvidia-h200")
    path.write_text('{"cases": {', encoding="utf-8")
    with pytest.raises(Exception, match="not valid JSON"):
        store.calibrate(tmp_path, H200, CALIBRATION)
    assert path.read_text(encoding="utf-8") == '{"cases": {'


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory, run_pytest, write_baseline):
    """A CPU calibration stored beside a recorded case, then a measured run against both."""
    root = tmp_path_factory.mktemp("calibrate")
    (root / "test_suite.py").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    write_baseline(root, {"test_suite.py::nap": 200.0})  # far slower than the 2 ms nap: no load fails the run
    before = json.loads(next((root / "baselines").glob("*.json")).read_text(encoding="utf-8"))
    # `perfguard calibrate` in a process of its own (forked), with torch's threads left to perfguard.
    out = run_pytest(root, "calibrate", "--budget", "0.2", module="perfguard.cli", env={"OMP_NUM_THREADS": None})
    run = run_pytest(root, "--perfguard", "--perfguard-budget=0.2")
    return root, before, out, run


def test_calibrate_on_the_cpu_measures_copy_and_matmul_and_keeps_the_recorded_cases(calibrated, monkeypatch, capsys):
    root, before, out, _run = calibrated
    assert out.ret == 0, out.errlines
    said = "\n".join(out.outlines)
    assert "copy" in said and "matmul fp32" in said and "stored in baselines" in said
    # What a CPU's calibration is used for: copy_util, not a roofline it does not get.
    assert "a CPU gets no roofline" in said and "(copy_util)" in said and "places cases" not in said
    assert "with 1 torch thread(s)" in said  # as `pytest --perfguard` measures on a CPU
    after = json.loads(next((root / "baselines").glob("*.json")).read_text(encoding="utf-8"))
    assert after["cases"] == before["cases"]
    cal = after["calibration"]
    assert cal["copy_gbps"] > 0 and set(cal["tflops"]) == {"fp32", "fp64"} and min(cal["tflops"].values()) > 0
    monkeypatch.chdir(root)
    assert main(["baseline", "show"]) == 0
    shown = capsys.readouterr().out
    assert "calibrated" in shown and "copy" in shown


def test_a_run_after_calibration_carries_the_calibrated_roofs_in_its_record(calibrated):
    root, _before, _out, run = calibrated
    assert run.ret == 0, run.stdout
    record = loads_record((root / "reports" / "perfguard.json").read_text(encoding="utf-8"), "record")
    device = record.devices[0]
    stored = store.load(root / "baselines", device.slug).calibration
    assert device.calibrated_bandwidth_gbps == stored.copy_gbps
    assert device.calibrated_tflops == stored.tflops
    # A CPU has no roofline, but the achieved bandwidth is held to the calibrated copy.
    metrics = record.results[0].metrics
    assert metrics.copy_util == pytest.approx(metrics.gbps / stored.copy_gbps, rel=1e-4)  # both rounded to 6 digits


@pytest.mark.gpu
def test_calibrate_on_the_gpu_reaches_most_of_the_datasheet(tmp_path):
    from perfguard.measure.calibrate import calibrate
    from perfguard.measure.device import detect

    device = detect("cuda")
    calibration, _results = calibrate(device, "now", budget_s=1.0)
    assert 0.6 < calibration.copy_gbps / device.peak_bandwidth_gbps < 1.0
    assert set(calibration.tflops) == {"bf16", "fp16", "tf32", "fp32", "fp64"}
    if device.peak_tflops:
        for dtype, rate in calibration.tflops.items():
            assert 0.3 < rate / device.peak_tflops[dtype] < 1.15, (dtype, rate)
    # TF32 is faster than plain fp32: the flag reached the matmul.
    assert calibration.tflops["tf32"] > 1.5 * calibration.tflops["fp32"]
