"""The test suite's own work units under `-n 2 --dist loadgroup`, which conftest.py decides since pytest 9.2
broke xdist's groups: a test file at a time, the longest handed out first."""

from __future__ import annotations

from conftest import LONGEST_FIRST, work_unit


def test_each_test_goes_with_the_other_tests_of_its_file(request):
    # A module-scoped fixture then runs once, on the worker that has its file.
    for item in request.session.items:
        assert work_unit(item.nodeid) == item.path.relative_to(request.config.rootpath).as_posix(), item.nodeid


def test_the_units_handed_out_first_are_files_of_this_suite(request):
    # Read from the folder, not from the tests this run collected (this file's alone, perhaps): a renamed
    # file would quietly lose its place.
    files = {path.relative_to(request.config.rootpath).as_posix()
             for path in (request.config.rootpath / "tests").glob("test_*.py")}
    assert set(LONGEST_FIRST) <= files, set(LONGEST_FIRST) - files
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), LONGEST_FIRST
