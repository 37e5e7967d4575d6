"""The test suite's own work units under `-n 2 --dist loadgroup`, which conftest.py decides from each file's
text since pytest 9.2 broke xdist's groups: they must agree with the fixtures pytest resolves for each test."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import FORK_SERVER_GROUP, LONGEST_FIRST, work_unit


def test_the_tests_that_need_the_fork_server_share_one_unit_and_the_others_go_by_file(request):
    for item in request.session.items:
        uses = "forked" in getattr(item, "fixturenames", ())  # a perf case has none
        expected = FORK_SERVER_GROUP if uses else item.nodeid.split("::")[0]
        assert work_unit(request.config.rootpath, item.nodeid) == expected, item.nodeid


def suite_units(root: Path) -> set[str]:
    """The work units of every test function of the suite, from the test files' text: not from the tests
    this run collected, which may be this file's alone, or leave out a file whose tests all skip."""
    units = set()
    for path in sorted((root / "tests").glob("test_*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                units.add(work_unit(root, f"tests/{path.name}::{node.name}"))
    return units


def test_the_units_handed_out_first_are_units_of_this_suite(request):
    units = suite_units(request.config.rootpath)
    assert set(LONGEST_FIRST) <= units, set(LONGEST_FIRST) - units  # a renamed file would quietly lose its place


def test_the_units_read_from_the_files_are_those_of_the_collected_tests(request):
    # suite_units reads the files; where this run collected other files too, their units are among its.
    collected = {work_unit(request.config.rootpath, item.nodeid) for item in request.session.items}
    assert collected <= suite_units(request.config.rootpath), collected - suite_units(request.config.rootpath)
