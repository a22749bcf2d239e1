"""The context memplan's tools, tests and benchmarks parse with."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import get_all_dialects

from memplan.dialect import Memory


def memplan_context(*, allow_unregistered: bool = False) -> Context:
    """Every upstream xDSL dialect (loaded lazily) plus ``memory``, as
    ``memplan-opt`` sees them."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    ctx.load_dialect(Memory)
    return ctx
