"""Candidate priority with exact fallback: ``exact`` and ``auto`` choose pools by search.

A buffer may only fall back to a later candidate pool when it does not fit
the earlier one together with the buffers kept there (see
``passes/planning/algorithms/pool_assignment.py``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplan.passes.planning.algorithms import PlanOptions, solve
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.validate import validate
from memplan_testing import examples
from tests.planning.strategies import brute_force_peak, buffers

SEARCHES = ("exact", "auto")

# (size, start, end): everything fits a 576-byte pool (576 live bytes at time
# 3), but greedy by size stacks 'e' on 'a' and leaves no room for 'c'.
REPRODUCER = {
    "a": (192, 3, 4),
    "b": (192, 8, 10),
    "c": (64, 7, 9),
    "d": (256, 1, 10),
    "e": (128, 2, 8),
}


def reproducer(alignment: int) -> Problem:
    items = tuple(
        Buffer(name, size, start, end, alignment=alignment, candidates=("sram", "slow"))
        for name, (size, start, end) in REPRODUCER.items()
    )
    return Problem(items, (Pool("sram", size=576, alignment=alignment), Pool("slow")))


@pytest.mark.parametrize("minimize", [True, False])
@pytest.mark.parametrize("alignment", [1, 64])
@pytest.mark.parametrize("algorithm", SEARCHES)
def test_reproducer_keeps_everything_in_the_first_pool(
    algorithm: str, alignment: int, minimize: bool
) -> None:
    problem = reproducer(alignment)
    # The bug's precondition: the greedy plan falls back although all fit.
    assert solve(problem, "greedy-by-size").used(problem)["slow"] > 0
    solution = solve(problem, algorithm, PlanOptions(minimize=minimize))
    assert validate(problem, solution) == []
    assert {p.pool for p in solution.placements.values()} == {"sram"}
    assert solution.used(problem) == {"sram": 576, "slow": 0}
    # Every buffer in its first candidate and the pool at its lower bound.
    assert solution.status == "optimal"


def test_fallback_keeps_a_maximal_set_greedy_choice_first() -> None:
    # 'big' alone fills 'fast' while 'x' and 'y' are live. Not all fit, so
    # the greedy plan's choice for 'fast' ('big' and 'later', largest first)
    # stays and 'x' and 'y' move on: neither fits next to 'big'. The kept set
    # is maximal, not the one with the most buffers ('x' and 'y' together
    # would fit instead of 'big').
    pools = (Pool("fast", size=100), Pool("slow"))
    problem = Problem(
        (
            Buffer("big", 100, 0, 4, candidates=("fast", "slow")),
            Buffer("x", 60, 0, 4, candidates=("fast", "slow")),
            Buffer("y", 40, 0, 4, candidates=("fast", "slow")),
            Buffer("later", 100, 4, 8, candidates=("fast", "slow")),
        ),
        pools,
    )
    for algorithm in SEARCHES:
        solution = solve(problem, algorithm, PlanOptions())
        assert validate(problem, solution) == []
        assert solution.placements["big"] == Placement("fast", 0)
        assert solution.placements["later"] == Placement("fast", 0)
        assert solution.placements["x"].pool == "slow"
        assert solution.placements["y"].pool == "slow"
        assert solution.status == "feasible"  # not every buffer got its first choice


def test_candidate_lists_in_opposite_orders() -> None:
    # 'b' prefers 'second' but does not fit there next to 'pinned' (32 + 48
    # > 64); it falls back to 'first', which the fill has already passed, so
    # a second round of the fill checks it with 'a' (48 + 48 = 96 fits).
    pools = (Pool("first", size=96), Pool("second", size=64), Pool("slow"))
    problem = Problem(
        (
            Buffer("a", 48, 0, 4, candidates=("first", "slow")),
            Buffer("pinned", 32, 0, 4, candidates=("second",), pinned_offset=0),
            Buffer("b", 48, 0, 4, candidates=("second", "first", "slow")),
        ),
        pools,
    )
    for algorithm in SEARCHES:
        solution = solve(problem, algorithm, PlanOptions())
        assert validate(problem, solution) == []
        assert solution.placements["a"].pool == "first"
        assert solution.placements["b"].pool == "first"
        assert solution.placements["pinned"] == Placement("second", 0)
        assert solution.used(problem)["first"] == 96


@pytest.mark.parametrize(
    ("options", "reason"),
    [(PlanOptions(budget=0), "budget"), (PlanOptions(timeout=0.0), "timeout")],
)
def test_auto_starts_no_stage_past_its_budget(options: PlanOptions, reason: str) -> None:
    # budget=0 (or an opt-in timeout=0): only the first greedy placement runs
    # (some plan is needed), and the stats say what stopped the search.
    problem = reproducer(1)
    solution = solve(problem, "auto", options)
    assert solution.stats["stage"] == "greedy"
    assert solution.stats["placements"] == 1
    assert solution.stats["stopped_by"] == reason
    assert validate(problem, solution) == []


@pytest.mark.parametrize("options", [PlanOptions(budget=0), PlanOptions(timeout=0.0)])
def test_exact_past_its_budget_is_valid_and_says_so(options: PlanOptions) -> None:
    problem = reproducer(64)
    solution = solve(problem, "exact", options)
    # No budget to check the fallback: the greedy choice stands, unproven.
    assert solution.stats["assignment_proven"] == 0
    assert validate(problem, solution) == []
    assert solution.status == "feasible"


@st.composite
def first_pool_problems(draw: st.DrawFn) -> tuple[Problem, int]:
    """Buffers preferring bounded 'fast', then maybe bounded 'mid', then 'slow'.

    'fast' is sized around the brute-force optimum of all buffers in it
    (``capacity - optimum`` is returned with the problem).
    """
    items = draw(buffers(max_buffers=6))
    alignment = draw(st.sampled_from([1, 8, 64]))
    optimum = brute_force_peak(items, alignment)
    capacity = max(0, optimum + draw(st.integers(-48, 16)))
    pools = [Pool("fast", size=capacity, alignment=alignment)]
    names = ["fast"]
    if draw(st.booleans()):
        pools.append(
            Pool("mid", size=draw(st.integers(16, 96)), alignment=draw(st.sampled_from([1, 16])))
        )
        names.append("mid")
    pools.append(Pool("slow"))
    names.append("slow")
    fixed = tuple(
        Buffer(b.id, b.size, b.start, b.end, b.alignment, candidates=tuple(names), branch=b.branch)
        for b in items
    )
    return Problem(fixed, tuple(pools)), capacity - optimum


def members(problem: Problem, solution: Solution, pool: str) -> list[Buffer]:
    return [b for b in problem.buffers if solution.placements[b.id].pool == pool]


@pytest.mark.parametrize("algorithm", SEARCHES)
@settings(max_examples=examples(60), deadline=None)
@given(case=first_pool_problems())
def test_falls_back_only_when_it_does_not_fit(algorithm: str, case: tuple[Problem, int]) -> None:
    problem, slack = case
    solution = solve(problem, algorithm, PlanOptions())
    assert validate(problem, solution) == []
    assert not solution.unplaced(problem)
    if slack >= 0:
        assert {b.id for b in members(problem, solution, "fast")} == {b.id for b in problem.buffers}
    # Every bounded pool keeps a maximal set: a buffer that moved on from it
    # does not fit there together with the buffers it kept (brute force).
    order = [pool.name for pool in problem.pools]
    for position, pool in enumerate(problem.pools):
        if pool.size is None:
            continue
        kept = members(problem, solution, pool.name)
        moved_on = [
            b for b in problem.buffers if order.index(solution.placements[b.id].pool) > position
        ]
        for buffer in moved_on:
            assert brute_force_peak(kept + [buffer], pool.alignment) > pool.size, (
                f"{buffer.id} fell back from {pool.name} but fits with {[b.id for b in kept]}"
            )
