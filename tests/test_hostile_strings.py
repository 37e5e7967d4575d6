"""Record text that tries to become something else on a surface (issue 30, "Strings"): Markdown that a
code span cannot hold, bidi and zero-width characters, line breaks that forge lines, an exception's
message cut at its first line break.

The Markdown is rendered by cmark-gfm, GitHub's own renderer (PyPI `cmarkgfm`), with the extensions
GitHub turns on, and raw HTML let through as GitHub's renderer lets it through to its sanitiser: what
the HTML holds is what a pull request's comment would show.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

# The test extra installs cmark-gfm; a machine that has only what its image brings (the GPU machine)
# skips these, in one line, rather than failing to collect every other test of the run.
cmarkgfm = pytest.importorskip("cmarkgfm", reason="needs cmark-gfm (pip install -e '.[test]')")
Options = pytest.importorskip("cmarkgfm.cmark").Options

from perfguard import inert
from perfguard.analysis.stats import timing
from perfguard.cli import main
from perfguard.model import CaseResult, DeviceInfo, Noise, RunRecord, TimeEvidence, Verdict, dumps, loads_record, names
from perfguard.report.html import render_html
from perfguard.report.markdown import render_markdown

from report_page import panels, sections
from report_page import rows as page_rows
from report_page import text as page_text
from test_bad_input import failure_lines
from test_report_render import H200
from test_report_render import record as gpu_record
from test_report_render import result as gpu_result
from test_report_render import verdict as gpu_verdict

ROOT = Path(__file__).resolve().parents[1]
CPU = DeviceInfo(kind="cpu", name="AMD EPYC 9654", slug="cpu-amd-epyc-9654")
WHEN = "2026-11-29T12:00:00+00:00"
SAMPLES = tuple(0.5 + 0.001 * (i % 7) for i in range(50))
GFM = ["table", "autolink", "strikethrough", "tagfilter"]
LIVE = " ![x](http://evil.example/i.png) [l](http://evil.example/) @octocat <img src=x> www.evil.example "
# Ids that end a naive code span early, or that nothing but escaping holds: backtick runs around
# cmark-gfm's limit of 80 for a fence, backslashes and pipes for the table, each with live Markdown.
HOSTILE_IDS = [f"mul[s={'`' * n}{LIVE}{'`' * n}]" for n in (1, 2, 15, 16, 40, 79, 80, 81, 150)] + [
    f"x`{LIVE}`y", f"a\\|{LIVE}|b\\", f"` {LIVE} `", "[l](http://evil.example/)", "<img src=x onerror=alert(1)>", "@octocat",
]


TIME = TimeEvidence(noise=Noise(runs=5, spread_pct=1.0, tolerance_pct=5.0, detectable_pct=6.6))

def markdown_html(md: str) -> str:
    return cmarkgfm.markdown_to_html_with_extensions(md, options=Options.CMARK_OPT_UNSAFE, extensions=GFM)


class _Live(HTMLParser):
    """What in rendered HTML would act on a reader: an image, a link, a raw tag cmark-gfm did not make,
    or an `@name` outside a code span (GitHub makes it a mention after rendering)."""

    MADE = {"p", "ul", "ol", "li", "code", "strong", "em", "h1", "h2", "h3", "table", "thead", "tbody", "tr", "th", "td",
            "details", "summary", "del"}

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.code = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.code += tag == "code"
        if tag not in self.MADE:
            self.found.append(f"<{tag} {attrs}>")

    def handle_endtag(self, tag: str) -> None:
        self.code -= tag == "code"

    def handle_data(self, data: str) -> None:
        if not self.code:
            self.found += re.findall(r"@\w+", data)


def live(html: str, allowed_link: str | None = None) -> list[str]:
    parser = _Live()
    parser.feed(html)
    return [f for f in parser.found if not (allowed_link and f == f"<a [('href', '{allowed_link}')]>")]


def test_the_detector_sees_what_github_would_make_live():
    assert len(live(markdown_html(f"- `x`{LIVE}\n"))) == 5  # image, link, mention, raw <img>, autolink


def marker(i: int) -> str:
    return f"case{i:02d}q"


def hostile_record(ids: list[str] = HOSTILE_IDS) -> RunRecord:
    """Each hostile id twice: an error (its list line under Errors) and a regression (under Regressions)."""
    results, verdicts = [], []
    for i, hostile in enumerate(ids):
        case_id = f"{marker(i)}{hostile}"
        results.append(CaseResult(id=f"{case_id}e", name="e", status="error", device=CPU.slug, error=f"boom {i}{LIVE}"))
        results.append(CaseResult(id=case_id, name="r", status="ok", device=CPU.slug, timer="host-clock",
                                  timings={"gpu_time": timing(SAMPLES)}))
        verdicts.append(Verdict(case_id, "gpu_time", "regressed", 0.3, 0.5, 66.7, 5.0, None, reason="outside", time=TIME))
    return RunRecord(created_at=WHEN, perfguard_version="0.1.0", devices=(CPU,), results=tuple(results),
                     verdicts=tuple(verdicts))


def test_no_id_breaks_out_of_its_code_span_in_the_list_or_the_table():
    md = render_markdown([hostile_record()])
    lines = md.splitlines()
    for i, case_id in enumerate(HOSTILE_IDS):
        for kind in ("- ", "| "):  # its list lines and table rows, rendered alone and in the whole text
            mine = [line for line in lines if line.startswith(kind) and marker(i) in line]
            assert len(mine) == 2, (kind, case_id)  # the error's and the regression's
            for line in mine:
                # A row renders only under a table's header.
                text = line if kind == "- " else "| case | v |\n|---|---|\n" + line
                assert live(markdown_html(text + "\n")) == [], line
    html = markdown_html(md)
    assert live(html) == []
    assert html.count("<li>") >= 2 * len(HOSTILE_IDS) and html.count("<tr>") >= 2 * len(HOSTILE_IDS)


@pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH to run the comment job's script "
                    "(GitHub's hosted runners have it)")
def test_the_comment_jobs_cut_leaves_no_code_span_open_wherever_it_falls(tmp_path):
    """The comment job's own script, run under node with the summary moved past its cut one character
    at a time: every cut, from before the first hostile line to after the last, renders nothing live."""
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "perf.yml").read_text())
    script = wf["jobs"]["comment"]["steps"][-1]["with"]["script"]
    # Spans of one backtick and of 16 (the longest fence), one with backticks inside, one in a table.
    md = render_markdown([hostile_record([HOSTILE_IDS[0], HOSTILE_IDS[2], *HOSTILE_IDS[9:11]])])
    folder = tmp_path / "summaries" / "perfguard-md-gpu0"
    folder.mkdir(parents=True)
    # The padding's length moves where the cut falls in the summary: from before its start to past its end.
    harness = tmp_path / "harness.js"
    harness.write_text(
        "const fs = require('fs');\n"
        "let body = null;\n"
        "const github = {rest: {issues: {createComment: async (c) => { body = c.body; }}}};\n"
        "const context = {serverUrl: 'https://github.com', repo: {owner: 'o', repo: 'r'}, runId: 7, issue: {number: 1}};\n"
        "const core = {info: console.log};\n"
        f"const md = {json.dumps(md)};\n"
        f"async function post() {{\n{script}\n}}\n"
        "(async () => {\n"
        "  const tails = new Set();\n"
        "  for (let shift = 0; shift <= md.length + 400; shift++) {\n"
        "    const pad = 'x'.repeat(64600 - shift);\n"
        # A new file each time: ext4 flushes a file truncated and written again to disk as it closes
        # (auto_da_alloc): the loop waited on the disk for 6 of its 10 s.
        f"    fs.rmSync({json.dumps(str(folder / 'perfguard.md'))}, {{force: true}});\n"
        f"    fs.writeFileSync({json.dumps(str(folder / 'perfguard.md'))}, pad + '\\n' + md);\n"
        "    await post();\n"
        "    const at = body.indexOf(pad);\n"
        "    tails.add(at < 0 ? body : body.slice(at + pad.length));\n"
        "  }\n"
        "  fs.writeFileSync('tails.json', JSON.stringify([...tails]));\n"
        "})();\n")
    done = subprocess.run(["node", str(harness)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    tails = json.loads((tmp_path / "tails.json").read_text(encoding="utf-8"))
    link = "https://github.com/o/r/actions/runs/7"
    assert len(tails) > 16  # the cut fell in many places: after each of the lines at least
    assert any("_Cut to fit" not in tail for tail in tails)  # and past the end: the summary whole
    for tail in tails:
        assert live(markdown_html(tail), allowed_link=link) == [], tail[-300:]


# --- 2. bidi and zero-width characters are shown, not obeyed ----------------------------------------

# Bidi embeddings, overrides and isolates, the marks, and the zero-width characters.
INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff"


def test_bidi_and_zero_width_characters_show_as_escapes_on_every_surface(tmp_path, capsys):
    """Chromium showed `mul\\u202e4202-regressed` as `muldesserger-2024`, and the reversal ran on into the
    slug beside the device's name and the roofline's caption."""
    case_id = f"mul\u202e4202-regressed[n=1{INVISIBLE}]"
    device = dataclasses.replace(H200, name=f"NVIDIA\u202e H200{INVISIBLE}")
    run = gpu_record(gpu_result(case_id, params={"mode": f"a\u202eb\x1bc{INVISIBLE}"}), devices=(device,),
                     verdicts=(gpu_verdict(case_id, "regressed", 12.0),))
    path = tmp_path / "perfguard.json"
    path.write_text(dumps(run))
    assert main(["show", str(path)]) == 0
    # (The pytest summary prints each line through the same inert.line: tests/test_inert_text.py.)
    page = render_html([run])
    # The HTML: its markup, and the strings of its packed rows and detail views, as the page shows them.
    surfaces = {"HTML": page_text(page), "Markdown": render_markdown([run]), "perfguard show": capsys.readouterr().out}
    for surface, text in surfaces.items():
        # The Markdown's own zero-width spaces (after an `@`, a `:` of `://`) break GitHub's autolinks.
        raw = sorted(f"U+{ord(c):04X}" for c in set(text) if c in INVISIBLE + "\x1b" and not (surface == "Markdown" and c == "\u200b"))
        assert raw == [], surface
        assert "mul\\u202e4202-regressed" in text and "\\u2066" in text, surface
    assert "<figcaption><b>NVIDIA\\u202e H200\\u202a" in page  # the roofline's caption
    assert "a\\u202eb\\x1bc" in sections(panels(page, "mul\\u202e4202-regressed[n=1" + "".join(
        inert.printable(c) for c in INVISIBLE) + "]")[0])["run"]["parameters"]


# --- 3. a line break in a record's or a baseline's text forges no line -------------------------------

FORGED = "verdicts: 0 regressed, 0 improved (forged)"


@pytest.mark.parametrize("command", ["show", "compare", "baseline show", "baseline accept"])
def test_a_line_break_in_a_device_name_or_case_id_forges_no_line(tmp_path, capsys, command):
    name = f"AMD EPYC\n{FORGED}\r\n{FORGED}"
    device = dataclasses.replace(CPU, name=name, slug=names.device_slug("cpu", name))  # the slug perfguard makes of it
    case_id = f"add[n=1]\n{FORGED}"
    ok = CaseResult(id=case_id, name="add", status="ok", device=device.slug, timer="host-clock", timings={"gpu_time": timing(SAMPLES)})
    broken = CaseResult(id=f"broken\n{FORGED}", name="broken", status="error", device=device.slug, error=f"boom\n{FORGED}")
    verdict = Verdict(case_id, "gpu_time", "regressed", 0.3, 0.5, 66.7, 5.0, f"baselines/x.json\n{FORGED}", reason="outside",
                      time=TIME)
    record = RunRecord(created_at=WHEN, perfguard_version="0.1.0", devices=(device,), results=(ok, broken), verdicts=(verdict,))
    run, baselines = tmp_path / "run.json", tmp_path / "baselines"
    run.write_text(dumps(record))
    accept = ["baseline", "accept", run, "--baselines", baselines]
    if command == "baseline show":  # the baseline accept makes: its device's name and case's id carry the break too
        assert main([str(a) for a in accept]) == 0
        capsys.readouterr()
    argv = {"show": ["show", run], "compare": ["compare", run, run], "baseline accept": accept,
            "baseline show": ["baseline", "show", "--baselines", baselines]}[command]
    assert main([str(a) for a in argv]) in (0, 1)
    out = capsys.readouterr()
    printed = (out.out + out.err).splitlines()
    assert [line for line in printed if line.startswith("verdicts:") or "(forged)" in line and "\\n" not in line] == []
    assert any("\\nverdicts: 0 regressed" in line for line in printed)  # shown, escaped, on the line it is part of


# --- 4. a case's failure line keeps its exception's whole message ------------------------------------

RAISES = """
    from perfguard import perf_case

    @perf_case
    def shapes(device):
        raise ValueError("shapes differ:\\r\\n  expected (4, 8)\\n  got (4, 9)\\rsee the docs")
"""


@pytest.mark.parametrize("mode", ["smoke", "measure"])
def test_a_cases_failure_line_keeps_the_whole_message_of_its_exception_escaped(tmp_path, run_pytest, mode):
    (tmp_path / "test_raises.py").write_text(textwrap.dedent(RAISES))
    result = run_pytest(tmp_path, *(("--perfguard", "--perfguard-budget", "0.1") if mode == "measure" else ()))
    result.assert_outcomes(failed=1)
    whole = "shapes: setup raised ValueError: shapes differ:\\r\\n  expected (4, 8)\\n  got (4, 9)\\rsee the docs"
    assert failure_lines(result, "shapes")[0] == whole
    if mode == "measure":  # the record's error begins with the same line, the user's frames below it
        error = loads_record((tmp_path / "reports" / "perfguard.json").read_text(), "record").results[0].error
        assert error.splitlines()[0] == whole


# --- 5. ids that look alike read apart -------------------------------------------------------------

# Each id as every surface shows it: two ids that differ never look alike (issue 46, item 7). A space at
# either end, where a table's padding, a code span or a page's layout hides it; each Unicode space but
# " "; a form NFC would change (a decomposed é, the angstrom sign) beside its composed twin.
LOOKALIKES = {
    "mul[n=4096]": "mul[n=4096]",
    "mul[n=4096] ": "mul[n=4096]\\x20",
    " mul[n=4096]": "\\x20mul[n=4096]",
    "mul[n=4096]\u00a0": "mul[n=4096]\\xa0",
    "mul[n=4096]\u2007": "mul[n=4096]\\u2007",
    "mul[n=4096]\u202f": "mul[n=4096]\\u202f",
    "mul[n=4096]\u3000": "mul[n=4096]\\u3000",
    "mul[x=caf\u00e9]": "mul[x=caf\u00e9]",
    "mul[x=cafe\u0301]": "mul[x=cafe\\u0301]",
    "mul[x=\u00c5]": "mul[x=\u00c5]",
    "mul[x=\u212b]": "mul[x=\\u212b]",
}


def test_ids_that_look_alike_read_apart_on_every_surface(tmp_path, capsys):
    from perfguard.report.terminal import table

    ok = [CaseResult(id=i, name="mul", status="ok", device=CPU.slug, timer="host-clock", timings={"gpu_time": timing(SAMPLES)})
          for i in LOOKALIKES]
    verdicts = [Verdict(i, "gpu_time", "regressed", 0.3, 0.5, 66.7, 5.0, None, reason="outside", time=TIME) for i in LOOKALIKES]
    record = RunRecord(created_at=WHEN, perfguard_version="0.1.0", devices=(CPU,), results=tuple(ok), verdicts=tuple(verdicts))
    run, baselines = tmp_path / "run.json", tmp_path / "baselines"
    run.write_text(dumps(record))
    assert main(["baseline", "accept", str(run), "--baselines", str(baselines)]) == 0
    capsys.readouterr()
    assert main(["baseline", "show", "--baselines", str(baselines)]) == 0
    shown = [line[2:].split("  ")[0] for line in capsys.readouterr().out.splitlines() if line.startswith(("  mul", "  \\x20mul"))]
    assert sorted(shown) == sorted(LOOKALIKES.values())  # `perfguard baseline show`: a row a case, each its own
    cells = [line.split("  ")[0] for line in table(record.results, record.devices)]  # the pytest summary's table
    assert set(LOOKALIKES.values()) <= set(cells)
    assert sorted(page_rows(render_html([record]))) == sorted(LOOKALIKES.values())  # the HTML report's rows
    md = render_markdown([record])
    assert all(f"`{s}`" in md for s in LOOKALIKES.values())  # its code spans, in the list and the table
    for text in (md, page_text(render_html([record]))):
        assert "\u0301" not in text and "\u212b" not in text


LOOKALIKE_CASES = """
    from perfguard import perf_case

    @perf_case(name="mul")
    def plain(device):
        raise ValueError("boom")

    @perf_case(name="mul ")
    def trailing(device):
        raise ValueError("boom")

    @perf_case(params={"x": ["caf\\u00e9", "cafe\\u0301"]})
    def accent(x, device):
        raise ValueError("boom")
"""


def test_declared_ids_that_look_alike_read_apart_in_their_failure_lines(tmp_path, run_pytest):
    # The id is made so where it is declared: pytest's own lines (FAILED ..., the section's title) carry it too.
    (tmp_path / "test_alike.py").write_text(textwrap.dedent(LOOKALIKE_CASES))
    result = run_pytest(tmp_path)
    result.assert_outcomes(failed=4)
    for case_id in ("mul", "mul\\x20", "accent[x=caf\u00e9]", "accent[x=cafe\\u0301]"):
        assert failure_lines(result, case_id)[0] == f"{case_id}: setup raised ValueError: boom"
