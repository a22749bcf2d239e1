"""Work budgets: how far a search may go, counted in work, not seconds.

Every searching algorithm (``exact``, ``hill-climb``, ``auto``, the pool
assignment, ``PoolSearch``) stops when its ``Budget`` is exhausted. The unit
is one *node*: one buffer placed at an offset in ``PoolSearch``'s search
tree. A greedy placement of a problem costs one node per
``BUFFERS_PER_NODE`` buffers (``placement_cost``): placing a buffer takes
about a quarter of a search node's time (measured: a node of MiniMalloc's D
and J, 140 to 300 us; a buffer of a 10,000-buffer greedy placement, 36 us),
so the same budget buys about as much time of either. Counting work instead
of reading a clock makes the result a function of the input and the options
only: the same plan on any machine at any load.

A wall-clock ``timeout`` can still be given (``PlanOptions.timeout``, the
passes' ``timeout=``): then a budget is also exhausted when its deadline
passes, and ``stopped_by`` records that the clock cut a search short (the
result may then differ from run to run).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Literal

StoppedBy = Literal["budget", "timeout"]
"""Why a search ended before it finished: the node budget or the clock."""

BUFFERS_PER_NODE = 4
"""Buffers a greedy placement places for the cost of one search node."""

DEFAULT_BUDGET = 60_000
"""Default search nodes of a planning run (``PlanOptions.budget``, the passes'
``budget=``): about 6 to 18 CPU seconds where the whole budget is spent.
It is a cap on the whole run: searches that race inside one run share it.
``memplan-solve`` defaults to more (``CAPACITY_BUDGET``, ``MINIMIZE_BUDGET``
in ``memplan.tools.memplan_solve``)."""


def placement_cost(buffers: int) -> int:
    """The nodes one greedy placement of ``buffers`` buffers costs (at least 1)."""
    return max(1, -(-buffers // BUFFERS_PER_NODE))


class Budget:
    """The work a search may still do: nodes, and opt-in a wall-clock deadline.

    ``part(fraction)`` makes a budget for a sub-search that may spend at most
    ``fraction`` of what is left here (of the nodes, and of the time when
    there is a deadline); what a part spends is charged here too, so parts
    taken one after another share what is left, in order.
    """

    def __init__(
        self,
        nodes: int,
        timeout: float | None = None,
        *,
        parent: Budget | None = None,
        deadline: float | None = None,
    ) -> None:
        if nodes < 0:
            raise ValueError(f"a budget must be non-negative, got {nodes}")
        self.limit = nodes
        self.used = 0
        self.parent = parent
        if timeout is not None:
            deadline = time.perf_counter() + max(timeout, 0.0)
        self.deadline = deadline
        # Why a search under this budget (or a part of it) stopped early.
        self.stopped_by: StoppedBy | None = None

    def left(self) -> int:
        """Nodes still allowed here (never negative)."""
        left = self.limit - self.used
        if self.parent is not None:
            left = min(left, self.parent.left())
        return max(left, 0)

    def charge(self, nodes: int) -> None:
        """Count ``nodes`` of work here and in every enclosing budget."""
        budget: Budget | None = self
        while budget is not None:
            budget.used += nodes
            budget = budget.parent

    def note(self, reason: StoppedBy) -> None:
        """Record here and in every enclosing budget that a search stopped for
        ``reason``; the clock takes precedence."""
        budget: Budget | None = self
        while budget is not None:
            if budget.stopped_by != "timeout":
                budget.stopped_by = reason
            budget = budget.parent

    def clock_ran_out(self) -> bool:
        """True (and noted) when there is a deadline and it has passed."""
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            self.note("timeout")
            return True
        return False

    def exhausted(self) -> bool:
        """No work may start: the nodes are spent or the deadline has passed.

        Call it where a search would go on otherwise: a True answer is
        recorded as the reason the search stopped.
        """
        if self.clock_ran_out():
            return True
        if self.left() <= 0:
            self.note("budget")
            return True
        return False

    def affords(self, nodes: int, seconds: float = 0.0) -> bool:
        """May a step of ``nodes`` nodes start (taking about ``seconds``, which
        only matters under a deadline)? A False answer is recorded like
        ``exhausted``'s."""
        if self.deadline is not None and time.perf_counter() + seconds >= self.deadline:
            self.note("timeout")
            return False
        if self.left() < nodes:
            self.note("budget")
            return False
        return True

    def seconds_left(self) -> float | None:
        """Seconds to the deadline (None without one; never negative)."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.perf_counter(), 0.0)

    def part(self, fraction: float) -> Budget:
        """A budget for a sub-search: ``fraction`` (0 to 1) of the nodes and
        the time left here, charged here too."""
        deadline = None
        if self.deadline is not None:
            now = time.perf_counter()
            deadline = now + max(self.deadline - now, 0.0) * fraction
        return Budget(int(self.left() * fraction), parent=self, deadline=deadline)

    def absorb(self, stats: Mapping[str, float | int | str]) -> None:
        """Charge the work of a solve run with a budget of its own (its
        ``stats``, as ``report`` wrote them), and note a timeout it hit."""
        self.charge(int(stats.get("work", 0)))
        if stats.get("stopped_by") == "timeout":
            self.note("timeout")

    def report(self, stats: dict[str, float | int | str]) -> None:
        """Put the nodes spent (``work``) and, when a search stopped early,
        why (``stopped_by``) in a solution's ``stats``."""
        stats["work"] = self.used
        if self.stopped_by is not None:
            stats["stopped_by"] = self.stopped_by
