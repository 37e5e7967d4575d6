"""The test suite's own work units under `-n 2 --dist loadgroup`, which conftest.py decides from each file's
text since pytest 9.2 broke xdist's groups: they must agree with the fixtures pytest resolves for each test."""

from __future__ import annotations

from conftest import FORK_SERVER_GROUP, LONGEST_FIRST, work_unit


def test_the_tests_that_need_the_fork_server_share_one_unit_and_the_others_go_by_file(request):
    for item in request.session.items:
        uses = "forked" in getattr(item, "fixturenames", ())  # a perf case has none
        expected = FORK_SERVER_GROUP if uses else item.nodeid.split("::")[0]
        assert work_unit(request.config.rootpath, item.nodeid) == expected, item.nodeid


def test_the_units_handed_out_first_are_units_of_this_suite(request):
    units = {work_unit(request.config.rootpath, item.nodeid) for item in request.session.items}
    assert set(LONGEST_FIRST) <= units, set(LONGEST_FIRST) - units  # a renamed file would quietly lose its place
