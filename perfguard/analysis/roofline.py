"""Where a case sits on its GPU's roofline (DESIGN §4): which wall limits it, and how close it comes.

The roofline of a GPU is min(peak FLOP/s, intensity × peak bandwidth): below the ridge point
(peak FLOP/s ÷ bandwidth, in FLOP per byte) a kernel can at best move bytes at the memory's rate;
above it, at best compute at the dtype's peak. A case is

- `launch`-bound when launch and scheduling, not its bytes or flops, set its time: more than half
  of the time a caller sees is not GPU time, or the GPU time is near the launch floor;
- else `memory`-bound when its intensity is under the ridge point, or it declares bytes and no flops;
- else `compute`-bound.

Efficiency is the achieved rate over the roofline's attainable rate at the case's intensity (for a
case of bytes only: achieved GB/s over the peak bandwidth). It is not clipped at 1: a figure over 1
says the declared bytes or flops overstate the work, or the data came from cache, not memory.
On a CPU every figure here is None: there is no roofline for it in the record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from perfguard.model import DeviceInfo

# A device time under this is launch-bound whatever the case declares. DESIGN §8 (H200): a 1M-element
# float add takes about 2.5 µs by graph replay and 5 µs per sample with events queued behind a device
# wait: that is about what any launch costs when timed our way (launch, ramp-up over 132 SMs, tail).
# Within twice that, at least half the time is the fixed cost, not the declared bytes or flops; and
# in 10 µs a kernel at the H200's 4.8 TB/s moves only 48 MB, less than its 60 MB L2.
LAUNCH_FLOOR_MS = 0.010
# Launch-bound when more than half of what the caller waits for (its back-to-back time) is not GPU time.
LAUNCH_SHARE_LIMIT = 0.5

# A case's "dtype" parameter as its record writes it (torch.bfloat16 -> "bfloat16") to the peak that
# holds for it (`DeviceInfo.peak_tflops` keys, `perfguard.analysis.peaks.DTYPES`). float32 is held to
# the plain fp32 rate: torch runs float32 matmuls without TF32 unless the caller allows it.
PEAK_OF_DTYPE = {
    "bfloat16": "bf16", "bf16": "bf16",
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "float32": "fp32", "float": "fp32", "fp32": "fp32",
    "float64": "fp64", "double": "fp64", "fp64": "fp64",
    "tf32": "tf32",
}


@dataclasses.dataclass(frozen=True)
class Placement:
    """A case on the roofline; None where the record lacks what a figure needs."""

    bound: str | None = None  # "memory", "compute" or "launch"
    attainable_tflops: float | None = None  # the roofline at the case's intensity
    efficiency: float | None = None  # achieved / attainable (0..1, see the module's note on > 1)


def roofs_of(device: DeviceInfo) -> tuple[float | None, dict[str, float], bool]:
    """The memory roof (GB/s) and compute roofs (TFLOP/s by dtype) a device's cases are placed against,
    and whether they are this card's calibrated ones (`perfguard calibrate`) rather than the datasheet's.
    Calibrated roofs are what the card reaches at its real clocks and power limit; a dtype the
    calibration lacks keeps its datasheet roof."""
    calibrated = device.calibrated_bandwidth_gbps is not None
    bandwidth = device.calibrated_bandwidth_gbps if calibrated else device.peak_bandwidth_gbps
    return bandwidth, {**(device.peak_tflops or {}), **(device.calibrated_tflops or {})}, calibrated


def peak_name(dtype: Any) -> str | None:
    """The peak a dtype is held to ("bfloat16" -> "bf16"); None for a dtype the table has no peak for."""
    if dtype is None:
        return None
    text = str(dtype).strip().lower()
    return PEAK_OF_DTYPE.get(text.removeprefix("torch."))


def ridge_point(peak_tflops: float, bandwidth_gbps: float) -> float:
    """FLOP per byte where the memory roof meets the compute roof (TFLOP/s × 1e3 / GB/s)."""
    return peak_tflops * 1e3 / bandwidth_gbps


def memory_roof(intensity: float, bandwidth_gbps: float) -> float:
    """The memory roof at `intensity` FLOP/B, in TFLOP/s (GB/s × FLOP/B / 1e3)."""
    return intensity * bandwidth_gbps / 1e3


def attainable_tflops(intensity: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    """The roofline at `intensity` FLOP/B: min(peak, intensity × bandwidth), in TFLOP/s."""
    return min(peak_tflops, memory_roof(intensity, bandwidth_gbps))


def launch_bound(device_ms: float, overhead_share: float | None) -> bool:
    """Launch overhead dominates the caller's latency, or the GPU time is near the launch floor."""
    return device_ms < LAUNCH_FLOOR_MS or (overhead_share is not None and overhead_share > LAUNCH_SHARE_LIMIT)


def place(
    *,
    device_ms: float,
    tflops: float | None,
    gbps: float | None,
    intensity: float | None,
    bandwidth_gbps: float | None,
    peaks: Mapping[str, float] | None,
    dtype: Any,
    overhead_share: float | None,
    gpu: bool,
) -> Placement:
    """The bound, attainable rate and efficiency of one case on one device (FLOP utilisation: metrics.derive).

    `peaks` are the device's compute peaks by name (`DeviceInfo.peak_tflops`), `bandwidth_gbps` its
    memory roof. Without a known dtype a case with flops is still placed when every compute roof agrees:
    under the lowest ridge point it is memory-bound on all of them, over the highest compute-bound.
    """
    if not gpu:
        return Placement()
    roofs = {k: float(v) for k, v in (peaks or {}).items() if isinstance(v, (int, float)) and v > 0}
    peak = roofs.get(peak_name(dtype) or "")
    wall = _wall(intensity, gbps is not None and tflops is None, tflops is not None, bandwidth_gbps, roofs, peak)
    attainable = efficiency = None
    if wall is not None and gbps is not None and tflops is None:
        efficiency = gbps / bandwidth_gbps if bandwidth_gbps else None
    elif intensity is not None and tflops is not None and bandwidth_gbps:
        if peak:
            attainable = attainable_tflops(intensity, peak, bandwidth_gbps)
        elif wall == "memory":
            attainable = memory_roof(intensity, bandwidth_gbps)  # against any compute peak: no other is known
        efficiency = tflops / attainable if attainable else None
    bound = "launch" if launch_bound(device_ms, overhead_share) else wall
    return Placement(bound, attainable, efficiency)


def declared_wall(flops: float | None, bytes_moved: float | None, device: DeviceInfo, dtype: Any) -> str | None:
    """The wall a case's declared bytes and flops put it against on this device ("memory" or
    "compute"), before it is timed; None where they do not say (nothing declared, a CPU, no peaks)."""
    if device.kind != "cuda":
        return None
    bandwidth, roofs, _ = roofs_of(device)
    intensity = flops / bytes_moved if flops and bytes_moved else None
    return _wall(intensity, bool(bytes_moved) and not flops, bool(flops), bandwidth,
                 roofs, roofs.get(peak_name(dtype) or ""))


def _wall(intensity: float | None, bytes_only: bool, has_flops: bool, bandwidth_gbps: float | None,
          roofs: Mapping[str, float], peak: float | None) -> str | None:
    if bytes_only:  # bytes only: the memory roof is the only one
        return "memory"
    if intensity is None or not has_flops or not bandwidth_gbps:
        return None
    if peak:
        return "memory" if intensity < ridge_point(peak, bandwidth_gbps) else "compute"
    ridges = [ridge_point(p, bandwidth_gbps) for p in roofs.values()]
    if ridges and intensity < min(ridges):
        return "memory"
    if ridges and intensity >= max(ridges):
        return "compute"  # against which peak is unknown, so no attainable rate
    return None
