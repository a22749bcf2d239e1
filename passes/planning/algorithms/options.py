"""Options shared by every planning algorithm."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memplan.passes.planning.algorithms.budget import DEFAULT_BUDGET, Budget


@dataclass(frozen=True)
class PlanOptions:
    """Knobs for the planning algorithms; every algorithm ignores what it does not use.

    ``budget``: search nodes for searching algorithms (``hill-climb``,
    ``exact``, ``auto``; a greedy placement costs one per 4 buffers, see
    ``budget``); the best plan found so far is returned when they are spent.
    0 gives ``auto`` its first greedy plan.
    ``timeout``: None (default) for no wall-clock limit; else seconds after
    which the searches also stop (an opt-in: the result then depends on the
    machine's speed and load, and ``stats["stopped_by"]`` is ``timeout`` when
    the clock cut a search short).
    ``seed``: seeds ``hill-climb``'s random perturbations and the shuffled
    preorders of ``exact``'s restarts at a capacity above the bound.
    ``iterations``: ``hill-climb``'s perturbation budget.
    ``minimize``: when false, ``exact``/``auto`` stop at the first plan that fits
    every bounded pool (feasibility, like MiniMalloc's ``--capacity``) instead
    of pushing each pool's peak down to its lower bound.
    ``preorderings``: ``exact``'s static preorder portfolio, MiniMalloc key
    strings, each letter a descending sort key: W = lifetime width, A = area
    (size x width), T = largest total of the sections the buffer spans,
    Z = size, C = sections spanned, O = conflicts, L = start, U = end. The
    default order puts TWA first: it finishes first on 7 of MiniMalloc's 11
    challenging problems (TAW on 3, WAT on 1), and the portfolio's first
    preorder finishes soonest.
    ``exact_max_buffers``: ``auto`` only runs ``exact`` on pools with at most
    this many buffers (building its conflict lists is quadratic).

    Results are deterministic for a given problem and options unless a
    ``timeout`` cuts a search short.
    """

    budget: int = DEFAULT_BUDGET
    timeout: float | None = None
    seed: int = 0
    iterations: int = 300
    minimize: bool = True
    preorderings: tuple[str, ...] = ("TWA", "TAW", "WAT")
    exact_max_buffers: int = 5000

    def new_budget(self) -> Budget:
        """A fresh ``Budget`` of these options' nodes and timeout."""
        return Budget(self.budget, self.timeout)

    def within(self, budget: Budget) -> PlanOptions:
        """These options with ``budget``'s nodes and time left: a solve run on
        a share of a caller's budget (charge it back with ``Budget.absorb``)."""
        return replace(self, budget=budget.left(), timeout=budget.seconds_left())
