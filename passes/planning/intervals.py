"""Interval helpers shared by the validator and the greedy placers.

``PrefixMaxTree`` answers "which active items in slots ``[0, limit)`` have a
key above ``threshold``?" in ``O((k + 1) log n)`` for ``k`` answers. With slots
ordered by interval start and keys set to interval ends, that is exactly "which
active intervals intersect ``[lo, hi)``": the prefix holds the intervals that
start before ``hi``, the key test keeps those that end after ``lo``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

EMPTY = -(1 << 62)
"""Key of an inactive slot: below every threshold a caller can ask about."""


class PrefixMaxTree:
    """A max segment tree over ``n`` fixed slots; inactive slots hold ``EMPTY``."""

    __slots__ = ("_leaves", "_tree")

    def __init__(self, n: int) -> None:
        leaves = 1
        while leaves < max(n, 1):
            leaves *= 2
        self._leaves = leaves
        self._tree = [EMPTY] * (2 * leaves)

    def set(self, slot: int, key: int) -> None:
        """Activate ``slot`` with ``key`` (or update its key)."""
        tree = self._tree
        node = slot + self._leaves
        tree[node] = key
        node >>= 1
        while node:
            left = tree[2 * node]
            right = tree[2 * node + 1]
            best = left if left > right else right
            if tree[node] == best:
                break  # ancestors only depend on this value: nothing changes above
            tree[node] = best
            node >>= 1

    def clear(self, slot: int) -> None:
        """Deactivate ``slot``."""
        self.set(slot, EMPTY)

    def report(self, limit: int, threshold: int) -> list[int]:
        """Active slots ``< limit`` whose key is ``> threshold``, in slot order."""
        tree = self._tree
        leaves = self._leaves
        if limit <= 0 or tree[1] <= threshold:
            return []
        found: list[int] = []
        # Explicit stack of (node, first slot covered, slots covered).
        stack = [(1, 0, leaves)]
        while stack:
            node, first, width = stack.pop()
            if first >= limit or tree[node] <= threshold:
                continue
            if width == 1:
                found.append(first)
                continue
            half = width // 2
            stack.append((2 * node + 1, first + half, half))
            stack.append((2 * node, first, half))
        return found


class StartOrder:
    """Buffers ranked by lifetime start, to drive a ``PrefixMaxTree``.

    ``slot[i]`` is the rank of item ``i``; ``item_at[slot]`` inverts it;
    ``limit(end)`` counts the items starting before ``end``.
    """

    __slots__ = ("item_at", "slot", "_starts")

    def __init__(self, starts: Sequence[int]) -> None:
        self.item_at = sorted(range(len(starts)), key=starts.__getitem__)
        self.slot = [0] * len(starts)
        for rank, item in enumerate(self.item_at):
            self.slot[item] = rank
        self._starts = [starts[item] for item in self.item_at]

    def limit(self, end: int) -> int:
        """Number of items whose start is ``< end``."""
        return bisect_left(self._starts, end)
