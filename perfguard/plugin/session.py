"""Per-session state: measuring a case and judging it (on whichever process runs it), and gathering
results from the test reports (on the controller, which alone writes the record and the baselines).

Results ride on `report.user_properties` as plain dicts, so they survive pytest-xdist's trip from
worker to controller.
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import perfguard
from perfguard.case import CaseInstance
from perfguard.errors import BaselineError, ConfigError, PerfguardError
from perfguard.model import BaselineFile, CaseResult, DeviceInfo, RunRecord, Verdict, from_jsonable, to_jsonable
from perfguard.plugin.options import Options
from perfguard.plugin.workers import PIN_KEY
from perfguard.report import write_run_files

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

RESULT_KEY = "perfguard"
DEVICE_KEY = "perfguard_device"
VERDICTS_KEY = "perfguard_verdicts"


class CaseFailure(Exception):
    """A case that errored or regressed: reported as its message, not as a perfguard traceback."""


class State:
    """Kept in `config.stash` and registered as a plugin, so it sees every test report."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.options = Options.of(config)
        self.results: dict[str, CaseResult] = {}
        self.devices: dict[str, DeviceInfo] = {}
        self.verdicts: dict[str, list[Verdict]] = {}
        self.owners: dict[str, str] = {}  # case id -> nodeid, to refuse duplicate ids
        self.written: list[Path] = []
        self.problems: list[str] = []  # files that could not be written, shown in red at the end
        self.record: RunRecord | None = None
        self.fits: list[Scaling] | None = None  # the record's scaling fits, fitted once for the three renderers
        self._kind: str | None = None
        self._baselines: dict[str, BaselineFile | None | BaselineError] = {}
        # On an xdist worker perfguard gave one GPU: that GPU's entry, checked at the first case.
        self._pinned: str | None = getattr(config, "workerinput", {}).get(PIN_KEY)

    # --- on the process that runs the case --------------------------------------------------

    @property
    def kind(self) -> str:
        """"cuda" or "cpu"; asked of torch only once a perf case is collected."""
        if self._kind is None:
            from perfguard.measure.device import default_kind

            self._kind = default_kind()
        return self._kind

    def run(self, item: pytest.Item, instance: CaseInstance) -> CaseResult:
        """Measure (or smoke-run) a case, attach its result and verdicts to the item, fail if it must."""
        owner = self.owners.setdefault(instance.id, item.nodeid)
        if owner != item.nodeid:
            raise CaseFailure(f"{item.nodeid}: case id {instance.id!r} is already used by {owner}; give one of them name=...")
        from perfguard.measure import runner
        from perfguard.measure.device import detect
        from perfguard.measure.timers import SamplingRule

        device = detect(self.kind)
        if self._pinned is not None and self.kind == "cuda":
            from perfguard.measure.device import pinning_problem

            problem = pinning_problem(self._pinned)
            if problem:
                raise CaseFailure(f"{instance.id}: {problem}")
            self._pinned = None  # CUDA is up and sees its one GPU: that cannot change in this process
        if self.options.enabled:
            baseline = self._baseline(device)
            if isinstance(baseline, BaselineFile) and baseline.calibration:
                device = baseline.calibration.apply_to(device)
            rule = SamplingRule(budget_s=instance.spec.budget_s or self.options.budget_s)
            result = runner.measure(instance, device, rule, item.nodeid)
        else:
            result = runner.smoke(instance, device, item.nodeid)
        failure = result.error if result.status == "error" else None
        if self.options.enabled and failure is None:
            failure, regressed = self._judge(item, result, device)
            if self.options.profile == "all" or (self.options.profile == "regressed" and regressed):
                result = self._profiled(instance, result, device)
        # Attached once judged (and profiled), so that the result on the report is the final one.
        item.user_properties.append((RESULT_KEY, to_jsonable(result)))
        item.user_properties.append((DEVICE_KEY, to_jsonable(device)))
        if failure:
            raise CaseFailure(failure)
        return result

    def _profiled(self, instance: CaseInstance, result: CaseResult, device: DeviceInfo) -> CaseResult:
        """The result with the case's profile (its problem, if any, rides on the profile, not on the verdict)."""
        from perfguard.measure.profile import profile_case

        return dataclasses.replace(result, profile=profile_case(instance, device, self.options.report_dir))

    def _judge(self, item: pytest.Item, result: CaseResult, device: DeviceInfo) -> tuple[str | None, bool]:
        """Compare with the baseline: (why the case fails, or None; whether a metric regressed)."""
        from perfguard.analysis.verdict import compare_case

        baseline = self._baseline(device)
        if isinstance(baseline, BaselineError):
            return f"{result.id}: measured, but not compared: {baseline}", False
        verdicts = compare_case(
            result,
            baseline.cases.get(result.id) if baseline else None,
            threshold_pct=self.options.threshold_pct,
            current_fingerprint=device.fingerprint(),
            baseline_file=self._label(device),
        )
        item.user_properties.append((VERDICTS_KEY, [to_jsonable(v) for v in verdicts]))
        regressed = [v.message for v in verdicts if v.status == "regressed"]
        if regressed and not self.options.update:
            return f"{result.id}: " + f"\n{result.id}: ".join(regressed), True
        return None, bool(regressed)

    def _baseline(self, device: DeviceInfo) -> BaselineFile | None | BaselineError:
        if device.slug not in self._baselines:
            from perfguard import store

            try:
                self._baselines[device.slug] = store.load(self.options.baselines_dir, device)
            except BaselineError as exc:
                self._baselines[device.slug] = exc
        return self._baselines[device.slug]

    def _label(self, device: DeviceInfo) -> str:
        from perfguard.store import path_for

        path = path_for(self.options.baselines_dir, device.slug)
        try:
            return str(path.relative_to(self.config.rootpath))
        except ValueError:
            return str(path)

    # --- on the controller ------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == RESULT_KEY:
                result = from_jsonable(CaseResult, value, "test report")
                self.results[result.id] = result
            elif key == DEVICE_KEY:
                device = from_jsonable(DeviceInfo, value, "test report")
                self.devices[device.uuid or device.slug] = device
            elif key == VERDICTS_KEY:
                verdicts = [from_jsonable(Verdict, v, "test report") for v in value]
                if verdicts:
                    self.verdicts[verdicts[0].case_id] = verdicts

    def prepare_finish(self) -> None:
        """Import what `finish` needs: scipy's statistics, numpy, jinja2 and the report's template (over a
        second). A failure here is left for `finish` to report."""
        if not self.options.enabled:
            return
        try:
            from perfguard.analysis import scaling, verdict  # noqa: F401 - imported for their cost
            from perfguard.report import html, markdown  # noqa: F401

            html.prepare()
        except Exception:  # noqa: BLE001, S110 - finish renders again and reports what fails there
            pass

    def finish(self) -> None:
        """Missing cases, the run record, and (only when asked) the baseline update."""
        if not self.options.enabled or not self.results:
            return
        verdicts = [v for vs in self.verdicts.values() for v in vs] + self._missing()
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        commit = _git_commit(self.config.rootpath)
        record = RunRecord(
            created_at=now,
            perfguard_version=perfguard.__version__,
            devices=tuple(self.devices.values()),
            results=tuple(sorted(self.results.values(), key=lambda r: r.id)),
            verdicts=tuple(sorted(verdicts, key=lambda v: (v.case_id, v.metric))),
            commit=commit,
            options={"budget_s": self.options.budget_s, "threshold_pct": self.options.threshold_pct,
                     "profile": self.options.profile},
        )
        self.record = record
        self.fits = _fits(record)
        self.problems += [r.profile.problem for r in record.results if r.profile and r.profile.problem]
        for path, problem in write_run_files(self.options.report_dir, record, self.fits):
            if problem:
                self.problems.append(problem)
            else:
                self.written.append(path)
        if self.options.update:
            from perfguard import store

            for slug, device in self._models().items():
                results = [r for r in self.results.values() if r.device == slug]
                self._attempt(
                    lambda: store.update(self.options.baselines_dir, device, results, commit=commit, recorded_at=now),
                    store.path_for(self.options.baselines_dir, slug),
                )

    def _attempt(self, write: Any, path: Path) -> None:
        try:
            write()
            self.written.append(path)
        except PerfguardError as exc:
            self.problems.append(str(exc))

    def _models(self) -> dict[str, DeviceInfo]:
        """One device per model (slug): several GPUs of one model share a baseline file."""
        return {d.slug: d for d in self.devices.values()}

    def _missing(self) -> list[Verdict]:
        """Cases of this run's devices' baselines that this run selected and did not run (informational,
        never a failure); those it did not select are only counted, in `Selection.left_out`."""
        from perfguard.analysis.verdict import compare_case
        from perfguard.plugin.selection import Selection

        selection = Selection.of(self.config)
        missing = []
        for slug, device in self._models().items():
            baseline = self._baseline(device)
            if not isinstance(baseline, BaselineFile):
                continue
            for case_id, entry in sorted(baseline.cases.items()):
                if case_id in self.results:
                    continue
                if selection.selects(entry.result.nodeid):
                    missing += compare_case(None, entry, baseline_file=self._label(device))
                else:
                    selection.left_out.append(case_id)
        return missing


def _fits(record: RunRecord) -> list[Scaling] | None:
    """The record's scaling fits; None when fitting fails, so that each renderer tries and reports it."""
    from perfguard.report.advice import ranked_scalings

    try:
        return ranked_scalings(record.results, record.devices)
    except Exception:  # noqa: BLE001 - a report must never take the run down
        return None


def _git_commit(root: Path) -> str | None:
    """The commit the run measured; None outside a git checkout or without git (a record needs none)."""
    from perfguard import git

    try:
        return git.full_hash(root, "HEAD")
    except ConfigError:
        return None
