"""NVML (nvidia-ml-py): the device's ceilings and its clock, heat, power and throttle state.

NVML is optional at run time: without a driver (a CPU machine) every function here answers None,
and the figures that depend on it are reported as null rather than guessed.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

# Clock-event reasons that slow a running kernel: power or thermal limits. Idle, application
# clocks and sync boost are not. All five are recorded; telemetry decides which void a figure.
_SLOWDOWN_REASONS = (
    ("sw_power_cap", "nvmlClocksEventReasonSwPowerCap"),
    ("hw_slowdown", "nvmlClocksEventReasonHwSlowdown"),
    ("sw_thermal_slowdown", "nvmlClocksEventReasonSwThermalSlowdown"),
    ("hw_thermal_slowdown", "nvmlClocksEventReasonHwThermalSlowdown"),
    ("hw_power_brake_slowdown", "nvmlClocksEventReasonHwPowerBrakeSlowdown"),
)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    sm_clock_mhz: int | None
    temperature_c: int | None
    power_w: float | None
    throttle_reasons: tuple[str, ...]
    memory_used_bytes: int | None


@functools.lru_cache(maxsize=1)
def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no library, no driver, no permission: all mean "no NVML"
        return None
    return pynvml


def handle(uuid: str | None) -> Any | None:
    """The NVML handle of the GPU with this UUID (torch's, so CUDA_VISIBLE_DEVICES cannot confuse us)."""
    nvml = _nvml()
    if nvml is None or not uuid:
        return None
    try:
        return nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
    except Exception:  # noqa: BLE001
        return None


def uuids() -> list[str]:
    """The UUIDs of every GPU of the machine, by NVML index (PCI order); empty without NVML.

    NVML neither creates a CUDA context nor reads CUDA_VISIBLE_DEVICES: the xdist controller counts
    GPUs with it before any worker starts, without touching CUDA itself.
    """
    nvml = _nvml()
    if nvml is None:
        return []
    found = []
    for i in range(_ask("nvmlDeviceGetCount") or 0):
        uuid = _ask("nvmlDeviceGetUUID", _ask("nvmlDeviceGetHandleByIndex", i))
        if uuid is None:
            return []  # a GPU NVML cannot name: better no list than one that skips it
        found.append(uuid.decode() if isinstance(uuid, bytes) else uuid)
    return found


def compute_pids(h: Any) -> frozenset[int]:
    """The pids of the processes holding the GPU for compute (as this machine's pid namespace numbers
    them where it is the driver's); empty without NVML or a handle."""
    found = _ask("nvmlDeviceGetComputeRunningProcesses", h) if h is not None else None
    return frozenset(p.pid for p in found or ())


def index(h: Any) -> int | None:
    """The GPU's index as nvidia-smi numbers it (NVML, PCI order), whatever CUDA_VISIBLE_DEVICES says."""
    return _ask("nvmlDeviceGetIndex", h) if h is not None else None


def _ask(fn_name: str, *args: Any) -> Any | None:
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        return getattr(nvml, fn_name)(*args)
    except Exception:  # noqa: BLE001 - a query the device does not support is a null figure
        return None


def static_info(h: Any) -> dict[str, Any]:
    """Ceilings that do not change while the process runs."""
    nvml = _nvml()
    if nvml is None or h is None:
        return {}
    bus = _ask("nvmlDeviceGetMemoryBusWidth", h)
    mem_clock = _ask("nvmlDeviceGetMaxClockInfo", h, nvml.NVML_CLOCK_MEM)
    ecc = _ask("nvmlDeviceGetEccMode", h)
    driver = _ask("nvmlSystemGetDriverVersion")
    return {
        "driver": driver.decode() if isinstance(driver, bytes) else driver,
        "bus_width_bits": bus,
        "max_memory_clock_mhz": mem_clock,
        "max_sm_clock_mhz": _ask("nvmlDeviceGetMaxClockInfo", h, nvml.NVML_CLOCK_SM),
        # DDR: two transfers per memory clock, bus width in bits.
        "peak_bandwidth_gbps": 2 * mem_clock * 1e6 * bus / 8 / 1e9 if bus and mem_clock else None,
        "ecc_enabled": bool(ecc[0]) if ecc else None,
    }


def snapshot(h: Any) -> Snapshot | None:
    nvml = _nvml()
    if nvml is None or h is None:
        return None
    reasons = _ask("nvmlDeviceGetCurrentClocksEventReasons", h)
    if reasons is None:
        reasons = _ask("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    names = tuple(name for name, const in _SLOWDOWN_REASONS if reasons and reasons & getattr(nvml, const, 0))
    power_mw = _ask("nvmlDeviceGetPowerUsage", h)
    mem = _ask("nvmlDeviceGetMemoryInfo", h)
    return Snapshot(
        sm_clock_mhz=_ask("nvmlDeviceGetClockInfo", h, nvml.NVML_CLOCK_SM),
        temperature_c=_ask("nvmlDeviceGetTemperature", h, nvml.NVML_TEMPERATURE_GPU),
        power_w=power_mw / 1000 if power_mw is not None else None,
        throttle_reasons=names,
        memory_used_bytes=mem.used if mem is not None else None,
    )
