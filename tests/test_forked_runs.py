"""The test suite's own forked runs (forked_pytest.py): what the tests read of a run is that run's."""

from __future__ import annotations

import concurrent.futures


def test_runs_started_from_several_threads_each_report_their_own_exit_status(forked, tmp_path):
    # multiprocessing reads a run's status without a lock: two threads reading one (Process.start reads
    # every ended child's) left one of them 255. Without forked_pytest's lock, one status in ten went
    # wrong in a bare loop of four threads, and three runs of this test in four failed.
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(int(sys.argv[1]))\n")

    def run(n: int) -> tuple[int, int]:
        code = 1 + n % 7
        status, _, _ = forked.run(tmp_path, [str(code)], {}, tmp_path / f"{n}.out", tmp_path / f"{n}.err", 60, module="exits")
        return code, status

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        mismatched = [(code, status) for code, status in pool.map(run, range(100)) if status != code]
    assert not mismatched, mismatched
