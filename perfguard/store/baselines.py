"""Load, validate and merge-update `baselines/<device-slug>.json`.

Each update adds one run to every case it measured: the case's newest result (samples capped)
replaces the old one, and its run summary joins the case's last runs (at most `keep_runs`, oldest
dropped first), from which the verdict learns the case's run-to-run noise. Which runs may join is the
caller's rule (`admit`, a model.Admit such as analysis/series.py's Admission), applied here to the
file as re-read inside the lock: a run of changed code mixed with the old code's runs, or one bad run,
would read as noise.

An update re-reads the file inside a lock on `<file>.lock` (deleted again on release: store/lock.py),
merges the new cases into what it finds, and replaces the file atomically. Re-reading inside the lock
is what keeps two processes from losing each other's entries; the atomic replace is what keeps a
killed process from leaving half a file.
A file that cannot be read as a baseline is never overwritten: the update stops with an error that
names it, so nothing recorded by hand or by another version is lost silently. Nor is its device: a
write keeps the model the file's first run gave it, and refuses a device of another (`_device_kept`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from perfguard import defaults
from perfguard.errors import BaselineError
from perfguard.model.acceptance import FILE_NAME  # the acceptance file beside the baselines, not one of them
from perfguard.model.checks import REFUSED
from perfguard.model import (
    MAX_RUNS_PER_CASE,
    Admit,
    Admitted,
    BaselineEntry,
    BaselineFile,
    Calibration,
    Candidate,
    CaseResult,
    DeviceInfo,
    Merge,
    dumps,
    identity,
    kept_entry,
    loads_baseline,
    names,
    run_summary,
)
from perfguard.files import followed, project_of, refuse_file_for_folder, temp_prefix, writable, write_atomic
from perfguard.store.lock import LockTimeout, held

# Long enough for another worker's update (a few MB of JSON) to finish; short enough that a stuck
# holder turns into an error a person sees rather than a CI job that hangs.
LOCK_TIMEOUT_S = 60.0
# Runs kept per case. Ten give a spread estimate within about ±25% of the truth; older runs would
# mostly describe code and drivers that have since changed.
DEFAULT_KEEP_RUNS = defaults.KEEP_RUNS
# What the baselines folder is, for the line that refuses a file in its place.
BASELINES_FOLDER = ("--perfguard-baselines (or --baselines) must name a folder: the per-GPU baseline files "
                    "(nvidia-h200.json, ...) go inside it")
NOT_WRITTEN = "not written: a baseline keeps measured cases, each with its samples"
# The largest baseline file read (and written). The committed H200 file holds 134 cases in 0.74 MB
# (5.5 KB a case on average, its runs' sessions included), so this is some 12,000 such cases: a bound on
# what a hostile file costs every run (a 324 MB one had
# `pytest --perfguard` still reading at 900 s), far above any suite perfguard has run. The size is read
# before the file; past it, one line.
MAX_BASELINE_BYTES = 64 * 2**20


def path_for(directory: Path | str, slug: str) -> Path:
    """`directory/<slug>.json`; a slug that is not one (`../x`, `/etc/x`) never becomes a path."""
    if not names.is_slug(slug):
        raise BaselineError(
            f"{names.shown(slug)} is not a device slug (lower-case letters and digits joined by dashes, e.g. nvidia-h200); "
            "no baseline file is named after it"
        )
    return Path(directory) / f"{slug}.json"


def list_files(directory: Path | str) -> list[Path]:
    """The baseline files in `directory`, by name; temporary and lock files are not baselines."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith(".") and p.name != FILE_NAME)


def load(directory: Path | str, device_or_slug: DeviceInfo | str) -> BaselineFile | None:
    """The baseline of a device (or slug) in `directory`; None when there is none yet."""
    slug = device_or_slug.slug if isinstance(device_or_slug, DeviceInfo) else device_or_slug
    path = path_for(directory, slug)
    _clean_after_killed_writers(path)
    return load_file(path)


def load_file(path: Path | str) -> BaselineFile | None:
    """Read and validate one baseline file; its name must be the slug of the device recorded in it."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > MAX_BASELINE_BYTES:
                raise BaselineError(f"{path}: {size / 2**20:,.0f} MiB, larger than the {MAX_BASELINE_BYTES // 2**20} MiB a "
                                    "baseline may be (store.MAX_BASELINE_BYTES); was the file edited by hand? Restore it "
                                    "from version control")
            text = file.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    baseline = loads_baseline(text, str(path))
    del text
    slug = path.name.removesuffix(".json")
    if baseline.device.slug != slug:
        raise BaselineError(
            f"{path}: recorded on {baseline.device.name} ({baseline.device.slug}) but named {slug}.json; "
            f"rename it to {baseline.device.slug}.json or restore it from version control"
        )
    strays = sorted({e.result.device for e in baseline.cases.values()} - {slug, ""})
    if strays:
        raise BaselineError(
            f"{path}: holds cases measured on {', '.join(strays)}, not {slug}; was the file edited by hand?"
        )
    return baseline


def update(
    directory: Path | str,
    device: DeviceInfo,
    results: Iterable[CaseResult],
    *,
    commit: str | None,
    recorded_at: str,
    keep_runs: int = DEFAULT_KEEP_RUNS,
    admit: Admit | None = None,
    origin: str = "this run",
) -> Path:
    """Merge the measured ("ok") `results` into the device's baseline file as one more run; other cases
    are kept. `admit` decides which runs join each case's series (model.Admit); without it every
    run joins.

    Returns the file's path. Raises BaselineError naming the file when the existing file is not a
    valid baseline (it is left as it was), or when the folder cannot be written.
    """
    return update_runs(directory, device, [(results, commit, recorded_at, device.host)],
                       keep_runs=keep_runs, admit=admit, origins=(origin,), measured_here=True)


def update_runs(
    directory: Path | str,
    device: DeviceInfo,
    runs: Sequence[tuple[Iterable[CaseResult], str | None, str, str | None]],
    *,
    keep_runs: int = DEFAULT_KEEP_RUNS,
    admit: Admit | None = None,
    origins: Sequence[str] = (),
    measured_here: bool = False,
) -> Path:
    """Several runs (results, commit, recorded_at, host), oldest first, merged in one locked write:
    a fleet's records (one per runner of the GPU model) become one baseline. `origins` names each run
    (a record's path) for `admit`'s lines; `measured_here`: the runs are this process's own (update's),
    not read from files (model.Candidate)."""
    if not 1 <= keep_runs <= MAX_RUNS_PER_CASE:  # more would write a file that no perfguard reads
        raise BaselineError(f"keep_runs must be 1 to {MAX_RUNS_PER_CASE:,} (the runs a baseline may hold), got {keep_runs}")
    fingerprint = device.fingerprint()
    by_case: dict[str, list[Candidate]] = {}
    for i, (results, commit, at, host) in enumerate(runs):
        for r in results:
            if r.status == "ok" and r.timings:
                origin = origins[i] if i < len(origins) else "this run"
                by_case.setdefault(r.id, []).append(Candidate(r, run_summary(r, at, commit, host), origin, measured_here))

    path = path_for(directory, device.slug)

    def merge(existing: BaselineFile | None) -> BaselineFile:
        kept_device = _device_kept(existing, device, path)  # before a case is admitted: nothing said of a refused write
        cases = dict(existing.cases) if existing else {}
        for case_id, candidates in by_case.items():
            old = cases.get(case_id)
            if admit is None:
                admitted = Admitted((*(old.runs if old else ()), *(c.summary for c in candidates)), candidates[-1])
            else:
                admitted = admit(case_id, old, candidates)
            if admitted.result is None:
                continue  # nothing joined: the entry stays as it was
            newest = admitted.result
            cases[case_id] = BaselineEntry(recorded_at=newest.summary.recorded_at, commit=newest.summary.commit,
                                           fingerprint=fingerprint, result=newest.result,  # kept by _rewrite
                                           runs=admitted.runs[-keep_runs:])
        calibration = existing.calibration if existing else None
        return BaselineFile(device=kept_device, cases=dict(sorted(cases.items())), calibration=calibration)

    return _merged(path, merge, "update the baseline")


def merge_files(directory: Path | str, others: Sequence[BaselineFile], *, keep_runs: int = DEFAULT_KEEP_RUNS,
                admission: Merge | None = None, names: Sequence[str] = ()) -> Path:
    """Fold baseline files of one GPU model (recorded on other hosts) into `directory`'s: per case the
    runs of all, oldest first, each once, the newest `keep_runs` kept; the newest run's result wins.
    `admission` (model.Merge) decides which runs each case keeps, such as leaving out runs dated in the
    future or far from the others (`names`: each file's, for its lines); without it every run, once."""
    slugs = {b.device.slug for b in others}
    if len(slugs) != 1:
        raise BaselineError(f"baselines of {', '.join(sorted(slugs)) or 'no device'}: merge files of one GPU model at a time")
    target = path_for(directory, slugs.pop())

    def merge(existing: BaselineFile | None) -> BaselineFile:
        files = ([(existing, str(target))] if existing else []) + list(zip(others, [*names, *[""] * len(others)]))
        for other, _ in files[1:]:
            _device_kept(files[0][0], other.device, target)
        cases: dict[str, BaselineEntry] = {}
        for case_id in sorted({c for f, _ in files for c in f.cases}):
            entries = sorted(((f.cases[case_id], name) for f, name in files if case_id in f.cases),
                             key=lambda e: e[0].recorded_at)
            if admission is not None:
                kept = admission.merged(case_id, [(r, name or "a merged file") for e, name in entries for r in e.runs],
                                        entries[-1][0].result)
            else:
                unique = {identity(r): r for e, _ in entries for r in e.runs}
                kept = tuple(sorted(unique.values(), key=lambda r: r.recorded_at))
            cases[case_id] = dataclasses.replace(entries[-1][0], runs=kept[-keep_runs:])
        calibration = next((f.calibration for f, _ in files if f.calibration), None)
        return BaselineFile(device=files[0][0].device, cases=cases, calibration=calibration)

    return _merged(target, merge, "merge the baselines")


def calibrate(directory: Path | str, device: DeviceInfo, calibration: Calibration) -> Path:
    """Store `calibration` in the device's baseline file (created if need be); its cases are kept."""

    path = path_for(directory, device.slug)

    def merge(existing: BaselineFile | None) -> BaselineFile:
        cases = existing.cases if existing else {}
        return BaselineFile(device=_device_kept(existing, device, path), cases=cases, calibration=calibration)

    return _merged(path, merge, "store the calibration")


def migrate(path: Path | str, migrated: Callable[[str], BaselineFile]) -> Path:
    """Rewrite the baseline file at `path`, of an older schema, as `migrated` reads its text (model.migration),
    under its lock: an update that waits for it then finds the current schema."""
    path = Path(path)

    def rewritten() -> BaselineFile:
        try:
            return migrated(followed(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise BaselineError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None

    return _rewrite(path, rewritten, "migrate it")


def _merged(path: Path, merge: Callable[[BaselineFile | None], BaselineFile], what: str) -> Path:
    """Rewrite the file at `path` as `merge` makes it of what it holds (None: no file yet), read inside the
    lock: it sees every update that finished before this one."""
    return _rewrite(path, lambda: merge(load_file(path)), what)


def _rewrite(path: Path, rewritten: Callable[[], BaselineFile], what: str) -> Path:
    """Replace the file at `path` with what `rewritten` makes, called inside its lock."""
    # A linked baseline is updated where it lives (write_atomic follows the link), so the lock and the
    # temporary files are the target's: two links to one file share its lock. Only a link inside the
    # project is followed: one to a file elsewhere (planted by a pull request) is refused, and so is a
    # baselines folder (or one above it) that links out, before its lock is taken out there.
    project = project_of(path.parent)
    target = writable(path, BaselineError, within=project)
    refuse_file_for_folder(target.parent, BASELINES_FOLDER, BaselineError, prefix=f"{path}: cannot {what}: ")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with held(_lock_of(path), LOCK_TIMEOUT_S):
            _remove_stale_temps(target)
            text = dumps(_kept(rewritten()))
            _reads_back(text, path)
            if len(text.encode("utf-8")) > MAX_BASELINE_BYTES:
                raise BaselineError(f"{path}: cannot {what}: it would be larger than the {MAX_BASELINE_BYTES // 2**20} MiB a "
                                    "baseline may be (store.MAX_BASELINE_BYTES); split the suite's baselines with "
                                    "--perfguard-baselines, or keep fewer runs; the old file is left as it was")
            write_atomic(path, text, error=BaselineError, within=project)
    except LockTimeout:
        raise BaselineError(
            f"{path}: another process has held {_lock_of(path)} for over {LOCK_TIMEOUT_S:.0f} s; "
            "wait for it to finish, or stop the perfguard run that holds it"
        ) from None
    except OSError as exc:
        raise BaselineError(
            f"{path}: cannot {what} ({exc.strerror or exc}); choose a writable --perfguard-baselines folder"
        ) from None
    return path


def _reads_back(text: str, path: Path) -> None:
    """Never write what a load would refuse: the text about to replace the file, read as a load reads it."""
    try:
        loads_baseline(text, str(path))
    except BaselineError as exc:  # what would be refused, but not as a file edited by hand: not written
        raise BaselineError(f"{str(exc).removesuffix(f'; {REFUSED}')}; {NOT_WRITTEN}") from None


def _kept(baseline: BaselineFile) -> BaselineFile:
    """Every case as a baseline keeps it (model.kept_entry): this write's, and those it did not touch (a
    file of schema 4 kept 200 samples, whose drift was migrated to the summary; one of 5 a time's spread;
    one written before 2026-12-04 each run's half-width)."""
    return dataclasses.replace(baseline, cases={key: kept_entry(entry) for key, entry in baseline.cases.items()})


def _device_kept(existing: BaselineFile | None, device: DeviceInfo, path: Path) -> DeviceInfo:
    """The device a write leaves in the file: the file's own, never rewritten by what a run or a record says
    of its device; a new file's, `device`'s model. A device of another model (kind, name, slug) is refused:
    an A100 record slugged nvidia-h200 renamed the H200 baseline's device and added 129 cases' runs to it."""
    if existing is None:
        return _model_of(device)
    if not existing.device.same_model(device):
        raise BaselineError(f"{path}: holds runs of {names.shown(existing.device.name)} ({existing.device.kind}), not of "
                            f"{names.shown(device.name)} ({device.kind}); the file is left as it was: add runs only to the "
                            "baseline of the model they ran on")
    return existing.device


def _model_of(device: DeviceInfo) -> DeviceInfo:
    # The file belongs to the GPU model, not to one card: without uuid and index, updates from
    # different cards of the same model (one xdist worker per GPU) do not churn the diff. The
    # calibrated roofs live once, in the file's `calibration`.
    return dataclasses.replace(device, uuid=None, index=None, host=None, calibrated_bandwidth_gbps=None,
                               calibrated_tflops=None)


def _lock_of(path: Path) -> Path:
    # A linked baseline's lock is its target's: two links to one file share it.
    target = followed(path)
    return target.with_name(f"{target.name}.lock")


def _remove_stale_temps(path: Path) -> None:
    # Called under the lock, where no other baseline writer of this file can be mid-write: any
    # temporary file left beside it belongs to a writer that was killed.
    for tmp in path.parent.glob(f"{temp_prefix(path)}*.tmp"):
        tmp.unlink(missing_ok=True)


def _clean_after_killed_writers(path: Path) -> None:
    """What a killed update left beside the file (a temporary copy of it, the lock file), removed by a run
    that only reads it: only when the lock can be taken at once, i.e. when no writer is alive."""
    path = followed(path)  # a linked baseline's leftovers lie beside its target
    if not path.parent.is_dir():
        return
    if not any(path.parent.glob(f"{temp_prefix(path)}*.tmp")) and not _lock_of(path).exists():
        return  # nothing to clean: a plain run takes no lock (its folder may be read-only)
    try:
        with held(_lock_of(path), timeout_s=0):
            _remove_stale_temps(path)
    except (LockTimeout, OSError):
        pass  # a live writer holds it and cleans up after itself, or the folder is read-only: leave it
