"""``usmp``: pin every static storage to a memory pool at a byte offset (TVM USMP).

The pass (``usmp_pass``) and what only it uses:

- ``groups``: which functions are planned together, as one planning
  ``Problem``, and which pools are linked by storages that may use several;
- ``splitting``: multi-tensor storages (what ``coalesce`` and ``reuse``
  merge) seen as one storage per tensor, and split in the IR where that
  plan is smaller;
- ``diagnostics``: why a storage fits in no pool, and what breaks a plan
  the pins force.
"""

from memplan.passes.usmp.usmp_pass import UsmpPass

__all__ = ["UsmpPass"]
