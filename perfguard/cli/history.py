"""The commands of the asv history: asv-export (records into asv's result format) and history (its step detection)."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfguard.cli.common import add_option, command, read_record, say


def _asv_export(args: argparse.Namespace) -> int:
    from perfguard.export import export

    records = [(str(path), read_record(path)) for path in args.runs]
    done = export(records, args.to, repo=args.repo, commit=args.commit, branch=args.branch, project=args.project)
    print(f"exported {done.records} record(s) to {Path(args.to)}: {done.commits} commit(s), "
          f"{len(done.machines)} machine(s) ({', '.join(done.machines)}), {done.benchmarks} asv benchmark(s)")
    for commit in done.not_on_branch:
        print(f"note: commit {commit[:12]} is not in the first-parent history of the branches in {done.config}; "
              "asv will not draw it")
    print(f"site: asv publish --config {done.config} && asv preview --config {done.config}")
    return 0


def _history(args: argparse.Namespace) -> int:
    from perfguard.export import find_drifts

    history = find_drifts(args.dir, threshold_pct=args.threshold, repo=args.repo)
    for drift in history.drifts:
        say(f"drift  {drift.message}")
    skipped = f"; {history.off_branch} result file(s) off the branches skipped" if history.off_branch else ""
    print(f"perfguard: {len(history.drifts)} drift(s) in {history.series} series over {history.commits} commit(s){skipped}")
    return 1 if history.drifts else 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    export = command(commands, "asv-export", "add run records to an asv results folder (history; asv publish draws it)")
    export.add_argument("runs", metavar="RUN.json", nargs="+", help="run records; records of one commit and GPU merge")
    export.add_argument("--to", metavar="DIR", required=True, help="the asv folder (asv.conf.json, results/); created or merged into")
    export.add_argument("--repo", metavar="DIR", default=".", help="git checkout the records were measured in (default: .)")
    export.add_argument("--commit", metavar="REV", help="commit of records that carry none (written outside a checkout)")
    export.add_argument("--branch", metavar="NAME", help="branch whose history asv draws (default: the one checked out)")
    export.add_argument("--project", metavar="NAME", help="project name on the asv site (default: the checkout's folder name)")
    export.set_defaults(command=_asv_export)

    history = command(commands, "history", "find drifts in an exported folder with asv's step detection; exit 1 on a drift")
    history.add_argument("dir", metavar="DIR", help="the folder asv-export wrote")
    # Not the gate's 1%: a step in history is between runs of different days, runners and cards, whose
    # spread the gate measures per case and asv does not; asv's own default keeps that spread out.
    add_option(history, "perfguard-threshold", default=5.0,
               help="smallest step that counts, in percent (default: 5, asv's own: unlike the gate, asv's step "
               "detection knows no case's run-to-run spread, so 1%% would flag runner-to-runner noise)")
    history.add_argument("--repo", metavar="DIR", help="git checkout of the commits (default: the repo in DIR/asv.conf.json)")
    history.set_defaults(command=_history)
