"""The run's end fitted to the terminal's width: the table's rows on one line each, never wrapped, and
every other line wrapped (`wrap`).

All sixteen columns of a GPU run take 185-211 characters, so at 100 columns every row wrapped onto two
or three lines, and on a CPU seven of them are n/a in every row. So: a column that says nothing in any
row goes; a case id longer than a third of the width is shortened, its whole id in a legend under the
table; then columns go by PRIORITY, the least telling first, until the rest fit. Case, verdict and
median always stay. The record, `perfguard show` in a wider terminal (COLUMNS=250), the HTML and the
Markdown keep every figure.

The lines under the table (what each verdict saw, the accept command, the notes) ran to 400 characters;
at 80 columns a terminal broke them mid-word, and one line's end read as the next one's start. `wrap`
breaks them at spaces, the continuation lines indented under their first, and never inside a command
in backticks: copied from a terminal, a command broken in two runs its first half. A command longer than
the width stands on a line of its own, whole.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Sequence

from perfguard import inert

GAP = "  "
# What a cell holds when the case has no such figure.
EMPTY = ("", "-", "n/a")
# Never dropped: which case, what the gate said, what it measured.
KEPT = ("case", "verdict", "median")
# The rest, the first given up first when the table is too wide: what a reader of a verdict needs most
# (the change against what the gate can detect, the caller's view) goes last.
PRIORITY = ("TFLOP/s", "±CI", "GPU idle", "% peak BW", "bound", "footprint", "GB/s", "kernels/syncs", "card",
            "peak mem", "caller Δ", "caller", "detects", "change")
# Besides KEPT, what an id is shortened to leave room for: the change against what the gate detects.
NEEDED = ("change", "detects")
ID_MIN = 24  # an id is never cut shorter: its name and the ends of its parameters
MARK = "…"
_PARAM_NAME = re.compile(r"(?<=[\[-])[A-Za-z_]\w*=")  # a parameter's name in a grid id, "hidden=" of "[hidden=1024]"
# What `wrap` never breaks: a run of characters up to a space, a span in backticks (spaces and all)
# counting as one character of it; a lone backtick is a character.
_WORD = re.compile(r"(?:`[^`]*`|[^\s`])+|`")
HANG = "  "  # a wrapped line's continuation, under its first line's text


@dataclasses.dataclass(frozen=True)
class Fitted:
    """A table as it is printed: its header, rows and the legend of shortened case ids."""

    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    legend: list[str]

    def lines(self, left: int = 2) -> list[str]:
        """The rows as text: the first `left` columns left-aligned (words), the others right (figures)."""
        widths = [max(len(row[i]) for row in [self.header, *self.rows]) for i in range(len(self.header))]
        return [GAP.join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                for row in [self.header, *self.rows]] + self.legend


def terminal_width() -> int:
    """The terminal's width: COLUMNS when set, else the terminal's, else 80 (shutil's rule)."""
    return shutil.get_terminal_size().columns


def wrap(line: str, width: int | None = None) -> list[str]:
    """`line` as lines of at most `width` characters (None: the terminal's), broken at spaces, each
    continuation indented by HANG past the line's own indent. A word or a command in backticks longer than
    the width is not broken: it stands alone on its line."""
    width = terminal_width() if width is None else width
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" "))) + HANG
    lines: list[str] = []
    prefix, start, end = "", 0, 0  # the line being made: `prefix` + line[start:end]
    for word in _WORD.finditer(line):
        if end > start and len(prefix) + word.end() - start > width:
            lines.append(prefix + line[start:end])
            prefix, start = indent, word.start()
        end = word.end()
    return [*lines, prefix + line[start:end]]


def fit(header: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> Fitted:
    """`rows` under `header` (its first column the case id), in `width` characters (None: the terminal's)."""
    width = terminal_width() if width is None else width
    # A cell is one line, counted as it is shown: a line break in a record's case id is `\\n` (perfguard.inert).
    rows = [tuple(inert.printable(cell) for cell in row) for row in rows]
    keep = [i for i, name in enumerate(header) if name in KEPT or any(row[i] not in EMPTY for row in rows)]
    # The id gets what the columns a verdict needs leave, up to half the width: the rest is the figures'.
    needed = [i for i in keep if i and header[i] in (*KEPT, *NEEDED)]
    room = width - sum(max(len(str(row[i])) for row in [header, *rows]) + len(GAP) for i in needed)
    ids, legend = _shortened([row[0] for row in rows], max(ID_MIN, min(width // 2, room)))
    rows = [(ids[n], *row[1:]) for n, row in enumerate(rows)]
    every = {i: max(len(str(row[i])) for row in [header, *rows]) for i in keep}
    widths, dropped = dict(every), []
    for name in PRIORITY:
        if _total(widths) <= width:
            break
        i = next((i for i in widths if header[i] == name), None)
        if i is not None:
            dropped.append(widths.pop(i) and i)
    for i in reversed(dropped[:-1]):  # a narrower, more telling column dropped on the way may fit back in
        if _total({**widths, i: every[i]}) <= width:
            widths[i] = every[i]
    chosen = sorted(widths)
    return Fitted(tuple(header[i] for i in chosen), [tuple(str(row[i]) for i in chosen) for row in rows], legend)


def _total(widths: dict[int, int]) -> int:
    return sum(widths.values()) + len(GAP) * (len(widths) - 1)


def _shortened(ids: list[str], cap: int) -> tuple[list[str], list[str]]:
    """Each id longer than `cap` without its parameters' names ("conv2d_3x3[512-conv2_x-nchw-bfloat16]#2"),
    and still too long, cut in the middle, numbered; and the legend that gives each number's whole id."""
    marks: dict[str, str] = {}  # an id once in the legend however many rows (devices) it has
    for case_id in ids:
        if len(case_id) > cap and case_id not in marks:
            tag = f"#{len(marks) + 1}"
            text = _PARAM_NAME.sub("", case_id)  # "[batch=64-hidden=1024]" -> "[64-1024]": the values tell cases apart
            room = cap - len(tag)
            if len(text) > room:
                tail = (room - len(MARK)) // 3
                text = text[: room - len(MARK) - tail] + MARK + text[len(text) - tail:]
            marks[case_id] = text + tag
    return [marks.get(i, i) for i in ids], [f"#{n} = {case_id}" for n, case_id in enumerate(marks, 1)]
