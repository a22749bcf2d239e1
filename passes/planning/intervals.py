"""Interval helpers shared by the validator, the bounds and the placers.

``sweep_events`` orders lifetime starts and ends for a sweep over time;
``overlapping_live_pairs`` uses it to find the buffers that are live together
and share bytes at given offsets.

``PrefixMaxTree`` answers "which active items in slots ``[0, limit)`` have a
key above ``threshold``?" in ``O((k + 1) log n)`` for ``k`` answers. With slots
ordered by interval start and keys set to interval ends, that is exactly "which
active intervals intersect ``[lo, hi)``": the prefix holds the intervals that
start before ``hi``, the key test keeps those that end after ``lo``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from memplan.passes.planning.model import Buffer


def sweep_events(buffers: Iterable[Buffer]) -> list[tuple[int, int, int]]:
    """Sorted ``(time, kind, index)`` events: kind 1 a start, kind 0 an end.

    Ends sort before starts at equal times (lifetimes are half-open), so a
    sweep never counts a buffer live together with one ending where it starts.
    """
    events: list[tuple[int, int, int]] = []
    for index, buffer in enumerate(buffers):
        events.append((buffer.start, 1, index))
        events.append((buffer.end, 0, index))
    events.sort()
    return events


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
        """Active slots ``< limit`` whose key is ``> threshold`` (in no particular order)."""
        tree = self._tree
        leaves = self._leaves
        if limit <= 0 or tree[1] <= threshold:
            return []
        # The prefix [0, limit) is the union of O(log n) canonical subtrees,
        # collected bottom-up (the left sibling of each odd node on the path
        # from the prefix's end; a prefix has no left edge to walk); then
        # descend only into subtrees whose max key exceeds the threshold, each
        # of which holds at least one answer.
        pending: list[int] = []
        if limit >= leaves:
            pending.append(1)
        else:
            node = leaves + limit
            while node > 1:
                if node & 1 and tree[node - 1] > threshold:
                    pending.append(node - 1)
                node >>= 1
        found: list[int] = []
        while pending:
            node = pending.pop()
            if node >= leaves:
                found.append(node - leaves)
                continue
            left = 2 * node
            if tree[left] > threshold:
                pending.append(left)
            if tree[left + 1] > threshold:
                pending.append(left + 1)
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


def overlapping_live_pairs(
    buffers: Sequence[Buffer], offsets: Sequence[int]
) -> list[tuple[int, int]]:
    """Index pairs ``(earlier, later)`` of buffers that conflict (live together,
    not in different branches of one ``scf.if``) and share bytes at ``offsets``.

    A sweep over time with a ``PrefixMaxTree`` over the buffers ranked by
    offset standing in for an interval tree on addresses: O((n + k) log n)
    for ``k`` address-overlapping live pairs. Zero-size buffers occupy no
    bytes and overlap nothing. Pairs come in sweep order (by the later
    buffer's start).
    """
    sized = [i for i, buffer in enumerate(buffers) if buffer.size > 0]
    by_offset = sorted(sized, key=lambda i: (offsets[i], i))
    rank = {index: position for position, index in enumerate(by_offset)}
    ordered_offsets = [offsets[i] for i in by_offset]
    tree = PrefixMaxTree(len(sized))
    pairs: list[tuple[int, int]] = []
    for _, kind, position in sweep_events(buffers[i] for i in sized):
        index = sized[position]
        if not kind:
            tree.clear(rank[index])
            continue
        buffer = buffers[index]
        top = offsets[index] + buffer.size
        # Live buffers starting below our top and ending above our offset.
        for other_rank in tree.report(bisect_left(ordered_offsets, top), offsets[index]):
            other = by_offset[other_rank]
            if not buffer.exclusive_with(buffers[other]):
                pairs.append((other, index))
        tree.set(rank[index], top)
    return pairs


class OccupancyTree:
    """Bytes taken over time, for the lowest free gap in O(log^2 n) per step.

    A segment tree over the elementary time segments of given lifetimes
    (half-open ``[start, end)``): a placed byte range ``[low, high)`` is kept
    at the O(log n) nodes that split its lifetime (``cover``) and merged
    into the union of everything placed under each node and its ancestors
    on the way up (``union``). The bytes taken by lifetimes meeting
    ``[start, end)`` are then the unions of that range's nodes plus the
    covers of their ancestors: O(log n) lists of disjoint ranges, touching
    ranges merged, so a stack of buffers live together stays one range.
    ``lowest_gap`` finds the lowest aligned offset where ``size > 0`` bytes
    fit: the answer a sort of every time-overlapping neighbour gives, without
    visiting them (the greedy placer's quadratic case: long nested lifetimes
    each beside thousands of others).
    """

    __slots__ = ("_cover", "_index", "_leaves", "_union")

    def __init__(self, starts: Sequence[int], ends: Sequence[int]) -> None:
        times = sorted({*starts, *ends})
        self._index = {time: position for position, time in enumerate(times)}
        leaves = 1
        while leaves < max(len(times) - 1, 1):
            leaves *= 2
        self._leaves = leaves
        # Per node: (lows, highs) of disjoint, non-touching byte ranges, sorted.
        self._cover: dict[int, tuple[list[int], list[int]]] = {}
        self._union: dict[int, tuple[list[int], list[int]]] = {}

    def _nodes(self, start: int, end: int) -> tuple[list[int], list[int]]:
        """The nodes splitting ``[start, end)`` and their strict ancestors."""
        low = self._index[start] + self._leaves
        high = self._index[end] + self._leaves
        split: list[int] = []
        while low < high:
            if low & 1:
                split.append(low)
                low += 1
            if high & 1:
                high -= 1
                split.append(high)
            low >>= 1
            high >>= 1
        above: list[int] = []
        seen: set[int] = set()
        for node in split:
            node >>= 1
            while node and node not in seen:
                seen.add(node)
                above.append(node)
                node >>= 1
        return split, above

    def add(self, start: int, end: int, low: int, high: int) -> None:
        """Take bytes ``[low, high)`` (``low < high``) during ``[start, end)``."""
        split, above = self._nodes(start, end)
        cover, union = self._cover, self._union
        for node in split:
            _merge(cover.get(node) or cover.setdefault(node, ([], [])), low, high)
            _merge(union.get(node) or union.setdefault(node, ([], [])), low, high)
        for node in above:
            _merge(union.get(node) or union.setdefault(node, ([], [])), low, high)

    def lowest_gap(self, start: int, end: int, size: int, alignment: int) -> int:
        """The lowest ``alignment``-multiple offset where ``size`` (> 0) bytes
        are free during ``[start, end)``."""
        split, above = self._nodes(start, end)
        lists = [ranges for node in split if (ranges := self._union.get(node)) is not None]
        lists += [ranges for node in above if (ranges := self._cover.get(node)) is not None]
        offset = 0
        settled = 0  # lists in a row that did not move ``offset``
        position = 0
        while lists and settled < len(lists):
            lows, highs = lists[position]
            moved = False
            while True:
                # The first range ending above ``offset``: it blocks when it
                # starts below the candidate's top.
                k = bisect_right(highs, offset)
                if k < len(lows) and lows[k] < offset + size:
                    offset = -(-highs[k] // alignment) * alignment
                    moved = True
                else:
                    break
            settled = 1 if moved else settled + 1
            position = (position + 1) % len(lists)
        return offset


def _merge(ranges: tuple[list[int], list[int]], low: int, high: int) -> None:
    """Add ``[low, high)`` to sorted disjoint ``ranges``, merging what it touches."""
    lows, highs = ranges
    first = bisect_left(highs, low)  # the first range ending at or after ``low``
    last = bisect_right(lows, high)  # past the last range starting at or before ``high``
    if first == last:
        lows.insert(first, low)
        highs.insert(first, high)
    else:
        lows[first:last] = [min(low, lows[first])]
        highs[first:last] = [max(high, highs[last - 1])]
