"""`perfguard pr accept RUN.json --case ID`: a pull request's intended change, as a reviewed line.

It writes the named cases' regressions of a run record (perfguard ab's head, or a gate run's) into
`baselines/accepted-changes.json`, which the reviewer sees in the diff: case, metric, the accepted
figure, the figure it was judged against, the reason and the revision. `perfguard ab` and main's gate
read it (analysis/acceptance.py), which accepts no figure more than `acceptance.FACTOR` times the
baseline's: nor does this command write one. For the baseline itself, `perfguard baseline accept` is
the command: the two names say which file each writes (`perfguard accept`, which said neither, is
refused with a line naming `perfguard pr accept`: cli/__init__.py's RENAMED).
"""

from __future__ import annotations

import argparse
import datetime

from perfguard.analysis import acceptance
from perfguard.cli.common import add_option, check_cases, command, read_record, show_command
from perfguard.errors import ConfigError
from perfguard.model import AcceptedChange, names
from perfguard.report import words
from perfguard.report.commands import Invocation
from perfguard.report.steps import amount


def _accept(args: argparse.Namespace) -> int:
    from perfguard.store import acceptances

    if not args.case:
        raise ConfigError(f"name the case(s) whose change is intended with --case ID (the regressed ones are in "
                          f"`{show_command(args.run)}`); nothing was written")
    record = read_record(args.run)
    devices = {r.id: r.device for r in record.results}
    check_cases(args.case, devices, [args.run])
    regressed = [v for v in record.verdicts if v.case_id in args.case and v.status == "regressed"
                 and (not args.metric or words.name(v) in args.metric)]
    for case_id in args.case:
        for metric in args.metric or ():
            if not any(v.case_id == case_id and words.name(v) == metric for v in regressed):
                did = sorted({words.name(v) for v in record.verdicts if v.case_id == case_id and v.status == "regressed"})
                raise ConfigError(f"{names.shown(case_id)}: {names.shown(metric)} did not regress in {args.run}"
                                  + (f" ({', '.join(did)} did)" if did else "")
                                  + ", so there is nothing of it to accept; nothing was written")
        if not any(v.case_id == case_id for v in regressed):
            raise ConfigError(f"{names.shown(case_id)}: nothing regressed in {args.run}, so there is nothing to accept; "
                              "nothing was written")
    for v in regressed:  # what the judge would refuse (analysis/acceptance.py), never written
        if acceptance.past_bound(v.metric, v.current or 0.0, v.baseline):
            into_baseline = Invocation(baselines=str(args.baselines)).baseline_accept([v.case_id], [str(args.run)])
            raise ConfigError(f"{names.shown(v.case_id)}: {words.name(v)} {amount(v.metric, v.baseline)} → "
                              f"{amount(v.metric, v.current)} is more than the {acceptance.FACTOR}× of its baseline "
                              f"that an acceptance file accepts; record it into the baseline with `{into_baseline}`; "
                              "nothing was written")
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    reason = args.reason or "intended (perfguard pr accept)"
    changes = [AcceptedChange(case_id=v.case_id, metric=v.metric, device=devices[v.case_id], figure=float(v.current or 0.0),
                              baseline=v.baseline, reason=reason, commit=record.commit, accepted_at=now) for v in regressed]
    path = acceptances.add(args.baselines, changes)
    for c, v in zip(changes, regressed, strict=True):
        print(f"accepted {names.shown(c.case_id)} {words.name(v)}: {amount(c.metric, c.baseline)} → {amount(c.metric, c.figure)} "
              f"({reason}) in {path}")
    print(f"commit {path} with the change: the reviewer sees it in the diff, and perfguard ab and the gate accept "
          "these figures (and no more) from then on")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    pr = command(commands, "pr", "accept a pull request's intended regressions in the acceptance file it commits",
                 "The baseline itself is `perfguard baseline accept`'s.")
    actions = pr.add_subparsers(title="actions", metavar="ACTION", required=True)
    accept = command(actions, "accept", "write a run's intended regressions into baselines/accepted-changes.json, "
                     "which the pull request commits and its reviewer sees",
                     "perfguard ab and main's gate then pass the named cases at these figures (and no more).")
    accept.add_argument("run", metavar="RUN.json", help="the run record that failed (perfguard ab's reports/perfguard.json)")
    accept.add_argument("--case", metavar="ID", action="append", help="a case whose change is intended (repeatable)")
    accept.add_argument("--metric", metavar="METRIC", action="append",
                        help="only this figure of the case, as its verdict's line names it (gpu_time, host_time on a CPU, "
                        "kernels, ...); an error if it did not regress")
    accept.add_argument("--reason", metavar="TEXT", help="why the change is intended, kept in the file")
    add_option(accept, "perfguard-baselines")
    accept.set_defaults(command=_accept)
