"""Commands over stored run records and baselines: show, check, baseline show|accept|merge, compare, report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfguard import defaults, units
from perfguard.cli.common import (add_option, check_cases, columns, command, file_kind, percent, read_record, say,
                                  show_command, tell)
from perfguard.cli.record_runs import Intake, noting_origins, unfinished
from perfguard.errors import BaselineError, ConfigError
from perfguard.model import COUNTER_KINDS, BaselineFile, CaseResult, DeviceInfo, names
from perfguard.report import words
from perfguard.report.commands import Invocation


def _show(args: argparse.Namespace) -> int:
    from perfguard.report.terminal import record_lines

    say(*record_lines(read_record(args.run)))  # fitted and wrapped to the terminal's width already
    return 0


def _check(args: argparse.Namespace) -> int:
    """Exit 0 when the record reads (schema, figures, words: the reader every command uses) and its run is
    complete, 1 when it reads but its run did not finish (2, from main, when it does not read). For a
    workflow's step, which would otherwise read `status` from the raw JSON: `{"status": "complete"}`,
    written by a case that then calls os._exit(0), passed that."""
    record = read_record(args.run)
    problem = unfinished(record)
    if problem:
        say(f"perfguard: {args.run}: {problem}", file=sys.stderr)
        return 1
    say(f"{args.run}: a complete run, {units.plural(len(record.results), 'case result')}")
    return 0


def _baseline_show(args: argparse.Namespace) -> int:
    from perfguard.store import list_files, load_file, path_for

    directory = Path(args.baselines)
    if args.device:
        paths = [path_for(directory, args.device)]
        if not paths[0].is_file():
            known = ", ".join(p.stem for p in list_files(directory)) or "none"
            raise ConfigError(f"{paths[0]}: no baseline for {args.device} (baselines in {directory}: {known})")
    else:
        paths = list_files(directory)
        if not paths:
            print(f"no baselines in {directory}")
            return 0
    from perfguard.cli.baseline_view import find_card

    status, holding = 0, 0
    for path in paths:
        try:
            baseline = load_file(path)
        except BaselineError as exc:  # one bad file should not hide the others
            say(f"perfguard: {exc}", file=sys.stderr)
            status = 2
            continue
        assert baseline is not None  # it was listed a moment ago
        if args.card and len(paths) > 1 and find_card(baseline, args.card) is None:
            continue  # a card is of one model: --card over several files shows the file(s) that hold it
        holding += 1
        # The newest run's versions: the file's device is its first run's, never rewritten (store.update_runs).
        newest = max(baseline.cases.values(), key=lambda e: e.recorded_at, default=None)
        fingerprint = newest.fingerprint if newest else baseline.device.fingerprint()
        versions = ", ".join(f"{k} {v}" for k, v in sorted(fingerprint.items()) if v)
        say(f"{path}: {baseline.device.name} ({baseline.device.slug}), {len(baseline.cases)} case(s)"
              + (f"; {versions}" if versions else ""))
        cal = baseline.calibration
        if cal:
            rates = ", ".join(f"{k} {units.number(v, 2)}" for k, v in cal.tflops.items())
            say(f"  calibrated {cal.measured_at}: copy {units.number(cal.copy_gbps)} GB/s; matmul TFLOP/s {rates}")
        status = max(status, _judged(baseline, args))
    if args.card and len(paths) > 1 and not holding:
        print(f"perfguard: no run of the baselines in {directory} ({', '.join(p.stem for p in paths)}) comes from a card "
              f"or host {names.shown(args.card)} (or more than one does); `perfguard baseline show` lists their cards",
              file=sys.stderr)
        return 2
    return status


def _judged(baseline: BaselineFile, args: argparse.Namespace) -> int:
    """Each case's figures as the gate judges them (cli/baseline_view.py), the runs' cards, what is left out;
    2 when --card names no card of this file (the other files are still shown)."""
    from perfguard.cli import baseline_view as bv

    card = None
    if args.card:
        card = bv.find_card(baseline, args.card)
        if card is None:
            print(f"perfguard: no run of {baseline.device.slug}'s baseline comes from a card or host {names.shown(args.card)} "
                  "(or more than one does); `perfguard baseline show` lists its cards", file=sys.stderr)
            return 2
    threshold = defaults.THRESHOLD_PCT if args.threshold is None else args.threshold
    views = [bv.case_view(case_id, e, threshold, card) for case_id, e in sorted(baseline.cases.items())]
    letters = bv.card_letters(baseline)
    say(*(f"  {line}" for line in bv.viewpoint(card, threshold)))
    say(*(f"  card {line}" for line in bv.legend(baseline, letters)))
    say(*(f"  {line}" for line in columns(bv.HEADER, [bv.row(v, letters) for v in views])))
    say(*(f"  {line}" for line in bv.left_out_lines(views)))
    return 0


def _baseline_accept(args: argparse.Namespace) -> int:
    """Each record is one run of its cases, oldest first: the artifacts of a CI matrix over a pool of
    runners of one GPU model become one baseline whose tolerances know the pool's spread. A record
    that did not finish, is dated in the future, whose device disagrees with itself or its baseline, or was
    given already is refused with one line (cli/record_runs.py's Intake); which runs join each case's series
    is analysis.series.Admission's to say, one line for each left out."""
    from perfguard.analysis.series import Admission, in_future
    from perfguard.store import update_runs

    records = sorted(((path, read_record(path)) for path in args.runs), key=lambda pr: pr[1].created_at)
    wanted = set(args.case or ())
    check_cases(args.case or (), {r.id for _, record in records for r in record.results}, args.runs)
    runs_by_slug: dict[str, list[tuple[list[CaseResult], str | None, str, str | None]]] = {}
    origins: dict[str, list[str]] = {}
    devices: dict[str, DeviceInfo] = {}
    intake = Intake(args.baselines, in_future)
    for path, record in records:
        refused = intake.refusal(path, record)
        if refused:
            print(f"refused {path}: {refused}")
            continue
        results = [r for r in record.results if not wanted or r.id in wanted]
        for r in results:
            if r.status != "ok":
                say(f"skipped {r.id}: not measured (status {r.status}) in {path}")
        listed = {d.slug: d for d in record.devices}  # every case's device among them: Intake
        by_device: dict[str, list[CaseResult]] = {}
        for r in results:
            if r.status == "ok":
                by_device.setdefault(r.device, []).append(r)
        hosts = {d.host for d in record.devices}
        for slug, accepted in by_device.items():
            devices.setdefault(slug, listed[slug])
            runs_by_slug.setdefault(slug, []).append((accepted, record.commit, record.created_at,
                                                      hosts.pop() if len(hosts) == 1 else None))
            origins.setdefault(slug, []).append(str(path))
    if not runs_by_slug:
        raise ConfigError(f"{', '.join(args.runs)}: no measured case to accept; run pytest --perfguard first")
    accepted = _named_changes(args, runs_by_slug, devices)
    lines: list[str] = []
    run = Invocation(baselines=str(args.baselines))
    for slug, runs in sorted(runs_by_slug.items()):
        # One rule a file: its `added` and `not_added` are then this file's cases (a case id may be in two).
        admission = Admission(restart=args.restart, accepted=accepted,
                              remedy=lambda case: f"if the change is intended, name it: `{run.baseline_accept([case], args.runs)}`")
        took: set[str] = set()  # the records a run joined a series from (before the cap of --keep-runs)
        path = update_runs(args.baselines, devices[slug], runs, keep_runs=args.keep_runs,
                           admit=noting_origins(admission, took), origins=origins[slug])
        print(f"{path}: runs of {len(admission.added)} case(s) added from {units.plural(len(took), 'record')}"
              + (f"; {len(admission.not_added)} case(s) left as they were (below)" if admission.not_added else ""))
        lines += admission.lines
    say(*lines)
    return 0


def _named_changes(args: argparse.Namespace, runs_by_slug: dict[str, list[tuple[list[CaseResult], str | None, str, str | None]]],
                   devices: dict[str, DeviceInfo]) -> dict[str, str]:
    """The cases named with --case whose figures changed against the baseline, each with the reason its
    acceptance keeps: their change is accepted (a new series where the times moved). A --metric that did
    not change, or --metric / --reason without --case, is a one-line error that changes nothing."""
    from perfguard.analysis.verdict import compare_case
    from perfguard.store import load

    if not args.case:
        if args.metric or args.reason:
            raise ConfigError("--metric and --reason say what of a named case to accept: name the case(s) with --case ID "
                              f"(the ids are in `{show_command(args.runs[0])}`)")
        return {}
    reason = args.reason or "accepted with perfguard baseline accept"
    changed: dict[str, set[str]] = {}
    for slug, runs in runs_by_slug.items():
        baseline = load(args.baselines, slug)
        for results, _, _, _ in runs:
            for r in results:
                entry = baseline.cases.get(r.id) if baseline else None
                if entry is None:
                    continue
                moved = {words.name(v) for v in compare_case(r, entry, current_fingerprint=devices[slug].fingerprint())
                         if v.status in ("regressed", "improved", "unstable") or v.metric in COUNTER_KINDS}
                changed.setdefault(r.id, set()).update(moved)
    for metric in args.metric or ():
        unmoved = [case for case in args.case if case in changed and metric not in changed[case]]
        if unmoved:
            named = sorted({m for case in unmoved for m in changed[case]})
            raise ConfigError(f"{', '.join(names.shown(c) for c in unmoved)}: {names.shown(metric)} did not change against "
                              f"{args.baselines}" + (f" ({', '.join(named)} did)" if named else "")
                              + ", so there is nothing of it to accept; nothing was written")
    # The run's commit is kept beside the reason, in the run summary that begins the new series.
    return {case: reason for case in args.case if changed.get(case)}


def _baseline_merge(args: argparse.Namespace) -> int:
    """Baseline files of one GPU model recorded on other hosts, folded into --baselines' file; runs dated in
    the future or far from the others are left out, one line each."""
    from perfguard.analysis.series import Admission
    from perfguard.store import load_file, merge_files

    others = []
    for name in args.files:
        try:
            baseline = load_file(name)
        except BaselineError:
            if _file_kind(name) != "record":
                raise
            raise ConfigError(f"{name}: a run record, not a baseline file; add its runs with "
                              f"`perfguard baseline accept {name}`") from None
        if baseline is None:
            raise ConfigError(f"{name}: no such file; pass baseline files such as other-host/nvidia-h200.json")
        others.append(baseline)
    admission = Admission()
    path = merge_files(args.baselines, others, keep_runs=args.keep_runs, admission=admission, names=args.files)
    print(f"merged {len(others)} file(s) into {path}")
    say(*admission.lines)
    return 0


def _file_kind(name: str) -> str | None:
    try:
        return file_kind(Path(name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def _compare(args: argparse.Namespace) -> int:
    """Judged as the gate and ab judge (analysis/judgement.py), the acceptance file beside --baselines
    included; no accept command: neither record holds verdicts against what it would accept into."""
    from perfguard.analysis import decide, verdict
    from perfguard.analysis.acceptance import unmeasured
    from perfguard.analysis.judgement import judge
    from perfguard.report import steps
    from perfguard.report.terminal import verdict_count
    from perfguard.store import acceptances

    base, head = read_record(args.base), read_record(args.head)
    compared = verdict.compare_records(
        base,
        head,
        threshold_pct=defaults.THRESHOLD_PCT if args.threshold is None else args.threshold,
        memory_threshold_pct=defaults.MEMORY_THRESHOLD_PCT if args.memory_threshold is None else args.memory_threshold,
        baseline_file=str(args.base),
        head_file=str(args.head),
        counter_allowance=args.counter_allowance,
    )
    accepted_file, accepted = acceptances.path_in(args.baselines), acceptances.read(args.baselines)
    judged = judge(head.results, compared, accepted, fail_inconclusive=args.fail_inconclusive,
                   before={r.id: r for r in base.results}, accepted_file=str(accepted_file))
    verdicts = decide.ordered(judged.verdicts)
    for v in verdicts:
        tell(f"{v.status:<9}  {v.case_id}: {words.line(v)}")
        where = words.where_line(v)
        if where:
            tell(f"{'':<9}    {where}")
    tell(f"perfguard: {verdict_count(verdicts)}")
    if judged.unread:
        tell(f"perfguard: not accepted: {judged.unread}")
    tell(*(f"perfguard: not accepted: {steps.refused_line(r, accepted_file)}" for r in judged.refused))
    tell(*(f"perfguard: {steps.spent_line(c, accepted_file, base=True)}" for c in judged.spent))
    gone = [] if isinstance(accepted, BaselineError) else unmeasured(accepted, head.results)
    if gone:
        tell(f"perfguard: {steps.unmeasured_line(gone, accepted_file)}")
    return 1 if judged.failing else 0


def _report(args: argparse.Namespace) -> int:
    from perfguard.report.advice import report_fits
    from perfguard.report.html import render_html
    from perfguard.report.markdown import render_markdown
    from perfguard.files import write_atomic

    records = [read_record(path) for path in args.runs]
    fits = report_fits(records)  # once for both, as the plugin does: at 5,360 cases a fifth of a render
    # Render everything before writing anything: a failure leaves no half-updated pair of files.
    outputs = [(Path(args.output), render_html(records, fits))]
    if args.markdown:
        outputs.append((Path(args.markdown), render_markdown(records, fits)))
    for path, text in outputs:
        write_atomic(path, text)
    cases = len({(r.device, r.id) for record in records for r in record.results})
    print(f"wrote {' and '.join(str(p) for p, _ in outputs)} from {len(records)} record(s), {cases} case result(s)")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    show = command(commands, "show", "print a run record as the terminal table")
    show.add_argument("run", metavar="RUN.json", help="a run record, e.g. reports/perfguard.json")
    show.set_defaults(command=_show)

    check = command(commands, "check", "exit 0 when a run record reads and its run is complete, 1 when it did not finish",
                    "2 when the file is no run record perfguard reads. For a CI step that must know whether pytest's "
                    "exit 0 judged anything: a case that calls os._exit(0) leaves the record unfinished.")
    check.add_argument("run", metavar="RUN.json", help="a run record, e.g. reports/perfguard.json")
    check.set_defaults(command=_check)

    baseline = command(commands, "baseline", "list, accept or merge baselines")
    actions = baseline.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = command(actions, "show", "list the baselines and their cases as the gate judges them",
                      "Per case: the centre and the spread of the runs the gate judges a run against, its tolerance "
                      "and the smallest change it detects, the runs it leaves out and why, and the cards the runs "
                      "came from; by default for a run from a card the baseline has not seen (the fleet's view).")
    listing.add_argument("--device", metavar="SLUG", help="only this device's file, e.g. nvidia-h200")
    listing.add_argument("--card", metavar="ID", help="judge as for a run from this card (its UUID, short UUID or a "
                         "prefix; on a CPU its host): its own runs judge it where it has enough; only the file that holds it is shown")
    add_option(listing, "perfguard-threshold", default=None,
               help=f"the threshold the tolerances start from, in percent (default: {defaults.THRESHOLD_PCT:g}, or the case's own)")
    accept = command(actions, "accept", "add runs' measured cases to their device's baseline, one run per record "
                     "(e.g. the records of a CI matrix over several runners)")
    accept.add_argument("runs", metavar="RUN.json", nargs="+", help="run records (reports/perfguard.json), each one run")
    accept.add_argument("--case", metavar="ID", action="append", help="only this case (repeatable)")
    accept.add_argument("--restart", action="store_true",
                        help="drop the accepted cases' earlier runs: the code changed on purpose")
    accept.add_argument("--metric", action="append", metavar="METRIC",
                        help="with --case: the figure whose change is accepted, as its verdict's line names it (gpu_time, "
                        "host_time on a CPU, kernels, ...); an error if it did not change")
    accept.add_argument("--reason", metavar="TEXT", help="with --case: why the change is intended, kept in the baseline")
    merge = command(actions, "merge", "fold baseline files of this GPU model from other hosts into its baseline")
    merge.add_argument("files", metavar="FILE.json", nargs="+",
                       help="baseline files (baselines/<gpu>.json) recorded on other hosts")
    for sub in (accept, merge):
        add_option(sub, "perfguard-baseline-runs", help=f"runs kept per case (default: {defaults.KEEP_RUNS})")
    for sub in (listing, accept, merge):
        add_option(sub, "perfguard-baselines")
    listing.set_defaults(command=_baseline_show)
    accept.set_defaults(command=_baseline_accept)
    merge.set_defaults(command=_baseline_merge)

    compare = command(commands, "compare", "verdicts between two run records; exit 1 on a regression")
    compare.add_argument("base", metavar="BASE.json", help="the run record to compare with (it stands in for the baseline)")
    compare.add_argument("head", metavar="HEAD.json", help="the run record judged")
    add_option(compare, "perfguard-threshold", default=None,
               help=f"the smallest latency change that matters, in percent (default: {defaults.THRESHOLD_PCT:g}, or the case's own)")
    compare.add_argument("--memory-threshold", metavar="PCT", type=percent, default=None,
                         help=f"peak-memory growth that counts, in percent (default: {defaults.MEMORY_THRESHOLD_PCT:g}, or the case's own)")
    add_option(compare, "perfguard-counter-allowance")
    add_option(compare, "perfguard-baselines", help="the folder whose accepted-changes.json (`perfguard pr accept`) says which "
               "changes of the head are intended (default: baselines)")
    add_option(compare, "perfguard-fail-inconclusive", help="exit 1 on an inconclusive case too (its tolerance is wider "
               "than the threshold, so a change of the threshold's size would pass unseen)")
    compare.set_defaults(command=_compare)

    report = command(commands, "report", "render run records as one HTML report (several GPUs, workers or runs merge)")
    report.add_argument("runs", metavar="RUN.json", nargs="+", help="run records; per device and case the latest wins")
    report.add_argument("-o", "--output", metavar="FILE.html", required=True, help="where to write the HTML report")
    report.add_argument("--markdown", metavar="FILE.md", help="also write the Markdown summary here")
    report.set_defaults(command=_report)
