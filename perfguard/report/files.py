"""Writing report files: atomically, and with one clear line instead of a crash when it cannot.

The writer itself lives in `perfguard.store.atomic`, shared with the baseline store.
"""

from __future__ import annotations

from perfguard.store.atomic import write_atomic

__all__ = ["write_atomic"]
