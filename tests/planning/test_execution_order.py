"""Operator orders: every scheduler gives a topological order, the peak is
simulated as a brute force over live sets computes it, the exact search
finds the lowest peak over every topological order, and the best order is
never worse than the given one."""

from __future__ import annotations

import itertools
from typing import get_args

from hypothesis import given, settings
from hypothesis import strategies as st

from memplan.passes.planning.execution_order import (
    SCHEDULERS,
    ScheduleAlgorithm,
    ScheduleProblem,
    best_schedule,
    exact_schedule,
    is_topological,
    simulate_peak,
)
from memplan_testing import examples


@st.composite
def dags(draw: st.DrawFn, max_count: int = 14) -> ScheduleProblem:
    count = draw(st.integers(1, max_count))
    sizes, reads, alias_of = [], [], []
    for node in range(count):
        operands = tuple(
            sorted(draw(st.sets(st.integers(0, node - 1), max_size=3))) if node else ()
        )
        view = bool(operands) and draw(st.booleans()) and draw(st.booleans())
        if view:
            owner = alias_of[operands[0]]
            alias_of.append(operands[0] if owner is None else owner)
            sizes.append(0)
            operands = operands[:1]
        else:
            alias_of.append(None)
            sizes.append(draw(st.integers(0, 64)))
        reads.append(operands)
    kept = frozenset(draw(st.sets(st.integers(0, count - 1), max_size=2)))
    kept |= {alias_of[k] for k in kept if alias_of[k] is not None}
    return ScheduleProblem(tuple(sizes), tuple(reads), tuple(alias_of), frozenset(kept))


def brute_peak(problem: ScheduleProblem, order: list[int]) -> int:
    """Live bytes after each step, from scratch: an owner is live from its
    node until its last reader (or alias reader) has run, or to the end."""
    position = {node: i for i, node in enumerate(order)}
    count = len(order)
    peak = 0
    for step in range(count):
        live = 0
        for node in range(count):
            if problem.alias_of[node] is not None or position[node] > step:
                continue
            users = [
                position[user]
                for user in range(count)
                if node in {problem.owner(r) for r in problem.reads[user]}
                or problem.alias_of[user] == node
            ]
            end = count if node in problem.kept else max(users, default=position[node])
            if step <= end:
                live += problem.sizes[node]
        peak = max(peak, live)
    return peak


@given(dags())
@settings(max_examples=examples(200))
def test_orders_are_topological_and_peaks_match_brute_force(problem: ScheduleProblem) -> None:
    for name, scheduler in SCHEDULERS.items():
        order = scheduler(problem)
        assert is_topological(problem, order), name
        assert simulate_peak(problem, order) == brute_peak(problem, order), name


@given(dags())
@settings(max_examples=examples(200))
def test_best_is_never_worse_than_the_given_order(problem: ScheduleProblem) -> None:
    order, peak, _ = best_schedule(problem)
    assert is_topological(problem, order)
    assert peak == simulate_peak(problem, order) <= simulate_peak(problem, range(len(order)))


def test_list_schedule_finishes_a_branch_before_starting_the_next() -> None:
    # 0: input; 1, 2: big; 3 = shrink(1), 4 = shrink(2); 5 = add(3, 4).
    problem = ScheduleProblem(
        (16, 1024, 1024, 16, 16, 16),
        ((), (0,), (0,), (1,), (2,), (3, 4)),
        (None,) * 6,
        frozenset({5}),
    )
    assert simulate_peak(problem, range(6)) == 16 + 2048  # both big tensors live
    order, peak, name = best_schedule(problem)
    assert order == [0, 1, 3, 2, 4, 5] and name == "list"
    assert peak == 16 + 1024 + 16


@given(dags(max_count=7))
@settings(max_examples=examples(150))
def test_exact_finds_the_lowest_peak_of_all_orders(problem: ScheduleProblem) -> None:
    count = len(problem.sizes)
    lowest = min(
        brute_peak(problem, list(order))
        for order in itertools.permutations(range(count))
        if is_topological(problem, order)
    )
    order = exact_schedule(problem)
    assert order is not None and is_topological(problem, order)
    assert simulate_peak(problem, order) == lowest
    assert best_schedule(problem)[1] == lowest


def test_exact_runs_a_kept_output_last_where_the_heuristics_do_not() -> None:
    # 0: input (2 B); 1 = big(0) and 2 = big(0), 16 B each; 3 = small(0, 2).
    # 1 and 3 are kept. Running 1 first keeps it live while 2 and 3 run
    # (peak 2 + 16 + 16 + 2 = 36); running it last needs only 20.
    problem = ScheduleProblem(
        (2, 16, 16, 2), ((), (0,), (0,), (0, 2)), (None,) * 4, frozenset({1, 3})
    )
    heuristic = min(simulate_peak(problem, SCHEDULERS[n](problem)) for n in ("list", "dfs"))
    assert heuristic == simulate_peak(problem, range(4)) == 36
    order, peak, name = best_schedule(problem)
    assert (order, peak, name) == ([0, 2, 3, 1], 20, "exact")


def test_exact_gives_up_past_its_state_budget() -> None:
    # Ten independent nodes: 2^10 subsets, more than a budget of 100 states.
    problem = ScheduleProblem((1,) * 10, ((),) * 10, (None,) * 10, frozenset(range(10)))
    assert exact_schedule(problem, max_states=100) is None
    assert exact_schedule(problem) is not None


def test_algorithm_option_lists_the_schedulers() -> None:
    """The pass's `algorithm` option is `best` or exactly a registered scheduler."""
    assert set(get_args(ScheduleAlgorithm)) == {"best", *SCHEDULERS}


def test_exact_gives_up_past_its_move_budget() -> None:
    """30 independent kept nodes: every subset is a state within the bound,
    so the search gives up; 4 of them are searched within the same budget."""
    wide = ScheduleProblem((1,) * 30, ((),) * 30, (None,) * 30, frozenset(range(30)))
    assert exact_schedule(wide, max_states=1_000) is None
    small = ScheduleProblem((1,) * 4, ((),) * 4, (None,) * 4, frozenset(range(4)))
    assert exact_schedule(small, max_states=1_000) == [0, 1, 2, 3]
