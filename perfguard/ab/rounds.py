"""One side's round of `perfguard ab`: `python -m pytest ARGS --perfguard` once per shard, side by side,
each into a folder of its own; their records read back and merged into the round's record.

Every process goes through `launch` (a test swaps in processes forked from one that has imported
torch already), and every one's output goes to files, so a round that fails shows pytest's last lines.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from perfguard.ab.shards import Shard
from perfguard.ab.sides import Side
from perfguard.ab_env import COLLECTED, RECORD_ONLY
from perfguard.errors import MeasurementError, PerfguardError
from perfguard.measure.gpus import VARIABLE
from perfguard.model import RunRecord, loads_record
from perfguard.report import RECORD_NAME

# launch(cmd, cwd, env, stdout file, stderr file) -> poll: the exit status once the process ended, else None.
Launch = Callable[[list[str], Path, Mapping[str, str], Path, Path], Callable[[], "int | None"]]
POLL_S = 0.05


_RUNNING: set[subprocess.Popen] = set()  # launched and not yet seen to end (stop_running)


def launch(cmd: list[str], cwd: Path, env: Mapping[str, str], out: Path, err: Path) -> Callable[[], int | None]:
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=stdout, stderr=stderr)
    _RUNNING.add(proc)

    def poll() -> int | None:
        status = proc.poll()
        if status is not None:
            _RUNNING.discard(proc)
        return status

    return poll


def stop_running(grace_s: float = 10.0) -> None:
    """End the processes `launch` started that still run (an ab stopped by Ctrl-C or SIGTERM): terminate,
    then kill what is still there after `grace_s`."""
    for proc in list(_RUNNING):
        proc.terminate()
    for proc in list(_RUNNING):
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _RUNNING.discard(proc)


@dataclasses.dataclass(frozen=True)
class Ran:
    """One side's round: its shards' records as one, and where its time went."""

    record: RunRecord
    wall_s: float
    # Per shard that ran: its process's time beyond its cases' own (start-up, collection, the run's end).
    fixed_s: dict[int, float]
    failed: bool  # some test failed (pytest exit 1); the cases it measured still count


def run_side(side: Side, k: int, args: Sequence[str], shards: Sequence[Shard], cases: Sequence[list[str]] | None,
             folder: Path, empty_baselines: Path, start: Launch = launch) -> Ran:
    """Round `k` of `side`; `cases[i]`: the node ids shard i runs (None: all that `args` select, one shard)."""
    polls = {}
    started = time.monotonic()
    for shard in shards:
        if cases is not None and not cases[shard.index]:
            continue
        out = folder / f"shard-{shard.index}"
        out.mkdir(parents=True, exist_ok=True)
        # Ours last, so they win over the same options in `args`; no baselines: the other side is the baseline.
        cmd = [sys.executable, "-m", "pytest", *args, "--perfguard", f"--perfguard-report={out}",
               f"--perfguard-baselines={empty_baselines}"]
        if cases is not None:
            listing = out / "cases.txt"
            listing.write_text("".join(f"{nodeid}\n" for nodeid in cases[shard.index]), encoding="utf-8")
            cmd.append(f"--perfguard-cases={listing}")
        env = {**environment(side, shard), RECORD_ONLY: "1"}
        polls[shard.index] = (start(cmd, side.cwd, env, out / "stdout", out / "stderr"), out)
    ended: dict[int, tuple[int, float]] = {}
    while True:
        for index, (poll, _) in polls.items():
            if index not in ended and (status := poll()) is not None:
                ended[index] = (status, time.monotonic() - started)
        if len(ended) == len(polls):  # the round ends with its last shard, not a poll interval later
            break
        time.sleep(POLL_S)
    records, fixed, failed = [], {}, False
    for index, (status, wall) in sorted(ended.items()):
        out = polls[index][1]
        record = _record(side, k, index, status, out)
        records.append(record)
        fixed[index] = max(0.0, wall - sum(case_seconds(r) for r in record.results))
        failed = failed or status == 1
    return Ran(merge(records), time.monotonic() - started, fixed, failed)


def collect(side: Side, args: Sequence[str], folder: Path, start: Launch = launch) -> Callable[[], list[str] | None]:
    """Start `pytest ARGS --collect-only` in the side's tree; the returned call waits for it and gives the
    node ids it collected (after -k, -m and --deselect), or None when it failed."""
    folder.mkdir(parents=True, exist_ok=True)
    listing = folder / "collected.txt"
    cmd = [sys.executable, "-m", "pytest", *args, "--collect-only", "-p", "perfguard.plugin.collected"]
    poll = start(cmd, side.cwd, {**environment(side, Shard(0, None)), COLLECTED: str(listing)},
                 folder / "stdout", folder / "stderr")

    def wait() -> list[str] | None:
        while (status := poll()) is None:
            time.sleep(POLL_S)
        if status != 0 or not listing.is_file():
            _show_tail(folder)
            return None
        return [line for line in listing.read_text(encoding="utf-8").splitlines() if line]

    return wait


def environment(side: Side, shard: Shard) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": side.pythonpath}
    if shard.gpu is not None:
        env[VARIABLE] = shard.gpu
    return env


def merge(records: Sequence[RunRecord]) -> RunRecord:
    """The records of one round's shards (disjoint cases) as one record."""
    first = records[0]
    devices = {d.uuid or d.slug: d for record in records for d in record.devices}
    return dataclasses.replace(first, created_at=records[-1].created_at, devices=tuple(devices.values()),
                               results=tuple(r for record in records for r in record.results))


def case_seconds(result: object) -> float:
    """A case's own time in a round: its setup and its measuring."""
    return (getattr(result, "setup_s", None) or 0.0) + (getattr(result, "wall_s", None) or 0.0)


def _record(side: Side, k: int, shard: int, status: int, out: Path) -> RunRecord:
    where = f"{side.label}, round {k + 1}" + (f", shard {shard}" if shard else "")
    path = out / RECORD_NAME
    if status not in (0, 1) or not path.is_file():
        raise _no_record(where, side, status, out, "without a perfguard record")
    try:
        record = loads_record(path.read_text(encoding="utf-8"), str(path))
    except (OSError, PerfguardError) as exc:
        raise MeasurementError(f"{where}: {exc}") from None
    if record.status != "complete":  # the record a run starts with: its process ended before writing its own
        raise _no_record(where, side, status, out, f"with its perfguard record {record.status}")
    return record


def _no_record(where: str, side: Side, status: int, out: Path, why: str) -> MeasurementError:
    _show_tail(out)
    return MeasurementError(f"{where}: pytest exited {status} in {side.cwd} {why} (its last lines are above); "
                            "check that the pytest arguments select perf cases")


def _show_tail(out: Path) -> None:
    text = "".join((out / name).read_text(encoding="utf-8", errors="replace") if (out / name).is_file() else ""
                   for name in ("stdout", "stderr"))
    print("\n".join(text.strip().splitlines()[-15:]), file=sys.stderr)
