"""Hill climbing over placement orders (TVM USMP's ``hill_climb`` idea).

Start from the better of the two greedy orders, then repeatedly perturb the
order, re-run the gap-filling placer and keep the new order when it is no
worse (sideways moves let the search cross plateaus). Perturbations:

* move a buffer that defines a pool's peak (its top is the pool's ``used``)
  to an earlier, random position, so it gets first pick of low offsets;
* swap two random positions.

The random generator is seeded from ``PlanOptions.seed``. The search ends
after ``PlanOptions.iterations`` perturbations or when its ``Budget`` cannot
pay for one more placement (``budget.placement_cost``), whichever comes first, so
the result is deterministic unless an opt-in ``timeout`` cuts in.
"""

from __future__ import annotations

import time

from memplan.passes.planning.algorithms.budget import Budget, placement_cost
from memplan.passes.planning.algorithms.greedy import GreedyPlacer, GreedyResult
from memplan.passes.planning.algorithms.options import PlanOptions
from memplan.passes.planning.bounds import forced_pool, lower_bound
from memplan.passes.planning.model import Problem, Solution


def hill_climb(problem: Problem, options: PlanOptions | None = None) -> Solution:
    """Improve the greedy placement order by seeded random perturbation."""
    options = options or PlanOptions()
    budget = options.new_budget()
    placer = GreedyPlacer(problem)
    best_order = placer.size_order()
    started = time.perf_counter()
    best = placer.place(best_order)
    placement_seconds = time.perf_counter() - started
    other_order = placer.conflict_order()
    other = placer.place(other_order)
    budget.charge(2 * placement_cost(placer.count))
    if other.cost() < best.cost():
        best_order, best = other_order, other
    return climb(placer, best_order, best, options, budget, placement_seconds)


def climb(
    placer: GreedyPlacer,
    best_order: list[int],
    best: GreedyResult,
    options: PlanOptions,
    budget: Budget,
    placement_seconds: float = 0.0,
) -> Solution:
    """Hill-climb from ``best`` (the placement of ``best_order``) until a budget ends.

    Each placement costs ``budget`` ``placement_cost(buffers)`` nodes. ``placement_seconds``
    estimates one placement's duration, so that under an opt-in deadline no
    placement starts that would end past it.
    """
    import random  # on use: planning that never climbs does not load it

    problem = placer.problem
    rng = random.Random(options.seed)

    # With every pool forced, a plan at every pool's lower bound is optimal:
    # stop there instead of spending the budget.
    bounds: list[int] | None = None
    if all(forced_pool(problem, b) is not None for b in problem.buffers):
        by_name = lower_bound(problem)
        bounds = [by_name[pool.name] for pool in problem.pools]

    def at_bound(result: GreedyResult) -> bool:
        if not options.minimize and not result.unplaced:
            return True  # feasibility: any plan that places every buffer answers it
        return (
            bounds is not None
            and not result.unplaced
            and all(used <= bound for used, bound in zip(result.used, bounds))
        )

    movable = [i for i in range(placer.count) if problem.buffers[i].pinned_offset is None]

    def peak_buffers(result: GreedyResult) -> list[int]:
        """Movable buffers whose top is their pool's ``used``."""
        return [
            i
            for i in movable
            if result.pools[i] >= 0
            and result.offsets[i] + placer.sizes[i] == result.used[result.pools[i]]
        ]

    iterations = 0
    cost = placement_cost(placer.count)
    if len(movable) >= 2 and not at_bound(best):
        position_of = {index: pos for pos, index in enumerate(best_order)}
        peaks = peak_buffers(best)
        # Do not start a placement the budget cannot pay for (or, under a
        # deadline, that would end past it: on big problems one takes seconds).
        last_duration = placement_seconds
        while iterations < options.iterations and budget.affords(cost, last_duration):
            iterations += 1
            order = list(best_order)
            if peaks and rng.random() < 0.5:
                index = peaks[rng.randrange(len(peaks))]
                source = position_of[index]
                if source == 0:
                    continue
                order.insert(rng.randrange(source), order.pop(source))
            else:
                first = rng.randrange(len(order))
                second = rng.randrange(len(order))
                order[first], order[second] = order[second], order[first]
            started = time.perf_counter()
            budget.charge(cost)
            result = placer.place(order)
            last_duration = time.perf_counter() - started
            if result.cost() <= best.cost():
                best_order, best = order, result
                position_of = {index: pos for pos, index in enumerate(best_order)}
                peaks = peak_buffers(best)
                if at_bound(best):
                    break
    solution = placer.solution(best, "hill-climb")
    solution.stats["iterations"] = iterations
    budget.report(solution.stats)
    return solution
