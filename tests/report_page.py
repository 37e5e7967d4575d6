"""The HTML report as a test reads it without a browser: its markup, and the table's rows and the
cases' detail views that report.js and panel.js build from the data packed into it (report/packed.py)."""

from __future__ import annotations

import html as htmllib
import re
from typing import Any

from perfguard.report.packed import unpack

_PACKED = re.compile(r'<data class="(rows|details)" value="([A-Za-z0-9+/=]*)"></data>')


def packed(page: str) -> tuple[list[list[Any]], list[list[dict[str, Any]]]]:
    """The rows ([key, name, grid, statuses, search, cells]) and, per case in the rows' order, its
    panels (report/panels.py's data, one per device)."""
    rows: list[list[Any]] = []
    details: list[list[dict[str, Any]]] = []
    for kind, value in _PACKED.findall(page):
        if kind == "rows":
            rows = unpack(value)
        else:
            details += unpack(value)
    return rows, details


def rows(page: str) -> list[str]:
    """The case ids of the table's rows, in order, as the page shows them."""
    return [name + grid for _, name, grid, *_ in packed(page)[0]]


def panels(page: str, case_id: str) -> list[dict[str, Any]]:
    """The detail view of `case_id`: a panel per device."""
    table, details = packed(page)
    return next(d for row, d in zip(table, details, strict=True) if row[1] + row[2] == case_id)


def sections(panel: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A panel's labelled figures: section title -> label -> value."""
    return {title: dict(items) for title, items in panel.get("sections", [])}


def text(page: str) -> str:
    """Everything the page can show as text: its markup unescaped, then each string of its packed data."""
    return "\n".join([htmllib.unescape(_PACKED.sub("", page)), *_strings(packed(page))])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, (list, tuple)) else []
