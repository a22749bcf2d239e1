"""A parametric plan as the IR writes it: offsets that are functions of the
dynamic dims.

``usmp{parametric=true}`` writes, per pool of a function whose storages'
sizes depend on the dims, an *offset program* on the pinned storages:

- ``memory.slot = K : i64``: the storage's place in the program (0, 1, ...
  within the pool and function);
- ``memory.above = array<i64: J, ...>``: the slots it sits above, each
  smaller than ``K``;
- ``memory.reserve = "<size expression>"`` on a dynamic storage: its bytes as
  a function of the dims (``memdialect/size_expr``), at least its size
  operand at run time. A storage without one takes its static size, or its
  ``max`` when dynamic.

At dims ``d`` the storage of slot ``K`` sits at
``align(max(0, offset(J) + size(J, d) for J in above), alignment)``, with
``alignment`` the lcm of the storage's ``align`` and its pool's (what a pinned
offset must be a multiple of), slots in
increasing order; the pool takes ``max(offset(K) + size(K, d))``. The
``at @pool[N]`` offset is that program evaluated at the sizes the static
plan reserves (``max``), so a tool that does not read the program still has
a plan valid at every size in the range.

The function says where each dim comes from: ``memory.dim_ranges = {S =
array<i64: LO, HI>}`` and ``memory.dim_symbols = {S = array<i64: ARG,
AXIS>}`` (argument ``ARG``'s dim ``AXIS`` at run time).

This module reads those attributes into plain data and evaluates them;
``verify-plan`` checks that they make a valid plan at every size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from math import lcm

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from memplan.dialect.ops import (
    DIM_RANGES_ATTR,
    DIM_SYMBOLS_ATTR,
    RESERVE_ATTR,
    AllocStorageOp,
    PoolOp,
    int_pairs,
)
from memplan.dialect.size_expr import (
    SizeExpr,
    SizeExprError,
    align,
    const,
    maximum,
    parse_size_expr,
)
from memplan.passes.planning.parametric import stack_offsets

SLOT_ATTR = "memory.slot"
ABOVE_ATTR = "memory.above"


class ParametricLayoutError(ValueError):
    """Parametric attributes that do not make an offset program."""

    def __init__(self, message: str, op: Operation) -> None:
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class Dim:
    """A dynamic dim of a function: its range and where it is read."""

    name: str
    lower: int
    upper: int
    argument: int | None
    axis: int | None


def function_dims(func: FuncOp) -> dict[str, Dim]:
    """The function's ranged dims by name (empty without ``memory.dim_ranges``)."""
    where = int_pairs(func.attributes.get(DIM_SYMBOLS_ATTR))
    return {
        name: Dim(name, lower, upper, *where.get(name, (None, None)))
        for name, (lower, upper) in int_pairs(func.attributes.get(DIM_RANGES_ATTR)).items()
    }


def storage_reserve(alloc: AllocStorageOp) -> SizeExpr | None:
    """The storage's ``memory.reserve`` expression, if it has one."""
    attr = alloc.attributes.get(RESERVE_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    try:
        return parse_size_expr(attr.data)
    except SizeExprError as error:
        raise ParametricLayoutError(str(error), alloc) from None


@dataclass(frozen=True)
class ParametricStorage:
    """One storage of an offset program."""

    alloc: AllocStorageOp
    slot: int
    above: tuple[int, ...]
    alignment: int
    """The lcm of the storage's ``align`` and its pool's."""
    size: SizeExpr
    """Bytes at given dims: the reserve, else the static size or ``max``."""
    reserved: int
    """Bytes the static plan reserves for it (its size or ``max``)."""


@dataclass(frozen=True)
class ParametricPool:
    """The offset program of one pool in one function, storages by slot."""

    function: str
    pool: str
    storages: tuple[ParametricStorage, ...]

    def _offsets_at(self, sizes: Sequence[int]) -> list[int]:
        """Each storage's offset with the storages at ``sizes`` (by slot): the
        planning core's formula (``stack_offsets``), slots in order."""
        return stack_offsets(
            range(len(self.storages)),
            [storage.above for storage in self.storages],
            [storage.alignment for storage in self.storages],
            sizes,
        )

    def offsets(self, dims: Mapping[str, int]) -> list[int]:
        """Each storage's offset at ``dims`` (by slot)."""
        return self._offsets_at([storage.size.evaluate(dims) for storage in self.storages])

    def size(self, dims: Mapping[str, int]) -> int:
        """The pool's bytes at ``dims``."""
        sizes = [storage.size.evaluate(dims) for storage in self.storages]
        offsets = self._offsets_at(sizes)
        return max((o + s for o, s in zip(offsets, sizes, strict=True)), default=0)

    def reserved_offsets(self) -> list[int]:
        """The offsets at the sizes the static plan reserves (the ``at`` offsets)."""
        return self._offsets_at([storage.reserved for storage in self.storages])

    @cached_property
    def offset_exprs(self) -> tuple[SizeExpr, ...]:
        """Each storage's offset as one expression of the dims."""
        found: list[SizeExpr] = []
        for storage in self.storages:
            ends = [found[j] + self.storages[j].size for j in storage.above]
            found.append(align(maximum(*ends) if ends else const(0), storage.alignment))
        return tuple(found)

    @cached_property
    def size_expr(self) -> SizeExpr:
        """The pool's bytes as one expression of the dims."""
        ends = [o + s.size for o, s in zip(self.offset_exprs, self.storages)]
        return maximum(*ends) if ends else const(0)

    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(s.size.symbols() for s in self.storages))


def parametric_pools(func: FuncOp, storages: Sequence[AllocStorageOp]) -> list[ParametricPool]:
    """The offset programs of ``func`` (its pinned ``storages`` carrying
    ``memory.slot``), one per pool, in the order pools first appear; an
    ill-formed program raises ``ParametricLayoutError`` naming the op."""
    by_pool: dict[str, dict[int, ParametricStorage]] = {}
    module = func.parent_op()
    pool_alignment = (
        {op.pool_name: op.alignment_value for op in module.ops if isinstance(op, PoolOp)}
        if isinstance(module, ModuleOp)
        else {}
    )
    for alloc in storages:
        slot_attr = alloc.attributes.get(SLOT_ATTR)
        if slot_attr is None:
            continue
        pinned = alloc.pinned
        if pinned is None:
            raise ParametricLayoutError(f"{SLOT_ATTR} on a storage that is not pinned", alloc)
        if not isinstance(slot_attr, IntegerAttr):
            raise ParametricLayoutError(f"{SLOT_ATTR} must be an integer", alloc)
        slot = slot_attr.value.data
        above_attr = alloc.attributes.get(ABOVE_ATTR)
        if not isinstance(above_attr, DenseArrayBase):
            raise ParametricLayoutError(
                f"{SLOT_ATTR} without {ABOVE_ATTR} (an array<i64> of slots)", alloc
            )
        above = tuple(int(v) for v in above_attr.get_values())
        slots = by_pool.setdefault(pinned[0], {})
        if slot in slots:
            raise ParametricLayoutError(
                f"slot {slot} of pool @{pinned[0]} is taken twice in @{func.sym_name.data}", alloc
            )
        for j in above:
            if not 0 <= j < slot:
                raise ParametricLayoutError(
                    f"{ABOVE_ATTR} of slot {slot} names slot {j}: it may name only smaller slots",
                    alloc,
                )
        reserved = alloc.size_bound
        if reserved is None:
            raise ParametricLayoutError(f"{SLOT_ATTR} on an unbounded dynamic storage", alloc)
        reserve = storage_reserve(alloc)
        slots[slot] = ParametricStorage(
            alloc,
            slot,
            above,
            lcm(alloc.alignment_value, pool_alignment.get(pinned[0], 1)),
            reserve if reserve is not None else const(reserved),
            reserved,
        )
    pools: list[ParametricPool] = []
    for pool, slots in by_pool.items():
        missing = sorted(set(range(len(slots))) - set(slots))
        if missing:
            last = slots[max(slots)].alloc
            raise ParametricLayoutError(
                f"the slots of pool @{pool} in @{func.sym_name.data} are not 0..{len(slots) - 1}: "
                f"slot {missing[0]} is missing",
                last,
            )
        pools.append(
            ParametricPool(func.sym_name.data, pool, tuple(slots[k] for k in range(len(slots))))
        )
    return pools
