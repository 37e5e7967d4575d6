"""The measurer: runs the perf cases of the process it lives in (an xdist worker, or the one process).

It finds the device, measures (or smoke-runs) each case, judges it against its baseline, re-measures
one that looks slower before it may fail, profiles where asked, and puts what it found on the test
report (perfguard.plugin.properties) for the recorder. It is made when the process meets its first
perf case, so that a run without one never makes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from perfguard import defaults
from perfguard.case import CaseInstance
from perfguard.errors import BaselineError, first_line
from perfguard.model import BaselineFile, CaseResult, DeviceInfo, Verdict, to_jsonable
from perfguard.plugin.baselines import Baselines
from perfguard.plugin.options import Options
from perfguard.plugin.properties import DEVICE_KEY, RESULT_KEY, THREADS_KEY, VERDICTS_KEY
from perfguard.plugin.workers import PIN_KEY
from perfguard.report import steps, words

CONFIRM_CASES = defaults.CONFIRM_CASES

MEASURER = pytest.StashKey["Measurer"]()
# Called before each case this process measures: the recorder's `mark_unfinished`, where the recorder
# runs in this process (without xdist). Set by the plugin at configure time; an xdist worker has none.
BEFORE_CASE = pytest.StashKey[Callable[[], None]]()


class CaseFailure(Exception):
    """A case that errored or regressed: reported as its message, not as a perfguard traceback."""


class Measurer:
    """Kept in `config.stash`; `Measurer.of(config)` makes it on first use."""

    def __init__(self, config: pytest.Config):
        from perfguard import plugin
        from perfguard.measure import watchdog

        watchdog.keep_stderr(plugin.stderr_copy)  # the copy the plugin took before pytest captured stderr
        self.config = config
        self.options = Options.of(config)
        self.baselines = Baselines.of(config)
        self.invocation = self.options.invocation
        self.owners: dict[str, str] = {}  # case id -> nodeid, to refuse duplicate ids
        self.cpu_threads: int | None = None  # torch's threads while measuring on a CPU (measure.torch_state)
        self._kind: str | None = None
        self._confirmations = CONFIRM_CASES  # cases this process may still re-measure
        self._before_case = config.stash.get(BEFORE_CASE, None)
        # On an xdist worker perfguard gave one GPU: that GPU's entry, checked at the first case.
        self._pinned: str | None = getattr(config, "workerinput", {}).get(PIN_KEY)

    @classmethod
    def of(cls, config: pytest.Config) -> Measurer:
        if MEASURER not in config.stash:
            config.stash[MEASURER] = cls(config)
        return config.stash[MEASURER]

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
        if self._before_case is not None:
            self._before_case()
        from perfguard.measure import runner
        from perfguard.measure.device import detect
        from perfguard.measure.timers import SamplingRule

        device = detect(self.kind, self.options.host)
        if self._pinned is not None and self.kind == "cuda":
            from perfguard.measure.device import pinning_problem

            problem = pinning_problem(self._pinned)
            if problem:
                raise CaseFailure(f"{instance.id}: {problem}")
            self._pinned = None  # CUDA is up and sees its one GPU: that cannot change in this process
        budget_s = instance.spec.budget_s or self.options.budget_s
        timeout_s = self.options.timeout_for(budget_s, compiles=instance.spec.compile is not None)
        if self.options.enabled and self.kind == "cpu":
            if self.cpu_threads is None:
                from perfguard.measure.torch_state import measuring_threads

                self.cpu_threads = measuring_threads()
            item.user_properties.append((THREADS_KEY, self.cpu_threads))
        if self.options.enabled:
            baseline = self.baselines.load(device)
            if isinstance(baseline, BaselineFile):
                device = baseline.calibrated(device)

            def measure() -> CaseResult:
                return runner.measure(instance, device, SamplingRule(budget_s=budget_s), item.nodeid, timeout_s)

            result = measure()
        else:
            result = runner.smoke(instance, device, item.nodeid, timeout_s)
        failure = result.error if result.status == "error" else None
        if self.options.enabled and failure is None:
            result, failure, regressed, moved = self._judge(item, result, device, measure)
            if self.options.profile == "all" or (self.options.profile == "regressed" and regressed):
                from perfguard.measure.profile import profiled

                # Its problem, if any, rides on the profile, not on the verdict.
                result = profiled(result, instance, device, self.options.report_dir)
            if failure and moved is not None:  # the failure ends with where it moved, and the profile's trace
                trace = result.profile.trace if result.profile else None
                where = words.where_line(moved, str(Path(self.options.report_dir) / trace) if trace else None)
                failure += f"\n{result.id}: {where}" if where else ""
        # Attached once judged (and profiled), so that the result on the report is the final one.
        item.user_properties.append((RESULT_KEY, to_jsonable(result)))
        item.user_properties.append((DEVICE_KEY, to_jsonable(device)))
        if failure:
            raise CaseFailure(failure)
        return result

    def _judge(
        self, item: pytest.Item, result: CaseResult, device: DeviceInfo, measure: Callable[[], CaseResult]
    ) -> tuple[CaseResult, str | None, bool, Verdict | None]:
        """Judge against the baseline (analysis/judgement.py), re-measuring (`measure`) a case that looks
        slower before it may fail: (the result to keep, why the case fails or None, whether a metric regressed,
        the failing verdict that says where it moved)."""
        from perfguard.analysis.judgement import judge
        from perfguard.analysis.verdict import compare_case

        baseline = self.baselines.load(device)
        if isinstance(baseline, BaselineError):
            return (result, f"{result.id}: measured, but not compared: {self.baselines.label(device)} cannot be read "
                    "(the run's end says why, once)", False, None)
        entry = baseline.cases.get(result.id) if baseline else None
        label, other = self.baselines.label(device), None
        stand_in = self.baselines.stand_in(device)
        if stand_in is not None and result.id in stand_in.file.cases:
            # A model without its own file: another model's judges what does not depend on the model.
            entry, label, other = stand_in.file.cases[result.id], stand_in.label, stand_in.other

        def compare(r: CaseResult) -> list[Verdict]:
            return compare_case(r, entry, threshold_pct=self.options.threshold_pct,
                                current_fingerprint=device.fingerprint(), baseline_file=label,
                                host=device.host, counter_allowance=self.options.counter_allowance, other=other)

        confirm = functools.partial(self._confirm, measure, compare) if self.options.confirm else None
        judged = judge([result], compare(result), self.baselines.accepted(), fail_inconclusive=self.options.fail_inconclusive,
                       updating=self.options.update, confirm=confirm, before={result.id: entry.result} if entry else {},
                       accepted_file=self.baselines.accepted_label())
        (result,) = judged.results
        item.user_properties.append((VERDICTS_KEY, [to_jsonable(v) for v in judged.verdicts]))
        regressed = any(v.status == "regressed" for v in judged.verdicts)
        if not judged.failing:
            return result, None, regressed, None
        lines = [f"{result.id}: {words.line(v, self.invocation)}" for v in judged.failing]
        # An acceptance file that cannot be read accepts nothing, nor does an entry past its bound: a failure
        # says why it was not accepted.
        refused = [steps.refused_line(r, self.baselines.accepted_label()) for r in judged.refused]
        unread = [f"{result.id}: not accepted: {why}" for why in ([judged.unread] if judged.unread else []) + refused]
        accept = steps.accept_line(judged.accept, self.invocation)
        moved = next((v for v in judged.failing if v.where is not None), None)
        return result, "\n".join(lines + unread + ([accept] if accept else [])), regressed, moved

    def _confirm(
        self, measure: Callable[[], CaseResult], compare: Callable[[CaseResult], list[Verdict]], first: CaseResult,
        verdicts: list[Verdict],
    ) -> tuple[CaseResult, list[Verdict]]:
        """The judge's `confirm` (analysis/judgement.py): measure a case that looks regressed again, from a
        fresh setup, and let the verdict settle on all the measurements (analysis.remeasure.settle)."""
        from perfguard.analysis.remeasure import note, settle

        if self._confirmations <= 0:
            return first, note(verdicts, "spent")
        self._confirmations -= 1
        measured = [(first, verdicts)]
        for _ in range(self.options.confirm):
            again = measure()
            if again.status != "ok":  # the first measurement stands: a failed re-run must not lift the gate
                return first, note(verdicts, "failed", first_line(again.error or ""))
            measured.append((again, compare(again)))
        return settle(measured)
