"""memplan's fixes for xDSL 0.74's bugs, in one package (always on).

* ``parser``: ``WorkaroundParser``, xDSL's parser reporting, as parse errors
  at the offending token, malformed inputs that xDSL 0.74 lets through as
  Python exceptions, accepts, or lexes in exponential time;
* ``printer``: ``DistinctNamePrinter``, xDSL's printer giving every value of
  a scope a name of its own.

Each fix names the xDSL behaviour it covers and the upstream change it waits
for; ``tests/dialect/test_xdsl_workarounds.py`` has one test per fix (failing
if the fix is removed) and one per upstream behaviour (failing once xDSL
fixes it, when the fix can go); ``docs/known-limits.md`` lists them for
users. The fixes touch xDSL internals (``_parser_state``, ``_parse_block``,
``ForwardDeclaredValue``, the lexer's string pattern, the printer's
``_ssa_values``): that is why pyproject.toml pins ``xdsl<0.75``. The speed
paths are elsewhere: ``memplan.dialect.xdsl_speedups``.
"""
