"""Decomposition by time: buffers whose lifetimes never chain together are
planned apart.

A *time component* is a maximal set of buffers whose lifetimes, taken
together, cover an interval without a gap: no buffer of one component is
live at the same time as a buffer of another, so no two of them conflict,
and the offsets of each component are chosen independently. With one pool
the peak of a plan is the largest peak of its components, so:

* the best plan of the whole problem is the best plan of each component
  (the minimum peak is the largest of the components' minimum peaks);
* the plan is ``optimal`` when a component whose peak is the plan's peak is
  proven optimal (the others, whatever their status, stay at or under it);
* at a capacity, the problem is ``infeasible`` when one component is
  proven infeasible, and ``unknown`` when one has no plan and no proof.

``auto`` uses it for pools with more buffers than the exact search takes
(``PlanOptions.exact_max_buffers``): each component small enough gets the
complete search instead of hill climbing over the whole problem; and, below
that size, when no component holds more than half the buffers: one search
over independent parts backtracks through decisions of parts that did not
fail. Only problems with one pool are split (with several, the pool
assignment of one component would have to respect the others' candidate
priority).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memplan.passes.planning.algorithms.budget import Budget
from memplan.passes.planning.algorithms.options import PlanOptions
from memplan.passes.planning.model import Buffer, Problem, Solution


def time_components(buffers: tuple[Buffer, ...]) -> list[list[int]]:
    """Indices of ``buffers`` grouped in time components, in time order."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, i))
    components: list[list[int]] = []
    reach = None  # the latest end of the current component
    for index in order:
        buffer = buffers[index]
        if reach is None or buffer.start >= reach:
            components.append([])
            reach = buffer.end
        components[-1].append(index)
        reach = max(reach, buffer.end)
    return components


RETRY_PREORDERINGS = ("LWA", "UWA", "ZWA")
"""Preorders added to the portfolio for components a first round left open."""


def widened(preorderings: tuple[str, ...]) -> tuple[str, ...]:
    """``preorderings`` plus those of ``RETRY_PREORDERINGS`` it lacks."""
    return preorderings + tuple(p for p in RETRY_PREORDERINGS if p not in preorderings)


def solve_by_time_components(
    problem: Problem,
    options: PlanOptions,
    budget: Budget,
    solve_part: Callable[[Problem, PlanOptions], Solution],
    largest: int | None = None,
) -> Solution | None:
    """Plan each time component with ``solve_part`` and merge the plans, or
    None when the problem has several pools or one component, or when a
    component holds more than ``largest`` buffers (None: no limit).

    Components are solved in rounds, in time order, each on an even share
    of the nodes left (what one leaves goes to the later ones): components a
    greedy plan settles cost next to nothing, and those still ``unknown``
    after a round share what is left in the next, with ``exact``'s preorder
    portfolio widened (``RETRY_PREORDERINGS``), until a round with the wider
    portfolio settles none.
    """
    if len(problem.pools) != 1:
        return None
    components = time_components(problem.buffers)
    if len(components) < 2:
        return None
    if largest is not None and max(len(members) for members in components) > largest:
        return None
    parts = [
        Problem(tuple(problem.buffers[i] for i in members), problem.pools) for members in components
    ]
    solutions: list[Solution | None] = [None] * len(parts)
    # Rounds: the components still without a plan or proof share what is
    # left evenly, in time order (what one leaves goes to the later ones);
    # most are settled by the first round's small shares, and the hard few
    # get the rest. A round that settles nothing ends the search.
    round_options = options
    while True:
        open_parts = [k for k, s in enumerate(solutions) if s is None or s.status == "unknown"]
        if not open_parts or (budget.left() <= 0 and solutions[open_parts[0]] is not None):
            break
        settled = 0
        for position, k in enumerate(open_parts):
            share = budget.part(1 / (len(open_parts) - position))
            solution = solve_part(parts[k], round_options.within(share))
            share.absorb(solution.stats)
            previous = solutions[k]
            if (
                previous is None
                or solution.status != "unknown"
                or len(solution.unplaced(parts[k])) < len(previous.unplaced(parts[k]))
            ):
                solutions[k] = solution
            settled += solution.status != "unknown"
        wider = widened(options.preorderings)
        if settled == 0 and round_options.preorderings == wider:
            break
        # A component the portfolio did not settle is retried with a wider
        # one: which preorder finds a plan fast is erratic (start-first,
        # end-first and largest-first settle tilings the default three miss).
        round_options = replace(options, preorderings=wider)
    done = [(part, s) for part, s in zip(parts, solutions) if s is not None]
    for _, solution in done:
        stopped = solution.stats.get("stopped_by")
        if solution.status == "unknown" and stopped in ("budget", "timeout"):
            budget.note("timeout" if stopped == "timeout" else "budget")
    placements = {}
    for _, solution in done:
        placements.update(solution.placements)
    statuses = [solution.status for _, solution in done]
    peaks = [solution.peak(part) for part, solution in done]
    if "infeasible" in statuses:
        status = "infeasible"
    elif "unknown" in statuses:
        status = "unknown"
    else:
        top = max(peaks, default=0)
        proven = any(s == "optimal" and p == top for s, p in zip(statuses, peaks))
        status = "optimal" if proven else "feasible"
    stats: dict[str, float | int | str] = {
        "algorithm": "auto",
        "stage": "time-components",
        "components": len(components),
        "largest_component": max(len(members) for members in components),
        "unknown_components": statuses.count("unknown"),
    }
    for _, solution in done:
        # What proved a component infeasible, or why one is unknown, holds for the whole.
        for key in ("proof", "reason") if solution.status == status else ():
            if key in solution.stats and key not in stats:
                stats[key] = solution.stats[key]
    budget.report(stats)
    ordered = {b.id: placements[b.id] for b in problem.buffers if b.id in placements}
    return Solution(ordered, status, stats)
