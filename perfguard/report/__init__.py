"""Rendering of run records: terminal table, HTML report (`html.render_html`) and Markdown summary (`markdown.render_markdown`). Never measures or compares."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfguard.analysis.scaling import Scaling
    from perfguard.model import RunRecord

# The files a run writes into its report folder (the plugin, `perfguard ab` and the workflows read them).
RECORD_NAME = "perfguard.json"
HTML_NAME = "perfguard.html"
MARKDOWN_NAME = "perfguard.md"


def write_run_files(
    folder: Path, record: RunRecord, fits: Sequence[Scaling] | None = None, others: Sequence[tuple[str, RunRecord]] = ()
) -> list[tuple[Path, str | None]]:
    """Write the run record, any `others` records by name, and the record's HTML report and Markdown
    summary into `folder`: (path, None when written, else the one line saying why not), per file.

    Each file stands alone: one that cannot be rendered or written costs that file only, never the
    run (nor the record). `fits` as in `html.render_html`.
    """
    from perfguard.errors import PerfguardError, first_line
    from perfguard.model import dumps
    from perfguard.report.html import render_html
    from perfguard.report.markdown import render_markdown
    from perfguard.store.atomic import write_atomic

    files = [(RECORD_NAME, lambda: dumps(record))]
    files += [(name, lambda r=r: dumps(r)) for name, r in others]
    files += [(HTML_NAME, lambda: render_html([record], fits)), (MARKDOWN_NAME, lambda: render_markdown([record], fits))]
    outcome: list[tuple[Path, str | None]] = []
    for name, render in files:
        path = folder / name
        try:
            text = render()
        except Exception as exc:  # noqa: BLE001 - a report must never take the run (or its record) down
            outcome.append((path, f"cannot render {name} ({type(exc).__name__}: {first_line(str(exc))}); {RECORD_NAME} is intact"))
            continue
        try:
            write_atomic(path, text)
            outcome.append((path, None))
        except PerfguardError as exc:
            outcome.append((path, str(exc)))
    return outcome
