"""How memplan parses IR: xDSL's parser with memplan's fixes, and its speed paths when on.

``MemplanParser`` is ``FastParser`` (``memplan.dialect.xdsl_speedups``)
when the speed paths are on, ``WorkaroundParser``
(``memplan.dialect.xdsl_workarounds``) when they are off: the same ops and
the same diagnostics either way. ``memplan-opt`` and ``memplan-run`` parse
with it (``memplan.tools.locations.LocatingParser``).
"""

from __future__ import annotations

from memplan.dialect.xdsl_speedups import ENABLED
from memplan.dialect.xdsl_speedups.parser import FastParser
from memplan.dialect.xdsl_workarounds.parser import WorkaroundParser

MemplanParser: type[WorkaroundParser] = FastParser if ENABLED else WorkaroundParser
"""The parser memplan's tools parse with."""

__all__ = ["MemplanParser"]
