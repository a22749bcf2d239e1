"""Complete search for offsets: MiniMalloc's algorithm, in pure Python.

``exact`` first assigns every buffer a pool by candidate priority, falling
back only when a buffer does not fit (``pool_assignment``, which uses the
decision of ``pool_search``), then, pool by pool, searches offsets with
``pool_search``'s decision: the heuristic peak is the first upper bound; a
decision at the lower bound comes first, then node-budgeted decisions walk
down from the best peak until it is proven minimal or the budget is spent.
At a capacity the heuristic plan does not meet, the decisions at the
capacity and at the lower bound take turns (``_race``): a plan at the bound
fits every larger capacity, and the bound is often the quicker to decide;
above the bound, the decision at the capacity restarts short searches in
shuffled preorders (``pool_search.Restarts``, seeded by ``options.seed``),
and so does a decision at a tighter target between the bound and the
capacity (a plan there fits the capacity).

Statuses: ``optimal`` when every pool's peak is proven minimal and every
buffer sits in its first usable candidate pool (so priority prefers no other
assignment; a forced pool is the special case); ``feasible`` for a valid
plan without that proof; ``infeasible`` only with a proof about the
problem: a buffer has no usable pool, or the bound or the search proves a
bounded pool cannot hold buffers that may go nowhere else (each forced
there: pinned, or its only candidate), or ``infeasibility_proof``'s bounds;
``unknown`` when no plan fitting the pool sizes was found without such a
proof: the budget ran out (``stats["stopped_by"]`` says which limit), or
the pools chosen by priority cannot hold their buffers while another
choice might (``stats["reason"]`` is ``pool-choice``: other assignments are
not searched). ``stats["proof"]`` says what proved ``infeasible``:
``bound`` (live bytes, rounded to the pool's granularity), ``search`` (a
complete search) or ``no-pool``. One ``Budget`` (``options.budget`` nodes, and
``options.timeout`` when given) bounds the assignment and the offset
searches together, the members of a race included (see ``_race``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from operator import add

from memplan.passes.planning.algorithms.budget import Budget, placement_cost
from memplan.passes.planning.algorithms.greedy import (
    GreedyPlacer,
    GreedyResult,
    infeasibility_proof,
)
from memplan.passes.planning.algorithms.options import PlanOptions
from memplan.passes.planning.algorithms.pool_assignment import (
    assign_pools,
    greedy_assignment,
)
from memplan.passes.planning.algorithms.pool_search import (
    Decision,
    PoolSearch,
    SearchStatus,
    pool_granularity,
    takes_bytes,
)
from memplan.passes.planning.bounds import buffers_lower_bound, forced_pool
from memplan.passes.planning.model import (
    Buffer,
    Placement,
    Pool,
    Problem,
    Solution,
    align_up,
)

TIGHTER_NUMERATOR, TIGHTER_DENOMINATOR = 19, 20
"""Above the bound the race also restarts searches at ``low + 19/20 (C - low)``
(rounded down to the pool's granularity), beside those at ``C``."""
RESTART_NODES = 512
"""Nodes of the shortest restart at a capacity (``Restarts``' unit; at
least the buffers plus 256, so that a restart can finish a descent)."""
_MAX_MISSES = 24  # undecided probes in a row before a minimisation pass gives up
# stats["proof"] of a pool's ``infeasible``: the live-bytes bound or a complete search.
PROOF_BOUND = 1
PROOF_SEARCH = 2
PROOFS = {PROOF_BOUND: "bound", PROOF_SEARCH: "search"}


def _solve_pool(
    buffers: list[Buffer],
    alignments: list[int],
    capacity: int | None,
    pool_alignment: int,
    incumbent: list[int] | None,
    options: PlanOptions,
    budget: Budget,
) -> tuple[str, list[int] | None, dict[str, int]]:
    """Best offsets for one pool: (status, offsets or None, stats).

    ``incumbent`` is a valid heuristic placement (its peak may exceed ``capacity``).
    """
    stats = {"probes": 0, "nodes": 0}
    sizes = [b.size for b in buffers]

    def peak(offsets: list[int]) -> int:
        return max((o + s for o, s in zip(offsets, sizes)), default=0)

    best = incumbent
    best_peak = peak(incumbent) if incumbent is not None else None
    lower = buffers_lower_bound(buffers, pool_alignment)
    if capacity is not None and lower > capacity:
        stats["proof"] = PROOF_BOUND
        return (
            "infeasible",
            best if best_peak is not None and best_peak <= capacity else None,
            stats,
        )
    if best_peak is not None and best_peak <= lower:
        return "optimal", best, stats
    search = PoolSearch(buffers, alignments, options.preorderings)

    def probe(
        limit: int, max_nodes: int | None = None, share: Budget | None = None
    ) -> SearchStatus:
        nonlocal best, best_peak
        stats["probes"] += 1
        status, offsets = search.decide(limit, budget if share is None else share, max_nodes)
        stats["nodes"] = search.visited
        if status == SearchStatus.FOUND:
            best, best_peak = offsets, peak(offsets)
        return status

    step = pool_granularity(buffers, alignments)
    low = align_up(lower, step)  # every capacity below ``low`` is too small
    # A cheap node budget for a decision at the bound: when the bound is
    # reachable this is often quicker than deciding a looser capacity (its
    # pruning is tighter), and a plan there is optimal.
    nodes = 4 * len(buffers) + 256

    def walk(share: Budget, stop_at: int) -> Generator[None, None, bool]:
        """Walk the best peak down, pausing after each probe, until it is at
        most ``stop_at``, proven minimal, or ``share`` is spent.

        Passes whose node budget doubles. Far from the bound, big strides
        (doubled after a plan is found, halved after a timeout); near it,
        single steps. Which capacities are quick to decide is erratic (a
        hard probe can sit right above an easy one), so at stride 1 a pass
        walks past timeouts and only gives up after ``_MAX_MISSES`` in a row.
        ``low`` only rises on a proof that everything below it is infeasible.
        Returns True when the peak is at most ``stop_at`` or proven minimal.
        """
        nonlocal low
        assert best_peak is not None
        walk_nodes = nodes
        while low < best_peak and best_peak > stop_at and not share.exhausted():
            stride = max(1, (best_peak - low) // step // 16)
            target = best_peak - stride * step
            misses = 0
            while misses < _MAX_MISSES and not share.exhausted():
                target = max(target, low)
                if target >= best_peak:
                    break
                status = probe(target, walk_nodes, share)
                if best_peak <= stop_at or low >= best_peak:
                    return True
                if status == SearchStatus.FOUND:
                    misses = 0
                    stride = max(1, min(stride * 2, (best_peak - low) // step // 2))
                    target = best_peak - stride * step
                elif status == SearchStatus.NOT_FOUND:
                    low = target + step
                    stride = max(1, stride // 2)
                    target = best_peak - stride * step
                elif stride > 1:
                    stride //= 2
                    target = best_peak - stride * step
                else:
                    misses += 1
                    if target == low:
                        break
                    target -= step
                yield
            walk_nodes *= 2
        return best_peak <= stop_at or low >= best_peak

    if capacity is not None and (best_peak is None or best_peak > capacity):
        assert best_peak is not None  # ``_incumbent`` always places every buffer
        if low > capacity:  # the bound, rounded to the granularity of every peak
            stats["proof"] = PROOF_BOUND
            return "infeasible", None, stats
        found = _race(search, low, capacity, step, nodes, budget, stats, walk, options.seed)
        if isinstance(found, str) or low > capacity:
            stats["proof"] = PROOF_SEARCH
            return "infeasible", None, stats
        if found is not None:
            best, best_peak = found[1], peak(found[1])
        if best_peak > capacity:
            return "unknown", None, stats
    assert best is not None and best_peak is not None
    if not options.minimize:
        return ("optimal" if best_peak <= low else "feasible"), best, stats
    # The bound itself is often reachable: first exactly what feasibility at
    # that capacity does (`_race` at ``low``) with half the budget, so that
    # whatever feasibility at the bound proves with budget N, minimising
    # with 2N proves too, in the same work (memplan-solve's default budget
    # is twice as large when minimising); then the walk, with what is left.
    if low < best_peak:
        race_budget = budget.part(0.5)
        found = _race(search, low, low, step, nodes, race_budget, stats, walk, options.seed)
        if found == "infeasible":
            low += step  # proven: nothing fits at ``low``
        elif isinstance(found, tuple):
            best, best_peak = found[1], peak(found[1])
    # Then walk down from the best peak; node budgets, not seconds, keep the
    # result independent of machine speed; the walk ends when ``budget`` is
    # spent.
    for _ in walk(budget, 0):
        pass
    return ("optimal" if low >= best_peak else "feasible"), best, stats


def _race(
    search: PoolSearch,
    low: int,
    capacity: int,
    step: int,
    nodes: int,
    budget: Budget,
    stats: dict[str, int],
    walk: Callable[[Budget, int], Generator[None, None, bool]],
    seed: int = 0,
) -> tuple[int, list[int]] | str | None:
    """Look for a plan within ``capacity`` several ways at once: (capacity
    decided, offsets) when a decision finds one, ``"infeasible"`` when the
    search proves nothing fits ``capacity``, else None (the walk may have
    found one: the caller looks at its best plan).

    Which capacities are quick to decide is erratic: a tight capacity prunes
    harder, and the bound is often reachable (a plan there fits any larger
    capacity), while a capacity a little above it can take far longer; when
    the bound is out of reach, walking the heuristic peak down (as
    minimisation does) often passes below ``capacity`` sooner than deciding
    it. So the decision at ``low`` (the lowest capacity the bound allows),
    the decision at ``capacity`` and the walk take turns, the decisions
    resumed where they paused, for slices of ``nodes`` that double every
    round (the walk: one probe per turn). Above the bound the decision at
    ``capacity`` is ``Restarts`` (seeded by ``seed``), whose first restart
    in each preorder runs before the turns: a loose capacity is met by a
    descent or two; ``Restarts`` at a tighter target (``TIGHTER_NUMERATOR``
    / ``TIGHTER_DENOMINATOR`` of the way up from ``low``, on the pool's
    granularity ``step``) take turns too. They share ``budget``: each
    member's budget is a part of it, so the race spends at most what
    ``budget`` has left, and no decision repeats work. A proof that ``low``
    does not fit ends its decision.
    """

    def member() -> Budget:
        """A member's own count, charged to ``budget`` and bounded by it."""
        return budget.part(1.0)

    decisions: list[tuple[int, Decision, Budget]] = []
    if low < capacity:
        # Above the bound, restarted searches at the capacity (``Restarts``):
        # one of a few dozen lightly shuffled preorders often finds a plan
        # no single preorder's search reaches within the budget (at the
        # bound the portfolio's own searches do better).
        unit = max(RESTART_NODES, search.count + 256)
        restarts = search.restarts(capacity, unit, seed)
        own = member()
        # First a restart in each preorder, unshuffled: where the capacity
        # is loose, one of their descents meets it at once, before the
        # bound's decision would have had a turn.
        stats["probes"] += 1
        status, offsets = restarts.advance(own, unit * len(search.preorderings))
        stats["nodes"] = search.visited
        if status == SearchStatus.FOUND:
            return capacity, offsets
        if status == SearchStatus.NOT_FOUND:
            return "infeasible"
        decisions.append((low, search.start(low), member()))
        decisions.append((capacity, restarts, own))
        # Restarts at a tighter target too (``TIGHTER``): a plan there fits
        # ``capacity``, and the tighter capacity prunes a wasteful partial
        # packing sooner, so its restarts find plans the ones at
        # ``capacity`` miss, and the other way round.
        tighter = low + (capacity - low) * TIGHTER_NUMERATOR // TIGHTER_DENOMINATOR
        tighter -= (tighter - low) % step
        if low < tighter < capacity:
            decisions.append((tighter, search.restarts(tighter, unit, seed), member()))
    else:
        decisions.append((capacity, search.start(capacity), member()))
    walk_budget = member()
    steps: Generator[None, None, bool] | None = walk(walk_budget, capacity)
    try:
        while (decisions or steps is not None) and not budget.exhausted():
            for entry in list(decisions):
                target, decision, own = entry
                stats["probes"] += 1
                status, offsets = decision.advance(own, nodes)
                stats["nodes"] = search.visited
                if status == SearchStatus.FOUND:
                    return target, offsets
                if status == SearchStatus.NOT_FOUND:
                    if target == capacity:
                        return "infeasible"
                    decisions.remove(entry)
                elif decision.result is not None:
                    budget.note("timeout")  # only the clock ends a decision unfinished
                    return None
                elif own.exhausted():
                    decisions.remove(entry)
            if steps is not None:
                done = False
                try:
                    next(steps)
                except StopIteration as finished:
                    steps, done = None, finished.value
                if done:
                    return None  # the walk met the capacity or proved it too small
            nodes *= 2
    finally:
        if walk_budget.stopped_by == "timeout":
            budget.note("timeout")
    if not budget.exhausted():
        budget.note("budget")
    return None


def exact(problem: Problem, options: PlanOptions | None = None) -> Solution:
    """Minimal peak per pool (or, with ``minimize=False``, any plan that fits)."""
    options = options or PlanOptions()
    started = time.perf_counter()
    budget = options.new_budget()
    placer = GreedyPlacer(problem)
    heuristic: GreedyResult = placer.place(placer.size_order())
    other = placer.place(placer.conflict_order())
    budget.charge(2 * placement_cost(placer.count))
    if other.cost() < heuristic.cost():
        heuristic = other
    return exact_from(placer, heuristic, options, budget, started)


def _incumbent(
    problem: Problem,
    pool_index: int,
    searched: list[int],
    packing: dict[int, int] | None,
    heuristic: GreedyResult,
    budget: Budget,
) -> list[int]:
    """The lowest-peak known valid offsets of ``searched`` in one pool.

    From the assignment's packing (within the pool's size), the greedy plan
    (when it put all of them there) or, otherwise, a greedy placement of just
    these buffers in the pool without its size limit (always complete; the
    search then decides whether they fit).
    """
    sizes = [problem.buffers[i].size for i in searched]
    choices: list[list[int]] = []
    if packing is not None and all(i in packing for i in searched):
        choices.append([packing[i] for i in searched])
    if all(heuristic.pools[i] == pool_index for i in searched):
        choices.append([heuristic.offsets[i] for i in searched])
    else:
        pool = problem.pools[pool_index]
        unbounded = Pool(pool.name, None, pool.alignment, pool.targets, pool.access)
        sub = GreedyPlacer(Problem(tuple(problem.buffers[i] for i in searched), (unbounded,)))
        budget.charge(placement_cost(sub.count))
        choices.append(sub.place(sub.size_order()).offsets)

    def peak(offsets: list[int]) -> int:
        return max(map(add, offsets, sizes), default=0)

    return min(choices, key=peak)


def _search_pools(
    placer: GreedyPlacer,
    heuristic: GreedyResult,
    chosen: list[int],
    packings: dict[int, dict[int, int]],
    options: PlanOptions,
    budget: Budget,
    stats: dict[str, float | int | str],
) -> tuple[dict[str, Placement], dict[int, tuple[str, str | None]]]:
    """Offsets pool by pool for the pool choice ``chosen``: (placements,
    {pool index: (status, proof of an ``infeasible`` or None)}).

    ``packings`` holds known valid offsets per pool (incumbents); search
    counts are added to ``stats``.
    """
    problem = placer.problem
    buffers = problem.buffers
    pools = problem.pools
    placements: dict[str, Placement] = {}
    statuses: dict[int, tuple[str, str | None]] = {}
    by_pool: dict[int, list[int]] = {}
    for index, pool_index in enumerate(chosen):
        if pool_index >= 0:
            by_pool.setdefault(pool_index, []).append(index)
    pool_order = sorted(by_pool)
    for position, pool_index in enumerate(pool_order):
        pool = pools[pool_index]
        members = by_pool[pool_index]
        searched = takes_bytes(buffers, members)
        for i in set(members).difference(searched):
            placements[buffers[i].id] = Placement(pool.name, 0)
        incumbent = _incumbent(
            problem, pool_index, searched, packings.get(pool_index), heuristic, budget
        )
        status, offsets, pool_stats = _solve_pool(
            [buffers[i] for i in searched],
            [pool.alignment_for(buffers[i]) for i in searched],
            pool.size,
            pool.alignment,
            incumbent,
            options,
            # An even share of what is left; what a pool leaves goes to the next.
            budget.part(1 / (len(pool_order) - position)),
        )
        stats["probes"] = int(stats["probes"]) + pool_stats["probes"]
        stats["nodes"] = int(stats["nodes"]) + pool_stats["nodes"]
        statuses[pool_index] = (status, PROOFS.get(pool_stats.get("proof", 0)))
        if offsets is not None:
            for i, offset in zip(searched, offsets):
                placements[buffers[i].id] = Placement(pool.name, offset)
        else:
            # No complete plan for this pool: keep what the heuristic placed.
            for i in searched:
                if heuristic.pools[i] == pool_index:
                    placements[buffers[i].id] = Placement(pool.name, heuristic.offsets[i])
    return placements, statuses


def _problem_proof(
    problem: Problem, chosen: list[int], statuses: dict[int, tuple[str, str | None]]
) -> str | None:
    """The proof that no plan of ``problem`` exists, given pools proven unable
    to hold the buffers ``chosen`` for them, or None.

    A pool's proof holds for the problem when each of its buffers is forced
    there (``forced_pool``: no other assignment moves any of them out);
    else the cheap bounds of ``infeasibility_proof`` may still prove it.
    """
    forced = [forced_pool(problem, buffer) for buffer in problem.buffers]
    names = [pool.name for pool in problem.pools]
    for pool_index, (status, proof) in statuses.items():
        if status != "infeasible" or proof is None:
            continue
        members = [i for i, chosen_pool in enumerate(chosen) if chosen_pool == pool_index]
        if all((f := forced[i]) is not None and f.name == names[pool_index] for i in members):
            return proof
    return infeasibility_proof(problem)


def exact_from(
    placer: GreedyPlacer,
    heuristic: GreedyResult,
    options: PlanOptions,
    budget: Budget,
    started: float | None = None,
) -> Solution:
    """``exact`` from an existing greedy plan ``heuristic`` of ``placer``'s problem.

    ``budget`` is shared by the pool assignment and the offset searches;
    ``started`` (default: now) only feeds ``stats["seconds"]``.
    """
    started = time.perf_counter() if started is None else started
    problem = placer.problem
    buffers = problem.buffers
    stats: dict[str, float | int | str] = {"algorithm": "exact", "probes": 0, "nodes": 0}
    # The assignment may take half the budget left; the offset searches get the rest.
    assignment = assign_pools(placer, heuristic, options, budget.part(0.5))
    stats["assignment"] = "priority"
    stats["assignment_proven"] = int(assignment.proven)
    stats["assignment_checks"] = assignment.checks
    stats["nodes"] = assignment.nodes
    placements, statuses = _search_pools(
        placer, heuristic, assignment.pools, assignment.packings, options, budget, stats
    )
    if len(buffers) - len(placements) > len(heuristic.unplaced):
        # The greedy plan placed more buffers (possible when candidate lists
        # order the pools differently): a plan that fits beats priority.
        assignment = greedy_assignment(placer, heuristic)
        stats["assignment"] = "greedy"
        stats["assignment_proven"] = 0
        placements, statuses = _search_pools(
            placer, heuristic, assignment.pools, {}, options, budget, stats
        )
    chosen = assignment.pools
    # Every buffer in its first usable candidate: no assignment is preferable
    # under candidate priority, so proven-minimal peaks make the plan optimal.
    first_choice = placer.all_first_choice(chosen)
    kinds = [pool_status for pool_status, _ in statuses.values()]
    if -1 in chosen:
        status, stats["proof"] = "infeasible", "no-pool"
    elif "infeasible" in kinds:
        proof = _problem_proof(problem, chosen, statuses)
        if proof is not None:
            status, stats["proof"] = "infeasible", proof
        else:
            # Proven only for the pools priority chose: another choice might fit.
            status, stats["reason"] = "unknown", "pool-choice"
    elif "unknown" in kinds:
        status = "unknown"
    elif first_choice and all(kind == "optimal" for kind in kinds):
        status = "optimal"
    else:
        status = "feasible"
    stats["seconds"] = round(time.perf_counter() - started, 6)
    budget.report(stats)
    ordered = {b.id: placements[b.id] for b in buffers if b.id in placements}
    return Solution(ordered, status, stats)
