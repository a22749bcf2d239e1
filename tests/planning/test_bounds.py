"""Lower bounds: exact on known cases, never above any valid plan."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memplan.passes.planning.algorithms import solve
from memplan.passes.planning.bounds import (
    buffers_lower_bound,
    lower_bound,
    peak_live_bytes,
)
from memplan.passes.planning.model import Buffer, Pool, Problem
from memplan.passes.planning.validate import validate
from memplan_testing import examples
from tests.planning.strategies import brute_force_peak, buffers, problems


def test_peak_live_bytes_is_half_open() -> None:
    chain = [Buffer("a", 10, 0, 2), Buffer("b", 20, 2, 4), Buffer("c", 5, 1, 3)]
    assert peak_live_bytes(chain) == 25


def test_exclusive_branches_combine_as_max() -> None:
    items = [
        Buffer("outer", 8, 0, 10),
        Buffer("then", 100, 1, 5, branch=((7, 0),)),
        Buffer("else1", 30, 1, 5, branch=((7, 1),)),
        Buffer("else2", 40, 2, 4, branch=((7, 1),)),
    ]
    assert peak_live_bytes(items) == 108
    assert lower_bound(Problem(tuple(items)))["workspace"] == 108


def test_nested_branches() -> None:
    items = [
        Buffer("a", 10, 0, 4, branch=((1, 0), (2, 0))),
        Buffer("b", 20, 0, 4, branch=((1, 0), (2, 1))),
        Buffer("c", 5, 0, 4, branch=((1, 0),)),
        Buffer("d", 24, 0, 4, branch=((1, 1),)),
    ]
    assert peak_live_bytes(items) == 25


def test_inconsistent_paths_fall_back_to_a_valid_bound() -> None:
    # Choice 2 appears under two different prefixes: no region tree exists.
    items = [
        Buffer("a", 10, 0, 4, branch=((1, 0), (2, 0))),
        Buffer("b", 20, 0, 4, branch=((2, 1),)),
        Buffer("c", 5, 0, 4),
    ]
    assert peak_live_bytes(items) == 25


def test_alignment_rounding() -> None:
    # Two 1-byte buffers aligned to 4 live together: the second starts at >= 4.
    pair = [Buffer("a", 1, 0, 2, alignment=4), Buffer("b", 1, 0, 2, alignment=4)]
    assert buffers_lower_bound(pair) == 5
    assert buffers_lower_bound(pair[:1], pool_alignment=16) == 1


def test_pool_and_group_keys() -> None:
    pools = (Pool("fast", size=64), Pool("slow"), Pool("other"))
    items = (
        Buffer("f", 32, 0, 4, candidates=("fast",)),
        Buffer("s", 16, 0, 4, candidates=("slow",)),
        Buffer("either", 48, 0, 4, candidates=("fast", "slow")),
    )
    bounds = lower_bound(Problem(items, pools))
    assert bounds["fast"] == 32
    assert bounds["slow"] == 16
    assert bounds["other"] == 0
    assert bounds[("fast", "slow")] == 96


@settings(max_examples=examples(60), deadline=None)
@given(buffers(max_buffers=6), st.sampled_from([1, 4, 16]))
def test_bound_never_exceeds_the_optimum(items: list[Buffer], pool_alignment: int) -> None:
    assert buffers_lower_bound(items, pool_alignment) <= brute_force_peak(items, pool_alignment)


@settings(max_examples=examples(60), deadline=None)
@given(problems(max_buffers=14))
def test_bound_never_exceeds_a_valid_plan(problem: Problem) -> None:
    solution = solve(problem, "greedy-by-size")
    if validate(problem, solution):
        return  # an incomplete plan (tiny bounded pools) proves nothing
    used = solution.used(problem)
    for key, value in lower_bound(problem).items():
        if isinstance(key, str):
            assert value <= used[key]
        else:
            assert value <= sum(used[name] for name in key)
