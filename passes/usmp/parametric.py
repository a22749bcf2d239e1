"""``usmp{parametric=true}``: the offset programs of pools whose storages'
sizes depend on the dims, written on the pinned storages.

The planning core derives the program (``passes.planning.parametric``:
which conflicting buffers sit below which, in the order of a plan) and
chooses the order (``choose_parametric``: the bound's plan's, or that of a
static plan at a sample of the dims, whichever comes closest to the static
plans at the samples without growing the bound's pools). This module picks
the pools that get a program and the samples, numbers the slots and writes
``memory.slot`` / ``memory.above`` (the form ``passes.analysis.parametric``
reads), then moves each ``at`` offset to the program at the reserved sizes
(never higher than the bound's plan put it).

Samples: the dims all at the lower ends of their ranges, all at the upper
ends, and three points between, spaced geometrically (``lower *
(upper / lower) ** t`` for t = 1/4, 1/2, 3/4, rounded), since the bound's
plan is furthest from the static plan at small sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, i64

from memplan.dialect.diagnostics import emit_remark
from memplan.dialect.ops import AllocStorageOp, PoolOp
from memplan.dialect.size_expr import SizeExpr, SizeExprError
from memplan.passes.analysis import FunctionLifetimes, ModuleLifetimes, StorageLifetime
from memplan.passes.analysis.parametric import (
    ABOVE_ATTR,
    RESERVE_ATTR,
    SLOT_ATTR,
    Dim,
    ParametricLayoutError,
    function_dims,
    parametric_pools,
    storage_reserve,
)
from memplan.passes.planning.model import Placement, Problem, Solution
from memplan.passes.planning.parametric import (
    ParametricPlan,
    at_sizes,
    choose_parametric,
    derive_parametric,
)

Solver = Callable[[Problem, float], Solution]
"""Plans a problem with the given fraction of the budget left (the pass's
algorithm and options)."""

SAMPLE_POINTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Where in each range the samples lie (0: lower end, 1: upper end), geometrically."""


def drop_program(alloc: AllocStorageOp) -> None:
    """Remove ``memory.slot`` and ``memory.above`` from ``alloc`` (its offset
    is about to change, or its pool's program no longer covers it)."""
    alloc.attributes.pop(SLOT_ATTR, None)
    alloc.attributes.pop(ABOVE_ATTR, None)


@dataclass(frozen=True)
class _PoolInFunction:
    function: FunctionLifetimes
    pool: str
    storages: list[StorageLifetime]


def _pinned_by_pool(
    lifetimes: ModuleLifetimes,
) -> tuple[list[_PoolInFunction], dict[str, list[str]]]:
    """The pinned bounded storages of each function by pool (functions and
    pools in module order), and the functions using each pool."""
    found: list[_PoolInFunction] = []
    users: dict[str, list[str]] = {}
    for function in lifetimes.functions:
        by_pool: dict[str, list[StorageLifetime]] = {}
        for storage in function.static_storages:
            if storage.pinned is not None:
                by_pool.setdefault(storage.pinned[0], []).append(storage)
        for pool, storages in by_pool.items():
            found.append(_PoolInFunction(function, pool, storages))
            users.setdefault(pool, []).append(function.name)
    return found, users


def forget_stale_programs(lifetimes: ModuleLifetimes, placed: Collection[AllocStorageOp]) -> None:
    """Drop the program of every pool of a function in which ``placed`` (the
    storages the pass has just placed) lands: it was written for offsets that
    no longer hold."""
    pools, _ = _pinned_by_pool(lifetimes)
    for entry in pools:
        if any(storage.alloc in placed for storage in entry.storages):
            for storage in entry.storages:
                drop_program(storage.alloc)


def _between(lower: int, upper: int, t: float) -> int:
    """The point ``t`` (0 to 1) of the way from ``lower`` to ``upper``, geometrically."""
    low, high = max(lower, 1), max(upper, 1)
    return min(upper, max(lower, round(low * (high / low) ** t)))


def dim_samples(dims: Mapping[str, Dim]) -> list[dict[str, int]]:
    """The samples of ``dims`` (``SAMPLE_POINTS``, duplicates dropped), in order."""
    samples: list[dict[str, int]] = []
    for t in SAMPLE_POINTS:
        sample = {name: _between(dim.lower, dim.upper, t) for name, dim in dims.items()}
        if sample not in samples:
            samples.append(sample)
    return samples


def write_parametric(
    module: ModuleOp,
    lifetimes: ModuleLifetimes,
    prepinned: Collection[AllocStorageOp],
    solver: Solver | None = None,
) -> None:
    """Write the offset program of every pool, in every function, that holds
    a pinned storage with ``memory.reserve``, move its ``at`` offsets to the
    program at the reserved sizes and its ``used`` to the pool that leaves.

    ``lifetimes`` analyses ``module`` with the plan pinned; ``prepinned`` are
    the storages pinned before the pass (kept where they were); ``solver``
    plans the samples (without it the bound's order is kept). A pool used
    by several functions, or holding storages pinned before the pass without
    a program, stays static, with a remark naming it.
    """
    pool_ops = {op.pool_name: op for op in module.ops if isinstance(op, PoolOp)}
    entries, users = _pinned_by_pool(lifetimes)
    told: set[str] = set()
    changed: set[str] = set()
    todo: dict[FunctionLifetimes, list[_PoolInFunction]] = {}
    for entry in entries:
        if not any(RESERVE_ATTR in s.alloc.attributes for s in entry.storages):
            continue
        where = pool_ops.get(entry.pool)
        if len(users[entry.pool]) > 1:
            if entry.pool not in told and where is not None:
                told.add(entry.pool)
                names = ", ".join(f"@{name}" for name in users[entry.pool])
                emit_remark(
                    where,
                    f"usmp: pool @{entry.pool} is used by the storages of {names}: its "
                    "offsets stay static at the bound (a parametric program is per function "
                    "and per pool)",
                )
            continue
        if any(s.alloc in prepinned for s in entry.storages):
            if all(SLOT_ATTR in s.alloc.attributes for s in entry.storages):
                continue  # its program, written before, still holds
            if where is not None:
                emit_remark(
                    where,
                    f"usmp: pool @{entry.pool} holds storages of @{entry.function.name} "
                    "pinned before the pass: its offsets stay static at the bound",
                )
            continue
        todo.setdefault(entry.function, []).append(entry)
    solves = sum(len(dim_samples(function_dims(f.func))) for f in todo) if solver else 0
    for function, pools in todo.items():
        samples = dim_samples(function_dims(function.func)) if solver else []
        _write_function(lifetimes, function, pools, solver, samples, solves)
        solves -= len(samples)
        changed.update(entry.pool for entry in pools)
    if not changed:
        return
    used: dict[str, int] = dict.fromkeys(changed, 0)
    for _, storage in lifetimes.storages():
        if storage.size is not None and storage.pinned is not None:
            pool, offset = storage.pinned
            if pool in used:
                used[pool] = max(used[pool], offset + storage.size)
    for pool, value in used.items():
        if pool in pool_ops:
            pool_ops[pool].properties["used"] = IntegerAttr(value, 64)


def _sizes_at(
    problem: Problem, reserves: list[SizeExpr | None], dims: Mapping[str, int]
) -> tuple[int, ...] | None:
    """Each buffer's bytes at ``dims`` (its reserve, within its maximum), or
    None when a reserve cannot be evaluated there."""
    sizes: list[int] = []
    for buffer, reserve in zip(problem.buffers, reserves, strict=True):
        if reserve is None:
            sizes.append(buffer.size)
            continue
        try:
            sizes.append(min(reserve.evaluate(dims), buffer.size))
        except SizeExprError:
            return None
    return tuple(sizes)


def _choose(
    problem: Problem,
    bound: Solution,
    reserves: list[SizeExpr | None],
    solver: Solver | None,
    samples: list[dict[str, int]],
    solves: int,
) -> ParametricPlan:
    """The program of ``problem``: the order ``choose_parametric`` picks among
    the bound's plan and static plans at ``samples`` (``solves``: how many
    sample plans the pass still makes, this function's included)."""
    if solver is None or not samples:
        return derive_parametric(problem, bound)
    candidates: list[tuple[tuple[int, ...], Solution]] = []
    scored: list[tuple[tuple[int, ...], int]] = []
    for position, dims in enumerate(samples):
        sizes = _sizes_at(problem, reserves, dims)
        if sizes is None:
            return derive_parametric(problem, bound)
        at = at_sizes(problem, sizes)
        solution = solver(at, 1 / max(solves - position, 1))
        if solution.unplaced(at):
            continue
        candidates.append((sizes, solution))
        scored.append((sizes, sum(solution.used(at).values())))
    return choose_parametric(problem, bound, candidates, scored).plan


def _write_function(
    lifetimes: ModuleLifetimes,
    function: FunctionLifetimes,
    pools: list[_PoolInFunction],
    solver: Solver | None,
    samples: list[dict[str, int]],
    solves: int,
) -> None:
    """Choose and write the programs of ``pools`` in ``function``."""
    owners: dict[str, StorageLifetime] = {}
    buffers = []
    reserves: list[SizeExpr | None] = []
    placements: dict[str, Placement] = {}
    for entry in pools:
        for storage in entry.storages:
            buffer = lifetimes.module_buffer(function, storage, pin=False)
            owners[buffer.id] = storage
            buffers.append(buffer)
            try:
                reserves.append(storage_reserve(storage.alloc))
            except ParametricLayoutError:
                reserves.append(None)
            assert storage.pinned is not None
            placements[buffer.id] = Placement(*storage.pinned)
    problem = Problem(tuple(buffers), lifetimes.pools)
    plan = _choose(problem, Solution(placements), reserves, solver, samples, solves)
    slots: dict[int, int] = {}
    counters: dict[str, int] = {}
    for index in plan.order:
        pool = plan.pools[index]
        slots[index] = counters.get(pool, 0)
        counters[pool] = slots[index] + 1
    for index, buffer_id in enumerate(plan.ids):
        alloc = owners[buffer_id].alloc
        alloc.attributes[SLOT_ATTR] = IntegerAttr(slots[index], i64)
        alloc.attributes[ABOVE_ATTR] = DenseArrayBase.from_list(
            i64, sorted(slots[j] for j in plan.below[index])
        )
    allocs = [owners[buffer_id].alloc for buffer_id in plan.ids]
    for program in parametric_pools(function.func, allocs):
        for storage, offset in zip(program.storages, program.reserved_offsets(), strict=True):
            storage.alloc.pin(program.pool, offset)
