"""Text for a terminal or a CI log, made inert: the one function every line perfguard prints goes through.

Case ids, device names, dates and messages come from records and baselines, which arrive as pull
requests' artifacts, and from case declarations. Printed raw, `\\x1b[2K\\r` erases the `regressed`
line a person was about to read and prints a forged `same`, an OSC 8 sequence makes a hidden link,
and a line that starts with `::error::` (after any spaces: the runner trims them) or holds `##[`
anywhere (its legacy form, still obeyed) is a command to the GitHub Actions runner (`::add-mask::`,
`::stop-commands::` switches off every annotation after it). So each printed line goes through
`line`: every control character (C0, DEL, C1) and every invisible format or separator character (bidi
overrides, zero-width marks, U+2028) is shown as its escape (`\\x1b`, `\\r`, `\\u202e`), a `::` that
would start the line gets a `\\` in front of it, and `##[` becomes `##\\[`. perfguard's own text holds
none of these, so applying it to whole lines changes only what came from data.

The same `printable` makes these characters visible on every other surface: the Markdown (each field,
then its own escaping: report/markdown.py) and the HTML report (`in_page`, each value before jinja2's
autoescape: report/html.py), where a raw U+202E would reverse the text after it on screen.

Two texts that differ must not look alike either (a baseline or a record can hold `mul[n=4096]` and
`mul[n=4096] ` as two cases, and the gate keeps them apart): so a character that Unicode's NFC would
change, with the marks it would join, is shown as its escape (`e\\u0301` beside NFC's `é`, the
angstrom sign `\\u212b` beside `Å`), every space but " " already is (a no-break space `\\xa0`, U+2007,
U+3000), and a " " at either end of a field (a table's cell, a Markdown field, an HTML value), where
padding, a code span or the page's layout hides it, is `\\x20`; at the end of a line too. A case id is
made so where it is declared (perfguard/case.py), so that pytest's lines show it so as well.
"""

from __future__ import annotations

import contextlib
import re
import sys
import unicodedata
from collections.abc import Iterator
from typing import TextIO

# Escaped: what Python does not call printable. That is C0, DEL and C1 (ESC, CR, NUL, BEL, NEL, CSI),
# format characters (bidi overrides, zero-width marks), U+2028/U+2029, every space but " ", lone
# surrogates, private-use and unassigned code points; letters, marks, symbols and " " stay.
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# What the runner takes for a workflow command: `::name` once leading whitespace is trimmed (.NET's
# TrimStart, the Unicode spaces Python's \s knows too), or the legacy `##[name` anywhere in the line.
_COMMAND_START = re.compile(r"\s*::")
_LEGACY_COMMAND = "##["


def printable(text: object, keep: str = "") -> str:
    """`text` as a field shows it: each character a terminal would act on, or not show, or that NFC would
    change, written as its escape, and a space at either end as `\\x20`; the characters in `keep` (a
    page's line breaks) stay as they are."""
    text = str(text)
    # Nearly every string is printable and NFC, both checked in C: a report's 5,280 cases hold a million.
    if text.isprintable() and text[:1] != " " and text[-1:] != " " and _nfc(text):
        return text
    return _ends(_shown(text, keep), start=True)


def _shown(text: str, keep: str) -> str:
    """`text` with each character that is not printable, or that NFC would change, as its escape."""
    if text.isprintable() and _nfc(text):
        return text
    out = []
    for part in _clusters(text):
        changed = not _nfc(part)  # its letters kept, its marks shown
        out += [_code(c) if c not in keep and (not c.isprintable() or (changed and not c.isascii())) else c
                for c in part]
    return "".join(out)


def _nfc(text: str) -> bool:
    return text.isascii() or unicodedata.is_normalized("NFC", text)  # ASCII is: its flag, read at once


def _ends(text: str, start: bool) -> str:
    """`text` with each space at its end, and at its start where `start`, as `\\x20`."""
    if text[-1:] != " " and (text[:1] != " " or not start):
        return text
    core = text.rstrip(" ")
    body = core.lstrip(" ") if start else core
    return "\\x20" * (len(core) - len(body)) + body + "\\x20" * (len(text) - len(core))


def _clusters(text: str) -> list[str]:
    """`text` in the runs NFC treats as one: a character with the combining marks after it, and Hangul
    jamo that compose into a syllable."""
    parts: list[str] = []
    for c in text:
        if parts and (unicodedata.combining(c) or len(unicodedata.normalize("NFC", parts[-1][-1] + c)) < 2):
            parts[-1] += c
        else:
            parts.append(c)
    return parts


def in_page(value: object) -> object:
    """A value as the HTML report shows it (jinja2's `finalize`, before autoescaping): text as `printable`
    makes it, its line breaks kept (a message's lines in <pre>, a tooltip's); markup, which is the
    report's own (its CSS, its script, what its macros made of values shown already), as it is."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return printable(value, keep="\n")
    return value


def line(text: object) -> str:
    """`text` as one inert line (see the module's docstring): its spaces at the start are the line's
    indent, those at its end shown."""
    out = _ends(_shown(str(text), ""), start=False)
    if _COMMAND_START.match(out):
        out = "\\" + out
    return out.replace(_LEGACY_COMMAND, "##\\[")


def lines(text: object) -> str:
    """Multi-line text (a failure message), each of its lines made inert; the line breaks kept."""
    return "\n".join(line(part) for part in str(text).split("\n"))


def _code(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class Stream:
    """A text stream that writes each complete line it is given through `line` to `target`.

    A line is held until it ends (or the stream is closed), so that a command split across two
    writes (`##` then `[error]`) is seen whole."""

    def __init__(self, target: TextIO):
        self.target = target
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *done, self._pending = self._pending.split("\n")
        for part in done:
            self.target.write(line(part) + "\n")
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def close(self) -> None:
        if self._pending:
            self.target.write(line(self._pending))
            self._pending = ""
        self.target.flush()

    def __getattr__(self, name: str) -> object:  # fileno, encoding, isatty: the target's
        return getattr(self.target, name)


@contextlib.contextmanager
def output() -> Iterator[None]:
    """sys.stdout and sys.stderr through `Stream` while the block runs (the console command's whole run)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream(saved[0]), Stream(saved[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, Stream):
                stream.close()
        sys.stdout, sys.stderr = saved
