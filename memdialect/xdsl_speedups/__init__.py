"""memplan's speed paths over xDSL 0.74, in one package, behind one switch.

Each module here makes large programs faster and changes no result: the
text printed, the ops built and every diagnostic are xDSL's own.

* ``irdl_caches``: the ``memory`` ops' operand segments decoded once, their
  check against the IRDL definition run once per signature;
* ``plain_syntax``: each common ``memory`` op form (and ``func.call``'s)
  printed and read in one step, its printer beside its reader;
* ``parser``: ``FastParser``, which reads those lines in one step and
  parses each spelling of a type or flat dictionary once;
* ``printer``: ``FastPrinter``, which spells each shaped type once;
* ``interpreters_package``: xDSL's arith, cf, func and scf interpreters
  imported without ``xdsl.interpreters``' ``__init__``, which loads every
  upstream interpreter;
* ``symbol_lookup``: while a module verifies, symbol lookups (a
  ``func.call``'s callee) answered from an index, not a scan each.

``ENABLED`` is the switch: ``MEMPLAN_XDSL_SPEEDUPS=0`` in the environment
(read once, when the dialect is first imported) leaves every op, parser and
printer as xDSL defines it, for checking that the speed paths change nothing
(``tests/dialect/test_xdsl_speedups.py`` compares every tool's output both
ways) or for finding whether a problem is theirs. The fixes for xDSL's bugs
are not speed paths: they live in ``memplan.dialect.xdsl_workarounds`` and
are always on.
"""

from __future__ import annotations

import os

SWITCH = "MEMPLAN_XDSL_SPEEDUPS"
"""The environment variable that turns the speed paths off (``0``)."""

ENABLED: bool = os.environ.get(SWITCH, "1") != "0"
"""Whether the speed paths are on in this process."""
