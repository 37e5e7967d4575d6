"""A case that leaves a process running gets a line naming it (issue 30, item 8), wherever the process went
(issue 46, item 6): a child, a shell's background child handed to init when the shell ended, one in a
session of its own (setsid).

The process runs on beside every later case, taking the machine from them, and went unnoticed. Like the
torch settings a case leaves changed (`restored_state`), it is case misbehaviour, not a hole in the
gate: a yellow line and the result's `left_processes`, the run's outcome unchanged. perfguard does
not end the process; this test does, by the pid each one wrote down. Real pytest runs (`run_pytest`),
real processes; under pytest-xdist (where the process is a worker's case's and the result travels, and
the other worker's cases start processes at the same time) the same suite runs in test_xdist.py's run,
whose new interpreters that variant needs too, and is checked there by the two checks below.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfguard import perf_case
from perfguard.model import loads_record

SUITE = """
    import os
    import subprocess
    import time

    from perfguard import perf_case

    KEPT = []  # the case's own reference, so that nothing ends the child behind its back
    # A process that writes "TAG PID" to $PIDS, then becomes `sleep SECONDS` (its pid kept).
    BECOMES_SLEEP = '''sh -c 'echo "{tag} $$" >> "$PIDS"; exec sleep {seconds}' > /dev/null 2>&1'''

    def left(tag, command):
        \"\"\"Run `command` in a shell that ends at once, and wait until what it started is `sleep`.\"\"\"
        subprocess.run(["sh", "-c", command], check=True)
        for _ in range(3000):
            written = open(os.environ["PIDS"]).read() if os.path.exists(os.environ["PIDS"]) else ""
            pids = [line.split()[1] for line in written.splitlines() if line.split()[0] == tag]
            if pids and open(f"/proc/{pids[0]}/cmdline", "rb").read().startswith(b"sleep"):
                return
            time.sleep(0.01)
        raise RuntimeError(f"{tag}: the process did not start")

    @perf_case
    def leaves_a_child(device):
        child = subprocess.Popen(["sleep", "300"])
        KEPT.append(child)
        with open(os.environ["PIDS"], "a") as f:
            f.write(f"leaves_a_child {child.pid}\\n")
        return lambda: time.sleep(0.001)

    @perf_case
    def leaves_a_grandchild(device):  # sh -c "sleep 31 &": the shell ends, its child is handed to init
        left("leaves_a_grandchild", BECOMES_SLEEP.format(tag="leaves_a_grandchild", seconds=31) + " &")
        return lambda: time.sleep(0.001)

    @perf_case
    def leaves_a_new_session(device):  # setsid -f: a session of its own, its parent gone at once
        left("leaves_a_new_session", "setsid -f " + BECOMES_SLEEP.format(tag="leaves_a_new_session", seconds=32))
        return lambda: time.sleep(0.001)

    @perf_case
    def waits_for_its_child(device):
        subprocess.run(["sh", "-c", "sleep 0 & wait"], check=True)  # started and ended inside the case
        return lambda: time.sleep(0.001)

    @perf_case
    def after_it(device):  # runs beside the processes, which are not its own
        return lambda: time.sleep(0.001)
"""
LEFT = {"leaves_a_child": "sleep 300", "leaves_a_grandchild": "sleep 31", "leaves_a_new_session": "sleep 32"}
LINE = re.compile(r"(\w+) left 1 process\(es\) running: (sleep \d+) \(pid (\d+)\); they take the machine "
                  r"from every case after it: end them in the case \(terminate and wait, or a with-block\)")


def pids_of(path: Path) -> dict[str, int]:
    """The pid each case's process wrote down, by case."""
    return {tag: int(pid) for tag, pid in (line.split() for line in path.read_text().splitlines())} if path.exists() else {}


def kill(pids: Path) -> None:
    """End the processes the suite's cases started, by the pids they wrote down, and only them."""
    for pid in pids_of(pids).values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def left(tmp_path_factory, run_pytest):
    path = tmp_path_factory.mktemp("left")
    (path / "test_left.py").write_text(textwrap.dedent(SUITE))
    pids = path / "pids.txt"
    try:
        result = run_pytest(path, "--perfguard", "--perfguard-budget=0.05", env={"PIDS": str(pids)})
        record = loads_record((path / "reports" / "perfguard.json").read_text(), "record")
        yield result, {r.id: r for r in record.results}, pids_of(pids)
    finally:
        kill(pids)


def check_the_lines(result: pytest.RunResult, pids: dict[str, int]) -> None:
    lines = [LINE.fullmatch(line) for line in result.outlines if "process(es)" in line]
    assert all(lines) and sorted((m[1], m[2], int(m[3])) for m in lines) == sorted(
        (case, LEFT[case], pid) for case, pid in pids.items()), result.outlines


def check_the_results(results: dict, pids: dict[str, int]) -> None:
    assert sorted(pids) == sorted(LEFT)
    for case, pid in pids.items():
        assert results[case].left_processes == (f"{LEFT[case]} (pid {pid})",)
    # A process started and waited for inside its case is not left; nor is one a case found running.
    assert results["waits_for_its_child"].left_processes == results["after_it"].left_processes == ()


def test_a_process_left_running_is_one_line_naming_the_case_and_the_run_passes(left):
    result, _, pids = left
    assert result.ret == pytest.ExitCode.OK
    check_the_lines(result, pids)


def test_the_result_names_the_process_wherever_it_went_and_no_other_case_is_blamed_for_it(left):
    _, results, pids = left
    check_the_results(results, pids)


# Started by a shell that ends at once, with an environment of its own (env -i): neither this process's
# descendant nor marked as the case's; only its hold on the case's GPU tells.
HOLDS_THE_GPU = ("import os, sys, time, torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize(); "
                 "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)")


@pytest.mark.gpu
def test_a_process_that_left_the_tree_and_the_mark_is_named_while_it_holds_the_cases_gpu(tmp_path):
    from perfguard.measure import runner
    from perfguard.measure.device import detect
    from perfguard.measure.timers import SamplingRule

    gpu, written = detect("cuda"), tmp_path / "pid"

    def holds_the_gpu(device):
        subprocess.run(["sh", "-c", f'env -i CUDA_VISIBLE_DEVICES={gpu.uuid} "$0" -c "$1" "$2" > /dev/null 2>&1 &',
                        sys.executable, HOLDS_THE_GPU, str(written)], check=True)
        for _ in range(12000):  # until its CUDA context is made (torch's import and CUDA's start: seconds)
            if written.exists() and written.read_text():
                return lambda: None
            time.sleep(0.01)
        raise RuntimeError("the process never held the GPU")

    (instance,) = perf_case(holds_the_gpu).instances("cuda")
    try:
        result = runner.measure(instance, gpu, SamplingRule(budget_s=0.05))
        pid = int(written.read_text())
        (named,) = result.left_processes
        assert named.startswith(f"{sys.executable} -c import os") and named.endswith(f" (pid {pid})")
    finally:
        if written.exists() and written.read_text():
            os.kill(int(written.read_text()), signal.SIGKILL)
