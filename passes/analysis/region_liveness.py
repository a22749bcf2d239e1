"""Backward liveness of SSA values over the blocks of one multi-block region.

The lifetime analysis (``function_lifetimes.py``) runs it on every scope
region with more than one block, to extend a value's interval over every
block it is live in or out of.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from memplan.dialect.numbering import OpNumbering
from memplan.dialect.ops import KillOp
from memplan.dialect.regions import ancestor_in_region


class RegionLiveness:
    """Backward liveness of SSA values over the blocks of one region.

    Values are tracked only if defined directly in the region (results of
    its ops, arguments of its blocks). A use inside a nested op counts at
    that op; a branch operand is a use at the terminator of the predecessor
    and a block argument is defined at its block's start (SSA phi
    semantics). The fixpoint runs on Python ints as bit vectors:
    ``live_in(B) = gen(B) | (live_out(B) & ~defs(B))``,
    ``live_out(B) = union of live_in(successors)``.
    """

    def __init__(self, region: Region, values: Sequence[SSAValue], numbering: OpNumbering) -> None:
        self.region = region
        self.blocks: list[Block] = list(region.blocks)
        self.bit: dict[SSAValue, int] = {value: i for i, value in enumerate(values)}
        block_index = {block: i for i, block in enumerate(self.blocks)}
        gen = [0] * len(self.blocks)
        defs = [0] * len(self.blocks)
        for value, bit in self.bit.items():
            definition = defining_block(value)
            defs[block_index[definition]] |= 1 << bit
            for use in value.uses:
                if isinstance(use.operation, KillOp):
                    continue  # a kill reads nothing: it never makes a value live
                anchor = ancestor_in_region(use.operation, region)
                assert anchor is not None, "uses stay within the defining region"
                block = anchor.parent_block()
                assert block is not None
                if block is not definition:
                    gen[block_index[block]] |= 1 << bit
        successors = [
            [block_index[s] for s in block.last_op.successors if s in block_index]
            if block.last_op is not None
            else []
            for block in self.blocks
        ]
        live_in = [0] * len(self.blocks)
        live_out = [0] * len(self.blocks)
        changed = True
        while changed:
            changed = False
            for i in reversed(range(len(self.blocks))):
                out = 0
                for successor in successors[i]:
                    out |= live_in[successor]
                inn = gen[i] | (out & ~defs[i])
                if out != live_out[i] or inn != live_in[i]:
                    live_out[i] = out
                    live_in[i] = inn
                    changed = True
        self.live_in: dict[Block, int] = dict(zip(self.blocks, live_in))
        self.live_out: dict[Block, int] = dict(zip(self.blocks, live_out))
        self.successors: dict[Block, list[Block]] = {
            block: [self.blocks[s] for s in successors[i]] for i, block in enumerate(self.blocks)
        }
        # Per value: the blocks it is live into, and the hull of the blocks it
        # is live into / out of (sizes sum to the liveness, not values x blocks).
        self.live_in_blocks: dict[int, list[Block]] = {}
        self.first_live_in: dict[int, int] = {}
        self.last_live_out: dict[int, int] = {}
        # Blocks in region order are numbered in ascending order: the first
        # block a value is live into has the lowest start.
        for block in self.blocks:
            bounds = numbering.block_range[block]
            for bit in _bits(self.live_in[block]):
                self.live_in_blocks.setdefault(bit, []).append(block)
                self.first_live_in.setdefault(bit, bounds.start)
            for bit in _bits(self.live_out[block]):
                self.last_live_out[bit] = max(self.last_live_out.get(bit, 0), bounds.end)

    def mask(self, values: Iterable[SSAValue]) -> int:
        """The bit vector of those ``values`` that are tracked here."""
        result = 0
        for value in values:
            bit = self.bit.get(value)
            if bit is not None:
                result |= 1 << bit
        return result


def _bits(vector: int) -> Iterable[int]:
    while vector:
        low = vector & -vector
        yield low.bit_length() - 1
        vector ^= low


def defining_block(value: SSAValue) -> Block:
    """The block that defines ``value`` (its block, for a block argument)."""
    if isinstance(value, BlockArgument):
        return value.block
    assert isinstance(value.owner, Operation)
    block = value.owner.parent_block()
    assert block is not None
    return block
