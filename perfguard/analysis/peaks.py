"""Published peak rates of known GPUs: the compute roofs of the roofline (DESIGN §4), by device slug.

Every figure is the vendor's dense one, per GPU, in TFLOP/s (1e12 FLOP/s) and GB/s (1e9 B/s).
Datasheets print the tensor-core rates with 2:4 structured sparsity (marked "*"), twice what a dense
matmul can reach: the figures here are those halved. Which peak a case is held to:

- bf16, fp16: tensor cores (what torch's matmuls use for these dtypes);
- tf32: tensor cores on float32 inputs, used only when a caller allows it
  (`torch.backends.cuda.matmul.allow_tf32`); listed for reference;
- fp32: the plain (non-tensor) rate, which a float32 matmul in torch gets by default;
- fp64: what a float64 matmul can reach: the FP64 tensor-core rate on chips that have one (A100,
  H100, H200, B200: cuBLAS's DGEMM uses them), else the plain FP64 rate.

The bandwidth here is the datasheet's, for reference and tests; a run's memory roof is the device's
own theoretical figure from NVML (`DeviceInfo.peak_bandwidth_gbps`). Datasheet figures assume the
boost clock at the card's full power limit; `perfguard calibrate` (later) measures what a card
reaches. Figures marked "uncertain" in `note` are not on the vendor's datasheet or differ between its
revisions.
"""

from __future__ import annotations

import dataclasses

from perfguard.analysis.roofline import ridge_point
from perfguard.model import DeviceInfo
from perfguard.model.names import slug  # the one slug rule, which the table's keys follow

DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp64")


@dataclasses.dataclass(frozen=True)
class GpuPeaks:
    """One GPU model's published dense peaks, and where they come from."""

    model: str  # as the vendor names the part
    bf16: float  # TFLOP/s, dense, tensor cores
    fp16: float
    tf32: float
    fp32: float  # TFLOP/s, non-tensor
    fp64: float  # TFLOP/s: FP64 tensor cores where the chip has them, else plain FP64
    bandwidth_gbps: float  # GB/s, the datasheet's memory bandwidth
    source: str  # the vendor document the figures are from
    note: str = ""  # what is uncertain, or derived rather than printed

    def tflops(self) -> dict[str, float]:
        """The peaks by dtype name, as `DeviceInfo.peak_tflops` holds them."""
        return {dtype: getattr(self, dtype) for dtype in DTYPES}

    def ridge_point(self, dtype: str) -> float:
        """The intensity (FLOP/B) where the memory roof meets the dtype's compute roof, at the datasheet bandwidth."""
        return ridge_point(getattr(self, dtype), self.bandwidth_gbps)


H100_SXM = GpuPeaks(
    "H100 SXM5 80GB", bf16=989.5, fp16=989.5, tf32=494.5, fp32=67.0, fp64=67.0, bandwidth_gbps=3350.0,
    source="NVIDIA H100 Tensor Core GPU datasheet, 2023 (H100 SXM column)",
)
H100_PCIE = GpuPeaks(
    "H100 PCIe 80GB", bf16=756.5, fp16=756.5, tf32=378.0, fp32=51.0, fp64=51.0, bandwidth_gbps=2000.0,
    source="NVIDIA H100 Tensor Core GPU datasheet, 2023 (H100 PCIe column)",
)
H100_NVL = GpuPeaks(
    "H100 NVL 94GB", bf16=835.5, fp16=835.5, tf32=417.5, fp32=60.0, fp64=60.0, bandwidth_gbps=3900.0,
    source="NVIDIA H100 Tensor Core GPU datasheet, 2024 (H100 NVL column)",
    note="uncertain: the first NVL figures (2023) were per pair of cards; these are per card",
)
H200_SXM = GpuPeaks(
    "H200 SXM 141GB", bf16=989.5, fp16=989.5, tf32=494.5, fp32=67.0, fp64=67.0, bandwidth_gbps=4800.0,
    source="NVIDIA H200 Tensor Core GPU datasheet, 2024 (H200 SXM column)",
)
H200_NVL = GpuPeaks(
    "H200 NVL 141GB", bf16=835.5, fp16=835.5, tf32=417.5, fp32=60.0, fp64=60.0, bandwidth_gbps=4800.0,
    source="NVIDIA H200 Tensor Core GPU datasheet, 2024 (H200 NVL column)",
    note="uncertain: torch's name for this part ('NVIDIA H200 NVL') is assumed, not seen",
)


def _a100(model: str, bandwidth_gbps: float, column: str) -> GpuPeaks:
    # Every A100 form factor has the same published rates; the 80GB parts have faster memory.
    pcie = "PCIe cards have a lower power limit (250-300 W against 400 W) and may not sustain these rates"
    return GpuPeaks(model, bf16=312.0, fp16=312.0, tf32=156.0, fp32=19.5, fp64=19.5, bandwidth_gbps=bandwidth_gbps,
                    source=f"NVIDIA A100 Tensor Core GPU datasheet, 2021 ({column} column)",
                    note=pcie if "PCIe" in column else "")


L4 = GpuPeaks(
    "L4 24GB", bf16=121.0, fp16=121.0, tf32=60.0, fp32=30.3, fp64=0.47, bandwidth_gbps=300.0,
    source="NVIDIA L4 Tensor Core GPU datasheet, 2023",
    note="uncertain: fp64 is not on the datasheet; 0.47 is Ada's 1:64 of the fp32 rate",
)
L40S = GpuPeaks(
    "L40S 48GB", bf16=362.05, fp16=362.05, tf32=183.0, fp32=91.6, fp64=1.43, bandwidth_gbps=864.0,
    source="NVIDIA L40S datasheet, 2023",
    note="uncertain: fp64 is not on the datasheet; 1.43 is Ada's 1:64 of the fp32 rate",
)
B200 = GpuPeaks(
    "B200 (HGX, 1000 W) 180GB", bf16=2250.0, fp16=2250.0, tf32=1100.0, fp32=75.0, fp64=37.0, bandwidth_gbps=7700.0,
    source="NVIDIA HGX B200 specifications (GB200 NVL72 / HGX B200 table), nvidia.com, 2025",
    note="uncertain: earlier revisions of the same table gave fp32 80, fp64 40 and 8,000 GB/s; "
    "the GB200 part (1200 W) is faster and is not this entry",
)

# By device slug: the model name torch reports (`torch.cuda.get_device_properties(i).name`), lower
# case, non-alphanumerics as '-' ("NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3").
KNOWN: dict[str, GpuPeaks] = {
    "nvidia-h100-80gb-hbm3": H100_SXM,
    "nvidia-h100": H100_SXM,  # some drivers and clouds name the SXM part plainly; taken to be SXM
    "nvidia-h100-pcie": H100_PCIE,
    "nvidia-h100-nvl": H100_NVL,
    "nvidia-h200": H200_SXM,
    "nvidia-h200-nvl": H200_NVL,
    "nvidia-a100-sxm4-80gb": _a100("A100 SXM4 80GB", 2039.0, "A100 80GB SXM"),
    "nvidia-a100-sxm4-40gb": _a100("A100 SXM4 40GB", 1555.0, "A100 40GB SXM"),
    "nvidia-a100-80gb-pcie": _a100("A100 PCIe 80GB", 1935.0, "A100 80GB PCIe"),
    "nvidia-a100-pcie-40gb": _a100("A100 PCIe 40GB", 1555.0, "A100 40GB PCIe"),
    "nvidia-l4": L4,
    "nvidia-l40s": L40S,
    "nvidia-b200": B200,
}


def lookup(name: str) -> GpuPeaks | None:
    """The table's entry for a model name or slug, or None for a GPU the table does not know."""
    return KNOWN.get(slug(name))


def peaks_for(device: DeviceInfo) -> GpuPeaks | None:
    """The published peaks of `device`'s model; None for a CPU or a GPU the table does not know."""
    if device.kind != "cuda":
        return None
    return lookup(device.slug) or lookup(device.name)
