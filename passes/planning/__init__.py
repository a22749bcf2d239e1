"""Pure-Python planning model and algorithms (no xDSL import).

* ``model``: ``Buffer``, ``Pool``, ``Problem``, ``Solution``, ``Placement``.
* ``bounds``: ``lower_bound(problem)`` (peak live bytes per pool / group).
* ``validate``: ``validate(problem, solution) -> list[Finding]``.
* ``io``: MiniMalloc CSV and memplan JSON (``PlanningInputError``).
* ``execution_order``: operator orders that lower the peak of live bytes
  (the ``schedule`` pass's core).
* ``parametric``: a plan as an offset program valid at every sizes vector
  up to the bound (``derive_parametric``, ``evaluate``, ``check_parametric``,
  ``choose_parametric``).
* ``algorithms``: ``ALGORITHMS``, ``PlanOptions``, ``solve(problem, name, options)``.
"""

from memplan.passes.planning.algorithms import ALGORITHMS, PlanOptions, solve
from memplan.passes.planning.bounds import buffers_lower_bound, lower_bound
from memplan.passes.planning.io import PlanningInputError
from memplan.passes.planning.model import (
    Buffer,
    Placement,
    Pool,
    Problem,
    Solution,
    align_up,
)
from memplan.passes.planning.validate import Finding, validate

__all__ = [
    "ALGORITHMS",
    "Buffer",
    "Finding",
    "Placement",
    "PlanOptions",
    "PlanningInputError",
    "Pool",
    "Problem",
    "Solution",
    "align_up",
    "buffers_lower_bound",
    "lower_bound",
    "solve",
    "validate",
]
