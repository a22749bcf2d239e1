"""The plan in the IR as report data: ``gather_report(module) -> PlanReport``.

The one part of ``plan-report`` that reads IR: lifetimes from the one
lifetime analysis (``passes.analysis``), bounds from ``passes.planning``.
Every format writes the ``PlanReport`` it returns.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, ModuleOp, StringAttr
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect.diagnostics import at_op
from memplan.dialect.ops import SOURCE_IDS_ATTR, SOURCE_NAMES_ATTR, AllocStorageOp, InvokeOp
from memplan.dialect.printer import printed_names
from memplan.dialect.size_expr import SizeExpr
from memplan.passes.analysis import (
    FunctionLifetimes,
    ModuleLifetimes,
    TensorLifetime,
    analyze_module,
)
from memplan.passes.analysis.inplace import in_place_sources
from memplan.passes.analysis.parametric import (
    Dim,
    ParametricLayoutError,
    ParametricPool,
    function_dims,
    parametric_pools,
    storage_reserve,
)
from memplan.passes.analysis.symbols import SymbolCache
from memplan.passes.planning.bounds import buffers_lower_bound, peak_live_bytes
from memplan.passes.planning.model import Buffer, pool_base_alignment
from memplan.passes.report_formats.records import (
    DYNAMIC,
    LARGEST_SHOWN,
    UNPLANNED,
    BufferRecord,
    DimRecord,
    FunctionReport,
    ParametricPoolRecord,
    PlanReport,
    PoolRecord,
    TensorRecord,
)


def _pool_record(
    name: str,
    size: int | None,
    buffers: Sequence[Buffer],
    offsets: dict[str, int] | None,
    alignment: int,
) -> PoolRecord:
    if offsets is None:
        # Unplanned: one allocation each, so the sum of the sizes; compared
        # with the plain peak of live bytes (no alignment rounding either).
        used = sum(b.size for b in buffers)
        bound = peak_live_bytes(buffers) if buffers else 0
    else:
        used = max((offsets[b.id] + b.size for b in buffers), default=0)
        bound = buffers_lower_bound(buffers, alignment) if buffers else 0
    largest = sorted(buffers, key=lambda b: (-b.size, b.id))[:LARGEST_SHOWN]
    return PoolRecord(
        name=name,
        size=size,
        used=used,
        lower_bound=bound,
        buffer_count=len(buffers),
        largest=tuple((b.id, b.size) for b in largest),
        alignment=alignment,
        base_alignment=pool_base_alignment(alignment, (b.alignment for b in buffers)),
        no_planning=sum(b.size for b in buffers),
    )


def _sources(function: FunctionLifetimes) -> dict[SSAValue, tuple[str, int]]:
    """Each invoke result's source-model name and index (``memory.source_names``)."""
    found: dict[SSAValue, tuple[str, int]] = {}
    for op in function.func.walk():
        if not isinstance(op, InvokeOp):
            continue
        names, ids = op.attributes.get(SOURCE_NAMES_ATTR), op.attributes.get(SOURCE_IDS_ATTR)
        if not isinstance(names, ArrayAttr) or not isinstance(ids, DenseArrayBase):
            continue
        for out, name, index in zip(op.outs, names.data, ids.get_values()):
            if isinstance(name, StringAttr) and out not in found:
                found[out] = (name.data, int(index))
    return found


def _parametric(
    function: FunctionLifetimes, dims: dict[str, Dim]
) -> tuple[list[ParametricPool], list[ParametricPoolRecord]]:
    """The function's offset programs and their records; a program that is
    ill-formed, or that names a dim the function has no range for, fails
    the pass at the storage it is about."""
    allocs = [storage.alloc for storage in function.storages]
    names = {storage.alloc: storage.name for storage in function.storages}
    try:
        pools = parametric_pools(function.func, allocs)
        for alloc in allocs:  # a reserve outside any program is reported too
            storage_reserve(alloc)
    except ParametricLayoutError as error:
        raise at_op(PassFailedException(f"plan-report: {error}"), error.op) from None
    records: list[ParametricPoolRecord] = []
    for pool in pools:
        for storage in pool.storages:
            missing = sorted(storage.size.symbols() - set(dims))
            if missing:
                raise at_op(
                    PassFailedException(
                        f"plan-report: the size of %{names[storage.alloc]} ({storage.size}) "
                        f"names dim '{missing[0]}', which @{function.name}'s "
                        "memory.dim_ranges does not give a range"
                    ),
                    storage.alloc,
                )
        used = pool.symbols()
        records.append(
            ParametricPoolRecord(
                name=pool.pool,
                storages=tuple(names[s.alloc] for s in pool.storages),
                above=tuple(s.above for s in pool.storages),
                alignments=tuple(s.alignment for s in pool.storages),
                sizes=tuple(s.size for s in pool.storages),
                size_expr=pool.size_expr,
                dims=tuple(name for name in dims if name in used),
                at_lower=pool.size({name: dim.lower for name, dim in dims.items()}),
                at_upper=pool.size({name: dim.upper for name, dim in dims.items()}),
            )
        )
    return pools, records


def _function_report(lifetimes: ModuleLifetimes, function: FunctionLifetimes) -> FunctionReport:
    sources = _sources(function)
    dims = function_dims(function.func)
    programs, parametric = _parametric(function, dims)
    placed: dict[AllocStorageOp, tuple[int, tuple[int, ...], SizeExpr]] = {
        storage.alloc: (storage.slot, storage.above, offset)
        for program in programs
        for storage, offset in zip(program.storages, program.offset_exprs)
    }
    storage_sources: dict[str, str] = {}
    for tensor in function.tensors:
        source = sources.get(tensor.value)
        if source is not None and tensor.storage is not None:
            storage_sources.setdefault(tensor.storage.name, source[0])
    records: list[BufferRecord] = []
    by_pool: dict[str, list[Buffer]] = {pool.name: [] for pool in lifetimes.pools}
    unplanned: list[Buffer] = []
    offsets: dict[str, int] = {}
    for storage in function.storages:
        pinned = storage.pinned
        slot, above, offset_expr = placed.get(storage.alloc, (None, (), None))
        if storage.size is None:
            pool, offset = DYNAMIC, None
        elif pinned is None:
            pool, offset = UNPLANNED, None
            unplanned.append(storage.buffer())
        else:
            pool, offset = pinned
            by_pool.setdefault(pool, []).append(storage.buffer())
            offsets[storage.name] = offset
        records.append(
            BufferRecord(
                name=storage.name,
                size=storage.size,
                alignment=storage.alignment,
                start=storage.interval.start,
                end=storage.interval.end,
                pool=pool,
                offset=offset,
                device=storage.device,
                escapes=storage.escapes,
                read_only=storage.read_only,
                branch=storage.branch,
                size_is_bound=storage.is_dynamic and storage.size is not None,
                source_name=storage_sources.get(storage.name),
                slot=slot,
                above=above,
                reserve=storage_reserve(storage.alloc),
                offset_expr=offset_expr,
            )
        )
    sizes = {pool.name: pool.size for pool in lifetimes.pools}
    alignments = {pool.name: pool.alignment for pool in lifetimes.pools}
    pools = [
        _pool_record(name, sizes.get(name), buffers, offsets, alignments.get(name, 1))
        for name, buffers in by_pool.items()
    ]
    if unplanned:
        pools.append(_pool_record(UNPLANNED, None, unplanned, None, 1))

    symbols = SymbolCache()
    inplace_sources = {
        value: a
        for storage in function.storages
        for value, a in in_place_sources(storage.tensors, symbols, function.numbering).items()
    }

    def inplace_of(tensor: TensorLifetime) -> str | None:
        source = inplace_sources.get(tensor.value)
        return source.name if source is not None else None

    tensors = tuple(
        TensorRecord(
            name=tensor.name,
            storage=tensor.storage.name if tensor.storage is not None else "",
            offset=tensor.offset,
            size=tensor.size,
            start=tensor.interval.start,
            end=tensor.interval.end,
            inplace_of=inplace_of(tensor),
            source_name=sources[tensor.value][0] if tensor.value in sources else None,
            source_id=sources[tensor.value][1] if tensor.value in sources else None,
        )
        for tensor in function.tensors
    )
    kernels = tuple(
        (function.numbering.index[op], op.callee.root_reference.data)
        for op in function.func.walk()
        if isinstance(op, InvokeOp)
    )
    return FunctionReport(
        function.name,
        function.end,
        tuple(pools),
        tuple(records),
        tensors,
        kernels,
        dims=tuple(DimRecord(d.name, d.lower, d.upper, d.argument, d.axis) for d in dims.values()),
        parametric=tuple(parametric),
    )


def _module_pools(lifetimes: ModuleLifetimes) -> tuple[PoolRecord, ...]:
    by_pool: dict[str, list[Buffer]] = {pool.name: [] for pool in lifetimes.pools}
    offsets: dict[str, int] = {}
    for function, storage in lifetimes.storages():
        if storage.size is None or storage.pinned is None:
            continue
        buffer = lifetimes.module_buffer(function, storage)
        by_pool.setdefault(storage.pinned[0], []).append(buffer)
        offsets[buffer.id] = storage.pinned[1]
    return tuple(
        _pool_record(pool.name, pool.size, by_pool[pool.name], offsets, pool.alignment)
        for pool in lifetimes.pools
    )


def gather_report(module: ModuleOp) -> PlanReport:
    """The plan of ``module`` as data (every format writes this)."""
    # Storages and tensors under the names the printed IR gives them.
    lifetimes = analyze_module(module, printed_names(module))
    return PlanReport(
        functions=tuple(_function_report(lifetimes, f) for f in lifetimes.functions),
        pools=_module_pools(lifetimes),
        module_name=module.sym_name.data if module.sym_name is not None else None,
    )
