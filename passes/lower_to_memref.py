"""lower-to-memref: ``memory`` dialect -> upstream ``memref``/``arith``/``func``.

The pass and its options are documented on the pass class below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i8,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from memplan.dialect.diagnostics import fail_pass
from memplan.dialect.ops import (
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    KillOp,
    PoolOp,
    describe,
)
from memplan.dialect.size_expr import (
    Add,
    Align,
    Const,
    Div,
    Max,
    Mul,
    SizeExpr,
    Sym,
)
from memplan.dialect.types import StorageType
from memplan.passes.analysis.memref_flow import trace_flow
from memplan.passes.analysis.parametric import (
    RESERVE_ATTR,
    Dim,
    ParametricLayoutError,
    ParametricPool,
    function_dims,
    parametric_pools,
)
from memplan.passes.pass_options import check_options
from memplan.passes.planning.model import pool_base_alignment

PoolMode = Literal["alloc", "arg", "global"]


@dataclass(frozen=True)
class PoolBuffer:
    """The byte buffer a pool becomes: its size and alignment."""

    pool: PoolOp
    size: int
    alignment: int

    @property
    def memref_type(self) -> MemRefType:
        return MemRefType(i8, [self.size])


def _pool_buffers(module: ModuleOp, functions: Sequence[func.FuncOp]) -> dict[str, PoolBuffer]:
    """One buffer per pool that some storage is pinned into, in module order."""
    pools = {op.pool_name: op for op in module.ops if isinstance(op, PoolOp)}
    pinned = [
        (op, op.pinned)
        for function in functions
        for op in function.walk()
        if isinstance(op, AllocStorageOp) and op.pinned is not None
    ]
    storage_alignments: dict[str, list[int]] = {}
    for storage, (name, _) in pinned:
        if name not in pools:
            fail_pass(storage, f"storage {describe(storage.storage)}: unknown pool @{name}")
        storage_alignments.setdefault(name, []).append(storage.alignment_value)
    alignment = {
        name: pool_base_alignment(pools[name].alignment_value, alignments)
        for name, alignments in storage_alignments.items()
    }
    buffers: dict[str, PoolBuffer] = {}
    for name, pool in pools.items():
        if name not in alignment:
            continue
        size = pool.byte_size
        if size is None and pool.used is not None:
            size = pool.used.value.data
        if size is None:
            fail_pass(
                pool,
                f"pool @{name} has neither a size nor a used size: "
                "run usmp first, or give the pool a size",
            )
        buffers[name] = PoolBuffer(pool, size, alignment[name])
    for storage, (name, offset) in pinned:
        byte_size = storage.size_bound
        assert byte_size is not None  # the verifier rejects pinned unbounded storages
        if offset + byte_size > buffers[name].size:
            fail_pass(
                storage,
                f"storage {describe(storage.storage)} of {byte_size} bytes at offset "
                f"{offset} overflows the {buffers[name].size} bytes of pool @{name}",
            )
    return buffers


def _returned(storage: AllocStorageOp) -> bool:
    """Does a view of ``storage`` reach the function's ``func.return``?"""
    tensors = [
        use.operation.tensor
        for use in storage.storage.uses
        if isinstance(use.operation, AllocTensorOp)
    ]
    return trace_flow(tensors, storage).returned


def _kept_in_pool(function: func.FuncOp, mode: PoolMode) -> set[AllocStorageOp]:
    """The pinned storages of ``function`` that stay at their pool offset.

    In ``alloc`` mode the pool's buffer dies with the call, so a returned
    storage gets its own allocation instead.
    """
    return {
        op
        for op in function.walk()
        if isinstance(op, AllocStorageOp)
        and op.pinned is not None
        and not (mode == "alloc" and _returned(op))
    }


def _own_pools(kept: set[AllocStorageOp]) -> set[str]:
    """Pools the storages ``kept`` in them (of one function) are pinned in."""
    return {op.pinned[0] for op in kept if op.pinned is not None}


def _calls(function: func.FuncOp) -> list[func.CallOp]:
    return [op for op in function.walk() if isinstance(op, func.CallOp)]


def _needed_pools(
    functions: Sequence[func.FuncOp],
    buffers: dict[str, PoolBuffer],
    own_pools: dict[str, set[str]],
    calls: dict[str, list[func.CallOp]],
) -> dict[str, list[str]]:
    """Pools each function needs: its own and its callees', in module pool
    order (a fixed point over the call graph)."""
    needed = {name: set(pools) for name, pools in own_pools.items()}
    changed = True
    while changed:
        changed = False
        for function in functions:
            mine = needed[function.sym_name.data]
            for call in calls[function.sym_name.data]:
                callee = needed.get(call.callee.root_reference.data, set())
                if not callee <= mine:
                    mine |= callee
                    changed = True
    return {name: [p for p in buffers if p in pools] for name, pools in needed.items()}


@dataclass(frozen=True)
class _ParametricFunction:
    """The checked offset programs of one function and the dims they read."""

    function: func.FuncOp
    pools: tuple[ParametricPool, ...]
    dims: tuple[tuple[Dim, SSAValue], ...]
    """Each dim the programs use, with the function argument it is read from,
    in the order of ``memory.dim_ranges``."""


def _check_parametric(
    function: func.FuncOp, buffers: dict[str, PoolBuffer], mode: PoolMode
) -> _ParametricFunction | None:
    """Read and check ``function``'s offset programs (``None`` without any):
    every storage pinned in a pool with a program is in it, every dim it
    uses has a range and a place (a memref argument's axis), and in
    ``arg``/``global`` mode the pool at the upper bounds fits the static
    buffer (the dialect's verifier checks each reserve against its ``max``)."""
    allocs = [op for op in function.walk() if isinstance(op, AllocStorageOp)]
    try:
        pools = parametric_pools(function, allocs)
    except ParametricLayoutError as error:
        fail_pass(error.op, str(error))
    if not pools:
        return None
    name = function.sym_name.data
    slotted = {s.alloc for pool in pools for s in pool.storages}
    programmed = {pool.pool for pool in pools}
    for alloc in allocs:
        pinned = alloc.pinned
        if pinned is not None and pinned[0] in programmed and alloc not in slotted:
            fail_pass(
                alloc,
                f"storage {describe(alloc.storage)} is pinned in pool @{pinned[0]}, which has "
                f"an offset program in @{name}, but has no memory.slot",
            )
    dims = function_dims(function)
    entry = function.body.blocks.first
    assert entry is not None
    used: dict[str, tuple[Dim, SSAValue]] = {}
    for pool in pools:
        for storage in pool.storages:
            for symbol in sorted(storage.size.symbols()):
                dim = dims.get(symbol)
                if dim is None:
                    fail_pass(
                        storage.alloc,
                        f"storage {describe(storage.alloc.storage)}: its reserve "
                        f"'{storage.size}' names dim '{symbol}', which @{name} has no "
                        "memory.dim_ranges entry for",
                    )
                if symbol in used:
                    continue
                if dim.argument is None or dim.axis is None:
                    fail_pass(
                        function,
                        f"dim '{symbol}' of @{name} has no memory.dim_symbols entry: "
                        "lower-to-memref cannot read it at run time",
                    )
                argument = entry.args[dim.argument] if 0 <= dim.argument < len(entry.args) else None
                if (
                    argument is None
                    or not isinstance(argument.type, MemRefType)
                    or not 0 <= dim.axis < len(argument.type.get_shape())
                ):
                    fail_pass(
                        function,
                        f"dim '{symbol}' of @{name} is read from argument {dim.argument}, "
                        f"axis {dim.axis}, which is not an axis of a memref argument",
                    )
                used[symbol] = (dim, argument)
    upper = {d.name: d.upper for d in dims.values()}
    for pool in pools:
        if mode != "alloc" and pool.pool in buffers:
            needed = pool.size(upper)
            if needed > buffers[pool.pool].size:
                fail_pass(
                    function,
                    f"the offset program of pool @{pool.pool} in @{name} takes {needed} bytes "
                    f"at the upper bounds, more than the pool's {buffers[pool.pool].size}",
                )
    ordered = tuple(used[symbol] for symbol in dims if symbol in used)
    return _ParametricFunction(function, tuple(pools), ordered)


_Binary = arith.AddiOp | arith.MuliOp | arith.MaxUIOp | arith.CeilDivUIOp | arith.DivUIOp


_FOLD: dict[str, Callable[[int, int], int]] = {
    arith.AddiOp.name: lambda a, b: a + b,
    arith.MuliOp.name: lambda a, b: a * b,
    arith.MaxUIOp.name: max,
    arith.CeilDivUIOp.name: lambda a, b: -(-a // b),
    arith.DivUIOp.name: lambda a, b: a // b,
}
_IDENTITY = {arith.AddiOp.name: 0, arith.MuliOp.name: 1, arith.MaxUIOp.name: 0}
"""The constant each operation leaves its other operand unchanged with (all
values are non-negative, so 0 for ``maxui``)."""


@dataclass
class _ProgramBuilder:
    """Emits a function's offset programs as ``arith`` ops on its dims, each
    value once (constants, sizes, ends and offsets are shared) and an
    operation on constants folded to a constant."""

    ops: list[Operation] = field(default_factory=list[Operation])
    values: dict[SizeExpr, SSAValue] = field(default_factory=dict[SizeExpr, SSAValue])
    binaries: dict[tuple[str, SSAValue, SSAValue], SSAValue] = field(
        default_factory=dict[tuple[str, SSAValue, SSAValue], SSAValue]
    )
    known: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    """The value of each constant emitted."""

    def constant(self, value: int) -> SSAValue:
        key = Const(value)
        if key not in self.values:
            op = arith.ConstantOp.from_int_and_width(value, IndexType())
            self.ops.append(op)
            self.values[key] = op.result
            self.known[op.result] = value
        return self.values[key]

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def binary(self, kind: type[_Binary], left: SSAValue, right: SSAValue) -> SSAValue:
        """``kind(left, right)``, emitted once for the same operands."""
        key = (kind.name, left, right)
        if left in self.known and right in self.known:
            return self.constant(_FOLD[kind.name](self.known[left], self.known[right]))
        identity = _IDENTITY.get(kind.name)
        if identity is not None and self.known.get(left) == identity:
            return right
        if identity is not None and self.known.get(right) == identity:
            return left
        if key not in self.binaries:
            self.binaries[key] = self.emit(kind(left, right))
        return self.binaries[key]

    def fold(self, kind: type[_Binary], args: list[SSAValue]) -> SSAValue:
        value = args[0]
        for arg in args[1:]:
            value = self.binary(kind, value, arg)
        return value

    def align(self, value: SSAValue, alignment: int) -> SSAValue:
        if alignment == 1:
            return value
        if value in self.known:
            return self.constant(-(-self.known[value] // alignment) * alignment)
        multiple = self.constant(alignment)
        return self.binary(arith.MuliOp, self.binary(arith.CeilDivUIOp, value, multiple), multiple)

    def expr(self, expr: SizeExpr) -> SSAValue:
        found = self.values.get(expr)
        if found is not None:
            return found
        if isinstance(expr, Const):
            return self.constant(expr.value)
        if isinstance(expr, Add):
            value = self.fold(arith.AddiOp, [self.expr(t) for t in expr.terms])
        elif isinstance(expr, Mul):
            value = self.fold(arith.MuliOp, [self.expr(f) for f in expr.factors])
        elif isinstance(expr, Max):
            value = self.fold(arith.MaxUIOp, [self.expr(a) for a in expr.args])
        elif isinstance(expr, Div):
            kind = arith.CeilDivUIOp if expr.ceil else arith.DivUIOp
            value = self.binary(kind, self.expr(expr.arg), self.constant(expr.divisor))
        elif isinstance(expr, Align):
            value = self.align(self.expr(expr.arg), expr.alignment)
        else:
            assert isinstance(expr, Sym)  # the dims are entered before any expression
            raise AssertionError(f"dim '{expr.name}' was not read")
        self.values[expr] = value
        return value


@dataclass
class _ParametricValues:
    """What a function's offset programs computed at its entry."""

    ops: list[Operation]
    offsets: dict[AllocStorageOp, SSAValue]
    """Each slotted storage's offset in its pool's buffer."""
    reserves: dict[AllocStorageOp, SSAValue]
    """Each slotted dynamic storage's reserve at the run-time dims."""
    pool_sizes: dict[str, SSAValue]
    """Each pool's bytes at the run-time dims."""


def _emit_pool(
    builder: _ProgramBuilder,
    pool: ParametricPool,
    offsets: dict[AllocStorageOp, SSAValue],
    reserves: dict[AllocStorageOp, SSAValue],
    sized: bool,
) -> SSAValue | None:
    """Emit one pool's program by slot into ``offsets`` (and each dynamic
    storage's reserve into ``reserves``); the pool's bytes when ``sized``."""
    slot_offsets: list[SSAValue] = []
    ends: dict[int, SSAValue] = {}

    def end(slot: int) -> SSAValue:
        """offset + size of ``slot``, computed on first use."""
        if slot not in ends:
            size = builder.expr(pool.storages[slot].size)
            ends[slot] = builder.binary(arith.AddiOp, slot_offsets[slot], size)
        return ends[slot]

    for storage in pool.storages:
        size = builder.expr(storage.size)
        if storage.alloc.dynamic_size is not None:
            reserves[storage.alloc] = size
        if storage.above:
            base = builder.fold(arith.MaxUIOp, [end(j) for j in storage.above])
            offset = builder.align(base, storage.alignment)
            hint = storage.alloc.storage.name_hint
            if hint is not None and offset.name_hint is None and offset not in builder.known:
                offset.name_hint = f"{hint}_offset"
        else:
            offset = builder.constant(0)
        offsets[storage.alloc] = offset
        slot_offsets.append(offset)
    if not sized:
        return None
    total = builder.fold(arith.MaxUIOp, [end(k) for k in range(len(pool.storages))])
    if total.name_hint is None and total not in builder.known:
        total.name_hint = f"{pool.pool}_bytes"
    return total


def _build_parametric(program: _ParametricFunction, sized_pools: set[str]) -> _ParametricValues:
    """The ops (not yet inserted) that read the dims, check their ranges and
    compute every size and offset of the function's programs, by slot, and
    the bytes of each pool in ``sized_pools``."""
    builder = _ProgramBuilder()
    for dim, argument in program.dims:
        assert dim.axis is not None  # checked by _check_parametric
        read = memref.DimOp(argument, builder.constant(dim.axis))
        builder.emit(read)
        read.result.name_hint = dim.name
        builder.values[Sym(dim.name)] = read.result
        fits = builder.emit(arith.CmpiOp(read.result, builder.constant(dim.upper), "ule"))
        if dim.lower > 0:
            above = builder.emit(arith.CmpiOp(read.result, builder.constant(dim.lower), "uge"))
            fits = builder.emit(arith.AndIOp(above, fits))
        builder.ops.append(
            cf.AssertOp(
                fits,
                f"dim {dim.name} (argument {dim.argument}, axis {dim.axis}) is outside its "
                f"range {dim.lower}..{dim.upper}",
            )
        )
    offsets: dict[AllocStorageOp, SSAValue] = {}
    reserves: dict[AllocStorageOp, SSAValue] = {}
    pool_sizes: dict[str, SSAValue] = {}
    for pool in program.pools:
        total = _emit_pool(builder, pool, offsets, reserves, pool.pool in sized_pools)
        if total is not None:
            pool_sizes[pool.pool] = total
    return _ParametricValues(builder.ops, offsets, reserves, pool_sizes)


@dataclass
class _FunctionLowering:
    """Lowers the ``memory`` ops of one function, given its pool buffers."""

    function: func.FuncOp
    pool_values: dict[str, SSAValue]
    kept: set[AllocStorageOp]
    parametric: _ParametricValues | None = None
    """The function's offset programs, already at its entry, if it has any."""

    def run(self) -> None:
        for storage in [op for op in self.function.walk() if isinstance(op, AllocStorageOp)]:
            self._lower_storage(storage)

    def _lower_storage(self, storage: AllocStorageOp) -> None:
        reserve = None if self.parametric is None else self.parametric.reserves.get(storage)
        if storage.dynamic_size is not None and reserve is not None:
            self._assert_within_reserve(storage, storage.dynamic_size, reserve)
        elif storage.dynamic_size is not None and storage.max_size is not None:
            self._assert_within_bound(storage, storage.dynamic_size)
        pinned = storage.pinned
        base_offset: int | SSAValue
        if pinned is not None and storage in self.kept:
            base, base_offset = self.pool_values[pinned[0]], pinned[1]
            if self.parametric is not None and storage in self.parametric.offsets:
                base_offset = self.parametric.offsets[storage]
            deallocate = False
        else:
            base = self._allocate(storage)
            base_offset = 0
            deallocate = True
        kills: list[KillOp] = []
        for use in list(storage.storage.uses):
            user = use.operation
            if isinstance(user, AllocTensorOp):
                self._lower_tensor(user, base, base_offset)
            else:
                assert isinstance(user, KillOp)  # checked by _check_storage_uses
                kills.append(user)
        for kill in kills:
            if deallocate:
                Rewriter.replace_op(kill, memref.DeallocOp.get(base))
            else:
                Rewriter.erase_op(kill)
        if deallocate and not kills:
            self._deallocate_at_block_end(storage, base)
        Rewriter.erase_op(storage)

    def _assert_within_bound(self, storage: AllocStorageOp, size: SSAValue) -> None:
        """``cf.assert`` that a bounded dynamic size is within its `max`: the
        plan reserved only the bound, so a larger size would overrun."""
        bound = storage.size_bound
        assert bound is not None
        limit = arith.ConstantOp.from_int_and_width(bound, IndexType())
        fits = arith.CmpiOp(size, limit, "ule")
        message = f"storage {describe(storage.storage)} exceeds its bound of {bound} bytes"
        check = cf.AssertOp(fits, message)
        Rewriter.insert_op([limit, fits, check], InsertPoint.before(storage))

    def _assert_within_reserve(
        self, storage: AllocStorageOp, size: SSAValue, reserve: SSAValue
    ) -> None:
        """``cf.assert`` that a dynamic size is within its reserve at the run-time
        dims: the offset program placed the storages above it by the reserve."""
        fits = arith.CmpiOp(size, reserve, "ule")
        expr = storage.attributes[RESERVE_ATTR]
        assert isinstance(expr, StringAttr)
        message = f"storage {describe(storage.storage)} exceeds its reserve of {expr.data} bytes"
        Rewriter.insert_op([fits, cf.AssertOp(fits, message)], InsertPoint.before(storage))

    def _allocate(self, storage: AllocStorageOp) -> SSAValue:
        size = storage.byte_size
        dynamic = [] if storage.dynamic_size is None else [storage.dynamic_size]
        alloc = memref.AllocOp.get(
            i8,
            alignment=storage.alignment_value,
            shape=[DYNAMIC_INDEX if size is None else size],
            dynamic_sizes=dynamic,
        )
        alloc.memref.name_hint = storage.storage.name_hint
        Rewriter.insert_op(alloc, InsertPoint.before(storage))
        return alloc.memref

    def _deallocate_at_block_end(self, storage: AllocStorageOp, base: SSAValue) -> None:
        """No kill: free before the block's terminator if nothing flows past it."""
        block = storage.parent_block()
        assert block is not None
        terminator = block.last_op
        if terminator is None or terminator.successors:
            return
        allocation = base.owner
        assert isinstance(allocation, Operation)
        flow = trace_flow([base], allocation)
        if flow.returned or any(v in flow.aliases for v in terminator.operands):
            return
        Rewriter.insert_op(memref.DeallocOp.get(base), InsertPoint.before(terminator))

    def _lower_tensor(
        self, tensor: AllocTensorOp, base: SSAValue, base_offset: int | SSAValue
    ) -> None:
        ops: list[Operation] = []
        if isinstance(base_offset, SSAValue):
            # The storage's offset is computed at run time.
            if tensor.dynamic_offset is not None:
                add = arith.AddiOp(base_offset, tensor.dynamic_offset)
                ops.append(add)
                shift = add.result
            elif tensor.static_offset == 0:
                shift = base_offset
            else:
                assert tensor.static_offset is not None
                constant = arith.ConstantOp.from_int_and_width(tensor.static_offset, IndexType())
                add = arith.AddiOp(base_offset, constant)
                ops += [constant, add]
                shift = add.result
        elif tensor.dynamic_offset is None:
            static = tensor.static_offset
            assert static is not None
            shift_op = arith.ConstantOp.from_int_and_width(base_offset + static, IndexType())
            ops.append(shift_op)
            shift = shift_op.result
        elif base_offset == 0:
            shift = tensor.dynamic_offset
        else:
            constant = arith.ConstantOp.from_int_and_width(base_offset, IndexType())
            add = arith.AddiOp(constant, tensor.dynamic_offset)
            ops += [constant, add]
            shift = add.result
        if ops:
            Rewriter.insert_op(ops, InsertPoint.before(tensor))
        view = memref.ViewOp(base, shift, list(tensor.dynamic_dims), tensor.tensor_type)
        Rewriter.replace_op(tensor, view)


@dataclass(frozen=True)
class _KernelCalls:
    """A kernel that is invoked and the destination-passing type it gets."""

    kernel: func.FuncOp
    new_type: FunctionType | None
    """The rewritten declaration type, or ``None`` to keep the declaration."""


def _plan_invokes(module: ModuleOp) -> list[_KernelCalls]:
    """Check every ``memory.invoke`` against its kernel (before any rewrite)."""
    invokes: dict[str, list[InvokeOp]] = {}
    for op in module.walk():
        if isinstance(op, InvokeOp):
            invokes.setdefault(op.callee.root_reference.data, []).append(op)
    called = {op.callee.root_reference.data for op in module.walk() if isinstance(op, func.CallOp)}
    plans: list[_KernelCalls] = []
    for name, group in invokes.items():
        kernel = SymbolTable.lookup_symbol(module, name)
        first = group[0]
        if not isinstance(kernel, func.FuncOp):
            fail_pass(first, f"invoke of @{name}: no func.func @{name} in the module")
        operand_types = [v.type for v in (*first.ins, *first.outs)]
        signature = kernel.function_type
        new_type = None
        if len(signature.inputs) != len(operand_types) or signature.outputs.data:
            if kernel.body.blocks or name in called:
                fail_pass(
                    first,
                    f"invoke of @{name} passes {len(operand_types)} operands (ins then outs) "
                    f"but @{name} has type {signature}",
                )
            for invoke in group[1:]:
                types = [v.type for v in (*invoke.ins, *invoke.outs)]
                if types != operand_types:
                    fail_pass(
                        invoke,
                        f"invokes of @{name} disagree on the kernel's signature: "
                        f"{FunctionType.from_lists(types, [])} vs "
                        f"{FunctionType.from_lists(operand_types, [])}",
                    )
            new_type = FunctionType.from_lists(operand_types, [])
        inputs = new_type.inputs if new_type is not None else signature.inputs
        for invoke in group:
            for value, expected in zip((*invoke.ins, *invoke.outs), inputs):
                if value.type != expected and not (
                    isinstance(value.type, MemRefType) and isinstance(expected, MemRefType)
                ):
                    fail_pass(
                        invoke,
                        f"invoke of @{name}: operand {describe(value)} has type "
                        f"{value.type} but the kernel takes {expected}",
                    )
        plans.append(_KernelCalls(kernel, new_type))
    return plans


def _retype_kernels(plans: list[_KernelCalls]) -> None:
    """Give each kernel the destination-passing type its invokes need."""
    for plan in plans:
        if plan.new_type is not None:
            plan.kernel.function_type = plan.new_type
            plan.kernel.arg_attrs = None
            plan.kernel.res_attrs = None


@dataclass(eq=False)
class InvokeToCall(RewritePattern):
    """``memory.invoke`` -> ``func.call`` of its (retyped) kernel.

    An operand whose memref type differs from the kernel's (a view with a
    strided layout, say) is passed through a ``memref.cast``::

        memory.invoke @relu ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
        // becomes
        func.call @relu(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
    """

    kernels: dict[str, func.FuncOp]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: InvokeOp, rewriter: PatternRewriter) -> None:
        kernel = self.kernels[op.callee.root_reference.data]
        arguments: list[SSAValue] = []
        for value, expected in zip((*op.ins, *op.outs), kernel.function_type.inputs):
            if value.type == expected:
                arguments.append(value)
                continue
            assert isinstance(expected, MemRefType)  # checked by _plan_invokes
            cast = memref.CastOp.get(value, expected)
            rewriter.insert(cast)
            arguments.append(cast.dest)
        call = func.CallOp(op.callee, arguments, [])
        call.attributes |= op.attributes
        rewriter.replace(op, call)


class EraseTensorKill(RewritePattern):
    """Drop the ``memory.kill`` of a tensor: only storages are freed
    (``memref.dealloc``), and their kills are lowered with them."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: KillOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.value.type, StorageType):
            rewriter.erase(op)


def _check_storage_uses(functions: Sequence[func.FuncOp]) -> None:
    """Storages may only be carved (alloc_tensor) and killed."""
    for function in functions:
        for storage in function.walk():
            if not isinstance(storage, AllocStorageOp):
                continue
            for use in storage.storage.uses:
                if not isinstance(use.operation, AllocTensorOp | KillOp):
                    fail_pass(
                        use.operation,
                        f"storage {describe(storage.storage)} is used by "
                        f"{use.operation.name}, which lower-to-memref cannot rewrite",
                    )


def _add_pool_arguments(
    function: func.FuncOp, pools: list[str], buffers: dict[str, PoolBuffer]
) -> dict[str, SSAValue]:
    if not pools:
        return {}
    entry = function.body.blocks.first
    assert entry is not None
    values: dict[str, SSAValue] = {}
    for index, name in enumerate(pools):
        argument = entry.insert_arg(buffers[name].memref_type, index)
        argument.name_hint = name
        values[name] = argument
    inputs = [buffers[p].memref_type for p in pools] + list(function.function_type.inputs)
    function.function_type = FunctionType.from_lists(inputs, function.function_type.outputs.data)
    old_attrs = (
        list(function.arg_attrs.data)
        if function.arg_attrs is not None
        else [DictionaryAttr({}) for _ in range(len(inputs) - len(pools))]
    )
    pool_attrs = [
        DictionaryAttr(
            {
                "memory.pool": StringAttr(p),
                "llvm.align": IntegerAttr(buffers[p].alignment, 64),
            }
        )
        for p in pools
    ]
    function.arg_attrs = ArrayAttr([*pool_attrs, *old_attrs])
    return values


def _materialize_buffers(
    function: func.FuncOp,
    pools: list[str],
    buffers: dict[str, PoolBuffer],
    mode: PoolMode,
    dynamic_sizes: dict[str, SSAValue],
) -> dict[str, SSAValue]:
    """Create the pool buffers at the function's entry (alloc and global modes);
    in alloc mode a pool in ``dynamic_sizes`` is allocated at that size."""
    entry = function.body.blocks.first
    assert entry is not None
    values: dict[str, SSAValue] = {}
    ops: list[Operation] = []
    for name in pools:
        buffer = buffers[name]
        if mode == "alloc" and name in dynamic_sizes:
            op: Operation = memref.AllocOp.get(
                i8,
                alignment=buffer.alignment,
                shape=[DYNAMIC_INDEX],
                dynamic_sizes=[dynamic_sizes[name]],
            )
        elif mode == "alloc":
            op = memref.AllocOp.get(i8, alignment=buffer.alignment, shape=[buffer.size])
        else:
            op = memref.GetGlobalOp(name, buffer.memref_type)
        op.results[0].name_hint = name
        values[name] = op.results[0]
        ops.append(op)
    if not ops:
        return values
    Rewriter.insert_op(ops, InsertPoint.at_start(entry))
    if mode == "alloc":
        returns = [op for op in function.walk() if isinstance(op, func.ReturnOp)]
        for ret in returns:
            for value in values.values():
                Rewriter.insert_op(memref.DeallocOp.get(value), InsertPoint.before(ret))
    return values


def _replace_pools(module: ModuleOp, buffers: dict[str, PoolBuffer], mode: PoolMode) -> None:
    for pool in [op for op in module.ops if isinstance(op, PoolOp)]:
        buffer = buffers.get(pool.pool_name)
        if mode == "global" and buffer is not None:
            global_op = memref.GlobalOp.get(
                StringAttr(pool.pool_name),
                buffer.memref_type,
                UnitAttr(),
                alignment=buffer.alignment,
            )
            Rewriter.replace_op(pool, global_op)
        else:
            Rewriter.erase_op(pool)


def _check_lowerable(module: ModuleOp, functions: Sequence[func.FuncOp]) -> None:
    """Everything of the ``memory`` dialect must be something this pass rewrites:
    pools at module level, other ops inside the module's functions, and
    storages only as ``alloc_storage`` results."""
    inside = {op for function in functions for op in function.walk()}
    for op in module.walk():
        if isinstance(op, PoolOp):
            continue
        if op.name.startswith("memory.") and op not in inside:
            fail_pass(op, f"{op.name} outside a func.func of the module cannot be lowered")
        if isinstance(op, AllocStorageOp):
            continue
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for value in values:
            if isinstance(value.type, StorageType):
                fail_pass(
                    op,
                    f"{describe(value)} of type {value.type} is not a memory.alloc_storage "
                    "result: lower-to-memref cannot lower it",
                )


@dataclass(frozen=True)
class LowerToMemrefPass(ModulePass):
    """Lower the ``memory`` dialect to ``memref``/``arith``/``func`` (TVM's AOT
    lowering): pools -> ``memref<Nxi8>`` buffers, pinned storages -> byte
    offsets, tensors -> ``memref.view``, invokes -> ``func.call``, kills
    dropped, dynamic storages -> ``memref.alloc``/``dealloc``.

    - Every pool some function pins a storage into becomes one byte buffer
      ``memref<Nxi8>``, where N is the pool's ``size``, or its ``used`` when the
      pool is unbounded (a diagnostic when it has neither). The buffer's
      alignment is the largest of the pool's ``align`` and the alignments of the
      storages pinned in it, so every pinned storage really is aligned.
      How the buffer is provided depends on ``pool-mode``:

      - ``alloc`` (default): each function that pins storages in the pool
        allocates the buffer itself, ``memref.alloc() {alignment = A}`` at its
        entry, and frees it with ``memref.dealloc`` before each ``func.return``.
        Re-entrant: every call has its own buffer.
      - ``arg``: the buffer is an extra leading function argument, one per pool
        in module order (the AOT/USMP convention: the application provides the
        workspaces). A function gets the argument when it pins storages in the
        pool or calls, through ``func.call``, a function that gets it; every
        ``func.call`` passes the caller's argument on. The argument carries the
        discardable attribute ``memory.pool = "<name>"`` and ``llvm.align = A``.
        Other references to such a function (``func.constant``) are not updated.
      - ``global``: the buffer is a private ``memref.global`` named like the pool
        (``uninitialized``, with the alignment), read with ``memref.get_global``.
      In ``arg`` and ``global`` mode all functions share one buffer per pool.
      That is the plan's model: ``usmp`` plans functions that call each other
      together, so a callee's storages never overlap its callers' live ones
      (``verify-plan`` checks it), and functions that do not call each other are
      never running at once (one thread). In ``alloc`` mode each function
      allocates the whole pool for itself.

    - A pinned storage ``at @pool[off]`` becomes byte offsets into the pool's
      buffer: each ``memory.alloc_tensor %s[t]`` becomes
      ``memref.view %pool[%c][dims]`` with ``%c = arith.constant off+t`` (an
      ``arith.addi`` for a dynamic ``t``).
    - A pinned dynamic storage (it has a ``max`` bound) is lowered like a
      static one, views with its run-time dims, after
      ``cf.assert (size <= max)``: the plan reserved only the bound.
    - A dynamic storage, and a static storage that is not pinned (no ``usmp``
      ran, e.g. after ``coalesce``/``reuse`` alone: each storage is then its own
      allocation, the Relay VM model), becomes ``memref.alloc`` of
      ``memref<?xi8>``/``memref<Nxi8>`` with its alignment, its tensors views of
      it. It is freed with ``memref.dealloc`` at its ``memory.kill``; without a
      kill, before the terminator of its block when that is a ``func.return`` or
      a region terminator and no view of it flows through it, and otherwise not
      at all (as the ``memref.alloc`` it came from: ownership goes with the value).
    - A parametric plan (``usmp{parametric=true}``: a function with
      ``memory.dim_ranges``/``memory.dim_symbols`` whose pinned storages carry
      ``memory.slot``/``memory.above``, see ``analysis/parametric``) computes its
      offsets at run time. At the function's entry: each dim the program uses
      is read with ``memref.dim`` of its argument and axis and checked against
      its range (``cf.assert``, "dim N (argument 0, axis 0) is outside its range
      1..64"); each storage's size (its ``memory.reserve``, else its static size
      or ``max``) and offset are computed in slot order with ``arith`` on
      ``index`` (``+`` ``addi``, ``*`` ``muli``, ``max`` ``maxui``, ``ceildiv``
      ``ceildivui``, ``floordiv`` ``divui``, ``align`` ``ceildivui`` then
      ``muli``; ``offset(K) = align(max(offset(J) + size(J) for J in above),
      alignment)``), each value once and operations on constants folded. A
      storage's views use its computed offset instead of the ``at`` one, and a
      ``cf.assert (size <= reserve)`` at the run-time dims replaces its
      ``(size <= max)``. In ``alloc`` mode the function allocates the pool at
      its size at those dims, ``memref.alloc(%pool_bytes) : memref<?xi8>``
      (``max(offset(K) + size(K))``); in ``arg``/``global`` mode the buffer
      stays the static one (the program at the upper bounds, which the offsets
      never exceed as they grow with the dims; a program that would is a
      diagnostic). A storage pinned in such a pool without a slot, or a dim
      without a place to read it from, is a diagnostic. Functions without the
      attributes lower as above.
    - In ``alloc`` mode a pinned storage whose view is returned from its function
      cannot stay in the function's buffer, which is freed at exit: it is lowered
      like an unpinned storage (its own ``memref.alloc``, owned by the caller).
    - ``memory.invoke @k ins(...) outs(...)`` becomes ``func.call @k(ins...,
      outs...)`` (destination passing) keeping the invoke's attributes. When the
      declaration of ``@k`` takes exactly that many arguments and returns nothing,
      operands whose type differs get a ``memref.cast``; a private value-semantic
      declaration (other arity or results) that only invokes use is rewritten to
      the destination-passing signature, which every invoke of it must agree on.
    - ``memory.kill`` disappears (or becomes the dealloc above); pools are removed.

    The output contains no ``memory`` op or type: anything this pass cannot
    rewrite (a storage used by another op, a storage block argument, a
    ``memory`` op outside the module's functions) is a diagnostic naming it,
    raised before the first rewrite.

    Options:
      pool-mode: ``alloc`` | ``arg`` | ``global`` (default ``alloc``), see above.
    """

    name = "lower-to-memref"

    pool_mode: PoolMode = "alloc"

    def __post_init__(self) -> None:
        check_options(self)

    """How pools reach functions: ``alloc`` (allocated at each function's
    entry), ``arg`` (leading function arguments) or ``global`` (``memref.global``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        _check_lowerable(op, functions)
        buffers = _pool_buffers(op, functions)
        kept_by_function = {f.sym_name.data: _kept_in_pool(f, self.pool_mode) for f in functions}
        own_pools = {name: _own_pools(k) for name, k in kept_by_function.items()}
        calls = {f.sym_name.data: _calls(f) for f in functions}
        needed = _needed_pools(functions, buffers, own_pools, calls)
        _check_storage_uses(functions)
        programs = {
            f.sym_name.data: program
            for f in functions
            if (program := _check_parametric(f, buffers, self.pool_mode)) is not None
        }
        kernel_calls = _plan_invokes(op)
        # Every check is done: the rewrites below cannot fail.
        _retype_kernels(kernel_calls)
        kernels = {plan.kernel.sym_name.data: plan.kernel for plan in kernel_calls}
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [InvokeToCall(kernels), EraseTensorKill()], dce_enabled=False
            ),
            apply_recursively=False,
        ).rewrite_module(op)
        pool_values: dict[str, dict[str, SSAValue]] = {}
        parametric: dict[str, _ParametricValues] = {}
        for function in functions:
            name = function.sym_name.data
            pools = [p for p in buffers if p in own_pools[name]]
            program = programs.get(name)
            if program is not None:
                sized = set(pools) if self.pool_mode == "alloc" else set()
                parametric[name] = _build_parametric(program, sized)
            if self.pool_mode == "arg":
                pool_values[name] = _add_pool_arguments(function, needed[name], buffers)
            else:
                sizes = parametric[name].pool_sizes if name in parametric else {}
                pool_values[name] = _materialize_buffers(
                    function, pools, buffers, self.pool_mode, sizes
                )
            if name in parametric:
                # Before the buffers: an allocation takes the pool's size.
                entry = function.body.blocks.first
                assert entry is not None
                Rewriter.insert_op(parametric[name].ops, InsertPoint.at_start(entry))
        if self.pool_mode == "arg":
            for function in functions:
                caller = pool_values[function.sym_name.data]
                # Walked again: the calls lowered from invokes are here too.
                for call in _calls(function):
                    callee_pools = needed.get(call.callee.root_reference.data, [])
                    if callee_pools:
                        call.operands = [*(caller[p] for p in callee_pools), *call.operands]
        for function in functions:
            name = function.sym_name.data
            _FunctionLowering(
                function, pool_values[name], kept_by_function[name], parametric.get(name)
            ).run()
        _replace_pools(op, buffers, self.pool_mode)
