"""`perfguard calibrate`: measure what this card reaches — its copy bandwidth and matmul rate per dtype.

The datasheet's roofs assume the boost clock at full power; a card in a rack runs at its own clocks
and power limit (a heavy matmul on the H200 runs under the software power cap). The calibrated roofs
are measured with perfguard's own timer and stopping rule, as ordinary cases, so a case's efficiency
against them compares like with like. Each figure is the rate at the median time, not the best sample:
a roof a kernel reaches once in fifty calls is not one it can be held to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from perfguard import defaults
from perfguard.analysis.peaks import DTYPES
from perfguard.case import CaseInstance, build_spec
from perfguard.errors import MeasurementError
from perfguard.measure import runner
from perfguard.measure.timers import SamplingRule
from perfguard.model import Calibration, CaseResult, DeviceInfo

# A copy far larger than any L2 (the H200's is 60 MB), so it measures the memory, not the cache.
GPU_COPY_BYTES = 2**30
CPU_COPY_BYTES = 2**26
# n×n×n matmuls large enough to fill every SM of a big GPU for milliseconds (8192³ bf16 takes about
# 1.5 ms on an H200; fp64 8192³ about 20 ms). The CPU sizes keep calibration there to seconds.
GPU_MATMUL_N = 8192
CPU_MATMUL_N = 512
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32, "fp64": torch.float64}
GPU_DTYPES = DTYPES  # every dtype the peak table has a roof for
# CPU matmuls in half precision are emulated on most CPUs: not a roof worth storing.
CPU_DTYPES = ("fp32", "fp64")
DEFAULT_BUDGET_S = defaults.CALIBRATE_BUDGET_S


def calibrate(device: DeviceInfo, measured_at: str, budget_s: float = DEFAULT_BUDGET_S) -> tuple[Calibration, list[CaseResult]]:
    """Measure the copy and matmul roofs of `device`; also return the cases' results, to show them."""
    gpu = device.kind == "cuda"
    rule = SamplingRule(budget_s=budget_s)
    copy_bytes = GPU_COPY_BYTES if gpu else CPU_COPY_BYTES
    n = GPU_MATMUL_N if gpu else CPU_MATMUL_N
    results = [_run(f"calibrate-copy[bytes={copy_bytes}]", _copy(copy_bytes), 2 * copy_bytes, None, device, rule)]
    rates: dict[str, float] = {}
    for dtype in GPU_DTYPES if gpu else CPU_DTYPES:
        result = _run(f"calibrate-matmul[dtype={dtype}-n={n}]", _matmul(n, dtype), None, 2 * n**3, device, rule)
        results.append(result)
        rates[dtype] = 2 * n**3 / (result.judged_time.median_ms / 1e3) / 1e12
    calibration = Calibration(
        measured_at=measured_at,
        fingerprint=device.fingerprint(),
        copy_gbps=2 * copy_bytes / (results[0].judged_time.median_ms / 1e3) / 1e9,  # read and write
        copy_bytes=copy_bytes,
        tflops=rates,
        matmul_n={dtype: n for dtype in rates},
    )
    return calibration, results


def _run(name: str, setup: Callable[[str], Any], nbytes: float | None, flops: float | None,
         device: DeviceInfo, rule: SamplingRule) -> CaseResult:
    options = {"bytes": nbytes, "flops": flops, "cache": "hot"}  # the data is far larger than the L2 anyway
    spec = build_spec(setup, {k: v for k, v in options.items() if v is not None}, default_name=name)
    result = runner.measure(CaseInstance(spec), device, rule)
    if result.status != "ok":
        raise MeasurementError(f"calibration failed: {result.error}")
    return result


def _copy(nbytes: int) -> Callable[[str], Any]:
    def setup(device: str) -> Callable[[], Any]:
        src = torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(1)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)

    return setup


def _matmul(n: int, dtype: str) -> Callable[[str], Any]:
    def setup(device: str) -> Callable[[], Any]:
        gen = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype], generator=gen)
        b = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype], generator=gen)
        out = torch.empty_like(a)
        if dtype not in ("tf32", "fp32"):
            return lambda: torch.mm(a, b, out=out)
        # torch runs float32 matmuls without TF32 unless allowed; each dtype sets the flag itself so
        # neither leaks into the other's figure nor into the user's cases afterwards.
        allow = dtype == "tf32"

        def mm() -> Any:
            before = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = allow
            try:
                return torch.mm(a, b, out=out)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = before

        return mm

    return setup

