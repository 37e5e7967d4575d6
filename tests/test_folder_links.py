"""A folder link that leads out of the repository is never written through (issue 30, item 5).

A pull request can commit `reports` or `baselines` as a symbolic link to a folder elsewhere on the
runner (another checkout's baselines, `~/.config`): the run then wrote its three reports there, and an
update rewrote the baseline there without a line. Each such folder, or any folder on the way to it, is
refused in one line and nothing is written (nor removed) through it; a link that stays inside the
repository is followed as before. End-to-end runs are real pytest runs (`run_pytest`) on real links.
"""

from __future__ import annotations

import os

import pytest

from perfguard import store
from perfguard.errors import BaselineError
from perfguard.model import loads_record

# The store-level tests take their device and result from test_update_safety, inside the test: the runs
# below use only what every version of perfguard has, so that they can be run against older ones.
NAP = "import time\nfrom perfguard import perf_case\n\n@perf_case\ndef nap(device):\n    return lambda: time.sleep(0.001)\n"

BUDGET = "--perfguard-budget=0.01"
REPORTS = ("perfguard.json", "perfguard.html", "perfguard.md")


def refusal(link, target, root) -> str:
    return (f"{link} is a symbolic link to {target}, outside {root}; perfguard writes nothing through it: "
            "remove the link, make it a plain folder, or name the folder it leads to instead")


def victim_folder(path):
    """A folder outside the repository, holding files of the names a run writes, each with its own text."""
    path.mkdir(parents=True)
    for name in REPORTS:
        (path / name).write_text(f"the user's own {name}\n")
    return path


def untouched(folder) -> bool:
    return sorted(p.name for p in folder.iterdir()) == sorted(REPORTS) and all(
        (folder / name).read_text() == f"the user's own {name}\n" for name in REPORTS)


@pytest.mark.parametrize("git", [True, False], ids=["repository", "no .git: the folder pytest ran in"])
@pytest.mark.parametrize("report", ["reports", "out/reports"], ids=["the folder", "a folder above it"])
def test_a_report_folder_linking_out_of_the_repository_gets_one_line_and_nothing_there_changes(tmp_path, run_pytest,
                                                                                                git, report):
    victim = victim_folder(tmp_path / "elsewhere" / "reports")
    repo = tmp_path / "repo"
    repo.mkdir()
    if git:
        (repo / ".git").mkdir()
    (repo / "test_nap.py").write_text(NAP)
    link = repo / report.split("/")[0]
    link.symlink_to(victim if report == "reports" else victim.parent)
    result = run_pytest(repo, "--perfguard", BUDGET, f"--perfguard-report={report}", "--perfguard-profile=all")
    assert result.ret == pytest.ExitCode.OK, result.outlines  # a report never fails the run
    assert untouched(victim)  # no report, no trace, and the previous files neither replaced nor removed
    target = victim if report == "reports" else victim.parent
    # One line for the three files, and the profile's own line for its trace.
    assert [x for x in result.outlines if "is a symbolic link" in x] == [
        f"perfguard: nap: no trace written: {refusal(link, target, repo)}", f"perfguard: {refusal(link, target, repo)}"]


def linked_inside(tmp_path, name: str, real: str):
    """A repository of one case whose folder `name` is a relative link to its folder `real`."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "test_nap.py").write_text(NAP)
    (repo / real).mkdir(parents=True)
    (repo / name).symlink_to(real)
    return repo


def test_a_report_folder_linked_inside_the_repository_is_written_where_it_leads(tmp_path, run_pytest):
    repo = linked_inside(tmp_path, "reports", os.path.join("build", "reports"))
    result = run_pytest(repo, "--perfguard", BUDGET)
    assert result.ret == pytest.ExitCode.OK
    assert sorted(p.name for p in (repo / "build" / "reports").iterdir()) == sorted(REPORTS)
    record = loads_record((repo / "build" / "reports" / "perfguard.json").read_text(), "record")
    assert record.status == "complete" and [r.id for r in record.results] == ["nap"]


def test_an_update_into_a_baselines_folder_linking_out_is_refused_before_any_case_runs(tmp_path, run_pytest):
    checkout = tmp_path / "other-checkout"  # e.g. the main branch's checkout on the same runner
    checkout.mkdir()
    (checkout / "test_nap.py").write_text(NAP)
    assert run_pytest(checkout, "--perfguard-update", BUDGET).ret == pytest.ExitCode.OK
    other = checkout / "baselines"
    [path] = store.list_files(other)
    before = path.read_bytes()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "test_nap.py").write_text(NAP)
    (repo / "baselines").symlink_to(other)
    run = run_pytest(repo, "--perfguard-update", BUDGET)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert [x for x in run.errlines if "symbolic link" in x] == [f"ERROR: {refusal(repo / 'baselines', other, repo)}"]
    assert path.read_bytes() == before and sorted(p.name for p in other.iterdir()) == [path.name]
    assert not (repo / "reports").exists()  # refused before the first case: nothing ran


def linked_out(tmp_path, below: str):
    """A repository whose `baselines` links to a folder outside it; the folder to write: the link, or below it."""
    outside = tmp_path / "outside"
    (outside / below).mkdir(parents=True, exist_ok=True)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "baselines").symlink_to(outside)
    return repo / "baselines" / below, refusal(repo / "baselines", outside, repo), outside


@pytest.mark.parametrize("below", ["", "sub"], ids=["the folder", "a folder below the link"])
def test_the_store_writes_no_baseline_through_a_folder_link_out(tmp_path, below):
    from test_update_safety import DEVICE, result

    # What `perfguard baseline accept`, `merge` and `calibrate` reach (store/baselines._rewrite): the link
    # is refused before the lock is taken, so not even a lock file appears.
    folder, expected, outside = linked_out(tmp_path, below)
    with pytest.raises(BaselineError) as info:
        store.update(folder, DEVICE, [result("a")], commit="c1", recorded_at="t1")
    assert str(info.value) == expected
    assert [p.name for p in outside.rglob("*")] == ([below] if below else [])


def test_perfguard_accept_writes_no_acceptance_through_a_folder_link_out(tmp_path):
    from perfguard.model import AcceptedChange
    from perfguard.store import acceptances
    from test_update_safety import DEVICE

    folder, expected, outside = linked_out(tmp_path, "")
    change = AcceptedChange(case_id="a", metric="gpu_time", device=DEVICE.slug, figure=0.5, baseline=1.0,
                            reason="faster kernel", commit="c1")
    with pytest.raises(BaselineError) as info:
        acceptances.add(folder, [change])
    assert str(info.value) == expected
    assert not any(outside.iterdir())


def test_a_baselines_folder_linked_inside_the_repository_is_updated_where_it_leads(tmp_path, run_pytest):
    repo = linked_inside(tmp_path, "baselines", os.path.join("ci", "baselines"))
    run = run_pytest(repo, "--perfguard-update", BUDGET)
    assert run.ret == pytest.ExitCode.OK, run.outlines
    [written] = store.list_files(repo / "ci" / "baselines")
    assert sorted(store.load_file(written).cases) == ["nap"]


def test_a_link_followed_lexically_back_up_is_judged_where_it_really_leads(tmp_path):
    from test_update_safety import DEVICE, result

    # `link/../x` reads as the repository's own `x`, but `..` of a linked folder is its target's parent.
    outside = tmp_path / "outside" / "deep"
    outside.mkdir(parents=True)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "link").symlink_to(outside)
    with pytest.raises(BaselineError) as info:
        store.update(os.path.join(repo / "link", "..", "x"), DEVICE, [result("a")], commit="c1", recorded_at="t1")
    assert str(info.value) == refusal(repo / "link", outside, repo)
    assert not (tmp_path / "outside" / "x").exists() and not (repo / "x").exists()
