"""The work budget every search stops on (``algorithms.budget``)."""

from __future__ import annotations

import random

import pytest

from memplan.passes.planning.algorithms import PlanOptions, solve
from memplan.passes.planning.algorithms.budget import Budget, placement_cost
from memplan.passes.planning.algorithms.pool_search import PoolSearch, SearchStatus
from memplan.passes.planning.model import Buffer, Pool, Problem


def _hard() -> Problem:
    """200 unaligned buffers whose lower bound the greedy plans miss (the
    searches go on until their budget is spent)."""
    rng = random.Random(1)
    buffers = []
    for i in range(200):
        start = rng.randrange(200)
        size = rng.randint(1, 30000)
        buffers.append(Buffer(f"b{i}", size, start, start + rng.randint(1, 60), alignment=1))
    return Problem(tuple(buffers), (Pool("mem", alignment=1),))


def test_parts_share_what_is_left_and_charge_the_whole() -> None:
    budget = Budget(100)
    first = budget.part(0.5)
    assert first.left() == 50
    first.charge(30)
    assert (first.left(), budget.left()) == (20, 70)
    # A later part gets its share of what is left, not of the start.
    second = budget.part(0.5)
    assert second.left() == 35
    second.charge(100)
    assert second.left() == 0 and budget.left() == 0
    assert budget.used == 130
    assert not budget.stopped_by
    assert budget.exhausted()
    assert budget.stopped_by == "budget"


def test_a_part_never_outlasts_its_parent() -> None:
    budget = Budget(10)
    part = budget.part(1.0)
    budget.charge(8)
    assert part.left() == 2
    assert part.affords(2) and not part.affords(3)
    assert part.stopped_by == budget.stopped_by == "budget"


def test_only_a_deadline_reads_the_clock() -> None:
    assert Budget(5).deadline is None and Budget(5).seconds_left() is None
    expired = Budget(5, timeout=0.0)
    assert expired.exhausted()
    assert expired.stopped_by == "timeout"
    # The clock takes precedence over a later budget stop.
    expired.note("budget")
    assert expired.stopped_by == "timeout"
    with pytest.raises(ValueError, match="non-negative"):
        Budget(-1)


def test_placements_cost_a_node_per_four_buffers() -> None:
    assert [placement_cost(n) for n in (0, 1, 4, 5, 400)] == [1, 1, 1, 2, 100]


def test_decide_charges_exactly_the_nodes_it_visits() -> None:
    buffers = list(_hard().buffers)
    search = PoolSearch(buffers, [1] * len(buffers), ["TWA"])
    budget = Budget(1_000_000)
    assert search.decide(10**9, budget)[0] is SearchStatus.FOUND
    assert budget.used == search.visited > 0
    assert budget.stopped_by is None
    # Half the nodes that search needs: it stops, and says the budget did.
    tight = Budget(search.visited // 2)
    again = PoolSearch(buffers, [1] * len(buffers), ["TWA"])
    assert again.decide(10**9, tight)[0] is SearchStatus.TIMED_OUT
    assert tight.left() == 0
    assert tight.stopped_by == "budget"


@pytest.mark.parametrize("algorithm", ["auto", "exact", "hill-climb"])
def test_exhaustion_is_deterministic(algorithm: str) -> None:
    # The same budget twice: it runs out both times, after the same nodes,
    # with the same plan.
    problem = _hard()
    options = PlanOptions(budget=1000, iterations=1000)
    first = solve(problem, algorithm, options)
    second = solve(problem, algorithm, options)
    assert first.stats["stopped_by"] == second.stats["stopped_by"] == "budget"
    assert first.stats["work"] == second.stats["work"]
    assert first.placements == second.placements
    assert first.status == second.status == "feasible"


def test_hill_climb_stops_when_a_placement_is_unaffordable() -> None:
    # 200 buffers: a placement costs 50 nodes. The two greedy orders and ten
    # perturbed placements use up 600 nodes; there is no eleventh.
    solution = solve(_hard(), "hill-climb", PlanOptions(budget=600, iterations=1000))
    assert solution.stats["iterations"] == 10
    assert solution.stats["work"] == 600
    assert solution.stats["stopped_by"] == "budget"
