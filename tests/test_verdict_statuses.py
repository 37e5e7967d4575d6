"""Issue 28 made verdicts data and gave every verdict word one rule (analysis/decide.py); on the committed
baselines' real runs, judged against each other as they were and slower or faster, every verdict's
status is what the code before the change said (tests/verdict_statuses.py wrote the file from it). A rule
changed on purpose rewrites the file with that script, and its diff is the review of what the change moved
(issue 48's busy-time prior for a call of copies: 2 of 12,896 statuses, device_copy's busy time on the H200
file judging itself, unstable → inconclusive)."""

from __future__ import annotations

import json
from pathlib import Path

from verdict_statuses import statuses

KEPT = Path(__file__).parent / "data" / "verdict-statuses.json"


def test_every_verdict_status_on_the_committed_baselines_is_as_before():
    before = json.loads(KEPT.read_text(encoding="utf-8"))
    now = statuses()
    assert set(now) == set(before)
    changed = {(group, metric): (was, now[group].get(metric)) for group, metrics in before.items()
               for metric, was in metrics.items() if now[group].get(metric) != was}
    assert not changed, changed
