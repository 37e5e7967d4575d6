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
    folder: Path, record: RunRecord, fits: Sequence[Scaling] | None = None, others: Sequence[tuple[str, RunRecord]] = (),
    *, reports: bool = True,
) -> list[tuple[Path, str | None]]:
    """Write the run record, any `others` records by name, and (unless not `reports`) the record's HTML
    report and Markdown summary into `folder`: (path, None when written, else the one line saying why
    not), per file.

    Each file stands alone: one that cannot be rendered or written costs that file only, never the
    run (nor the record). `fits` as in `html.render_html`.
    """
    from perfguard.errors import PerfguardError, first_line
    from perfguard.model import dumps
    from perfguard.report.html import render_html
    from perfguard.report.markdown import render_markdown
    from perfguard.files import write_atomic

    files = [(RECORD_NAME, lambda: dumps(record))]
    files += [(name, lambda r=r: dumps(r)) for name, r in others]
    if reports:
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


def mark_unfinished(folder: Path, record: RunRecord) -> None:
    """At the start of a run: replace the previous run's record with `record` (status "unfinished") and
    remove its HTML report and Markdown summary. A run that dies (a killed process, `os._exit` in a
    case) or cannot write its files at the end then leaves a record that says so, not the previous
    one looking current. Best effort: the run's end reports a folder it cannot write."""
    from perfguard.errors import PerfguardError
    from perfguard.model import dumps
    from perfguard.files import write_atomic

    try:
        write_atomic(folder / RECORD_NAME, dumps(record))
        for name in (HTML_NAME, MARKDOWN_NAME):
            (folder / name).unlink(missing_ok=True)
    except (OSError, PerfguardError):
        pass
