"""What perfguard's profiler passes (the work counters, --perfguard-profile, memory_breakdown) need of torch's profiler backend, kineto."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

# Kineto's progress lines, e.g. "USDT:2026-11-29 22:05:29 26206:26206 SyncActivityProfilerHandler.cpp:52]
# profiler_start"; its errors and warnings are not among them.
KINETO_PROGRESS = re.compile(r"^(?!ERROR|WARNING)[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+:\d+\] ")


def profiler(cuda: bool, *, record_shapes: bool = False, profile_memory: bool = False) -> Any:
    """torch's Kineto profiler of the CPU's (and on a GPU, CUDA's) activity, built as
    torch.profiler.profile builds it, without that wrapper: its start asks `hasattr(torch, "_inductor")`,
    which imports torch._inductor, torch._dynamo and sympy (828 modules: 1.7 s of a 2-vCPU host's
    first profile, against 4 ms this way) into a process that may never compile anything. A context
    manager with key_averages, export_chrome_trace, function_events (the wrapper's events()) and, once
    it has stopped, kineto_results (the wrapper's profiler.kineto_results)."""
    from torch.autograd import profiler as autograd_profiler

    return autograd_profiler.profile(use_cpu=True, use_device="cuda" if cuda else None, use_kineto=True,
                                     record_shapes=record_shapes, profile_memory=profile_memory)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Keep kineto's progress lines out of stderr, passing on anything else written there.

    Kineto writes "USDT: ... profiler_start" (and "STAGE: ...") lines straight to file descriptor 2
    whenever a profile starts and stops, whatever KINETO_LOG_LEVEL says; under pytest they would land
    in every profiled case's failure report. So fd 2 points at a file while the profiler runs.
    """
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to redirect
        saved = None
    if saved is None:
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode(errors="replace")
            kept = [line for line in text.splitlines(keepends=True) if not KINETO_PROGRESS.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
