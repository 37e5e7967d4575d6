"""Commands over stored run records and baselines: show, baseline show|accept, compare, report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfguard import units
from perfguard.cli.common import DEFAULT_BASELINES, columns, percent, read_record, summary
from perfguard.errors import BaselineError, ConfigError
from perfguard.model import CaseResult


def _show(args: argparse.Namespace) -> int:
    from perfguard.report.terminal import record_lines

    print("\n".join(record_lines(read_record(args.run))))
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
    status = 0
    for path in paths:
        try:
            baseline = load_file(path)
        except BaselineError as exc:  # one bad file should not hide the others
            print(f"perfguard: {exc}", file=sys.stderr)
            status = 2
            continue
        assert baseline is not None  # it was listed a moment ago
        versions = ", ".join(f"{k} {v}" for k, v in sorted(baseline.device.fingerprint().items()) if v)
        print(f"{path}: {baseline.device.name} ({baseline.device.slug}), {len(baseline.cases)} case(s)"
              + (f"; {versions}" if versions else ""))
        cal = baseline.calibration
        if cal:
            rates = ", ".join(f"{k} {units.number(v, 2)}" for k, v in cal.tflops.items())
            print(f"  calibrated {cal.measured_at}: copy {units.number(cal.copy_gbps)} GB/s; matmul TFLOP/s {rates}")
        rows = [
            (case_id, units.duration(e.result.latency.median_ms if e.result.latency else None),
             str(e.result.latency.n if e.result.latency else len(e.result.samples_ms)), e.recorded_at,
             (e.commit or "-")[:12])
            for case_id, e in sorted(baseline.cases.items())
        ]
        for line in columns(("case", "median", "samples", "recorded_at", "commit"), rows):
            print(f"  {line}")
    return status


def _baseline_accept(args: argparse.Namespace) -> int:
    from perfguard.store import update

    record = read_record(args.run)
    results = list(record.results)
    if args.case:
        unknown = sorted(set(args.case) - {r.id for r in results})
        if unknown:
            raise ConfigError(f"{args.run}: no case {', '.join(unknown)} in this record; see `perfguard show {args.run}`")
        results = [r for r in results if r.id in set(args.case)]
    for r in results:
        if r.status != "ok":
            print(f"skipped {r.id}: not measured (status {r.status})")
    by_device: dict[str, list[CaseResult]] = {}
    for r in results:
        if r.status == "ok":
            by_device.setdefault(r.device, []).append(r)
    if not by_device:
        raise ConfigError(f"{args.run}: no measured case to accept; run pytest --perfguard first")
    devices = {d.slug: d for d in record.devices}
    for slug, accepted in sorted(by_device.items()):
        if slug not in devices:
            raise BaselineError(
                f"{args.run}: case {accepted[0].id} was measured on {slug!r}, a device the record does not list"
            )
        path = update(args.baselines, devices[slug], accepted, commit=record.commit, recorded_at=record.created_at)
        print(f"accepted {len(accepted)} case(s) into {path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from perfguard.analysis import verdict

    base, head = read_record(args.base), read_record(args.head)
    verdicts = verdict.ordered(verdict.compare_records(
        base,
        head,
        threshold_pct=verdict.DEFAULT_THRESHOLD_PCT if args.threshold is None else args.threshold,
        memory_threshold_pct=(
            verdict.DEFAULT_MEMORY_THRESHOLD_PCT if args.memory_threshold is None else args.memory_threshold
        ),
        baseline_file=str(args.base),
        head_file=str(args.head),
    ))
    for v in verdicts:
        print(f"{v.status:<9}  {v.case_id}: {v.message}")
    tally = verdict.counts(verdicts)
    print(summary(tally))
    return 1 if tally["regressed"] else 0


def _report(args: argparse.Namespace) -> int:
    from perfguard.report.html import render_html
    from perfguard.report.markdown import render_markdown
    from perfguard.store.atomic import write_atomic

    records = [read_record(path) for path in args.runs]
    # Render everything before writing anything: a failure leaves no half-updated pair of files.
    outputs = [(Path(args.output), render_html(records))]
    if args.markdown:
        outputs.append((Path(args.markdown), render_markdown(records)))
    for path, text in outputs:
        write_atomic(path, text)
    cases = len({(r.device, r.id) for record in records for r in record.results})
    print(f"wrote {' and '.join(str(p) for p, _ in outputs)} from {len(records)} record(s), {cases} case result(s)")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser("show", help="print a run record as the terminal table")
    show.add_argument("run", metavar="RUN.json")
    show.set_defaults(command=_show)

    baseline = commands.add_parser("baseline", help="list or accept baselines")
    actions = baseline.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser("show", help="list the baselines and their cases")
    listing.add_argument("--device", metavar="SLUG", help="only this device's file, e.g. nvidia-h200")
    accept = actions.add_parser("accept", help="write a run's measured cases into its device's baseline")
    accept.add_argument("run", metavar="RUN.json")
    accept.add_argument("--case", metavar="ID", action="append", help="only this case (repeatable)")
    for sub in (listing, accept):
        sub.add_argument("--baselines", metavar="DIR", default=DEFAULT_BASELINES,
                         help=f"baseline folder (default: {DEFAULT_BASELINES})")
    listing.set_defaults(command=_baseline_show)
    accept.set_defaults(command=_baseline_accept)

    # Defaults come from perfguard.analysis.verdict, imported only when comparing (it loads scipy).
    compare = commands.add_parser("compare", help="verdicts between two run records; exit 1 on a regression")
    compare.add_argument("base", metavar="BASE.json")
    compare.add_argument("head", metavar="HEAD.json")
    compare.add_argument("--threshold", metavar="PCT", type=percent, default=None,
                         help="latency change that counts, in percent (default: 5, or the case's own)")
    compare.add_argument("--memory-threshold", metavar="PCT", type=percent, default=None,
                         help="peak-memory growth that counts, in percent (default: 5, or the case's own)")
    compare.set_defaults(command=_compare)

    report = commands.add_parser("report", help="render run records as one HTML report (several GPUs, workers or runs merge)")
    report.add_argument("runs", metavar="RUN.json", nargs="+", help="run records; per device and case the latest wins")
    report.add_argument("-o", "--output", metavar="FILE.html", required=True, help="where to write the HTML report")
    report.add_argument("--markdown", metavar="FILE.md", help="also write the Markdown summary here")
    report.set_defaults(command=_report)
