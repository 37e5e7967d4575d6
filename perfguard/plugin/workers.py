"""pytest-xdist glue: `-n auto` is one worker per visible GPU, and each worker owns its GPU.

A worker is pinned through its execnet spec's environment (`popen//env:CUDA_VISIBLE_DEVICES=…`): execnet
sets the variable in the new process before it imports anything, so neither a conftest nor another
plugin can initialise CUDA before the pin (setting it later, in the worker's pytest_configure, would
lose to a conftest that calls `torch.cuda.is_available()` at import). A replacement for a crashed
worker reuses its spec, so it gets the same GPU. The worker is told its GPU through `workerinput`
and checks, once CUDA is up, that it sees exactly one (perfguard.measure.device.pinning_problem).

Only measuring runs (--perfguard) are pinned or guarded: a smoke run is a functional test run, whose
tests may want every GPU. Only local (popen) workers are pinned; a `--tx ssh=…` worker has another
machine's GPUs, and a spec that sets CUDA_VISIBLE_DEVICES itself is left as it is.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from perfguard.measure import gpus
from perfguard.plugin.options import Options

PIN_KEY = "perfguard_gpu"  # in a worker's workerinput: the CUDA_VISIBLE_DEVICES entry it was given
_PINS = pytest.StashKey[dict[int, str]]()  # id(spec) -> entry, on the controller
_VISIBLE = pytest.StashKey[tuple[str, ...]]()  # the GPUs, listed once per run (NVML)


def _visible(config: pytest.Config) -> tuple[str, ...]:
    if _VISIBLE not in config.stash:
        config.stash[_VISIBLE] = gpus.visible()
    return config.stash[_VISIBLE]


def auto_count(config: pytest.Config) -> int | None:
    """`-n auto` under --perfguard: the number of visible GPUs; None (xdist's CPU count) otherwise."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):  # the user's explicit count wins, as in xdist
        return None
    if not Options.of(config).enabled:
        return None
    return len(_visible(config)) or None


def refusal(workers: int, visible: tuple[str, ...]) -> str:
    """The one-line usage error for more workers than GPUs."""
    return (
        f"perfguard: {workers} xdist workers but {len(visible)} visible GPU(s) "
        f"({gpus.VARIABLE} entries {', '.join(visible)}), and workers sharing a GPU time each other's "
        f"kernels: use -n auto (one worker per GPU) or -n {len(visible)}, or pass --perfguard-allow-shared-gpu "
        "(ini perfguard_allow_shared_gpu = true) to share them anyway"
    )


def refuse_shared_gpus(config: pytest.Config, options: Options) -> None:
    """On the controller, before any worker starts: more local workers than GPUs is a usage error."""
    if not options.enabled or options.allow_shared_gpu:
        return
    workers = local_worker_count(config)
    if workers < 2:
        return
    visible = _visible(config)
    if visible and workers > len(visible):
        raise pytest.UsageError(refusal(workers, visible))


def cpu_workers(config: pytest.Config, options: Options) -> int:
    """How many local workers will measure on this machine's CPU at once (no GPU is visible), timing each
    other's work; 0 when that is not the case. A run that only judges is not refused (the run's end says
    what it did to the figures); an update is (refuse_shared_cpu)."""
    if not options.enabled:
        return 0
    workers = local_worker_count(config)
    return workers if workers > 1 and not _visible(config) else 0


def refuse_shared_cpu(workers: int, options: Options) -> None:
    """An update from several workers measuring on one CPU at once, refused before it measures: they time
    each other's work, and a baseline written from them has tolerances too wide to judge by."""
    if options.update and workers > 1:
        raise pytest.UsageError(
            f"perfguard: --perfguard-update with {workers} xdist workers measuring on this CPU at once: they would "
            "time each other's work, and the baseline's tolerances would be too wide to judge by; record it without "
            "xdist (-n 0)")


def local_worker_count(config: pytest.Config) -> int:
    """How many workers xdist will start on this machine (0 without xdist or distribution)."""
    if config.getoption("dist", "no") == "no" or not config.getoption("tx", None):
        return 0
    from xdist.workermanage import parse_tx_spec_config  # present: `tx` is xdist's option

    return sum(1 for spec in parse_tx_spec_config(config) if spec.split("//")[0] == "popen")


# The two hooks below are registered by a run that records (plugin/run.py): --perfguard, on the controller.


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: Any) -> None:
    """Give each local worker's spec its GPU, before any worker starts."""
    config.stash[_PINS] = assign(specs, _visible(config))


def assign(specs: Any, visible: tuple[str, ...]) -> dict[int, str]:
    """Set CUDA_VISIBLE_DEVICES in each local spec's environment to its GPU; id(spec) -> entry."""
    local = [s for s in specs if s.popen and gpus.VARIABLE not in s.env]
    pins = {}
    for spec, entry in zip(local, gpus.spread(len(local), visible)):
        spec.env[gpus.VARIABLE] = entry
        pins[id(spec)] = entry
    return pins


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell a worker which GPU it was given, so it can check it sees only that one."""
    entry = node.config.stash.get(_PINS, {}).get(id(node.gateway.spec))
    if entry is not None:
        node.workerinput[PIN_KEY] = entry
