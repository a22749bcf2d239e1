"""Parametric plans: valid at every sizes vector up to the maximum, never
above the bound's plan, and checked by a checker that can fail."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memplan.passes.planning.algorithms import solve
from memplan.passes.planning.model import Buffer, Placement, Problem, Solution
from memplan.passes.planning.parametric import (
    ParametricPlan,
    as_solution,
    at_sizes,
    check_parametric,
    choose_parametric,
    derive_parametric,
    evaluate,
    max_sizes,
)
from memplan.passes.planning.validate import validate
from tests.planning.strategies import problems

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _planned(problem: Problem, algorithm: str) -> Solution:
    solution = solve(problem, algorithm)
    assume(not validate(problem, solution))
    return solution


@st.composite
def planned(draw: st.DrawFn) -> tuple[Problem, Solution]:
    """A problem at its maximum sizes, some buffers pinned where a first
    plan put them, and a valid plan of it."""
    problem = draw(problems(max_buffers=10))
    algorithm = draw(st.sampled_from(["greedy-by-size", "greedy-by-conflicts"]))
    first = _planned(problem, algorithm)
    pins = draw(st.lists(st.booleans(), min_size=len(problem.buffers)))
    buffers = []
    for buffer, pin in zip(problem.buffers, pins + [False] * len(problem.buffers), strict=False):
        placement = first.placements[buffer.id]
        if pin and problem.candidate_pools(buffer)[0].name == placement.pool:
            buffer = replace(buffer, pinned_offset=placement.offset)
        buffers.append(buffer)
    pinned = Problem(tuple(buffers), problem.pools)
    return pinned, _planned(pinned, algorithm)


@st.composite
def sizes_up_to(draw: st.DrawFn, problem: Problem) -> tuple[int, ...]:
    """A sizes vector with each size in ``[0, max]``."""
    return tuple(draw(st.integers(0, buffer.size)) for buffer in problem.buffers)


@FAST
@given(st.data())
def test_evaluation_is_valid_and_below_the_bound(data: st.DataObject) -> None:
    problem, bound = data.draw(planned())
    plan = derive_parametric(problem, bound)
    assert check_parametric(problem, plan) == []
    limit = bound.used(problem)
    for _ in range(3):
        sizes = data.draw(sizes_up_to(problem))
        evaluation = evaluate(plan, sizes)
        assert validate(at_sizes(problem, sizes), as_solution(plan, evaluation)) == []
        for pool, used in evaluation.pools.items():
            assert used <= limit[pool]


@FAST
@given(planned())
def test_maximum_sizes_compact_the_bound(case: tuple[Problem, Solution]) -> None:
    problem, bound = case
    plan = derive_parametric(problem, bound)
    at_max = evaluate(plan)
    limit = bound.used(problem)
    offsets = [bound.placements[b.id].offset for b in problem.buffers]
    assert all(c <= p for c, p in zip(at_max.offsets, offsets, strict=True))
    assert all(at_max.pools[pool] <= limit[pool] for pool in limit)
    # Greedy plans rest every buffer on the floor or on a neighbour: compact,
    # so the maximum sizes give the bound plan back exactly.
    assert at_max.offsets == tuple(offsets)
    assert at_max.pools == limit
    # Compaction is idempotent: deriving from the compacted plan gives it back.
    again = derive_parametric(problem, as_solution(plan, at_max))
    assert evaluate(again).offsets == at_max.offsets


def test_a_loose_bound_plan_compacts_below_its_pool() -> None:
    problem = Problem((Buffer("a", 8, 0, 2), Buffer("b", 8, 1, 3), Buffer("c", 4, 3, 4)))
    loose = Solution(
        {
            "a": Placement("workspace", 4),
            "b": Placement("workspace", 16),
            "c": Placement("workspace", 40),
        }
    )
    plan = derive_parametric(problem, loose)
    assert evaluate(plan).offsets == (0, 8, 0)
    assert evaluate(plan).pools == {"workspace": 16}
    assert loose.peak(problem) == 44


@FAST
@given(planned(), st.data())
def test_dropping_a_relation_is_found(case: tuple[Problem, Solution], data: st.DataObject) -> None:
    problem, bound = case
    plan = derive_parametric(problem, bound)
    # An edge j -> i whose pair no other path orders.
    edges = [
        (i, j)
        for i, js in enumerate(plan.below)
        for j in js
        if not _reaches(plan, i, j, skip=(i, j))
    ]
    assume(edges)
    i, j = data.draw(st.sampled_from(edges))
    below = list(plan.below)
    below[i] = tuple(k for k in below[i] if k != j)
    broken = replace(plan, below=tuple(below))
    findings = check_parametric(problem, broken)
    names = sorted((problem.buffers[i].id, problem.buffers[j].id))
    assert any(f"'{names[0]}' and '{names[1]}'" in finding for finding in findings), findings


def _reaches(plan: ParametricPlan, top: int, target: int, skip: tuple[int, int]) -> bool:
    """Is ``target`` below ``top`` through ``below`` without the edge ``skip``?"""
    stack, seen = [top], {top}
    while stack:
        i = stack.pop()
        for j in plan.below[i]:
            if (i, j) == skip or j in seen:
                continue
            if j == target:
                return True
            seen.add(j)
            stack.append(j)
    return False


def test_the_checker_finds_a_pinned_buffer_below_its_neighbour() -> None:
    problem = Problem((Buffer("a", 8, 0, 2), Buffer("p", 8, 1, 3, pinned_offset=4)))
    plan = ParametricPlan(
        ids=("a", "p"),
        pools=("workspace", "workspace"),
        below=((), (0,)),
        alignments=(1, 1),
        pinned=(None, 4),
        max_sizes=(8, 8),
        order=(0, 1),
        pool_names=("workspace",),
    )
    [finding] = check_parametric(problem, plan)
    assert "'a' reaches 8" in finding and "'p' pinned at 4" in finding


def _placed(**offsets: int) -> Solution:
    return Solution({name: Placement("workspace", offset) for name, offset in offsets.items()})


def test_choose_keeps_the_order_closest_to_the_static_plans() -> None:
    # Both orders take 28 bytes at the maximum sizes; at the sample, where
    # b and c are empty, the bound's order stacks d over c over a (12 bytes)
    # where the static plan's puts d and a side by side under c (8 bytes).
    problem = Problem(
        (Buffer("a", 16, 1, 3), Buffer("b", 16, 3, 4), Buffer("c", 4, 1, 4), Buffer("d", 8, 3, 5))
    )
    bound = _placed(a=0, b=0, c=16, d=20)
    sample = (4, 0, 0, 8)
    static = _placed(a=0, b=0, c=4, d=0)
    assert validate(at_sizes(problem, sample), static) == []
    own = derive_parametric(problem, bound)
    assert evaluate(own, sample).total == 12
    choice = choose_parametric(problem, bound, [(sample, static)], [(sample, 8)])
    assert choice.candidate == 0
    assert evaluate(choice.plan, sample).total == 8
    assert choice.worst == 1
    assert evaluate(choice.plan).pools == bound.used(problem)
    # Where the bound's order is as good, it wins the tie.
    tie = choose_parametric(problem, bound, [(sample, static)], [(max_sizes(problem), 28)])
    assert tie.candidate is None
