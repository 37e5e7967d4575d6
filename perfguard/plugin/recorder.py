"""The recorder: gathers the run's results and writes what the run leaves behind.

It lives in the process that writes the files: the one process, or pytest-xdist's controller, which
measures nothing and hears of each case through its test report (perfguard.plugin.properties). It
marks the previous run's files stale before the first case, and at the run's end judges what did not
run, writes the run record and reports, updates the baselines when asked, and writes the terminal
summary. Made only under --perfguard: a smoke run writes nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import perfguard
from perfguard import ab_env, inert
from perfguard.errors import BaselineError, ConfigError, PerfguardError
from perfguard.model import BaselineFile, CaseResult, DeviceInfo, RunRecord, Verdict, from_jsonable
from perfguard.plugin.baselines import Baselines
from perfguard.plugin.interrupt import Deferred
from perfguard.plugin.options import Options
from perfguard.plugin.properties import DEVICE_KEY, RESULT_KEY, THREADS_KEY, VERDICTS_KEY, failure_result
from perfguard.plugin.selection import Selection
from perfguard.plugin.strict import Fact, Watch
from perfguard.report import mark_unfinished, write_run_files

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling

RECORDER = pytest.StashKey["Recorder"]()


class Recorder:
    """Kept in `config.stash` and registered as a plugin, so it sees every test report."""

    def __init__(self, config: pytest.Config, cpu_workers: int = 0):
        self.config = config
        self.options = Options.of(config)
        self.baselines = Baselines.of(config)
        self.results: dict[str, CaseResult] = {}
        self.devices: dict[str, DeviceInfo] = {}
        self.verdicts: dict[str, list[Verdict]] = {}
        self.written: list[Path] = []
        self.problems: list[str] = []  # files that could not be written, shown in red at the end
        self.unwritten_baselines: list[Path] = []  # baseline writes that failed: they fail the run
        self.record: RunRecord | None = None
        self.fits: list[Scaling] | None = None  # the record's scaling fits, fitted once for the three renderers
        self.cpu_threads: int | None = None  # torch's threads while measuring on a CPU, from the reports
        self.cpu_workers = cpu_workers  # xdist workers measuring on one CPU at once (plugin.workers.cpu_workers)
        self._marked = False  # the report folder's record says "unfinished" until this run's replaces it
        self.watch = Watch(config)  # the perf cases skipped, xfail-marked or deselected (registered as a plugin)
        self.facts: list[Fact] = []  # what could switch the gate off unseen, a line each (plugin/strict.py)
        self.strict_failures: list[Fact] = []  # under --perfguard-strict, the facts that fail the run
        self.ctrl_c = Deferred()  # Ctrl-C at the run's end, held back (plugin/interrupt.py)
        self.updated: list[Path] = []  # baseline files this run wrote
        self.admissions: list[Any] = []  # the update's analysis.series.Admission, one a baseline file, once it ran
        self._said_interrupted = False
        self.session: pytest.Session | None = None  # set at the session's finish, for the exit status

    def mark_unfinished(self) -> None:
        """Before this run's first case: mark the previous run's files stale (`report.mark_unfinished`), so
        that a run that dies, or cannot write its record at the end, leaves nothing that passes for its own.
        Without xdist the measurer calls this before each case; under xdist a worker that dies is replaced
        and the run goes on: there the first result marks them, against the controller dying."""
        if self._marked:
            return
        self._marked = True
        mark_unfinished(self.options.report_dir, RunRecord(
            created_at=_now(), perfguard_version=perfguard.__version__, options=self._recorded_options(), status="unfinished",
        ))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        failed = failure_result(report)  # a perf case that failed before it had a result
        if failed is not None:
            self.mark_unfinished()
            self.results.setdefault(failed.id, failed)
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == RESULT_KEY:
                self.mark_unfinished()
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
        try:
            from perfguard.analysis import scaling, verdict  # noqa: F401 - imported for their cost
            from perfguard.report import html, markdown  # noqa: F401

            html.prepare()
        except Exception:  # noqa: BLE001, S110 - finish renders again and reports what fails there
            pass

    def finish(self, interrupted: bool = False) -> None:
        """Missing cases, the baseline update (only when asked, never after Ctrl-C), then the run record and
        reports. A Ctrl-C from here to the summary's end is held back (plugin/interrupt.py)."""
        self.ctrl_c.start()
        if not (self.results or self._marked or self.watch.saw_cases):
            return
        # An interrupted run did not run the rest of the suite: those cases are not "missing".
        verdicts = [v for vs in self.verdicts.values() for v in vs] + ([] if interrupted else self._missing())
        self.facts = self._facts(verdicts, interrupted)
        self.strict_failures = [f for f in self.facts if f.fails] if self.options.strict else []
        now = _now()
        commit = _git_commit(self.config.rootpath)
        if self.options.update and interrupted:
            self.problems.append(
                f"interrupted: no baseline written ({len(self.results)} case(s) had finished); run --perfguard-update again"
            )
        elif self.options.update and not self.ctrl_c.pressed:
            self._update_baselines(verdicts, commit, now)
        self.record = RunRecord(
            created_at=now,
            perfguard_version=perfguard.__version__,
            devices=tuple(self.devices.values()),
            results=tuple(sorted(self.results.values(), key=lambda r: r.id)),
            verdicts=tuple(sorted(verdicts, key=lambda v: (v.case_id, v.metric))),
            commit=commit,
            options={**self._recorded_options(), "strict": self.options.strict, "gate": [f.line for f in self.facts]},
            status="interrupted" if interrupted or self.ctrl_c.pressed else "complete",
        )
        from perfguard.report.advice import shared_fits

        self.fits = shared_fits(self.record.results, self.record.devices)
        self.problems += [r.profile.problem for r in self.record.results if r.profile and r.profile.problem]
        for path, problem in self._write_files():
            if not problem:
                self.written.append(path)
            elif problem not in self.problems:  # a folder refused: one line, not one per file
                self.problems.append(problem)
        self.record_interrupt()

    def _write_files(self) -> list[tuple[Path, str | None]]:
        # A round of `perfguard ab` writes its record alone (ab_env.RECORD_ONLY): ab reads nothing else of it.
        return write_run_files(self.options.report_dir, self.record, self.fits, reports=not os.environ.get(ab_env.RECORD_ONLY))

    def _update_baselines(self, verdicts: list[Verdict], commit: str | None, now: str) -> None:
        from perfguard import store
        from perfguard.analysis import acceptance
        from perfguard.analysis.series import Admission

        # A case whose run lies outside its tolerance does not join its series (analysis/series.py): its
        # old runs describe other code, or this run is off, and mixed in it would read as noise.
        run = self.options.invocation
        # The cases the acceptance file names (a reviewed pull request) start their new series with no force,
        # on the model the entry names: an entry is one model's figure, reviewed there, and the judge reads it
        # so (acceptance.apply); not one past its bound (analysis/acceptance.py), which accepts nothing.
        accepted = self.baselines.accepted()
        named: dict[str, dict[str, str]] = {}
        if not isinstance(accepted, BaselineError):
            devices = {r.id: r.device for r in self.results.values()}
            refused = {r.change.key for r in acceptance.apply(verdicts, accepted, devices, "").refused}
            for c in accepted.changes:
                if c.key not in refused:
                    named.setdefault(c.device, {})[c.case_id] = c.reason
        for slug, device in self._models().items():
            if self.ctrl_c.pressed:  # Ctrl-C during the previous file's update: no further file is begun
                break
            # One rule a file, as `perfguard baseline accept` has: its cases are that model's.
            admission = Admission(
                force=self.options.force_update, threshold_pct=self.options.threshold_pct, accepted=named.get(slug),
                remedy=lambda case_id: f"if the change is intended, accept it: `{run.baseline_accept([case_id])}`")
            self.admissions.append(admission)
            results = [r for r in self.results.values() if r.device == slug]
            path = store.path_for(self.options.baselines_dir, slug)
            if self._attempt(lambda: store.update(self.options.baselines_dir, device, results, commit=commit, recorded_at=now,
                                                  keep_runs=self.options.keep_runs, admit=admission), path):
                self.updated.append(path)

    def record_interrupt(self) -> None:
        """Once Ctrl-C came at the run's end: the record on disk says `interrupted` (rewritten if it was
        written `complete` before the key was pressed), once."""
        if not self.ctrl_c.pressed or self.record is None or self.record.status == "interrupted" and self._said_interrupted:
            return
        self._said_interrupted = True
        if self.record.status != "interrupted":
            self.record = dataclasses.replace(self.record, status="interrupted")
            for _, problem in self._write_files():
                if problem and problem not in self.problems:
                    self.problems.append(problem)

    def interrupt_line(self) -> str | None:
        """The one line for a Ctrl-C at the run's end: what became of the baseline."""
        if not self.ctrl_c.pressed:
            return None
        if not self.options.update:
            baseline = "the baseline is untouched (no --perfguard-update)"
        elif self.updated:
            baseline = f"the baseline was written in full ({', '.join(map(str, self.updated))})"
        else:
            baseline = "no baseline written, the old one is untouched; run --perfguard-update again"
        return f"interrupted at the run's end: {baseline}; the record says interrupted"

    def summarize(self, terminalreporter: Any, session: pytest.Session | None = None) -> None:
        """The run's end in the terminal: the table of cases, then what was left out, written or went wrong;
        the end of the part of the run where Ctrl-C is held back (then the run exits 2)."""
        try:
            self._summarize(terminalreporter)
        finally:
            self.ctrl_c.stop()
            if self.ctrl_c.pressed and session is not None:
                session.exitstatus = pytest.ExitCode.INTERRUPTED

    def _summarize(self, terminalreporter: Any) -> None:
        if not (self.results or self.problems or self.facts or self.ctrl_c.pressed):
            return
        from perfguard.analysis.judgement import judge
        from perfguard.report import steps
        from perfguard.report.commands import Invocation
        from perfguard.report.terminal import summary, wrapped

        # The table fits pytest's own width (its terminal writer's, which honours COLUMNS): no row wraps,
        # and every other line is wrapped to it.
        width = self.config.get_terminal_writer().fullwidth

        def write(text: str, **style: bool) -> None:
            # Every line through perfguard.inert: case ids, device names and messages are data.
            for part in wrapped([text], width):
                terminalreporter.write_line(inert.line(part), **style)

        terminalreporter.section("perfguard")
        # The new cases' remedy is in the gate lines below (plugin/strict.py), with their names.
        # A regressed case's lines are in its failure above, unless an update keeps it from failing.
        for line, style in summary(self.results.values(), self.devices.values(), self.record, self.fits,
                                   new_hint=False, failed_above=not self.options.update, width=width):
            terminalreporter.write_line(inert.line(line), **style)
        for fact in self.facts:
            if not fact.fails:
                write(f"perfguard: {fact.line}")
            elif self.options.strict:
                write(f"perfguard: strict: {fact.line}", red=True)
            else:
                write(f"perfguard: {fact.line}", yellow=True)
        if self.strict_failures:
            write(f"perfguard: strict: the {len(self.strict_failures)} line(s) above fail this run", red=True, bold=True)
        if self.options.update and self.record and self.record.verdicts and self.record.status == "complete":
            left = sum(len(a.not_added) for a in self.admissions)
            write("perfguard: the verdicts above are against the previous baseline; this run joined the baseline of "
                  + (f"{sum(len(a.added) for a in self.admissions)} case(s), not of {left} (below)" if left
                     else "every case it measured"))
        if self.record is not None:
            # The whole run's judgement, for what is said once: the accept command and what the acceptance
            # file did. Its cases were judged one by one as they ran (the measurer): its verdicts are the record's.
            where = self.baselines.accepted_label()
            judged = judge(self.record.results, self.record.verdicts, self.baselines.accepted(),
                           fail_inconclusive=self.options.fail_inconclusive, updating=self.options.update,
                           accepted_file=where)
            accept = steps.accept_line(judged.accept, Invocation.of(self.record.options))
            if accept:
                write(accept, bold=True)
            if judged.unread:
                write(f"perfguard: not accepted: {judged.unread}", yellow=True)
            for refused in judged.refused:
                write(f"perfguard: not accepted: {steps.refused_line(refused, where)}", yellow=True)
            for change in judged.spent:
                write(f"perfguard: {steps.spent_line(change, where)}", yellow=True)
        for line in (line for a in self.admissions for line in a.lines):
            write(f"perfguard: {line}", yellow=True)
        for path in self.written:
            write(f"perfguard: wrote {path}")
        for problem in self.problems:
            write(f"perfguard: {problem}", red=True)
        self.record_interrupt()  # a Ctrl-C while the lines above were written
        interrupted = self.interrupt_line()
        if interrupted:
            write(f"perfguard: {interrupted}", red=True, bold=True)

    def _facts(self, verdicts: list[Verdict], interrupted: bool) -> list[Fact]:
        """What a person must see about the gate (plugin/strict.py); an interrupted run's cases that did not
        run are not facts about the gate."""
        models = self._models()
        baselines = {slug: (device, self.baselines.label(device), self.baselines.load(device)) for slug, device in models.items()}
        stand_ins = {slug: self.baselines.stand_in(device) for slug, device in models.items()}
        facts = self.watch.facts(self.options, self.results.values(), verdicts, baselines, stand_ins)
        left_out = Selection.of(self.config).left_out
        if left_out and not interrupted:
            facts.append(Fact(f"{len(left_out)} baseline case(s) not selected in this run "
                              "(-k, -m, --deselect or the test paths): not compared"))
        accepted = self.baselines.accepted()
        if not interrupted and not isinstance(accepted, BaselineError):
            from perfguard.analysis.acceptance import unmeasured
            from perfguard.report.steps import unmeasured_line

            gone = unmeasured(accepted, self.results.values())
            if gone:
                facts.append(Fact(unmeasured_line(gone, self.baselines.accepted_label())))
        return facts

    def _attempt(self, write: Callable[[], Any], path: Path) -> bool:
        try:
            write()
            self.written.append(path)
            return True
        except PerfguardError as exc:
            self.problems.append(f"{exc}; this run fails until its baseline is written")
            self.unwritten_baselines.append(path)
            return False

    def _recorded_options(self) -> dict[str, Any]:
        options = {"budget_s": self.options.budget_s, "threshold_pct": self.options.threshold_pct,
                   "profile": self.options.profile,
                   # as the user named them: the commands the reports print repeat them (report/commands.py)
                   "baselines_dir": self.options.baselines_arg, "report_dir": self.options.report_arg,
                   "update": self.options.update}
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

        selection = Selection.of(self.config)
        missing = []
        for slug, device in self._models().items():
            baseline = self.baselines.load(device)
            if not isinstance(baseline, BaselineFile):
                continue
            for case_id, entry in sorted(baseline.cases.items()):
                if case_id in self.results:
                    continue
                if selection.selects(entry.result.nodeid):
                    missing += compare_case(None, entry, baseline_file=self.baselines.label(device))
                else:
                    selection.left_out.append(case_id)
        return missing


def _shown(path: Path, root: Path) -> str:
    """A path as a person in the rootdir would type it."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _now() -> str:
    # Milliseconds: a case's runs are kept in the order they were made (the newest is the entry's), and two
    # runs of one case can end within a second (a fast case, a fast machine).
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _git_commit(root: Path) -> str | None:
    """The commit the run measured; None outside a git checkout or without git (a record needs none)."""
    from perfguard import git

    try:
        return git.full_hash(root, "HEAD")
    except ConfigError:
        return None
