"""The plan of a module as data: what ``plan-report`` gathers and every report
format (text, JSON, SVG, trace, C header) writes.

Kept apart from the pass so that the formats and the pass import the records
and not each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memplan.dialect.size_expr import SizeExpr

UNPLANNED = "(unplanned)"
"""Pseudo-pool of static storages not pinned to a pool: used = sum of sizes."""

DYNAMIC = "(dynamic)"
"""Pseudo-pool of dynamic-size storages (sized at run time, never planned)."""

LARGEST_SHOWN = 3


@dataclass(frozen=True)
class BufferRecord:
    """One storage: its size, lifetime (op numbers of its function) and place."""

    name: str
    size: int | None
    alignment: int
    start: int
    end: int
    pool: str
    offset: int | None
    device: str
    escapes: bool
    read_only: bool
    branch: tuple[tuple[int, int], ...]
    size_is_bound: bool = False
    """``size`` is the `max` bound of a dynamic-size storage."""
    source_name: str | None = None
    """The source model's name of the first tensor carved from it (``memory.source_names``)."""
    slot: int | None = None
    """Its place in its pool's offset program (``memory.slot``), if it has one."""
    above: tuple[int, ...] = ()
    """The slots it sits above (``memory.above``)."""
    reserve: SizeExpr | None = None
    """Its bytes as a function of the dims (``memory.reserve``), if given."""
    offset_expr: SizeExpr | None = None
    """Its offset as a function of the dims (with a slot only)."""


@dataclass(frozen=True)
class TensorRecord:
    """One tensor: its storage, offset in it, size and lifetime."""

    name: str
    storage: str
    offset: int | None
    size: int | None
    start: int
    end: int
    inplace_of: str | None = None
    """The tensor whose bytes this one took in place (``memory.inplace``)."""
    source_name: str | None = None
    """Its name in the model it was imported from (``memory.source_names``)."""
    source_id: int | None = None
    """Its index there (``memory.source_ids``)."""


@dataclass(frozen=True)
class PoolRecord:
    """A pool (or pseudo-pool) as one function (or the module) uses it.

    ``used`` is the highest byte used (the sum of sizes for ``(unplanned)``);
    ``lower_bound`` is ``passes.planning``'s bound for the same buffers (the
    peak of live bytes, with alignment rounding): no plan can use less.
    ``alignment`` is the pool's (1 for pseudo-pools); ``base_alignment`` is
    what the pool's base address needs (``pool_base_alignment``: the pool's
    and its storages' largest). ``no_planning`` is what the same storages take
    without planning, one allocation each: the sum of their sizes.
    """

    name: str
    size: int | None
    used: int
    lower_bound: int
    buffer_count: int
    largest: tuple[tuple[str, int], ...]
    alignment: int = 1
    base_alignment: int = 1
    no_planning: int = 0

    @property
    def ratio(self) -> float | None:
        """used / lower_bound, or None when the bound is 0."""
        return None if self.lower_bound == 0 else self.used / self.lower_bound


@dataclass(frozen=True)
class DimRecord:
    """A dynamic dim of a function (``memory.dim_ranges``): its range, and
    the argument and axis it is read from at run time, when known."""

    name: str
    lower: int
    upper: int
    argument: int | None = None
    axis: int | None = None


@dataclass(frozen=True)
class ParametricPoolRecord:
    """A pool of one function whose offsets are functions of the dims (the
    offset program ``usmp{parametric=true}`` writes; ``analysis.parametric``).

    ``storages``, ``above``, ``alignments`` and ``sizes`` are by slot: the
    storage's name (as in ``FunctionReport.buffers``), the slots it sits
    above, the multiple its offset is rounded up to (the lcm of its and its
    pool's alignment) and its bytes at given dims. ``dims`` are
    the function's dims the pool depends on, in the function's order;
    ``at_lower`` and ``at_upper`` are the pool's bytes with every dim of the
    function at the lower and at the upper end of its range (the smallest
    and the largest the pool takes: every size expression is monotone).
    """

    name: str
    storages: tuple[str, ...]
    above: tuple[tuple[int, ...], ...]
    alignments: tuple[int, ...]
    sizes: tuple[SizeExpr, ...]
    size_expr: SizeExpr
    dims: tuple[str, ...]
    at_lower: int
    at_upper: int


@dataclass(frozen=True)
class FunctionReport:
    """One function's plan. ``kernels`` are its ``memory.invoke``s as
    (op number, callee name), in order: the SVG labels its time axis with them."""

    name: str
    ops: int
    pools: tuple[PoolRecord, ...]
    buffers: tuple[BufferRecord, ...]
    tensors: tuple[TensorRecord, ...]
    kernels: tuple[tuple[int, str], ...] = ()
    dims: tuple[DimRecord, ...] = ()
    """Its dynamic dims (``memory.dim_ranges``), in the attribute's order."""
    parametric: tuple[ParametricPoolRecord, ...] = ()
    """Its pools with an offset program, in the order the pools first appear."""


@dataclass(frozen=True)
class PlanReport:
    """The plan of a module: per function, and per pool for the whole module.

    ``module_name`` is the module's ``sym_name`` (None without one).
    """

    functions: tuple[FunctionReport, ...]
    pools: tuple[PoolRecord, ...] = field(default=())
    module_name: str | None = None
