"""The baseline files a run reads, each read once per process.

The measurer judges each case against its device's file; the recorder lists the cases a file holds
that did not run. Without xdist both live in one process and share one `Baselines` (from the config's
stash), so a file is read once per run, as it was when one object did both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfguard.errors import BaselineError
from perfguard.model import Acceptances, BaselineFile, DeviceInfo
from perfguard.plugin.options import Options

_BASELINES = pytest.StashKey["Baselines"]()


class Baselines:
    """Each device model's baseline file as read, or the error that keeps it from being used."""

    def __init__(self, folder: Path, root: Path):
        self.folder = folder
        self.root = root
        self._files: dict[str, BaselineFile | None | BaselineError] = {}
        self._accepted: Acceptances | BaselineError | None = None

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
