"""The roofline per case (DESIGN §4): the table of published peaks, the bound, the attainable rate, efficiency.

Every expected figure is worked out by hand from the H200's datasheet peaks (989.5 TFLOP/s dense bf16,
67 fp32) and NVML's theoretical bandwidth of 4814 GB/s (DESIGN §8).
"""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from perfguard.analysis import peaks, roofline
from perfguard.analysis.metrics import derive
from perfguard.errors import BaselineError
from perfguard.model import CaseResult, DeviceInfo, Metrics, RunRecord, dumps, loads_record

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", peak_bandwidth_gbps=4814.0,
                  peak_tflops=peaks.lookup("NVIDIA H200").tflops())
CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654")
GIB = 2**30


# --- the table ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "model", "bf16", "bandwidth"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 989.5, 3350),
    ("NVIDIA H100", "H100 SXM5 80GB", 989.5, 3350),
    ("NVIDIA H100 PCIe", "H100 PCIe 80GB", 756.5, 2000),
    ("NVIDIA H200", "H200 SXM 141GB", 989.5, 4800),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", 312, 2039),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB", 312, 1555),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 312, 1935),
    ("NVIDIA L4", "L4 24GB", 121, 300),
    ("NVIDIA L40S", "L40S 48GB", 362.05, 864),
    ("NVIDIA B200", "B200 (HGX, 1000 W) 180GB", 2250, 7700),
])
def test_the_table_knows_gpus_by_the_name_torch_reports(name, model, bf16, bandwidth):
    device = DeviceInfo(kind="cuda", name=name, slug=peaks.slug(name))
    found = peaks.peaks_for(device)
    assert found is not None and found.model == model
    assert (found.bf16, found.bandwidth_gbps) == (bf16, bandwidth)


def test_every_entry_is_dense_and_names_its_source():
    for slug, p in peaks.KNOWN.items():
        assert slug == peaks.slug(slug)
        assert p.source.startswith("NVIDIA") and any(str(year) in p.source for year in range(2020, 2030)), slug
        assert all(v > 0 for v in p.tflops().values()) and p.bandwidth_gbps > 0
        # Dense figures: tensor-core fp16 equals bf16 and TF32 is half of it on every chip listed; a
        # sparse figure copied into one column would break the ratio.
        assert p.fp16 == p.bf16 and p.tf32 / p.bf16 == pytest.approx(0.5, rel=0.03), slug
        assert p.fp32 < p.tf32 and p.fp64 <= p.fp32, slug


def test_ridge_points_match_the_h200_notes():
    # 989.5 TFLOP/s over 4.8 TB/s: about 206 FLOP/B in bf16 on an H200, about 295 on an H100 (3.35 TB/s).
    assert peaks.lookup("NVIDIA H200").ridge_point("bf16") == pytest.approx(206, abs=0.5)
    assert peaks.lookup("NVIDIA H100 80GB HBM3").ridge_point("bf16") == pytest.approx(295, abs=0.5)
    assert roofline.ridge_point(989.5, 4814.0) == pytest.approx(205.5, abs=0.1)  # against NVML's bandwidth


def test_an_unknown_gpu_and_a_cpu_have_no_peaks():
    assert peaks.peaks_for(DeviceInfo(kind="cuda", name="NVIDIA GeForce RTX 4090", slug="nvidia-geforce-rtx-4090")) is None
    assert peaks.peaks_for(CPU) is None
    assert peaks.peaks_for(dataclasses.replace(CPU, name="NVIDIA H200", slug="nvidia-h200")) is None  # kind decides


def test_dtype_parameters_map_to_the_peak_that_holds_for_them():
    assert [roofline.peak_name(d) for d in ("bfloat16", "float16", "float32", "float64", "torch.bfloat16")] == [
        "bf16", "fp16", "fp32", "fp64", "bf16"]
    assert roofline.peak_name("int8") is None and roofline.peak_name(None) is None and roofline.peak_name(3) is None


@pytest.mark.parametrize(("name", "bf16"), [("NVIDIA H200", 989.5), ("NVIDIA GeForce RTX 4090", None)])
def test_device_detection_takes_the_compute_roofs_from_the_table_and_the_memory_roof_from_nvml(monkeypatch, name, bf16):
    torch = pytest.importorskip("torch")
    from perfguard.measure import device, nvml

    props = SimpleNamespace(name=name, uuid="1234", major=9, minor=0, total_memory=141 * 10**9,
                            multi_processor_count=132, L2_cache_size=60 * 2**20)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(nvml, "handle", lambda uuid: None)
    monkeypatch.setattr(nvml, "static_info", lambda handle: {"peak_bandwidth_gbps": 4814.3})
    info = device.detect.__wrapped__("cuda")  # not the cached detection of this machine's device
    assert info.peak_bandwidth_gbps == 4814.3  # NVML's, not the datasheet's 4800
    assert (info.peak_tflops or {}).get("bf16") == bf16


# --- bound, attainable rate, efficiency -----------------------------------------------------------


def test_a_1gib_copy_is_memory_bound_and_its_efficiency_is_bandwidth_over_the_peak():
    nbytes = 2 * GIB  # read + write
    median_ms = nbytes / 4250e9 * 1e3  # DESIGN §8: about 4250 GB/s
    m = derive(median_ms, nbytes, None, H200, caller_ms=median_ms + 0.015, dtype="float32")
    assert m.gbps == pytest.approx(4250)
    assert m.bound == "memory"
    assert m.efficiency == pytest.approx(4250 / 4814) == m.bandwidth_util
    assert (m.flop_util, m.attainable_tflops) == (None, None)


def test_an_8192_cubed_bf16_matmul_at_1_5_ms_is_compute_bound():
    n = 8192
    flops, nbytes = 2 * n**3, 3 * n * n * 2
    m = derive(1.5, nbytes, flops, H200, caller_ms=1.52, dtype="bfloat16")
    assert m.arithmetic_intensity == pytest.approx(2730.67, abs=0.01)
    assert m.tflops == pytest.approx(733.0, abs=0.1)
    assert m.bound == "compute"
    assert m.attainable_tflops == 989.5  # the compute roof: 2730 FLOP/B is far past the ridge
    assert m.flop_util == pytest.approx(0.7408, abs=1e-4) == m.efficiency


def test_under_the_ridge_point_a_case_with_flops_is_memory_bound_against_the_sloped_roof():
    m = derive(0.25, 1e9, 1e9, H200, caller_ms=0.27, dtype="bfloat16")  # 1 FLOP/B at 4000 GB/s
    assert m.bound == "memory"
    assert m.attainable_tflops == pytest.approx(4.814)  # 1 FLOP/B x 4814 GB/s
    assert m.efficiency == pytest.approx(4000 / 4814)
    assert m.flop_util == pytest.approx(4 / 989.5)


def test_the_dtype_picks_the_roof_float32_matmuls_use_no_tf32():
    # 100 FLOP/B: past fp32's ridge (67 / 4.814 = 13.9 FLOP/B), short of bf16's (205.5).
    flops = 1e11
    as_fp32 = derive(2.0, flops / 100, flops, H200, dtype="float32")  # 50 TFLOP/s
    assert (as_fp32.bound, as_fp32.attainable_tflops) == ("compute", 67.0)
    assert as_fp32.efficiency == pytest.approx(50 / 67) == as_fp32.flop_util
    as_bf16 = derive(2.0, flops / 100, flops, H200, dtype="bfloat16")
    assert as_bf16.bound == "memory" and as_bf16.attainable_tflops == pytest.approx(481.4)


def test_without_a_dtype_a_case_is_placed_only_where_every_roof_agrees():
    low = derive(0.25, 1e9, 1e9, H200)  # 1 FLOP/B: under every ridge point, memory-bound on all roofs
    assert (low.bound, low.flop_util) == ("memory", None)
    assert low.efficiency == pytest.approx(4000 / 4814)
    high = derive(1.5, 3 * 8192**2 * 2, 2 * 8192**3, H200, dtype="int8")  # 2730 FLOP/B: past every ridge
    assert (high.bound, high.efficiency, high.flop_util, high.attainable_tflops) == ("compute", None, None, None)
    middle = derive(2.0, 1e9, 1e11, H200)  # 100 FLOP/B: memory-bound in bf16, compute-bound in fp32
    assert (middle.bound, middle.efficiency) == (None, None)


def test_a_6us_add_with_a_launch_share_of_0_7_is_latency_bound():
    n = 2**20
    m = derive(0.006, 3 * 4 * n, n, H200, caller_ms=0.020, dtype="float32")
    assert m.launch_overhead_share == pytest.approx(0.7)
    assert m.bound == "launch"
    assert m.efficiency is not None  # still measured against the roof, for the record


def test_either_a_high_launch_share_or_a_time_near_the_launch_floor_makes_a_case_latency_bound():
    by_share = derive(0.1, 1e8, None, H200, caller_ms=0.4)  # 100 µs of GPU time, 75% overhead
    by_floor = derive(0.006, 1e6, None, H200)  # no eager latency known; 6 µs is under the 10 µs floor
    neither = derive(0.05, 1e8, None, H200, caller_ms=0.06)  # 17% overhead, 50 µs
    assert (by_share.bound, by_floor.bound, neither.bound) == ("launch", "launch", "memory")
    assert roofline.LAUNCH_FLOOR_MS == 0.010 and roofline.LAUNCH_SHARE_LIMIT == 0.5


def test_a_case_without_bytes_or_flops_is_only_ever_latency_bound():
    assert derive(1.0, None, None, H200, caller_ms=1.02).bound is None
    assert derive(0.004, None, None, H200).bound == "launch"
    flops_only = derive(1.5, None, 2 * 8192**3, H200, dtype="bfloat16")  # no intensity: no roofline point
    assert (flops_only.bound, flops_only.efficiency) == (None, None)
    assert flops_only.flop_util == pytest.approx(0.7408, abs=1e-4)


def test_an_unknown_gpu_has_no_compute_figures_but_still_a_memory_roof():
    other = DeviceInfo(kind="cuda", name="NVIDIA GeForce RTX 4090", slug="nvidia-geforce-rtx-4090",
                       peak_bandwidth_gbps=1008.0)
    matmul = derive(1.5, 3 * 8192**2 * 2, 2 * 8192**3, other, dtype="bfloat16")
    assert (matmul.bound, matmul.efficiency, matmul.flop_util, matmul.attainable_tflops) == (None, None, None, None)
    copy = derive(1.0, 5e8, None, other)
    assert copy.bound == "memory" and copy.efficiency == pytest.approx(0.496, abs=1e-3)


def test_on_a_cpu_there_is_no_roofline():
    for m in (derive(0.001, 1e3, None, CPU, dtype="float32"), derive(2.0, 1e8, 1e11, CPU, dtype="float32")):
        assert (m.bound, m.efficiency, m.flop_util, m.attainable_tflops) == (None, None, None, None)
        assert m.gbps is not None  # the plain figures are still there


# --- the record -----------------------------------------------------------------------------------


def _record(device: DeviceInfo, metrics: Metrics) -> RunRecord:
    result = CaseResult(id="mm", name="mm", status="ok", device=device.slug, metrics=metrics)
    return RunRecord(created_at="2026-11-29T12:00:00+00:00", perfguard_version="0.1.0", devices=(device,),
                     results=(result,))


def test_the_new_figures_round_trip_through_a_record():
    metrics = derive(1.5, 3 * 8192**2 * 2, 2 * 8192**3, H200, caller_ms=1.52, dtype="bfloat16")
    back = loads_record(dumps(_record(H200, metrics)), "run.json")
    assert back.devices[0].peak_tflops == {"bf16": 989.5, "fp16": 989.5, "tf32": 494.5, "fp32": 67, "fp64": 67}
    assert back.results[0].metrics.bound == "compute"
    assert back.results[0].metrics.flop_util == pytest.approx(metrics.flop_util, rel=1e-5)


def test_a_record_written_before_the_roofline_still_loads():
    data = json.loads(dumps(_record(H200, derive(0.5, 1e9, 1e10, H200, dtype="bfloat16"))))
    del data["devices"][0]["peak_tflops"]
    for key in ("bound", "attainable_tflops", "efficiency", "flop_util"):
        del data["results"][0]["metrics"][key]
    old = loads_record(json.dumps(data), "old.json")
    assert old.devices[0].peak_tflops is None
    assert (old.results[0].metrics.bound, old.results[0].metrics.efficiency) == (None, None)
    assert old.results[0].metrics.gbps == pytest.approx(2000)


def test_a_peak_that_is_not_a_number_is_refused():
    data = json.loads(dumps(_record(H200, Metrics())))
    data["devices"][0]["peak_tflops"]["bf16"] = "fast"
    with pytest.raises(BaselineError, match=r"devices\[0\]\.peak_tflops\[\.\.\.\]: Expected `float`, got `str`"):
        loads_record(json.dumps(data), "edited.json")


def test_the_wall_declared_work_puts_a_case_against_before_it_is_timed():
    from perfguard.analysis.roofline import declared_wall
    from perfguard.model import DeviceInfo

    h200 = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", peak_bandwidth_gbps=4800.0,
                      peak_tflops={"bf16": 989.0, "fp32": 67.0})
    n = 8192
    assert declared_wall(None, 2 * 2**30, h200, None) == "memory"  # a copy: bytes only
    assert declared_wall(2 * n**3, 3 * n * n * 2, h200, "bfloat16") == "compute"  # a square matmul
    assert declared_wall(2 * n * n, (n * n + 2 * n) * 2, h200, "bfloat16") == "memory"  # a matrix-vector product
    assert declared_wall(None, None, h200, None) is None  # nothing declared: not known
    cpu = DeviceInfo(kind="cpu", name="cpu", slug="cpu")
    assert declared_wall(None, 2**20, cpu, None) is None
