"""pytest-xdist and GPUs, on the CPU: reading CUDA_VISIBLE_DEVICES, one GPU per worker, the refusal.

What needs GPUs (workers really pinned, the refusal firing, -n auto counting GPUs) is in
tests/test_gpu_xdist.py.
"""

from __future__ import annotations

import execnet
import pytest

from perfguard.measure import gpus
from perfguard.plugin import workers
from perfguard.plugin.options import Options

UUIDS = ("GPU-aaaa-0000", "GPU-bbbb-1111", "GPU-bbbc-2222")


@pytest.mark.parametrize(
    ("value", "entries"),
    [
        (None, None),
        ("", []),
        ("0,2", ["0", "2"]),
        (" 1, 2", ["1", "2"]),
        ("1gpu,2ampere", ["1", "2"]),  # CUDA reads each entry like strtoul
        ("+3", ["3"]),
        ("0,-1,2", ["0"]),  # the list ends at the first entry that is not a GPU
        ("-1", []),
        ("none", []),
        ("0,1,0", []),  # a repeated entry hides every GPU
        ("GPU-aaaa,GPU-bbbc", ["GPU-aaaa", "GPU-bbbc"]),
        ("GPU-aaaa,1", ["GPU-aaaa"]),  # the first entry's kind decides
        ("GPU-aaaa,GPU-aaaa", []),
        ("MIG-1234", ["MIG-1234"]),
    ],
)
def test_cuda_visible_devices_is_read_by_cudas_rules(value, entries):
    assert gpus.parse(value) == entries


@pytest.mark.parametrize(
    ("entries", "chosen"),
    [
        (None, ("0", "1", "2")),  # unset: every GPU, by ordinal
        ([], ()),
        (["2", "0"], ("2", "0")),  # the parent's own numbering, in its order
        (["1", "5", "0"], ("1",)),  # no GPU 5: CUDA stops there
        (["GPU-aaaa"], ("GPU-aaaa-0000",)),  # a unique prefix, passed on as the full UUID
        (["GPU-bbb"], ()),  # ambiguous prefix: CUDA would stop
        (["GPU-bbbc", "GPU-zz", "GPU-aaaa"], ("GPU-bbbc-2222",)),
        (["MIG-1234"], ("MIG-1234",)),
    ],
)
def test_each_visible_gpu_becomes_one_entry_a_worker_can_be_given(entries, chosen):
    assert gpus.select(entries, UUIDS) == chosen


def test_without_nvml_no_gpu_is_visible():
    assert gpus.select(None, ()) == ()
    assert gpus.select(["0", "1"], []) == ()


def test_workers_get_a_gpu_each_then_share_round_robin():
    assert gpus.spread(2, ("0", "1")) == ["0", "1"]
    assert gpus.spread(3, ("0", "1")) == ["0", "1", "0"]
    assert gpus.spread(2, ()) == []


def test_local_specs_are_pinned_through_their_environment_and_remote_or_pinned_ones_are_left_alone():
    specs = [
        execnet.XSpec("popen"),
        execnet.XSpec("popen"),
        execnet.XSpec("ssh=gpu-box"),  # another machine's GPUs
        execnet.XSpec("popen//env:CUDA_VISIBLE_DEVICES=7"),  # the user's own pin
        execnet.XSpec("popen"),
    ]
    pins = workers.assign(specs, ("GPU-aaaa-0000", "GPU-bbbb-1111"))
    assert [s.env.get("CUDA_VISIBLE_DEVICES") for s in specs] == [
        "GPU-aaaa-0000", "GPU-bbbb-1111", None, "7", "GPU-aaaa-0000",
    ]
    # Keyed by identity: xdist's "popen" specs compare equal, and a restarted worker reuses its spec.
    assert pins == {id(specs[0]): "GPU-aaaa-0000", id(specs[1]): "GPU-bbbb-1111", id(specs[4]): "GPU-aaaa-0000"}


def test_on_a_machine_without_gpus_nothing_is_pinned():
    specs = [execnet.XSpec("popen"), execnet.XSpec("popen")]
    assert workers.assign(specs, ()) == {}
    assert [s.env for s in specs] == [{}, {}]


def test_the_refusal_is_one_line_naming_the_counts_and_how_to_allow_it():
    message = workers.refusal(3, ("0", "1"))
    assert "\n" not in message
    assert "3 xdist workers but 2 visible GPU(s)" in message
    assert "-n auto" in message and "--perfguard-allow-shared-gpu" in message


def test_local_workers_are_counted_from_the_tx_specs(pytester):
    config = pytester.parseconfig("--tx", "2*popen", "--tx", "popen//python=python3", "--tx", "ssh=box", "--dist", "load")
    assert workers.local_worker_count(config) == 3
    assert workers.local_worker_count(pytester.parseconfig()) == 0


@pytest.mark.parametrize(
    ("args", "ini", "allowed"),
    [
        ((), "", False),
        (("--perfguard-allow-shared-gpu",), "", True),
        ((), "perfguard_allow_shared_gpu = true", True),
        ((), "perfguard_allow_shared_gpu = true", True),
    ],
)
def test_sharing_gpus_is_allowed_by_option_or_ini_key(pytester, args, ini, allowed):
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert Options.from_config(pytester.parseconfig(*args)).allow_shared_gpu is allowed


def test_auto_falls_back_to_xdists_count_without_gpus_or_without_measuring(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible, whatever this machine has
    assert workers.auto_count(pytester.parseconfig("--perfguard")) is None
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert workers.auto_count(pytester.parseconfig()) is None  # a smoke run: xdist decides
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert workers.auto_count(pytester.parseconfig("--perfguard")) is None  # the user's count wins


