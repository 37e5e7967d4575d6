"""What `perfguard baseline accept` decides about records before the baseline's rule sees their runs (which
record is a run at all, and which records are one run), and what it notes of the rule's answers for its
summary line. cli/records.py's command uses these."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from perfguard.model import Admit, Admitted, BaselineEntry, Candidate, DeviceInfo, RunRecord, RunSummary, names
from perfguard.model.names import shown


def noting_origins(admit: Admit, took: set[str]) -> Admit:
    """`admit`, noting in `took` where each run it let join a series came from."""
    def noted(case_id: str, entry: BaselineEntry | None, candidates: Sequence[Candidate]) -> Admitted:
        admitted = admit(case_id, entry, candidates)
        took.update(c.origin for c in candidates if any(_same_run(run, c.summary) for run in admitted.runs))
        return admitted

    return noted


def _same_run(kept: RunSummary, asked: RunSummary) -> bool:
    """Whether `kept` is the candidate run `asked`: itself, or itself marked with its acceptance's reason."""
    return kept is asked or (kept.accepted is not None and dataclasses.replace(kept, accepted=asked.accepted) == asked)


class Intake:
    """The records one `accept` has read so far, and why it refuses the next ("" when it is a run to add):
    the runs given (by what they measured), the cards named (by UUID) and the model of each baseline (in
    `folder`, or begun by a record of this accept). A record's device, dates and hosts are what it says of
    itself: its device must say one thing (its name makes its slug, each card one model) and say what its
    baseline says."""

    def __init__(self, folder: Path | str, in_future: Callable[[str], bool]):
        self.folder, self.in_future = folder, in_future
        self.given: dict[tuple[object, ...], str] = {}  # run_id -> the record it was first given as
        self.cards: dict[str, tuple[DeviceInfo, str]] = {}  # UUID -> the device and record that first named it
        # slug -> the model its baseline holds, and where it says so: the file, or the record that begins it
        self.models: dict[str, tuple[DeviceInfo, str] | None] = {}

    def refusal(self, path: str, record: RunRecord) -> str:
        why = self._why(path, record)
        self.given.setdefault(run_id(record), path)
        if not why:
            for d in record.devices:
                if d.uuid:
                    self.cards.setdefault(d.uuid, (d, path))
                if self._model(d.slug) is None:
                    self.models[d.slug] = (d, path)
        return why

    def _why(self, path: str, record: RunRecord) -> str:
        if unfinished(record):
            return unfinished(record)
        if self.in_future(record.created_at):
            return f"dated {shown(record.created_at)}, in the future: check the clock of the machine that wrote it"
        devices = self._device_problem(record)
        if devices:
            return f"{devices}; was it edited? Add records as perfguard wrote them"
        if run_id(record) in self.given:
            return (f"the same run as {self.given[run_id(record)]} (the same samples, whatever its date, commit, host "
                    "or card say): counted once")
        return ""

    def _device_problem(self, record: RunRecord) -> str:
        """Where the record's devices disagree with each other, with the cards of the records before it or with
        their baselines' devices ("" where they agree). A baseline holds one model's runs: a device named
        one model and slugged as another, or a known card renamed, would put runs in the wrong one."""
        for d in record.devices:
            slug = names.device_slug(d.kind, d.name)
            if d.slug != slug:
                return f"its device {shown(d.name)} has the slug {shown(d.slug)}, but that name's is {slug}"
            first = self.cards.get(d.uuid or "")
            if first and not first[0].same_model(d):
                return f"it names card {shown(d.uuid)} {shown(d.name)}, which {first[1]} names {shown(first[0].name)}"
            model = self._model(d.slug)
            if model and not model[0].same_model(d):
                return f"its device {shown(d.name)} ({d.kind}) is not {model[1]}'s, {shown(model[0].name)} ({model[0].kind})"
        by_uuid: dict[str, DeviceInfo] = {}
        for d in record.devices:
            if d.uuid and not by_uuid.setdefault(d.uuid, d).same_model(d):
                return f"it lists card {shown(d.uuid)} as {shown(by_uuid[d.uuid].name)} and as {shown(d.name)}"
        for r in record.results:
            if r.status != "ok":
                continue
            listed = [d for d in record.devices if d.slug == r.device]
            if not listed:
                return f"case {shown(r.id)} was measured on {shown(r.device)}, a device the record does not list"
            if r.device_uuid and r.device_uuid not in {d.uuid for d in listed}:
                return f"case {shown(r.id)} was measured on card {shown(r.device_uuid)}, which the record does not list as {r.device}"
        return ""

    def _model(self, slug: str) -> tuple[DeviceInfo, str] | None:
        if slug not in self.models:
            from perfguard.store import load, path_for

            baseline = load(self.folder, slug)
            self.models[slug] = (baseline.device, str(path_for(self.folder, slug))) if baseline else None
        return self.models[slug]


def unfinished(record: RunRecord) -> str:
    """Why a record is no complete run ("" when it is): what `perfguard check` fails and `baseline accept` refuses."""
    if record.status == "complete":
        return ""
    return (f"its status is {shown(record.status)}, not complete: the run did not finish (Ctrl-C, a crash, "
            "os._exit in a case), so its cases are not a run of the suite")


def run_id(record: RunRecord) -> tuple[object, ...]:
    """What makes two records one run, however often it is copied or re-stamped: every sample it measured,
    by case and kind of time. Not what the record says of itself (its date, commit, host, cards or device:
    a copy re-dated in another UTC offset, or with each host renamed, counted as another run); no second
    run on a real clock repeats all its samples to the last digit."""
    measured = tuple(sorted((r.id, metric, t.samples_ms) for r in record.results if r.status == "ok"
                            for metric, t in r.timings.items()))
    # A record that measured nothing has no figures to tell it by (and no run to add): by its date, then.
    return measured or (record.created_at,)
