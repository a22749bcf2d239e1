"""Every algorithm: valid plans on random problems, optimality, determinism."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplan.passes.planning.algorithms import ALGORITHMS, PlanOptions, solve
from memplan.passes.planning.algorithms.greedy import GreedyPlacer
from memplan.passes.planning.algorithms.pool_search import PoolSearch, SearchStatus, luby
from memplan.passes.planning.bounds import lower_bound
from memplan.passes.planning.io import read_csv
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.validate import validate
from memplan_testing import examples
from tests.planning.strategies import brute_force_peak, buffers, problems, tiled_buffers

FAST = PlanOptions(budget=50_000, iterations=20)
NAMES = sorted(ALGORITHMS)


@pytest.mark.parametrize("algorithm", NAMES)
@settings(max_examples=examples(25), deadline=None)
@given(problem=problems(max_buffers=12))
def test_every_algorithm_returns_a_valid_plan(algorithm: str, problem: Problem) -> None:
    solution = solve(problem, algorithm, FAST)
    findings = validate(problem, solution)
    if solution.status in ("infeasible", "unknown"):
        # Only buffers that fit nowhere may be missing; nothing else may be wrong.
        assert {f.kind for f in findings} <= {"unplaced"}
    else:
        assert findings == [], [f.message for f in findings]
        assert solution.status in ("optimal", "feasible")


@pytest.mark.parametrize("algorithm", NAMES)
@settings(max_examples=examples(15), deadline=None)
@given(problem=problems(max_buffers=8))
def test_deterministic(algorithm: str, problem: Problem) -> None:
    # Searches stop on node budgets, never on the clock (no timeout is set).
    options = PlanOptions(iterations=20)
    first = solve(problem, algorithm, options)
    second = solve(problem, algorithm, options)
    assert first.placements == second.placements
    assert first.status == second.status


@settings(max_examples=examples(60), deadline=None)
@given(buffers(max_buffers=6), st.sampled_from([1, 8]))
def test_exact_matches_brute_force(items: list[Buffer], pool_alignment: int) -> None:
    problem = Problem(tuple(items), (Pool("mem", alignment=pool_alignment),))
    solution = solve(problem, "exact", PlanOptions())
    assert validate(problem, solution) == []
    assert solution.status == "optimal"
    assert solution.used(problem)["mem"] == brute_force_peak(items, pool_alignment)


@settings(max_examples=examples(40), deadline=None)
@given(buffers(max_buffers=6))
def test_exact_decision_is_tight(items: list[Buffer]) -> None:
    items = [b for b in items if b.size > 0]
    optimum = brute_force_peak(items)
    search = PoolSearch(items, [b.alignment for b in items], ["WAT", "TAW", "TWA"])
    assert search.decide(optimum)[0] is SearchStatus.FOUND
    if optimum > 0:
        assert search.decide(optimum - 1)[0] is SearchStatus.NOT_FOUND


@settings(max_examples=examples(40), deadline=None)
@given(buffers(max_buffers=7))
def test_exact_decision_is_tight_unaligned(items: list[Buffer]) -> None:
    # Without alignments the search lifts conflicts by its unaligned path
    # (MiniMalloc's CSV problems take it).
    items = [replace(b, alignment=1) for b in items if b.size > 0]
    optimum = brute_force_peak(items)
    search = PoolSearch(items, [1] * len(items), ["TWA", "TAW", "WAT"])
    assert search.unaligned
    assert search.decide(optimum)[0] is SearchStatus.FOUND
    if optimum > 0:
        assert search.decide(optimum - 1)[0] is SearchStatus.NOT_FOUND


@settings(max_examples=examples(30), deadline=None)
@given(buffers(max_buffers=7, branches=False), st.integers(0, 3))
def test_exact_feasibility_under_capacity(items: list[Buffer], slack: int) -> None:
    optimum = brute_force_peak(items)
    fits = Problem(tuple(items), (Pool("mem", size=optimum + slack),))
    solution = solve(fits, "exact", PlanOptions(minimize=False))
    assert validate(fits, solution) == []
    if optimum > 0:
        too_small = Problem(tuple(items), (Pool("mem", size=optimum - 1),))
        assert solve(too_small, "exact", PlanOptions(minimize=False)).status == "infeasible"


def test_gap_filling_not_stacking() -> None:
    # 'y' sits at 100 above 'x'; 'z' conflicts only with 'y' and fits in the
    # gap below it. USMP's stacking greedy would put 'z' at 190.
    problem = Problem(
        (
            Buffer("x", 100, 0, 4),
            Buffer("y", 90, 3, 10),
            Buffer("z", 80, 5, 10),
        )
    )
    for algorithm in ("greedy-by-size", "greedy-by-conflicts"):
        solution = solve(problem, algorithm)
        assert validate(problem, solution) == []
        assert solution.placements["z"].offset == 0 or solution.placements["y"].offset == 0
        assert solution.used(problem)["workspace"] == 190


def test_fallback_to_next_candidate_pool() -> None:
    pools = (Pool("sram", size=100, alignment=16), Pool("dram", alignment=64))
    problem = Problem(
        (
            Buffer("a", 80, 0, 4, candidates=("sram", "dram")),
            Buffer("b", 40, 0, 4, candidates=("sram", "dram")),
            Buffer("c", 20, 0, 4, candidates=("sram", "dram")),
        ),
        pools,
    )
    for algorithm in NAMES:
        solution = solve(problem, algorithm, FAST)
        assert validate(problem, solution) == []
        assert solution.placements["a"] == Placement("sram", 0)
        assert solution.placements["b"].pool == "dram"
        # 'c' still fits above 'a' in sram (80 is a multiple of sram's 16).
        assert solution.placements["c"] == Placement("sram", 80)


def test_devices_and_read_only_pools() -> None:
    pools = (
        Pool("npu_sram", size=64, targets=("npu",)),
        Pool("flash", access="ro"),
        Pool("dram", targets=("cpu",)),
    )
    problem = Problem(
        (
            Buffer("weights", 32, 0, 9, read_only=True, candidates=("flash", "dram")),
            Buffer("npu_act", 32, 0, 4, device="npu"),
            Buffer("cpu_act", 32, 0, 4),
        ),
        pools,
    )
    for algorithm in NAMES:
        solution = solve(problem, algorithm, FAST)
        assert validate(problem, solution) == []
        assert solution.placements["weights"].pool == "flash"
        assert solution.placements["npu_act"].pool == "npu_sram"
        assert solution.placements["cpu_act"].pool == "dram"


def test_exclusive_branches_share_bytes() -> None:
    problem = Problem(
        (
            Buffer("then", 64, 0, 4, branch=((1, 0),)),
            Buffer("else", 64, 0, 4, branch=((1, 1),)),
        )
    )
    for algorithm in NAMES:
        solution = solve(problem, algorithm, FAST)
        assert solution.used(problem)["workspace"] == 64
        assert solution.status == "optimal"


def test_pinned_buffers_stay_put() -> None:
    problem = Problem(
        (
            Buffer("pinned", 16, 0, 4, pinned_offset=32),
            Buffer("a", 16, 0, 4),
            Buffer("b", 16, 0, 4),
            Buffer("c", 16, 0, 4),
        )
    )
    for algorithm in NAMES:
        solution = solve(problem, algorithm, FAST)
        assert validate(problem, solution) == []
        assert solution.placements["pinned"].offset == 32
        assert solution.used(problem)["workspace"] == 64


def test_buffer_that_fits_nowhere_is_reported() -> None:
    problem = Problem((Buffer("huge", 1000, 0, 1),), (Pool("tiny", size=10),))
    for algorithm in NAMES:
        solution = solve(problem, algorithm, FAST)
        assert solution.status == "infeasible"
        assert solution.unplaced(problem) == ["huge"]


def test_auto_stops_at_the_lower_bound() -> None:
    problem = Problem(tuple(Buffer(f"b{i}", 8, i, i + 2) for i in range(50)))
    solution = solve(problem, "auto")
    assert solution.status == "optimal"
    assert solution.stats["stage"] == "greedy"
    assert solution.used(problem)["workspace"] == lower_bound(problem)["workspace"]


@settings(max_examples=examples(50), deadline=None)
@given(
    lifetimes=st.lists(st.tuples(st.integers(0, 100), st.integers(1, 40)), min_size=1, max_size=60),
    alignment=st.sampled_from([1, 16, 64]),
)
def test_auto_meets_the_bound_of_one_size_without_search(
    lifetimes: list[tuple[int, int]], alignment: int
) -> None:
    # Buffers of one size (a multiple of their alignment): the left-edge
    # greedy order meets the live-bytes bound, so no search stage runs.
    problem = Problem(
        tuple(
            Buffer(f"b{i}", 64, start, start + length, alignment=alignment)
            for i, (start, length) in enumerate(lifetimes)
        )
    )
    solution = solve(problem, "auto")
    assert solution.status == "optimal"
    assert solution.stats["stage"] == "greedy"
    assert solution.used(problem)["workspace"] == lower_bound(problem)["workspace"]


def test_unknown_algorithm() -> None:
    with pytest.raises(KeyError, match="unknown algorithm 'nope'"):
        solve(Problem(()), "nope")


@settings(max_examples=examples(20), deadline=None)
@given(problem=problems(max_buffers=12, bounded=False))
def test_searches_never_lose_to_greedy(problem: Problem) -> None:
    greedy = min(
        sum(solve(problem, name).used(problem).values())
        for name in ("greedy-by-size", "greedy-by-conflicts")
    )
    for name in ("hill-climb", "auto"):
        assert sum(solve(problem, name, FAST).used(problem).values()) <= greedy


def _minimalloc_problem(name: str) -> Problem:
    """One of MiniMalloc's challenging problems at its 1 MiB capacity (from
    ``../shared`` beside the repository)."""
    suite = Path(__file__).resolve().parents[3] / f"shared/benchmarks/minimalloc/{name}.1048576.csv"
    if not suite.is_file():
        pytest.skip("MiniMalloc suite not available")
    return read_csv(suite, 1048576)


def test_exact_reports_timeout_with_the_best_partial_plan() -> None:
    # A budget too small to find a plan within 1 MiB: status `unknown`, and
    # the stats say the budget (not the clock) stopped it.
    problem = _minimalloc_problem("A")
    solution = solve(problem, "exact", PlanOptions(budget=2000, minimize=False))
    assert solution.status == "unknown"
    assert solution.stats["stopped_by"] == "budget"
    assert int(solution.stats["work"]) >= 2000
    # What the greedy could place is kept, and is valid as far as it goes.
    assert {f.kind for f in validate(problem, solution)} == {"unplaced"}


def test_opt_in_timeout_is_reported() -> None:
    # An explicit wall-clock limit still stops the search, and says so.
    problem = _minimalloc_problem("A")
    solution = solve(problem, "exact", PlanOptions(timeout=0.05, minimize=False))
    assert solution.status == "unknown"
    assert solution.stats["stopped_by"] == "timeout"


def test_feasibility_tries_the_lower_bound_first() -> None:
    """Asked only for a plan within 1 MiB, `exact` first decides the lower
    bound (1,039,360 on MiniMalloc's C) with a small node budget: a plan there
    is found in a few hundred nodes, where deciding 1 MiB itself takes tens
    of thousands, and it is optimal."""
    problem = _minimalloc_problem("C")
    solution = solve(problem, "exact", PlanOptions(minimize=False))
    assert solution.status == "optimal"
    assert solution.used(problem) == {"workspace": 1039360}
    assert validate(problem, solution) == []


def test_portfolio_resumes_instead_of_restarting() -> None:
    """On MiniMalloc's I only TWA, last of three preorders, finishes soon.
    Each preorder is resumed where it paused, never restarted, so when TWA
    alone needs N nodes the portfolio of p preorders, whose slices double
    from 2n, visits at most p * (2N + 2n) (each preorder stops within the
    round TWA finishes in). Restarting each round, as MiniMalloc does,
    visited 14,507 nodes here, above that bound."""
    problem = _minimalloc_problem("I")
    buffers = problem.buffers
    alone = PoolSearch(buffers, [1] * len(buffers), ["TWA"])
    status, _ = alone.decide(1048576)
    assert status == SearchStatus.FOUND
    portfolio = PoolSearch(buffers, [1] * len(buffers), ["WAT", "TAW", "TWA"])
    status, offsets = portfolio.decide(1048576)
    assert status == SearchStatus.FOUND
    assert portfolio.visited <= 3 * (2 * alone.visited + 2 * len(buffers))
    pool = problem.pools[0].name
    solution = Solution({b.id: Placement(pool, o) for b, o in zip(buffers, offsets)})
    assert validate(problem, solution) == []


@settings(max_examples=examples(40), deadline=None)
@given(buffers(max_buffers=7, branches=False), st.integers(-1, 2), st.integers(1, 5))
def test_a_decision_resumed_in_steps_decides_the_same(
    items: list[Buffer], slack: int, step: int
) -> None:
    # `Decision.advance` pauses the portfolio and resumes it where it was:
    # a decision run a few nodes at a time ends as one run outright.
    items = [b for b in items if b.size > 0]
    capacity = max(brute_force_peak(items) + slack, 0)
    alignments = [b.alignment for b in items]
    outright = PoolSearch(items, alignments, ["TWA", "TAW", "WAT"])
    expected, _ = outright.decide(capacity)
    stepped = PoolSearch(items, alignments, ["TWA", "TAW", "WAT"])
    decision = stepped.start(capacity)
    status, offsets = decision.advance(None, step)
    while status is SearchStatus.TIMED_OUT:
        status, offsets = decision.advance(None, step)
    assert status is expected
    assert stepped.visited == outright.visited
    if status is SearchStatus.FOUND:
        placed = {b.id: Placement("mem", o) for b, o in zip(items, offsets)}
        fits = Problem(tuple(items), (Pool("mem", size=capacity),))
        assert validate(fits, Solution(placed)) == []


@settings(max_examples=examples(40), deadline=None)
@given(
    buffers(max_buffers=8, branches=False),
    st.integers(-1, 2),
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(0, 3),
)
def test_restarts_decide_like_one_search(
    items: list[Buffer], slack: int, unit: int, step: int, seed: int
) -> None:
    # `Restarts` cuts its searches after `unit` x Luby's sequence nodes and
    # shuffles the preorders from the second round on: it still finds a
    # plan exactly when one fits (a restart that finishes is complete), its
    # plans fit, and the same seed gives the same nodes.
    items = [b for b in items if b.size > 0]
    capacity = max(brute_force_peak(items) + slack, 0)
    alignments = [b.alignment for b in items]
    expected, _ = PoolSearch(items, alignments, ["TWA", "TAW", "WAT"]).decide(capacity)
    runs = []
    for _ in range(2):
        search = PoolSearch(items, alignments, ["TWA", "TAW", "WAT"])
        restarts = search.restarts(capacity, unit, seed)
        status, offsets = restarts.advance(None, step)
        while status is SearchStatus.TIMED_OUT:
            status, offsets = restarts.advance(None, step)
        runs.append((status, offsets, search.visited))
    assert runs[0] == runs[1]
    status, offsets, _ = runs[0]
    assert status is expected
    if status is SearchStatus.FOUND:
        placed = {b.id: Placement("mem", o) for b, o in zip(items, offsets)}
        fits = Problem(tuple(items), (Pool("mem", size=capacity),))
        assert validate(fits, Solution(placed)) == []


def test_luby_sequence() -> None:
    assert [luby(i) for i in range(1, 16)] == [1, 1, 2, 1, 1, 2, 4, 1, 1, 2, 1, 1, 2, 4, 8]


@pytest.mark.parametrize("algorithm", NAMES)
@settings(max_examples=examples(20), deadline=None)
@given(buffers(max_buffers=8, branches=False), st.integers(0, 3))
def test_no_infeasible_where_a_plan_exists(algorithm: str, items: list[Buffer], slack: int) -> None:
    # At a capacity some plan meets, an algorithm may fail to find one
    # (`unknown`), never claim `infeasible`; below the bound every one proves it.
    optimum = brute_force_peak(items)
    fits = Problem(tuple(items), (Pool("mem", size=optimum + slack),))
    solution = solve(fits, algorithm, PlanOptions(minimize=False, budget=200, iterations=5))
    assert solution.status != "infeasible"
    if solution.status != "unknown":
        assert validate(fits, solution) == []
    bound = lower_bound(Problem(tuple(items)))["workspace"]
    if bound > 0:
        too_small = Problem(tuple(items), (Pool("mem", size=bound - 1),))
        assert solve(too_small, algorithm, PlanOptions(minimize=False)).status == "infeasible"


@pytest.mark.parametrize("seed", range(6))
def test_capacities_above_the_bound_are_met_within_the_same_budget(seed: int) -> None:
    # Tiled problems reach their bound (1024) only by search; whatever budget
    # meets the bound meets every larger capacity too.
    items = tiled_buffers(40, seed)
    budget = 8000
    at_bound = solve(
        Problem(tuple(items), (Pool("mem", size=1024),)),
        "auto",
        PlanOptions(minimize=False, budget=budget),
    )
    assert at_bound.status == "optimal"
    for factor in (1.01, 1.05, 1.10):
        problem = Problem(tuple(items), (Pool("mem", size=int(1024 * factor)),))
        solution = solve(problem, "auto", PlanOptions(minimize=False, budget=budget))
        assert solution.status in ("optimal", "feasible")
        assert validate(problem, solution) == []


def test_time_components_get_the_exact_search_past_its_size_limit() -> None:
    """Three tiled segments one after another: too many buffers for one
    exact search (``exact_max_buffers``), but each segment is a time
    component of its own, small enough: `auto` plans them apart and proves
    the bound, where hill climbing over the whole problem does not reach it."""
    segments = [tiled_buffers(30, seed) for seed in (1, 2, 3)]
    items = [
        replace(b, id=f"{n}.{b.id}", start=b.start + 64 * n, end=b.end + 64 * n)
        for n, segment in enumerate(segments)
        for b in segment
    ]
    options = PlanOptions(exact_max_buffers=40, budget=20_000)
    problem = Problem(tuple(items), (Pool("mem", size=1024),))
    solution = solve(problem, "auto", options)
    assert (solution.status, solution.stats["stage"], solution.stats["components"]) == (
        "optimal",
        "time-components",
        3,
    )
    assert validate(problem, solution) == []
    climbed = solve(problem, "hill-climb", options)
    assert climbed.status == "unknown"
    minimised = solve(Problem(tuple(items), (Pool("mem"),)), "auto", options)
    assert minimised.status == "optimal" and minimised.peak(problem) == 1024


def test_small_time_components_are_planned_apart() -> None:
    """Within the exact search's size limit, ``auto`` still plans time
    components apart when none holds more than half the buffers (one search
    over all would backtrack through parts that do not interact); with one
    component holding most of them, the exact search takes the whole pool."""
    segments = [tiled_buffers(30, seed) for seed in (0, 1, 2, 3)]
    items = [
        replace(b, id=f"{n}.{b.id}", start=b.start + 64 * n, end=b.end + 64 * n)
        for n, segment in enumerate(segments)
        for b in segment
    ]
    for size in (1024, 1075, None):
        problem = Problem(tuple(items), (Pool("mem", size=size),))
        solution = solve(problem, "auto", PlanOptions(minimize=size is None))
        assert (solution.stats["stage"], solution.stats["components"]) == ("time-components", 4)
        assert solution.status == ("feasible" if size == 1075 else "optimal")
        assert validate(problem, solution) == []
    # Segment 0 grown to more than half the buffers: one exact search.
    lopsided = tiled_buffers(100, 0) + items[30:60]
    problem = Problem(tuple(lopsided), (Pool("mem"),))
    solution = solve(problem, "auto", PlanOptions(budget=5000))
    assert solution.stats["stage"] == "exact"
    assert validate(problem, solution) == []


def test_a_pool_choice_that_fails_is_no_proof() -> None:
    # Priority keeps x (largest) in fast; y and z then need 512 bytes of
    # slow's 384. A plan exists (y, z in fast; x in slow), so a complete
    # search of the chosen pools proves nothing about the problem.
    pools = (Pool("fast", size=512), Pool("slow", size=384))
    items = (Buffer("x", 384, 0, 4), Buffer("y", 256, 0, 4), Buffer("z", 256, 0, 4))
    for algorithm in NAMES:
        solution = solve(Problem(items, pools), algorithm, FAST)
        assert solution.status != "infeasible" and "proof" not in solution.stats, algorithm
    solution = solve(Problem(items, pools), "exact", FAST)
    assert (solution.status, solution.stats["reason"]) == ("unknown", "pool-choice")
    # With x forced into slow, the choice is the only one and the plan fits.
    forced = (replace(items[0], candidates=("slow",)), *items[1:])
    assert solve(Problem(forced, pools), "exact", FAST).status == "optimal"
    # Forced into too small a pool, the search's proof holds for the problem.
    cramped = tuple(replace(b, candidates=("slow",)) for b in items[1:])
    solution = solve(Problem((items[0], *cramped), pools), "exact", FAST)
    assert (solution.status, solution.stats["proof"]) == ("infeasible", "bound")


def test_pools_linked_by_candidates_are_bounded_together() -> None:
    # Three 8-byte buffers live together, each free to use either 8-byte
    # pool: 24 live bytes exceed the 16 both hold, whatever the choice.
    pools = (Pool("a", size=8), Pool("b", size=8))
    items = tuple(Buffer(name, 8, 0, 2) for name in "xyz")
    for algorithm in NAMES:
        solution = solve(Problem(items, pools), algorithm, FAST)
        assert (solution.status, solution.stats.get("proof")) == ("infeasible", "bound")


def test_components_left_open_are_retried_with_a_wider_portfolio() -> None:
    """A 50-buffer tiling of 1 MiB that the default preorders settle only
    after about 48,000 nodes (the start-first one in a few hundred): as one
    time component among five, its first-round share does not settle it,
    and the next round retries it with the wider portfolio, reaching the
    bound within a budget the default portfolio alone would not."""
    width = 1 << 20
    hard = tiled_buffers(50, 0, width=width)
    items = list(hard)
    for n in range(1, 5):
        easy = tiled_buffers(10, n, width=width)
        items += [
            replace(b, id=f"{n}.{b.id}", start=b.start + 64 * n, end=b.end + 64 * n) for b in easy
        ]
    problem = Problem(tuple(items), (Pool("mem", size=width),))
    options = PlanOptions(exact_max_buffers=50, budget=20_000, minimize=False)
    solution = solve(problem, "auto", options)
    assert (solution.status, solution.stats["stage"]) == ("optimal", "time-components")
    assert validate(problem, solution) == []
    narrow = solve(Problem(tuple(hard), problem.pools), "exact", options)
    assert narrow.status == "unknown"


@settings(max_examples=examples(60), deadline=None)
@given(problem=problems(max_buffers=14))
def test_occupancy_placement_places_like_the_neighbour_lists(problem: Problem) -> None:
    """The greedy placer's two ways of finding the lowest gap (listing the
    time-overlapping neighbours, or the ``OccupancyTree`` of merged byte
    ranges it takes past a mean of 64 neighbours) give the same offsets and
    pools in any order, pinned buffers, pool sizes and fallback included."""
    sized = tuple(replace(b, size=max(b.size, 1), branch=()) for b in problem.buffers)
    placer = GreedyPlacer(Problem(sized, problem.pools))
    for order in (placer.size_order(), placer.conflict_order(), placer.size_order()[::-1]):
        placer.by_occupancy = False
        listed = placer.place(order)
        placer.by_occupancy = True
        assert placer.place(order) == listed


@settings(max_examples=examples(60), deadline=None)
@given(problem=problems(max_buffers=14))
def test_start_window_placement_places_like_the_neighbour_lists(problem: Problem) -> None:
    """The start-rank window scan the greedy placer takes for short
    lifetimes lists the same neighbours as the ``PrefixMaxTree`` query:
    the same offsets and pools in any order, ``scf.if`` branches, pinned
    buffers, zero sizes, pool sizes and fallback included."""
    placer = GreedyPlacer(problem)
    placer.by_occupancy = False
    for order in (placer.size_order(), placer.conflict_order(), placer.size_order()[::-1]):
        placer.by_window = False
        listed = placer.place(order)
        placer.by_window = True
        assert placer.place(order) == listed


def test_nested_lifetimes_take_the_occupancy_tree() -> None:
    """Training-like nested lifetimes (each of 400 buffers beside all the
    others) are placed through the ``OccupancyTree``; short chains are not."""
    nested = Problem(tuple(Buffer(f"a{i}", 64 + i % 7, i, 1000 - i) for i in range(400)))
    chain = Problem(tuple(Buffer(f"c{i}", 64, i, i + 2) for i in range(400)))
    assert GreedyPlacer(nested).by_occupancy
    assert not GreedyPlacer(chain).by_occupancy
    # The chain's lifetimes are short: its neighbours come from a start window.
    assert GreedyPlacer(chain).by_window and not GreedyPlacer(nested).by_window
    solution = solve(nested, "auto")
    assert solution.status == "optimal" and validate(nested, solution) == []
