"""The names in a record that become paths or links, and the one rule each must follow.

Records and baselines arrive as CI artifacts of pull requests, so every string in them is untrusted.
A device slug names a file (`baselines/<slug>.json`, asv's `results/<slug>-<card>/`); a profile's
trace becomes a link in the HTML report. Each is checked against its pattern here, when a file is
read (`model.checks`) and again where the path or link is made, so that `../../x`, `/etc/x` or
`javascript:…` never reaches the file system or a page.
"""

from __future__ import annotations

import re

# A device slug: lower-case letters and digits in runs joined by single dashes ("nvidia-h200",
# "cpu-intel-xeon"). No dots or slashes, so a slug is one file name and never climbs out of its folder.
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_SLUG_CHARS = 120  # a file name must stay under the file systems' 255 bytes with its suffixes
# What a file name made from record text may keep; every other run of characters becomes "_".
UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._=-]+")
# A link inside the report's folder: relative, '/'-separated names of the characters above, none
# starting with a dot (so no "..", no hidden file). A scheme needs ':', an absolute path '/' first.
_PART = r"[A-Za-z0-9=-][A-Za-z0-9._=-]{0,199}"
REPORT_LINK = re.compile(rf"{_PART}(?:/{_PART}){{0,7}}")


def slug(name: str) -> str:
    """The device slug of a model name ('NVIDIA H200' -> 'nvidia-h200'); empty when nothing is left."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:MAX_SLUG_CHARS].rstrip("-")


def device_slug(kind: str, name: str) -> str:
    """The slug of a device `kind` ("cuda", "cpu") named `name` ('NVIDIA H200' -> 'nvidia-h200'; 'Intel(R)
    Xeon(R) Platinum 8481C CPU @ 2.70GHz' -> 'cpu-intel-xeon-platinum-8481c'): the rule every record's device
    follows, so that a record whose slug is not its name's adds no runs to another model's baseline."""
    if kind == "cpu":
        short = slug(_short_cpu_name(name))
        return slug(f"cpu-{short}") if short else "cpu-unknown"  # slug() again: the prefix within MAX_SLUG_CHARS
    return slug(name) or "unknown"  # the peak table keys its GPUs by the same rule


def _short_cpu_name(name: str) -> str:
    # "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz" -> "Intel Xeon Platinum 8481C"
    name = re.sub(r"\((R|TM|tm|r)\)", "", name)
    name = re.sub(r"\s*@.*$", "", name)
    name = re.sub(r"\b(CPU|Processor|\d+-Core)\b", "", name)
    return " ".join(name.split())


def is_slug(text: object) -> bool:
    return isinstance(text, str) and len(text) <= MAX_SLUG_CHARS and SLUG.fullmatch(text) is not None


def is_report_link(text: object) -> bool:
    """Whether `text` may be a link in a report: a relative path inside the report's folder."""
    return isinstance(text, str) and REPORT_LINK.fullmatch(text) is not None


def shown(value: object, limit: int = 80) -> str:
    """A value from a file, quoted for a one-line message: repr'd (no newline survives) and cut to `limit`."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
