"""Put suites/ on sys.path under any of pytest's import modes.

suites/test_triton_softmax.py takes the torch softmax case's shapes, byte and flop models and inputs
from suites/test_reductions.py. pytest's default import mode ("prepend") puts this folder on sys.path
by itself; "importlib", which many projects choose, does not.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
