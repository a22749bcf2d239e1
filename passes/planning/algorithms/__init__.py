"""The algorithm registry: a new algorithm is one function plus one line here.

Every algorithm is a function ``(Problem, PlanOptions) -> Solution`` that
respects per-buffer and per-pool alignment, pool sizes, candidate order with
fallback, pinned buffers and ``scf.if`` exclusivity, and is deterministic.

``solve(problem, algorithm="auto", options)`` runs one by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from passes.planning.algorithms.exact_search import exact
from passes.planning.algorithms.greedy import (
    GreedyPlacer,
    greedy_by_conflicts,
    greedy_by_size,
)
from passes.planning.algorithms.hill_climbing import climb, hill_climb
from passes.planning.algorithms.options import PlanOptions
from passes.planning.model import Problem, Solution

Algorithm = Callable[[Problem, PlanOptions], Solution]


def auto(problem: Problem, options: PlanOptions | None = None) -> Solution:
    """Cheap heuristics first; stop at the lower bound, else improve with ``exact``.

    ``exact`` is skipped for pools with more than ``options.exact_max_buffers``
    buffers; there ``hill-climb`` spends the time instead. ``options.timeout``
    bounds the improvement stage; the two greedy placements always run.
    """
    options = options or PlanOptions()
    started = time.perf_counter()
    placer = GreedyPlacer(problem)
    best_order = placer.size_order()
    placement_started = time.perf_counter()
    best = placer.place(best_order)
    placement_seconds = time.perf_counter() - placement_started
    other_order = placer.conflict_order()
    other = placer.place(other_order)
    if other.cost() < best.cost():
        best_order, best = other_order, other
    solution = placer.solution(best, "auto")
    if solution.status == "optimal":
        solution.stats["stage"] = "greedy"
        return solution
    if not best.unplaced and not options.minimize:
        solution.stats["stage"] = "greedy"
        return solution
    remaining = max(0.0, options.timeout - (time.perf_counter() - started))
    per_pool = [0] * len(problem.pools)
    for pool in best.pools:
        if pool >= 0:
            per_pool[pool] += 1
    budget = PlanOptions(
        timeout=remaining,
        seed=options.seed,
        iterations=options.iterations,
        minimize=options.minimize,
        preorderings=options.preorderings,
        exact_max_buffers=options.exact_max_buffers,
    )
    if max(per_pool, default=0) <= options.exact_max_buffers:
        improved = exact(problem, budget)
        stage = "exact"
    else:
        improved = climb(
            placer, best_order, best, budget, time.perf_counter() + remaining, placement_seconds
        )
        stage = "hill-climb"
    improved.stats["stage"] = stage
    improved.stats["algorithm"] = "auto"
    return improved


ALGORITHMS: dict[str, Algorithm] = {
    "greedy-by-size": greedy_by_size,
    "greedy-by-conflicts": greedy_by_conflicts,
    "hill-climb": hill_climb,
    "exact": exact,
    "auto": auto,
}


def solve(
    problem: Problem, algorithm: str = "auto", options: PlanOptions | None = None
) -> Solution:
    """Plan ``problem`` with the named algorithm (``KeyError`` names the choices)."""
    try:
        function = ALGORITHMS[algorithm]
    except KeyError:
        raise KeyError(
            f"unknown algorithm '{algorithm}' (choose from {', '.join(ALGORITHMS)})"
        ) from None
    return function(problem, options or PlanOptions())


__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "PlanOptions",
    "auto",
    "exact",
    "greedy_by_conflicts",
    "greedy_by_size",
    "hill_climb",
    "solve",
]
