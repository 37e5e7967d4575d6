"""torch.compile'd cases: the compile timed cold and warm, and what dynamo did, counted by name.

A case compiles when its callable is torch.compile'd (the user's `torch.compile(model)`, or
`@perf_case(compile=...)`, which perfguard applies), or when it calls compiled code. perfguard cannot
tell before the first call, so every case's measurement runs in a `Session`:

- the first call runs with dynamo reset (so it compiles here, whatever the case's setup or an earlier
  case compiled); when dynamo starts its first compile (its compile-start callback), the Inductor and
  Triton caches are emptied for the rest of the case (torch._inductor.utils.fresh_cache: a temporary
  cache folder and the in-memory caches cleared), so a cache warmed by an earlier run never hides a
  slower compile: the first call's time is `compile_cold`. A case that compiles nothing keeps the
  user's caches: a hand-written Triton kernel is not compiled again for every case that follows one
  that compiled;
- where it compiled, dynamo is reset once more and the call made again: the same work, served from
  the caches the cold compile filled (`compile_warm`). Both are one figure a run, outside the timed calls;
- dynamo's own record of each compile (torch._dynamo.utils.get_compilation_metrics) and its
  graph-break log give the counters of the whole case: the graphs compiled, by function; each graph
  break, by what dynamo said and the user's line; each recompile, by the guard that failed; each frame
  dynamo gave up on (its recompile limit), which then runs eagerly. They are exact: the same code
  compiles the same way, so they are judged like the other work counters (analysis/counting.py).

All of it reads torch's private modules, which move between releases: what a torch lacks leaves the
counters out (`problem`), never fails the case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from perfguard.errors import first_line
from perfguard.model import COMPILE_KINDS

METRICS_LIMIT = 4096  # dynamo keeps its last 64 compiles; a case that recompiles needs them all
# What dynamo says of a frame it gave up on: it runs eagerly from then on.
GAVE_UP = re.compile(r"recompile.limit|cache.size.limit", re.IGNORECASE)
RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_\d+$")
BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)")
REASON_HEAD = re.compile(r"^Encountered graph break when attempting to trace")
COMPILING_FILES = ("/torch/_dynamo/convert_frame.py", "/torch/_inductor/compile_fx.py")
# torch.compile itself (its `compile` here): its first call imports dynamo and Inductor, seconds on a busy machine
COMPILE_CALL_FILE = "/torch/__init__.py"
COMPILER_MODULES = ("torch._dynamo", "torch._inductor", "torch.fx", "torch._subclasses", "torch.utils._sympy")


@dataclasses.dataclass(frozen=True)
class Compiled:
    """What a session saw: the compile's times (ms) and the counters' fields (Counters' compile kinds)."""

    cold_ms: float
    warm_ms: float | None
    counts: dict[str, dict[str, float]]
    frames: dict[str, str]
    problem: str | None = None


def wrap(fn: Callable[[], Any], options: Mapping[str, Any] | None) -> Callable[[], Any]:
    """The case's callable compiled as `@perf_case(compile=...)` declares ({}: torch.compile's defaults)."""
    return fn if options is None else torch.compile(fn, **options)


def is_compiler_error(exc: BaseException) -> bool:
    """Whether torch.compile raised it (dynamo, Inductor, a backend), not the user's code run eagerly."""
    return any(type(e).__module__.startswith(COMPILER_MODULES) for e in _chain(exc))


def was_compiling(exc: BaseException) -> bool:
    """Whether `exc` (a timeout, say) came while dynamo or Inductor was compiling: dynamo's frame
    conversion, Inductor's compile or torch.compile's import of them on the stack (running compiled
    code passes through none of them)."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        file = code.co_filename.replace("\\", "/")
        if file.endswith(COMPILING_FILES) or (file.endswith(COMPILE_CALL_FILE) and code.co_name == "compile"):
            return True
        tb = tb.tb_next
    return False


def user_frames(frames: str) -> str:
    """A formatted traceback's frames outside torch: the user's, not the compiler's pages of its own."""
    kept, keep = [], False
    for line in frames.splitlines():
        if line.startswith("  File "):
            keep = "/torch/" not in line.replace("\\", "/")
        if keep:
            kept.append(line)
    return "\n".join(kept)


def compile_error(where: str, exc: BaseException) -> str:
    """One line: the compiler's first error line and the user's frame, as dynamo names it."""
    text = str(exc)
    frame = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', text)
    user = [f for f in frame if "/torch/" not in f[0].replace("\\", "/")]
    at = f" at {user[-1][0]}:{user[-1][1]} in {user[-1][2]}" if user else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    head = lines[0] if lines else type(exc).__name__
    if head.endswith(":") and len(lines) > 1:  # "backend='inductor' raised:", and what it raised next
        head = f"{head} {lines[1]}"
    return f"{where}: torch.compile failed{at}: {type(exc).__name__}: {head}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


class Session:
    """One case's measurement as torch.compile sees it (see the module's docstring)."""

    def __init__(self, cuda: bool, declared: bool = False) -> None:
        self.cuda = cuda
        self.declared = declared  # @perf_case(compile=...)
        self.compiled = False
        self._cold_ms = 0.0
        self._warm_ms: float | None = None
        self._warm_metrics = range(0)  # the warm compile's metrics, by index: a repeat, not the case's
        self._breaks: dict[str, tuple[float, str]] = {}
        self.problem: str | None = None

    @contextlib.contextmanager
    def running(self) -> Iterator[Session]:
        """The case's measurement; what it compiles is watched from its first call (`first_call`)."""
        self._stack = contextlib.ExitStack()
        failed: BaseException | None = None
        with self._stack:
            try:
                yield self
            except BaseException as exc:  # noqa: BLE001 - raised below, once the cache folder is gone
                failed = exc  # (through fresh_cache it would keep the folder and log a warning)
        if failed is not None:
            raise failed

    def first_call(self, call: Callable[[], Any]) -> Any:
        """The case's first call: its compile, cold, when it compiles."""
        # After the setup, which calls torch.compile if anything does (importing dynamo): where nothing
        # has, the call cannot compile, and importing dynamo to watch it would cost 1.5 s.
        if self.declared or "torch._dynamo" in sys.modules:
            self._watch()
        start = time.perf_counter()
        out = call()
        self._cold_ms = (time.perf_counter() - start) * 1e3
        utils = getattr(self, "_utils", None)
        self.compiled = bool(utils and utils.get_compilation_metrics())
        return out

    def _watch(self) -> None:
        import torch._dynamo as dynamo  # noqa: PLC0415
        from torch._dynamo import utils  # noqa: PLC0415
        from torch._dynamo.callback import callback_handler  # noqa: PLC0415
        from torch._inductor.utils import fresh_cache  # noqa: PLC0415

        dynamo.reset()  # compiled here, whatever the setup or an earlier case compiled
        utils.clear_compilation_metrics()
        utils.set_compilation_metrics_limit(METRICS_LIMIT)
        self._stack.callback(utils.set_compilation_metrics_limit, utils.DEFAULT_COMPILATION_METRICS_LIMIT)
        self._utils = utils
        self._stack.enter_context(self._graph_breaks())
        stack = self._stack

        def starting(_args: object) -> None:
            # Before dynamo looks in any cache: entered once, left when the case ends.
            if not self._fresh:
                self._fresh = True
                stack.enter_context(fresh_cache())

        def leaving() -> None:
            if starting in callback_handler.start_callbacks:  # dynamo.reset() (the warm compile's) clears them
                callback_handler.remove_start_callback(starting)

        self._fresh = False
        callback_handler.register_start_callback(starting)
        stack.callback(leaving)

    def warm(self, call: Callable[[], Any]) -> None:
        """The compile again, from the caches the cold one filled (dynamo reset: it traces again)."""
        import torch._dynamo  # noqa: PLC0415
        from torch._inductor.utils import clear_caches  # noqa: PLC0415

        torch._dynamo.reset()
        clear_caches()  # the in-memory ones: a warm compile is served from the cache folder
        first = len(self._utils.get_compilation_metrics())
        start = time.perf_counter()
        call()
        if self.cuda:
            torch.cuda.synchronize()
        self._warm_ms = (time.perf_counter() - start) * 1e3
        self._warm_metrics = range(first, len(self._utils.get_compilation_metrics()))

    def result(self) -> Compiled | None:
        """The compile's times and counters; None where the case compiled nothing."""
        if not self.compiled:
            return None
        metrics = [m for i, m in enumerate(self._utils.get_compilation_metrics()) if i not in self._warm_metrics]
        counts: dict[str, dict[str, float]] = {k: {} for k in COMPILE_KINDS}
        frames: dict[str, str] = {}
        last: dict[str, str] = {}  # a frame's function, by dynamo's frame id: a frame it gave up on has no name
        for m in metrics:
            name = _frame_name(getattr(m, "co_name", None), getattr(m, "co_filename", None))
            key = str(getattr(m, "compile_id", "") or "").split("/")[0]  # "0/8": frame 0's ninth compile
            if name:
                last[key] = name
            where = f"{m.co_filename}:{m.co_firstlineno}" if getattr(m, "co_filename", None) else None
            fail = f"{getattr(m, 'fail_type', '') or ''} {getattr(m, 'fail_reason', '') or ''}"
            if GAVE_UP.search(fail):
                frame = name or last.get(key) or "a frame"
                counts["eager_frames"][frame] = 1.0  # once a frame: it runs eagerly from then on
                continue
            if getattr(m, "has_guarded_code", True) is False and not name:
                continue
            if name:
                _add(counts["graphs"], name)
                if where:
                    frames.setdefault(name, where)
            reason = getattr(m, "recompile_reason", None)
            if reason:
                guard = f"{_guard(reason)} in {name or 'a frame'}"
                _add(counts["recompiles"], guard)
                if where:
                    frames.setdefault(guard, where)
        for name, (n, where) in self._breaks.items():
            counts["graph_breaks"][name] = n
            frames[name] = where
        return Compiled(self._cold_ms, self._warm_ms, counts, frames, self.problem)

    @contextlib.contextmanager
    def _graph_breaks(self) -> Iterator[None]:
        """Dynamo's graph-break log, caught while the case runs: each break once, by its reason and
        function, with the user's line. Its duplicate check is reset so a case sees its own breaks."""
        try:
            from torch._dynamo import symbolic_convert  # noqa: PLC0415

            log = symbolic_convert.graph_break_log
            symbolic_convert.graph_break_dup_warning_checker.reset()
        except (ImportError, AttributeError) as exc:
            self.problem = f"graph breaks not counted: this torch has no {exc}"
            yield
            return
        session = self

        class Catch(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                session._break(record.getMessage())

        handler, level, propagate = Catch(logging.DEBUG), log.level, log.propagate
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)
        log.propagate = False  # caught, not printed: the report says it once
        try:
            yield
        finally:
            log.removeHandler(handler)
            log.setLevel(level)
            log.propagate = propagate

    def _break(self, message: str) -> None:
        at = BREAK_AT.search(message)
        if at is None:  # dynamo's shorter line for a break it has logged already: counted once
            return
        lines = [ln.strip() for ln in message.splitlines()]
        reason = next((ln.removeprefix("Graph Break Reason:").strip() for ln in lines
                       if ln.startswith("Graph Break Reason:")), "")
        if not reason or REASON_HEAD.match(reason):  # the headline is generic: what broke is the next line said
            start = next((i for i, ln in enumerate(lines) if ln.startswith("Graph Break Reason:")), 0)
            reason = next((ln for ln in lines[start + 1:] if ln and not ln.startswith(("Explanation", "Hint"))), reason)
        calls = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', message)
        function = calls[-1][2] if calls else "?"
        path, where = at.group("file"), f"{at.group('file')}:{at.group('line')}"
        name = f"{reason[:120]} in {function} ({os.path.basename(path)})"
        n, _ = self._breaks.get(name, (0.0, where))
        self._breaks[name] = (n + 1.0, where)


def _add(counts: dict[str, float], name: str) -> None:
    counts[name] = counts.get(name, 0.0) + 1.0


def _frame_name(co_name: str | None, co_filename: str | None) -> str | None:
    """A compiled frame as the user knows it: its function, and after a graph break the function it
    resumes ("forward, resumed"), never dynamo's line-numbered resume name, which any edit above moves."""
    if not co_name:
        return None
    resumed = RESUME.match(co_name)
    function = f"{resumed.group('fn')}, resumed" if resumed else co_name
    return f"{function} ({os.path.basename(co_filename)})" if co_filename else function


def _guard(reason: str) -> str:
    """The failed guard as dynamo words it, without its compile id ("0/0: ") or the source it quotes."""
    text = first_line(reason, "a guard failed")
    text = re.sub(r"^\d+/\d+:\s*", "", text)
    return text.split("  #", 1)[0].strip()[:160]
