"""The algorithm registry: a new algorithm is one function plus one line here.

Every algorithm is a function ``(Problem, PlanOptions) -> Solution`` that
respects per-buffer and per-pool alignment, pool sizes, candidate order with
fallback, pinned buffers and ``scf.if`` exclusivity, and is deterministic.

``solve(problem, algorithm="auto", options)`` runs one by name.

Candidate priority (USMP: a buffer goes to a later candidate pool only when
it does not fit the earlier one). Two precise rules:

* ``greedy-by-size``, ``greedy-by-conflicts``, ``hill-climb``: per buffer,
  when it is placed: it goes to the first candidate with a gap for it among
  the buffers placed before it in the order. A buffer can fall back although
  another arrangement of that pool would hold it too.
* ``exact`` and ``auto`` (when it reaches its ``exact`` stage), see
  ``pool_assignment``: pools are filled in problem order, in rounds; a
  bounded pool keeps every buffer arriving at it (first remaining candidate)
  when all of them fit together with the buffers already there (pinned or
  kept earlier), decided by search. Otherwise it keeps those it is the last
  candidate of, then the greedy plan's choice, then the rest, each group
  largest first, each buffer kept when it fits with everything kept before
  it; the others move on. So the set a bounded pool keeps is maximal: no
  buffer that moved on fits there with it, and a buffer falls back only when
  the pool cannot hold it together with the buffers kept there. When every
  buffer fits its first candidate, every buffer goes there. Exceptions, both
  reported in ``stats``: a check that runs out of its node budget counts as
  "does not fit" (``assignment_proven`` is 0), and when
  the greedy plan places more buffers than the rule (possible only when
  candidate lists order the pools differently), the greedy plan's pools are
  used (``assignment`` is ``greedy``).

Status ``optimal`` needs every pool's peak proven minimal for its buffers and
every buffer in its first usable candidate pool (then priority prefers no
other assignment; one candidate per buffer is the special case).

The searching algorithms stop on a work budget (``PlanOptions.budget``, in
search nodes; see the ``budget`` module), so their plans are the same on
every machine; an opt-in ``PlanOptions.timeout`` also stops them by the
clock. ``stats["work"]`` is the nodes spent and ``stats["stopped_by"]``
(``budget`` or ``timeout``) says when a search ended before it finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from memplan.passes.planning.algorithms import greedy
from memplan.passes.planning.algorithms.budget import DEFAULT_BUDGET, Budget, placement_cost
from memplan.passes.planning.algorithms.exact_search import exact, exact_from
from memplan.passes.planning.algorithms.greedy import (
    GreedyPlacer,
    greedy_by_conflicts,
    greedy_by_size,
)
from memplan.passes.planning.algorithms.hill_climbing import climb, hill_climb
from memplan.passes.planning.algorithms.options import PlanOptions
from memplan.passes.planning.algorithms.time_components import solve_by_time_components
from memplan.passes.planning.model import Problem, Solution
from memplan.passes.planning.plugins import entry_point_objects

Algorithm = Callable[[Problem, PlanOptions], Solution]


def auto(problem: Problem, options: PlanOptions | None = None) -> Solution:
    """Cheap heuristics first; stop when nothing can beat them, else improve.

    Stages, each started only while the budget (``options.budget`` nodes, a
    placement costing ``placement_cost``; and ``options.timeout`` when given) is
    not spent: greedy by size (always runs: every stage needs a plan), greedy
    by conflicts and, when every buffer has one size, greedy in left-edge
    order (``GreedyPlacer.left_edge_order``; each skipped when the budget
    cannot pay for a placement), then, with one pool and several time
    components (``time_components``), ``auto`` on each component when the
    pool holds more than ``options.exact_max_buffers`` buffers or no
    component holds more than half of them; else ``exact`` on problems
    whose pools hold at most ``options.exact_max_buffers`` buffers each in
    the greedy plan, else
    ``hill-climb``, with the budget left (not started when it cannot pay for
    one more placement).

    The greedy plan is returned at once when it is optimal, or when
    ``options.minimize`` is false, it places every buffer and each buffer
    sits in its first candidate pool (nothing is left to decide). Otherwise
    ``exact`` also redoes the pool choice by candidate priority
    (``pool_assignment``); ``hill-climb`` keeps the greedy placer's
    per-buffer fallback.
    """
    options = options or PlanOptions()
    started = time.perf_counter()
    budget = options.new_budget()
    placer = GreedyPlacer(problem)
    best_order = placer.size_order()
    placement_started = time.perf_counter()
    best = placer.place(best_order)
    cost = placement_cost(placer.count)
    budget.charge(cost)
    placement_seconds = time.perf_counter() - placement_started
    placements = 1
    # Each stage below is skipped when the plan so far cannot be beaten, so a
    # budget it would find spent was not what stopped the search.
    solution = placer.solution(best, "auto")
    other_orders = [placer.conflict_order]
    if len(set(placer.sizes)) == 1:
        other_orders.append(placer.left_edge_order)  # meets the bound for one size
    for other_order_of in other_orders:
        if solution.status == "optimal" or not budget.affords(cost, placement_seconds):
            break
        other_order = other_order_of()
        other = placer.place(other_order)
        budget.charge(cost)
        placements += 1
        if other.cost() < best.cost():
            best_order, best = other_order, other
            solution = placer.solution(best, "auto")
    solution.stats["stage"] = "greedy"
    solution.stats["placements"] = placements
    if solution.status == "optimal":
        budget.report(solution.stats)
        return solution
    if placer.all_first_choice(best.pools) and not options.minimize:
        budget.report(solution.stats)
        return solution
    per_pool = [0] * len(problem.pools)
    for pool in best.pools:
        if pool >= 0:
            per_pool[pool] += 1
    if budget.exhausted():
        budget.report(solution.stats)
        return solution
    searchable = max(per_pool, default=0) <= options.exact_max_buffers
    # Time components planned apart: when one exact search cannot take the
    # pool whole, or when no component holds more than half the buffers (a
    # search over all of them backtracks through parts that do not interact:
    # segments 1k, 73 components of at most 50 buffers, 6,110 nodes apart
    # against 58,907 together).
    split = solve_by_time_components(
        problem, options, budget, auto, None if not searchable else len(problem.buffers) // 2
    )
    if split is not None:
        return split
    if searchable:
        improved = exact_from(placer, best, options, budget, started)
        stage = "exact"
    else:
        if not budget.affords(cost, placement_seconds):
            budget.report(solution.stats)
            return solution  # not even one perturbed placement would finish
        improved = climb(placer, best_order, best, options, budget, placement_seconds)
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
"""Offset algorithms by name: a new one is a module and a line here, or,
from outside the repository, an entry point in ``memplan.algorithms``
(``plugins``) naming its function; the built-in names win a clash."""
ALGORITHMS.update(
    (name, function)
    for name, function in entry_point_objects("memplan.algorithms")
    if name not in ALGORITHMS
)

if TYPE_CHECKING:
    AlgorithmName = str
else:
    # The names of ``ALGORITHMS`` as a type for pass options: xDSL's option
    # parser and ``pass_options.check_options`` accept only these, and
    # ``--help`` and docs/passes.md list them (no second list to keep).
    AlgorithmName = Literal[tuple(ALGORITHMS)]

GREEDY_ALGORITHMS = tuple(
    name for name, function in ALGORITHMS.items() if function.__module__ == greedy.__name__
)
"""The algorithms of the ``greedy`` module: one placement, no search."""


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
    "DEFAULT_BUDGET",
    "GREEDY_ALGORITHMS",
    "AlgorithmName",
    "Algorithm",
    "Budget",
    "PlanOptions",
    "auto",
    "exact",
    "greedy_by_conflicts",
    "greedy_by_size",
    "hill_climb",
    "solve",
]
