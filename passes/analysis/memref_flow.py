"""Where a memref buffer flows in a function, and whether it can take a
static address: ``trace_flow`` (the memref form memplan imports and lowers to).

Shared by ``import-memref`` (which allocations can become storages) and
``lower-to-memref`` (which pinned storages flow out of their function).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator

from memplan.dialect.op_model import (
    frees_operands,
    is_sequential_loop,
    stores_operand,
    takes_address,
    underlying_root,
)
from memplan.dialect.regions import ancestor_in_region, reachable_blocks
from memplan.passes.analysis.aliasing import UseKind, classify_use


def is_memref_like(value: SSAValue) -> bool:
    """True for ranked and unranked memref values."""
    return isinstance(value.type, MemRefType | UnrankedMemRefType)


@dataclass
class ValueFlow:
    """Where a buffer flows within its function.

    ``aliases`` holds the buffer's values and every value that may share its
    memory (views, ``scf`` results and region arguments it is yielded into,
    branch block arguments, memref results of calls and unknown ops);
    ``deallocs`` the ``memref.dealloc`` ops of the buffer or of a view of it;
    ``returned`` whether an alias reaches ``func.return``; ``blockers`` why the
    buffer cannot take a static address (empty when it can).
    """

    aliases: list[SSAValue] = field(default_factory=list[SSAValue])
    deallocs: list[memref.DeallocOp] = field(default_factory=list[memref.DeallocOp])
    returned: bool = False
    blockers: list[str] = field(default_factory=list[str])


def _region_values(parent: Operation) -> Iterator[SSAValue]:
    """Memref results of ``parent`` and memref arguments of its regions' blocks."""
    yield from (r for r in parent.results if is_memref_like(r))
    for region in parent.regions:
        for block in region.blocks:
            yield from (a for a in block.args if is_memref_like(a))


def _takes_address(op: Operation) -> bool:
    """Ops that turn a memref into a raw address memplan cannot follow."""
    if takes_address(op):
        return True
    return any(r.type.name.startswith("llvm.") for r in op.results)


def _loop_carried(user: Operation, origin: Operation) -> str | None:
    """Does passing a value through ``user`` carry ``origin``'s buffer into
    the next run of the code that allocates it?"""
    for successor in user.successors:
        region = successor.parent
        assert region is not None
        anchor = ancestor_in_region(origin, region)
        anchor_block = None if anchor is None else anchor.parent_block()
        if anchor_block is not None and (
            successor is anchor_block or anchor_block in reachable_blocks(successor)
        ):
            return "carried around a control-flow cycle"
    parent = user.parent_op()
    if user.has_trait(IsTerminator) and parent is not None:
        if is_sequential_loop(parent) and parent.is_ancestor(origin):
            return f"carried out of an iteration of {parent.name}"
    return None


def trace_flow(buffers: Sequence[SSAValue], origin: Operation) -> ValueFlow:
    """Follow ``buffers`` (the values of one buffer, defined by ``origin``)
    through their function; see ``ValueFlow``.

    Aliases are those of the lifetime analysis (``passes.analysis.aliasing``).
    Where the analysis stops at an escape (a call or an unknown op returning
    memrefs, a terminator or branch it does not model), this keeps following
    the memref values that may hold the buffer, to see whether it leaves the
    function.
    """
    flow = ValueFlow()
    seen: set[SSAValue] = set()
    roots = set(buffers)

    def add(value: SSAValue) -> None:
        if value not in seen:
            seen.add(value)
            flow.aliases.append(value)

    for buffer in buffers:
        add(buffer)
    index = 0
    while index < len(flow.aliases):
        value = flow.aliases[index]
        index += 1
        for use in value.uses:
            user = use.operation
            if isinstance(user, memref.DeallocOp):
                if underlying_root(value) in roots:
                    flow.deallocs.append(user)
                else:
                    flow.blockers.append("freed through a value that may hold other buffers")
                continue
            if frees_operands(user):
                # Released by an op no storage kill can express.
                flow.blockers.append(f"freed by {user.name}")
                continue
            if isinstance(user, func.ReturnOp):
                flow.returned = True
                flow.blockers.append("returned from the function")
                continue
            if stores_operand(user, use.index):
                flow.blockers.append(f"stored into memory by {user.name}")
                continue
            if _takes_address(user):
                flow.blockers.append(f"its address is taken by {user.name}")
                continue
            kind, targets = classify_use(use)
            if kind is UseKind.PLAIN or kind is UseKind.KILL:
                continue
            carried = _loop_carried(user, origin)
            if carried is not None:
                flow.blockers.append(carried)
            if kind is UseKind.ALIAS:
                for target in targets:
                    add(target)
                continue
            # ESCAPE in the analysis' sense (live to the end of the function):
            # anything the op hands on may be the buffer (conservative).
            for successor in user.successors:
                for argument in successor.args:
                    if is_memref_like(argument):
                        add(argument)
            parent = user.parent_op()
            if user.has_trait(IsTerminator) and parent is not None:
                for carried_value in _region_values(parent):
                    add(carried_value)
            for result in user.results:
                if is_memref_like(result):
                    add(result)
            for carried_value in _region_values(user):
                add(carried_value)
    return flow
