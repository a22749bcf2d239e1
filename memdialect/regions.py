"""Where ops sit in regions and CFGs: the structural queries the verifiers ask.

Used by the ``memory`` ops' verifiers (a kill inside a loop, a storage used
across an ``scf.if``) and by the analyses (kill order, lifetimes, memref flow).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region
from xdsl.traits import SymbolTable

from memplan.dialect.op_model import has_exclusive_regions


def symbol_table_of(op: Operation) -> Operation | None:
    """The innermost op above ``op`` that is a symbol table (a module), if any."""
    anchor = op.parent_op()
    while anchor is not None:
        # The usual ancestors by their class first: xDSL's trait lookup is slow.
        if type(anchor) is ModuleOp:
            return anchor
        if type(anchor) is not FuncOp and anchor.has_trait(SymbolTable):
            return anchor
        anchor = anchor.parent_op()
    return None


def region_index(op: Operation, nested: Region) -> int:
    """Index of the region ``nested`` among ``op.regions`` (identity, not equality)."""
    for position, region in enumerate(op.regions):
        if region is nested:
            return position
    raise ValueError(f"region not found in {op.name}")


def has_one_block(region: Region) -> bool:
    """True when ``region`` has exactly one block (O(1): ``len(region.blocks)`` walks them)."""
    first = region.first_block
    return first is not None and first.next_block is None


def ancestor_in_region(op: Operation, region: Region) -> Operation | None:
    """The ancestor of ``op`` (or ``op`` itself) whose parent region is ``region``."""
    current: Operation | None = op
    while current is not None and current.parent_region() is not region:
        current = current.parent_op()
    return current


def common_exclusive_op(a: Operation, b: Operation) -> Operation | None:
    """The innermost op with exclusive regions (``scf.if``) holding ``a`` and
    ``b`` in different regions."""
    ancestors: list[Operation] = []
    current = a.parent_op()
    while current is not None:
        ancestors.append(current)
        current = current.parent_op()
    for op in ancestors:
        if not has_exclusive_regions(op):
            continue
        region_a = next(r for r in op.regions if ancestor_in_region(a, r) is not None)
        region_b = [r for r in op.regions if ancestor_in_region(b, r) is not None]
        if region_b and region_b[0] is not region_a:
            return op
    return None


def reachable_blocks(start: Block, barrier: Block | None = None) -> dict[Block, None]:
    """Blocks a CFG path from the end of ``start`` reaches, in discovery order.

    ``start`` itself is included only on a cycle; paths do not continue past
    ``barrier``. An insertion-ordered dict: fast membership, stable iteration.
    """
    seen: dict[Block, None] = {}
    work = [start]
    while work:
        block = work.pop()
        terminator = block.last_op
        if terminator is None:
            continue
        for successor in terminator.successors:
            if successor not in seen:
                seen[successor] = None
                if successor is not barrier:
                    work.append(successor)
    return seen
