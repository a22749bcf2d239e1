"""Comparing runs of one module: planned against unplanned and a reference.

``compare`` builds the ``RunReport`` that `memplan-run` prints: per output the
largest difference of planned vs unplanned and vs the reference run, and the
first kernel call whose input bytes differ (``trace_divergence``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr

from memplan.dialect.interpreter import (
    ExecutionResult,
    KernelCall,
)
from memplan.dialect.ops import VIEW_ATTR


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest ``|a - b|``; ``inf`` for mismatched shapes or NaN positions."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(b) else np.float64
    a64, b64 = a.astype(wide), b.astype(wide)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    if (nan_a != nan_b).any():
        return float("inf")
    # Equal elements (infinities too: inf - inf is NaN) differ by 0.
    mask = ~nan_a & (a64 != b64)
    if not mask.any():
        return 0.0
    return float(np.max(np.abs(a64[mask] - b64[mask])))


def bit_identical(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def trace_divergence(
    unplanned: Sequence[KernelCall],
    planned: Sequence[KernelCall],
    view_kernels: set[str],
) -> str | None:
    """The first planned kernel call whose inputs no unplanned call of that
    kernel read, or ``None`` when every call read the same bytes.

    Calls of a kernel are matched as a multiset of input digests, so a plan
    that reorders kernels (`schedule`) is compared call for call too; the
    message names the input that differs from the unplanned call in the same
    position. View kernels (aliases after `manifest-alloc`) may be called in
    the unplanned run only.
    """
    before: dict[str, list[tuple[str, ...]]] = {}
    for call in unplanned:
        before.setdefault(call.callee, []).append(call.input_digests)
    unmatched = {callee: Counter(calls) for callee, calls in before.items()}
    seen: dict[str, int] = {}
    for call in planned:
        index = seen.get(call.callee, 0)
        seen[call.callee] = index + 1
        calls = before.get(call.callee, [])
        if index >= len(calls):
            return f"@{call.callee} is called more often planned ({index + 1}) than unplanned ({len(calls)})"
        remaining = unmatched[call.callee]
        if remaining[call.input_digests] > 0:
            remaining[call.input_digests] -= 1
            continue
        operand = next(
            (i for i, (old, new) in enumerate(zip(calls[index], call.input_digests)) if old != new),
            0,
        )
        return f"call #{index} of @{call.callee} read different bytes in input {operand}"
    for callee, calls in before.items():
        if seen.get(callee, 0) != len(calls) and callee not in view_kernels:
            return (
                f"@{callee} is called {len(calls)} times unplanned, "
                f"{seen.get(callee, 0)} times planned"
            )
    return None


def view_kernel_names(module: ModuleOp) -> set[str]:
    return {
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and isinstance(op.attributes.get(VIEW_ATTR), UnitAttr)
    }


@dataclass
class OutputReport:
    name: str
    shape: tuple[int, ...]
    dtype: str
    planned_vs_unplanned: float
    identical: bool
    planned_vs_reference: float | None
    reference_magnitude: float = 0.0
    """max |reference|, which ``rtol`` scales."""


@dataclass
class RunReport:
    """Everything `memplan-run` compares, and whether it all agreed."""

    outputs: list[OutputReport]
    trace_problem: str | None
    calls_unplanned: int
    calls_planned: int
    pool_bytes: dict[str, int]
    unpinned_bytes: int
    atol: float
    rtol: float = 0.0
    planned_outputs: list[np.ndarray] = field(default_factory=list)

    def within_tolerance(self, output: OutputReport) -> bool:
        return output.planned_vs_reference is None or (
            output.planned_vs_reference <= self.atol + self.rtol * output.reference_magnitude
        )

    @property
    def ok(self) -> bool:
        return self.trace_problem is None and all(
            o.identical and self.within_tolerance(o) for o in self.outputs
        )

    def format(self) -> str:
        lines = [
            f"kernel calls: {self.calls_unplanned} unplanned, {self.calls_planned} planned; "
            + (
                "every planned call read the same bytes as the unplanned one"
                if self.trace_problem is None
                else f"DIVERGED: {self.trace_problem}"
            )
        ]
        if self.pool_bytes:
            pools = ", ".join(f"@{name} {size} bytes" for name, size in self.pool_bytes.items())
            lines.append(f"pools: {pools}")
        if self.unpinned_bytes:
            lines.append(f"storages outside pools: {self.unpinned_bytes} bytes")
        header = ("output", "shape", "planned vs unplanned", "planned vs reference")
        rows: list[tuple[str, str, str, str]] = [header]
        for output in self.outputs:
            shape = f"{output.dtype}[{','.join(str(d) for d in output.shape)}]"
            versus = (
                "bit-identical"
                if output.identical
                else f"DIFFERENT (max |diff| {output.planned_vs_unplanned:.3g})"
            )
            reference = (
                "n/a"
                if output.planned_vs_reference is None
                else f"max |diff| {output.planned_vs_reference:.3g}"
                + ("" if self.within_tolerance(output) else " > tolerance")
            )
            rows.append((output.name, shape, versus, reference))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        lines.append("result: " + ("OK" if self.ok else "MISMATCH"))
        return "\n".join(lines)


def compare(
    names: Sequence[str],
    unplanned: ExecutionResult,
    planned: ExecutionResult,
    reference: Sequence[np.ndarray] | None,
    view_kernels: set[str],
    atol: float,
    rtol: float = 0.0,
) -> RunReport:
    outputs: list[OutputReport] = []
    for index, name in enumerate(names):
        new, old = np.asarray(planned.outputs[index]), np.asarray(unplanned.outputs[index])
        outputs.append(
            OutputReport(
                name,
                tuple(new.shape),
                str(new.dtype),
                max_abs_diff(new, old),
                bit_identical(new, old),
                None if reference is None else max_abs_diff(new, reference[index]),
                0.0 if reference is None else _magnitude(reference[index]),
            )
        )
    problem = trace_divergence(unplanned.calls or [], planned.calls or [], view_kernels)
    return RunReport(
        outputs,
        problem,
        len(unplanned.calls or []),
        len(planned.calls or []),
        planned.pool_bytes,
        planned.unpinned_bytes,
        atol,
        rtol,
        [np.asarray(o) for o in planned.outputs],
    )


def _magnitude(array: np.ndarray) -> float:
    """The largest finite ``|value|`` (NaN and inf would make the tolerance NaN)."""
    values = np.abs(np.asarray(array)).astype(np.float64)
    values = values[np.isfinite(values)]
    return float(values.max()) if values.size else 0.0
