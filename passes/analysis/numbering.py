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
    Built in one iterative walk, O(ops + blocks).
    """

    ops: list[Operation] = field(default_factory=list)
    index: dict[Operation, int] = field(default_factory=dict)
    end: dict[Operation, int] = field(default_factory=dict)
    block_range: dict[Block, BlockRange] = field(default_factory=dict)

    @staticmethod
    def of_region(region: Region) -> OpNumbering:
        """Number the ops of ``region`` (a function body), starting at 0."""
        numbering = OpNumbering()
        # (op, entered) pairs; an op is pushed again as entered=True so that
        # its subtree end is known when it is popped the second time.
        stack: list[tuple[Operation | Block, bool]] = [
            (block, False) for block in reversed(region.blocks)
        ]
        counter = 0
        block_start: dict[Block, int] = {}
        while stack:
            node, entered = stack.pop()
            if isinstance(node, Block):
                if entered:
                    numbering.block_range[node] = BlockRange(block_start[node], counter)
                    continue
                block_start[node] = counter
                stack.append((node, True))
                stack.extend((op, False) for op in reversed(list(node.ops)))
                continue
            if entered:
                numbering.end[node] = counter
                continue
            numbering.index[node] = counter
            numbering.ops.append(node)
            counter += 1
            stack.append((node, True))
            for nested in reversed(node.regions):
                stack.extend((block, False) for block in reversed(nested.blocks))
        return numbering

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.ops)

    def __contains__(self, op: object) -> bool:
        return op in self.index
