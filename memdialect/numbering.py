"""Pre-order numbering of a function's operations.

Every pass that talks about "when" uses these numbers: op ``i`` of a
function is the ``i``-th op met by a pre-order walk of its body (an op comes
before the ops nested in its regions; regions, blocks and ops in order). The
``func.func`` itself is not numbered: its first body op is 0 and
``len(numbering)`` is one past the last op, the "end of the function".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, Region


@dataclass(frozen=True)
class BlockRange:
    """The numbers a block's ops take: ``[start, end)``."""

    start: int
    end: int


@dataclass
class OpNumbering:
    """Pre-order numbers of the ops under one function body (or any op).

    ``index[op]`` is the op's number; ``end[op]`` is one past the last number
    inside ``op`` (its subtree), so ``[index[op], end[op])`` covers ``op`` and
    everything nested in it. ``block_range[block]`` does the same for a block.
    Built in one walk (recursive over nested regions only), O(ops + blocks).
    """

    ops: list[Operation] = field(default_factory=list)
    index: dict[Operation, int] = field(default_factory=dict)
    end: dict[Operation, int] = field(default_factory=dict)
    block_range: dict[Block, BlockRange] = field(default_factory=dict)

    @staticmethod
    def of_region(region: Region) -> OpNumbering:
        """Number the ops of ``region`` (a function body), starting at 0."""
        numbering = OpNumbering()
        numbering._number_region(region)
        return numbering

    def _number_region(self, region: Region) -> None:
        # Recursive over regions only (their nesting depth), iterative over
        # the ops of a block; an op without regions ends right after itself.
        index, end, ops = self.index, self.end, self.ops
        for block in region.blocks:
            start = len(ops)
            for op in block.ops:
                number = len(ops)
                index[op] = number
                ops.append(op)
                if op.regions:
                    for nested in op.regions:
                        self._number_region(nested)
                    end[op] = len(ops)
                else:
                    end[op] = number + 1
            self.block_range[block] = BlockRange(start, len(ops))

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.ops)

    def __contains__(self, op: object) -> bool:
        return op in self.index
