"""Load, validate and merge-update `baselines/<device-slug>.json`.

An update re-reads the file inside a lock on `<file>.lock`, merges the new cases into what it finds,
and replaces the file atomically. Re-reading inside the lock is what keeps two processes from losing
each other's entries; the atomic replace is what keeps a killed process from leaving half a file.
A file that cannot be read as a baseline is never overwritten: the update stops with an error that
names it, so nothing recorded by hand or by another version is lost silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

import filelock

from perfguard.errors import BaselineError
from perfguard.model import (
    MAX_BASELINE_SAMPLES,
    BaselineEntry,
    BaselineFile,
    Calibration,
    CaseResult,
    DeviceInfo,
    dumps,
    loads_baseline,
    thin_samples,
)
from perfguard.store.atomic import followed, temp_prefix, write_atomic

# Long enough for another worker's update (a few MB of JSON) to finish; short enough that a stuck
# holder turns into an error a person sees rather than a CI job that hangs.
LOCK_TIMEOUT_S = 60.0


def path_for(directory: Path | str, slug: str) -> Path:
    return Path(directory) / f"{slug}.json"


def list_files(directory: Path | str) -> list[Path]:
    """The baseline files in `directory`, by name; temporary and lock files are not baselines."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))


def load(directory: Path | str, device_or_slug: DeviceInfo | str) -> BaselineFile | None:
    """The baseline of a device (or slug) in `directory`; None when there is none yet."""
    slug = device_or_slug.slug if isinstance(device_or_slug, DeviceInfo) else device_or_slug
    return load_file(path_for(directory, slug))


def load_file(path: Path | str) -> BaselineFile | None:
    """Read and validate one baseline file; its name must be the slug of the device recorded in it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise BaselineError(f"{path}: not UTF-8 text; the file is corrupt, restore it from version control") from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    baseline = loads_baseline(text, str(path))
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
) -> Path:
    """Merge the measured ("ok") `results` into the device's baseline file; other cases are kept.

    Returns the file's path. Raises BaselineError naming the file when the existing file is not a
    valid baseline (it is left as it was), or when the folder cannot be written.
    """
    entries = {
        r.id: BaselineEntry(recorded_at=recorded_at, commit=commit, fingerprint=device.fingerprint(), result=_stored(r))
        for r in results
        if r.status == "ok"
    }

    def merge(existing: BaselineFile | None) -> BaselineFile:
        cases = {**(existing.cases if existing else {}), **entries}
        calibration = existing.calibration if existing else None
        return BaselineFile(device=_model_of(device), cases=dict(sorted(cases.items())), calibration=calibration)

    return _rewrite(path_for(directory, device.slug), merge, "update the baseline")


def calibrate(directory: Path | str, device: DeviceInfo, calibration: Calibration) -> Path:
    """Store `calibration` in the device's baseline file (created if need be); its cases are kept."""

    def merge(existing: BaselineFile | None) -> BaselineFile:
        cases = existing.cases if existing else {}
        return BaselineFile(device=_model_of(device), cases=cases, calibration=calibration)

    return _rewrite(path_for(directory, device.slug), merge, "store the calibration")


def _rewrite(path: Path, merge: Callable[[BaselineFile | None], BaselineFile], what: str) -> Path:
    # A linked baseline is updated where it lives (write_atomic follows the link), so the lock and the
    # temporary files are the target's: two links to one file share its lock.
    target = followed(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(f"{target}.lock", timeout=LOCK_TIMEOUT_S):
            existing = load_file(path)  # inside the lock: sees every update that finished before ours
            _remove_stale_temps(target)
            write_atomic(path, dumps(merge(existing)), error=BaselineError)
    except filelock.Timeout:
        raise BaselineError(
            f"{path}: another process has held {target}.lock for over {LOCK_TIMEOUT_S:.0f} s; "
            "if no perfguard is running, delete the lock file"
        ) from None
    except OSError as exc:
        raise BaselineError(
            f"{path}: cannot {what} ({exc.strerror or exc}); choose a writable --perfguard-baselines folder"
        ) from None
    return path


def _stored(result: CaseResult) -> CaseResult:
    """What a baseline keeps of a result: samples capped, and nothing that names one particular card or run
    (a profile points at one run's trace file)."""
    return dataclasses.replace(
        result, samples_ms=thin_samples(result.samples_ms, MAX_BASELINE_SAMPLES), device_uuid=None, error=None,
        profile=None,
    )


def _model_of(device: DeviceInfo) -> DeviceInfo:
    # The file belongs to the GPU model, not to one card: without uuid and index, updates from
    # different cards of the same model (one xdist worker per GPU) do not churn the diff. The
    # calibrated roofs live once, in the file's `calibration`.
    return dataclasses.replace(device, uuid=None, index=None, calibrated_bandwidth_gbps=None, calibrated_tflops=None)


def _remove_stale_temps(path: Path) -> None:
    # Called under the lock, where no other baseline writer of this file can be mid-write: any
    # temporary file left beside it belongs to a writer that was killed.
    for tmp in path.parent.glob(f"{temp_prefix(path)}*.tmp"):
        tmp.unlink(missing_ok=True)
