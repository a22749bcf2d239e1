"""How a use of a storage (or a value aliasing it) affects its lifetime.

``classify_use(use)`` sorts every use of an SSA value into one of four kinds,
from what the op model (``memdialect.op_model``) says the user does:

- ``ALIAS``: the user makes new values that hold the same bytes, returned as
  ``targets`` and followed by the lifetime analysis. View-like ops and
  ``memory.alloc_tensor`` (``memdialect.op_model``, the one definition of
  view-like aliasing); branch operands to the successor's block arguments
  (``cf.br``, ``cf.cond_br``, ``cf.switch``); ``scf.for`` init operands to
  the body's iteration arguments and the loop results; ``scf.while`` init
  operands to the ``before`` region's arguments; ``scf.condition`` operands
  to the ``after`` region's arguments and the loop results; ``scf.yield``
  operands to the parent's results (``scf.if``, ``scf.index_switch``,
  ``scf.execute_region``, ``scf.for``) and, in loops, to the arguments of
  the next iteration.
- ``KILL``: ``memory.kill``.
- ``ESCAPE``: a reference to the bytes may outlive anything the analysis can
  see, so the value is live to the end of the function: ``func.return``;
  ``memref.store`` of the memref itself (operand 0); ops that expose the raw
  pointer (``memref.extract_aligned_pointer_as_index``,
  ``memref.extract_strided_metadata``); a terminator yielding out of a region
  op not modelled above; a branch op with successors not modelled above; and
  any other op that produces a value able to hold a reference (anything but
  integers, indices, floats and vectors), e.g. a ``func.call`` returning a
  memref, since that result may be the argument.
- ``PLAIN``: any other use (``memory.invoke``, ``memref.load``,
  ``memref.copy``, a ``func.call`` with scalar results, ...): the bytes are
  needed at that point only.

``writes(use)`` says whether the use may write the bytes (for ``read_only``).
"""

from __future__ import annotations

from enum import Enum

from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType, VectorType
from xdsl.ir import Operation, SSAValue, Use
from xdsl.traits import IsTerminator, MemoryEffectKind, get_effects

from memplan.dialect.op_model import (
    branch_successors,
    entry_successors,
    is_control_flow,
    is_function,
    is_plain_reader,
    is_region_terminator,
    is_view_of_operand,
    only_reads,
    returns_from_function,
    stores_operand,
    takes_address,
    terminator_successors,
    writes_operand,
)
from memplan.dialect.ops import InvokeOp, KillOp


class UseKind(Enum):
    """What a use does to the lifetime of the value it uses."""

    PLAIN = "plain"
    ALIAS = "alias"
    KILL = "kill"
    ESCAPE = "escape"


def _is_scalar(value: SSAValue) -> bool:
    return isinstance(value.type, IntegerType | IndexType | AnyFloat | VectorType)


def may_hold_reference(value: SSAValue) -> bool:
    """Could ``value`` refer to bytes (anything but an integer, index, float or vector)?"""
    return not _is_scalar(value)


def _may_hold_reference(op: Operation) -> bool:
    return any(may_hold_reference(result) for result in op.results)


def classify_use(use: Use) -> tuple[UseKind, tuple[SSAValue, ...]]:
    """The kind of ``use`` and, for ``ALIAS``, the values that alias the used value."""
    op = use.operation
    index = use.index
    if isinstance(op, KillOp):
        return UseKind.KILL, ()
    if is_view_of_operand(op, index):
        return UseKind.ALIAS, tuple(op.results)
    if is_plain_reader(op):
        return UseKind.PLAIN, ()
    if returns_from_function(op) or takes_address(op) or stores_operand(op, index):
        return UseKind.ESCAPE, ()
    if writes_operand(op, index) is not None:
        return UseKind.PLAIN, ()
    if op.successors:
        targets = branch_successors(op, index)
        if targets is None:
            return UseKind.ESCAPE, ()
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    targets = entry_successors(op, index)
    if targets is not None:
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    if is_region_terminator(op):
        targets = terminator_successors(op, index)
        if targets is None:
            return UseKind.ESCAPE, ()
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    if op.has_trait(IsTerminator):
        parent = op.parent_op()
        if parent is not None and not is_function(parent) and _may_hold_reference(parent):
            return UseKind.ESCAPE, ()
        return UseKind.PLAIN, ()
    if _may_hold_reference(op):
        return UseKind.ESCAPE, ()
    return UseKind.PLAIN, ()


def writes(use: Use) -> bool:
    """May ``use`` write the bytes of the value it uses?"""
    op = use.operation
    if isinstance(op, InvokeOp):
        return use.index >= len(op.ins)
    written = writes_operand(op, use.index)
    if written is not None:
        return written
    if only_reads(op) or is_view_of_operand(op, use.index) or is_control_flow(op):
        return False
    effects = get_effects(op)
    if effects is None:
        return True
    return any(
        effect.kind == MemoryEffectKind.WRITE
        and (effect.value is None or effect.value is use.operation.operands[use.index])
        for effect in effects
    )


def region_index(op: Operation, nested: object) -> int:
    """Index of the region ``nested`` among ``op.regions`` (identity, not equality)."""
    for position, region in enumerate(op.regions):
        if region is nested:
            return position
    raise ValueError(f"region not found in {op.name}")
