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

``best_schedule`` returns the order with the lowest ``simulate_peak`` (ties:
the given order first, then list, then DFS). Everything is deterministic.
No exact search (dynamic programming over ready sets) is implemented yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


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


def _readers_of_owner(problem: ScheduleProblem) -> list[set[int]]:
    readers: list[set[int]] = [set() for _ in problem.sizes]
    for node, reads in enumerate(problem.reads):
        for read in reads:
            readers[problem.owner(read)].add(node)
        alias = problem.alias_of[node]
        if alias is not None:
            readers[alias].add(node)
    return readers


def simulate_peak(problem: ScheduleProblem, order: Sequence[int]) -> int:
    """The peak of live bytes when the nodes run in ``order``."""
    readers = _readers_of_owner(problem)
    remaining = [len(r) for r in readers]
    live = peak = 0
    for node in order:
        live += problem.sizes[node]
        peak = max(peak, live)
        owners = {problem.owner(read) for read in problem.reads[node]}
        alias = problem.alias_of[node]
        if alias is not None:
            owners.add(alias)
        for owner in owners:
            remaining[owner] -= 1
            if remaining[owner] == 0 and owner not in problem.kept:
                live -= problem.sizes[owner]
        if not readers[node] and node not in problem.kept and problem.alias_of[node] is None:
            live -= problem.sizes[node]  # never read: dead once written
    return peak


def post_order(problem: ScheduleProblem) -> list[int]:
    return list(range(len(problem.sizes)))


def list_schedule(problem: ScheduleProblem) -> list[int]:
    readers = _readers_of_owner(problem)
    remaining = [len(r) for r in readers]
    waiting = [len(set(reads)) for reads in problem.reads]
    successors: list[list[int]] = [[] for _ in problem.sizes]
    for node, reads in enumerate(problem.reads):
        for read in set(reads):
            successors[read].append(node)

    def gain(node: int) -> int:
        freed = 0
        owners = {problem.owner(read) for read in problem.reads[node]}
        for owner in owners:
            if remaining[owner] == 1 and owner not in problem.kept:
                freed += problem.sizes[owner]
        return problem.sizes[node] - freed

    ready = [node for node, count in enumerate(waiting) if count == 0]
    order: list[int] = []
    while ready:
        # Gains change as readers run, so re-rank the (small) ready set.
        node = min(ready, key=lambda n: (gain(n), n))
        ready.remove(node)
        order.append(node)
        for owner in {problem.owner(read) for read in problem.reads[node]}:
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


SCHEDULERS: dict[str, Callable[[ScheduleProblem], list[int]]] = {
    "post-order": post_order,
    "list": list_schedule,
    "dfs": dfs_schedule,
}
"""The orders ``best_schedule`` compares, by name (the pass's `algorithm`)."""


def best_schedule(
    problem: ScheduleProblem, names: Sequence[str] = tuple(SCHEDULERS)
) -> tuple[list[int], int, str]:
    """The order with the lowest peak among ``names``: (order, peak, name)."""
    results = []
    for rank, name in enumerate(names):
        order = SCHEDULERS[name](problem)
        results.append((simulate_peak(problem, order), rank, name, order))
    peak, _, name, order = min(results, key=lambda r: (r[0], r[1]))
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
    "SCHEDULERS",
    "ScheduleProblem",
    "best_schedule",
    "dfs_schedule",
    "is_topological",
    "list_schedule",
    "post_order",
    "simulate_peak",
]
