"""torch's process-wide settings, taken before a case and put back after it.

A case that calls `torch.set_default_dtype`, `torch.set_num_threads` or `torch.set_grad_enabled` in
its setup means it for its own calls; left in place, it would change the figures (and the checks) of
every case after it, and the order of the suite would decide the verdicts. The runner takes a
`TorchState` before each case and restores it after, naming what the case had changed on the result
(`CaseResult.restored_state`) so the report says so.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import torch


def _deterministic() -> tuple[bool, bool]:
    return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()


def _set_deterministic(value: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(value[0], warn_only=value[1])


def _set_default_device(device: torch.device) -> None:
    # "cpu" is also what torch reports when no default was set; setting it would install a device mode
    # that every later torch call pays for, so it is put back as "none set".
    torch.set_default_device(None if device == torch.device("cpu") else device)


def _set_cudnn_benchmark(value: bool) -> None:
    torch.backends.cudnn.benchmark = value


# name shown to a person: (read it, set it). Each is process-wide and changes what a later case measures.
SETTINGS: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {
    "default dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "default device": (torch.get_default_device, _set_default_device),
    "threads": (torch.get_num_threads, torch.set_num_threads),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
    "float32 matmul precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    "deterministic algorithms": (_deterministic, _set_deterministic),
    "anomaly detection": (torch.is_anomaly_enabled, lambda on: torch.set_anomaly_enabled(on)),
    "cudnn.benchmark": (lambda: torch.backends.cudnn.benchmark, _set_cudnn_benchmark),
}


def measuring_threads() -> int:
    """The threads torch measures with on a CPU, set for this process: one, unless OMP_NUM_THREADS says
    otherwise (the user's choice, which torch has already read). On a small or shared machine OpenMP's
    threads are descheduled by whatever else runs (a multi-threaded op's median moved up to 8x between
    runs on a 2-core VM). A case may still set its own count for its calls; it is put back after it,
    like any setting here."""
    if not os.environ.get("OMP_NUM_THREADS", "").strip():
        torch.set_num_threads(1)
    return torch.get_num_threads()


@dataclasses.dataclass(frozen=True)
class TorchState:
    values: dict[str, Any]

    @classmethod
    def now(cls) -> TorchState:
        return cls({name: get() for name, (get, _set) in SETTINGS.items()})

    def restore(self) -> tuple[str, ...]:
        """Put back every setting that differs now; what was changed, as "name before → after"."""
        changed = []
        for name, (get, put) in SETTINGS.items():
            before, after = self.values[name], get()
            if after != before:
                put(before)
                changed.append(f"{name} {_text(before)} → {_text(after)}")
        return tuple(changed)


def _text(value: Any) -> str:
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):  # deterministic algorithms: (enabled, warn only)
        return ("on, warn only" if value[1] else "on") if value[0] else "off"
    return str(value)
