"""Per-session state: measuring a case and judging it (on whichever process runs it), and gathering
results from the test reports (on the controller, which alone writes the record and the baselines).

Results ride on `report.user_properties` as plain dicts, so they survive pytest-xdist's trip from
worker to controller.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import perfguard
from perfguard.case import CaseInstance
from perfguard.errors import BaselineError, ConfigError, PerfguardError, first_line
from perfguard.model import BaselineFile, CaseResult, DeviceInfo, RunRecord, Verdict, from_jsonable, to_jsonable
from perfguard.plugin.options import Options
from perfguard.plugin.workers import PIN_KEY
from perfguard.report import mark_unfinished, write_run_files

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

RESULT_KEY = "perfguard"
DEVICE_KEY = "perfguard_device"
VERDICTS_KEY = "perfguard_verdicts"
THREADS_KEY = "perfguard_cpu_threads"


# At most this many cases per process are re-measured before they may fail: a change that slows
# every case (a new driver) must not turn a run into hours. Past it, a regression fails unconfirmed.
CONFIRM_CASES = 20


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
        self.unwritten_baselines: list[Path] = []  # baseline writes that failed: they fail the run
        self._marked = False  # the report folder's record says "unfinished" until this run's replaces it
        self.record: RunRecord | None = None
        self.fits: list[Scaling] | None = None  # the record's scaling fits, fitted once for the three renderers
        self._kind: str | None = None
        self.cpu_threads: int | None = None  # torch's threads while measuring on a CPU (measure.torch_state)
        self.cpu_workers = 0  # xdist workers measuring on one CPU at once (set by pytest_configure)
        self._confirmations = CONFIRM_CASES  # cases this process may still re-measure
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
        self._mark_unfinished()
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
        budget_s = instance.spec.budget_s or self.options.budget_s
        timeout_s = self.options.timeout_for(budget_s)
        if self.options.enabled and self.kind == "cpu":
            if self.cpu_threads is None:
                from perfguard.measure.torch_state import measuring_threads

                self.cpu_threads = measuring_threads()
            item.user_properties.append((THREADS_KEY, self.cpu_threads))
        if self.options.enabled:
            baseline = self._baseline(device)
            if isinstance(baseline, BaselineFile) and baseline.calibration:
                device = baseline.calibration.apply_to(device)

            def measure() -> CaseResult:
                return runner.measure(instance, device, SamplingRule(budget_s=budget_s), item.nodeid, timeout_s)

            result = measure()
        else:
            result = runner.smoke(instance, device, item.nodeid, timeout_s)
        failure = result.error if result.status == "error" else None
        if self.options.enabled and failure is None:
            result, failure, regressed = self._judge(item, result, device, measure)
            if self.options.profile == "all" or (self.options.profile == "regressed" and regressed):
                result = self._profiled(instance, result, device)
        # Attached once judged (and profiled), so that the result on the report is the final one.
        item.user_properties.append((RESULT_KEY, to_jsonable(result)))
        item.user_properties.append((DEVICE_KEY, to_jsonable(device)))
        if failure:
            raise CaseFailure(failure)
        return result

    def _mark_unfinished(self) -> None:
        """Before this run's first case (on the controller, which writes the files): mark the previous
        run's files stale (`report.mark_unfinished`), so that a run that dies, or cannot write its record
        at the end, leaves nothing that passes for its own. Under xdist a worker that dies is replaced
        and the run goes on: there the first result marks them, against the controller dying."""
        if self._marked or not self.options.enabled or hasattr(self.config, "workerinput"):
            return
        self._marked = True
        mark_unfinished(self.options.report_dir, RunRecord(
            created_at=_now(), perfguard_version=perfguard.__version__, options=self._recorded_options(), status="unfinished",
        ))

    def _profiled(self, instance: CaseInstance, result: CaseResult, device: DeviceInfo) -> CaseResult:
        """The result with the case's profile (its problem, if any, rides on the profile, not on the verdict)."""
        from perfguard.measure.profile import profile_case

        return dataclasses.replace(result, profile=profile_case(instance, device, self.options.report_dir))

    def _judge(
        self, item: pytest.Item, result: CaseResult, device: DeviceInfo, measure: Callable[[], CaseResult]
    ) -> tuple[CaseResult, str | None, bool]:
        """Compare with the baseline, re-measuring (`measure`) a case that looks slower before it may fail:
        (the result to keep, why the case fails or None, whether a metric regressed)."""
        from perfguard.analysis.verdict import compare_case, latency_regressed

        baseline = self._baseline(device)
        if isinstance(baseline, BaselineError):
            return result, f"{result.id}: measured, but not compared: {baseline}", False
        entry = baseline.cases.get(result.id) if baseline else None

        def judge(r: CaseResult) -> list[Verdict]:
            return compare_case(r, entry, threshold_pct=self.options.threshold_pct,
                                current_fingerprint=device.fingerprint(), baseline_file=self._label(device),
                                host=device.host)

        verdicts = judge(result)
        if latency_regressed(verdicts) and not self.options.update and self.options.confirm:
            result, verdicts = self._confirm(measure, result, verdicts, judge)
        item.user_properties.append((VERDICTS_KEY, [to_jsonable(v) for v in verdicts]))
        regressed = [v.message for v in verdicts if v.status == "regressed"]
        if regressed and not self.options.update:
            return result, f"{result.id}: " + f"\n{result.id}: ".join(regressed), True
        return result, None, bool(regressed)

    def _confirm(
        self, measure: Callable[[], CaseResult], first: CaseResult, verdicts: list[Verdict],
        judge: Callable[[CaseResult], list[Verdict]],
    ) -> tuple[CaseResult, list[Verdict]]:
        """Measure a case that looks regressed again, from a fresh setup, and let the verdict settle on all
        the measurements (analysis.verdict.settle)."""
        from perfguard.analysis.verdict import note, settle

        if self._confirmations <= 0:
            return first, note(verdicts, f"not re-measured: this run's allowance of {CONFIRM_CASES} re-measured cases is spent")
        self._confirmations -= 1
        measured = [(first, verdicts)]
        for _ in range(self.options.confirm):
            again = measure()
            if again.status != "ok":  # the first measurement stands: a failed re-run must not lift the gate
                return first, note(verdicts, f"its re-measurement failed: {first_line(again.error or '')}")
            measured.append((again, judge(again)))
        return settle(measured)

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
                self._mark_unfinished()
                result = from_jsonable(CaseResult, value, "test report")
                self.results[result.id] = result
            elif key == DEVICE_KEY:
                device = from_jsonable(DeviceInfo, value, "test report")
                self.devices[device.uuid or device.slug] = device
            elif key == THREADS_KEY and isinstance(value, int):
                self.cpu_threads = value
            elif key == VERDICTS_KEY:
                verdicts = [from_jsonable(Verdict, v, "test report") for v in value]
                if verdicts:
                    self.verdicts[verdicts[0].case_id] = verdicts

    def prepare_finish(self) -> None:
        """Import what `finish` needs: numpy, jinja2 and the report's template (about a second). A failure
        here is left for `finish` to report."""
        if not self.options.enabled:
            return
        try:
            from perfguard.analysis import scaling, verdict  # noqa: F401 - imported for their cost
            from perfguard.report import html, markdown  # noqa: F401

            html.prepare()
        except Exception:  # noqa: BLE001, S110 - finish renders again and reports what fails there
            pass

    def finish(self, interrupted: bool = False) -> None:
        """Missing cases, the run record, and (only when asked, and never after Ctrl-C) the baseline update."""
        if not self.options.enabled or not (self.results or self._marked):
            return
        # An interrupted run did not run the rest of the suite: those cases are not "missing".
        verdicts = [v for vs in self.verdicts.values() for v in vs] + ([] if interrupted else self._missing())
        now = _now()
        commit = _git_commit(self.config.rootpath)
        record = RunRecord(
            created_at=now,
            perfguard_version=perfguard.__version__,
            devices=tuple(self.devices.values()),
            results=tuple(sorted(self.results.values(), key=lambda r: r.id)),
            verdicts=tuple(sorted(verdicts, key=lambda v: (v.case_id, v.metric))),
            commit=commit,
            options=self._recorded_options(),
            status="interrupted" if interrupted else "complete",
        )
        self.record = record
        self.fits = _fits(record)
        self.problems += [r.profile.problem for r in record.results if r.profile and r.profile.problem]
        for path, problem in write_run_files(self.options.report_dir, record, self.fits):
            if problem:
                self.problems.append(problem)
            else:
                self.written.append(path)
        if self.options.update and interrupted:
            self.problems.append(
                f"interrupted: no baseline written ({len(self.results)} case(s) had finished); run --perfguard-update again"
            )
        elif self.options.update:
            from perfguard import store

            # A case whose latency moved past its tolerance starts a new series of runs: its old runs
            # describe other code, and mixed in they would read as noise.
            restart = {v.case_id for v in verdicts if v.metric == "latency" and v.status in ("regressed", "improved")}
            for slug, device in self._models().items():
                results = [r for r in self.results.values() if r.device == slug]
                self._attempt(
                    lambda: store.update(self.options.baselines_dir, device, results, commit=commit, recorded_at=now,
                                         keep_runs=self.options.keep_runs, restart=restart),
                    store.path_for(self.options.baselines_dir, slug),
                )

    def _attempt(self, write: Any, path: Path) -> None:
        try:
            write()
            self.written.append(path)
        except PerfguardError as exc:
            self.problems.append(f"{exc}; this run fails until its baseline is written")
            self.unwritten_baselines.append(path)

    def _recorded_options(self) -> dict[str, Any]:
        options = {"budget_s": self.options.budget_s, "threshold_pct": self.options.threshold_pct,
                   "profile": self.options.profile}
        # How a CPU run measured, for the reports' warning about its figures (report.advice.cpu_line).
        if self.cpu_threads is not None:
            options["cpu_threads"] = self.cpu_threads
        if self.cpu_workers > 1:
            options["cpu_workers"] = self.cpu_workers
        return options

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


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


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
