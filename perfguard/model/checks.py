"""What a record or baseline must hold beyond what its types say (model/schema.py): values that make sense.

A slug that is a path, a trace that is a `javascript:` link, a date that is no day: each is a file that
was not written by perfguard as it is, and is refused, with one line naming the file and the field,
before anything is compared, written or rendered. The rules of single strings are schema.py's types
(worded by `is_date` here and names.py); the rest, which no type can state, are here: how deep a
free-form value nests, what a baseline's case must be (a measurement a later run can be compared
with), and that an acceptance file accepts a figure once.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from perfguard.errors import BaselineError
from perfguard.model import names
from perfguard.model.acceptance import Acceptances
from perfguard.model.records import CaseResult

REFUSED = "was the file edited by hand? Restore it from version control"

# The shape perfguard writes a date in (ISO 8601, a date alone in files of its first versions, "Z" or an
# offset), by pattern, not by datetime.fromisoformat: what that takes differs between Python 3.10 and
# 3.11, and a file must read the same on both.
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2}))?)?", re.ASCII)

# Values typed Any (a case's params, a run's options, a fingerprint) are kept as parsed. A few levels
# is all perfguard writes; bounding them keeps writing or showing them later (a baseline update, a
# report) from recursing past Python's limit on a hostile file.
MAX_FREE_FORM_DEPTH = 16
MAX_INT = 2**63  # every count and byte figure perfguard writes fits in 64 bits


def is_date(text: object) -> bool:
    """Whether `text` is an instant as perfguard writes it (DATE): a real day and time, nothing around it."""
    match = DATE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return False
    year, month, day, hour, minute, second, off_h, off_m = (int(g) if g else 0 for g in match.groups())
    try:
        datetime.datetime(year, month, day, hour, minute, second)  # 2026-02-30, hour 24: not a day or time
    except ValueError:
        return False
    return off_h < 24 and off_m < 60


def free_form(value: Any, where: str) -> Any:
    """`value` as parsed, once its nesting is bounded and its integers fit in 64 bits; else a BaselineError
    that begins with `where`."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_FREE_FORM_DEPTH:
                raise BaselineError(f"{where} is nested more than {MAX_FREE_FORM_DEPTH} levels deep; {REFUSED}")
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= MAX_INT:
            raise BaselineError(f"{where} holds {names.shown(item)}, larger than any figure perfguard writes; {REFUSED}")
    return value


def measured_case(result: CaseResult, where: str, advice: str = REFUSED) -> None:
    """A baseline's case is a measurement a later run can be compared with: measured, with the judged
    time and its newest samples (the rank tests read them); else a BaselineError beginning with `where`.
    `advice` ends it: what to do about it (the store, about to write, says it did not)."""
    judged = result.timings.get(result.judged_metric)
    if result.status != "ok" or judged is None:
        raise BaselineError(f"{where} is not a measured case (status {names.shown(result.status)}, "
                            f"{result.judged_metric} {'missing' if judged is None else 'present'}); {advice}")
    if not judged.samples_ms:
        raise BaselineError(f"{where}: its {result.judged_metric} keeps no samples; a baseline keeps its newest "
                            f"run's samples; {advice}")


def one_entry_each(accepted: Acceptances, where: str) -> None:
    """An acceptance file accepts each device's case and metric once (`perfguard pr accept` replaces an entry):
    two entries for one, which a merge of two pull requests' files leaves, say two things, whatever their
    figures; else a BaselineError beginning with `where`."""
    seen = set()
    for c in accepted.changes:
        if c.key in seen:
            raise BaselineError(f"{where}: two entries accept the {c.metric} of {names.shown(c.case_id)} on {c.device}; "
                                "keep the one that was reviewed and remove the other (`perfguard pr accept` writes one "
                                "entry a case and metric)")
        seen.add(c.key)
