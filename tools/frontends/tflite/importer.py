"""TFLite models as value-semantic IR: the library behind `memplan-import-tflite`.

Usage::

    memplan-import-tflite MODEL.tflite [-o OUT.mlir] [--subgraph N] [--inputs-in-arena]

The output is the form `manifest-alloc` takes, as for ONNX
(`frontends.onnx.importer`): one `func.call` per operator, in the model's execution
order, to a kernel declaration; the subgraph's inputs are `@main`'s
arguments and its outputs `@main`'s results. The flatbuffer is read with the
`tflite` package (generated from TFLite's schema), never by hand.

What the importer does:

1. Checks the file is a TFLite flatbuffer (the `TFL3` identifier) and reads
   the subgraph's tensors and operators; a truncated or corrupt file, a
   tensor or buffer index out of range, or a buffer whose size does not
   match its tensor is an error naming it.
2. Tensors with data are constants: `memref.global "private" constant`
   symbols named after the tensor, never workspace. Their data stays in the
   `.tflite` file (the globals carry no initial value).
3. Folds what TFLite itself folds when it prepares the model: a `DEQUANTIZE`
   of a constant (fp16 -> f32, or int8/uint8/int16 with its scale and zero
   point) and a `DENSIFY` of a constant sparse tensor become constants of
   their output's type (`global_data` computes their values for
   `memplan-run`: dequantized, and densified as TFLite's FormatConverter
   does).
4. Emits one call per remaining operator. Each distinct (operator, options,
   operand types) signature gets one declaration
   `func.func private @tfl.CONV_2D(...)`, carrying `memory.tflite.op`, the
   operator code's `memory.tflite.version` and one `memory.tflite.<option>`
   per builtin option (snake case; `padding` and `fused_activation_function`
   by name, e.g. `"SAME"`, `"RELU6"`). Custom operators
   (`Convolution2DTransposeBias`, `Landmarks2TransformMatrix`, ...) are
   opaque kernels `@tfl.custom.<code>` with `memory.tflite.custom_code` and
   their option bytes as `memory.tflite.custom_options`, typed by the shapes
   the model records.
   `RESHAPE`, `SQUEEZE` and `EXPAND_DIMS` are views (`memory.view`): their
   result aliases their data operand, which is the call's only operand.

Choices where TFLite leaves room:

* Quantized tensors keep their storage type (i8, ui8, i16, i32); the scale
  and zero point of operand N (result N) are kept on the declaration as
  `memory.tflite.operand_N_scale` / `_zero_point` (`result_N_...`).
* Optional inputs left out (index -1) are recorded as
  `memory.tflite.input_slots`, the positions of the operands present.
* Operators that run other subgraphs (`WHILE`, `IF`, `CALL_ONCE`, `CALL`)
  are refused naming the operator; `--subgraph N` imports one subgraph.
* The subgraph's inputs are `@main`'s arguments: the caller's memory, not
  planned. `--inputs-in-arena` copies each into planned workspace first
  (`@tfl.INPUT_COPY`), which is how TFLite and TFLM hold inputs: in their
  arena, live until their last reader.
* A tensor's `shape` is used; a dynamic dimension (`shape_signature` -1)
  takes the size the model records for it, as TFLite does before any resize,
  unless `--upper-bound INPUT:AXIS=N` bounds an input's dynamic dim: then
  every `shape_signature` -1 stays dynamic, bounded by the tensor's shape
  when ai-edge-litert resizes the inputs to the bounds
  (``shapes_at_upper_bounds``), each call records `memory.max_shapes` and
  each kernel with a dynamic result names a shape function (a body for a
  view, else a declaration `memplan-run` implements with the kernel).
* Element types: f16/f32/f64, `bf16`, signless i4..i64 for TFLite's signed
  integers, `ui8`..`ui64` for its unsigned ones, `i1` for BOOL,
  `complex<f32>` / `complex<f64>` for COMPLEX64 / COMPLEX128 (8 and 16
  bytes an element). INT4 takes one byte an element, as TFLite's kernels
  unpack it; its constant buffers (packed two per byte, low nibble first)
  are unpacked on reading. STRING, RESOURCE and VARIANT tensors (no fixed
  size) are refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    f32,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from memplan.dialect.ops import INPLACE_ATTR, MAX_SHAPES_ATTR, SHAPE_FN_ATTR, VIEW_ATTR
from memplan.tools.frontends.common import (
    UniqueNames,
    has_dynamic_shape,
    inplace_operand,
    sanitize_name,
    shape_function,
)
from memplan.tools.frontends.tflite.model import (
    TfliteImportError,
    TfliteOperator,
    TfliteSubgraph,
    TfliteTensor,
    densify,
    load_model,
    read_subgraph,
)

TFLITE_ATTR_PREFIX = "memory.tflite."

VIEW_OPS: frozenset[str] = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})
"""Operators whose output has the bytes of their first input."""

INPLACE_OPS: frozenset[str] = frozenset(
    {
        "ADD",
        "SUB",
        "MUL",
        "DIV",
        "MAXIMUM",
        "MINIMUM",
        "SQUARED_DIFFERENCE",
        "POW",
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "RELU_0_TO_1",
        "LEAKY_RELU",
        "PRELU",
        "ELU",
        "LOGISTIC",
        "TANH",
        "HARD_SWISH",
        "EXP",
        "LOG",
        "SQRT",
        "RSQRT",
        "ABS",
        "NEG",
        "FLOOR",
        "CEIL",
        "ROUND",
        "SIN",
        "COS",
        "SQUARE",
        "GELU",
    }
)
"""Element-wise builtins: the output may take the bytes of an operand of its
own type (`memory.inplace`), as TFLite's ArenaPlanner shares them."""

SUBGRAPH_OPS: frozenset[str] = frozenset({"WHILE", "IF", "CALL_ONCE", "CALL"})
"""Operators that run other subgraphs (not imported yet)."""


# ---------------------------------------------------------------------------
# Folding what TFLite folds at Prepare
# ---------------------------------------------------------------------------


def _dequantize(tensor: TfliteTensor, data: np.ndarray) -> np.ndarray:
    if tensor.type_name == "FLOAT16":
        return data.astype(np.float32)
    scale = np.asarray(tensor.scale or (1.0,), dtype=np.float32)
    zero_point = np.asarray(tensor.zero_point or (0,) * scale.size, dtype=np.float32)
    axis = tensor.quantized_dimension
    if zero_point.size != scale.size or (
        scale.size > 1 and (axis >= data.ndim or data.shape[axis] != scale.size)
    ):
        raise TfliteImportError(
            f"tensor {tensor.index} '{tensor.name}' {list(tensor.shape)} has {scale.size} "
            f"scales and {zero_point.size} zero points for quantized dimension {axis}"
        )
    if scale.size > 1:  # per-axis: broadcast along the quantized dimension
        view = [1] * data.ndim
        view[axis] = scale.size
        scale, zero_point = scale.reshape(view), zero_point.reshape(view)
    return ((data.astype(np.float32) - zero_point) * scale).astype(np.float32)


def constant_data(tensor: TfliteTensor) -> np.ndarray | None:
    """A constant tensor's values (None for a sparse one: only its dense
    output is imported)."""
    if tensor.data is None or tensor.sparse:
        return None
    return np.frombuffer(tensor.data, dtype=tensor.dtype).reshape(tensor.shape)


@dataclass
class _Folded:
    constants: set[int] = field(default_factory=set[int])
    """Tensors that are constant after folding."""
    values: dict[int, np.ndarray] = field(default_factory=dict[int, np.ndarray])
    """Their data."""
    folded_operators: set[int] = field(default_factory=set[int])


def fold_constants(subgraph: TfliteSubgraph, values: bool = True) -> _Folded:
    """Constants and the DEQUANTIZE/DENSIFY operators folded into them;
    their data too unless ``values`` is false (the import needs only which
    tensors are constant)."""
    folded = _Folded()
    for tensor in subgraph.tensors:
        if tensor.data is not None:
            folded.constants.add(tensor.index)
            data = constant_data(tensor) if values else None
            if data is not None:
                folded.values[tensor.index] = data
    for operator in subgraph.operators:
        if operator.name not in ("DEQUANTIZE", "DENSIFY"):
            continue
        if len(operator.inputs) != 1 or len(operator.outputs) != 1:
            raise TfliteImportError(
                f"{operator.where} has {len(operator.inputs)} inputs and "
                f"{len(operator.outputs)} outputs; it takes one of each"
            )
        source = operator.inputs[0]
        if source not in folded.constants:
            continue
        (output,) = operator.outputs
        folded.constants.add(output)
        folded.folded_operators.add(operator.index)
        if not values:
            continue
        if operator.name == "DENSIFY":
            folded.values[output] = densify(subgraph.tensors[source])
        elif source in folded.values:
            folded.values[output] = _dequantize(subgraph.tensors[source], folded.values[source])
    return folded


# ---------------------------------------------------------------------------
# Emitting IR
# ---------------------------------------------------------------------------


def _snake(name: str) -> str:
    """``FusedActivationFunction`` -> ``fused_activation_function``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _encode(value: Any) -> Attribute:
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f32)
    if isinstance(value, str):
        return StringAttr(value)
    if all(isinstance(v, int) for v in value):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    return DenseArrayBase.from_list(f32, [float(v) for v in value])


def _quantization_attributes(
    role: str, tensors: Sequence[TfliteTensor]
) -> Iterator[tuple[str, Attribute]]:
    for position, tensor in enumerate(tensors):
        if tensor.scale:
            key = f"{TFLITE_ATTR_PREFIX}{role}_{position}_"
            yield key + "scale", DenseArrayBase.from_list(f32, list(tensor.scale))
            yield key + "zero_point", DenseArrayBase.from_list(i64, list(tensor.zero_point))


@dataclass
class _Emitter:
    symbols: UniqueNames = field(default_factory=UniqueNames)
    globals: list[memref.GlobalOp] = field(default_factory=list[memref.GlobalOp])
    declarations: list[func.FuncOp] = field(default_factory=list[func.FuncOp])
    signatures: dict[tuple[Any, ...], func.FuncOp] = field(
        default_factory=dict[tuple[Any, ...], func.FuncOp]
    )

    def __post_init__(self) -> None:
        self.symbols.taken.add("main")

    def constant(self, tensor: TfliteTensor, block: Block) -> SSAValue:
        """Declare the global for ``tensor`` and read it in ``block``."""
        symbol = self.symbols.get(sanitize_name(tensor.name))
        global_op = memref.GlobalOp.get(
            StringAttr(symbol), tensor.memref_type, UnitAttr(), constant=UnitAttr()
        )
        global_op.attributes[TFLITE_ATTR_PREFIX + "name"] = StringAttr(tensor.name)
        global_op.attributes[TFLITE_ATTR_PREFIX + "tensor"] = IntegerAttr(tensor.index, i64)
        self.globals.append(global_op)
        get = memref.GetGlobalOp(symbol, tensor.memref_type)
        to_tensor = bufferization.ToTensorOp(get.memref, restrict=True)
        get.memref.name_hint = sanitize_name(tensor.name)
        to_tensor.tensor.name_hint = sanitize_name(tensor.name)
        block.add_ops([get, to_tensor])
        return to_tensor.tensor

    def declaration(
        self,
        operator: TfliteOperator,
        operands: Sequence[TfliteTensor],
        results: Sequence[TfliteTensor],
        view: bool,
    ) -> func.FuncOp:
        """The kernel declaration for ``operator``'s signature (created once)."""
        attributes: dict[str, Attribute] = {
            TFLITE_ATTR_PREFIX + "op": StringAttr(operator.name),
            TFLITE_ATTR_PREFIX + "version": IntegerAttr(operator.version, i64),
        }
        if operator.name == "CUSTOM":
            attributes[TFLITE_ATTR_PREFIX + "custom_code"] = StringAttr(operator.custom_code)
            if operator.custom_options:
                attributes[TFLITE_ATTR_PREFIX + "custom_options"] = DenseArrayBase.from_list(
                    i8, np.frombuffer(operator.custom_options, dtype=np.int8).tolist()
                )
        for name, value in operator.options.items():
            attributes[TFLITE_ATTR_PREFIX + _snake(name)] = _encode(value)
        if not view and -1 in operator.inputs:
            slots = [i for i, t in enumerate(operator.inputs) if t != -1]
            attributes[TFLITE_ATTR_PREFIX + "input_slots"] = DenseArrayBase.from_list(i64, slots)
        attributes.update(_quantization_attributes("operand", operands))
        attributes.update(_quantization_attributes("result", results))
        operand_types = [t.tensor_type for t in operands]
        result_types = [t.tensor_type for t in results]
        if view:
            attributes[VIEW_ATTR] = UnitAttr()
        elif operator.name in INPLACE_OPS and len(result_types) == 1:
            operand = inplace_operand(operand_types, result_types[0])
            if operand is not None:
                attributes[INPLACE_ATTR] = DenseArrayBase.from_list(i64, [0, operand])
        key = (
            tuple(sorted((k, str(v)) for k, v in attributes.items())),
            tuple(operand_types),
            tuple(result_types),
        )
        existing = self.signatures.get(key)
        if existing is not None:
            return existing
        base = "tfl." + (
            f"custom.{operator.custom_code}" if operator.name == "CUSTOM" else operator.name
        )
        name = self.symbols.get(sanitize_name(base))
        declaration = func.FuncOp.external(name, operand_types, result_types)
        declaration.attributes.update(attributes)
        self.signatures[key] = declaration
        self.declarations.append(declaration)
        if has_dynamic_shape(result_types):
            shape_fn = shape_function(
                self.symbols.get(name + ".shape"), operand_types, result_types, view
            )
            declaration.attributes[SHAPE_FN_ATTR] = SymbolRefAttr(shape_fn.sym_name.data)
            self.declarations.append(shape_fn)
        return declaration


INPUT_COPY = "INPUT_COPY"
"""The pseudo-operator ``inputs_in_arena`` adds: copies an input into the arena."""


def parse_upper_bound(spec: str) -> tuple[tuple[str, int], int]:
    """``INPUT:AXIS=N`` (a bound on a dynamic dim of a subgraph input) as
    ``((input, axis), N)``; the input name may itself contain ``:``."""
    target, sep, value = spec.rpartition("=")
    name, colon, axis = target.rpartition(":")
    try:
        bound, axis_number = int(value), int(axis)
    except ValueError:
        sep = ""
        bound = axis_number = 0
    if not sep or not colon or not name or bound <= 0 or axis_number < 0:
        raise TfliteImportError(
            f"--upper-bound '{spec}' must look like INPUT:AXIS=N (N a positive integer), "
            "e.g. serving_default_x:0:0=64 for axis 0 of input 'serving_default_x:0'"
        )
    return (name, axis_number), bound


def shapes_at_upper_bounds(
    model_bytes: bytes, subgraph: TfliteSubgraph, upper_bounds: Mapping[tuple[str, int], int]
) -> dict[int, tuple[int, ...]]:
    """Every tensor's shape (by index) when each bounded input dim is at its
    bound, from TFLite's own shape propagation (ai-edge-litert resizes the
    inputs and prepares every operator). Each bound must name a dim the
    model leaves dynamic (``shape_signature`` -1) of an input of subgraph 0."""
    inputs = {subgraph.tensors[t].name: subgraph.tensors[t] for t in subgraph.inputs}
    for (name, axis), bound in upper_bounds.items():
        tensor = inputs.get(name)
        if tensor is None:
            raise TfliteImportError(
                f"--upper-bound names '{name}', which is not an input of subgraph "
                f"{subgraph.index} (inputs: {', '.join(inputs)})"
            )
        if axis >= len(tensor.shape) or not tensor.signature or tensor.signature[axis] != -1:
            raise TfliteImportError(
                f"--upper-bound {name}:{axis}={bound}: axis {axis} of input '{name}' "
                f"{list(tensor.signature or tensor.shape)} is not a dynamic dim (-1 in its "
                "shape_signature)"
            )
    if subgraph.index != 0:
        raise TfliteImportError("--upper-bound applies to subgraph 0 only")
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as error:
        raise TfliteImportError(
            "--upper-bound sizes the model with ai-edge-litert (pip install ai-edge-litert)"
        ) from error
    try:
        interpreter = Interpreter(
            model_content=model_bytes,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        for detail in interpreter.get_input_details():
            tensor = subgraph.tensors[detail["index"]]
            shape = [
                upper_bounds.get((tensor.name, axis), size)
                for axis, size in enumerate(tensor.shape)
            ]
            interpreter.resize_tensor_input(detail["index"], shape, strict=True)
        interpreter.allocate_tensors()
        return {
            int(detail["index"]): tuple(int(d) for d in detail["shape"])
            for detail in interpreter.get_tensor_details()
        }
    except (RuntimeError, ValueError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise TfliteImportError(f"cannot size the model at its upper bounds: {first}") from error


def _with_dynamic_dims(
    subgraph: TfliteSubgraph, bound_shapes: Mapping[int, tuple[int, ...]]
) -> TfliteSubgraph:
    """``subgraph`` with the dims each tensor's ``shape_signature`` leaves
    dynamic made ``-1``, bounded by its shape in ``bound_shapes``."""
    tensors = list(subgraph.tensors)
    for tensor in subgraph.tensors:
        if tensor.data is not None or -1 not in tensor.signature:
            continue
        bound = bound_shapes.get(tensor.index)
        if bound is None or len(bound) != len(tensor.shape):
            raise TfliteImportError(
                f"tensor {tensor.index} '{tensor.name}' has no shape at the upper bounds"
            )
        shape = tuple(-1 if s == -1 else d for s, d in zip(tensor.signature, tensor.shape))
        tensors[tensor.index] = replace(tensor, shape=shape, max_shape=bound)
    return replace(subgraph, tensors=tensors)


def import_subgraph(
    subgraph: TfliteSubgraph,
    inputs_in_arena: bool = False,
    bound_shapes: Mapping[int, tuple[int, ...]] | None = None,
) -> ModuleOp:
    """The value-semantic module of ``subgraph``.

    With ``inputs_in_arena``, each input is first copied by a call to
    ``@tfl.INPUT_COPY`` and the operators read the copy: the input then
    takes planned workspace from the start to its last use, as in TFLite's
    and TFLM's arenas (where the application writes the input), instead of
    being the caller's memory for the whole call.

    With ``bound_shapes`` (``shapes_at_upper_bounds``), the dims the model
    leaves dynamic stay dynamic, each call records its results' shapes
    there in `memory.max_shapes`, and each kernel with a dynamic result
    names a shape function.
    """
    if bound_shapes is not None:
        subgraph = _with_dynamic_dims(subgraph, bound_shapes)
    for operator in subgraph.operators:
        if operator.name in SUBGRAPH_OPS:
            raise TfliteImportError(
                f"{operator.where} runs other subgraphs: memplan does not import TFLite "
                "control flow yet (import one subgraph with --subgraph N)"
            )
    folded = fold_constants(subgraph, values=False)
    tensors = subgraph.tensors
    live = [op for op in subgraph.operators if op.index not in folded.folded_operators]

    def operands_of(operator: TfliteOperator) -> list[int]:
        present = [t for t in operator.inputs if t != -1]
        return present[:1] if operator.name in VIEW_OPS else present

    inputs = [t for t in subgraph.inputs if t not in folded.constants]
    read_constants = dict.fromkeys(
        t
        for t in [*(t for op in live for t in operands_of(op)), *subgraph.outputs]
        if t in folded.constants
    )
    emitter = _Emitter()
    block = Block(arg_types=[tensors[t].tensor_type for t in inputs])
    values: dict[int, SSAValue] = {}
    for tensor_index, argument in zip(inputs, block.args):
        tensor = tensors[tensor_index]
        argument.name_hint = sanitize_name(tensor.name)
        values[tensor_index] = argument
        if inputs_in_arena:
            copy = TfliteOperator(-1, INPUT_COPY, "", 1, (tensor_index,), (tensor_index,), {}, b"")
            declaration = emitter.declaration(copy, [tensor], [tensor], view=False)
            call = func.CallOp(declaration.sym_name.data, [argument], [tensor.tensor_type])
            call.results[0].name_hint = sanitize_name(tensor.name) + "_arena"
            values[tensor_index] = call.results[0]
            block.add_op(call)
    for tensor_index in read_constants:
        values[tensor_index] = emitter.constant(tensors[tensor_index], block)

    for operator in live:
        operands: list[SSAValue] = []
        for tensor_index in operands_of(operator):
            if tensor_index not in values:
                raise TfliteImportError(
                    f"{operator.where} reads tensor {tensor_index} "
                    f"'{tensors[tensor_index].name}', which no earlier operator writes"
                )
            operands.append(values[tensor_index])
        results = [tensors[t] for t in operator.outputs]
        view = operator.name in VIEW_OPS
        if view and any(t.shape.count(-1) > 1 for t in results):
            raise TfliteImportError(
                f"{operator.where}: a view with more than one dynamic dim "
                f"({list(results[0].shape)}, -1 dynamic) is not supported"
            )
        declaration = emitter.declaration(
            operator, [tensors[t] for t in operands_of(operator)], results, view
        )
        call = func.CallOp(declaration.sym_name.data, operands, [t.tensor_type for t in results])
        if not view and any(t.max_shape is not None for t in results):
            call.attributes[MAX_SHAPES_ATTR] = ArrayAttr(
                DenseArrayBase.from_list(i64, t.max_shape or t.shape) for t in results
            )
        for tensor, result in zip(results, call.results):
            result.name_hint = sanitize_name(tensor.name)
            values[tensor.index] = result
        block.add_op(call)

    returned: list[SSAValue] = []
    for tensor_index in subgraph.outputs:
        if tensor_index not in values:
            raise TfliteImportError(
                f"subgraph output tensor {tensor_index} '{tensors[tensor_index].name}' "
                "is written by no operator"
            )
        returned.append(values[tensor_index])
    block.add_op(func.ReturnOp(*returned))
    main = func.FuncOp(
        "main",
        ([tensors[t].tensor_type for t in inputs], [v.type for v in returned]),
        Region(block),
    )
    main.attributes[TFLITE_ATTR_PREFIX + "inputs"] = ArrayAttr(
        StringAttr(tensors[t].name) for t in inputs
    )
    main.attributes[TFLITE_ATTR_PREFIX + "outputs"] = ArrayAttr(
        StringAttr(tensors[t].name) for t in subgraph.outputs
    )
    main.attributes[TFLITE_ATTR_PREFIX + "subgraph"] = IntegerAttr(subgraph.index, i64)
    return ModuleOp([*emitter.globals, main, *emitter.declarations])


def import_tflite(
    source: str | Path | bytes,
    subgraph: int = 0,
    inputs_in_arena: bool = False,
    upper_bounds: Mapping[tuple[str, int], int] | None = None,
) -> ModuleOp:
    """Load the model at ``source`` (a path or the file's bytes) and import
    subgraph ``subgraph`` (see ``import_subgraph``), with the dynamic input
    dims in ``upper_bounds`` (``(input name, axis) -> bound``) kept dynamic."""
    model, label = load_model(source)
    read = read_subgraph(model, label, subgraph)
    bound_shapes = None
    if upper_bounds:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        bound_shapes = shapes_at_upper_bounds(data, read, upper_bounds)
    return import_subgraph(read, inputs_in_arena, bound_shapes)


def global_data(module: ModuleOp, subgraph: TfliteSubgraph) -> dict[str, np.ndarray]:
    """The data of each constant global of ``module`` (imported from
    ``subgraph``), by symbol: DEQUANTIZE and DENSIFY outputs computed."""
    values = fold_constants(subgraph).values
    data: dict[str, np.ndarray] = {}
    for op in module.ops:
        index = op.attributes.get(TFLITE_ATTR_PREFIX + "tensor")
        if isinstance(op, memref.GlobalOp) and isinstance(index, IntegerAttr):
            array = values.get(index.value.data)
            if array is not None:
                data[op.sym_name.data] = array
    return data
