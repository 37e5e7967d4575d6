"""What `perfguard ab` tells the pytest runs it starts through their environment: each variable, what it
means, who sets it and who reads it. Both sides take the names from here, so that neither can rename
one alone and leave the other listening for a variable nobody sets.

Standard library only, and nothing of either side: the reader is the pytest plugin, which must not
load ab's machinery, and ab must not load the plugin's. (ab hands its runs the rest on their command
lines: `--perfguard`, `--perfguard-report`, `--perfguard-cases`; and each shard's GPU in
CUDA_VISIBLE_DEVICES, the variable CUDA itself reads: perfguard.measure.gpus.)
"""

from __future__ import annotations

# "1" in every shard of a round: write perfguard.json alone, no HTML report nor Markdown summary.
# Set by ab/rounds.run_side; read by plugin/recorder.py at the run's end. Nobody reads a round's
# HTML or Markdown (ab renders the pooled head once), and rendering them cost every round's process
# 0.2 s at 120 cases.
RECORD_ONLY = "PERFGUARD_AB_RECORD_ONLY"

# A file's path, in the `pytest --collect-only` run of each side: write the node ids the run selected
# (after -k, -m and --deselect) into it, one a line. Set by ab/rounds.collect, which loads the reader
# into that run with `-p perfguard.plugin.collected`; read by plugin/collected.py.
COLLECTED = "PERFGUARD_AB_COLLECTED"
