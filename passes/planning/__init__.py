"""Pure-Python planning model and algorithms (no xDSL import)."""

from passes.planning.model import (
    Buffer,
    Placement,
    Pool,
    Problem,
    Solution,
    align_up,
)

__all__ = ["Buffer", "Placement", "Pool", "Problem", "Solution", "align_up"]
