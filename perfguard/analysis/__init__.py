"""Statistics, derived figures and verdicts: pure functions of measured numbers (no files, no devices)."""
