"""The `manifest-alloc` pass (TVM ManifestAlloc); see `ManifestAllocPass`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, scf, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FixedBitwidthType,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    UnrankedTensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException
from xdsl.utils.hints import isa

from memplan.dialect.diagnostics import at_op
from memplan.dialect.ops import (
    DEFAULT_DEVICE,
    DEVICE_ATTR,
    INPLACE_ATTR,
    INPLACE_OF_ATTR,
    LOOP_OPS,
    SHAPE_FN_ATTR,
    VIEW_ATTR,
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    describe,
)
from memplan.dialect.types import default_alignment, element_byte_size, static_byte_size


def _fail(op: Operation, message: str) -> NoReturn:
    """Raise a PassFailedException carrying ``message``, annotated at ``op``."""
    # The op for memplan's diagnostics; emit_error adds the module with the
    # op marked (shown with --debug).
    op.emit_error(message, at_op(PassFailedException(message), op))


def _is_tensor(type_: Attribute) -> bool:
    return isinstance(type_, TensorType | UnrankedTensorType)


def _is_scalar(type_: Attribute) -> bool:
    return isinstance(type_, IntegerType | IndexType) or isa(type_, AnyFloat)


def _has_tensor(types: Iterable[Attribute]) -> bool:
    return any(_is_tensor(t) for t in types)


def to_memref(type_: TensorType[Attribute]) -> MemRefType[Attribute]:
    """The identity-layout memref holding a tensor of type ``type_``."""
    return MemRefType(type_.element_type, type_.get_shape())


def _convert(type_: Attribute) -> Attribute:
    """``type_`` with a ranked tensor replaced by its memref; others unchanged."""
    return to_memref(type_) if isa(type_, TensorType[Attribute]) else type_


def _check_ranked(op: Operation, where: str, type_: Attribute) -> TensorType[Attribute]:
    """``type_`` as a ranked tensor without encoding, or a diagnostic at ``op``."""
    if isinstance(type_, UnrankedTensorType):
        _fail(
            op,
            f"{where} has unranked tensor type {type_}: manifest-alloc needs ranked "
            "tensors to size their storage",
        )
    assert isa(type_, TensorType[Attribute])
    if not isinstance(type_.encoding, NoneAttr):
        _fail(op, f"{where} has type {type_}: tensor encodings are not supported")
    return type_


def _check_fixed_width(op: Operation, where: str, type_: TensorType[Attribute]) -> None:
    """A diagnostic at ``op`` unless ``type_``'s elements have a byte size."""
    element = type_.element_type
    if not isinstance(element, FixedBitwidthType):
        _fail(
            op,
            f"{where} has type {type_}: element type {element} has no fixed bit "
            "width, so its byte size is unknown",
        )


@dataclass(frozen=True)
class Kernel:
    """A validated kernel declaration and what its calls turn into."""

    decl: func.FuncOp
    inputs: tuple[Attribute, ...]
    """Operand types of the original declaration (tensors and scalars)."""
    results: tuple[TensorType[Attribute], ...]
    device: str | None
    is_view: bool
    shape_fn: func.FuncOp | None
    inplace: tuple[tuple[int, int], ...] = ()
    """(result, operand) pairs of ``memory.inplace``."""

    @property
    def name(self) -> str:
        return self.decl.sym_name.data

    @property
    def dynamic_dim_count(self) -> int:
        return sum(1 for r in self.results for d in r.get_shape() if d < 0)


def _device_of(op: Operation, where: str) -> str | None:
    device = op.attributes.get(DEVICE_ATTR)
    if device is None:
        return None
    if not isinstance(device, StringAttr):
        _fail(op, f'{where}: {DEVICE_ATTR} must be a string like "npu", got {device}')
    return device.data


class _ManifestAlloc:
    """One run of the pass over a module: validate everything, then rewrite."""

    def __init__(self, module: ModuleOp, inplace: bool = True) -> None:
        self.inplace = inplace
        # The storage behind each tensor (and view of one) this run carved:
        # what an in-place result may take over.
        self.storage_of: dict[SSAValue, AllocStorageOp] = {}
        self.aliases: dict[AllocStorageOp, list[SSAValue]] = {}
        self.functions = [op for op in module.walk() if isinstance(op, func.FuncOp)]
        self.kernels: dict[func.FuncOp, Kernel] = {}
        self.shape_fns: list[func.FuncOp] = []
        self._symbols: dict[Operation, dict[str, Operation]] = {}

    def _lookup(self, op: Operation, ref: SymbolRefAttr) -> Operation | None:
        """``SymbolTable.lookup_symbol`` with one name map per symbol table.

        xDSL's lookup scans the table's ops on every call, which made the pass
        quadratic on imported models (thousands of calls, globals and kernel
        declarations); the symbols looked up here (kernels, shape functions)
        exist before the pass and are never renamed by it.
        """
        table = op.parent_op()
        while table is not None and not table.has_trait(SymbolTable):
            table = table.parent_op()
        if table is None or ref.nested_references.data:
            return SymbolTable.lookup_symbol(op, ref)
        symbols = self._symbols.get(table)
        if symbols is None:
            symbols = {}
            for region in table.regions:
                for block in region.blocks:
                    for child in block.ops:
                        name = child.get_attr_or_prop("sym_name")
                        if isinstance(name, StringAttr):
                            symbols.setdefault(name.data, child)
            self._symbols[table] = symbols
        return symbols.get(ref.root_reference.data)

    # -- validation --------------------------------------------------------

    def collect(self) -> None:
        declarations = [f for f in self.functions if f.is_declaration]
        for decl in declarations:
            ref = decl.attributes.get(SHAPE_FN_ATTR)
            if ref is None or not _has_tensor(self._signature(decl)):
                continue
            shape_fn = self._resolve_shape_fn(decl, ref)
            if shape_fn not in self.shape_fns:
                self.shape_fns.append(shape_fn)
        for decl in declarations:
            if decl in self.shape_fns or not _has_tensor(self._signature(decl)):
                continue
            self.kernels[decl] = self._check_kernel(decl)
        for function in self.functions:
            if not function.is_declaration:
                self._check_body(function)

    @staticmethod
    def _signature(function: func.FuncOp) -> tuple[Attribute, ...]:
        return (*function.function_type.inputs.data, *function.function_type.outputs.data)

    def _resolve_shape_fn(self, decl: func.FuncOp, ref: Attribute) -> func.FuncOp:
        name = f"@{decl.sym_name.data}"
        if not isinstance(ref, SymbolRefAttr):
            _fail(decl, f"{name}: {SHAPE_FN_ATTR} must be a symbol like @f, got {ref}")
        found = self._lookup(decl, ref)
        if not isinstance(found, func.FuncOp):
            what = "no such symbol" if found is None else f"it is a {found.name}"
            _fail(decl, f"{name}: shape function {ref} is not a func.func ({what})")
        outputs = found.function_type.outputs.data
        if not all(isinstance(t, IndexType) for t in outputs):
            _fail(
                decl,
                f"{name}: shape function {ref} must return index values only, got "
                f"({', '.join(map(str, outputs))})",
            )
        for index, type_ in enumerate(found.function_type.inputs.data):
            if _is_tensor(type_):
                _check_ranked(found, f"shape function {ref}: operand #{index}", type_)
        return found

    def _check_kernel(self, decl: func.FuncOp) -> Kernel:
        name = f"@{decl.sym_name.data}"
        inputs = decl.function_type.inputs.data
        for index, type_ in enumerate(inputs):
            where = f"kernel {name}: operand #{index}"
            if _is_tensor(type_):
                _check_ranked(decl, where, type_)
            elif not _is_scalar(type_):
                _fail(
                    decl,
                    f"{where} has type {type_}, which is neither a ranked tensor nor a "
                    "scalar (integer, index, float)",
                )
        results: list[TensorType[Attribute]] = []
        for index, type_ in enumerate(decl.function_type.outputs.data):
            where = f"kernel {name}: result #{index}"
            if not _is_tensor(type_):
                _fail(
                    decl,
                    f"{where} has type {type_}: kernel results must be ranked tensors "
                    "(a destination-passing kernel cannot return a scalar)",
                )
            result = _check_ranked(decl, where, type_)
            _check_fixed_width(decl, where, result)
            if static_byte_size(to_memref(result)) == 0:
                _fail(decl, f"{where} has type {result}: a storage of 0 bytes")
            results.append(result)

        view = decl.attributes.get(VIEW_ATTR)
        if view is not None and not isinstance(view, UnitAttr):
            _fail(decl, f"{name}: {VIEW_ATTR} is a unit attribute, got {view}")
        kernel = Kernel(
            decl=decl,
            inputs=inputs,
            results=tuple(results),
            device=_device_of(decl, f"kernel {name}"),
            is_view=view is not None,
            shape_fn=None,
            inplace=self._check_inplace(decl, inputs, results, view is not None),
        )
        if kernel.is_view:
            self._check_view(kernel)
            return kernel
        if kernel.dynamic_dim_count == 0:
            return kernel
        ref = decl.attributes.get(SHAPE_FN_ATTR)
        if ref is None:
            index, dynamic = next((i, r) for i, r in enumerate(results) if not r.has_static_shape())
            _fail(
                decl,
                f"kernel {name}: result #{index} of type {dynamic} has dynamic dims but "
                f"{name} has no {SHAPE_FN_ATTR}",
            )
        shape_fn = self._resolve_shape_fn(decl, ref)
        self._check_shape_fn(kernel, shape_fn)
        return replace(kernel, shape_fn=shape_fn)

    @staticmethod
    def _check_inplace(
        decl: func.FuncOp,
        inputs: Sequence[Attribute],
        results: Sequence[TensorType[Attribute]],
        is_view: bool,
    ) -> tuple[tuple[int, int], ...]:
        """The (result, operand) pairs of ``memory.inplace``, checked."""
        name = f"kernel @{decl.sym_name.data}"
        attr = decl.attributes.get(INPLACE_ATTR)
        if attr is None:
            return ()
        if not isa(attr, DenseArrayBase[IntegerType]) or len(attr) % 2:
            _fail(
                decl,
                f"{name}: {INPLACE_ATTR} must be array<i64: result, operand, ...> "
                f"(index pairs), got {attr}",
            )
        values = [int(v) for v in attr.get_values()]
        if is_view:
            _fail(decl, f"{name}: a {VIEW_ATTR} kernel allocates nothing to share in place")
        pairs: list[tuple[int, int]] = []
        for result, operand in zip(values[::2], values[1::2]):
            where = f"{name}: {INPLACE_ATTR} pair ({result}, {operand})"
            if not 0 <= result < len(results):
                _fail(decl, f"{where}: result {result} out of range ({len(results)} results)")
            if not 0 <= operand < len(inputs) or not _is_tensor(inputs[operand]):
                _fail(decl, f"{where}: operand {operand} is not a tensor operand of {name}")
            out_bytes = static_byte_size(to_memref(results[result]))
            in_bytes = static_byte_size(to_memref(_check_ranked(decl, where, inputs[operand])))
            if out_bytes is None or in_bytes is None or out_bytes > in_bytes:
                _fail(
                    decl,
                    f"{where}: result {results[result]} ({out_bytes} bytes) does not fit in "
                    f"operand {inputs[operand]} ({in_bytes} bytes)",
                )
            if any(result == r or operand == o for r, o in pairs):
                _fail(decl, f"{where}: each result and operand may appear in one pair")
            pairs.append((result, operand))
        return tuple(pairs)

    def _check_view(self, kernel: Kernel) -> None:
        name = f"view kernel @{kernel.name}"
        tensors = [t for t in kernel.inputs if _is_tensor(t)]
        if len(tensors) != 1 or len(kernel.results) != 1:
            _fail(
                kernel.decl,
                f"{name} must take exactly one tensor and return one tensor, got "
                f"{len(tensors)} tensor operands and {len(kernel.results)} results",
            )
        source = tensors[0]
        assert isa(source, TensorType[Attribute])
        result = kernel.results[0]
        if not source.has_static_shape() or not result.has_static_shape():
            _fail(kernel.decl, f"{name}: {source} -> {result} needs static shapes")
        if source.element_type != result.element_type:
            _fail(
                kernel.decl,
                f"{name}: element type {source.element_type} of {source} differs from "
                f"{result.element_type} of {result}",
            )
        source_count = math.prod(source.get_shape())
        result_count = math.prod(result.get_shape())
        if source_count != result_count:
            _fail(
                kernel.decl,
                f"{name}: {source} has {source_count} elements but {result} has {result_count}",
            )

    def _check_shape_fn(self, kernel: Kernel, shape_fn: func.FuncOp) -> None:
        name = f"shape function @{shape_fn.sym_name.data} of kernel @{kernel.name}"
        expected = [_convert(t) for t in kernel.inputs]
        actual = [_convert(t) for t in shape_fn.function_type.inputs.data]
        if expected != actual:
            _fail(
                kernel.decl,
                f"{name} takes ({', '.join(map(str, actual))}) but the kernel's operands "
                f"are ({', '.join(map(str, expected))})",
            )
        outputs = shape_fn.function_type.outputs.data
        count = kernel.dynamic_dim_count
        if len(outputs) != count or any(not isinstance(t, IndexType) for t in outputs):
            _fail(
                kernel.decl,
                f"{name} must return {count} index values (one per dynamic dim of the "
                f"results), got ({', '.join(map(str, outputs))})",
            )

    def _check_body(self, function: func.FuncOp) -> None:
        name = f"@{function.sym_name.data}"
        entry = function.body.blocks.first
        assert entry is not None
        for arg in entry.args:
            if _is_tensor(arg.type):
                _check_ranked(function, f"function {name}: argument #{arg.index}", arg.type)
        for index, type_ in enumerate(function.function_type.outputs.data):
            if _is_tensor(type_):
                _check_ranked(function, f"function {name}: result #{index}", type_)
        for block in function.body.blocks:
            if block is not entry:
                self._check_block_args(function, block)
        for op in function.body.walk():
            self._check_op(op)

    def _check_block_args(self, owner: Operation, block: Block) -> None:
        for arg in block.args:
            if _is_tensor(arg.type):
                _fail(
                    owner,
                    f"{owner.name}: block argument #{arg.index} has tensor type "
                    f"{arg.type}: tensors flowing into block arguments (loop-carried or "
                    "through branches) are not supported",
                )

    def _check_op(self, op: Operation) -> None:
        if isinstance(op, func.CallOp):
            self._check_call(op)
        elif isinstance(op, arith.ConstantOp) and _is_tensor(op.result.type):
            if not isinstance(op.value, DenseIntOrFPElementsAttr):
                _fail(
                    op,
                    f"constant {describe(op.result)} of type {op.result.type}: only "
                    "dense<...> tensor constants are supported",
                )
            _check_ranked(op, f"constant {describe(op.result)}", op.result.type)
        elif isinstance(op, tensor.DimOp):
            _check_ranked(op, f"tensor.dim operand {describe(op.source)}", op.source.type)
        elif isinstance(op, bufferization.ToTensorOp):
            if not isinstance(op.memref.owner, memref.GetGlobalOp):
                _fail(
                    op,
                    f"bufferization.to_tensor {describe(op.tensor)}: only tensors of a "
                    "memref.get_global (an imported constant) are supported",
                )
        elif isinstance(op, scf.IfOp):
            for result in op.results:
                if _is_tensor(result.type):
                    _check_ranked(op, f"scf.if result {describe(result)}", result.type)
        elif isinstance(op, func.ReturnOp) or (
            isinstance(op, scf.YieldOp) and isinstance(op.parent_op(), scf.IfOp)
        ):
            return
        else:
            self._reject_tensors(op)

    def _reject_tensors(self, op: Operation) -> None:
        for index, operand in enumerate(op.operands):
            if _is_tensor(operand.type):
                self._reject(op, f"operand #{index} ({describe(operand)})", operand.type)
        for result in op.results:
            if _is_tensor(result.type):
                self._reject(op, f"result {describe(result)}", result.type)
        for region in op.regions:
            for block in region.blocks:
                self._check_block_args(op, block)

    @staticmethod
    def _reject(op: Operation, what: str, type_: Attribute) -> NoReturn:
        if op.name in LOOP_OPS:
            _fail(
                op,
                f"{op.name} carries tensor {what} of type {type_} across iterations: "
                "not supported (one static storage cannot hold a value alive in two "
                "iterations)",
            )
        _fail(
            op,
            f"{op.name}: {what} has tensor type {type_}; manifest-alloc handles "
            "tensors only in func.call of kernel declarations, arith.constant, "
            "tensor.dim, scf.if, scf.yield and func.return",
        )

    def _check_call(self, call: func.CallOp) -> None:
        callee_name = f"@{call.callee.string_value()}"
        where = f"call to {callee_name}"
        callee = self._lookup(call, call.callee)
        if callee is None:
            _fail(call, f"{where}: unknown callee (no such symbol)")
        if not isinstance(callee, func.FuncOp):
            _fail(call, f"{where}: callee is a {callee.name}, not a func.func")
        types = (*call.arguments.types, *call.result_types)
        if not _has_tensor(types) or callee in self.shape_fns:
            return
        if not callee.is_declaration:
            _fail(
                call,
                f"{where}: not a kernel declaration (it has a body); manifest-alloc "
                f"rewrites calls of bodiless kernel declarations only, inline "
                f"{callee_name} first",
            )
        kernel = self.kernels.get(callee)
        if (
            kernel is None
            or tuple(call.arguments.types) != kernel.inputs
            or tuple(call.result_types) != kernel.results
        ):
            call_type = FunctionType.from_lists(call.arguments.types, call.result_types)
            _fail(
                call,
                f"{where}: call type {call_type} does not match {callee_name}'s "
                f"{callee.function_type}",
            )
        call_device = _device_of(call, where)
        if call_device is not None and kernel.device is not None and call_device != kernel.device:
            _fail(
                call,
                f'{where}: call-site {DEVICE_ATTR} "{call_device}" conflicts with '
                f'"{kernel.device}" on the declaration of {callee_name}',
            )

    # -- rewriting ---------------------------------------------------------

    def rewrite(self) -> None:
        for function in self.functions:
            if not function.is_declaration:
                self._rewrite_body(function)
        for kernel in self.kernels.values():
            self._rewrite_kernel_declaration(kernel.decl)
        for shape_fn in self.shape_fns:
            if shape_fn.is_declaration:
                inputs = [_convert(t) for t in shape_fn.function_type.inputs.data]
                shape_fn.function_type = FunctionType.from_lists(
                    inputs, shape_fn.function_type.outputs.data
                )

    def _rewrite_body(self, function: func.FuncOp) -> None:
        entry = function.body.blocks.first
        assert entry is not None
        for arg in entry.args:
            if isa(arg.type, TensorType[Attribute]):
                Rewriter.replace_value_with_new_type(arg, to_memref(arg.type))
        constants = _ConstantNamer(
            function, lambda name: self._lookup(function, SymbolRefAttr(name)) is not None
        )
        for op in list(function.body.walk()):
            if isinstance(op, func.CallOp):
                self._rewrite_call(op)
            elif isinstance(op, arith.ConstantOp) and isa(op.result.type, TensorType[Attribute]):
                self._rewrite_constant(op, function, constants)
            elif isinstance(op, tensor.DimOp):
                dim = memref.DimOp(op.source, op.index)
                Rewriter.replace_op(op, dim)
            elif isinstance(op, bufferization.ToTensorOp):
                # A constant read from a global (memplan-import-onnx): its
                # memref is the tensor's memory already, never workspace.
                op.tensor.replace_all_uses_with(op.memref)
                Rewriter.erase_op(op)
            elif isinstance(op, scf.IfOp):
                for result in op.results:
                    if isa(result.type, TensorType[Attribute]):
                        Rewriter.replace_value_with_new_type(result, to_memref(result.type))
        function.function_type = FunctionType.from_lists(
            entry.arg_types,
            [_convert(t) for t in function.function_type.outputs.data],
        )

    def _rewrite_call(self, call: func.CallOp) -> None:
        callee = self._lookup(call, call.callee)
        kernel = self.kernels.get(callee) if isinstance(callee, func.FuncOp) else None
        if kernel is None:
            # A scalar call or a shape-function call: operands were retyped
            # in place by the rewrites of their producers.
            return
        operands = list(call.arguments)
        if kernel.is_view:
            self._rewrite_view_call(call, kernel, operands)
            return
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
        device = _device_of(call, "") or kernel.device
        shared = self._inplace_storages(call, kernel, operands, device)
        outs: list[SSAValue] = []
        for index, (result, result_type) in enumerate(zip(call.results, kernel.results)):
            memref_type = to_memref(result_type)
            if index in shared:
                operand, storage = shared[index]
                tensor_op = AllocTensorOp(storage, 0, memref_type, [])
                tensor_op.attributes[INPLACE_OF_ATTR] = IntegerAttr(operand, 64)
                if result.name_hint:
                    tensor_op.tensor.name_hint = result.name_hint
                self._carved(storage, tensor_op.tensor)
                new_ops.append(tensor_op)
                outs.append(tensor_op.tensor)
                continue
            dynamic = sum(1 for d in result_type.get_shape() if d < 0)
            result_dims, dims = dims[:dynamic], dims[dynamic:]
            size: int | SSAValue | None = static_byte_size(memref_type)
            if size is None:
                size_ops, size = _dynamic_byte_size(memref_type, result_dims)
                new_ops.extend(size_ops)
            storage = AllocStorageOp(size, alignment=default_alignment(memref_type), device=device)
            tensor_op = AllocTensorOp(storage, 0, memref_type, result_dims)
            if result.name_hint:
                _name_values(result.name_hint, result_type, result_dims, size)
                storage.storage.name_hint = f"{result.name_hint}_storage"
                tensor_op.tensor.name_hint = result.name_hint
            new_ops.extend((storage, tensor_op))
            self._carved(storage, tensor_op.tensor)
            outs.append(tensor_op.tensor)
        invoke = InvokeOp(call.callee, operands, outs, dict(call.attributes))
        new_ops.append(invoke)
        Rewriter.insert_op(new_ops, InsertPoint.before(call))
        for result, out in zip(call.results, outs):
            result.replace_all_uses_with(out)
        Rewriter.erase_op(call)

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
        value), on the same device, and no alias of it (its tensors and
        their views) is used after the call: the call is its last reader
        and it does not escape (a return or yield would be a later use).
        """
        if not self.inplace or not kernel.inplace:
            return {}
        block = call.parent_block()
        shared: dict[int, tuple[int, AllocStorageOp]] = {}
        for result, operand in kernel.inplace:
            storage = self.storage_of.get(operands[operand])
            if (
                storage is None
                or block is None
                or storage.parent_block() is not block
                or storage.byte_size is None
                or storage.device_name != (device or DEFAULT_DEVICE)
                or any(s is storage for _, s in shared.values())
                or default_alignment(to_memref(kernel.results[result])) > storage.alignment_value
            ):
                continue
            if all(
                self._used_before(use.operation, call, block)
                for alias in self.aliases[storage]
                for use in alias.uses
            ):
                shared[result] = (operand, storage)
        return shared

    @staticmethod
    def _used_before(user: Operation, call: Operation, block: Block) -> bool:
        """Is ``user`` the call, or (inside) an op before it in ``block``?"""
        if user is call:
            return True
        ancestor: Operation | None = user
        while ancestor is not None and ancestor.parent_block() is not block:
            ancestor = ancestor.parent_op()
        return ancestor is not None and ancestor.is_before_in_block(call)

    def _rewrite_view_call(
        self, call: func.CallOp, kernel: Kernel, operands: list[SSAValue]
    ) -> None:
        source = next(value for value, type_ in zip(operands, kernel.inputs) if _is_tensor(type_))
        result_type = to_memref(kernel.results[0])
        strides = result_type.get_strides()
        assert strides is not None  # identity layout: every stride is static
        static_strides = [stride for stride in strides if stride is not None]
        cast = memref.ReinterpretCastOp.from_dynamic(
            source, [0], result_type.get_shape(), static_strides, result_type
        )
        cast.result.name_hint = call.results[0].name_hint
        storage = self.storage_of.get(source)
        if storage is not None:
            self._carved(storage, cast.result)
        Rewriter.insert_op(cast, InsertPoint.before(call))
        call.results[0].replace_all_uses_with(cast.result)
        Rewriter.erase_op(call)

    @staticmethod
    def _rewrite_constant(
        constant: arith.ConstantOp, function: func.FuncOp, names: _ConstantNamer
    ) -> None:
        tensor_type = constant.result.type
        assert isa(tensor_type, TensorType[Attribute])
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
        inputs = [_convert(t) for t in decl.function_type.inputs.data]
        outs = [_convert(t) for t in decl.function_type.outputs.data]
        decl.function_type = FunctionType.from_lists([*inputs, *outs], [])
        if decl.arg_attrs is not None or decl.res_attrs is not None:
            empty = DictionaryAttr({})
            arg_attrs = list(decl.arg_attrs.data) if decl.arg_attrs else [empty] * len(inputs)
            res_attrs = list(decl.res_attrs.data) if decl.res_attrs else [empty] * len(outs)
            decl.arg_attrs = ArrayAttr([*arg_attrs, *res_attrs])
            decl.res_attrs = None


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
    size: SSAValue = dims[0]
    for dim in dims[1:]:
        product = arith.MuliOp(size, dim)
        ops.append(product)
        size = product.result
    if factor != 1:
        constant = arith.ConstantOp.from_int_and_width(factor, IndexType())
        product = arith.MuliOp(size, constant.result)
        ops.extend((constant, product))
        size = product.result
    return ops, size


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
      MLIR for every reshape. Both shapes must be static, the element types equal
      and the element counts equal; other operands (e.g. a shape scalar) are
      ignored.
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

    Function boundary: tensor arguments become memref arguments and tensor
    results memref results. Results are allocated inside the function and never
    killed: they escape to the caller. `arith.constant` dense tensors become a
    module-level `memref.global "private" constant @__constant_<func>_<n>`
    (aligned by the same rule, `<n>` counting per function from 0 and skipping
    names already taken) read with `memref.get_global`: constants never take
    workspace. A `bufferization.to_tensor` of a `memref.get_global` (how
    `memplan-import-onnx` reads its weights) is dropped and its uses read the
    global's memref directly; `to_tensor` of anything else is rejected.

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
    which then escapes its region. Tensors carried across loop iterations
    (`scf.for`/`scf.while` iteration arguments or results) and tensors passed
    through `cf` branches to block arguments are rejected: one static storage
    cannot hold a value that is alive in two iterations at once.

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
    and any other op that produces or consumes a tensor. All checks run before
    the first rewrite, so the diagnostic shows the input IR.

    In place: a kernel declaration may carry `memory.inplace = array<i64: r,
    o, ...>`, (result, operand) index pairs meaning the kernel is correct when
    result `r` occupies exactly the bytes of tensor operand `o` (an
    element-wise op reading each element before writing it). The pair is
    checked (indices in range, the result no larger than the operand, not on
    a view kernel). At a call, result `r` is carved at offset 0 of operand
    `o`'s storage, with no storage of its own and `memory.inplace_of = o` on
    its `memory.alloc_tensor`, when that storage was allocated by this pass
    in the call's block on the same device and none of its tensors or views
    is used after the call (so the operand is not an argument, a constant, a
    value returned or yielded, or read later). Sharing never raises the peak
    of live bytes, so it is on by default.

    Options:

    - `inplace` (bool, default true): share in place where legal; false gives
      every result its own storage.
    """

    name = "manifest-alloc"

    inplace: bool = True
    """Let results of `memory.inplace` kernels take their operand's storage
    when it dies at the call (false: one storage per result, for comparison)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run = _ManifestAlloc(op, self.inplace)
        run.collect()
        run.rewrite()
