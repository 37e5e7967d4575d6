"""Every string of a record or a case id is inert where perfguard prints it (issue 21): in a terminal
(no control character reaches it), in a GitHub Actions log (no line starts a workflow command) and in
the Markdown summary (no link, image, mention, heading or comment). The HTML is test_report_browser.py's.

The records here carry, in every string field a record may hold free text in, an erasing CSI, a
carriage return, an OSC 8 link, workflow commands (`::error::`, after a newline, after a Unicode
space, and the legacy `##[error]`), bidi and NUL characters, and a Markdown link.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import pytest

from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, Counters, DeviceInfo, MovedRow, RunRecord, TimeSplit, Verdict, Where, dumps, names
from perfguard import inert
from perfguard.report.markdown import render_markdown

PAYLOAD = ("\x1b[2K\r same \r::error::forged\n::add-mask::secret\u2003::warning::spaced ##[error]legacy "
           "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ \x00\x07\u202e [notes](https://evil.example)")
# The strings that must be one of a few values (read back through model/checks.py, or keys perfguard
# looks up): left as they are. Every other string field gets the payload.
ENUMS = {"slug", "device", "status", "regime", "trace", "metric", "kind", "timer", "cache", "mode", "stop_reason",
         "sort_by", "bound", "roofs", "method", "outputs", "peak_phase", "perfguard_version", "reason", "action",
         "judged_by", "not_remeasured", "by",
         "created_at", "recorded_at", "measured_at"}  # dates: model/checks.py refuses any other text (issue 30)
WORKFLOW_COMMAND = re.compile(r"\s*::|.*##\[")


def hostile(text: str) -> str:
    return f"{text}{PAYLOAD}"


def poisoned(obj):
    """`obj` with the payload added to every free-text string in it, however deep (ids too, the same way
    wherever they are, so that a verdict still names its result)."""
    if dataclasses.is_dataclass(obj):
        changes = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            changes[f.name] = value if f.name in ENUMS else poisoned(value)
        return dataclasses.replace(obj, **changes)
    if isinstance(obj, str):
        return hostile(obj)
    if isinstance(obj, tuple):
        return tuple(poisoned(v) for v in obj)
    if isinstance(obj, dict):
        return {k: poisoned(v) for k, v in obj.items()}  # keys name fields of their own (timings' metrics)
    return obj


CPU = DeviceInfo(kind="cpu", name="AMD EPYC", slug="cpu-amd-epyc", driver="d", torch="2.13", python="3.11", host="h")


def measured(case_id: str, ms: float, **fields) -> CaseResult:
    samples = tuple(ms * (1 + 0.001 * (i % 7)) for i in range(50))
    return CaseResult(id=case_id, name=case_id, status="ok", nodeid=f"test_x.py::{case_id}", device=CPU.slug,
                      timer="host-clock", timings={"gpu_time": timing(samples)},
                      params={"n": "4"}, **fields)


def record(ms_b: float, created_at: str) -> RunRecord:
    # Where b's time went: a kernel named by the payload (a key, which poisoned() leaves as it is), so that
    # compare's `where:` line names it.
    kernel = hostile("gemm")
    work = Counters(calls=5, device=True, kernels={kernel: 1.0}, kernel_time=TimeSplit(named_ms={kernel: ms_b}))
    results = (measured("a", 1.0, restored_state=("default dtype",)), measured("b", ms_b, counters=work),
               CaseResult(id="c", name="c", status="error", device=CPU.slug, error="setup raised ValueError: no"))
    verdicts = (Verdict("a", "gpu_time", "same", 1.0, 1.0, 0.0, 1.0, "baselines/x.json", ("torch 1 → 2",), reason="within"),
                Verdict("b", "gpu_time", "regressed", 1.0, ms_b, 100.0, 1.0, "baselines/x.json", reason="outside",
                        where=Where("kernel", (MovedRow("gemm", 1.0, ms_b, 1.0, 1.0, True),), ms_b - 1.0, 4.0)),
                Verdict("d", "gpu_time", "missing", 1.0, None, None, 1.0, "baselines/x.json", reason="did_not_run"))
    run = poisoned(RunRecord(created_at=created_at, perfguard_version="0.1.0", devices=(CPU,), results=results,
                             verdicts=verdicts, commit="0123abcd",
                             options={"note": "x", "gate": ["gate: threshold 1%"]}))
    # Its device's slug made of the poisoned name, as perfguard makes one (accept refuses any other).
    slug = names.device_slug(CPU.kind, run.devices[0].name)
    return dataclasses.replace(run, devices=(dataclasses.replace(run.devices[0], slug=slug),),
                               results=tuple(dataclasses.replace(r, device=slug) for r in run.results))


def assert_inert(text: str) -> None:
    # splitlines() breaks at \r, \x1c-\x1e, \x85 and U+2028 too: a raw one would show as a line of its own.
    for line in text.splitlines():
        assert not WORKFLOW_COMMAND.match(line), line
        assert line.isprintable(), repr(line)


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    paths = {"base": tmp_path / "base.json", "head": tmp_path / "head.json"}
    paths["base"].write_text(dumps(record(1.0, "2026-11-29T10:00:00+00:00")))
    paths["head"].write_text(dumps(record(2.0, "2026-11-29T11:00:00+00:00")))
    return paths


def test_the_payload_survives_the_record_reader(files):
    from perfguard.cli import read_record

    head = read_record(files["head"])
    assert head.results[0].id == hostile("a") and head.devices[0].name == hostile("AMD EPYC")


@pytest.mark.parametrize("argv", [
    ["show", "{head}"],
    ["compare", "{base}", "{head}"],
    ["baseline", "accept", "{head}", "--baselines", "{dir}/baselines"],
    ["report", "{base}", "{head}", "-o", "{dir}/r.html", "--markdown", "{dir}/r.md"],
])
def test_no_command_prints_a_control_character_or_a_workflow_command(files, capsys, argv, tmp_path):
    args = [a.format(base=files["base"], head=files["head"], dir=tmp_path) for a in argv]
    main(args)
    out = capsys.readouterr()
    assert out.out, out.err
    assert_inert(out.out + out.err)
    if argv[0] == "baseline":  # then the file it wrote, listed
        assert "skipped c" in out.out  # accept's line for a case not measured carries the id
        main(["baseline", "show", "--baselines", str(tmp_path / "baselines")])
        listed = capsys.readouterr()
        assert "  a\\x1b[2K\\r same" in listed.out, listed.out
        assert_inert(listed.out + listed.err)


def test_a_line_that_would_command_the_runner_is_escaped_visibly():
    assert inert.line("  ::error::x") == "\\  ::error::x"
    assert inert.line("\u2003::set-output name=a::b") == "\\u2003::set-output name=a::b"  # a space the runner trims
    assert inert.line("ok ##[error]x") == "ok ##\\[error]x"
    assert inert.line("\x1b[2K\rsame") == "\\x1b[2K\\rsame"
    assert inert.line("median 1.0 µs ±0.2% → 3 × faster…") == "median 1.0 µs ±0.2% → 3 × faster…"


def test_a_field_shows_its_end_spaces_and_a_line_its_last_ones_its_indent_kept():
    # A line's indent is perfguard's own; a space at its end, or at a field's ends, is only ever data that
    # would look like the same text without it (issue 46, item 7).
    assert inert.line("  left out: mul ") == "  left out: mul\\x20"
    assert inert.printable(" mul  ") == "\\x20mul\\x20\\x20" and inert.printable("   ") == "\\x20" * 3
    assert inert.printable("a b") == inert.line("a b") == "a b"


def test_the_pytest_summary_and_its_missing_lines_are_inert(tmp_path, run_pytest, write_baseline):
    # A case declared with a hostile name, one that errors quoting it, and a baseline case whose id is
    # hostile and that did not run (its `missing` line).
    (tmp_path / "test_x.py").write_text(textwrap.dedent(f"""
        import time
        from perfguard import perf_case

        @perf_case(name={PAYLOAD!r})
        def ran(device):
            return lambda: time.sleep(0.001)

        @perf_case(name="fails" + {PAYLOAD!r})
        def fails(device):
            raise ValueError({PAYLOAD!r})
    """))
    write_baseline(tmp_path, {f"test_x.py::gone{PAYLOAD}": 1.0})
    result = run_pytest(tmp_path, "--perfguard", "--perfguard-budget=0.01", "-rA")
    text = "\n".join(result.outlines + result.errlines)
    assert "missing" in text and "gone\\x1b[2K" in text, text
    assert "fails\\x1b[2K" in text
    assert_inert(text)


def test_every_markdown_field_is_inert_dates_included():
    # The date the audit used: a link, an image, a mention, a forged heading and an open comment.
    date = "x [notes](https://evil.example) ![](https://evil.example/p.png) @octocat\n\n## perfguard: 0 regressed\n\n<!--"
    rec = dataclasses.replace(record(2.0, date), created_at=date)
    md = render_markdown([rec])
    # Printable but for the zero-width spaces the Markdown puts where GitHub would autolink.
    assert all(line.replace("\u200b", "").isprintable() for line in md.splitlines())
    md = re.sub(r"(`+)(.+?)\1", "", md)  # code spans: their text is shown as it is, never a link or a tag
    assert not re.search(r"(?<!\\)\]\(", md) and "![" not in md  # a link or an image: `[`, `]` escaped
    assert "<!--" not in md and "://" not in md
    assert not re.search(r"@\w", md)
    assert not [line for line in md.splitlines() if line.startswith("## ") and "0 regressed" in line]
    assert md.startswith("## perfguard: 1 error, 1 regressed")
