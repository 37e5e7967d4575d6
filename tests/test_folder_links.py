"""A folder link that leads out of the repository is never written through (issue 30, item 5).

A pull request can commit `reports` or `baselines` as a symbolic link to a folder elsewhere on the
runner (another checkout's baselines, `~/.config`): the run then wrote its three reports there, and an
update rewrote the baseline there without a line. Each such folder, or any folder on the way to it, is
refused in one line and nothing is written (nor removed) through it; a link that stays inside the
repository is followed as before. End-to-end runs are real pytest runs (`run_pytest`) on real links.

Issue 46, item 4: whatever the link's target holds. A link to another checkout showed its `.git` through
the link, which made the link itself the project, and everything was written there. The rule now: the
project is found going down the folder's path as written, never through a link below it, and the real
path of the folder written (every link on the way resolved) must lie inside the project's real root.
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
    return sorted(p.name for p in folder.iterdir() if p.name != ".git") == sorted(REPORTS) and all(
        (folder / name).read_text() == f"the user's own {name}\n" for name in REPORTS)


@pytest.mark.parametrize("checkout", [False, True], ids=["to a folder", "to another checkout (.git)"])
@pytest.mark.parametrize("git", [True, False], ids=["repository", "no .git: the folder pytest ran in"])
@pytest.mark.parametrize("report", ["reports", "out/reports"], ids=["the folder", "a folder above it"])
def test_a_report_folder_linking_out_of_the_repository_gets_one_line_and_nothing_there_changes(tmp_path, run_pytest,
                                                                                                git, report, checkout):
    victim = victim_folder(tmp_path / "elsewhere" / "reports")
    target = victim if report == "reports" else victim.parent
    if checkout:  # e.g. the main branch's checkout on the same runner: its `.git` showed through the link
        (target / ".git").mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    if git:
        (repo / ".git").mkdir()
    (repo / "test_nap.py").write_text(NAP)
    link = repo / report.split("/")[0]
    link.symlink_to(target)
    result = run_pytest(repo, "--perfguard", BUDGET, f"--perfguard-report={report}", "--perfguard-profile=all")
    assert result.ret == pytest.ExitCode.OK, result.outlines  # a report never fails the run
    assert untouched(victim)  # no report, no trace, and the previous files neither replaced nor removed
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


@pytest.mark.parametrize("into", ["baselines", "."], ids=["its baselines", "the checkout itself (.git)"])
def test_an_update_into_a_baselines_folder_linking_out_is_refused_before_any_case_runs(tmp_path, run_pytest, into):
    checkout = tmp_path / "other-checkout"  # e.g. the main branch's checkout on the same runner
    (checkout / ".git").mkdir(parents=True)
    (checkout / "test_nap.py").write_text(NAP)
    other = (checkout / into).resolve()
    assert run_pytest(checkout, "--perfguard-update", BUDGET, f"--perfguard-baselines={into}").ret == pytest.ExitCode.OK
    [path] = store.list_files(other)
    before = path.read_bytes()
    listing = sorted(p.name for p in other.iterdir())
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "test_nap.py").write_text(NAP)
    (repo / "baselines").symlink_to(other)
    run = run_pytest(repo, "--perfguard-update", BUDGET)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert [x for x in run.errlines if "symbolic link" in x] == [f"ERROR: {refusal(repo / 'baselines', other, repo)}"]
    assert path.read_bytes() == before and sorted(p.name for p in other.iterdir()) == listing
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


def test_a_traces_folder_linking_to_another_checkout_gets_no_trace_and_the_reports_are_written(tmp_path, run_pytest):
    other = tmp_path / "other-checkout"
    (other / ".git").mkdir(parents=True)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "test_nap.py").write_text(NAP)
    (repo / "reports").mkdir()
    (repo / "reports" / "traces").symlink_to(other)  # measure/profile.py's folder
    result = run_pytest(repo, "--perfguard", BUDGET, "--perfguard-profile=all")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert [p.name for p in other.iterdir()] == [".git"]
    assert [x for x in result.outlines if "is a symbolic link" in x] == [
        f"perfguard: nap: no trace written: {refusal(repo / 'reports' / 'traces', other, repo)}"]
    assert sorted(p.name for p in (repo / "reports").iterdir()) == sorted([*REPORTS, "traces"])


# --- the rule, by where the links lead (files.writable: the check every writer makes first) -------------

def checkout(path):
    (path / ".git").mkdir(parents=True)
    return path


def other_checkout(tmp_path, repo):
    """`reports` -> another checkout beside the repository."""
    (repo / "reports").symlink_to(checkout(tmp_path / "other"))
    return repo / "reports", repo / "reports", tmp_path / "other"


def plain_folder(tmp_path, repo):
    """`reports` -> a folder elsewhere that holds no `.git`."""
    (tmp_path / "elsewhere").mkdir()
    (repo / "reports").symlink_to(tmp_path / "elsewhere")
    return repo / "reports", repo / "reports", tmp_path / "elsewhere"


def parent_folder(tmp_path, repo):
    """`reports` -> `..`, the folder above the repository, itself a checkout (a project nested in another)."""
    (repo / "reports").symlink_to("..")
    return repo / "reports", repo / "reports", tmp_path


def chain(tmp_path, repo):
    """`reports` -> `hop` (inside), `hop` -> another checkout."""
    (repo / "hop").symlink_to(checkout(tmp_path / "other"))
    (repo / "reports").symlink_to("hop")
    return repo / "reports", repo / "reports", tmp_path / "other"


def below_the_link(tmp_path, repo):
    """`reports/traces`, where `reports` -> another checkout."""
    (repo / "reports").symlink_to(checkout(tmp_path / "other"))
    (tmp_path / "other" / "traces").mkdir()
    return repo / "reports" / "traces", repo / "reports", tmp_path / "other"


def traces_linked(tmp_path, repo):
    """`reports` a plain folder, `reports/traces` -> another checkout."""
    (repo / "reports").mkdir()
    (repo / "reports" / "traces").symlink_to(checkout(tmp_path / "other"))
    return repo / "reports" / "traces", repo / "reports" / "traces", tmp_path / "other"


def listing(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if "repo" not in p.relative_to(folder).parts)


# Without a .git of its own, a repository below a checkout is a folder of that checkout: `..` is inside it.
OUT = [pytest.param(layout, git, id=f"{layout.__name__}-{'repository' if git else 'no .git: the current folder'}")
       for layout in (other_checkout, plain_folder, parent_folder, chain, below_the_link, traces_linked)
       for git in (True, False) if git or layout is not parent_folder]


@pytest.mark.parametrize(("layout", "git"), OUT)
def test_no_write_goes_through_a_folder_link_out_of_the_project_whatever_its_target_holds(tmp_path, monkeypatch, layout, git):
    from perfguard.errors import ConfigError
    from perfguard.files import write_atomic

    if layout is parent_folder:
        checkout(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    if git:
        checkout(repo)
    monkeypatch.chdir(repo)  # where pytest or the console command runs: the project of a checkout without .git
    folder, link, target = layout(tmp_path, repo)
    before = listing(target)
    with pytest.raises(ConfigError) as info:
        write_atomic(folder / "perfguard.json", "{}\n")
    assert str(info.value) == refusal(link, target.resolve(), repo)
    assert listing(target) == before


def inside(tmp_path, repo):
    """`reports` -> `build/reports`."""
    (repo / "build" / "reports").mkdir(parents=True)
    (repo / "reports").symlink_to(os.path.join("build", "reports"))
    return repo / "reports", repo / "build" / "reports"


def nested_checkout(tmp_path, repo):
    """`reports` -> `vendor/sub`, a checkout inside the project (a submodule): inside, whatever it holds."""
    (repo / "reports").symlink_to(checkout(repo / "vendor" / "sub"))
    return repo / "reports", repo / "vendor" / "sub"


def project_reached_through_a_link(tmp_path, repo):
    """The project itself below a link (a home folder that is one): links above the project are followed."""
    (tmp_path / "home").symlink_to(tmp_path)
    (repo / "reports").mkdir()
    return tmp_path / "home" / "repo" / "reports", repo / "reports"


@pytest.mark.parametrize("layout", [inside, nested_checkout, project_reached_through_a_link])
def test_a_folder_link_that_stays_inside_the_project_is_written_through(tmp_path, layout):
    from perfguard.files import write_atomic

    repo = checkout(tmp_path / "repo")
    folder, lands = layout(tmp_path, repo)
    write_atomic(folder / "perfguard.json", "{}\n")
    assert (lands / "perfguard.json").read_text() == "{}\n"
