"""The search core of ``exact``: can a pool's buffers fit in ``C`` bytes?

MiniMalloc's algorithm, in pure Python; ``exact_search`` (the algorithm)
and ``pool_assignment`` (which pool each buffer takes) both build on it.

* **Decision** (``PoolSearch.decide``): can the pool's buffers fit in ``C``
  bytes? A depth-first search places one buffer per node at its *minimum
  offset* (the highest top among placed buffers it conflicts with, aligned):
  every packing slides down to such a canonical bottom-left form, and the
  search only builds canonical packings in order of non-decreasing offset
  (ties by a static preorder), so it is complete without trying free offsets.
* **Pruning**: the timeline is cut into *sections* (maximal sets of buffers
  live together). Each section keeps a floor (the top of what is placed in
  it, raised to the current offset and to the lowest minimum offset of its
  unplaced buffers) and the total size of its unplaced buffers;
  ``floor + total > C`` anywhere fails the node. Most candidates fail that
  test before any state changes: a candidate at ``offset`` must span every
  section where ``offset + total > C`` (a range, found once per offset).
  Unplaced buffers whose minimum offset already overflows fail the
  node at once. *Dominance*: no
  buffer is placed at or above the lowest top an unplaced buffer could reach
  (that packing leaves a hole another buffer would fill). *Hatless*: when a
  buffer with no unplaced conflicting buffer fails, its siblings fail too.
* **Decomposition**: when no unplaced buffer crosses between two adjacent
  sections, the two sides are solved as independent subproblems.
* **Portfolio**: one search per static preorder
  (``PlanOptions.preorderings``), each with state of its own; they take
  turns, each resumed where it paused for a slice of nodes that doubles
  each round, until one finishes. Resuming instead of restarting (as
  MiniMalloc does) means no node is visited twice: the portfolio costs at
  most the winner's nodes times the number of preorders, and less when the
  winner comes first.
* **Restarts** (``Restarts``): a decision by short searches in the
  portfolio's preorders, from the second round on lightly shuffled (seeded),
  their lengths following Luby's sequence; ``exact``'s feasibility race uses
  it at a capacity above the bound.
* **Minimisation**: the heuristic peak is the first upper bound. A decision
  at the lower bound comes first (often reachable, e.g. when the live bytes
  pack perfectly); then node-budgeted decisions walk down from the best peak
  (galloping strides, then single steps past capacities that time out), the
  budget doubling per pass, until the peak is proven minimal (a capacity one
  step below it is infeasible) or the work budget is spent.

``scf.if`` exclusivity: minimum offsets only follow conflicting buffers; a
section's total counts a buffer inside an ``scf.if`` region only where no
other member of the section sits in a different region of the same if, so
every total stays the size of a set of pairwise conflicting buffers.
"""

from __future__ import annotations

import copy
import random
import sys
import time
from bisect import bisect_left
from collections.abc import Generator, Sequence
from enum import Enum
from itertools import compress, count, repeat
from math import gcd
from operator import add, gt, sub

from memplan.passes.planning.algorithms.budget import Budget
from memplan.passes.planning.intervals import sweep_events
from memplan.passes.planning.model import (
    Buffer,
)


class SearchStatus(Enum):
    """How a search ended."""

    FOUND = "found"
    NOT_FOUND = "not found"
    TIMED_OUT = "timed out"


_PLACED = 1 << 62  # minimum offset recorded for placed buffers: above any floor


class SearchTimeout(Exception):
    """Raised internally when the node budget or the deadline runs out mid-search."""


class PoolSearch:
    """Offset search for the buffers of one pool (indices are local, 0..m-1)."""

    def __init__(
        self,
        buffers: Sequence[Buffer],
        alignments: Sequence[int],
        preorderings: Sequence[str],
    ) -> None:
        self.buffers = list(buffers)
        count = len(buffers)
        self.count = count
        self.sizes = [b.size for b in buffers]
        self.alignments = list(alignments)
        self.pinned = [b.pinned_offset for b in buffers]
        self.has_pins = any(p is not None for p in self.pinned)
        self.unaligned = all(a == 1 for a in self.alignments)
        self.preorderings = list(preorderings) or ["WAT"]
        self.heuristic = self.preorderings[0]
        # A restart's seeded shuffle of the preorder (``Restarts``), else None.
        self.jitter: random.Random | None = None
        self.conflicts = self._conflicts()
        self._sections()
        self._section_weights()
        # Per buffer: the largest conflict, and the sections its conflicts span.
        self.largest_conflict = [
            max(map(self.sizes.__getitem__, others), default=0) for others in self.conflicts
        ]
        self.conflict_spans = [
            (
                min(map(self.first_section.__getitem__, others), default=0),
                max(map(self.end_section.__getitem__, others), default=0),
            )
            for others in self.conflicts
        ]
        self.rank = [0] * self.count
        self.nodes = 0
        self.visited = 0
        self.node_budget = 0
        self.deadline: float | None = None
        self.capacity = 0

    def _conflicts(self) -> list[list[int]]:
        """Conflict lists by a sweep over time (time overlap minus exclusivity)."""
        buffers = self.buffers
        conflicts: list[list[int]] = [[] for _ in buffers]
        order = sorted(range(self.count), key=lambda i: (buffers[i].start, i))
        active: list[int] = []
        for index in order:
            start = buffers[index].start
            active = [j for j in active if buffers[j].end > start]
            me = buffers[index]
            for j in active:
                if me.branch and buffers[j].branch and me.exclusive_with(buffers[j]):
                    continue
                conflicts[index].append(j)
                conflicts[j].append(index)
            active.append(index)
        return conflicts

    def _sections(self) -> None:
        """Maximal cliques of the interval graph, each buffer's section range, cuts."""
        buffers = self.buffers
        events = sweep_events(buffers)
        sections: list[list[int]] = []
        active: set[int] = set()
        pending = False  # a buffer started since the last section was closed
        first = [0] * self.count
        last = [0] * self.count
        for _, kind, index in events:
            if kind:
                active.add(index)
                first[index] = len(sections)
                pending = True
            else:
                if pending:
                    sections.append(sorted(active))
                    pending = False
                active.discard(index)
                last[index] = len(sections)
        self.section_members = sections
        self.first_section = first
        self.end_section = last
        cuts = [0] * max(len(sections) - 1, 0)
        for index in range(self.count):
            for s in range(first[index], last[index] - 1):
                cuts[s] += 1
        self.initial_cuts = cuts

    def _section_weights(self) -> None:
        """How much of each buffer's size counts in each section's total.

        A section total must be the size of a set of pairwise *conflicting*
        buffers. Where no two members of a section sit in different regions
        of one ``scf.if`` (the usual case: regions are numbered one after the
        other), every member counts; elsewhere only members outside any region
        do. ``plain_sizes[i]`` is buffer i's weight when it is the same in all
        its sections, else ``weights[i]`` lists them per section.
        """
        uniform = []
        for members in self.section_members:
            seen: dict[int, int] = {}
            clash = False
            for i in members:
                for choice, region in self.buffers[i].branch:
                    if seen.setdefault(choice, region) != region:
                        clash = True
                        break
                if clash:
                    break
            uniform.append(not clash)
        self.plain_sizes: list[int] = []
        self.weights: list[list[int] | None] = []
        self.max_weights: list[int] = []
        for i, buffer in enumerate(self.buffers):
            own = uniform[self.first_section[i] : self.end_section[i]]
            if not buffer.branch or all(own):
                self.plain_sizes.append(buffer.size)
                self.weights.append(None)
            elif not any(own):
                self.plain_sizes.append(0)
                self.weights.append(None)
            else:
                self.plain_sizes.append(0)
                self.weights.append([buffer.size if u else 0 for u in own])
            self.max_weights.append(buffer.size if (not buffer.branch or any(own)) else 0)

    # --- search state ---------------------------------------------------------

    def _reset(self, capacity: int) -> None:
        self.capacity = capacity
        self.offsets = [-1] * self.count
        self.solution = [-1] * self.count
        self.min_offsets = [0 if p is None else p for p in self.pinned]
        self.floors = [0] * len(self.section_members)
        totals = [0] * len(self.section_members)
        for s, members in enumerate(self.section_members):
            totals[s] = sum(self.plain_sizes[i] for i in members)
        for i, weights in enumerate(self.weights):
            if weights is not None:
                first = self.first_section[i]
                totals[first : first + len(weights)] = list(
                    map(add, totals[first : first + len(weights)], weights)
                )
        self.totals = totals
        self.cuts = list(self.initial_cuts)
        # Per section, a member whose minimum offset was lowest when last seen.
        self.witness = [members[0] for members in self.section_members]

    def _preorder(self, members: list[int], heuristic: str) -> list[int]:
        """Sort ``members`` by a MiniMalloc key string, largest first, ties by index."""
        buffers = self.buffers
        totals = self.totals
        first, last = self.first_section, self.end_section

        def key(i: int) -> tuple[int, ...]:
            b = buffers[i]
            width = b.end - b.start
            fields = []
            for letter in heuristic:
                if letter == "W":
                    fields.append(-width)
                elif letter == "A":
                    fields.append(-width * b.size)
                elif letter == "T":
                    fields.append(-max(totals[first[i] : last[i]], default=0))
                elif letter == "Z":
                    fields.append(-b.size)
                elif letter == "C":
                    fields.append(first[i] - last[i])
                elif letter == "O":
                    fields.append(-len(self.conflicts[i]))
                elif letter == "L":
                    fields.append(-b.start)
                elif letter == "U":
                    fields.append(-b.end)
            fields.append(i)
            return tuple(fields)

        ordered = sorted(members, key=key)
        jitter = self.jitter
        if jitter is None:
            return ordered
        # Each buffer moves by about half a position: neighbours in the
        # preorder swap now and then, the preorder's shape stays.
        shifted = [position + jitter.gauss(0.0, JITTER) for position in range(len(ordered))]
        return [ordered[k] for k in sorted(range(len(ordered)), key=shifted.__getitem__)]

    def decide(
        self, capacity: int, budget: Budget | None = None, max_nodes: int | None = None
    ) -> tuple[SearchStatus, list[int]]:
        """Search offsets within ``capacity``: (FOUND | NOT_FOUND | TIMED_OUT, offsets).

        ``TIMED_OUT`` when the search has visited ``max_nodes`` nodes or
        ``budget``'s nodes are spent (or its opt-in deadline passed); the
        nodes visited are charged to ``budget``. Without either limit the
        search runs to the end.
        """
        return self.start(capacity).advance(budget, max_nodes)

    def start(self, capacity: int) -> Decision:
        """A decision at ``capacity`` that ``Decision.advance`` runs in steps,
        each resumed where the last one paused (no node is visited twice)."""
        return Decision(self, capacity)

    def restarts(self, capacity: int, unit: int, seed: int) -> Restarts:
        """A decision at ``capacity`` by restarted searches (see ``Restarts``)."""
        return Restarts(self, capacity, unit, seed)

    def _run(
        self,
        heuristic: str,
        partitions: list[tuple[list[int], int, int]],
        jitter: random.Random | None = None,
        capacity: int | None = None,
    ) -> tuple[PoolSearch, Generator[None, None, SearchStatus]]:
        """A search in ``heuristic``'s preorder with state of its own (a
        copy of this search, reset), and its steps: it pauses each time its
        ``nodes`` run out and returns its status."""
        run = copy.copy(self)
        run._reset(self.capacity if capacity is None else capacity)
        run.node_budget = sys.maxsize  # the decision pauses it by ``nodes``
        run.rank = [0] * self.count
        run.visited = 0
        run.heuristic = heuristic
        run.jitter = jitter

        def steps() -> Generator[None, None, SearchStatus]:
            for members, low, high in partitions:
                status = yield from run._sub_solve(members, low, high)
                if status != SearchStatus.FOUND:
                    return status
            return SearchStatus.FOUND

        return run, steps()

    def _sub_solve(
        self, members: list[int], low: int, high: int
    ) -> Generator[None, None, SearchStatus]:
        """Search one independent partition in the current heuristic's preorder."""
        ordering = self._preorder(members, self.heuristic)
        rank = self.rank
        # Ranks are per partition: restore the enclosing partition's afterwards.
        saved = [rank[i] for i in ordering]
        for position, index in enumerate(ordering):
            rank[index] = position
        try:
            return (yield from self._search(ordering, low, high, 0, 0))
        finally:
            for index, old in zip(ordering, saved):
                rank[index] = old

    def _search(
        self,
        unplaced: list[int],
        low: int,
        high: int,
        min_offset: int,
        min_rank: int,
    ) -> Generator[None, None, SearchStatus]:
        """One node: try each unplaced buffer of this partition at its minimum offset.

        ``unplaced`` holds the partition's unplaced buffers in preorder
        (rank) order; buffers go in order of (minimum offset, rank), never
        below ``(min_offset, min_rank)``, the position of the previous
        placement.
        """
        if not unplaced:
            return SearchStatus.FOUND
        self.nodes -= 1
        if self.nodes < 0:
            yield  # this slice is used up: the portfolio resumes it later
        self.visited += 1
        # The clock (opt-in) costs ~0.1 us, a node at least ~20 us: check every node.
        if self.visited > self.node_budget or (
            self.deadline is not None and time.perf_counter() > self.deadline
        ):
            raise SearchTimeout
        offsets = self.offsets
        min_offsets = self.min_offsets
        sizes = self.sizes
        rank_of = self.rank
        # Candidates in order of (minimum offset, rank): ``unplaced`` is in
        # rank order and the sort is stable.
        candidates = sorted(unplaced, key=min_offsets.__getitem__)
        start = bisect_left(candidates, min_offset, key=min_offsets.__getitem__)
        # Dominance: nothing goes at or above the lowest top an unplaced
        # buffer can reach. Only buffers sorted before a candidate can reach
        # below it: a running minimum, seeded by the ones below ``start``.
        below = candidates[:start]
        min_height = min(
            map(add, map(min_offsets.__getitem__, below), map(sizes.__getitem__, below)),
            default=_PLACED,
        )
        max_plain = -1  # built on first use
        capacity = self.capacity
        pinned = self.pinned
        floors = self.floors
        totals = self.totals
        plain_sizes = self.plain_sizes
        section_weights = self.weights
        first_section = self.first_section
        end_section = self.end_section
        solution = self.solution
        # Every section already satisfies floor + total <= capacity (checked
        # when its floor or total last changed). A candidate at ``offset`` can
        # only keep offset + total <= capacity in the *critical* sections
        # (total > capacity - offset) by covering all of them; they form a
        # range [critical_low, critical_high], found once per offset.
        part_totals = totals[low:high]
        width = high - low
        max_total = max(part_totals)
        critical_offset = -1
        critical_low = width
        critical_high = -1
        for index in candidates[start:]:
            offset = min_offsets[index]
            if offset >= min_height:
                break
            size = sizes[index]
            top = offset + size
            if top < min_height:
                min_height = top
            if offset + max_total > capacity:
                if max_plain < 0:
                    max_plain = max(map(self.max_weights.__getitem__, unplaced))
                if offset + max_total - max_plain > capacity:
                    break  # every later candidate sits at least this high
            rank = rank_of[index]
            if offset == min_offset and rank < min_rank:
                continue
            first = first_section[index]
            last = end_section[index]
            inner_low = first - low
            inner_high = last - low
            if offset != critical_offset:
                critical_offset = offset
                threshold = capacity - offset
                if max_total > threshold:
                    above = repeat(threshold)
                    critical_low = next(compress(count(), map(gt, part_totals, above)))
                    critical_high = (
                        width - 1 - next(compress(count(), map(gt, reversed(part_totals), above)))
                    )
                else:
                    critical_low = width
            if critical_low < width and (inner_low > critical_low or inner_high <= critical_high):
                continue
            if pinned[index] is not None and offset != pinned[index]:
                continue
            plain = plain_sizes[index]
            weights = section_weights[index]
            # Own sections: floors rise to this top, totals lose its size.
            if weights is None:
                inner_value = max(map(add, floors[first:last], totals[first:last]))
                raised = top + max(part_totals[inner_low:inner_high])
                if (inner_value if inner_value > raised else raised) - plain > capacity:
                    continue
            elif (
                max(
                    map(
                        add,
                        map(max, floors[first:last], repeat(top)),
                        map(sub, totals[first:last], weights),
                    )
                )
                > capacity
            ):
                continue
            offsets[index] = offset
            solution[index] = offset
            lifted, lifted_from, lifted_to, hatless, failed = self._lift_conflicts(index, top)
            status = SearchStatus.NOT_FOUND
            if not failed:
                # A placed buffer no longer bounds any section's floor from below.
                own_min_offset = min_offsets[index]
                min_offsets[index] = _PLACED
                # Sections of this buffer: raise floors, drop its size from totals.
                saved_floors = floors[first:last]
                floors[first:last] = [f if f > top else top for f in saved_floors]
                if plain:
                    totals[first:last] = [t - plain for t in totals[first:last]]
                elif weights is not None:
                    totals[first:last] = list(map(sub, totals[first:last], weights))
                # Unallocated floor: a section's floor is at least the lowest
                # minimum offset of its unplaced buffers.
                raised_floors: list[int] = []
                if lifted:
                    failed = self._raise_floors(index, lifted_to, raised_floors)
                if not failed:
                    position = unplaced.index(index)
                    status = yield from self._descend(
                        unplaced[:position] + unplaced[position + 1 :],
                        low,
                        high,
                        offset,
                        rank,
                        first,
                        last,
                    )
                _undo(floors, raised_floors)
                floors[first:last] = saved_floors
                if plain:
                    totals[first:last] = [t + plain for t in totals[first:last]]
                elif weights is not None:
                    totals[first:last] = list(map(add, totals[first:last], weights))
                min_offsets[index] = own_min_offset
            _assign(min_offsets, lifted, lifted_from)
            offsets[index] = -1
            if status != SearchStatus.NOT_FOUND:
                return status
            if hatless:
                break  # nothing rests on it: its siblings fail the same way
        return SearchStatus.NOT_FOUND

    def _lift_conflicts(self, index: int, top: int) -> tuple[list[int], list[int], int, bool, bool]:
        """Raise the minimum offsets of ``index``'s unplaced conflicts to ``top``.

        Returns the lifted buffers and their old minimum offsets (the undo
        log), the highest new minimum offset (``top`` aligned up), whether
        no unplaced buffer conflicts with ``index`` (nothing rests on it),
        and whether a lifted buffer no longer fits (then nothing is changed).
        """
        min_offsets = self.min_offsets
        conflicts = self.conflicts[index]
        # Placed buffers hold _PLACED, above any top: only unplaced ones lift.
        lifted = [other for other in conflicts if min_offsets[other] < top]
        if not lifted:
            hatless = min(map(min_offsets.__getitem__, conflicts), default=_PLACED) == _PLACED
            return lifted, lifted, top, hatless, False
        capacity = self.capacity
        sizes = self.sizes
        if self.unaligned:
            # The largest conflict bounds the check; most often it fits.
            if top + self.largest_conflict[index] > capacity and (
                top + max(map(sizes.__getitem__, lifted)) > capacity
            ):
                return [], [], top, False, True
            new = [top] * len(lifted)
        else:
            new = [
                top if alignment == 1 else -(-top // alignment) * alignment
                for alignment in map(self.alignments.__getitem__, lifted)
            ]
            if max(map(add, new, map(sizes.__getitem__, lifted))) > capacity:
                return [], [], top, False, True
        if self.has_pins:
            pinned = self.pinned
            for other, offset in zip(lifted, new):
                pinned_offset = pinned[other]
                if pinned_offset is not None and offset > pinned_offset:
                    return [], [], top, False, True
        old = list(map(min_offsets.__getitem__, lifted))
        _assign(min_offsets, lifted, new)
        return lifted, old, max(new), False, False

    def _raise_floors(self, index: int, lifted_to: int, raised_floors: list[int]) -> bool:
        """Raise section floors to the lowest minimum offset of their unplaced buffers.

        Only the sections spanned by the conflicts of ``index`` (the buffers
        just pushed up, to at most ``lifted_to``) can change. The new floor
        is at most ``lifted_to``: where even that plus the section's total fits, no later
        check could fail on the raised floor (totals only shrink), so the
        exact minimum is only computed where it can prune. Appends
        ``(section, old floor)`` pairs to ``raised_floors``; True when a
        section no longer fits.
        """
        min_offsets = self.min_offsets
        floors = self.floors
        totals = self.totals
        witness = self.witness
        members_of = self.section_members
        capacity = self.capacity
        # A superset of the sections is fine: the minimum over unplaced
        # members is a valid floor anywhere.
        span_low, span_high = self.conflict_spans[index]
        highest = capacity - lifted_to
        for section in compress(
            range(span_low, span_high),
            map(gt, totals[span_low:span_high], repeat(highest)),
        ):
            # A remembered member still at or below the floor proves the
            # minimum cannot exceed it: skip the scan.
            if min_offsets[witness[section]] <= floors[section]:
                continue
            members = members_of[section]
            values = list(map(min_offsets.__getitem__, members))
            lowest = min(values)
            witness[section] = members[values.index(lowest)]
            if lowest > floors[section]:
                raised_floors.append(section)
                raised_floors.append(floors[section])
                floors[section] = lowest
                if lowest + totals[section] > capacity:
                    return True
        return False

    def _descend(
        self,
        unplaced: list[int],
        low: int,
        high: int,
        offset: int,
        rank: int,
        first: int,
        last: int,
    ) -> Generator[None, None, SearchStatus]:
        """Recurse after placing a buffer spanning sections ``[first, last)``.

        Where that buffer was the last one crossing between two sections, the
        partition splits there and each side is solved on its own.
        """
        cuts = self.cuts
        cut_points: list[int] = []
        for s in range(first, last - 1):
            cuts[s] -= 1
            if cuts[s] == 0:
                cut_points.append(s + 1)
        try:
            if not cut_points:
                return (yield from self._search(unplaced, low, high, offset, rank))
            first_section = self.first_section
            end_section = self.end_section
            bounds = [low] + cut_points + [high]
            for part_low, part_high in zip(bounds, bounds[1:]):
                members = [
                    i
                    for i in unplaced
                    if first_section[i] < part_high and end_section[i] > part_low
                ]
                if not members:
                    continue
                status = yield from self._sub_solve(members, part_low, part_high)
                if status != SearchStatus.FOUND:
                    return status
            return SearchStatus.FOUND
        finally:
            for s in range(first, last - 1):
                cuts[s] += 1


class Decision:
    """One decision of ``PoolSearch``: can its buffers fit in ``capacity`` bytes?

    The portfolio of preorder searches (``PlanOptions.preorderings``), each
    with state of its own, takes turns for slices of nodes that double each
    round. ``advance`` runs it for a number of nodes and pauses it, keeping
    every search where it stopped: several decisions (say, at the lower bound
    and at a capacity above it) can share a budget in turns, and the total
    work is the sum of the work each one did, never repeated.
    """

    def __init__(self, search: PoolSearch, capacity: int) -> None:
        self.search = search
        self.capacity = capacity
        self.result: tuple[SearchStatus, list[int]] | None = None
        search._reset(capacity)
        if not search.count:
            self.result = (SearchStatus.FOUND, [])
            return
        if (
            any(
                size > capacity or (p is not None and p + size > capacity)
                for size, p in zip(search.sizes, search.pinned)
            )
            or max(search.totals, default=0) > capacity
        ):
            # A buffer, or the live bytes at some time, exceed the capacity.
            self.result = (SearchStatus.NOT_FOUND, [])
            return
        # Partitions: maximal runs of sections with no buffer crossing between them.
        partitions: list[tuple[list[int], int, int]] = []
        self.partitions = partitions
        first = 0
        for s, cut in enumerate(search.cuts + [0]):
            if cut == 0:
                members = sorted(
                    {i for t in range(first, s + 1) for i in search.section_members[t]}
                )
                partitions.append((members, first, s + 1))
                first = s + 1
        self.runs = [search._run(heuristic, partitions) for heuristic in search.preorderings]
        self.started = [False] * len(self.runs)
        self.round_limit = max(search.count, 1)
        self.turn = 0
        self.slice_left = 0  # nodes left in the current run's slice
        self.visited = 0

    def _select(self) -> int:
        """The run to step next, its slice (``slice_left``) set: round robin
        over the preorders, the slices doubling every round."""
        if self.slice_left <= 0:
            if self.turn == 0:
                self.round_limit *= 2
            self.slice_left = self.round_limit
        return self.turn

    def _spent(self, used: int) -> None:
        """``used`` nodes of the current slice are gone."""
        self.slice_left -= used
        if self.slice_left <= 0:
            self.turn = (self.turn + 1) % len(self.runs)

    def advance(
        self, budget: Budget | None = None, max_nodes: int | None = None
    ) -> tuple[SearchStatus, list[int]]:
        """Run for at most ``max_nodes`` more nodes and what ``budget`` has
        left (charged to it); ``TIMED_OUT`` when they are spent before the
        decision (then a later call resumes it), or the opt-in deadline passed
        (then it is over)."""
        if self.result is not None:
            return self.result
        search = self.search
        allowed = sys.maxsize if max_nodes is None else max_nodes
        # Whether the whole budget, not just this step's share, bounds the search.
        budget_bound = budget is not None and budget.left() <= allowed
        if budget is not None:
            allowed = min(allowed, budget.left())
        deadline = budget.deadline if budget is not None else None
        spent = 0
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, 4 * search.count + 1000))
        try:
            while spent < allowed:
                index = self._select()
                run, steps = self.runs[index]
                give = min(self.slice_left, allowed - spent)
                # A paused run resumes inside the node it paused before: that
                # node counts as one of its ``give``.
                run.nodes = give - 1 if self.started[index] else give
                self.started[index] = True
                run.deadline = deadline
                before = run.visited
                try:
                    next(steps)
                except StopIteration as finished:
                    # FOUND, or NOT_FOUND from a complete search: nothing fits.
                    status: SearchStatus = finished.value
                    solution = list(run.solution) if status == SearchStatus.FOUND else []
                    self.result = (status, solution)
                    return self.result
                finally:
                    used = run.visited - before
                    spent += used
                    self.visited += used
                    search.visited += used
                    if budget is not None:
                        budget.charge(used)
                    self._spent(used)
        except SearchTimeout:
            # Only the clock raises it: the searches cannot be resumed.
            self.result = (SearchStatus.TIMED_OUT, [])
            if budget is not None:
                budget.clock_ran_out()
            return self.result
        finally:
            sys.setrecursionlimit(old_limit)
        if budget is not None and not budget.clock_ran_out() and budget_bound:
            budget.note("budget")
        return SearchStatus.TIMED_OUT, []


class Restarts(Decision):
    """A decision at ``capacity`` by short searches, each restarted afresh.

    A depth-first search that goes wrong near the root can spend any budget
    below that mistake (MiniMalloc's D and J one step above their best
    known plans: no preorder of the portfolio finds a plan in 60,000 nodes,
    while one search in 20 to 50 whose preorder is shuffled a little does,
    within its first few hundred). So restart ``k`` is one search in
    preorder ``k`` of the portfolio (round robin), from the second round on
    with the preorder shuffled by a generator seeded from ``seed`` and
    ``k`` (neighbours swap now and then), for ``unit`` times the ``k``-th
    term of Luby's sequence (1, 1, 2, 1, 1, 2, 4, ...) nodes: a few long
    runs among many short ones, so a plan deep below a good start is still
    reached. Deterministic: the same nodes in the same order on any
    machine. Complete like ``Decision``: any restart that finishes has
    searched every canonical plan (a preorder only orders the choices), so
    ``NOT_FOUND`` is a proof.
    """

    def __init__(self, search: PoolSearch, capacity: int, unit: int, seed: int) -> None:
        super().__init__(search, capacity)
        self.unit = max(unit, 1)
        self.seed = seed
        self.restart = -1

    def _next_run(self) -> None:
        search = self.search
        self.restart += 1
        k = self.restart
        preorders = search.preorderings
        jitter = None
        if k >= len(preorders):
            jitter = random.Random(self.seed * 1_000_003 + k)
        heuristic = preorders[k % len(preorders)]
        self.runs = [search._run(heuristic, self.partitions, jitter, self.capacity)]
        self.started = [False]
        self.slice_left = self.unit * luby(k + 1)  # this restart's nodes

    def _select(self) -> int:
        if self.slice_left <= 0:
            self._next_run()
        return 0

    def _spent(self, used: int) -> None:
        self.slice_left -= used


JITTER = 0.5
"""Standard deviation, in preorder positions, of a restart's shuffle."""


def luby(index: int) -> int:
    """The ``index``-th term (from 1) of Luby's restart sequence: 1, 1, 2,
    1, 1, 2, 4, 1, 1, 2, 1, 1, 2, 4, 8, ..."""
    while True:
        bits = 1
        while (1 << bits) - 1 < index:
            bits += 1
        if index == (1 << bits) - 1:
            return 1 << (bits - 1)
        index -= (1 << (bits - 1)) - 1


def takes_bytes(buffers: Sequence[Buffer], indices: Sequence[int]) -> list[int]:
    """The ``indices`` whose offset needs searching: nonzero size, or pinned.

    A zero-size buffer takes no bytes, so offset 0 is always valid for it.
    """
    return [i for i in indices if buffers[i].size > 0 or buffers[i].pinned_offset is not None]


def pool_granularity(buffers: Sequence[Buffer], alignments: Sequence[int]) -> int:
    """Every canonical peak is a multiple of this.

    Canonical offsets are sums of sizes, each rounded up to an alignment: all
    multiples of the gcd of the sizes, the alignments above 1 and the pins.
    """
    step = 0
    for buffer, alignment in zip(buffers, alignments):
        step = gcd(step, buffer.size)
        if alignment > 1:
            step = gcd(step, alignment)
        if buffer.pinned_offset is not None:
            step = gcd(step, buffer.pinned_offset)
    return max(step, 1)


def _assign(values: list[int], positions: list[int], new: list[int]) -> None:
    """``values[p] = v`` for each pair of ``positions`` and ``new`` (in C: map
    drives ``__setitem__`` and ``any`` consumes its ``None`` results)."""
    any(map(values.__setitem__, positions, new))


def _undo(values: list[int], log: list[int]) -> None:
    """Restore ``values`` from a flat ``(position, old value)`` log, newest first."""
    for position in range(len(log) - 2, -1, -2):
        values[log[position]] = log[position + 1]
