"""A case's life around its timing: its scope, set-up, first call and check, and how its errors read.

The runner (measure.runner and its passes) and the profiler (measure.profile) both set a case up, call
it once, check its output and free it: one set of steps, so that a profiled case is set up, checked and
freed as a measured one is, and fails with the same one line.

Every step that runs the user's code goes through `guard`, which turns what it raises into a
MeasurementError holding no reference to the case's frames (they hold its tensors).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import torch

from perfguard import inert
from perfguard.case import CaseInstance, call_kwargs
from perfguard.errors import MeasurementError, first_line
from perfguard.measure import compiling
from perfguard.measure.children import Started
from perfguard.measure.torch_state import TorchState
from perfguard.model import DeviceInfo

@dataclasses.dataclass(frozen=True)
class Left:
    """What a case left behind, filled in as its scope ends: torch settings put back, processes running."""

    settings: list[str] = dataclasses.field(default_factory=list)
    processes: list[str] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def case_scope(case_id: str, device: DeviceInfo) -> Iterator[Left]:
    """An NVTX range named after the case, the case's GPU memory released when it ends, and torch's
    global settings put back as they were; yields a `Left` that then names the settings restored and
    the processes the case left running (measure/children.py)."""
    cuda = device.kind == "cuda"
    live = torch.cuda.memory_allocated() if cuda else 0
    before = TorchState.now()
    started = Started.begin(device.uuid if cuda else None)
    left = Left()
    try:
        with nvtx(case_id, cuda):
            yield left
    finally:
        try:
            # The error path has already dropped every reference (see guard), and reference counting
            # frees a finished case's tensors; only a reference cycle (the user's, or an exception's)
            # leaves GPU memory behind. A full collection costs 0.1 s with torch loaded (4 s of a
            # 32-case suite on the H200), so it runs only then. Then the cached blocks go back, so the
            # next case starts from the same state.
            if cuda:
                torch.cuda.synchronize()
                if torch.cuda.memory_allocated() > live:
                    gc.collect()
                torch.cuda.empty_cache()
            left.settings.extend(before.restore())
        finally:  # the case's mark leaves the environment whatever happened
            left.processes.extend(started.end())


@contextlib.contextmanager
def nvtx(name: str, cuda: bool) -> Iterator[None]:
    """A named range in Nsight Systems' timeline, around the block (on a GPU)."""
    if cuda:
        torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        if cuda:
            torch.cuda.nvtx.range_pop()


def guard(where: str, stage: str, step: Callable[[], Any]) -> Any:
    """Run a step; turn any exception into a MeasurementError that holds no reference to its frames.

    The original exception's traceback keeps the case's tensors alive (its frames hold them), so
    it is formatted to text and dropped before the MeasurementError is raised outside the handler.
    """
    message = None
    try:
        return step()
    except MeasurementError:
        raise
    except torch.cuda.OutOfMemoryError as exc:
        # torch's text goes on about allocator settings; the first two sentences say what failed.
        short = ". ".join(_first_line(exc).split(". ")[:2]).rstrip(".")
        message = (
            f"{where}: ran out of GPU memory during {stage} ({short}); "
            "make the case smaller or limit it with device_kinds"
        )
    except Exception as exc:  # noqa: BLE001 - the user's code may raise anything
        if compiling.is_compiler_error(exc):  # dynamo's message runs to pages: its first line and the user's frame
            message = f"{inert.printable(compiling.compile_error(where, exc))}\n{compiling.user_frames(user_traceback(exc))}"
        else:
            message = f"{where}: {stage} raised {type(exc).__name__}: {_whole_message(exc)}\n{user_traceback(exc)}"
    except SystemExit as exc:  # sys.exit() would end pytest's test with a traceback of pytest's frames
        message = (f"{where}: {stage} called sys.exit({exc.code!r}); a case must return (or raise), not exit\n"
                   f"{user_traceback(exc)}")
    raise MeasurementError(message)


def setup(instance: CaseInstance, device: DeviceInfo) -> Callable[[], Any]:
    """The case's set-up, run: the callable to time."""
    where = instance.id
    fn = guard(where, "setup", lambda: instance.spec.setup(**instance.setup_kwargs(device.kind)))
    if not callable(fn):
        kind = type(fn).__name__
        raise MeasurementError(
            f"{where}: setup returned {_article(kind)} {kind}, not a callable; return the function to time, e.g. `return lambda: op(x)`"
        )
    return fn


def first_call(instance: CaseInstance, fn: Callable[[], Any], device: DeviceInfo) -> str:
    """The first call (it absorbs compilation) and the case's correctness check; what is known of the
    outputs (CaseResult.outputs)."""
    where = instance.id

    def call() -> Any:
        out = fn()
        if device.kind == "cuda":
            torch.cuda.synchronize()
        return out

    out = guard(where, "the timed callable", call)
    check = instance.spec.check
    if check is None:
        return "non-finite" if _non_finite(out) else "unchecked"
    kwargs = call_kwargs(check, {**instance.kwargs, "device": device.kind}, f"{where}: check", skip=1)
    verdict = guard(where, "check", lambda: check(out, **kwargs))
    if verdict is False:
        raise MeasurementError(f"{where}: check returned False: the output is wrong")
    return "checked"


def _non_finite(out: Any, depth: int = 2) -> bool:
    """Whether a floating tensor in the output (or in a tuple, list or dict of them) holds NaN or inf.

    One reduction per tensor, outside the timing; aminmax propagates NaN, and allocates no copy of
    the output (isfinite would, as large as the output). What it cannot reduce counts as finite.
    """
    if isinstance(out, torch.Tensor):
        if not (out.is_floating_point() or out.is_complex()) or out.numel() == 0:
            return False
        try:
            values = torch.view_as_real(out.detach()) if out.is_complex() else out.detach()
            low, high = torch.aminmax(values)
            return not (math.isfinite(low.item()) and math.isfinite(high.item()))
        except (RuntimeError, TypeError):  # a dtype without aminmax (float8): not known
            return False
    items = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else ()
    return depth > 0 and any(_non_finite(item, depth - 1) for item in items)


def _first_line(exc: BaseException) -> str:
    return first_line(str(exc), type(exc).__name__)


def _whole_message(exc: BaseException) -> str:
    """The exception's whole message, on the failure line: its line breaks shown as `\\n`, never cut at the
    first one, where what went wrong often is the rest (a shape mismatch's second line, a check's detail)."""
    return inert.printable(str(exc).strip()) or type(exc).__name__


def user_traceback(exc: BaseException) -> str:
    """The traceback frames of the user's code, not perfguard's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/perfguard/measure/" not in f.filename.replace("\\", "/")]
    return "".join(traceback.format_list(frames)).rstrip()


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"
