"""What the HTML and Markdown reports show, worked out once from run records: merged, ordered, formatted.

Merging (`perfguard report A.json B.json ...`, or one record): results are grouped by device slug,
so several GPU models sit side by side under one case id. Several records of the same device
(xdist workers, reruns) are taken in `created_at` order and the later record wins per case; a case
a record only lists as `missing` (in its baseline, not run there) never replaces one that was
measured, so the records of two workers that each ran half the cases merge into the whole run.

Figures that issue 4 adds to the model (roofline bound, efficiency, profiler top operators, memory
breakdown) are read with `getattr(..., None)`: the reports show "n/a" or "not captured" until the
record carries them, and show them as soon as it does.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfguard import units
from perfguard.analysis.decide import STATUS_ORDER, case_status, rank
from perfguard.model import TIME_METRICS, CaseResult, DeviceInfo, RunRecord, Verdict
from perfguard.report import words

STATUS_LABEL = {"measured": "not compared"}


@dataclasses.dataclass(frozen=True)
class Entry:
    """One case on one device, from the record that won the merge."""

    case_id: str
    device: str
    result: CaseResult | None  # None: the case is only in the baseline (a `missing` verdict)
    verdicts: tuple[Verdict, ...]
    created_at: str
    commit: str | None
    card: str | None = None  # the card it ran on ("GPU 3 (GPU-8e6a1c2d)"), where the records used several of its model

    @functools.cached_property  # asked for by every column, count, sort and filter of a report
    def status(self) -> str:
        return case_status(self.verdicts, self.result)

    def verdict(self, metric: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.metric == metric), None)

    def judged(self) -> Verdict | None:
        """The verdict of the judged figure (the first time verdict: GPU time, or the caller's time)."""
        metric = self.result.judged_metric if self.result is not None else None
        return self.verdict(metric) if metric and self.verdict(metric) else next(
            (v for v in self.verdicts if v.metric in TIME_METRICS), None)


@dataclasses.dataclass(frozen=True)
class Device:
    """A device model (slug) as the latest record that used it describes it."""

    info: DeviceInfo
    units: int  # how many physical devices of this model the records used
    created_at: str
    commit: str | None
    perfguard_version: str


@dataclasses.dataclass
class Merged:
    devices: dict[str, Device]  # slug -> device, in the order first seen
    cases: dict[str, dict[str, Entry]]  # case id -> slug -> entry, most pressing case first
    records: int
    replaced: int  # measured results that a later record of the same device replaced

    def entries(self) -> list[Entry]:
        return [e for by_device in self.cases.values() for e in by_device.values()]

    def results(self) -> list[CaseResult]:
        """Each case's result on each device, where it has one."""
        return [e.result for e in self.entries() if e.result is not None]

    def counts(self) -> dict[str, int]:
        """Cases (one per case and device) by overall status, in display order, zeros left out."""
        tally = dict.fromkeys(STATUS_ORDER, 0)
        for e in self.entries():
            tally[e.status] += 1
        return {s: n for s, n in tally.items() if n}


def card_names(results: Sequence[CaseResult], devices: Sequence[DeviceInfo]) -> dict[str, str]:
    """Case id -> the card it ran on, "GPU 3 (GPU-8e6a1c2d)" (NVML's index, the UUID's start), for the
    cases of a device model the results measured on more than one card (xdist, perfguard ab -n);
    nothing where every case of a model ran on one card."""
    by_uuid = {d.uuid: d for d in devices if d.uuid}
    cards: dict[str, set[str]] = {}
    for r in results:
        if r.device_uuid:
            cards.setdefault(r.device, set()).add(r.device_uuid)
    named = {}
    for r in results:
        if r.device_uuid and len(cards.get(r.device, ())) > 1:
            index = getattr(by_uuid.get(r.device_uuid), "index", None)
            short = r.device_uuid[:12]
            named[r.id] = f"GPU {index} ({short})" if index is not None else short
    return named


def label(status: str) -> str:
    return STATUS_LABEL.get(status, status)


def merge(records: Sequence[RunRecord]) -> Merged:
    devices: dict[str, Device] = {}
    seen_units: dict[str, set[Any]] = {}
    cases: dict[str, dict[str, Entry]] = {}
    replaced = 0
    for record in sorted(records, key=lambda r: _instant(r.created_at)):
        for d in record.devices:
            seen_units.setdefault(d.slug, set()).add(d.uuid or (d.name if d.index is None else d.index))
        slugs = [d.slug for d in record.devices]
        for d in record.devices:
            devices[d.slug] = Device(d, len(seen_units[d.slug]), record.created_at, record.commit, record.perfguard_version)
        verdicts: dict[str, list[Verdict]] = {}
        for v in record.verdicts:
            verdicts.setdefault(v.case_id, []).append(v)
        for r in record.results:
            slug = r.device or (slugs[0] if len(set(slugs)) == 1 else "unknown")
            if slug not in devices:
                devices[slug] = Device(DeviceInfo(kind="unknown", name=slug, slug=slug), 1, record.created_at,
                                       record.commit, record.perfguard_version)
            old = cases.setdefault(r.id, {}).get(slug)
            replaced += old is not None and old.result is not None
            cases[r.id][slug] = Entry(r.id, slug, r, tuple(verdicts.pop(r.id, ())), record.created_at, record.commit)
        for case_id, vs in verdicts.items():  # verdicts without a result: cases of the baseline that did not run
            slug = _baseline_slug(vs, slugs)
            if slug not in devices:
                devices[slug] = Device(DeviceInfo(kind="unknown", name=slug, slug=slug), 1, record.created_at,
                                       record.commit, record.perfguard_version)
            old = cases.setdefault(case_id, {}).get(slug)
            if old is None or old.result is None:
                cases[case_id][slug] = Entry(case_id, slug, None, tuple(vs), record.created_at, record.commit)
    named = card_names([e.result for by_device in cases.values() for e in by_device.values() if e.result],
                       [d for record in records for d in record.devices])
    cases = {case_id: {slug: dataclasses.replace(e, card=named.get(case_id)) if e.result and e.result.device_uuid else e
                       for slug, e in by_device.items()} for case_id, by_device in cases.items()}
    order = list(devices)
    ordered = {
        case_id: dict(sorted(by_device.items(), key=lambda kv: order.index(kv[0])))
        for case_id, by_device in sorted(cases.items(), key=lambda kv: (min(rank(e.status) for e in kv[1].values()), kv[0]))
    }
    return Merged(devices, ordered, len(records), replaced)


def _instant(created_at: str) -> tuple[float, str]:
    try:
        moment = datetime.datetime.fromisoformat(created_at)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        return moment.timestamp(), created_at
    except ValueError:
        return float("-inf"), created_at


def _baseline_slug(verdicts: list[Verdict], slugs: list[str]) -> str:
    """The device a baseline-only case belongs to: its baseline file is named after the slug."""
    for v in verdicts:
        if v.baseline_file and Path(v.baseline_file).stem in slugs:
            return Path(v.baseline_file).stem
    if len(set(slugs)) == 1:
        return slugs[0]
    return next((Path(v.baseline_file).stem for v in verdicts if v.baseline_file), "unknown")


# --- formatting -------------------------------------------------------------------------------


def when(created_at: str | None) -> str:
    """"2026-11-29 21:04 UTC" from an ISO time; anything else as it is."""
    if not created_at:
        return "n/a"
    try:
        moment = datetime.datetime.fromisoformat(created_at)
    except ValueError:
        return created_at
    if moment.utcoffset() == datetime.timedelta(0):
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M %z").strip()


def params_text(result: CaseResult | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in result.params.items()) if result and result.params else ""


def change(v: Verdict | None) -> str:
    if v is None or v.change_pct is None:
        return "new" if v is not None and v.status == "new" else "n/a"
    return "0.0%" if round(v.change_pct, 1) == 0 else f"{v.change_pct:+.1f}%"


def detects(v: Verdict | None) -> str:
    """The smallest slowdown the gate catches for a case now, and over how many baseline runs: "1.8% · 5 runs"."""
    if v is None or v.noise is None:
        return "n/a"
    return f"{words.noise_pct(v.noise.detectable_pct, v.noise)} · {units.plural(v.noise.runs, 'run')}"


def ci_text(result: CaseResult | None) -> str:
    lat = result.judged_time if result else None
    return "n/a" if lat is None else f"±{lat.ci_half_width_pct:.2f}%"


def median(result: CaseResult | None) -> float | None:
    return result.judged_time.median_ms if result and result.judged_time else None


def metric(result: CaseResult | None, name: str) -> Any:
    """A figure of `result.metrics` by name, or None (also for fields the model does not have yet)."""
    return getattr(result.metrics, name, None) if result is not None and result.metrics is not None else None


def peak_memory(result: CaseResult | None) -> int | None:
    return result.memory.peak_allocated_bytes if result is not None and result.memory is not None else None


def footprint(result: CaseResult | None) -> int | None:
    return result.memory.footprint_bytes if result is not None and result.memory is not None else None


def retained_text(result: CaseResult | None) -> str:
    """"+1.0 MiB/call" for a case whose calls keep memory for good; "" for one whose calls do not."""
    from perfguard.analysis.memory_verdicts import leaks

    m = result.memory if result is not None else None
    return f"+{units.size(m.retained_bytes_per_call)}/call" if m is not None and leaks(m) else ""


def footprint_text(result: CaseResult | None) -> str:
    """The footprint, and what each call retains when it keeps memory: "4.6 GiB +1.0 MiB/call"."""
    return " ".join(t for t in (units.size(footprint(result)), retained_text(result)) if t)


def versions(info: DeviceInfo) -> list[tuple[str, str]]:
    """The header facts of a device that are known, as (label, value)."""
    facts = [
        ("driver", info.driver), ("CUDA", info.cuda), ("torch", info.torch), ("triton", info.triton),
        ("python", info.python), ("SM", info.compute_capability),
        ("peak BW", f"{info.peak_bandwidth_gbps:,.0f} GB/s" if info.peak_bandwidth_gbps else None),
        ("SMs", info.sm_count), ("L2", units.size(info.l2_bytes) if info.l2_bytes else None),
        ("memory", units.size(info.memory_bytes) if info.memory_bytes else None),
        ("CPUs", info.cpu_count if info.kind == "cpu" else None),
    ]
    return [(k, str(v)) for k, v in facts if v is not None]


def environment_mismatches(entry: Entry) -> list[str]:
    seen: dict[str, None] = {}
    for v in entry.verdicts:
        for m in v.env_mismatch:
            seen[m] = None
    return list(seen)
