"""Which device a run measures, and its identity: the model that names the baseline, versions, ceilings."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import socket

import torch

from perfguard.analysis import peaks
from perfguard.measure import nvml
from perfguard.model import DeviceInfo, names


def default_kind() -> str:
    """"cuda" when a GPU is usable, else "cpu"."""
    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=None)
def detect(kind: str, host: str | None = None) -> DeviceInfo:
    """Identify the current device of `kind` ("cuda" uses the current CUDA device), on the machine the
    run names `host` (the plugin's PERFGUARD_HOST: Options.host); None: its hostname."""
    common = {
        "torch": str(torch.__version__),  # a TorchVersion, which xdist cannot send
        "triton": _version("triton"),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "host": host or socket.gethostname(),
    }
    if kind == "cpu":
        name = cpu_model()
        return DeviceInfo(kind="cpu", name=name, slug=names.device_slug("cpu", name), **common)
    ordinal = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(ordinal)
    uuid = f"GPU-{props.uuid}"
    handle = nvml.handle(uuid)
    info = nvml.static_info(handle)
    physical = nvml.index(handle)
    # The compute roofs come from the table of published peaks; the memory roof stays NVML's figure.
    table = peaks.lookup(props.name)
    return DeviceInfo(
        kind="cuda",
        name=props.name,
        slug=names.device_slug("cuda", props.name),
        uuid=uuid,
        # torch's ordinal counts within CUDA_VISIBLE_DEVICES (0 on every pinned xdist worker); the
        # record keeps the physical index nvidia-smi shows, falling back to torch's without NVML.
        index=physical if physical is not None else ordinal,
        cuda=torch.version.cuda,
        compute_capability=f"{props.major}.{props.minor}",
        memory_bytes=props.total_memory,
        sm_count=props.multi_processor_count,
        l2_bytes=getattr(props, "L2_cache_size", None),
        peak_tflops=table.tflops() if table else None,
        **info,
        **common,
    )


def pinning_problem(entry: str) -> str | None:
    """On an xdist worker given one GPU (CUDA_VISIBLE_DEVICES=`entry` from its start): None when CUDA
    sees exactly one GPU, else why not. Call it once CUDA is initialised (after `detect("cuda")`)."""
    count = torch.cuda.device_count()  # once initialised, the CUDA runtime's own count
    if count == 1:
        return None
    return (
        f"this xdist worker was given GPU {entry} alone, but CUDA sees {count} GPUs "
        f"(CUDA_VISIBLE_DEVICES is now {os.environ.get('CUDA_VISIBLE_DEVICES')!r}): something in the "
        "session changed the variable before CUDA started; leave it to perfguard under -n"
    )


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(package: str) -> str | None:
    # Ask the installed metadata instead of importing: importing triton costs a second.
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
