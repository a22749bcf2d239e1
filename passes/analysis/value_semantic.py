"""The value-semantic input form of `manifest-alloc`: kernels and their checks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import NoReturn

from xdsl.dialects import arith, bufferization, func, memref, scf, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IndexType,
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
from xdsl.ir import Attribute, Block, Operation
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from memplan.dialect.diagnostics import fail_pass
from memplan.dialect.op_model import is_loop
from memplan.dialect.ops import (
    DEVICE_ATTR,
    INPLACE_ATTR,
    MAX_SHAPES_ATTR,
    SHAPE_FN_ATTR,
    VIEW_ATTR,
    describe,
)
from memplan.dialect.types import has_byte_size, static_byte_size
from memplan.passes.analysis.symbols import SymbolCache


def is_tensor(type_: Attribute) -> bool:
    return isinstance(type_, TensorType | UnrankedTensorType)


def _is_scalar(type_: Attribute) -> bool:
    return isinstance(type_, IntegerType | IndexType) or isa(type_, AnyFloat)


def _has_tensor(types: Iterable[Attribute]) -> bool:
    return any(is_tensor(t) for t in types)


@lru_cache(maxsize=4096)
def to_memref(type_: TensorType[Attribute]) -> MemRefType[Attribute]:
    """The identity-layout memref holding a tensor of type ``type_``.

    Cached: a graph has few distinct types, and building a ``MemRefType``
    (xDSL checks its parameters) costs more than the rest of a call's rewrite.
    """
    return MemRefType(type_.element_type, type_.get_shape())


def memref_or_same(type_: Attribute) -> Attribute:
    """``type_`` with a ranked tensor replaced by its memref; others unchanged."""
    return to_memref(type_) if isinstance(type_, TensorType) else type_


def bound_bytes(call: func.CallOp, result: int, element_type: Attribute) -> int | None:
    """Bytes of result ``result`` of ``call`` at its `memory.max_shapes`
    bound (what `usmp` reserves for a dynamic tensor), if it has one."""
    bounds = call.attributes.get(MAX_SHAPES_ATTR)
    if not isinstance(bounds, ArrayAttr) or result >= len(bounds.data):
        return None
    bound = bounds.data[result]
    if not isa(bound, DenseArrayBase[IntegerType]):
        return None
    return static_byte_size(MemRefType(element_type, bound.get_values()))


def _check_ranked(op: Operation, where: str, type_: Attribute) -> TensorType[Attribute]:
    """``type_`` as a ranked tensor without encoding, or a diagnostic at ``op``."""
    if isinstance(type_, UnrankedTensorType):
        fail_pass(
            op,
            f"{where} has unranked tensor type {type_}: manifest-alloc needs ranked "
            "tensors to size their storage",
        )
    assert isinstance(type_, TensorType)
    if not isinstance(type_.encoding, NoneAttr):
        fail_pass(op, f"{where} has type {type_}: tensor encodings are not supported")
    return type_


def _checked_byte_size(op: Operation, where: str, type_: TensorType[Attribute]) -> int | None:
    """``static_byte_size`` of ``type_``, or a diagnostic at ``op`` when it
    exceeds 2^63-1 bytes (the i64 every size and offset is stored in)."""
    try:
        return static_byte_size(to_memref(type_))
    except VerifyException as error:
        fail_pass(op, f"{where}: {error}")


def _check_fixed_width(op: Operation, where: str, type_: TensorType[Attribute]) -> None:
    """A diagnostic at ``op`` unless ``type_``'s elements have a byte size."""
    element = type_.element_type
    if not has_byte_size(element):
        fail_pass(
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


def device_of(op: Operation, where: str) -> str | None:
    device = op.attributes.get(DEVICE_ATTR)
    if device is None:
        return None
    if not isinstance(device, StringAttr):
        fail_pass(op, f'{where}: {DEVICE_ATTR} must be a string like "npu", got {device}')
    return device.data


class ValueSemanticProgram:
    """A module in the value-semantic form, validated for `manifest-alloc`.

    ``collect`` checks every kernel declaration, shape function and function
    body (a diagnostic at the first op that does not fit the form) and records
    the kernels (``kernels``) and shape functions (``shape_fns``) it found.
    """

    def __init__(self, module: ModuleOp) -> None:
        self.functions = [op for op in module.walk() if isinstance(op, func.FuncOp)]
        self.kernels: dict[func.FuncOp, Kernel] = {}
        self.shape_fns: list[func.FuncOp] = []
        self.symbols = SymbolCache()

    def kernel_of(self, call: func.CallOp) -> Kernel | None:
        """The validated kernel ``call`` calls, if it calls one (after ``collect``)."""
        declaration = self.symbols.declaration(call)
        return None if declaration is None else self.kernels.get(declaration)

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
            fail_pass(decl, f"{name}: {SHAPE_FN_ATTR} must be a symbol like @f, got {ref}")
        found = self.symbols.lookup(decl, ref)
        if not isinstance(found, func.FuncOp):
            what = "no such symbol" if found is None else f"it is a {found.name}"
            fail_pass(decl, f"{name}: shape function {ref} is not a func.func ({what})")
        outputs = found.function_type.outputs.data
        if not all(isinstance(t, IndexType) for t in outputs):
            fail_pass(
                decl,
                f"{name}: shape function {ref} must return index values only, got "
                f"({', '.join(map(str, outputs))})",
            )
        for index, type_ in enumerate(found.function_type.inputs.data):
            if is_tensor(type_):
                _check_ranked(found, f"shape function {ref}: operand #{index}", type_)
        return found

    def _check_kernel(self, decl: func.FuncOp) -> Kernel:
        name = f"@{decl.sym_name.data}"
        inputs = decl.function_type.inputs.data
        for index, type_ in enumerate(inputs):
            where = f"kernel {name}: operand #{index}"
            if is_tensor(type_):
                _check_ranked(decl, where, type_)
            elif not _is_scalar(type_) and not isinstance(type_, MemRefType):
                fail_pass(
                    decl,
                    f"{where} has type {type_}, which is neither a ranked tensor, a "
                    "memref (memory the plan does not hold, e.g. a mutable global) nor a "
                    "scalar (integer, index, float)",
                )
        results: list[TensorType[Attribute]] = []
        for index, type_ in enumerate(decl.function_type.outputs.data):
            where = f"kernel {name}: result #{index}"
            if not is_tensor(type_):
                fail_pass(
                    decl,
                    f"{where} has type {type_}: kernel results must be ranked tensors "
                    "(a destination-passing kernel cannot return a scalar)",
                )
            result = _check_ranked(decl, where, type_)
            _check_fixed_width(decl, where, result)
            _checked_byte_size(decl, where, result)  # 0 bytes is fine
            results.append(result)

        view = decl.attributes.get(VIEW_ATTR)
        if view is not None and not isinstance(view, UnitAttr):
            fail_pass(decl, f"{name}: {VIEW_ATTR} is a unit attribute, got {view}")
        kernel = Kernel(
            decl=decl,
            inputs=inputs,
            results=tuple(results),
            device=device_of(decl, f"kernel {name}"),
            is_view=view is not None,
            shape_fn=None,
            inplace=self._check_inplace(decl, inputs, results, view is not None),
        )
        if kernel.is_view:
            self._check_view(kernel)
        if kernel.dynamic_dim_count == 0:
            return kernel
        ref = decl.attributes.get(SHAPE_FN_ATTR)
        if ref is None:
            index, dynamic = next((i, r) for i, r in enumerate(results) if not r.has_static_shape())
            fail_pass(
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
            fail_pass(
                decl,
                f"{name}: {INPLACE_ATTR} must be array<i64: result, operand, ...> "
                f"(index pairs), got {attr}",
            )
        values = [int(v) for v in attr.get_values()]
        if is_view:
            fail_pass(decl, f"{name}: a {VIEW_ATTR} kernel allocates nothing to share in place")
        pairs: list[tuple[int, int]] = []
        for result, operand in zip(values[::2], values[1::2]):
            where = f"{name}: {INPLACE_ATTR} pair ({result}, {operand})"
            if not 0 <= result < len(results):
                fail_pass(decl, f"{where}: result {result} out of range ({len(results)} results)")
            if not 0 <= operand < len(inputs) or not is_tensor(inputs[operand]):
                fail_pass(decl, f"{where}: operand {operand} is not a tensor operand of {name}")
            out_bytes = _checked_byte_size(decl, where, results[result])
            in_bytes = _checked_byte_size(decl, where, _check_ranked(decl, where, inputs[operand]))
            # A dynamic pair must have one type: the kernel then promises the
            # result's run-time shape is the operand's.
            same_dynamic = out_bytes is None and results[result] == inputs[operand]
            if not same_dynamic and (out_bytes is None or in_bytes is None or out_bytes > in_bytes):
                fail_pass(
                    decl,
                    f"{where}: result {results[result]} ({out_bytes} bytes) does not fit in "
                    f"operand {inputs[operand]} ({in_bytes} bytes)",
                )
            # A result may list several operands (it may take any one's bytes,
            # and an operand repeated at all of them); an operand's bytes go
            # to one result.
            if any(operand == o for _, o in pairs):
                fail_pass(decl, f"{where}: each operand may appear in one pair")
            pairs.append((result, operand))
        return tuple(pairs)

    def _check_view(self, kernel: Kernel) -> None:
        name = f"view kernel @{kernel.name}"
        tensors = [t for t in kernel.inputs if is_tensor(t)]
        if len(tensors) != 1 or len(kernel.results) != 1:
            fail_pass(
                kernel.decl,
                f"{name} must take exactly one tensor and return one tensor, got "
                f"{len(tensors)} tensor operands and {len(kernel.results)} results",
            )
        source = tensors[0]
        assert isinstance(source, TensorType)
        result = kernel.results[0]
        if source.element_type != result.element_type:
            fail_pass(
                kernel.decl,
                f"{name}: element type {source.element_type} of {source} differs from "
                f"{result.element_type} of {result}",
            )
        if not source.has_static_shape() or not result.has_static_shape():
            # The shape function gives the result's dynamic dims at run time.
            return
        source_count = math.prod(source.get_shape())
        result_count = math.prod(result.get_shape())
        if source_count != result_count:
            fail_pass(
                kernel.decl,
                f"{name}: {source} has {source_count} elements but {result} has {result_count}",
            )

    def _check_shape_fn(self, kernel: Kernel, shape_fn: func.FuncOp) -> None:
        name = f"shape function @{shape_fn.sym_name.data} of kernel @{kernel.name}"
        expected = [memref_or_same(t) for t in kernel.inputs]
        actual = [memref_or_same(t) for t in shape_fn.function_type.inputs.data]
        if expected != actual:
            fail_pass(
                kernel.decl,
                f"{name} takes ({', '.join(map(str, actual))}) but the kernel's operands "
                f"are ({', '.join(map(str, expected))})",
            )
        outputs = shape_fn.function_type.outputs.data
        count = kernel.dynamic_dim_count
        if len(outputs) != count or any(not isinstance(t, IndexType) for t in outputs):
            fail_pass(
                kernel.decl,
                f"{name} must return {count} index values (one per dynamic dim of the "
                f"results), got ({', '.join(map(str, outputs))})",
            )

    def _check_body(self, function: func.FuncOp) -> None:
        name = f"@{function.sym_name.data}"
        entry = function.body.blocks.first
        assert entry is not None
        for arg in entry.args:
            if is_tensor(arg.type):
                _check_ranked(function, f"function {name}: argument #{arg.index}", arg.type)
        for index, type_ in enumerate(function.function_type.outputs.data):
            if is_tensor(type_):
                _check_ranked(function, f"function {name}: result #{index}", type_)
        for block in function.body.blocks:
            if block is not entry:
                self._check_block_args(function, block)
        for op in function.body.walk():
            self._check_op(op)

    def _check_block_args(self, owner: Operation, block: Block) -> None:
        for arg in block.args:
            if is_tensor(arg.type):
                fail_pass(
                    owner,
                    f"{owner.name}: block argument #{arg.index} has tensor type "
                    f"{arg.type}: tensors flowing into block arguments (loop-carried or "
                    "through branches) are not supported",
                )

    def _check_op(self, op: Operation) -> None:
        if isinstance(op, func.CallOp):
            self._check_call(op)
        elif isinstance(op, arith.ConstantOp) and is_tensor(op.result.type):
            if not isinstance(op.value, DenseIntOrFPElementsAttr):
                fail_pass(
                    op,
                    f"constant {describe(op.result)} of type {op.result.type}: only "
                    "dense<...> tensor constants are supported",
                )
            _check_ranked(op, f"constant {describe(op.result)}", op.result.type)
        elif isinstance(op, tensor.DimOp):
            _check_ranked(op, f"tensor.dim operand {describe(op.source)}", op.source.type)
        elif isinstance(op, tensor.ExtractOp):
            _check_ranked(op, f"tensor.extract operand {describe(op.tensor)}", op.tensor.type)
        elif isinstance(op, bufferization.ToTensorOp):
            source = op.memref.owner
            if not isinstance(source, memref.GetGlobalOp):
                fail_pass(
                    op,
                    f"bufferization.to_tensor {describe(op.tensor)}: only tensors of a "
                    "memref.get_global (an imported constant) are supported",
                )
            symbol = self.symbols.lookup(source, source.name_)
            if isinstance(symbol, memref.GlobalOp) and symbol.constant is None:
                # manifest-alloc reads the global in place: a write to it
                # would change the tensor's value.
                fail_pass(
                    op,
                    f"bufferization.to_tensor {describe(op.tensor)}: @{symbol.sym_name.data} "
                    "is not constant (its memory may be written); read it with a kernel "
                    "call taking its memref",
                )
        elif isinstance(op, bufferization.MaterializeInDestinationOp):
            self._check_write(op)
        elif isinstance(op, tensor.FromElementsOp):
            where = f"tensor.from_elements {describe(op.result)}"
            _check_fixed_width(op, where, _check_ranked(op, where, op.result.type))
        elif isinstance(op, scf.IfOp):
            for result in op.results:
                if is_tensor(result.type):
                    _check_ranked(op, f"scf.if result {describe(result)}", result.type)
        elif isinstance(op, scf.ForOp | scf.WhileOp):
            self._check_carried(op)
        elif isinstance(op, scf.ConditionOp) and isinstance(op.parent_op(), scf.WhileOp):
            self._check_condition(op)
        elif isinstance(op, func.ReturnOp) or (
            isinstance(op, scf.YieldOp)
            and isinstance(op.parent_op(), scf.IfOp | scf.ForOp | scf.WhileOp)
        ):
            return
        else:
            self._reject_tensors(op)

    @staticmethod
    def _check_write(op: bufferization.MaterializeInDestinationOp) -> None:
        """A tensor written into memory the plan does not hold (a TFLite
        variable's `ASSIGN_VARIABLE`): `manifest-alloc` makes it a `memref.copy`."""
        where = f"bufferization.materialize_in_destination of {describe(op.source)}"
        if not isinstance(op.dest.type, MemRefType) or op.result is not None:
            fail_pass(
                op,
                f"{where}: its destination must be a memref (manifest-alloc writes a tensor "
                "into memory outside the plan, such as a mutable memref.global)",
            )
        _check_ranked(op, where, op.source.type)

    @staticmethod
    def _check_carried(loop: scf.ForOp | scf.WhileOp) -> None:
        """Tensors carried by an `scf.for` / `scf.while`: ranked, static
        shape, fixed-width elements (a while's block arguments are the
        carried values' types, which its results repeat)."""
        for result in loop.results:
            if not is_tensor(result.type):
                continue
            where = f"{loop.name} carried tensor {describe(result)}"
            carried = _check_ranked(loop, where, result.type)
            if not carried.has_static_shape():
                fail_pass(
                    loop,
                    f"{where} has type {carried}: a carried tensor needs a static shape "
                    "(its storages are allocated once, before the loop)",
                )
            _check_fixed_width(loop, where, carried)

    @staticmethod
    def _check_condition(condition: scf.ConditionOp) -> None:
        """An `scf.while` whose first region only decides: its
        `scf.condition` forwards that region's arguments, unchanged and in
        order, so the values carried are one set of buffers (as in an
        `scf.for`)."""
        loop = condition.parent_op()
        block = condition.parent_block()
        assert isinstance(loop, scf.WhileOp) and block is not None
        if not any(is_tensor(t) for t in (*loop.result_types, *block.arg_types)):
            return
        after = loop.after_region.block
        if (
            list(condition.args) != list(block.args)
            or list(loop.result_types) != list(block.arg_types)
            or list(after.arg_types) != list(block.arg_types)
            or [o.type for o in loop.arguments] != list(block.arg_types)
        ):
            fail_pass(
                condition,
                "scf.condition must forward the arguments of its scf.while's first region "
                "unchanged and in order when the loop carries tensors (the condition "
                "region only decides; the body computes the next values)",
            )

    def _reject_tensors(self, op: Operation) -> None:
        for index, operand in enumerate(op.operands):
            if is_tensor(operand.type):
                self._reject(op, f"operand #{index} ({describe(operand)})", operand.type)
        for result in op.results:
            if is_tensor(result.type):
                self._reject(op, f"result {describe(result)}", result.type)
        for region in op.regions:
            for block in region.blocks:
                self._check_block_args(op, block)

    @staticmethod
    def _reject(op: Operation, what: str, type_: Attribute) -> NoReturn:
        if is_loop(op):
            fail_pass(
                op,
                f"{op.name} carries tensor {what} of type {type_} across iterations: "
                "only scf.for and scf.while carry tensors (their storages are allocated "
                "before the loop)",
            )
        fail_pass(
            op,
            f"{op.name}: {what} has tensor type {type_}; manifest-alloc handles "
            "tensors only in func.call of kernel declarations, arith.constant, "
            "tensor.dim, tensor.extract, tensor.from_elements, scf.if, scf.for, "
            "scf.while, scf.condition, scf.yield and func.return",
        )

    def _check_call(self, call: func.CallOp) -> None:
        callee_name = f"@{call.callee.string_value()}"
        where = f"call to {callee_name}"
        callee = self.symbols.lookup(call, call.callee)
        if callee is None:
            fail_pass(call, f"{where}: unknown callee (no such symbol)")
        if not isinstance(callee, func.FuncOp):
            fail_pass(call, f"{where}: callee is a {callee.name}, not a func.func")
        types = (*call.arguments.types, *call.result_types)
        if not _has_tensor(types) or callee in self.shape_fns:
            return
        if not callee.is_declaration:
            fail_pass(
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
            fail_pass(
                call,
                f"{where}: call type {call_type} does not match {callee_name}'s "
                f"{callee.function_type}",
            )
        self._check_max_shapes(call, where, kernel)
        call_device = device_of(call, where)
        if call_device is not None and kernel.device is not None and call_device != kernel.device:
            fail_pass(
                call,
                f'{where}: call-site {DEVICE_ATTR} "{call_device}" conflicts with '
                f'"{kernel.device}" on the declaration of {callee_name}',
            )

    @staticmethod
    def _check_max_shapes(call: func.CallOp, where: str, kernel: Kernel) -> None:
        """`memory.max_shapes`: one bound per result, of its rank, static dims as typed."""
        bounds = call.attributes.get(MAX_SHAPES_ATTR)
        if bounds is None:
            return
        if not isinstance(bounds, ArrayAttr) or len(bounds.data) != len(kernel.results):
            fail_pass(
                call,
                f"{where}: {MAX_SHAPES_ATTR} must be an array of {len(kernel.results)} "
                f"array<i64: ...> shapes (one per result), got {bounds}",
            )
        for index, (bound, result) in enumerate(zip(bounds.data, kernel.results)):
            shape = result.get_shape()
            dims = bound.get_values() if isa(bound, DenseArrayBase[IntegerType]) else None
            if (
                dims is None
                or len(dims) != len(shape)
                or any(d < 0 or (s >= 0 and d != s) for d, s in zip(dims, shape))
            ):
                fail_pass(
                    call,
                    f"{where}: {MAX_SHAPES_ATTR} #{index} is {bound}: it must be an "
                    f"array<i64: ...> of {len(shape)} non-negative dims, equal to the "
                    f"static dims of the result type {result}",
                )
