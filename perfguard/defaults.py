"""The default values of perfguard's options, which the plugin and the console command share
(their parsers are perfguard.parsers).

Values only, and no import: the option table (perfguard.options) puts them in its help, and every
pytest run where perfguard is installed loads that table.
"""

from __future__ import annotations

THRESHOLD_PCT = 1.0  # the smallest latency change that matters, percent
MEMORY_THRESHOLD_PCT = 5.0  # peak-memory growth that counts, percent
BUDGET_S = 0.5  # wall time per case
CALIBRATE_BUDGET_S = 2.0  # wall time per calibration measurement
KEEP_RUNS = 10  # runs a baseline keeps per case
CONFIRM = 2  # re-measurements that must agree before a slower case fails
# At most this many cases per process are re-measured before they may fail: a change that slows
# every case (a new driver) must not turn a run into hours. Past it, a regression fails unconfirmed.
CONFIRM_CASES = 20
AB_ROUNDS = 3  # rounds per side of `perfguard ab` before its first judgement (two give no usable spread)
AB_MAX_ROUNDS = 16  # rounds an undecided case of `perfguard ab` may get at most
AB_BUDGET_S = 900.0  # wall time of a whole `perfguard ab`, seconds: a pull request's gate in a quarter hour
BASELINES_DIR = "baselines"
REPORT_DIR = "reports"
PROFILE_CHOICES = ("none", "regressed", "all")  # which cases --perfguard-profile re-runs under the profiler
