"""The `manifest-alloc` pass (TVM ManifestAlloc); see `ManifestAllocPass`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, scf, tensor
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FixedBitwidthType,
    FunctionType,
    IndexType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.hints import isa

from memplan.dialect.diagnostics import fail_pass
from memplan.dialect.ops import (
    DEFAULT_DEVICE,
    DIM_EXPRS_ATTR,
    INPLACE_OF_ATTR,
    MAX_SHAPES_ATTR,
    RESERVE_ATTR,
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    i64_attr,
)
from memplan.dialect.size_expr import SizeExprError, bytes_of, parse_size_expr
from memplan.dialect.types import default_alignment, element_byte_size, static_byte_size
from memplan.passes.analysis.aliasing import AliasAnalysis, UseKind
from memplan.passes.analysis.value_semantic import (
    Kernel,
    ValueSemanticProgram,
    bound_bytes,
    device_of,
    is_tensor,
    memref_or_same,
    to_memref,
)
from memplan.passes.pass_options import check_options


def _dynamic_byte_size(
    memref_type: MemRefType[Attribute], dims: Sequence[SSAValue]
) -> tuple[list[Operation], SSAValue]:
    """``arith`` ops computing the bytes of ``memref_type`` given ``dims`` for its ``?``s.

    The size is ``d0 * d1 * ... * factor`` with ``factor`` = static dims times
    element bytes; the multiplication by ``factor`` is left out when it is 1.
    Returns the ops and the value holding the size.
    """
    factor = element_byte_size(memref_type)
    for dim in memref_type.get_shape():
        if dim >= 0:
            factor *= dim
    ops: list[Operation] = []
    size: SSAValue | int = dims[0]
    for dim in [*dims[1:], factor]:
        size = _index_product(size, dim, ops)
    assert isinstance(size, SSAValue)
    return ops, size


def _reserve(call: func.CallOp, result: int, element_bytes: int) -> str | None:
    """`memory.reserve` of result ``result`` of ``call``: its bytes as a size
    expression of the dims, from the call's `memory.dim_exprs` (``None``
    without them)."""
    exprs = call.attributes.get(DIM_EXPRS_ATTR)
    if not isa(exprs, ArrayAttr[ArrayAttr[StringAttr]]) or result >= len(exprs.data):
        return None
    try:
        dims = [parse_size_expr(text.data) for text in exprs.data[result].data]
    except SizeExprError as error:
        fail_pass(call, f"{DIM_EXPRS_ATTR} of result {result}: {error}")
    return str(bytes_of(dims, element_bytes))


def _name_values(
    hint: str,
    result_type: TensorType[Attribute],
    dims: Sequence[SSAValue],
    size: int | SSAValue,
) -> None:
    """Readable names for a result's dynamic dims (``%y_dim0``) and size (``%y_bytes``)."""
    positions = [i for i, d in enumerate(result_type.get_shape()) if d < 0]
    for position, dim in zip(positions, dims):
        dim.name_hint = f"{hint}_dim{position}"
    if isinstance(size, SSAValue) and size not in dims:
        size.name_hint = f"{hint}_bytes"


def _index_product(a: SSAValue | int, b: SSAValue | int, ops: list[Operation]) -> SSAValue | int:
    """``a * b``: an int when both are, else an `arith.muli` (appended to ``ops``)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1 or b == 1:
        return b if a == 1 else a
    operands: list[SSAValue] = []
    for value in (a, b):
        if isinstance(value, int):
            constant = arith.ConstantOp.from_int_and_width(value, IndexType())
            ops.append(constant)
            value = constant.result
        operands.append(value)
    product = arith.MuliOp(operands[0], operands[1])
    ops.append(product)
    return product.result


def _row_major_index(flat: int, shape: Sequence[int]) -> list[int]:
    """The multi-dimensional index of element ``flat`` of a row-major ``shape``."""
    index: list[int] = []
    for dim in reversed(shape):
        flat, position = divmod(flat, dim)
        index.append(position)
    return index[::-1]


class _OpOrder:
    """The order of two ops of one block in O(1) while the rewrite changes the block.

    The function's ops are numbered once, in walk order, before the rewrite.
    After an op's rewrite, the new ops left in its place (between the op
    before it and the op that followed it) take its number and a rising
    second key, found by walking back from the follower to the first
    numbered op: O(new ops). An op neither numbered nor recorded (one a
    rewrite inserted elsewhere, like a copy before a loop body's yield) is
    ordered by xDSL's walk along the block, as before.
    """

    def __init__(self, ops: Sequence[Operation]) -> None:
        self.key: dict[Operation, tuple[int, ...]] = {op: (i, 1) for i, op in enumerate(ops)}
        self.inserted = 0

    def rewrote(self, op: Operation, block: Block, follower: Operation | None) -> None:
        """Number the ops ``op``'s rewrite left before ``follower`` in ``block``."""
        number = self.key[op][0]
        if follower is not None and follower.parent_block() is not block:
            follower = None
        current = follower.prev_op if follower is not None else block.last_op
        new: list[Operation] = []
        while current is not None and current not in self.key:
            new.append(current)
            current = current.prev_op
        for created in reversed(new):
            self.inserted += 1
            self.key[created] = (number, 0, self.inserted)

    def is_before(self, a: Operation, b: Operation) -> bool:
        """Is ``a`` before ``b`` (two ops of one block)?"""
        key_a, key_b = self.key.get(a), self.key.get(b)
        if key_a is None or key_b is None:
            return a.is_before_in_block(b)
        return key_a < key_b


class _ConstantNamer:
    """Deterministic, unique names ``__constant_<func>_<n>`` for constant globals.

    ``taken`` tells the symbols of the input (the pass's cached lookup): the
    names made here cannot clash with one another, across functions too, since
    ``<n>`` is a number and ``<func>`` is a whole symbol name.
    """

    def __init__(self, function: func.FuncOp, taken: Callable[[str], bool]) -> None:
        self.prefix = f"__constant_{function.sym_name.data}_"
        self.taken = taken
        self.counter = 0

    def next_name(self) -> str:
        while True:
            name = f"{self.prefix}{self.counter}"
            self.counter += 1
            if not self.taken(name):
                return name


class _ManifestAlloc(ValueSemanticProgram):
    """One run of the pass over a module: validate everything, then rewrite.

    A walk rather than RewritePatterns: whether a call's result takes an
    operand's storage in place depends on the storages earlier calls carved
    and on the operand's later uses, state a pattern would have to carry
    across matches in walk order.
    """

    def __init__(self, module: ModuleOp, inplace: bool = True, alignment: int = 64) -> None:
        super().__init__(module)
        self.inplace = inplace
        self.alignment = alignment
        # The storage behind each tensor (and view of one) this run carved:
        # what an in-place result may take over.
        self.storage_of: dict[SSAValue, AllocStorageOp] = {}
        self.aliases: dict[AllocStorageOp, list[SSAValue]] = {}
        # Results of calls in scf.for bodies that write into a carried buffer.
        self.destinations: dict[SSAValue, SSAValue] = {}
        # The first alias of each storage an in-place check must look at:
        # when a result takes a storage over, every earlier alias was dead
        # (that was the check), so an in-place chain stays O(1) per call.
        self.live_from: dict[AllocStorageOp, int] = {}
        # What may alias a storage's bytes: views, scf results and iteration
        # arguments, and (before their rewrite) calls of view kernels.
        self.order = _OpOrder([])
        self.alias_analysis = AliasAnalysis(
            self._kernel_call, lambda a, b: self.order.is_before(a, b)
        )

    def alignment_of(self, memref_type: MemRefType[Attribute]) -> int:
        """A new storage's alignment: the pass's, at least the element's bytes."""
        return max(self.alignment, element_byte_size(memref_type))

    def _kernel_call(self, op: Operation) -> UseKind | None:
        """A kernel call not rewritten yet: a view aliases, others read."""
        kernel = self.kernel_of(op) if isinstance(op, func.CallOp) else None
        if kernel is None:
            return None
        return UseKind.ALIAS if kernel.is_view else UseKind.PLAIN

    def rewrite(self) -> None:
        for function in self.functions:
            if not function.is_declaration:
                self._rewrite_body(function)
        for kernel in self.kernels.values():
            self._rewrite_kernel_declaration(kernel.decl)
        for shape_fn in self.shape_fns:
            if shape_fn.is_declaration:
                inputs = [memref_or_same(t) for t in shape_fn.function_type.inputs.data]
                shape_fn.function_type = FunctionType.from_lists(
                    inputs, shape_fn.function_type.outputs.data
                )

    def _rewrite_body(self, function: func.FuncOp) -> None:
        entry = function.body.blocks.first
        assert entry is not None
        for arg in entry.args:
            if isinstance(arg.type, TensorType):
                Rewriter.replace_value_with_new_type(arg, to_memref(arg.type))
        constants = _ConstantNamer(
            function, lambda name: self.symbols.lookup(function, SymbolRefAttr(name)) is not None
        )
        ops = list(function.body.walk())
        self.order = _OpOrder(ops)
        for op in ops:
            block, after = op.parent_block(), op.next_op
            self._rewrite_op(op, function, constants)
            if block is not None:
                self.order.rewrote(op, block, after)
        function.function_type = FunctionType.from_lists(
            entry.arg_types,
            [memref_or_same(t) for t in function.function_type.outputs.data],
        )

    def _rewrite_op(self, op: Operation, function: func.FuncOp, constants: _ConstantNamer) -> None:
        """Rewrite one op of the function body (walk order)."""
        if isinstance(op, func.CallOp):
            self._rewrite_call(op)
        elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType):
            self._rewrite_constant(op, function, constants)
        elif isinstance(op, tensor.DimOp):
            Rewriter.replace_op(op, memref.DimOp(op.source, op.index))
        elif isinstance(op, tensor.ExtractOp):
            # A scalar read (an ONNX If's condition): a load of the memref.
            Rewriter.replace_op(op, memref.LoadOp.get(op.tensor, op.indices))
        elif isinstance(op, bufferization.ToTensorOp):
            # A constant read from a global (memplan-import-onnx): its
            # memref is the tensor's memory already, never workspace.
            op.tensor.replace_all_uses_with(op.memref)
            Rewriter.erase_op(op)
        elif isinstance(op, tensor.FromElementsOp):
            self._rewrite_from_elements(op)
        elif isinstance(op, bufferization.MaterializeInDestinationOp):
            # A tensor written into memory outside the plan (a TFLite
            # variable): a copy from the tensor's storage, read there.
            Rewriter.replace_op(op, memref.CopyOp(op.source, op.dest))
        elif isinstance(op, scf.IfOp):
            for result in op.results:
                if isinstance(result.type, TensorType):
                    Rewriter.replace_value_with_new_type(result, to_memref(result.type))
        elif isinstance(op, scf.ForOp | scf.WhileOp):
            _CarriedTensors(self, op).rewrite()

    def _rewrite_call(self, call: func.CallOp) -> None:
        kernel = self.kernel_of(call)
        if kernel is None:
            # A scalar call or a shape-function call: operands were retyped
            # in place by the rewrites of their producers.
            return
        operands = list(call.arguments)
        if kernel.is_view:
            self._rewrite_view_call(call, kernel, operands)
            return
        device = device_of(call, "") or kernel.device
        # Before the shape function's call exists: it reads the operands too.
        shared = self._inplace_storages(call, kernel, operands, device)
        new_ops: list[Operation] = []
        dims: list[SSAValue] = []
        if kernel.shape_fn is not None:
            shape_call = func.CallOp(
                kernel.shape_fn.sym_name.data,
                operands,
                [IndexType()] * kernel.dynamic_dim_count,
            )
            new_ops.append(shape_call)
            dims = list(shape_call.results)
        outs: list[SSAValue] = []
        for index, (result, result_type) in enumerate(zip(call.results, kernel.results)):
            memref_type = to_memref(result_type)
            dynamic = sum(1 for d in result_type.get_shape() if d < 0)
            result_dims, dims = dims[:dynamic], dims[dynamic:]
            destination = self.destinations.pop(result, None)
            if destination is not None:
                # Yielded by an scf.for body: written straight into its carried buffer.
                outs.append(destination)
                continue
            if index in shared:
                operand, storage = shared[index]
                self.live_from[storage] = len(self.aliases[storage])
                tensor_op = AllocTensorOp(storage, 0, memref_type, result_dims)
                tensor_op.attributes[INPLACE_OF_ATTR] = i64_attr(operand)
                if result.name_hint:
                    tensor_op.tensor.name_hint = result.name_hint
                    _name_values(result.name_hint, result_type, result_dims, 0)
                self._carved(storage, tensor_op.tensor)
                new_ops.append(tensor_op)
                outs.append(tensor_op.tensor)
                continue
            size: int | SSAValue | None = static_byte_size(memref_type)
            if size is None:
                size_ops, size = _dynamic_byte_size(memref_type, result_dims)
                new_ops.extend(size_ops)
            storage, tensor_op = self._new_tensor(
                memref_type,
                result.name_hint,
                device=device,
                size=size,
                dims=result_dims,
                max_size=None
                if isinstance(size, int)
                else bound_bytes(call, index, memref_type.element_type),
            )
            if storage.max_size is not None:
                reserve = _reserve(call, index, element_byte_size(memref_type))
                if reserve is not None:
                    storage.attributes[RESERVE_ATTR] = StringAttr(reserve)
            if result.name_hint:
                _name_values(result.name_hint, result_type, result_dims, size)
            new_ops.extend((storage, tensor_op))
            outs.append(tensor_op.tensor)
        attributes = {
            k: v for k, v in call.attributes.items() if k not in (MAX_SHAPES_ATTR, DIM_EXPRS_ATTR)
        }
        invoke = InvokeOp(call.callee, operands, outs, attributes)
        new_ops.append(invoke)
        Rewriter.insert_op(new_ops, InsertPoint.before(call))
        for result, out in zip(call.results, outs):
            result.replace_all_uses_with(out)
        Rewriter.erase_op(call)

    def _new_tensor(
        self,
        memref_type: MemRefType[Attribute],
        name: str | None,
        *,
        storage_name: str | None = None,
        device: str | None = None,
        size: int | SSAValue | None = None,
        dims: Sequence[SSAValue] = (),
        max_size: int | None = None,
    ) -> tuple[AllocStorageOp, AllocTensorOp]:
        """A storage (``size`` bytes, by default ``memref_type``'s static size)
        holding one tensor of ``memref_type`` at offset 0, recorded as carved.

        The tensor is named ``name`` and the storage ``storage_name``, by
        default ``<name>_storage``.
        """
        if size is None:
            size = static_byte_size(memref_type)
            assert size is not None
        storage = AllocStorageOp(
            size, alignment=self.alignment_of(memref_type), device=device, max_size=max_size
        )
        tensor_op = AllocTensorOp(storage, 0, memref_type, dims)
        if name:
            storage.storage.name_hint = storage_name or f"{name}_storage"
            tensor_op.tensor.name_hint = name
        self._carved(storage, tensor_op.tensor)
        return storage, tensor_op

    def _rewrite_from_elements(self, op: tensor.FromElementsOp) -> None:
        """A tensor built from scalars (an ONNX Loop's iteration number): a
        storage of its own and one `memref.store` per element, in row-major order."""
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        memref_type = to_memref(result_type)
        storage, tensor_op = self._new_tensor(memref_type, op.result.name_hint)
        new_ops: list[Operation] = [storage, tensor_op]
        shape = memref_type.get_shape()
        constants: dict[int, SSAValue] = {}
        for flat, element in enumerate(op.elements):
            indices: list[SSAValue] = []
            for position in _row_major_index(flat, shape):
                if position not in constants:
                    constant = arith.ConstantOp.from_int_and_width(position, IndexType())
                    new_ops.append(constant)
                    constants[position] = constant.result
                indices.append(constants[position])
            new_ops.append(memref.StoreOp.get(element, tensor_op.tensor, indices))
        Rewriter.insert_op(new_ops, InsertPoint.before(op))
        op.result.replace_all_uses_with(tensor_op.tensor)
        Rewriter.erase_op(op)

    def _carved(self, storage: AllocStorageOp, value: SSAValue) -> None:
        self.storage_of[value] = storage
        self.aliases.setdefault(storage, []).append(value)

    def _inplace_storages(
        self, call: func.CallOp, kernel: Kernel, operands: list[SSAValue], device: str | None
    ) -> dict[int, tuple[int, AllocStorageOp]]:
        """result index -> (operand index, its storage) for the pairs of
        ``kernel.inplace`` that are legal at ``call``.

        Legal when the operand's storage was carved by this pass in the
        call's block (so not an argument, a constant or a loop-carried
        value), on the same device, and nothing that may alias it (its
        tensors, their views, `scf` results and iteration arguments they flow
        into: the one alias analysis, `passes.analysis.aliasing`) is used
        after the call or at an operand of the call the kernel does not
        declare shareable with that result: the call is its last reader and
        it does not escape (a return or yield would be a later use).
        """
        if not self.inplace or not kernel.inplace:
            return {}
        block = call.parent_block()
        shared: dict[int, tuple[int, AllocStorageOp]] = {}
        for result, operand in kernel.inplace:
            storage = self.storage_of.get(operands[operand])
            if (
                result in shared
                or storage is None
                or block is None
                or storage.parent_block() is not block
                or storage.device_name != (device or DEFAULT_DEVICE)
                or any(s is storage for _, s in shared.values())
                or self.alignment_of(to_memref(kernel.results[result])) > storage.alignment_value
            ):
                continue
            # Positions the kernel lets result `result` overwrite: every
            # operand holding an alias of the storage must be one of them.
            shareable = {o for r, o in kernel.inplace if r == result}
            needed = self.alias_analysis.needed_at_or_after(
                self.aliases[storage][self.live_from.get(storage, 0) :],
                call,
                allowed_at_op=lambda use, shareable=shareable: use.index in shareable,
            )
            if needed is None:
                shared[result] = (operand, storage)
        return shared

    def _rewrite_view_call(
        self, call: func.CallOp, kernel: Kernel, operands: list[SSAValue]
    ) -> None:
        source = next(value for value, type_ in zip(operands, kernel.inputs) if is_tensor(type_))
        result_type = to_memref(kernel.results[0])
        new_ops: list[Operation] = []
        sizes: list[SSAValue | int] = list(result_type.get_shape())
        if kernel.shape_fn is not None:
            shape_call = func.CallOp(
                kernel.shape_fn.sym_name.data, operands, [IndexType()] * kernel.dynamic_dim_count
            )
            new_ops.append(shape_call)
            dims = iter(shape_call.results)
            sizes = [next(dims) if isinstance(d, int) and d < 0 else d for d in sizes]
            if call.results[0].name_hint:
                _name_values(call.results[0].name_hint, kernel.results[0], shape_call.results, 0)
        # Identity layout: each stride is the product of the sizes after it.
        strides: list[SSAValue | int] = [1] if sizes else []
        for size in reversed(sizes[1:]):
            strides.insert(0, _index_product(strides[0], size, new_ops))
        cast = memref.ReinterpretCastOp.from_dynamic(source, [0], sizes, strides, result_type)
        new_ops.append(cast)
        cast.result.name_hint = call.results[0].name_hint
        storage = self.storage_of.get(source)
        if storage is not None:
            self._carved(storage, cast.result)
        Rewriter.insert_op(new_ops, InsertPoint.before(call))
        call.results[0].replace_all_uses_with(cast.result)
        Rewriter.erase_op(call)

    @staticmethod
    def _rewrite_constant(
        constant: arith.ConstantOp, function: func.FuncOp, names: _ConstantNamer
    ) -> None:
        tensor_type = constant.result.type
        assert isinstance(tensor_type, TensorType)
        memref_type = to_memref(tensor_type)
        alignment = (
            default_alignment(memref_type)
            if isinstance(memref_type.element_type, FixedBitwidthType)
            else None
        )
        name = names.next_name()
        global_op = memref.GlobalOp.get(
            StringAttr(name),
            memref_type,
            constant.value,
            constant=UnitAttr(),
            alignment=alignment,
        )
        Rewriter.insert_op(global_op, InsertPoint.before(function))
        get_global = memref.GetGlobalOp(name, memref_type)
        Rewriter.replace_op(constant, get_global)

    @staticmethod
    def _rewrite_kernel_declaration(decl: func.FuncOp) -> None:
        inputs = [memref_or_same(t) for t in decl.function_type.inputs.data]
        outs = [memref_or_same(t) for t in decl.function_type.outputs.data]
        decl.function_type = FunctionType.from_lists([*inputs, *outs], [])
        if decl.arg_attrs is not None or decl.res_attrs is not None:
            empty = DictionaryAttr({})
            arg_attrs = list(decl.arg_attrs.data) if decl.arg_attrs else [empty] * len(inputs)
            res_attrs = list(decl.res_attrs.data) if decl.res_attrs else [empty] * len(outs)
            decl.arg_attrs = ArrayAttr([*arg_attrs, *res_attrs])
            decl.res_attrs = None


class _CarriedTensors:
    """The tensors one `scf.for` or `scf.while` carries from an iteration to
    the next.

    Each gets storages allocated before the loop (see `ManifestAllocPass`):
    a first buffer holding the initial value, and a second one only when the
    body cannot write its new value over the previous one. With two, an
    extra iteration argument carries the second buffer and the yield swaps
    them, so no storage is allocated inside the loop for a carried value and
    one static place per storage is sound. An `scf.while`'s condition region
    forwards its arguments unchanged (value-semantic check), so its
    arguments and the body's are the same buffers; a spare is an extra
    argument of both, forwarded by the `scf.condition`.
    """

    def __init__(self, run: _ManifestAlloc, loop: scf.ForOp | scf.WhileOp) -> None:
        self.run = run
        self.loop = loop
        if isinstance(loop, scf.ForOp):
            self.body = loop.body.block
            self.head: Block | None = None
        else:
            self.body = loop.after_region.block
            self.head = loop.before_region.block

    @property
    def carried(self) -> Sequence[SSAValue]:
        """The body's arguments holding the carried values (after the
        induction variable of an `scf.for`)."""
        return self.body.args[1:] if self.head is None else self.body.args

    def rewrite(self) -> None:
        loop, body, run, head = self.loop, self.body, self.run, self.head
        terminator = body.last_op
        block = loop.parent_block()
        assert isinstance(terminator, scf.YieldOp) and block is not None
        for k, result in enumerate(loop.res):
            if isinstance(result.type, TensorType):
                Rewriter.replace_value_with_new_type(self.carried[k], to_memref(result.type))
                if head is not None:
                    Rewriter.replace_value_with_new_type(head.args[k], to_memref(result.type))
        before: list[Operation] = []
        inits = list(loop.iter_args if isinstance(loop, scf.ForOp) else loop.arguments)
        yielded: list[SSAValue] = list(terminator.arguments)
        spare_inits: list[SSAValue] = []
        swapped: list[SSAValue] = []
        taken: set[AllocStorageOp] = set()
        for k, result in enumerate(loop.res):
            if not isinstance(result.type, TensorType):
                continue
            memref_type = to_memref(result.type)
            carried = self.carried[k]
            name = result.name_hint or carried.name_hint or f"carried{k}"
            if not self._takes_over(inits[k], memref_type, taken):
                storage, first = run._new_tensor(
                    memref_type, f"{name}_buffer", storage_name=f"{name}_storage"
                )
                before.extend((storage, first, memref.CopyOp(inits[k], first.tensor)))
                inits[k] = first.tensor
            new = yielded[k]
            if new is carried:
                continue
            producer = self._producer(new)
            if producer is not None and self._last_read_before(carried, producer, new):
                # The new value is written over the old one: one buffer.
                run.destinations[new] = carried
                continue
            storage, second = run._new_tensor(memref_type, f"{name}_spare")
            before.extend((storage, second))
            spare_inits.append(second.tensor)
            spare = body.insert_arg(memref_type, len(body.args))
            spare.name_hint = f"{carried.name_hint or name}_spare"
            if head is not None:
                head.insert_arg(memref_type, len(head.args)).name_hint = spare.name_hint
            swapped.append(carried)
            if producer is not None:
                run.destinations[new] = spare
            else:
                Rewriter.insert_op(memref.CopyOp(new, spare), InsertPoint.before(terminator))
                yielded[k] = spare
        Rewriter.replace_op(terminator, scf.YieldOp(*yielded, *swapped))
        new_loop: scf.ForOp | scf.WhileOp
        if isinstance(loop, scf.ForOp):
            new_loop = scf.ForOp(
                loop.lb, loop.ub, loop.step, [*inits, *spare_inits], loop.detach_region(loop.body)
            )
        else:
            assert head is not None
            condition = head.last_op
            assert isinstance(condition, scf.ConditionOp)
            # It forwarded the head's arguments; now the spares too.
            Rewriter.replace_op(condition, scf.ConditionOp(condition.condition, *head.args))
            regions = (loop.before_region, loop.after_region)
            new_loop = scf.WhileOp(
                [*inits, *spare_inits],
                list(head.arg_types),
                *(loop.detach_region(region) for region in regions),
            )
        Rewriter.insert_op([*before, new_loop], InsertPoint.before(loop))
        for old, new_result in zip(loop.res, new_loop.res):
            new_result.name_hint = old.name_hint
            old.replace_all_uses_with(new_result)
        Rewriter.erase_op(loop)

    def _takes_over(
        self, init: SSAValue, memref_type: MemRefType[Attribute], taken: set[AllocStorageOp]
    ) -> bool:
        """May the loop carry ``init`` in its own storage (no copy)?

        Yes when this pass carved it in the loop's block, its storage holds
        exactly one value of ``memref_type``, and nothing that may alias that
        storage (its tensors, their views, `scf` results they were yielded
        into) is used after the loop or inside it.
        """
        storage = self.run.storage_of.get(init)
        block = self.loop.parent_block()
        if (
            storage is None
            or storage in taken
            or block is None
            or storage.parent_block() is not block
            or init.type != memref_type
            or storage.byte_size != static_byte_size(memref_type)
            or storage.alignment_value < self.run.alignment_of(memref_type)
        ):
            return False
        # The loop's initial values are read before it starts; anything else
        # that may alias the storage must be done with it by then.
        needed = self.run.alias_analysis.needed_at_or_after(
            self.run.aliases[storage], self.loop, allowed_at_op=lambda use: True
        )
        if needed is not None:
            return False
        taken.add(storage)
        return True

    def _producer(self, value: SSAValue) -> func.CallOp | None:
        """The kernel call in the body's block whose result ``value`` is, if it
        is one and no other carried tensor takes that result already."""
        call = value.owner
        if (
            not isinstance(call, func.CallOp)
            or call.parent_block() is not self.body
            or value in self.run.destinations
        ):
            return None
        kernel = self.run.kernel_of(call)
        return call if kernel is not None and not kernel.is_view else None

    def _last_read_before(self, carried: SSAValue, call: func.CallOp, new: SSAValue) -> bool:
        """Is every read of ``carried`` (and of anything that may alias it)
        before ``call``, or at ``call`` in an operand the kernel declares
        shareable with ``new`` (`memory.inplace`)?

        A value yielded out of the body counts as read after ``call``.
        """
        kernel = self.run.kernel_of(call)
        assert kernel is not None and isinstance(new, OpResult)
        shareable = (
            {o for r, o in kernel.inplace if r == new.index} if self.run.inplace else set[int]()
        )
        needed = self.run.alias_analysis.needed_at_or_after(
            (carried,), call, allowed_at_op=lambda use: use.index in shareable
        )
        return needed is None


@dataclass(frozen=True)
class ManifestAllocPass(ModulePass):
    """Make every tensor's memory explicit (TVM's ManifestAlloc).

    Value-semantic `func.call`s of kernel declarations on ranked tensors become
    explicit storages, tensors and destination-passing invokes of the `memory`
    dialect; the function boundary becomes memrefs.

    Input: `func.func` bodies calling kernel *declarations* (`func.func private
    @k(tensor<...>, i32, ...) -> tensor<...>` with no body). For each such call:

    - per result one `memory.alloc_storage` of `prod(shape) * ceil(bits / 8)`
      bytes aligned to `max(64, element bytes)` (TVM's rule, `memdialect/types`),
      on the kernel's device, plus one `memory.alloc_tensor %s[0]`;
    - one `memory.invoke @k ins(<operands>) outs(<new tensors>)` carrying the
      call's discardable attributes (`memory.device` included); scalar operands
      (integers, `index`, floats) pass through into `ins`.

    Kernel declaration attributes (discardable, on the `func.func`):

    - `memory.view` (unit): a reshape-like kernel. Its call becomes an alias of
      its one tensor operand, with no allocation and no invoke:
      `memref.reinterpret_cast %in to offset: [0], sizes: [...], strides: [...]`
      with the result's identity strides. Chosen over
      `memref.expand_shape`/`collapse_shape` (only valid for pure expansions or
      collapses) and `memref.reshape` (needs a shape memref operand): for an
      identity-layout source (offset 0, contiguous) the cast is valid upstream
      MLIR for every reshape. The element types must be equal, and with static
      shapes the element counts too; a dynamic result takes its dims from the
      kernel's `memory.shape_fn` (called on the operands), and its dynamic
      strides are `arith.muli` of the sizes after them. Other operands (e.g. a
      shape scalar) are ignored.
    - `memory.device = "npu"`: storages of the kernel's results are allocated
      `on "npu"`. A call-site `memory.device` attribute selects the device of
      that call; if both are present and differ, the pass fails.
    - `memory.shape_fn = @f`: the kernel's shape function, needed when a result
      has dynamic dims. `@f` takes the kernel's operands (tensors as memrefs, or
      as tensors in the input, which this pass turns into memrefs) and returns
      one `index` per dynamic dim of the results, in result order then dim
      order. The pass calls it with `func.call` on the memref operands, sizes
      the storage `!memory.storage<?>` with `arith.muli` of the dims and the
      static factor (static dims * element bytes), and carves the tensor with
      `memory.alloc_tensor %s[0](%d0, ...)`. `@f` may be a declaration or have a
      body; in a body, `tensor.dim` on its arguments becomes `memref.dim`.
    - `memory.max_shapes = [array<i64: ...>, ...]` on a call: an upper-bound
      shape per result (static dims as typed). A dynamic result's storage gets
      `max` = the bound's bytes, so `usmp` can pin it at a static offset.
    - `memory.dim_exprs = [["N", "16"], ...]` on a call: each result's dims
      as size expressions of the function's ranged dims (`memory.dim_ranges`).
      A dynamic result's storage with `max` also gets `memory.reserve`, its
      bytes as a size expression (element bytes times the dims: the quantity
      of its size operand), which `usmp{parametric=true}` plans with.

    Function boundary: tensor arguments become memref arguments and tensor
    results memref results. Results are allocated inside the function and never
    killed: they escape to the caller. `arith.constant` dense tensors become a
    module-level `memref.global "private" constant @__constant_<func>_<n>`
    (aligned by the same rule, `<n>` counting per function from 0 and skipping
    names already taken) read with `memref.get_global`: constants never take
    workspace. A `bufferization.to_tensor` of a `memref.get_global` (how
    `memplan-import-onnx` reads its weights) is dropped and its uses read the
    global's memref directly; `to_tensor` of anything else is rejected.
    A mutable global (no `constant`: a TFLite resource variable) is memory
    outside the plan: a kernel reads it through a memref operand (kept in
    the invoke's `ins`), `bufferization.materialize_in_destination %t in
    %global` writes a tensor into it and becomes `memref.copy %t, %global`
    (so %t's storage lives until the copy), and a `to_tensor` of it is
    rejected (the tensor would change under a write). `schedule` moves no
    call across such a write.
    `tensor.extract` (a scalar read, e.g. an ONNX `If`'s condition) becomes
    `memref.load` with the same indices; `tensor.from_elements` (e.g. an ONNX
    `Loop`'s iteration number) becomes a storage of its own filled by one
    `memref.store` per element.

    Kernel declarations are rewritten to the destination-passing signature
    `(ins..., outs...) -> ()` on memrefs (result attributes become the trailing
    argument attributes), so that `lower-to-memref` can turn each
    `memory.invoke @k ins(a) outs(b)` into `func.call @k(a, b)`. Shape-function
    declarations keep their `index` results; only their tensor arguments become
    memrefs. A declaration is a kernel when its signature mentions a tensor and
    no kernel names it as `memory.shape_fn`; declarations without tensors are
    left alone, as are calls whose operands and results hold no tensor (scalar
    helpers, or IR this pass already produced: the pass is idempotent).

    Control flow: calls nested in `scf.if`/`scf.for`/... regions are rewritten
    in place (their storages live in that region). `scf.if` results of tensor
    type become memref results: each branch yields its own storage's tensor,
    which then escapes its region.

    Tensors carried by an `scf.for` or an `scf.while` (iteration arguments,
    which must have static shapes) live in storages allocated before the loop,
    because a
    storage allocated in the body and yielded would need two instances alive
    at once (the next iteration's and the one it reads), which one static
    place cannot hold. Per carried tensor (iteration argument `%old`, yielded
    `%new`):

    - a first buffer holds the initial value: the initial tensor's own
      storage when this pass carved it in the loop's block, it holds exactly
      that tensor and the loop is the last use of anything that may alias it
      (an `scf.if` result it was yielded into included); otherwise a new storage
      (`%<result>_storage`, tensor `%<result>_buffer`) that the initial value
      is copied into with `memref.copy` before the loop;
    - `%new` is `%old`: nothing more;
    - `%new` is a result of a kernel call in the body's block (not a view),
      and every read of `%old` and of anything that may alias it is before
      that call, or at it in an operand `memory.inplace` declares shareable
      with `%new`: the call
      writes `%new` over `%old` (one buffer);
    - otherwise a second buffer (`%<result>_spare`) is allocated before the
      loop and carried as an extra iteration argument appended after the
      others; the call writes `%new` there (or, when no kernel call of the
      body computes `%new` — a view, an `scf.if` result, another carried or
      an outer value — `%new` is copied there right before the yield), and
      the yield gives the second buffer as the new value and the first as
      the next spare: double buffering, no copy per iteration.

    The extra results of the loop (the spares) are unused. An `scf.while`
    carrying tensors must have a condition region that only decides: its
    `scf.condition` forwards that region's arguments unchanged and in order
    (as ONNX's `Loop` and TFLite's `WHILE` import), so the two regions'
    arguments are one set of buffers; a spare is then an extra argument of
    both, forwarded by the `scf.condition`. Any other `scf.condition` of a
    loop carrying tensors, and tensors passed through `cf` branches to block
    arguments, are rejected.

    The pass fails with a diagnostic naming the call, the value and the type
    for: a call to an unknown symbol; a call with tensors to a function with a
    body ("call to @f: not a kernel declaration" — calls between functions are
    not supported because a callee's escaping results would be planned in the
    callee's pools while the caller's buffers sit there too; inline first); an
    unranked tensor; a tensor with an encoding; a result element type without a
    fixed bit width (`index`); an operand or result that is neither a ranked
    tensor nor a scalar; a zero-byte result; a dynamic result without
    `memory.shape_fn`, or a shape function whose signature does not fit;
    conflicting devices; an invalid view kernel; a non-`dense` tensor constant;
    a tensor carried by an `scf.for`/`scf.while` with a dynamic shape; and any other op that produces or consumes a tensor. All checks run before
    the first rewrite, so the diagnostic shows the input IR.

    In place: a kernel declaration may carry `memory.inplace = array<i64: r,
    o, ...>`, (result, operand) index pairs meaning the kernel is correct when
    result `r` occupies exactly the bytes of tensor operand `o` (an
    element-wise op reading each element before writing it). The pair is
    checked (indices in range, the result no larger than the operand, not on
    a view kernel); a pair with a dynamic result must have one type, and
    then the kernel promises the result's run-time shape is the operand's
    (the result is carved with the shape function's dims). A result may
    list several operands (it may take any one's bytes; each operand is in
    one pair). At a call, result `r` is carved at offset 0 of operand `o`'s
    storage, with no storage of its own and `memory.inplace_of = o` on its
    `memory.alloc_tensor`, when that storage was allocated by this pass in
    the call's block on the same device, nothing that may alias it (its
    tensors, their views, `scf.if`/`scf.for` results and iteration arguments
    they flow into: `passes.analysis.aliasing`) is used after the call (so
    the operand is not an argument, a constant, a value returned or yielded,
    or read later), and every operand of the call holding such a value is
    declared shareable with `r` (`@mix(%a, %a)` with only the pair `(0, 1)`
    is not shared: docs/dialect.md). Sharing never raises the peak of live
    bytes, so it is on by default.

    Options:

    - `inplace` (bool, default true): share in place where legal; false gives
      every result its own storage.
    - `alignment` (integer, default 64, a power of two): the storages'
      alignment, at least the element's bytes (TVM's rule at 64; TFLM's
      arena aligns its buffers to 16).
    """

    name = "manifest-alloc"

    inplace: bool = True
    alignment: int = 64

    def __post_init__(self) -> None:
        check_options(self)
        if self.alignment < 1 or self.alignment & (self.alignment - 1):
            raise ValueError(
                f"manifest-alloc: alignment must be a power of two (got {self.alignment})"
            )

    """Let results of `memory.inplace` kernels take their operand's storage
    when it dies at the call (false: one storage per result, for comparison)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run = _ManifestAlloc(op, self.inplace, self.alignment)
        run.collect()
        run.rewrite()
