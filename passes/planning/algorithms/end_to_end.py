"""End-to-end packing: no reuse, each buffer after the previous one.

TVM's storage coalescing, part 1: the members of a merged storage laid out
one after another, each at a multiple of its alignment. ``coalesce`` starts
from it and keeps a search's layout only when that is no bigger.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplan.passes.planning.model import Buffer, align_up


def end_to_end(buffers: Sequence[Buffer]) -> tuple[list[int], int]:
    """Each buffer after the previous one, at a multiple of its alignment:
    the offsets, in order, and the bytes they span."""
    offsets: list[int] = []
    top = 0
    for buffer in buffers:
        offset = align_up(top, buffer.alignment)
        offsets.append(offset)
        top = offset + buffer.size
    return offsets, top
