"""The test suite's own work units under `-n 2 --dist loadgroup`, which conftest.py decides from each file's
text since pytest 9.2 broke xdist's groups: they must agree with the fixtures pytest resolves for each test."""

from __future__ import annotations

from conftest import FORK_SERVER_GROUP, work_unit


def test_the_files_whose_tests_need_the_fork_server_share_one_unit_and_every_other_file_is_its_own(request):
    items = request.session.items
    forked = {item.nodeid.split("::")[0] for item in items if "forked" in getattr(item, "fixturenames", ())}  # a perf case has none
    for item in items:
        file = item.nodeid.split("::")[0]
        assert work_unit(request.config.rootpath, item.nodeid) == (FORK_SERVER_GROUP if file in forked else file), item.nodeid
