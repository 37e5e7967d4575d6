"""Verdicts on work counters: what a call does, counted, judged exactly (DESIGN §5, issue 19).

Counts are deterministic on one software stack: the same code launches the same kernels, syncs
the same number of times and calls the same ATen operators, whatever the host's or the card's speed.
So there is no noise model: any change is reported; an increase fails unless the case (`counters=`)
or the run (`--perfguard-counter-allowance`) allows it; a decrease is `improved`. Another driver,
CUDA, torch or triton picks other kernels, so where the fingerprint differs from the baseline's a
changed count is not compared (`inconclusive`, reason `software_changed`), never a failure. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from perfguard import units
from perfguard.model import (COMPILE_KINDS, COUNTER_KINDS, COUNTER_LABELS, CaseResult, CountChange, CounterEvidence, Counters, NextStep, Reason, Verdict,
                             VerdictStatus)

SHOWN_NAMES = 3  # changed names a line lists before "and N more"

MAX_NAME = 70  # characters of a kernel's name a message shows
GENERIC_PARTS = {"AUnaryFunctor", "BUnaryFunctor", "BinaryFunctor", "UnaryFunctor", "gpu_kernel_impl",
                 "gpu_kernel_impl_nocast", "elementwise_kernel", "vectorized_elementwise_kernel"}


def compare_counters(
    current: CaseResult,
    baseline: CaseResult,
    *,
    allowance: Mapping[str, str] | None = None,
    env: tuple[str, ...] = (),
    baseline_file: str | None = None,
) -> list[Verdict]:
    """One verdict per counter that changed (none for those that did not: no change, nothing to say),
    and none when the baseline has no counters yet (one recorded before they were counted: nothing to
    compare with until `--perfguard-update` records them; the HTML's work section shows the counts). `allowance` is the run's; the case's own
    (`current.counter_allowance`) overrides it kind by kind."""
    new, old = current.counters, baseline.counters
    if new is None or old is None:
        return []
    allowed = {**(allowance or {}), **current.counter_allowance}
    verdicts = []
    for kind in COUNTER_KINDS:
        if not (new.counted(kind) and old.counted(kind)):
            continue
        before, after = canonical(kind, getattr(old, kind)), canonical(kind, getattr(new, kind))
        deltas = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in {*before, *after}}
        deltas = {name: d for name, d in deltas.items() if round(d, 6)}
        if not deltas:
            continue
        verdicts.append(_judge(current.id, kind, old, new, deltas, allowed.get(kind, allowed.get("*", "0")),
                               env, baseline_file))
    return verdicts


# Inductor numbers the kernels it generates within each graph ("triton_poi_fused_add_mul_0", "_1"), so
# the same kernel gets another number when the graphs around it change, at no cost: a kernel is
# compared by its name without that number (a new kernel still adds to its name's count).
INDUCTOR_NUMBER = re.compile(r"^(triton_[a-z]{3}_\w*?)_\d+$")


def canonical(kind: str, counts: Mapping[str, float]) -> dict[str, float]:
    """`counts` by the names they are compared by: a generated kernel's without Inductor's number."""
    if kind != "kernels":
        return dict(counts)
    merged: dict[str, float] = {}
    for name, n in counts.items():
        key = kernel_name(name)
        merged[key] = merged.get(key, 0.0) + n
    return merged


def kernel_name(name: str) -> str:
    """A kernel's name as it is compared: a generated kernel's without Inductor's number."""
    return INDUCTOR_NUMBER.sub(r"\1", name)


def kinds_above(allowance: Mapping[str, str], ceiling: Mapping[str, str]) -> list[str]:
    """The counters for which `allowance` allows more growth than `ceiling` (both in
    parsers.counter_allowance's form; a kind either names falls back on its "*", then on "0"). A count
    and a percentage cannot be compared without the baseline's count, so an allowance in the other
    form than its ceiling is above it unless it allows nothing."""
    def of(spec: Mapping[str, str], kind: str) -> str:
        return spec.get(kind, spec.get("*", "0"))

    above = []
    for kind in COUNTER_KINDS:
        wanted, most = of(allowance, kind), of(ceiling, kind)
        amount = float(wanted.rstrip("%"))
        if amount and (wanted.endswith("%") != most.endswith("%") or amount > float(most.rstrip("%"))):
            above.append(kind)
    return above


def summary(counters: Counters) -> str:
    """"140 kernels, 1 host-device sync, 2 copies (8 B), 312 ATen operators"."""
    parts = []
    for kind in ("kernels", "syncs", "copies", "memsets", "segments", "aten_ops", *COMPILE_KINDS):
        if counters.counted(kind) and (counters.total(kind) or kind in ("kernels", "syncs", "aten_ops", "graphs", "graph_breaks")):
            parts.append(_count(counters.total(kind), kind))
            if kind == "copies" and counters.total("copy_bytes"):
                parts[-1] += f" ({units.size(counters.total('copy_bytes'))})"
    return ", ".join(parts)


def short_name(name: str) -> str:
    """A kernel's name as a person reads it: no return type, arguments or namespaces
    ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>, ...>(int, ...)"
    → "vectorized_elementwise_kernel<4, MulFunctor<float>, ...>")."""
    text = re.sub(r"^void\s+", "", name)
    if text.endswith(")") and "(" in text:  # the argument list, when the name carries it
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i] if i else text
                break
    text = re.sub(r"\(anonymous namespace\)::|\b[A-Za-z_]\w*::", "", text)
    head, _, args = text.partition("<")
    # An elementwise kernel is named by what it computes: its innermost functor or kernel lambda
    # ("vectorized_elementwise_kernel<MulFunctor>", "...<bfloat16_copy_kernel_cuda>", "elementwise_kernel<CUDAFunctor_add>"),
    # not by the templates that carry it.
    inner = [m for m in re.findall(r"([A-Za-z]\w*(?:Functor\w*|_kernel(?:_cuda)?))\b", args) if m not in GENERIC_PARTS]
    if args and inner:
        text = f"{head}<{inner[-1]}>"
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1] + "…"


def _judge(case_id: str, kind: str, old: Counters, new: Counters, deltas: dict[str, float], allowance: str,
           env: tuple[str, ...], baseline_file: str | None) -> Verdict:
    before, after = old.total(kind), new.total(kind)
    grown = sum(d for d in deltas.values() if d > 0)
    limit = before * float(allowance[:-1]) / 100.0 if allowance.endswith("%") else float(allowance)
    steps: tuple[NextStep, ...] = ()
    status: VerdictStatus
    reason: Reason
    if env:
        # Other software picks other kernels: a changed count says nothing of the code, and `same`
        # would say it was compared.
        status, reason, steps = "inconclusive", "software_changed", (NextStep("rerecord"),)
    elif grown > limit + 1e-9:
        status, reason, steps = "regressed", "grew", (NextStep("allow_counter"), NextStep("accept"))
    elif after < before:
        status, reason, steps = "improved", "fell", (NextStep("record"),)
    else:
        status, reason = "same", "allowed" if grown else "moved"
    ranked = sorted(deltas.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
    causes = new.sync_causes if kind == "syncs" else {**old.frames, **new.frames} if kind in COMPILE_KINDS else {}
    counts = tuple(CountChange(name, d, causes.get(name)) for name, d in ranked)
    return Verdict(case_id=case_id, metric=kind, status=status, baseline=before, current=after,
                   change_pct=100.0 * (after / before - 1.0) if before else None, threshold_pct=0.0,
                   baseline_file=baseline_file, env_mismatch=env, reason=reason, next_steps=steps,
                   counters=CounterEvidence(counts=counts, allowance=allowance, allowed_more=limit))


def figure(kind: str, n: float) -> str:
    """A counter's value as a message shows it: bytes as a size ("1.0 MiB"), any other count per call
    as `units.count` writes it ("12", "0.20")."""
    return units.size(n) if kind == "copy_bytes" else units.count(n)


def _count(n: float, kind: str) -> str:
    """A counter's value with its unit: a size carries its own ("1.0 MiB"), a count its noun ("3 syncs")."""
    if kind == "copy_bytes":
        return units.size(n)
    one, many = COUNTER_LABELS[kind]
    return f"{units.count(n)} {one if n == 1 else many}"
