"""Which phase of a training step, and which module, each allocation of one call was made in.

`PhaseTracker` is a context manager around one call of a case. While it is open it hooks every
nn.Module's forward, torch.autograd.backward and torch.autograd.grad, and every optimizer's step, and
at each change of phase or module it hands the allocator a new label (`set_label`, in practice
torch.cuda.memory._set_memory_metadata: every allocation after it carries it) preceded by a marker
allocation under a marker label (`marker`), so the trace itself holds the label's position. Where the
allocator takes no labels (a CPU), the marker is a profiler event named after the label instead
(perfguard/measure/profiler_history.py). Labels
are numbered; perfguard/analysis/attribution.py reads them back.

- forward: a module's forward pre-hook labels "forward <module>"; its forward hook labels the module
  it returns to. A forward that runs inside a backward (torch._C._current_graph_task_id() != -1) is a
  recomputation (activation checkpointing): "recompute <module>".
- backward: from the moment torch.autograd.backward (or .grad) is called (the loss's own backward,
  cross-entropy over a large vocabulary, allocates before any module's gradient is reached) until it
  returns; within it, "backward <module>" from when the gradients of a module's outputs are ready
  (torch.autograd.graph.register_multi_grad_hook, as torch.utils.module_tracker does) until those
  of its inputs are.
- optimizer: from an optimizer's step pre-hook to its post-hook.
- call: anything else the callable does.

Known tensors are noted at labels (attribution.Capture): parameters and buffers of each module tree
when it is first seen, the tensors an outermost module is called with, gradients at each optimizer
step's start, after each backward (every tensor it accumulated a gradient into: its graph's
AccumulateGrad nodes, nn.Parameters among them counted as parameters) and at the end, optimizer
state at each step's end and at the end.

Allocation metadata may be per thread: the autograd engine runs CUDA backward on its own thread,
so the label in force when backward starts is set again from a pre-hook on the roots' grad_fn (the
first thing that thread runs for this backward), and every label set inside backward is set there.
All hooks are removed, and the two patched functions restored, when the tracker closes, whatever
the call raised.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils._pytree import tree_leaves

from perfguard.analysis.attribution import (
    BACKWARD,
    CALL,
    FORWARD,
    OPTIMIZER,
    RECOMPUTE,
    Capture,
    Identity,
    Label,
    label_text,
    marker_text,
)

_CALLS = itertools.count()


class PhaseTracker:
    """Labels for one call; `labels[i].seq == i`, `captures` in the order taken."""

    def __init__(self, set_label: Callable[[str], None], marker: Callable[[], None], device: torch.device) -> None:
        self.token = f"{os.getpid()}.{next(_CALLS)}"  # this call's labels, told apart from any other's
        self.labels: list[Label] = []
        self.captures: list[Capture] = []
        self._set_label, self._marker, self._device = set_label, marker, device
        self._lock = threading.RLock()  # hooks fire on the autograd engine's threads too
        self._current = ""
        self._names: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary()
        self._roots: list[torch.nn.Module] = []
        self._optimizers: list[torch.optim.Optimizer] = []
        self._stack: list[tuple[torch.nn.Module, str, bool]] = []  # (module, name, recomputing)
        self._backward: list[str] = []  # modules whose backward is under way, innermost last
        self._in_backward = False
        self._handles: list[Any] = []
        self._patched: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> PhaseTracker:
        try:
            self._emit(CALL, None)
            self._handles += [
                register_module_forward_pre_hook(self._pre_forward),
                register_module_forward_hook(self._post_forward, with_kwargs=True, always_call=True),
                register_optimizer_step_pre_hook(self._pre_step),
                register_optimizer_step_post_hook(self._post_step),
            ]
            for name in ("backward", "grad"):
                original = getattr(torch.autograd, name)
                self._patched.append((torch.autograd, name, original))
                setattr(torch.autograd, name, self._wrap_backward(original))
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        try:
            if kind is None:  # after an error (out of memory, say) a marker is one allocation too many
                seq = self._emit(CALL, None, fresh=True)
                self._capture(seq, self._gradients(), self._state(), self._weights())
        finally:
            self._close()

    def _close(self) -> None:
        for handle in self._handles:
            handle.remove()
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._handles.clear()
        self._patched.clear()
        self._roots.clear()
        self._optimizers.clear()
        self._stack.clear()
        self._set_label("")

    # --- labels and captures ---------------------------------------------------------------------

    def _emit(self, phase: str, module: str | None, fresh: bool = False) -> int:
        """Label what follows (`fresh`: even when it is what the last label says, for a capture's position)."""
        with self._lock:
            if not fresh and self.labels and self.labels[-1].phase == phase and self.labels[-1].module == module:
                return self.labels[-1].seq
            seq = len(self.labels)
            self.labels.append(Label(seq, phase, module))
            self._set_label(marker_text(self.token, seq))
            self._marker()
            self._current = label_text(self.token, seq)
            self._set_label(self._current)
            return seq

    def _capture(self, seq: int, *groups: Iterable[tuple[str, Any]]) -> None:
        found = dict.fromkeys(i for group in groups for kind, t in group if (i := self._identity(kind, t)))
        if found:
            self.captures.append(Capture(seq, tuple(found)))

    def _identity(self, kind: str, t: Any) -> Identity | None:
        if not isinstance(t, torch.Tensor) or t.device != self._device or t.layout != torch.strided:
            return None
        try:  # a tensor subclass, or one without storage, is not something a block can be named after
            storage = t.untyped_storage()
            ptr, nbytes = storage.data_ptr(), storage.nbytes()
        except (RuntimeError, NotImplementedError, TypeError):
            return None
        return Identity(kind, ptr, nbytes) if ptr and nbytes else None

    def _weights(self) -> Iterable[tuple[str, Any]]:
        for root in self._roots:
            yield from (("parameters", p) for p in root.parameters())
            yield from (("buffers", b) for b in root.buffers())

    def _gradients(self, optimizers: Iterable[torch.optim.Optimizer] | None = None) -> Iterable[tuple[str, Any]]:
        if optimizers is None:
            yield from (("gradients", p.grad) for root in self._roots for p in root.parameters())
            optimizers = self._optimizers
        for opt in optimizers:
            yield from (("gradients", p.grad) for group in opt.param_groups for p in group["params"])

    def _state(self, optimizers: Iterable[torch.optim.Optimizer] | None = None) -> Iterable[tuple[str, Any]]:
        for opt in self._optimizers if optimizers is None else optimizers:
            yield from (("optimizer_state", t) for t in tree_leaves(list(opt.state.values())))

    # --- forward -----------------------------------------------------------------------------------

    def _name(self, module: torch.nn.Module) -> tuple[str, bool]:
        """The module's name from its root ("GPT.transformer.h.0"), and whether it is a new root."""
        name = self._names.get(module)
        if name is not None:
            return name, False
        for sub_name, sub in module.named_modules(prefix=type(module).__name__):
            self._names.setdefault(sub, sub_name)
        self._roots.append(module)
        return self._names[module], True

    def _pre_forward(self, module: torch.nn.Module, args: tuple) -> None:
        recomputing = torch._C._current_graph_task_id() != -1
        name, new = self._name(module)
        self._stack.append((module, name, recomputing))
        seq = self._emit(RECOMPUTE if recomputing else FORWARD, name, fresh=new)
        if new:
            self._capture(seq, (("parameters", p) for p in module.parameters()), (("buffers", b) for b in module.buffers()))
        if not recomputing:  # a recomputation's tensors take no part in the backward that runs it
            self._on_gradients(tree_leaves(args), functools.partial(self._leave_backward, name))

    def _post_forward(self, module: torch.nn.Module, args: tuple, *rest: Any) -> None:
        # (kwargs, output), or (output,) alone when the forward raised: torch calls always-called
        # hooks so then, and a checkpoint's recomputation stops early by raising.
        kwargs = rest[0] if len(rest) == 2 else {}
        at = next((i for i in range(len(self._stack) - 1, -1, -1) if self._stack[i][0] is module), None)
        if at is None:
            return
        _, name, recomputing = self._stack[at]
        del self._stack[at:]
        if not recomputing:
            self._on_gradients(tree_leaves(rest[-1]), functools.partial(self._enter_backward, name))
        if self._stack:
            _, outer, outer_recomputing = self._stack[-1]
            self._emit(RECOMPUTE if outer_recomputing else FORWARD, outer)
        elif recomputing:
            self._emit(BACKWARD, self._backward[-1] if self._backward else None)
        else:  # the step's own code after the model (the loss, say); the data it was called with
            seq = self._emit(FORWARD, None, fresh=True)
            self._capture(seq, (("inputs", t) for t in tree_leaves((args, kwargs))))

    def _on_gradients(self, tensors: list[Any], fn: Callable[[], None]) -> None:
        tensors = [t for t in tensors if isinstance(t, torch.Tensor) and t.requires_grad]
        if tensors:
            self._handles.append(register_multi_grad_hook(tensors, lambda _grads: fn()))

    # --- backward ----------------------------------------------------------------------------------

    def _wrap_backward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def run(*args: Any, **kwargs: Any) -> Any:
            # A backward inside a backward (a reentrant checkpoint's) is part of the outer one.
            if self._in_backward or torch._C._current_graph_task_id() != -1:
                return original(*args, **kwargs)
            roots = [t.grad_fn for t in tree_leaves(args[0] if args else kwargs.get("tensors", kwargs.get("outputs")))
                     if isinstance(t, torch.Tensor) and t.grad_fn is not None]
            leaves = _leaves(roots)
            self._in_backward = True
            self._emit(BACKWARD, None)
            again = [root.register_prehook(lambda _grads: self._set_label(self._current)) for root in roots]
            try:
                return original(*args, **kwargs)
            finally:
                for handle in again:
                    handle.remove()
                self._in_backward = False
                self._backward.clear()
                self._stack[:] = [s for s in self._stack if not s[2]]  # a recomputation stopped early
                seq = self._emit(CALL, None, fresh=True)
                self._capture(seq, (("gradients", t.grad) for t in leaves),
                              (("parameters", t) for t in leaves if isinstance(t, torch.nn.Parameter)))

        return run

    def _enter_backward(self, name: str) -> None:
        self._backward.append(name)
        self._backward_label()

    def _leave_backward(self, name: str) -> None:
        if name in self._backward:
            del self._backward[len(self._backward) - 1 - self._backward[::-1].index(name)]
            self._backward_label()

    def _backward_label(self) -> None:
        self._stack[:] = [s for s in self._stack if not s[2]]
        self._emit(BACKWARD, self._backward[-1] if self._backward else None)

    # --- optimizer ---------------------------------------------------------------------------------

    def _pre_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if not any(o is opt for o in self._optimizers):
            self._optimizers.append(opt)
        seq = self._emit(OPTIMIZER, type(opt).__name__, fresh=True)
        self._capture(seq, self._gradients([opt]))

    def _post_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        seq = self._emit(CALL, None, fresh=True)
        self._capture(seq, self._state([opt]))


def _leaves(roots: list[Any]) -> list[torch.Tensor]:
    """The tensors a backward from `roots` accumulates gradients into (its AccumulateGrad nodes'),
    modules' parameters or not: a step written without nn.Module or an optimizer has gradients too."""
    seen, todo, out = set(), list(roots), []
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            out.append(variable)
        todo.extend(child for child, _ in node.next_functions)
    return out
