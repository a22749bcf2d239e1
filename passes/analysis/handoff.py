"""Handing the lifetime analysis from one pass to the next inside a pipeline pass.

MLIR's pass manager keeps an analysis that a pass declares preserved, so
the next pass does not compute it again; xDSL's pipeline keeps nothing. A
pipeline pass that runs fixed steps (`plan`) does it by hand, for one pair:
a pass that can return the lifetime analysis (``analyze_module``) of the
module exactly as it leaves it (``ProvidesLifetimes``), and a pass that
starts by computing that analysis (``TakesLifetimes``) right after it.
Nothing runs in between, so the analysis is never stale; any other step
in between drops it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from memplan.passes.analysis.module_lifetimes import ModuleLifetimes


@runtime_checkable
class ProvidesLifetimes(Protocol):
    """A pass that can return the analysis of the module it leaves."""

    def apply_providing_lifetimes(self, ctx: Context, op: ModuleOp) -> ModuleLifetimes | None:
        """Apply the pass; return ``analyze_module(op)`` of ``op`` as it is
        now (computed by the pass on the same IR), or None."""
        ...


@runtime_checkable
class TakesLifetimes(Protocol):
    """A pass that can start from the analysis of the module it is given."""

    def apply_with_lifetimes(self, ctx: Context, op: ModuleOp, lifetimes: ModuleLifetimes) -> None:
        """Apply the pass, with ``lifetimes`` = ``analyze_module(op)`` of ``op`` now."""
        ...
