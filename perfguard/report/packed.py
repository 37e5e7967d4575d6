"""The HTML report's table rows and detail views, packed into the page: JSON, deflated, in base64.

A 5,280-case report as markup was 32 MB; as JSON its rows and detail views are 22 MB, and their
repeats (labels, units, section titles; there, 40 copies of one suite) deflate to 0.47 MB. report.js inflates it with the browser's DecompressionStream("deflate"),
which reads zlib's format. Base64 holds only `A-Za-z0-9+/=`, so a packed value sits in an
attribute with nothing in it a parser could take for markup, whatever the record said.

Every string goes in as the page shows it (`inert.in_page`: bidi overrides, zero-width and control
characters as their escapes), the same as jinja2's `finalize` does for the page's markup.
"""

from __future__ import annotations

import base64
import json
import math
import re
import zlib
from typing import Any

from perfguard import inert

# zlib's level 6 packs the data of 5,280 cases to within 3% of level 9 in a third of the time.
LEVEL = 6


# What json.dumps writes for a character `inert.in_page` escapes (a control character other than the
# line break it keeps); a record's own backslash before one of these letters matches too, harmlessly.
_ESCAPED = re.compile(r"\\[utrbf]")


def pack(value: Any) -> str:
    """`value` (lists, dicts, strings, numbers, None) as base64 of deflated JSON, its strings made inert."""
    # Walking a million strings to find none to escape took a second at 5,280 cases: the JSON text
    # says at once whether any string holds such a character, and only then is every one walked.
    try:
        text = _dumps(value)
        clean = text.isprintable() and not _ESCAPED.search(text)
    except ValueError:  # a NaN or an infinity, which JSON has not
        clean = False
    if not clean:
        text = _dumps(_inert(value))
    return base64.b64encode(zlib.compress(text.encode("utf-8"), LEVEL)).decode("ascii")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def unpack(packed: str) -> Any:
    """What `pack` packed (tests and benchmarks read pages with it)."""
    return json.loads(zlib.decompress(base64.b64decode(packed)).decode("utf-8"))


def _inert(value: Any) -> Any:
    if isinstance(value, str):
        return inert.in_page(value)
    if isinstance(value, dict):
        return {k: _inert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_inert(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN: the page shows the figure as missing
    return value
