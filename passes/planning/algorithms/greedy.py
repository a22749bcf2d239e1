"""Greedy placement in a fixed order, with TFLite-style gap filling.

``GreedyPlacer`` places buffers one at a time, in a given order, at the
lowest aligned offset where they fit among the already placed buffers they
conflict with (the lowest *gap*, not the top of the stack as TVM USMP's
``greedy_by_size`` does). A buffer that does not fit its first candidate
pool's size falls back to the next candidate. Pinned buffers are placed
first, where they are pinned.

Finding the conflicting placed buffers is a ``PrefixMaxTree`` query over the
buffers ranked by start time, so a placement costs O((k + 1) log n) for ``k``
time-overlapping neighbours instead of a scan of everything placed. Where
buffers meet many others in time (a mean of ``OCCUPANCY_MIN_DEGREE``: long
nested lifetimes, as training's activations, where ``k`` grows with ``n``),
an ``OccupancyTree`` of merged byte ranges per time segment gives the same
lowest gap in O(log^2 n) steps without listing the neighbours. Where every
lifetime is short (a CNN's activations), a scan of the start ranks a
neighbour can have (``_StartWindow``) lists them without walking the tree.

The orderings are TVM USMP's: ``greedy_by_size`` (size descending) and
``greedy_by_conflicts`` (number of time-overlapping buffers descending), both
with stable tie-breaks so the plan is a function of the problem alone.
``auto`` adds the left-edge order (start ascending) when every buffer has one
size: interval colouring's order, which meets the live-bytes bound there.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from memplan.passes.planning.algorithms.options import PlanOptions
from memplan.passes.planning.bounds import first_choice_bounds, lower_bound
from memplan.passes.planning.intervals import EMPTY, OccupancyTree, PrefixMaxTree, StartOrder
from memplan.passes.planning.model import CANDIDATE_FIELDS, Placement, Problem, Solution

OCCUPANCY_MIN_BUFFERS = 128
"""Below this many buffers the neighbour lists are short enough (``_dense``)."""
OCCUPANCY_MIN_DEGREE = 64
"""Mean lifetimes met per buffer from which ``OccupancyTree`` placement pays."""
WINDOW_MAX_BUFFERS = 32
"""Estimated buffers per start window up to which ``_StartWindow`` placement pays."""


def lowest_gap(neighbours: list[tuple[int, int]], size: int, alignment: int) -> int:
    """The lowest ``alignment``-multiple offset where ``size`` bytes overlap none of
    ``neighbours`` (``(low, high)`` byte ranges; sorted in place)."""
    neighbours.sort()
    offset = 0
    for low, high in neighbours:
        if low >= offset + size:
            break  # the gap below this neighbour fits
        if high > offset:
            offset = -(-high // alignment) * alignment
    return offset


@dataclass
class GreedyResult:
    """Offsets and pools (indices into the problem's pools; -1 = unplaced)."""

    offsets: list[int]
    pools: list[int]
    used: list[int]
    unplaced: list[int]

    def cost(self) -> tuple[int, int]:
        """Smaller is better: unplaced buffers first, then total bytes used."""
        return (len(self.unplaced), sum(self.used))


def _lowest_gap_among(
    placer: GreedyPlacer, offsets: list[int], index: int, others: list[int], alignment: int
) -> int:
    """The lowest gap for buffer ``index`` among the placed buffers ``others``
    that meet it in time (``scf.if`` branches that exclude it skipped)."""
    sizes = placer.sizes
    branched = placer.branch_maps[index] is not None
    neighbours: list[tuple[int, int]] = []
    for other in others:
        if branched and placer.exclusive(index, other):
            continue
        low = offsets[other]
        neighbours.append((low, low + sizes[other]))
    return lowest_gap(neighbours, sizes[index], alignment)


class _NeighbourLists:
    """One pool's placed buffers in a ``PrefixMaxTree`` over start order: the
    lowest gap from the list of time-overlapping neighbours (``scf.if``
    branches that exclude each other skipped)."""

    def __init__(self, placer: GreedyPlacer, offsets: list[int]) -> None:
        self.placer = placer
        self.offsets = offsets
        self.tree = PrefixMaxTree(placer.count)

    def lowest_gap(self, index: int, alignment: int) -> int:
        placer = self.placer
        order = placer.start_order
        slots = self.tree.report(order.limit(placer.ends[index]), placer.starts[index])
        others = [order.item_at[slot] for slot in slots]
        return _lowest_gap_among(placer, self.offsets, index, others, alignment)

    def add(self, index: int, offset: int) -> None:
        self.tree.set(self.placer.start_order.slot[index], self.placer.ends[index])


class _StartWindow:
    """One pool's placed buffers by start order, for short lifetimes: a
    buffer meeting ``[start, end)`` starts in ``(start - longest, end)``
    (``longest``: the longest lifetime of the problem), so scanning that
    window of start ranks lists its neighbours with no tree to walk
    (``GreedyPlacer._window``: where the window holds a few buffers)."""

    def __init__(self, placer: GreedyPlacer, offsets: list[int]) -> None:
        self.placer = placer
        self.offsets = offsets
        self.ends_by_slot = [EMPTY] * placer.count  # a placed buffer's end at its start rank
        self.longest = max((e - s for s, e in zip(placer.starts, placer.ends)), default=0)

    def lowest_gap(self, index: int, alignment: int) -> int:
        placer = self.placer
        order = placer.start_order
        start = placer.starts[index]
        ends_by_slot, item_at = self.ends_by_slot, order.item_at
        window = range(order.limit(start - self.longest + 1), order.limit(placer.ends[index]))
        others = [item_at[slot] for slot in window if ends_by_slot[slot] > start]
        return _lowest_gap_among(placer, self.offsets, index, others, alignment)

    def add(self, index: int, offset: int) -> None:
        self.ends_by_slot[self.placer.start_order.slot[index]] = self.placer.ends[index]


class _MergedRanges:
    """One pool's placed buffers in an ``OccupancyTree`` (``GreedyPlacer._dense``)."""

    def __init__(self, placer: GreedyPlacer) -> None:
        self.placer = placer
        self.tree = OccupancyTree(placer.starts, placer.ends)

    def lowest_gap(self, index: int, alignment: int) -> int:
        placer = self.placer
        return self.tree.lowest_gap(
            placer.starts[index], placer.ends[index], placer.sizes[index], alignment
        )

    def add(self, index: int, offset: int) -> None:
        placer = self.placer
        self.tree.add(
            placer.starts[index], placer.ends[index], offset, offset + placer.sizes[index]
        )


_Occupancy = _NeighbourLists | _StartWindow | _MergedRanges


_CHOICE_KEY = attrgetter(*CANDIDATE_FIELDS, "alignment")
"""What a buffer's candidate pools and its alignment in each depend on."""


class GreedyPlacer:
    """Precomputed facts about a problem, to place its buffers in any order fast."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        buffers = problem.buffers
        self.count = len(buffers)
        self.sizes = [b.size for b in buffers]
        self.starts = [b.start for b in buffers]
        self.ends = [b.end for b in buffers]
        pool_index = {pool.name: i for i, pool in enumerate(problem.pools)}
        self.capacities = [pool.size for pool in problem.pools]
        # Per buffer: (pool index, alignment in that pool), in priority order;
        # one (read-only) list per distinct key, as most buffers share one.
        keys = list(map(_CHOICE_KEY, buffers))
        lists = {
            key: [(pool_index[p.name], p.alignment_for(b)) for p in problem.candidate_pools(b)]
            for key, b in dict(zip(keys, buffers)).items()
        }
        self.candidates: list[list[tuple[int, int]]] = list(map(lists.__getitem__, keys))
        self.branch_maps: list[dict[int, int] | None] = [
            dict(b.branch) if b.branch else None for b in buffers
        ]
        self.pinned = [i for i, b in enumerate(buffers) if b.pinned_offset is not None]
        self.start_order = StartOrder(self.starts)
        self.by_occupancy = self._dense()
        self.by_window = not self.by_occupancy and self._window()

    def _dense(self) -> bool:
        """Place through an ``OccupancyTree`` (same plans): where a buffer
        meets many others in time, so that listing its neighbours, as the
        ``PrefixMaxTree`` query does, would cost more than the tree's
        O(log^2 n) steps. Only for sized buffers outside ``scf.if`` regions
        (a zero-size neighbour or an exclusive one needs the neighbour list)."""
        if self.count < OCCUPANCY_MIN_BUFFERS or any(self.branch_maps):
            return False
        if min(self.sizes) == 0:
            return False
        return sum(self.degrees()) >= OCCUPANCY_MIN_DEGREE * self.count

    def _window(self) -> bool:
        """Place through ``_StartWindow`` (same plans): where the window of
        start ranks it scans holds about ``WINDOW_MAX_BUFFERS`` buffers or
        fewer (short lifetimes, as a CNN's), estimated from the mean density
        of starts over time (the choice only changes the speed)."""
        if self.count < OCCUPANCY_MIN_BUFFERS:
            return False
        span = max(self.ends) - min(self.starts)
        longest = max(e - s for s, e in zip(self.starts, self.ends))
        mean_length = (sum(self.ends) - sum(self.starts)) / self.count
        return self.count * (longest + mean_length) <= WINDOW_MAX_BUFFERS * span

    def degrees(self) -> list[int]:
        """Per buffer, how many others its lifetime meets (two bisections each)."""
        sorted_starts = sorted(self.starts)
        sorted_ends = sorted(self.ends)
        return [
            bisect_left(sorted_starts, end) - bisect_right(sorted_ends, start) - 1
            for start, end in zip(self.starts, self.ends)
        ]

    def exclusive(self, first: int, second: int) -> bool:
        """Buffers ``first`` and ``second`` are in different regions of one ``scf.if``."""
        mine = self.branch_maps[first]
        theirs = self.branch_maps[second]
        if mine is None or theirs is None:
            return False
        return any(c in mine and mine[c] != r for c, r in theirs.items())

    def all_first_choice(self, pools: Sequence[int]) -> bool:
        """Every buffer sits in its first usable candidate (``pools[i]``: pool index).

        Then candidate priority prefers no other assignment.
        """
        return all(
            candidates and pools[i] == candidates[0][0]
            for i, candidates in enumerate(self.candidates)
        )

    def place(self, order: Sequence[int]) -> GreedyResult:
        """Place the buffers of ``order`` (indices; pinned ones are skipped) in turn."""
        count = self.count
        sizes = self.sizes
        capacities = self.capacities
        offsets = [-1] * count
        pools = [-1] * count
        used = [0] * len(capacities)
        occupancies: dict[int, _Occupancy] = {}
        unplaced: list[int] = []

        def occupancy_of(pool: int) -> _Occupancy:
            occupancy = occupancies.get(pool)
            if occupancy is None:
                occupancy = occupancies[pool] = (
                    _MergedRanges(self)
                    if self.by_occupancy
                    else _StartWindow(self, offsets)
                    if self.by_window
                    else _NeighbourLists(self, offsets)
                )
            return occupancy

        for index in self.pinned:
            candidates = self.candidates[index]
            if not candidates:
                unplaced.append(index)
                continue
            pool = candidates[0][0]
            offset = self.problem.buffers[index].pinned_offset
            assert offset is not None
            offsets[index] = offset
            pools[index] = pool
            used[pool] = max(used[pool], offset + sizes[index])
            occupancy_of(pool).add(index, offset)

        for index in order:
            if offsets[index] >= 0:
                continue
            size = sizes[index]
            for pool, alignment in self.candidates[index]:
                occupancy = occupancy_of(pool)
                offset = occupancy.lowest_gap(index, alignment)
                capacity = capacities[pool]
                if capacity is not None and offset + size > capacity:
                    continue  # fall back to the next candidate pool
                offsets[index] = offset
                pools[index] = pool
                if offset + size > used[pool]:
                    used[pool] = offset + size
                occupancy.add(index, offset)
                break
            else:
                unplaced.append(index)
        return GreedyResult(offsets, pools, used, unplaced)

    def solution(self, result: GreedyResult, algorithm: str) -> Solution:
        """Turn a placement into a ``Solution`` with an honest status."""
        names = [pool.name for pool in self.problem.pools]
        placements = {
            buffer.id: Placement(names[result.pools[i]], result.offsets[i])
            for i, buffer in enumerate(self.problem.buffers)
            if result.pools[i] >= 0
        }
        status = "feasible"
        stats: dict[str, float | int | str] = {"algorithm": algorithm}
        if result.unplaced:
            proof = infeasibility_proof(self.problem)
            if proof is None:
                status = "unknown"
            else:
                status, stats["proof"] = "infeasible", proof
        solution = Solution(placements, status, stats)
        if not result.unplaced and self.all_first_choice(result.pools):
            # Optimal: every buffer in its first candidate (priority prefers
            # no other pools) and every pool at the bound of its buffers.
            bounds = first_choice_bounds(self.problem)
            if all(used <= bounds[name] for used, name in zip(result.used, names)):
                solution.status = "optimal"
        return solution

    def size_order(self) -> list[int]:
        """Size descending; ties: longer lifetime, earlier start, input order."""
        sizes, starts, ends = self.sizes, self.starts, self.ends
        return sorted(
            range(self.count), key=lambda i: (-sizes[i], starts[i] - ends[i], starts[i], i)
        )

    def conflict_order(self) -> list[int]:
        """Time-overlap degree descending; ties: size descending, input order.

        The degree counts buffers whose lifetimes intersect (two bisections per
        buffer on sorted starts and ends), not subtracting ``scf.if`` exclusions.
        """
        degree = self.degrees()
        sizes = self.sizes
        return sorted(range(self.count), key=lambda i: (-degree[i], -sizes[i], i))

    def left_edge_order(self) -> list[int]:
        """Start ascending; ties: longer lifetime, input order.

        The left-edge order of interval colouring: when every buffer has one
        size that is a multiple of its alignment, each buffer meets only
        buffers live at its start, so the lowest gap is below the most
        buffers live at once and the plan meets the live-bytes bound.
        """
        starts, ends = self.starts, self.ends
        return sorted(range(self.count), key=lambda i: (starts[i], starts[i] - ends[i], i))


def infeasibility_proof(problem: Problem) -> str | None:
    """How no plan can exist, by a cheap proof, or None: ``no-pool`` (a
    buffer no pool accepts) or ``bound`` (a bounded pool whose lower bound,
    from the buffers that can only go there, is above its size, or a group
    of bounded pools linked by shared candidates whose live bytes exceed
    their sizes together). A heuristic that fails without such a proof
    reports ``unknown``."""
    if any(not problem.candidate_pools(b) for b in problem.buffers):
        return "no-pool"
    sizes = {p.name: p.size for p in problem.pools}
    for key, bound in lower_bound(problem).items():
        names = (key,) if isinstance(key, str) else key
        room = [sizes[name] for name in names]
        if all(size is not None for size in room) and bound > sum(
            size for size in room if size is not None
        ):
            return "bound"
    return None


def greedy_by_size(problem: Problem, options: PlanOptions | None = None) -> Solution:
    """Largest buffers first, each at the lowest gap that fits (TFLite/USMP)."""
    placer = GreedyPlacer(problem)
    return placer.solution(placer.place(placer.size_order()), "greedy-by-size")


def greedy_by_conflicts(problem: Problem, options: PlanOptions | None = None) -> Solution:
    """Most time-overlapping buffers first, each at the lowest gap that fits."""
    placer = GreedyPlacer(problem)
    return placer.solution(placer.place(placer.conflict_order()), "greedy-by-conflicts")
