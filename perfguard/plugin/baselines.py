"""The baseline files a run reads, each read once per process.

The measurer judges each case against its device's file; the recorder lists the cases a file holds
that did not run. Without xdist both live in one process and share one `Baselines` (from the config's
stash), so a file is read once per run, as it was when one object did both.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfguard.analysis.across import OtherModel, other_model
from perfguard.errors import BaselineError
from perfguard.model import Acceptances, BaselineFile, DeviceInfo
from perfguard.plugin.options import Options

_BASELINES = pytest.StashKey["Baselines"]()


@dataclasses.dataclass(frozen=True)
class StandIn:
    """Another GPU model's file, judging a model that has none of its own by what does not depend on the
    model (analysis/across.py)."""

    file: BaselineFile
    label: str  # the file as a verdict names it
    other: OtherModel  # its model, and what beyond the model differs


class Baselines:
    """Each device model's baseline file as read, or the error that keeps it from being used."""

    def __init__(self, folder: Path, root: Path):
        self.folder = folder
        self.root = root
        self._files: dict[str, BaselineFile | None | BaselineError] = {}
        self._accepted: Acceptances | BaselineError | None = None
        self._stand_ins: dict[str, StandIn | None] = {}

    @classmethod
    def of(cls, config: pytest.Config) -> Baselines:
        if _BASELINES not in config.stash:
            config.stash[_BASELINES] = cls(Options.of(config).baselines_dir, config.rootpath)
        return config.stash[_BASELINES]

    def load(self, device: DeviceInfo) -> BaselineFile | None | BaselineError:
        """The device's file; None when it has none yet. An unusable file is returned, not raised: each case
        of the device then fails with its message, the rest of the run goes on."""
        if device.slug not in self._files:
            from perfguard import store

            try:
                self._files[device.slug] = store.load(self.folder, device)
            except BaselineError as exc:
                self._files[device.slug] = exc
        return self._files[device.slug]

    def stand_in(self, device: DeviceInfo) -> StandIn | None:
        """For a GPU model without a file of its own, another model's file: one of its architecture and
        software where there is one (its counters and memory are judged), else the first by name (which
        judges nothing, and its time's line says why); None where no GPU model has a readable file."""
        if device.kind != "cuda" or self.load(device) is not None:
            return None
        if device.slug not in self._stand_ins:
            from perfguard import store

            found = []
            for path in store.list_files(self.folder):
                try:
                    file = store.load_file(path)
                except BaselineError:  # an unreadable file stands in for nothing; its own model's run says why
                    continue
                other = other_model(file.device, device) if file is not None and file.device.kind == "cuda" else None
                if file is not None and other is not None:
                    found.append(StandIn(file, self._shown(path), other))
            found.sort(key=lambda s: bool(s.other.differs))  # stable: by name within each
            self._stand_ins[device.slug] = found[0] if found else None
        return self._stand_ins[device.slug]

    def accepted(self) -> Acceptances | BaselineError:
        """The acceptance file beside the baselines (store/acceptances.py), or the error that keeps it from
        being read: then no change is accepted, and each case that would have been says so."""
        if self._accepted is None:
            from perfguard.store import acceptances

            self._accepted = acceptances.read(self.folder)
        return self._accepted

    def label(self, device: DeviceInfo) -> str:
        """The device's file as a verdict names it: relative to the rootdir where it lies under it."""
        from perfguard.store import path_for

        return self._shown(path_for(self.folder, device.slug))

    def accepted_label(self) -> str:
        """The acceptance file as a verdict and the run's end name it, as `label` names a baseline."""
        from perfguard.store.acceptances import path_in

        return self._shown(path_in(self.folder))

    def _shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)
