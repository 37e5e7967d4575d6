"""`perfguard ab -n N`: the tests shared out over N GPUs, each on one GPU for every round of both sides.

A case's base and head rounds must run on the same card (its paired differences then hold no
card-to-card offset, perfguard/analysis/paired.py), so the assignment is made once, before the first
round, from the node ids both sides collect, and never changes: the ids sorted, then dealt out in
turn, so that the shards' counts differ by one at most and a parametrised case's grid points (adjacent
once sorted) spread over the cards. The same ids give the same assignment on any machine. Each shard
runs as its own `pytest --perfguard` process with CUDA_VISIBLE_DEVICES set to its GPU before the
process starts, as perfguard's xdist workers are pinned (perfguard/plugin/workers.py), and told its
tests with --perfguard-cases. Pure functions here; the processes are perfguard/ab/rounds.py's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from perfguard.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int
    gpu: str | None  # its CUDA_VISIBLE_DEVICES entry; None: the inherited environment (one shard, or a CPU)


def assign(node_ids: Iterable[str], shards: int) -> dict[str, int]:
    """Node id -> shard index: the distinct ids sorted, then dealt round-robin."""
    return {nodeid: i % shards for i, nodeid in enumerate(sorted(set(node_ids)))}


def split(node_ids: Iterable[str], assignment: dict[str, int], shards: int) -> list[list[str]]:
    """`node_ids` by shard, each list sorted; an id the assignment does not know goes to shard 0."""
    out: list[list[str]] = [[] for _ in range(shards)]
    for nodeid in sorted(set(node_ids)):
        out[assignment.get(nodeid, 0)].append(nodeid)
    return out


def plan(count: int, visible: Sequence[str]) -> list[Shard]:
    """`count` shards over the visible GPUs (CUDA_VISIBLE_DEVICES entries), one GPU each. On a machine
    without GPUs the shards measure on its CPU side by side (the run says so); more shards than GPUs
    is refused: two shards on one card would time each other's kernels."""
    if count == 1:
        return [Shard(0, None)]
    if not visible:
        return [Shard(i, None) for i in range(count)]
    if count > len(visible):
        raise ConfigError(f"perfguard ab -n {count}: only {len(visible)} GPU(s) visible ({', '.join(visible)}); "
                          f"use -n {len(visible)} at most, one shard per GPU")
    return [Shard(i, visible[i]) for i in range(count)]


def balance(counts: Sequence[int]) -> str:
    """"18 + 18 + 17 cases" for the run's first line."""
    return " + ".join(str(n) for n in counts) + " case(s)"
