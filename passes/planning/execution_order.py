"""Operator orders that lower the peak of live bytes (the `schedule` pass's core).

A ``ScheduleProblem`` is a DAG of nodes in their given order: what each
node allocates, what it reads, and whether its bytes alias another node's
(a view). A node's bytes are live from the node until the last node that
reads them (or any alias of them) has run; bytes of ``kept`` nodes (values
used after the segment: returned, read by a later op) stay live to the end.

The heuristics are the three XLA's default memory scheduler takes the best
of, plus the given order:

* ``list_schedule``: repeatedly run the ready node that frees the most
  bytes net of what it allocates (ties: the earliest in the given order);
* ``dfs_schedule``: a depth-first post order from the sinks, visiting the
  operands whose subgraphs allocate the most first, so a deep branch
  finishes (and frees) before the next starts;
* ``post_order``: the given order.

``exact_schedule`` finds an order of minimum peak by dynamic programming
over the sets of nodes already run (the live bytes after a set do not depend
on the order that ran it), layer by layer, pruning every state whose peak
exceeds the best heuristic's; past ``max_states`` moves it gives up.

``best_schedule`` returns the heuristics' order with the lowest
``simulate_peak`` (ties: the given order first, then list, then DFS), or the
exact search's when it finds a strictly lower peak. Everything is
deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal


@dataclass(frozen=True)
class ScheduleProblem:
    sizes: tuple[int, ...]
    """Bytes each node allocates (0 for a view or a node without tensors)."""
    reads: tuple[tuple[int, ...], ...]
    """The nodes whose results each node reads (its predecessors)."""
    alias_of: tuple[int | None, ...]
    """For a view, the node whose bytes it aliases (already resolved to the
    owner); None for a node owning its bytes."""
    kept: frozenset[int]
    """Nodes whose bytes stay live to the end (used after the segment)."""

    def owner(self, node: int) -> int:
        alias = self.alias_of[node]
        return node if alias is None else alias

    @cached_property
    def owners_read(self) -> tuple[tuple[int, ...], ...]:
        """Per node, the nodes whose bytes it reads: its operands' owners and,
        for a view, the owner it aliases (it keeps those bytes live)."""
        owners: list[tuple[int, ...]] = []
        for node, reads in enumerate(self.reads):
            alias = self.alias_of[node]
            found = [self.owner(read) for read in reads] + ([] if alias is None else [alias])
            owners.append(tuple(dict.fromkeys(found)))
        return tuple(owners)

    @cached_property
    def readers(self) -> tuple[frozenset[int], ...]:
        """Per node, the nodes that read its bytes (``owners_read`` inverted)."""
        readers: list[set[int]] = [set() for _ in self.sizes]
        for node, owners in enumerate(self.owners_read):
            for owner in owners:
                readers[owner].add(node)
        return tuple(frozenset(r) for r in readers)


def simulate_peak(problem: ScheduleProblem, order: Sequence[int]) -> int:
    """The peak of live bytes when the nodes run in ``order``."""
    readers = problem.readers
    owners_read = problem.owners_read
    remaining = [len(r) for r in readers]
    live = peak = 0
    for node in order:
        live += problem.sizes[node]
        peak = max(peak, live)
        for owner in owners_read[node]:
            remaining[owner] -= 1
            if remaining[owner] == 0 and owner not in problem.kept:
                live -= problem.sizes[owner]
        if not readers[node] and node not in problem.kept and problem.alias_of[node] is None:
            live -= problem.sizes[node]  # never read: dead once written
    return peak


def post_order(problem: ScheduleProblem) -> list[int]:
    return list(range(len(problem.sizes)))


def list_schedule(problem: ScheduleProblem) -> list[int]:
    owners_read = problem.owners_read
    remaining = [len(r) for r in problem.readers]
    waiting = [len(set(reads)) for reads in problem.reads]
    successors: list[list[int]] = [[] for _ in problem.sizes]
    for node, reads in enumerate(problem.reads):
        for read in set(reads):
            successors[read].append(node)

    def gain(node: int) -> int:
        freed = 0
        for owner in owners_read[node]:
            if remaining[owner] == 1 and owner not in problem.kept:
                freed += problem.sizes[owner]
        return problem.sizes[node] - freed

    ready = [node for node, count in enumerate(waiting) if count == 0]
    order: list[int] = []
    while ready:
        # A 0-byte node (a constant, a view) never adds bytes: run the first
        # one at once. Otherwise gains change as readers run, so re-rank.
        zero = [n for n in ready if not problem.sizes[n]]
        node = min(zero) if zero else min(ready, key=lambda n: (gain(n), n))
        ready.remove(node)
        order.append(node)
        for owner in owners_read[node]:
            remaining[owner] -= 1
        for successor in successors[node]:
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
    return order


def dfs_schedule(problem: ScheduleProblem) -> list[int]:
    count = len(problem.sizes)
    # Bytes a node's subgraph allocates (upper estimate: shared parts count
    # in each user), to visit the heaviest operand first.
    weight = [0] * count
    for node in range(count):
        weight[node] = problem.sizes[node] + sum(weight[r] for r in set(problem.reads[node]))
    has_reader = [False] * count
    for reads in problem.reads:
        for read in reads:
            has_reader[read] = True
    order: list[int] = []
    visited = [False] * count
    for sink in (n for n in range(count) if not has_reader[n]):
        stack: list[tuple[int, bool]] = [(sink, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if visited[node]:
                continue
            visited[node] = True
            stack.append((node, True))
            operands = sorted(set(problem.reads[node]), key=lambda r: (weight[r], -r))
            # The stack pops the last pushed first: push the lightest first.
            stack.extend((r, False) for r in operands if not visited[r])
    return order


EXACT_MAX_STATES = 100_000
"""Moves ``exact_schedule`` may try before it gives up (about a second)."""


def exact_schedule(
    problem: ScheduleProblem, upper_bound: int | None = None, max_states: int = EXACT_MAX_STATES
) -> list[int] | None:
    """An order of minimum peak, or None when more than ``max_states`` moves
    would be tried (or no order stays within ``upper_bound``).

    A state is the set of nodes run so far (a bit mask); the bytes live after
    it are the owners it ran that are kept or still have a reader outside
    it. Running ready node ``v`` from state ``S`` peaks at live(S) + size(v);
    a state keeps the lowest peak over the orders reaching it. States whose
    peak exceeds ``upper_bound`` (default: the list scheduler's peak) are
    dropped, which keeps the search small where the heuristics are close,
    and a ready node of 0 bytes (a constant, a view) is run at once.
    """
    count = len(problem.sizes)
    if upper_bound is None:
        upper_bound = simulate_peak(problem, list_schedule(problem))
    reader_masks = [sum(1 << r for r in rs) for rs in problem.readers]
    needs = [0] * count
    freed_by: list[tuple[int, ...]] = []
    for node in range(count):
        owners = problem.owners_read[node]
        alias = problem.alias_of[node]
        needs[node] = sum(1 << read for read in problem.reads[node]) | (
            0 if alias is None else 1 << alias
        )
        freed_by.append(tuple(sorted(o for o in owners if o not in problem.kept)))
    # Bytes a node leaves live once it has run (0 if dead at once or a view).
    stays = [problem.sizes[n] if n in problem.kept or reader_masks[n] else 0 for n in range(count)]
    successors: list[list[int]] = [[] for _ in range(count)]
    for node in range(count):
        for needed in _bits(needs[node]):
            successors[needed].append(node)
    full = (1 << count) - 1
    zero_mask = sum(1 << n for n in range(count) if problem.sizes[n] == 0)
    # mask -> (peak, live bytes after the mask, ready nodes, previous mask, last node)
    start = sum(1 << n for n in range(count) if not needs[n])
    layer: dict[int, tuple[int, int, int, int, int]] = {0: (0, 0, start, -1, -1)}
    history = [layer]
    visited = 0
    for _ in range(count):
        following: dict[int, tuple[int, int, int, int, int]] = {}
        for mask, (peak, live, ready, _, _) in layer.items():
            # A ready node of 0 bytes never raises the live bytes (it only
            # frees): some best order runs it at once, so it is the only move.
            free = ready & zero_mask
            candidates = _bits(free & -free) if free else _bits(ready)
            visited += len(candidates)
            if visited > max_states:
                return None
            for node in candidates:
                step_peak = max(peak, live + problem.sizes[node])
                if step_peak > upper_bound:
                    continue
                after = mask | 1 << node
                known = following.get(after)
                if known is not None and known[0] <= step_peak:
                    continue  # the live bytes after a set depend on the set only
                freed = sum(
                    problem.sizes[o] for o in freed_by[node] if not reader_masks[o] & ~after
                )
                now_ready = ready & ~(1 << node)
                for successor in successors[node]:
                    if not needs[successor] & ~after:
                        now_ready |= 1 << successor
                following[after] = (
                    step_peak,
                    live + stays[node] - freed,
                    now_ready,
                    mask,
                    node,
                )
        if not following:
            return None
        layer = following
        history.append(layer)
    order: list[int] = []
    mask = full
    for depth in range(count, 0, -1):
        _, _, _, previous, node = history[depth][mask]
        order.append(node)
        mask = previous
    order.reverse()
    return order


def _bits(mask: int) -> list[int]:
    """The set bits of ``mask``, lowest first."""
    bits: list[int] = []
    while mask:
        low = mask & -mask
        bits.append(low.bit_length() - 1)
        mask ^= low
    return bits


def _exact_or_list(problem: ScheduleProblem) -> list[int]:
    """``exact_schedule``, or the list schedule when the search gives up."""
    fallback = list_schedule(problem)
    return exact_schedule(problem, simulate_peak(problem, fallback)) or fallback


ScheduleAlgorithm = Literal["best", "post-order", "list", "dfs", "exact"]
"""The `schedule` pass's `algorithm`: ``best_schedule`` or a name in ``SCHEDULERS``."""

SCHEDULERS: dict[str, Callable[[ScheduleProblem], list[int]]] = {
    "post-order": post_order,
    "list": list_schedule,
    "dfs": dfs_schedule,
    "exact": _exact_or_list,
}
"""The orders ``best_schedule`` compares, by name (the pass's `algorithm`)."""


HEURISTICS = ("post-order", "list", "dfs")
"""The orders ``best_schedule`` compares, in its tie order."""


def best_schedule(problem: ScheduleProblem) -> tuple[list[int], int, str]:
    """The order with the lowest peak: (order, peak, name).

    The heuristics' best (ties: the given order, then list, then DFS), unless
    ``exact_schedule`` finds a strictly lower peak below it (when its search
    gives up, the heuristics' order stands).
    """
    results = []
    for rank, name in enumerate(HEURISTICS):
        order = SCHEDULERS[name](problem)
        results.append((simulate_peak(problem, order), rank, name, order))
    peak, _, name, order = min(results, key=lambda r: (r[0], r[1]))
    exact = exact_schedule(problem, peak - 1)
    if exact is not None:
        return exact, simulate_peak(problem, exact), "exact"
    return order, peak, name


def is_topological(problem: ScheduleProblem, order: Sequence[int]) -> bool:
    """Every node after the nodes it reads, each node once."""
    position = {node: index for index, node in enumerate(order)}
    if sorted(position) != list(range(len(problem.sizes))):
        return False
    return all(
        position[read] < position[node]
        for node, reads in enumerate(problem.reads)
        for read in reads
    )


__all__ = [
    "HEURISTICS",
    "SCHEDULERS",
    "ScheduleProblem",
    "ScheduleAlgorithm",
    "best_schedule",
    "dfs_schedule",
    "exact_schedule",
    "is_topological",
    "list_schedule",
    "post_order",
    "simulate_peak",
]
