"""Which pool each buffer goes to, following candidate priority exactly.

USMP's rule is that a buffer falls back to its next candidate pool only when
it does not fit the earlier one. A greedy placer applies it per buffer at the
moment it places it, so a buffer can fall back although a different
arrangement of the same pool would hold it (and every other buffer kept
there). ``assign_pools`` applies the rule with exact feasibility checks
instead:

* Buffers *arrive* at their first candidate pool; pinned buffers sit in
  theirs from the start. Pools are filled in problem (module) order, in
  rounds until no buffer is waiting (a buffer whose candidates list an
  earlier pool after a later one arrives there in the next round).
* An unbounded pool keeps every buffer that arrives. So does a bounded pool
  when it is the last candidate of every arriving buffer (there is nothing
  to choose; the offset search later decides whether they fit).
* Otherwise, when the buffers already in the pool and all arrivals fit
  together (decided by search, not by a heuristic), they all stay.
* If not, the pool keeps its buffers plus the arrivals it is the last
  candidate of (when even those do not fit, every other arrival moves on),
  then adds the other arrivals one at a time, each kept when it fits with
  everything kept so far: first those the greedy plan put there, then the
  rest, each group largest first (``GreedyPlacer.size_order``). The others
  move on to their next candidate.

So the buffers a bounded pool keeps form a maximal set: no buffer that moved
on fits there together with them. That is exact as long as no check ran out
of its budget (``Assignment.proven``): a check that runs out of nodes counts
as "does not fit", and once the assignment's ``Budget`` is spent a pool keeps
what the greedy plan kept there (or, when it runs out while the pool grows,
what it has kept so far) and the other arrivals move on unchecked. ``exact``
gives the assignment at most half of its budget.

A check tries, cheapest first: the greedy plan's offsets (when it put the
whole set in this pool); for one more buffer, the lowest gap at the kept
buffers' current offsets, then the live-bytes lower bound of the buffers it
conflicts with (a subset that does not fit proves "does not fit"); for a
whole set, greedy placement, then its lower bound; last,
``PoolSearch.decide`` at the pool's size with at most ``ASSIGNMENT_NODES``
search nodes. The budget is charged every search node, a greedy placement
``placement_cost`` nodes and a one-buffer check one node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memplan.passes.planning.algorithms.budget import Budget, placement_cost
from memplan.passes.planning.algorithms.greedy import (
    GreedyPlacer,
    GreedyResult,
    lowest_gap,
)
from memplan.passes.planning.algorithms.options import PlanOptions
from memplan.passes.planning.algorithms.pool_search import (
    PoolSearch,
    SearchStatus,
    takes_bytes,
)
from memplan.passes.planning.bounds import buffers_lower_bound
from memplan.passes.planning.model import Problem

ASSIGNMENT_NODES = 20000
"""Search nodes one feasibility check of the assignment may visit (~0.5 s)."""


@dataclass
class Assignment:
    """A pool per buffer, and offsets wherever a pool's packing is known.

    ``pools[i]`` is an index into the problem's pools, -1 when no pool
    accepts the buffer (a buffer's last candidate always keeps it).
    ``packings[p]``, when present, gives offsets for every buffer in pool
    ``p`` that fit its size without overlap (a valid incumbent).
    ``proven`` is false when some buffer moved on because a check ran out of
    its node budget or the assignment's budget was spent, rather than by proof.
    """

    pools: list[int]
    packings: dict[int, dict[int, int]] = field(default_factory=dict)
    proven: bool = True
    checks: int = 0
    nodes: int = 0


class PoolAssigner:
    """State of one run of ``assign_pools`` (see the module docstring)."""

    def __init__(
        self,
        placer: GreedyPlacer,
        heuristic: GreedyResult,
        options: PlanOptions,
        budget: Budget,
    ) -> None:
        self.placer = placer
        self.problem: Problem = placer.problem
        self.heuristic = heuristic
        self.options = options
        self.budget = budget
        self.size_rank = [0] * placer.count
        for position, index in enumerate(placer.size_order()):
            self.size_rank[index] = position
        self.assignment = Assignment([-1] * placer.count)

    def run(self) -> Assignment:
        """Fill the pools in order, in rounds, until no buffer is waiting."""
        placer = self.placer
        pools = self.problem.pools
        candidates = placer.candidates
        assignment = self.assignment
        self.members: list[list[int]] = [[] for _ in pools]
        pinned_offsets: list[dict[int, int]] = [{} for _ in pools]
        self.choice = [0] * placer.count  # position in the candidate list
        waiting: list[list[int]] = [[] for _ in pools]
        pinned = set(placer.pinned)
        for index in range(placer.count):
            if not candidates[index]:
                continue  # no pool accepts it
            pool = candidates[index][0][0]
            if index in pinned:
                offset = self.problem.buffers[index].pinned_offset
                assert offset is not None
                assignment.pools[index] = pool
                self.members[pool].append(index)
                pinned_offsets[pool][index] = offset
            else:
                waiting[pool].append(index)
        # Known valid offsets of each pool's members; None: not known.
        self.offsets: list[dict[int, int] | None] = list(pinned_offsets)
        while any(waiting):
            for pool in range(len(pools)):
                arrivals = waiting[pool]
                if not arrivals:
                    continue
                waiting[pool] = []
                for index in self._fill(pool, sorted(arrivals)):
                    # Only buffers with a later candidate ever move on.
                    self.choice[index] += 1
                    waiting[candidates[index][self.choice[index]][0]].append(index)
        for pool, known in enumerate(self.offsets):
            if known is not None and self.members[pool]:
                assignment.packings[pool] = known
        return assignment

    def _commit(self, pool: int, indices: Sequence[int], offsets: dict[int, int] | None) -> None:
        """Keep ``indices`` in ``pool``; ``offsets`` covers all its members, or is None."""
        for index in indices:
            self.assignment.pools[index] = pool
        self.members[pool].extend(indices)
        self.offsets[pool] = offsets

    def _fill(self, pool: int, arrivals: list[int]) -> list[int]:
        """Keep what fits of ``arrivals`` in ``pool``; return those that move on."""
        capacity = self.problem.pools[pool].size
        candidates = self.placer.candidates
        heuristic = self.heuristic
        movable = [i for i in arrivals if self.choice[i] + 1 < len(candidates[i])]
        if capacity is None or not movable:
            self._commit(pool, arrivals, None)
            return []
        movable_set = set(movable)
        last = [i for i in arrivals if i not in movable_set]
        members = self.members[pool]
        if self.budget.exhausted():
            # No budget left to check anything: keep what the greedy plan kept.
            self.assignment.proven = False
            kept = last + [i for i in movable if heuristic.pools[i] == pool]
            offsets = None
            if all(heuristic.pools[i] == pool for i in members + kept):
                offsets = {i: heuristic.offsets[i] for i in members + kept}
            self._commit(pool, kept, offsets)
            return [i for i in movable if heuristic.pools[i] != pool]
        status, offsets = self._fits(pool, members + arrivals)
        if status == SearchStatus.FOUND:
            self._commit(pool, arrivals, offsets)
            return []
        if status == SearchStatus.TIMED_OUT:
            self.assignment.proven = False
        base = members + last
        known = self.offsets[pool]
        if last or known is None:
            status, known = self._fits(pool, base)
            if status != SearchStatus.FOUND:
                # Even what must stay here does not fit: nothing else joins.
                if status == SearchStatus.TIMED_OUT:
                    self.assignment.proven = False
                self._commit(pool, last, None)
                return movable
        assert known is not None
        offsets = dict(known)
        rank = self.size_rank.__getitem__
        order = sorted((i for i in movable if heuristic.pools[i] == pool), key=rank) + sorted(
            (i for i in movable if heuristic.pools[i] != pool), key=rank
        )
        kept: list[int] = []
        moved: list[int] = []
        for position, index in enumerate(order):
            if self.budget.exhausted():
                self.assignment.proven = False
                moved.extend(order[position:])
                break
            placed = base + kept
            status, found = self._add(pool, index, placed, offsets)
            if status == SearchStatus.FOUND:
                assert found is not None
                offsets = found
                kept.append(index)
            else:
                if status == SearchStatus.TIMED_OUT:
                    self.assignment.proven = False
                moved.append(index)
        self._commit(pool, last + kept, offsets)
        return moved

    def _add(
        self, pool: int, index: int, placed: list[int], offsets: dict[int, int]
    ) -> tuple[SearchStatus, dict[int, int] | None]:
        """Does ``index`` fit ``pool`` with ``placed`` (valid at ``offsets``)?

        Returns offsets for all of them when it does (``offsets`` itself,
        extended, when the buffer fits a gap). Tries the lowest gap at the current offsets, else a lower bound on the
        buffers it conflicts with (a subset that does not fit proves the whole
        set does not), else a search of the whole set.
        """
        self.budget.charge(1)  # even a check that needs no search is work
        problem = self.problem
        target = problem.pools[pool]
        capacity = target.size
        assert capacity is not None
        buffers = problem.buffers
        buffer = buffers[index]
        touching = [j for j in placed if buffer.conflicts_with(buffers[j])]
        alignment = target.alignment_for(buffer)
        neighbours = [(offsets[j], offsets[j] + buffers[j].size) for j in touching]
        offset = lowest_gap(neighbours, buffer.size, alignment)
        if offset + buffer.size <= capacity:
            offsets[index] = offset
            return SearchStatus.FOUND, offsets
        local = [buffers[j] for j in touching] + [buffer]
        if buffers_lower_bound(local, target.alignment) > capacity:
            return SearchStatus.NOT_FOUND, None
        return self._search(pool, placed + [index])

    def _fits(self, pool: int, indices: list[int]) -> tuple[SearchStatus, dict[int, int] | None]:
        """Do ``indices`` fit ``pool``'s size together? (status, offsets when FOUND)."""
        heuristic = self.heuristic
        if all(heuristic.pools[i] == pool for i in indices):
            return SearchStatus.FOUND, {i: heuristic.offsets[i] for i in indices}
        problem = self.problem
        target = problem.pools[pool]
        capacity = target.size
        assert capacity is not None
        buffers = [problem.buffers[i] for i in indices]
        placed = _greedy_offsets(Problem(tuple(buffers), (target,)), self.budget)
        if placed is not None:
            return SearchStatus.FOUND, dict(zip(indices, placed))
        if buffers_lower_bound(buffers, target.alignment) > capacity:
            return SearchStatus.NOT_FOUND, None
        return self._search(pool, indices)

    def _search(self, pool: int, indices: list[int]) -> tuple[SearchStatus, dict[int, int] | None]:
        """``PoolSearch.decide`` at the pool's size, within the node budget."""
        problem = self.problem
        target = problem.pools[pool]
        capacity = target.size
        assert capacity is not None
        searched = takes_bytes(problem.buffers, indices)
        search = PoolSearch(
            [problem.buffers[i] for i in searched],
            [target.alignment_for(problem.buffers[i]) for i in searched],
            self.options.preorderings,
        )
        self.assignment.checks += 1
        status, found = search.decide(capacity, self.budget, ASSIGNMENT_NODES)
        self.assignment.nodes += search.visited
        if status != SearchStatus.FOUND:
            return status, None
        offsets = dict.fromkeys(indices, 0)  # zero-size buffers sit at 0
        offsets.update(zip(searched, found))
        return SearchStatus.FOUND, offsets


def _greedy_offsets(problem: Problem, budget: Budget) -> list[int] | None:
    """Offsets of the first greedy order that places everything, else None."""
    placer = GreedyPlacer(problem)
    for order in (placer.size_order(), placer.conflict_order()):
        budget.charge(placement_cost(placer.count))
        result = placer.place(order)
        if not result.unplaced:
            return result.offsets
    return None


def assign_pools(
    placer: GreedyPlacer, heuristic: GreedyResult, options: PlanOptions, budget: Budget
) -> Assignment:
    """A pool per buffer by candidate priority with exact fallback (module docstring).

    ``heuristic`` is the best greedy plan of ``placer``'s problem: it breaks
    ties and saves searches, never overrides the rule; the checks stop when
    ``budget`` is spent.
    """
    return PoolAssigner(placer, heuristic, options, budget).run()


def greedy_assignment(placer: GreedyPlacer, heuristic: GreedyResult) -> Assignment:
    """The greedy plan's pools; a buffer it left out goes to its first candidate."""
    pools = [
        heuristic.pools[i]
        if heuristic.pools[i] >= 0
        else (placer.candidates[i][0][0] if placer.candidates[i] else -1)
        for i in range(placer.count)
    ]
    return Assignment(pools, proven=False)
