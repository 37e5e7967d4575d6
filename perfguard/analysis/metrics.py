"""Figures derived from a median time and the declared bytes and flops (DESIGN §4)."""

from __future__ import annotations

from typing import Any

from perfguard.analysis import roofline
import dataclasses

from perfguard.model import CaseResult, DeviceInfo, Metrics


def complete(result: CaseResult, device: DeviceInfo) -> CaseResult:
    """`result` with its derived figures, from its median (the judged figure) and its caller's time (a
    result without a median is returned as it is): made as measure/runner.py measures, and again from a
    baseline's results, which keep none of them."""
    if result.judged_time is None:
        return result
    caller = result.median_of("caller_time")
    # The GPU's share of the caller's time: its own time per call, or where nothing could be queued
    # ahead of a call (the caller regime, no GPU time), its busy time: never the caller's time itself.
    gpu = result.median_of("gpu_time") or result.median_of("busy_time")
    return dataclasses.replace(result, metrics=derive(result.judged_time.median_ms, result.bytes, result.flops, device, caller,
                                                      result.params.get("dtype"), gpu_ms=gpu))


def derive(
    median_ms: float,
    bytes_moved: float | None,
    flops: float | None,
    device: DeviceInfo,
    caller_ms: float | None = None,
    dtype: Any = None,
    gpu_ms: float | None = None,
) -> Metrics:
    """`dtype` is the case's "dtype" parameter ("bfloat16", ...): which compute peak the case is held to;
    `gpu_ms` the GPU's time per call the launch overhead is counted from (default: `median_ms`)."""
    seconds = median_ms / 1e3
    gbps = bytes_moved / seconds / 1e9 if bytes_moved else None
    util = gbps / device.peak_bandwidth_gbps if gbps is not None and device.peak_bandwidth_gbps else None
    tflops = flops / seconds / 1e12 if flops else None
    intensity = flops / bytes_moved if flops and bytes_moved else None
    overhead = share = None
    if caller_ms is not None and (gpu_ms is not None or caller_ms != median_ms):
        # The caller's time is back-to-back calls on the host clock, without the L2 flush; it can come out
        # under the cold-cache device median, which is no overhead, not a negative one.
        overhead = max(caller_ms - (gpu_ms if gpu_ms is not None else median_ms), 0.0)
        share = overhead / caller_ms if caller_ms > 0 else None
    # FLOP utilisation stays against the datasheet, the figure that compares across machines.
    bandwidth, roofs, calibrated = roofline.roofs_of(device)
    roof = roofline.place(
        device_ms=median_ms,
        tflops=tflops,
        gbps=gbps,
        intensity=intensity,
        bandwidth_gbps=bandwidth,
        peaks=roofs,
        dtype=dtype,
        overhead_share=share,
        gpu=device.kind == "cuda",
    )
    datasheet = (device.peak_tflops or {}).get(roofline.peak_name(dtype) or "")
    flop_util = tflops / datasheet if tflops is not None and datasheet else None
    copy_util = gbps / bandwidth if gbps is not None and calibrated else None
    return Metrics(
        gbps=gbps,
        bandwidth_util=util,
        tflops=tflops,
        arithmetic_intensity=intensity,
        caller_ms=caller_ms,
        launch_overhead_ms=overhead,
        launch_overhead_share=share,
        bound=roof.bound,
        attainable_tflops=roof.attainable_tflops,
        efficiency=roof.efficiency,
        flop_util=flop_util,
        copy_util=copy_util,
        roofs=("calibrated" if calibrated else "datasheet") if device.kind == "cuda" else None,
    )
