"""What a baseline keeps, frozen: per case the summaries of its runs (the run, not the call, is the
unit of evidence) and the newest run's result; per GPU model, its file and calibration. And what a
write of it asks of the rule that admits runs to a case's series (`Admit`: analysis/series.py's
Admission is one): the store applies it inside its lock, and knows it by these types alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from perfguard.model.measured import Metrics
from perfguard.model.records import (MAX_BASELINE_SAMPLES, SAMPLE_DIGITS, SCHEMA_VERSION, SHOWN_ONLY,
                                     SIGNIFICANT_DIGITS, CaseResult, DeviceInfo, Regime, TimeMetric, round_sig,
                                     thin_samples)


@dataclasses.dataclass(frozen=True, slots=True)
class RunSummary:
    """One independent run of a case, as a baseline keeps it: the run, not the call, is the unit of
    evidence (calls within a run share its clocks, card and host; runs do not)."""

    recorded_at: str
    # Each kind of time's median (ms), and the samples behind it (none kept in a run of schema 2). Plain
    # mappings of figures, which the cyclic collector leaves alone: an object a kind of time (with a
    # half-width no verdict read) made a baseline of 5,360 cases of 18 runs take 0.9 s to build its runs,
    # against 0.35 s (benchmarks/scaling.py).
    medians_ms: dict[TimeMetric, float] = dataclasses.field(default_factory=dict)
    sample_counts: dict[TimeMetric, int] = dataclasses.field(default_factory=dict)
    sm_clock_mhz: float | None = None  # mean SM clock while it ran (NVML)
    power_capped: bool = False
    peak_allocated_bytes: int | None = None
    device_uuid: str | None = None
    host: str | None = None
    commit: str | None = None
    regime: Regime | Literal[""] = ""  # "" in a run migrated from schema 2, which did not keep it
    # The run that began its series as a change a person accepted (`perfguard baseline accept --case`,
    # or an acceptance file's entry): why, in their words; None for every other run.
    accepted: str | None = None

    def median_of(self, metric: str) -> float | None:
        return self.medians_ms.get(metric)  # type: ignore[call-overload]


@dataclasses.dataclass(frozen=True, slots=True)
class BaselineEntry:
    """One case in a baseline file: the summaries of its last runs (oldest first) and the newest
    run's result (samples capped), with when, where and under what that run was recorded."""

    recorded_at: str
    commit: str | None
    fingerprint: dict[str, Any]  # DeviceInfo.fingerprint() at recording time
    result: CaseResult
    # Read from a file, a model/layout.py Runs: this tuple, built from the file's columns when first read.
    runs: tuple[RunSummary, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Calibration:
    """What `perfguard calibrate` measured on this GPU model: its copy bandwidth and matmul rates."""

    measured_at: str
    fingerprint: dict[str, Any]  # DeviceInfo.fingerprint() when measured
    copy_gbps: float  # a large device-to-device copy, read + write bytes over the median time
    copy_bytes: int  # the size of the copied buffer
    tflops: dict[str, float]  # median matmul rate by dtype ("bf16", "fp16", "tf32", "fp32", "fp64")
    matmul_n: dict[str, int]  # the n of the n×n×n matmul measured for each dtype

    def apply_to(self, device: DeviceInfo) -> DeviceInfo:
        """`device` with these roofs, which the roofline then uses instead of the datasheet's."""
        return dataclasses.replace(device, calibrated_bandwidth_gbps=self.copy_gbps, calibrated_tflops=dict(self.tflops))


@dataclasses.dataclass(frozen=True, slots=True)
class BaselineFile:
    """`baselines/<device.slug>.json`: the accepted figures of one GPU (or CPU) model, by case id."""

    device: DeviceInfo
    cases: dict[str, BaselineEntry]
    schema_version: int = SCHEMA_VERSION
    calibration: Calibration | None = None

    def calibrated(self, device: DeviceInfo | None = None) -> DeviceInfo:
        """`device` (the file's own by default) with this file's measured roofs, where it has them."""
        device = device or self.device
        return self.calibration.apply_to(device) if self.calibration else device


def run_summary(result: CaseResult, recorded_at: str, commit: str | None = None, host: str | None = None) -> RunSummary:
    """What a baseline keeps of one measured run of a case."""
    telemetry, memory = result.telemetry, result.memory
    return RunSummary(
        recorded_at=recorded_at,
        medians_ms={metric: t.summary.median_ms for metric, t in result.timings.items()},
        sample_counts={metric: t.summary.n for metric, t in result.timings.items()},
        sm_clock_mhz=telemetry.sm_clock_mhz_mean if telemetry else None,
        power_capped=bool(telemetry and telemetry.power_capped),
        peak_allocated_bytes=memory.peak_allocated_bytes if memory else None,
        device_uuid=result.device_uuid,
        host=host,
        commit=commit,
        regime=result.regime,
    )


def kept_entry(entry: BaselineEntry) -> BaselineEntry:
    """What a baseline file keeps of an entry: its result as `kept` says."""
    return dataclasses.replace(entry, result=kept(entry.result))


def kept(result: CaseResult) -> CaseResult:
    """What a baseline keeps of its newest run's result: what the gate and its rank tests read, and what
    a reader needs to trust it. Not kept (the run's record keeps them all): samples past
    MAX_BASELINE_SAMPLES; a time's spread (mean, min, max, percentiles), the clock, temperature and power
    before and after the case, the allocator's reserved bytes, fragmentation and retries, the memory NVML
    saw, what the set-up and passes took (figures the reports show; the mean clock, whether the case was
    capped or throttled, and the memory figures the memory verdicts compare stay); the figures derived from
    the median, bytes and flops but the roofline's bound, which the gate's priors read (the bandwidth,
    rates, utilisations and launch overhead: the record has them, and they follow from what is kept); and
    anything that names one card or run (a profile's trace file, a process left running with its pid).
    The committed H200 baseline's median case took 3.9 KB with them, 2.9 KB without (issue 34; the
    derived figures another 0.3 KB at 18 runs). Kept twice is kept once."""
    timings = {m: dataclasses.replace(t, samples_ms=thin_samples(t.samples_ms, MAX_BASELINE_SAMPLES),
                                      summary=dataclasses.replace(t.summary, **_SPREAD))
               for m, t in result.timings.items()}
    telemetry = result.telemetry and dataclasses.replace(result.telemetry, **_AROUND)
    memory = result.memory and dataclasses.replace(result.memory, **_UNJUDGED_MEMORY)
    counters = result.counters and dataclasses.replace(result.counters, wall_s=None)
    metrics = result.metrics and Metrics(bound=result.metrics.bound)
    return dataclasses.replace(result, timings=timings, telemetry=telemetry, memory=memory, counters=counters, metrics=metrics, setup_s=None,
                               wall_s=None, passes_s={}, device_uuid=None, error=None, profile=None, left_processes=())


_SPREAD = dict.fromkeys(("mean_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "iqr_ms"))
_AROUND = dict.fromkeys(("sm_clock_mhz_before", "sm_clock_mhz_after", "temperature_c_before", "temperature_c_after",
                         "power_w_before", "power_w_after"))
_UNJUDGED_MEMORY = dict.fromkeys(("peak_reserved_bytes", "fragmentation", "alloc_retries", "nvml_used_delta_bytes"))


def identity(run: RunSummary) -> tuple[object, ...]:
    """What makes two run summaries from files one run: what it measured (each kind of time's median and
    sample count, the mean SM clock, the peak memory), never what the file says of it: not when it ran,
    not the card (UUID) or host, not the commit. Those are stamps a copy can change without measuring
    anything (a run this process measured is new whatever its figures: Candidate.measured_here).

    Re-stamped, one slow record counted as five runs and widened a host's tolerance from ±21% to
    ±130% (five UTC offsets of one date), and moved a case's centre from 3.16 to 6.31 µs (five copies,
    each naming a host of its own: issue 46). A re-stamped copy keeps every figure; a second real run
    does not, but for a tiny kernel whose event times are quantized it can: 12 of the H200 baseline's
    1,240 runs of 2026-12-02 repeated an earlier run's figures exactly, and counted once (none of the
    committed file's 2,397 runs repeats another's now). That costs a run equal to one kept (a tolerance a
    little wider, never narrower); a copy counted five times widens every one. Figures as a file keeps
    them (rounded): a run read back from its baseline is the run its record gives again."""
    def written(name: str, x: float | None) -> float | None:
        return None if x is None else round_sig(x, SAMPLE_DIGITS if name in SHOWN_ONLY else SIGNIFICANT_DIGITS)

    times = tuple(sorted((m, written("median_ms", median), run.sample_counts.get(m)) for m, median in run.medians_ms.items()))
    return (times, written("sm_clock_mhz", run.sm_clock_mhz), run.peak_allocated_bytes)


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """A run that asks to join a case's series: its result, its summary, and where it came from."""

    result: CaseResult
    summary: RunSummary
    origin: str  # as a line names it: "this run", a record's path, a baseline file's
    # Measured by this very process (a plugin update), not read from a file: it cannot be a copy of a run,
    # so it is never counted as one, however like an earlier run its figures are (a clock made exact
    # for a test measures the same figures every run).
    measured_here: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Admitted:
    """The series to keep for a case (oldest first, before the cap), and the result the entry keeps:
    the newest admitted run's, or None when none was admitted (the entry stays as it was)."""

    runs: tuple[RunSummary, ...]
    result: Candidate | None


# Decides which new runs join a case's series: (case id, its entry or None, the new runs) -> what to keep.
Admit = Callable[[str, BaselineEntry | None, Sequence[Candidate]], Admitted]


class Merge(Protocol):
    """Decides which runs of several baseline files of one GPU model a case keeps (a merge of them)."""

    def merged(self, case_id: str, runs: Sequence[tuple[RunSummary, str]], newest: CaseResult) -> tuple[RunSummary, ...]:
        """`runs`: (summary, the file it came from), any order; `newest`: the newest entry's result."""
        ...
