"""Options shared by every planning algorithm."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlanOptions:
    """Knobs for the planning algorithms; every algorithm ignores what it does not use.

    ``timeout``: wall-clock seconds for searching algorithms (``hill-climb``,
    ``exact``, ``auto``); the best plan found so far is returned when it runs out.
    ``seed``: seeds ``hill-climb``'s random perturbations.
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

    Results are deterministic for a given problem and options, except where a
    ``timeout`` cuts a search short.
    """

    timeout: float = 10.0
    seed: int = 0
    iterations: int = 300
    minimize: bool = True
    preorderings: tuple[str, ...] = ("TWA", "TAW", "WAT")
    exact_max_buffers: int = 5000
