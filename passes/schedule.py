"""``schedule``: reorder kernel calls to lower the peak of live tensor bytes."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, tensor
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from memplan.dialect.diagnostics import emit_remark
from memplan.dialect.ops import VIEW_ATTR
from memplan.dialect.types import static_byte_size
from memplan.passes.analysis.symbols import SymbolCache
from memplan.passes.analysis.value_semantic import bound_bytes
from memplan.passes.pass_options import check_options
from memplan.passes.planning.execution_order import (
    SCHEDULERS,
    ScheduleAlgorithm,
    ScheduleProblem,
    best_schedule,
    is_topological,
    simulate_peak,
)

# Ops without effects or regions that a reorder may move (besides calls of
# kernel declarations, which are pure in the value-semantic form).
_MOVABLE = (arith.ConstantOp, memref.GetGlobalOp, bufferization.ToTensorOp, tensor.EmptyOp)
_CONSTANT_OPS = (arith.ConstantOp, bufferization.ToTensorOp)
"""Movable ops whose tensors `manifest-alloc` leaves in read-only globals:
they take no workspace, so they count 0 bytes."""


def _tensor_bytes(value: SSAValue) -> int:
    """What `manifest-alloc` will reserve for ``value``: a static tensor's
    bytes, a dynamic one's at its bound (`memory.max_shapes` on its call,
    as `usmp` pins it), else 0 (an unbounded storage stays out of the pools)."""
    type_: Attribute = value.type
    if not isinstance(type_, TensorType):
        return 0
    try:
        size = static_byte_size(type_)
        if size is not None:
            return size
        owner = value.owner
        if not isinstance(owner, func.CallOp) or not isinstance(value, OpResult):
            return 0
        return bound_bytes(owner, value.index, type_.element_type) or 0
    except VerifyException:  # no fixed bit width: manifest-alloc will say so
        return 0


@dataclass(frozen=True)
class SchedulePass(ModulePass):
    """Reorder kernel calls to lower the peak of live tensor bytes.

    Works on the value-semantic form `manifest-alloc` takes (run it before
    `manifest-alloc`): there an order is only SSA dependencies, with no
    storages or kills to move along. In each block, the ops between two
    barriers form a segment that is reordered as a DAG: `func.call`s of
    kernel declarations (pure on tensors), `arith.constant`,
    `memref.get_global`, `bufferization.to_tensor` and `tensor.empty`.
    Any other op (one with regions such as `scf.if`, a call of a function
    with a body, an op with unknown effects) and the terminator are barriers
    that stay where they are, as does everything relative to them; values
    used after a segment count as live to its end. A write into memory the
    values do not show (`bufferization.materialize_in_destination` into a
    memref: a TFLite variable's `ASSIGN_VARIABLE`) is such a barrier, so a
    kernel call reading that memref (a memref operand) stays on its side of
    every write: the order of a variable's reads and writes is the given one.

    A node's bytes are its tensor results' sizes: static ones, and dynamic
    ones at their bound (`memory.max_shapes`, what `usmp` reserves for
    them; 0 without one), 0 for constants (`manifest-alloc` keeps them in
    read-only globals); a `memory.view`
    kernel's result aliases its operand (0 bytes, extending its operand's
    life). The candidate orders (`passes.planning.execution_order`: XLA's list
    and DFS schedulers, the given order, and an exact search over the sets
    of nodes run so far that looks only below their best peak and gives up
    after 100,000 moves) are compared by the peak of live bytes they give,
    and the lowest wins, the given order on a tie, so the pass never raises
    the estimated peak. Results never change: every op
    still follows every op it reads.

    Each function gets a remark `schedule: @f: peak of live tensor bytes
    A -> B, each tensor counted apart (before in-place sharing) (order)`:
    the highest segment peak before and after, and the orders chosen. The
    peak counts every tensor on its own: a plan whose in-place results take
    their operands' bytes can be below it.

    Options:

    - `algorithm` (str, default `best`): `best`, or one of `post-order`,
      `list`, `dfs`, `exact` to apply that order (even if it is worse;
      `exact` falls back to `list` when its search gives up).
    - `remarks` (bool, default true): emit the per-function remark.
    """

    name = "schedule"

    algorithm: ScheduleAlgorithm = "best"
    """`best`, or the name of one scheduler."""
    remarks: bool = True

    def __post_init__(self) -> None:
        check_options(self)

    """Emit `schedule: @f: peak ... -> ...` per function."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        symbols = SymbolCache()
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            if function.is_declaration:
                continue
            before = after = 0
            chosen: set[str] = set()
            blocks = [b for o in function.walk() for r in o.regions for b in r.blocks]
            for block in blocks:
                for segment in self._segments(block, symbols):
                    b, a, name = self._schedule(segment, symbols)
                    before, after = max(before, b), max(after, a)
                    chosen.add(name)
            if self.remarks:
                emit_remark(
                    function,
                    f"schedule: @{function.sym_name.data}: peak of live tensor bytes "
                    f"{before} -> {after}, each tensor counted apart (before in-place "
                    f"sharing) ({', '.join(sorted(chosen)) or 'nothing to order'})",
                )

    @staticmethod
    def _movable(op: Operation, symbols: SymbolCache) -> bool:
        if isinstance(op, _MOVABLE):
            return True
        if isinstance(op, func.CallOp):
            return symbols.declaration(op) is not None
        return False

    def _segments(self, block: Block, symbols: SymbolCache) -> list[list[Operation]]:
        segments: list[list[Operation]] = [[]]
        for op in block.ops:
            if op.has_trait(IsTerminator) or not self._movable(op, symbols):
                segments.append([])
            else:
                segments[-1].append(op)
        return [s for s in segments if len(s) > 1]

    def _schedule(self, segment: list[Operation], symbols: SymbolCache) -> tuple[int, int, str]:
        """Reorder ``segment`` in place; the peaks before and after, and the order's name."""
        index = {op: i for i, op in enumerate(segment)}
        producer: dict[SSAValue, int] = {}
        for i, op in enumerate(segment):
            for result in op.results:
                producer[result] = i
        sizes: list[int] = []
        reads: list[tuple[int, ...]] = []
        alias_of: list[int | None] = []
        kept: set[int] = set()
        for i, op in enumerate(segment):
            operands = tuple(dict.fromkeys(producer[v] for v in op.operands if v in producer))
            reads.append(operands)
            view = isinstance(op, func.CallOp) and _is_view(op, symbols)
            if view and operands:
                source = operands[0]
                alias_of.append(alias_of[source] if alias_of[source] is not None else source)
                sizes.append(0)
            else:
                alias_of.append(None)
                constant = isinstance(op, _CONSTANT_OPS)
                sizes.append(0 if constant else sum(_tensor_bytes(r) for r in op.results))
            for result in op.results:
                if any(use.operation not in index for use in result.uses):
                    kept.add(i)
        # A kept view keeps its owner's bytes.
        for i in list(kept):
            owner = alias_of[i]
            if owner is not None:
                kept.add(owner)
        problem = ScheduleProblem(tuple(sizes), tuple(reads), tuple(alias_of), frozenset(kept))
        before = simulate_peak(problem, range(len(segment)))
        if self.algorithm == "best":
            order, after, name = best_schedule(problem)
        else:
            order = SCHEDULERS[self.algorithm](problem)
            after, name = simulate_peak(problem, order), self.algorithm
        assert is_topological(problem, order)
        if order != list(range(len(segment))):
            anchor = segment[-1].next_op
            block = segment[0].parent_block()
            assert block is not None
            for op in segment:
                op.detach()
            for i in order:
                if anchor is None:
                    block.add_op(segment[i])
                else:
                    block.insert_op_before(segment[i], anchor)
        return before, after, name


def _is_view(call: func.CallOp, symbols: SymbolCache) -> bool:
    kernel = symbols.declaration(call)
    return kernel is not None and VIEW_ATTR in kernel.attributes
