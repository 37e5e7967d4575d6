"""Measurement: timers, the sampling loop, device identity, memory and telemetry. The only torch user."""
