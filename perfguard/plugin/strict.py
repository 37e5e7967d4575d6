"""No silent pass: what could switch the gate off unseen, a line for each, and what --perfguard-strict does.

An ordinary edit can turn the gate off while every test passes: deleting the baseline file (every
case reads `new`), a skip or xfail mark on a case (or `pytestmark` on its module), `-k 'not case'`
in `addopts`, renaming a case (`missing` + `new`), `perfguard_update = true` or
`perfguard_threshold = 1000` in an ini file, `threshold=100` on the case. Each is a `Fact` here: one
visible line at the run's end in every run, and under --perfguard-strict (CI) a failure of the run.
Strict also refuses, before anything runs, an update and a ceiling that did not come from the command
line, and a threshold above the ceiling wherever it came from (`refuse_weakening`). The gate's
settings (threshold and where it came from, baseline files, cases) are a line of their own, so a
change to them shows in the log.

`Watch` is registered on the process that writes the record (the xdist controller), and sees what
its reports say: a perf case skipped (by a mark, `pytestmark`, `skipif`, `device_kinds`) or
xfail-marked. Deselection is seen by the process that collects: without xdist each deselected perf
case, under xdist the -k/-m/--deselect that did it (the baseline cases it left out are counted by
plugin/selection.py either way).
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from perfguard.analysis.counting import kinds_above
from perfguard.plugin.options import Options, folder_base, source

if TYPE_CHECKING:
    from perfguard.model import BaselineFile, CaseResult, DeviceInfo, Verdict
    from perfguard.plugin.baselines import StandIn

NAMED = 5  # case ids named in one line; the rest are counted
SELECTING = (("keyword", "-k"), ("markexpr", "-m"), ("deselect", "--deselect"))


@dataclasses.dataclass(frozen=True)
class Fact:
    """One thing a person must see about the run's gate; `fails`: under strict it fails the run."""

    line: str
    fails: bool = True


def refuse_weakening(config: pytest.Config, options: Options) -> None:
    """At configure time: what strict refuses outright, each a usage error of one sentence."""
    ceiling = options.ceiling_pct
    if options.strict:
        if options.update and source(config, "perfguard-update") != "the command line":
            raise pytest.UsageError(f"--perfguard-strict: --perfguard-update comes from {source(config, 'perfguard-update')}, "
                                    "not the command line; a baseline is only rewritten when asked for there")
        for name, what in (("perfguard-max-threshold", "thresholds"), ("perfguard-max-counter-allowance", "counter allowances")):
            where = source(config, name)
            if where not in ("the command line", "the default"):
                raise pytest.UsageError(f"--perfguard-strict: --{name} comes from {where}; the ceiling on {what} is "
                                        "only taken from the command line")
        # An allowance lets a case do more work per call unseen, as a threshold lets it take longer.
        where = source(config, "perfguard-counter-allowance")
        if where not in ("the command line", "the default"):
            raise pytest.UsageError(f"--perfguard-strict: --perfguard-counter-allowance comes from {where}, not the "
                                    "command line; an allowance for counters to grow is only taken from there")
    if ceiling is not None and options.threshold_pct > ceiling:
        raise pytest.UsageError(
            f"--perfguard-threshold {options.threshold_pct:g} (from {source(config, 'perfguard-threshold')}) is above the "
            f"ceiling of {ceiling:g}% ({_ceiling_source(config, 'perfguard-max-threshold')}); lower it, or raise the "
            "ceiling on the command line with --perfguard-max-threshold")
    most = options.counter_ceiling
    above = kinds_above(options.counter_allowance, most) if most is not None else []
    if above:
        raise pytest.UsageError(
            f"--perfguard-counter-allowance {shown_allowance(options.counter_allowance)} (from "
            f"{source(config, 'perfguard-counter-allowance')}) is above the ceiling of {shown_allowance(most)} "
            f"({_ceiling_source(config, 'perfguard-max-counter-allowance')}) for {', '.join(above)}; lower it, or raise "
            "the ceiling on the command line with --perfguard-max-counter-allowance")


def shown_allowance(allowance: Mapping[str, str]) -> str:
    """A counter allowance as it is written: "1000%", "kernels=2,aten_ops=5%"; "0" for none."""
    if set(allowance) == {"*"}:
        return allowance["*"]
    return ",".join(f"{kind}={value}" for kind, value in allowance.items()) or "0"


def _ceiling_source(config: pytest.Config, name: str) -> str:
    where = source(config, name)
    return "--perfguard-strict's default" if where == "the default" else f"--{name}, from {where}"


class Watch:
    """The perf cases a run skipped, marked xfail or deselected (a plugin: it hears the reports)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.skipped: dict[str, str] = {}  # nodeid -> reason
        self.xfail: dict[str, str] = {}  # nodeid -> how it ended (xfailed, xpassed)
        self.deselected: list[str] = []

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.deselected += [item.nodeid for item in items if _is_perf(item.keywords)]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not _is_perf(report.keywords):
            return
        if hasattr(report, "wasxfail") and report.when in ("call", "setup") and not report.failed:
            self.xfail[report.nodeid] = "xfailed" if report.skipped else "xpassed"
        elif report.skipped and report.when == "setup":
            self.skipped[report.nodeid] = _reason(report)

    @property
    def saw_cases(self) -> bool:
        return bool(self.skipped or self.xfail or self.deselected)

    def facts(self, options: Options, results: Iterable[CaseResult], verdicts: Sequence[Verdict],
              baselines: dict[str, tuple[DeviceInfo, str, BaselineFile | None | Exception]],
              stand_ins: Mapping[str, StandIn | None]) -> list[Fact]:
        """Every fact of the run, the settings line first. `baselines`: per device model, the device, its
        baseline file's label and the file as read (None: there is none); `stand_ins`: per device model
        without a file, another model's that judged it (plugin/baselines.py)."""
        from perfguard.analysis.decide import case_statuses
        from perfguard.report.steps import new_remedy

        results = list(results)
        by_case = case_statuses(verdicts)  # a case's overall verdict: memory `new` beside a judged time is not new
        facts = [Fact(self._settings(options, results, baselines), fails=False)]
        for device, label, baseline in baselines.values():
            if isinstance(baseline, Exception) and not options.update:  # (an update says it, refusing to write)
                facts.append(Fact(str(baseline)))  # once a file; each of its cases fails naming it
            if baseline is None:
                n = sum(r.device == device.slug for r in results)
                record = f"record one with `{options.invocation.update()}` or perfguard baseline accept"
                if stand_ins.get(device.slug) is not None:
                    facts.append(Fact(f"no baseline file {label} for {device.name}: {_stood_in(stand_ins[device.slug], n)}; "
                                      f"{record}"))
                elif options.baselines_dir.is_dir():
                    facts.append(Fact(f"no baseline file {label} for {device.name}: its {n} case(s) read new and are "
                                      f"not judged; {record}"))
                else:
                    said = self._no_folder(options, device.slug, n, results)
                    facts.append(Fact(f"{said} {record}" if said.endswith(", or") else f"{said}; {record}"))
        for status, what in (("missing", "in the baseline but did not run (renamed, removed or not collected): "
                                         "not judged"),
                             ("new", "not in the baseline: measured, not judged")):
            ids = sorted(case for case, overall in by_case.items() if overall == status)
            if ids:
                remedy = f"; {new_remedy(options.invocation)}" if status == "new" else ""
                facts.append(Fact(f"{len(ids)} {status} case(s), {what}: {_named(ids)}{remedy}"))
        facts += [Fact(f"{nodeid}: skipped ({reason}): not measured, not judged") for nodeid, reason in sorted(self.skipped.items())]
        facts += [Fact(f"{nodeid}: marked xfail ({how}): a regression of it cannot fail the run")
                  for nodeid, how in sorted(self.xfail.items())]
        if self.deselected:
            facts.append(Fact(f"{len(self.deselected)} perf case(s) deselected: not measured: {_named(self.deselected)}"))
        option = self.config.option
        for dest, flag in SELECTING:
            value = getattr(option, dest, None)
            if value:
                facts.append(Fact(f"{flag} {value!r} (from {_selection_source(self.config, flag)}) selects which cases run: "
                                  "the cases it leaves out are not judged"))
        facts += _host_named(options, [device for device, _, _ in baselines.values()])
        facts += self._thresholds(options, results)
        facts += _counter_allowances(options, results)
        return facts

    def _no_folder(self, options: Options, slug: str, n: int, results: list[CaseResult]) -> str:
        """The baselines folder is not there: where it was looked for and why there, and a folder that holds
        this model's file where it was likely meant: of that name above the tests (pytest started from
        another folder), or beside the one named (a typo)."""
        given, (_, base) = source(self.config, "perfguard-baselines"), folder_base(self.config, "perfguard-baselines")
        line = (f"no baselines folder {options.baselines_dir}: --perfguard-baselines={options.baselines_arg} (from "
                f"{given}) taken from {base}; its {n} case(s) read new and are not judged")
        root = self.config.rootpath
        above = {parent / options.baselines_arg for r in results if r.device == slug
                 for parent in (root / r.nodeid.split("::")[0]).parents if parent.is_relative_to(root)}
        parent = options.baselines_dir.parent
        beside = set(parent.iterdir()) if parent.is_dir() else set()
        found = sorted(folder for folder in above | beside if (folder / f"{slug}.json").is_file())
        if found:
            line += f"; {found[0]} holds this model's baseline: give --perfguard-baselines={found[0]}, or"
        return line

    def _settings(self, options: Options, results: list[CaseResult],
                  baselines: dict[str, tuple[DeviceInfo, str, BaselineFile | None | Exception]]) -> str:
        files = [f"{label} ({_file_cases(baseline)})" for _, label, baseline in baselines.values()] or ["none read"]
        ceiling = options.ceiling_pct
        return (f"gate: threshold {options.threshold_pct:g}% (from {source(self.config, 'perfguard-threshold')})"
                + (f", ceiling {ceiling:g}%" if ceiling is not None else "")
                + (f"; counter allowance {shown_allowance(options.counter_allowance)} (from "
                   f"{source(self.config, 'perfguard-counter-allowance')})" if options.counter_allowance else "")
                + f"; baseline {', '.join(files)}; {len(results)} case(s) ran"
                + (f", {len(self.skipped)} skipped" if self.skipped else "")
                + _identity(options, [device for device, _, _ in baselines.values()])
                + ("; strict" if options.strict else "; not strict (--perfguard-strict makes each line below fail the run)"))

    def _thresholds(self, options: Options, results: list[CaseResult]) -> list[Fact]:
        """Cases whose own threshold= is above the run's: a line each; above the ceiling, a failure under strict."""
        ceiling = options.ceiling_pct
        facts = []
        for r in sorted(results, key=lambda r: r.id):
            if r.threshold is not None and r.threshold > options.threshold_pct:
                over = ceiling is not None and r.threshold > ceiling
                facts.append(Fact(f"{r.id} sets threshold={r.threshold:g}, above the run's {options.threshold_pct:g}%"
                                  + (f" and the ceiling of {ceiling:g}%" if over else ""), fails=over))
        return facts


def _identity(options: Options, devices: Sequence[DeviceInfo]) -> str:
    """Which machine the baseline's runs are matched against (analysis/noise.py: a card by its UUID, a
    CPU by its host), and where that name came from: it decides whose runs judge a case."""
    names = [f"card {d.uuid} (its UUID)" if d.uuid else
             f"host {d.host} ({'from PERFGUARD_HOST' if options.host else 'its hostname'})" for d in devices]
    return f"; judged as {_named(sorted(set(names)))}" if names else ""


def _host_named(options: Options, devices: Sequence[DeviceInfo]) -> list[Fact]:
    """PERFGUARD_HOST, a line: the environment (which a conftest can change too) names the machine. On a
    CPU the name decides whose runs judge a case (a host with its own runs in the baseline, by them
    alone; another, by the fleet's wider spread), so under strict it fails the run there."""
    if not options.host:
        return []
    by_host = [d for d in devices if not d.uuid]
    return [Fact(f"PERFGUARD_HOST={options.host!r} names this machine (its hostname is {socket.gethostname()!r})"
                 + (": the baseline's runs of that name, not a measured identity, decide whose runs judge its CPU cases; "
                    "unset it in the job's environment" if by_host else ": its GPUs are known by their UUIDs"),
                 fails=bool(by_host))]


def _counter_allowances(options: Options, results: list[CaseResult]) -> list[Fact]:
    """Cases whose own counters= allows more than the run's allowance: a line each; above the ceiling
    (under strict, by default: any growth), a failure under strict."""
    run, most = options.counter_allowance, options.counter_ceiling
    facts = []
    for r in sorted(results, key=lambda r: r.id):
        own = {**run, **r.counter_allowance}  # the case's overrides the run's kind by kind (analysis/counting.py)
        if not r.counter_allowance or not kinds_above(own, run):
            continue
        over = kinds_above(own, most) if most is not None else []
        facts.append(Fact(f"{r.id} sets counters={shown_allowance(r.counter_allowance)}, above the run's allowance of "
                          f"{shown_allowance(run)}" + (f" and the ceiling of {shown_allowance(most)} for {', '.join(over)}"
                                                       if over else ""), fails=bool(over)))
    return facts


def _is_perf(keywords: Any) -> bool:
    return "perfguard" in keywords


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (file, line, "Skipped: reason")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return "skipped"


def _stood_in(stand_in: StandIn, n: int) -> str:
    """What another model's file judged of a model's `n` cases, and what it could not."""
    other = stand_in.other
    if other.differs:
        return (f"its {n} case(s) read new and are not judged: {stand_in.label} is another GPU model's "
                f"({other.model}), and nothing is judged across models where more than the model differs: "
                f"{', '.join(other.differs)}")
    return (f"its {n} case(s) are judged against {stand_in.label}, another GPU model's ({other.model}) of the same "
            "compute capability, SM count and software, by what does not depend on the model (counters but kernels "
            "and memsets, and memory); their times and bandwidth are not judged")


def _named(ids: Sequence[str]) -> str:
    more = f" and {len(ids) - NAMED} more" if len(ids) > NAMED else ""
    return ", ".join(ids[:NAMED]) + more


def _file_cases(baseline: BaselineFile | None | Exception) -> str:
    if baseline is None:
        return "missing"
    if isinstance(baseline, Exception):
        return "unreadable"
    return f"{len(baseline.cases)} case(s)"


def _selection_source(config: pytest.Config, flag: str) -> str:
    """"the command line" when `flag` (-k, -m, --deselect) is among the arguments pytest was started with."""
    def given(arg: str) -> bool:  # -k EXPR, -kEXPR, --deselect=ID
        return arg == flag or arg.startswith(f"{flag}=") or (len(flag) == 2 and arg.startswith(flag))

    return "the command line" if any(given(str(a)) for a in config.invocation_params.args) else "addopts"
