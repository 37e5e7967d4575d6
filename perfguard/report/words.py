"""A verdict in words: the one place that turns a verdict's data into the line a person reads.

Every surface (the terminal, the failure of a test, Markdown, HTML, `perfguard show`, `compare` and
`ab`) takes a verdict's words from here, so that they say the same thing everywhere.
"""

from __future__ import annotations

from perfguard.model import Verdict


def line(v: Verdict) -> str:
    """The verdict's whole line: "latency regressed: 1.00 ms → 1.20 ms (+20.0%), outside ±2.0%: ..."."""
    return v.message


def detail(v: Verdict) -> str:
    """The line without the "metric status: " that a badge beside it already says."""
    text = line(v)
    prefix = f"{v.metric} {v.status}: "
    return text[len(prefix):] if text.startswith(prefix) else text
