"""Figures derived from a median and the declared bytes and flops (DESIGN §4): bandwidth, FLOP/s, overhead."""

from __future__ import annotations

import pytest

from perfguard import DeviceInfo
from perfguard.analysis.metrics import derive

CPU = DeviceInfo(kind="cpu", name="Some CPU", slug="cpu-some")
GPU = DeviceInfo(kind="cuda", name="NVIDIA H200", slug="nvidia-h200", peak_bandwidth_gbps=4800.0)


def test_bandwidth_is_bytes_over_the_median_in_gb_per_s():
    m = derive(median_ms=2.0, bytes_moved=4e9, flops=None, device=CPU)
    assert m.gbps == pytest.approx(2000.0)
    assert m.bandwidth_util is None  # no peak known for a CPU
    assert m.tflops is None and m.arithmetic_intensity is None


def test_bandwidth_utilisation_is_against_the_devices_peak():
    m = derive(median_ms=1.0, bytes_moved=2.4e9, flops=None, device=GPU)
    assert m.gbps == pytest.approx(2400.0)
    assert m.bandwidth_util == pytest.approx(0.5)


def test_flop_rate_and_arithmetic_intensity_come_from_the_declared_flops():
    m = derive(median_ms=4.0, bytes_moved=1e9, flops=8e12, device=GPU)
    assert m.tflops == pytest.approx(2000.0)
    assert m.arithmetic_intensity == pytest.approx(8000.0)


def test_no_declared_bytes_means_no_bandwidth():
    m = derive(median_ms=1.0, bytes_moved=None, flops=1e9, device=GPU)
    assert (m.gbps, m.bandwidth_util, m.arithmetic_intensity) == (None, None, None)
    assert m.tflops == pytest.approx(1.0)


def test_launch_overhead_is_eager_latency_minus_device_time():
    m = derive(median_ms=0.005, bytes_moved=None, flops=None, device=GPU, caller_ms=0.020)
    assert m.caller_ms == 0.020
    assert m.launch_overhead_ms == pytest.approx(0.015)
    assert m.launch_overhead_share == pytest.approx(0.75)


def test_an_eager_latency_under_the_device_time_is_no_overhead_not_a_negative_one():
    m = derive(median_ms=1.0, bytes_moved=None, flops=None, device=GPU, caller_ms=0.99)
    assert m.launch_overhead_ms == 0.0
    assert m.launch_overhead_share == 0.0


def test_without_an_eager_latency_there_is_no_overhead_figure():
    m = derive(median_ms=1.0, bytes_moved=1e6, flops=None, device=CPU)
    assert (m.caller_ms, m.launch_overhead_ms, m.launch_overhead_share) == (None, None, None)
