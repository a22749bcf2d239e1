"""How a use of a storage (or a value aliasing it) affects its lifetime.

``classify_use(use)`` sorts every use of an SSA value into one of four kinds:

- ``ALIAS``: the user makes new values that hold the same bytes, returned as
  ``targets`` and followed by the lifetime analysis. View-like ops and
  ``memory.alloc_tensor`` (``memdialect.aliases``, the one definition of
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

from memplan.dialect.aliases import is_view_of_operand
from memplan.dialect.ops import InvokeOp

EXCLUSIVE_OPS: frozenset[str] = frozenset({"scf.if", "scf.index_switch"})
"""Ops of which exactly one region runs: storages in two of them never conflict."""

POINTER_ESCAPE_OPS: frozenset[str] = frozenset(
    {"memref.extract_aligned_pointer_as_index", "memref.extract_strided_metadata"}
)

READ_ONLY_USERS: frozenset[str] = frozenset(
    {"memref.load", "memref.dim", "memref.rank", "memory.kill", "memory.alloc_tensor"}
)


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


def _successor_targets(op: Operation, index: int) -> tuple[SSAValue, ...] | None:
    """Block argument fed by operand ``index`` of a ``cf`` branch (None: not modelled)."""
    if op.name == "cf.br":
        return (op.successors[0].args[index],)
    if op.name == "cf.cond_br":
        if index == 0:
            return ()
        then_count = len(op.successors[0].args)
        if index - 1 < then_count:
            return (op.successors[0].args[index - 1],)
        return (op.successors[1].args[index - 1 - then_count],)
    if op.name == "cf.switch":
        if index == 0:
            return ()
        default_count = len(op.successors[0].args)
        position = index - 1
        if position < default_count:
            return (op.successors[0].args[position],)
        position -= default_count
        for case_block in op.successors[1:]:
            if position < len(case_block.args):
                return (case_block.args[position],)
            position -= len(case_block.args)
    return None


def _yield_targets(op: Operation, index: int) -> tuple[SSAValue, ...] | None:
    """Values an ``scf.yield`` / ``scf.condition`` operand flows to (None: not modelled)."""
    parent = op.parent_op()
    if parent is None:
        return None
    if op.name == "scf.condition" and parent.name == "scf.while":
        if index == 0:
            return ()
        return (parent.regions[1].blocks[0].args[index - 1], parent.results[index - 1])
    if op.name != "scf.yield":
        return None
    if parent.name == "scf.for":
        return (parent.regions[0].blocks[0].args[index + 1], parent.results[index])
    if parent.name == "scf.while":
        return (parent.regions[0].blocks[0].args[index],)
    if parent.name in ("scf.if", "scf.index_switch", "scf.execute_region"):
        return (parent.results[index],)
    return None


def classify_use(use: Use) -> tuple[UseKind, tuple[SSAValue, ...]]:
    """The kind of ``use`` and, for ``ALIAS``, the values that alias the used value."""
    op = use.operation
    index = use.index
    name = op.name
    if name == "memory.kill":
        return UseKind.KILL, ()
    if is_view_of_operand(op, index):
        return UseKind.ALIAS, tuple(op.results)
    if name in ("memory.invoke", "memory.alloc_tensor", "memref.load", "memref.copy"):
        return UseKind.PLAIN, ()
    if name == "func.return" or name in POINTER_ESCAPE_OPS:
        return UseKind.ESCAPE, ()
    if name == "memref.store":
        return (UseKind.ESCAPE if index == 0 else UseKind.PLAIN), ()
    if op.successors:
        targets = _successor_targets(op, index)
        if targets is None:
            return UseKind.ESCAPE, ()
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    if name == "scf.for":
        if index < 3:
            return UseKind.PLAIN, ()
        return UseKind.ALIAS, (op.regions[0].blocks[0].args[index - 2], op.results[index - 3])
    if name == "scf.while":
        return UseKind.ALIAS, (op.regions[0].blocks[0].args[index],)
    if name in ("scf.yield", "scf.condition"):
        targets = _yield_targets(op, index)
        if targets is None:
            return UseKind.ESCAPE, ()
        return (UseKind.ALIAS if targets else UseKind.PLAIN), targets
    if op.has_trait(IsTerminator):
        parent = op.parent_op()
        if parent is not None and parent.name != "func.func" and _may_hold_reference(parent):
            return UseKind.ESCAPE, ()
        return UseKind.PLAIN, ()
    if _may_hold_reference(op):
        return UseKind.ESCAPE, ()
    return UseKind.PLAIN, ()


def writes(use: Use) -> bool:
    """May ``use`` write the bytes of the value it uses?"""
    op = use.operation
    name = op.name
    if isinstance(op, InvokeOp):
        return use.index >= len(op.ins)
    if name in ("memref.store", "memref.copy"):
        return use.index == 1
    if name in READ_ONLY_USERS or is_view_of_operand(op, use.index):
        return False
    if name.startswith(("scf.", "cf.")) or name == "func.return":
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
