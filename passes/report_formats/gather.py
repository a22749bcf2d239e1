"""The plan in the IR as report data: ``gather_report(module) -> PlanReport``.

The one part of ``plan-report`` that reads IR: lifetimes from the one
lifetime analysis (``passes.analysis``), bounds from ``passes.planning``.
Every format writes the ``PlanReport`` it returns.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, ModuleOp, StringAttr
from xdsl.ir import SSAValue

from memplan.dialect.ops import SOURCE_IDS_ATTR, SOURCE_NAMES_ATTR, InvokeOp
from memplan.dialect.printer import printed_names
from memplan.passes.analysis import (
    FunctionLifetimes,
    ModuleLifetimes,
    TensorLifetime,
    analyze_module,
)
from memplan.passes.analysis.inplace import in_place_sources
from memplan.passes.analysis.symbols import SymbolCache
from memplan.passes.planning.bounds import buffers_lower_bound, peak_live_bytes
from memplan.passes.planning.model import Buffer, pool_base_alignment
from memplan.passes.report_formats.records import (
    DYNAMIC,
    LARGEST_SHOWN,
    UNPLANNED,
    BufferRecord,
    FunctionReport,
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


def _function_report(lifetimes: ModuleLifetimes, function: FunctionLifetimes) -> FunctionReport:
    sources = _sources(function)
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
        function.name, function.end, tuple(pools), tuple(records), tensors, kernels
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
