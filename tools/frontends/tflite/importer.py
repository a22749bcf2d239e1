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
   result aliases their data operand, which is the call's only operand;
   under `--upper-bound`, one whose result has two dynamic dims is a
   copying kernel instead (a view's shape function derives only one dim).
   Each call records its results' model tensor names and indices
   (`memory.source_names`, `memory.source_ids`), which the C header report
   names its macros after.

Choices where TFLite leaves room:

* Quantized tensors keep their storage type (i8, ui8, i16, i32); the scale
  and zero point of operand N (result N) are kept on the declaration as
  `memory.tflite.operand_N_scale` / `_zero_point` (`result_N_...`).
* Optional inputs left out (index -1) are recorded as
  `memory.tflite.input_slots`, the positions of the operands present.
* `IF` becomes `scf.if` and `WHILE` `scf.while`, as the ONNX importer
  does for `If` and `Loop`: `tensor.extract` reads the condition's one bool
  element, and the subgraphs they run (then/else, condition/body) are
  emitted into the regions, their inputs the operator's operands (`IF`) or
  the loop's block arguments (`WHILE`), their outputs `scf.yield`ed
  (`scf.condition` for a `WHILE` condition). A `WHILE` whose trip count
  is known at import time (``_trip_count``: its condition compares one loop
  variable with a constant, the variable starts at a constant and the body
  adds or subtracts a constant) becomes `scf.for` to that count instead,
  its condition subgraph not emitted. Each output needs one static
  shape, a loop's outputs the types of its inputs, and a subgraph's inputs
  the types it is given: a mismatch is an error naming both. Constants a
  subgraph reads are globals marked with `memory.tflite.subgraph`.
  `CALL` is refused naming the operator; `--subgraph N` imports one
  subgraph.
* Resource variables (`VAR_HANDLE`, `READ_VARIABLE`, `ASSIGN_VARIABLE`:
  streaming state kept across invocations) whose initial values a
  `CALL_ONCE` subgraph assigns: each variable is a mutable `memref.global`
  (no `constant`, `memory.tflite.variable` naming it; its data the init
  subgraph's constant, `memory.tflite.subgraph`/`tensor` pointing at it),
  outside the planned pool as in TFLM's persistent arena. `VAR_HANDLE` is
  a `memref.get_global`, `READ_VARIABLE` a kernel call copying the
  variable (a memref operand) into a planned tensor, `ASSIGN_VARIABLE` a
  `bufferization.materialize_in_destination` of the value into it
  (`manifest-alloc` makes it a `memref.copy`; `schedule` moves no call
  across it, so reads and writes keep the model's order). An init
  subgraph doing anything but assigning constants to variables, a
  variable no `CALL_ONCE` initialises, and a handle given to any other
  operator are refused in one line.
* The subgraph's inputs are `@main`'s arguments: the caller's memory, not
  planned. `--inputs-in-arena` copies each into planned workspace first
  (`@tfl.INPUT_COPY`), which is how TFLite and TFLM hold inputs: in their
  arena, live until their last reader.
* A tensor's `shape` is used; a dynamic dimension (`shape_signature` -1)
  takes the size the model records for it, as TFLite does before any resize.
  `--input-shape NAME=DIMS` sets an input's dynamic dims (a dim the model
  fixes must be given as it is, or `?`) and every tensor takes the shape
  ai-edge-litert gives it then (``size_subgraph``: prepared, then run once
  on zeros, since TFLite sizes a tensor whose shape is computed from other
  tensors' values only when it runs; a view whose recorded sizes disagree
  is an error asking for `--input-shape`). `--upper-bound
  INPUT:AXIS=N` bounds an input's dynamic dim: then every `shape_signature`
  -1 stays dynamic, bounded by the tensor's shape when ai-edge-litert
  resizes the inputs to the bounds (``shapes_at``), each call records
  `memory.max_shapes` and each kernel with a dynamic result names a shape
  function (a body for a view, else a declaration `memplan-run` implements
  with the kernel).
* Element types: f16/f32/f64, `bf16`, signless i4..i64 for TFLite's signed
  integers, `ui8`..`ui64` for its unsigned ones, `i1` for BOOL,
  `complex<f32>` / `complex<f64>` for COMPLEX64 / COMPLEX128 (8 and 16
  bytes an element). INT4 takes one byte an element, as TFLite's kernels
  unpack it; its constant buffers (packed two per byte, low nibble first)
  are unpacked on reading. STRING and VARIANT tensors (no fixed size) are
  refused, and RESOURCE tensors except as variable handles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import arith, bufferization, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i8,
    i64,
)
from xdsl.dialects.tensor import ExtractOp
from xdsl.ir import Attribute, Block, Region, SSAValue

from memplan.dialect.ops import (
    MAX_SHAPES_ATTR,
    SOURCE_IDS_ATTR,
    SOURCE_NAMES_ATTR,
)
from memplan.tools.frontends.common import (
    KernelDeclarations,
    UniqueNames,
    counted_for,
    sanitize_name,
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
"""Operators that run other subgraphs."""

CONTROL_FLOW_OPS: frozenset[str] = frozenset({"IF", "WHILE"})
"""The ones imported (as `scf.if` and `scf.while`)."""


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
    root: int = 0
    """The subgraph imported as ``@main``."""
    subgraphs: Callable[[int], TfliteSubgraph] | None = None
    symbols: UniqueNames = field(default_factory=UniqueNames)
    globals: list[memref.GlobalOp] = field(default_factory=list[memref.GlobalOp])
    kernels: KernelDeclarations = field(init=False)
    variables: dict[tuple[str, str], _Variable] = field(
        default_factory=dict[tuple[str, str], "_Variable"]
    )
    """Resource variables by (container, shared name), as `CALL_ONCE` set them."""

    def __post_init__(self) -> None:
        self.symbols.taken.add("main")
        self.kernels = KernelDeclarations(self.symbols.get)

    def constant(self, tensor: TfliteTensor, block: Block, subgraph: int) -> SSAValue:
        """Declare the global for ``tensor`` (of subgraph ``subgraph``) and
        read it in ``block``."""
        symbol = self.symbols.get(sanitize_name(tensor.name))
        global_op = memref.GlobalOp.get(
            StringAttr(symbol), tensor.memref_type, UnitAttr(), constant=UnitAttr()
        )
        global_op.attributes[TFLITE_ATTR_PREFIX + "name"] = StringAttr(tensor.name)
        global_op.attributes[TFLITE_ATTR_PREFIX + "tensor"] = IntegerAttr(tensor.index, i64)
        if subgraph != self.root:
            global_op.attributes[TFLITE_ATTR_PREFIX + "subgraph"] = IntegerAttr(subgraph, i64)
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
        operand_types: Sequence[Attribute] | None = None,
    ) -> func.FuncOp:
        """The kernel declaration for ``operator``'s signature (created once);
        ``operand_types`` replaces the operands' tensor types (a variable's
        memref)."""
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
        if operand_types is None:
            operand_types = [t.tensor_type for t in operands]
        return self.kernels.declare(
            "tfl."
            + (f"custom.{operator.custom_code}" if operator.name == "CUSTOM" else operator.name),
            attributes,
            operand_types,
            [t.tensor_type for t in results],
            view=view,
            inplace_candidate=operator.name in INPLACE_OPS,
        )

    def emit(
        self,
        subgraph: TfliteSubgraph,
        block: Block,
        values: dict[int, SSAValue],
        folded: _Folded,
        path: tuple[int, ...],
    ) -> list[SSAValue]:
        """Emit ``subgraph``'s operators into ``block`` (``values``: its
        tensors computed so far, the inputs at least) and return the values
        of its outputs. ``path``: the subgraphs being emitted, outermost
        first (a subgraph that runs itself is refused)."""
        tensors = subgraph.tensors
        live = [op for op in subgraph.operators if op.index not in folded.folded_operators]
        read_constants = dict.fromkeys(
            t
            for t in [*(t for op in live for t in _operands_of(op, tensors)), *subgraph.outputs]
            if t in folded.constants and t not in values
        )
        for tensor_index in read_constants:
            values[tensor_index] = self.constant(tensors[tensor_index], block, subgraph.index)
        where = "" if subgraph.index == self.root else f"subgraph {subgraph.index} "
        for operator in live:
            operands: list[SSAValue] = []
            for tensor_index in _operands_of(operator, tensors):
                if tensor_index not in values:
                    raise TfliteImportError(
                        f"{where}{operator.where} reads tensor {tensor_index} "
                        f"'{tensors[tensor_index].name}', which no earlier operator writes"
                    )
                operands.append(values[tensor_index])
            results = [tensors[t] for t in operator.outputs]
            if operator.name == "CALL_ONCE":
                self._call_once(operator, where)
                continue
            if operator.name == "VAR_HANDLE":
                (handle,) = operator.outputs
                values[handle] = self._variable_handle(operator, tensors[handle], block, where)
                continue
            resources = [t for t in _operands_of(operator, tensors) if tensors[t].is_resource]
            if resources:
                emitted = self._variable_access(
                    operator, [tensors[t] for t in operator.inputs], operands, results, block, where
                )
                for tensor, result in zip(results, emitted):
                    result.name_hint = sanitize_name(tensor.name)
                    values[tensor.index] = result
                continue
            if operator.name in SUBGRAPH_OPS - CONTROL_FLOW_OPS:
                raise TfliteImportError(
                    f"{where}{operator.where} runs other subgraphs: memplan imports IF and "
                    "WHILE (as scf.if and scf.while) and CALL_ONCE (resource variables' "
                    "initial values), not CALL (import one subgraph with --subgraph N)"
                )
            if operator.name in CONTROL_FLOW_OPS:
                emitted = self._control_flow(subgraph, operator, operands, block, path)
            else:
                emitted = self._call(
                    operator,
                    [tensors[t] for t in _operands_of(operator, tensors)],
                    operands,
                    results,
                    block,
                    where,
                )
            for tensor, result in zip(results, emitted):
                result.name_hint = sanitize_name(tensor.name)
                values[tensor.index] = result
        returned: list[SSAValue] = []
        for tensor_index in subgraph.outputs:
            if tensor_index not in values:
                raise TfliteImportError(
                    f"{where or 'subgraph '}output tensor {tensor_index} "
                    f"'{tensors[tensor_index].name}' is written by no operator"
                )
            returned.append(values[tensor_index])
        return returned

    def _call_once(self, operator: TfliteOperator, where: str) -> None:
        """``CALL_ONCE``: its init subgraph gives resource variables their
        initial values. Only an init subgraph that assigns constants to
        variables (``VAR_HANDLE``, ``ASSIGN_VARIABLE`` of a constant) is
        imported: each variable becomes a mutable `memref.global`, its data
        the constant's (``global_data`` reads it from the init subgraph)."""
        index = int(operator.options.get("InitSubgraphIndex", -1))
        what = f"{where}{operator.where}"
        if self.subgraphs is None:
            raise TfliteImportError(f"{what} runs other subgraphs, which this import cannot read")
        try:
            init = self.subgraphs(index)
        except TfliteImportError as error:
            raise TfliteImportError(f"{what}: its init subgraph: {error}") from None
        folded = fold_constants(init, values=False)
        handles: dict[int, tuple[str, str]] = {}
        refusal = (
            f"{what}: its init subgraph {index} {{}}; memplan imports an init subgraph that "
            "only assigns constants to resource variables (VAR_HANDLE, ASSIGN_VARIABLE)"
        )
        if init.inputs or init.outputs:
            raise TfliteImportError(refusal.format("has inputs or outputs"))
        for op in init.operators:
            if op.index in folded.folded_operators:
                continue
            if op.name == "VAR_HANDLE" and len(op.outputs) == 1:
                handles[op.outputs[0]] = _variable_key(op)
                continue
            if (
                op.name == "ASSIGN_VARIABLE"
                and len(op.inputs) == 2
                and op.inputs[0] in handles
                and op.inputs[1] in folded.constants
            ):
                self._declare_variable(
                    handles[op.inputs[0]], init, init.tensors[op.inputs[1]], what
                )
                continue
            runs = f"runs {op.where}"
            if op.name == "ASSIGN_VARIABLE":
                runs += " with a value that is not a constant"
            raise TfliteImportError(refusal.format(runs))

    def _declare_variable(
        self, key: tuple[str, str], init: TfliteSubgraph, value: TfliteTensor, what: str
    ) -> None:
        """A mutable `memref.global` for variable ``key``, whose initial value is
        the constant ``value`` of subgraph ``init``."""
        if key in self.variables:
            raise TfliteImportError(
                f"{what}: resource variable '{_key_text(key)}' is assigned twice"
            )
        symbol = self.symbols.get(sanitize_name(key[1] or "variable"))
        global_op = memref.GlobalOp.get(StringAttr(symbol), value.memref_type, UnitAttr())
        global_op.attributes[TFLITE_ATTR_PREFIX + "variable"] = StringAttr(_key_text(key))
        global_op.attributes[TFLITE_ATTR_PREFIX + "name"] = StringAttr(value.name)
        global_op.attributes[TFLITE_ATTR_PREFIX + "tensor"] = IntegerAttr(value.index, i64)
        global_op.attributes[TFLITE_ATTR_PREFIX + "subgraph"] = IntegerAttr(init.index, i64)
        self.globals.append(global_op)
        self.variables[key] = _Variable(symbol, value)

    def _variable_handle(
        self, operator: TfliteOperator, handle: TfliteTensor, block: Block, where: str
    ) -> SSAValue:
        """``VAR_HANDLE``: the variable's global, read with `memref.get_global`."""
        key = _variable_key(operator)
        variable = self.variables.get(key)
        if variable is None:
            raise TfliteImportError(
                f"{where}{operator.where}: resource variable '{_key_text(key)}' is given its "
                "initial value by no CALL_ONCE before it; memplan imports variables a "
                "CALL_ONCE subgraph initialises"
            )
        get = memref.GetGlobalOp(variable.symbol, variable.value.memref_type)
        get.memref.name_hint = sanitize_name(handle.name)
        block.add_op(get)
        return get.memref

    def _variable_access(
        self,
        operator: TfliteOperator,
        operand_tensors: Sequence[TfliteTensor],
        operands: Sequence[SSAValue],
        results: Sequence[TfliteTensor],
        block: Block,
        where: str,
    ) -> Sequence[SSAValue]:
        """``READ_VARIABLE``: a kernel call copying the variable (a memref
        operand) into a planned tensor. ``ASSIGN_VARIABLE``: the value written
        into the variable's global (`bufferization.materialize_in_destination`,
        which `manifest-alloc` makes a `memref.copy`; `schedule` moves no
        call across it)."""
        what = f"{where}{operator.where}"
        handle = operands[0] if operands else None
        if (
            operator.name not in ("READ_VARIABLE", "ASSIGN_VARIABLE")
            or not operand_tensors[0].is_resource
            or any(t.is_resource for t in operand_tensors[1:])
            or handle is None
            or not isinstance(handle.type, MemRefType)
        ):
            raise TfliteImportError(
                f"{what} takes a resource variable's handle; memplan imports only "
                "READ_VARIABLE and ASSIGN_VARIABLE (operand 0) on one"
            )
        variable_type = TensorType(handle.type.element_type, handle.type.get_shape())
        if operator.name == "READ_VARIABLE":
            if len(results) != 1 or len(operands) != 1:
                raise TfliteImportError(f"{what} takes one handle and has one output")
            if results[0].tensor_type != variable_type:
                raise TfliteImportError(
                    f"{what} reads a variable of {variable_type} into {results[0].tensor_type} "
                    f"'{results[0].name}'"
                )
            return self._call(
                operator, operand_tensors, operands, results, block, where, [handle.type]
            )
        if len(operands) != 2 or operator.outputs:
            raise TfliteImportError(f"{what} takes a handle and a value and has no output")
        value = operands[1]
        if value.type != variable_type:
            raise TfliteImportError(
                f"{what} writes {value.type} '{operand_tensors[1].name}' into a variable of "
                f"{variable_type}"
            )
        write = bufferization.MaterializeInDestinationOp.create(
            operands=[value, handle],
            properties={"restrict": UnitAttr(), "writable": UnitAttr()},
            attributes={TFLITE_ATTR_PREFIX + "op": StringAttr(operator.name)},
        )
        block.add_op(write)
        return []

    def _call(
        self,
        operator: TfliteOperator,
        operand_tensors: Sequence[TfliteTensor],
        operands: Sequence[SSAValue],
        results: Sequence[TfliteTensor],
        block: Block,
        where: str,
        operand_types: Sequence[Attribute] | None = None,
    ) -> Sequence[SSAValue]:
        """One kernel call for ``operator`` (``operand_types``: see ``declaration``)."""
        view = operator.name in VIEW_OPS and all(t.shape.count(-1) <= 1 for t in results)
        if view and -1 not in (*operand_tensors[0].shape, *results[0].shape):
            _check_view_sizes(operator, operand_tensors[0], results[0])
        declaration = self.declaration(operator, operand_tensors, results, view, operand_types)
        call = func.CallOp(declaration.sym_name.data, operands, [t.tensor_type for t in results])
        _record_sources(call, results)
        if not view and any(t.max_shape is not None for t in results):
            call.attributes[MAX_SHAPES_ATTR] = ArrayAttr(
                DenseArrayBase.from_list(i64, t.max_shape or t.shape) for t in results
            )
        block.add_op(call)
        return call.results

    def _control_flow(
        self,
        subgraph: TfliteSubgraph,
        operator: TfliteOperator,
        operands: Sequence[SSAValue],
        block: Block,
        path: tuple[int, ...],
    ) -> Sequence[SSAValue]:
        """``IF`` as `scf.if`, ``WHILE`` as `scf.while`: the subgraphs they
        run become regions that use the operator's operands directly."""
        where = f"{operator.where}" + (
            f" in subgraph {subgraph.index}" if subgraph.index != self.root else ""
        )
        if self.subgraphs is None:
            raise TfliteImportError(f"{where} runs other subgraphs, which this import cannot read")
        result_types = [subgraph.tensors[t].tensor_type for t in operator.outputs]
        if any(not isinstance(t, TensorType) or not t.has_static_shape() for t in result_types):
            raise TfliteImportError(
                f"{where}: its outputs {[str(t) for t in result_types]} need static shapes"
            )
        if operator.name == "IF":
            return self._if(subgraph, operator, operands, result_types, block, path, where)
        return self._while(subgraph, operator, operands, result_types, block, path, where)

    def _branch(
        self,
        index: int,
        role: str,
        arguments: Sequence[SSAValue],
        expected: Sequence[Attribute] | int,
        block: Block,
        path: tuple[int, ...],
        where: str,
    ) -> list[SSAValue]:
        """Emit subgraph ``index`` into ``block`` with ``arguments`` as its
        inputs; its outputs, checked against the ``expected`` types (or only
        counted)."""
        assert self.subgraphs is not None
        if index in path:
            raise TfliteImportError(
                f"{where}: its {role} is subgraph {index}, which is already running "
                f"(subgraphs {' -> '.join(map(str, (*path, index)))}): recursion is not supported"
            )
        try:
            branch = self.subgraphs(index)
        except TfliteImportError as error:
            raise TfliteImportError(f"{where}: its {role}: {error}") from None
        if len(branch.inputs) != len(arguments):
            raise TfliteImportError(
                f"{where}: its {role} (subgraph {index}) takes {len(branch.inputs)} inputs, "
                f"it is given {len(arguments)}"
            )
        values: dict[int, SSAValue] = {}
        for position, (tensor_index, argument) in enumerate(zip(branch.inputs, arguments)):
            tensor = branch.tensors[tensor_index]
            if tensor.tensor_type != argument.type:
                raise TfliteImportError(
                    f"{where}: input {position} '{tensor.name}' of its {role} (subgraph "
                    f"{index}) is {tensor.tensor_type}, it is given {argument.type}"
                )
            values[tensor_index] = argument
        outputs = self.emit(
            branch, block, values, fold_constants(branch, values=False), (*path, index)
        )
        count = expected if isinstance(expected, int) else len(expected)
        if len(outputs) != count:
            raise TfliteImportError(
                f"{where}: its {role} (subgraph {index}) has {len(outputs)} outputs, "
                f"{count} expected"
            )
        for position, (value, wanted) in enumerate(
            zip(outputs, () if isinstance(expected, int) else expected)
        ):
            if value.type != wanted:
                name = branch.tensors[branch.outputs[position]].name
                raise TfliteImportError(
                    f"{where}: output {position} '{name}' of its {role} (subgraph {index}) "
                    f"is {value.type}, expected {wanted}"
                )
        return outputs

    def _if(
        self,
        subgraph: TfliteSubgraph,
        operator: TfliteOperator,
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        block: Block,
        path: tuple[int, ...],
        where: str,
    ) -> Sequence[SSAValue]:
        if not operands:
            raise TfliteImportError(f"{where} has no condition input")
        condition = _one_bool(operands[0], block, f"{where}: condition")
        regions: list[Region] = []
        for role, key in (
            ("then branch", "ThenSubgraphIndex"),
            ("else branch", "ElseSubgraphIndex"),
        ):
            branch_block = Block()
            outputs = self._branch(
                int(operator.options.get(key, -1)),
                role,
                operands[1:],
                result_types,
                branch_block,
                path,
                where,
            )
            branch_block.add_op(scf.YieldOp(*outputs))
            regions.append(Region(branch_block))
        if_op = scf.IfOp(condition, result_types, regions[0], regions[1])
        block.add_op(if_op)
        return if_op.results

    def _while(
        self,
        subgraph: TfliteSubgraph,
        operator: TfliteOperator,
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        block: Block,
        path: tuple[int, ...],
        where: str,
    ) -> Sequence[SSAValue]:
        operand_types = [o.type for o in operands]
        if list(operand_types) != list(result_types):
            raise TfliteImportError(
                f"{where}: its inputs {[str(t) for t in operand_types]} and outputs "
                f"{[str(t) for t in result_types]} differ; a loop carries one type each"
            )
        condition_index = int(operator.options.get("CondSubgraphIndex", -1))
        body_index = int(operator.options.get("BodySubgraphIndex", -1))
        trips = self._trip_count(subgraph, operator, condition_index, body_index)
        if trips is not None:
            body = Block(arg_types=[IndexType(), *operand_types])
            body.args[0].name_hint = "iteration"
            for argument, operand in zip(body.args[1:], operands):
                argument.name_hint = operand.name_hint
            outputs = self._branch(
                body_index, "body", body.args[1:], result_types, body, path, where
            )
            body.add_op(scf.YieldOp(*outputs))
            return counted_for(trips, "trips", operands, body, block)
        before = Block(arg_types=operand_types)
        after = Block(arg_types=operand_types)
        for argument in (*before.args, *after.args):
            argument.name_hint = operands[argument.index].name_hint
        (condition,) = self._branch(
            condition_index,
            "condition",
            before.args,
            1,
            before,
            path,
            where,
        )
        flag = _one_bool(condition, before, f"{where}: the output of its condition")
        before.add_op(scf.ConditionOp(flag, *before.args))
        outputs = self._branch(
            body_index,
            "body",
            after.args,
            result_types,
            after,
            path,
            where,
        )
        after.add_op(scf.YieldOp(*outputs))
        while_op = scf.WhileOp(operands, result_types, Region(before), Region(after))
        block.add_op(while_op)
        return while_op.results

    def _trip_count(
        self, subgraph: TfliteSubgraph, operator: TfliteOperator, condition: int, body: int
    ) -> int | None:
        """The number of times the ``WHILE`` runs its body when that is known
        at import time, else ``None``: its condition subgraph is one
        comparison of a loop variable with a constant, the variable starts
        at a constant and the body adds (or subtracts) a constant to it. The
        loop is then run on that variable alone, in its own dtype, as TFLite
        would (at most ``MAX_FOLDED_TRIPS`` times)."""
        assert self.subgraphs is not None
        if condition in (subgraph.index, body) or body == subgraph.index:
            return None  # the recursion check of _branch reports these
        try:
            test, step = self.subgraphs(condition), self.subgraphs(body)
        except TfliteImportError:
            return None
        compare = _single_operator(test)
        if (
            compare is None
            or compare.name not in _COMPARISONS
            or len(compare.inputs) != 2
            or tuple(compare.outputs) != tuple(test.outputs)
        ):
            return None
        sides = [_loop_variable(test, t) for t in compare.inputs]
        constants = [constant_data(test.tensors[t]) for t in compare.inputs]
        if sorted(s is None for s in sides) != [False, True]:
            return None
        position = next(s for s in sides if s is not None)
        limit = next((c for c in constants if c is not None), None)
        if limit is None or position >= len(operator.inputs) or position >= len(step.outputs):
            return None
        start = constant_data(subgraph.tensors[operator.inputs[position]])
        update = next((op for op in step.operators if step.outputs[position] in op.outputs), None)
        if start is None or update is None or update.name not in ("ADD", "SUB"):
            return None
        if update.options.get("FusedActivationFunction", 0) not in (0, "NONE"):
            return None
        operands = list(update.inputs)
        if len(operands) != 2 or _loop_variable(step, operands[0]) != position:
            return None
        increment = constant_data(step.tensors[operands[1]])
        if increment is None or start.size != 1 or limit.size != 1 or increment.size != 1:
            return None
        value = start.reshape(())
        advance = np.add if update.name == "ADD" else np.subtract
        holds = _COMPARISONS[compare.name]
        trips = 0
        while bool(holds(*(value if s is not None else limit.reshape(()) for s in sides))):
            if trips == MAX_FOLDED_TRIPS:
                return None
            value = advance(value, increment.reshape(())).astype(start.dtype)
            trips += 1
        return trips


MAX_FOLDED_TRIPS = 1 << 20
"""Trip counts of ``WHILE`` loops up to this are folded (an `scf.for`);
longer ones stay `scf.while`."""

_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "LESS": np.less,
    "LESS_EQUAL": np.less_equal,
    "GREATER": np.greater,
    "GREATER_EQUAL": np.greater_equal,
    "NOT_EQUAL": np.not_equal,
}


def _single_operator(subgraph: TfliteSubgraph) -> TfliteOperator | None:
    """The subgraph's one operator, when it has exactly one."""
    return subgraph.operators[0] if len(subgraph.operators) == 1 else None


def _loop_variable(subgraph: TfliteSubgraph, tensor_index: int) -> int | None:
    """The position of ``tensor_index`` among the subgraph's inputs (a
    loop variable), or ``None``."""
    inputs = list(subgraph.inputs)
    return inputs.index(tensor_index) if tensor_index in inputs else None


def _one_bool(value: SSAValue, block: Block, what: str) -> SSAValue:
    """The one element of ``value``, a bool tensor, read with `tensor.extract`."""
    if (
        not isinstance(value.type, TensorType)
        or value.type.get_element_type() != i1
        or prod(value.type.get_shape()) != 1
    ):
        raise TfliteImportError(f"{what} is {value.type}; it needs one bool element")
    indices: list[SSAValue] = []
    if value.type.get_shape():
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        block.add_op(zero)
        indices = [zero.result] * len(value.type.get_shape())
    extract = ExtractOp(value, indices, i1)
    block.add_op(extract)
    return extract.result


def _is_view(operator: TfliteOperator, tensors: Sequence[TfliteTensor]) -> bool:
    """Is ``operator`` imported as a view? `RESHAPE`, `SQUEEZE` and
    `EXPAND_DIMS` are, unless a result has two dynamic dims: a view's shape
    function derives one dim from the element count, so those copy instead
    (a kernel whose shape function runs it)."""
    return operator.name in VIEW_OPS and all(
        tensors[t].shape.count(-1) <= 1 for t in operator.outputs
    )


def _operands_of(operator: TfliteOperator, tensors: Sequence[TfliteTensor]) -> list[int]:
    """The tensors an operator's call takes: a view only its data."""
    present = [t for t in operator.inputs if t != -1]
    return present[:1] if _is_view(operator, tensors) else present


def _record_sources(call: func.CallOp, tensors: Sequence[TfliteTensor]) -> None:
    """Each result's model tensor name and index, for reports (`memory.source_names`)."""
    call.attributes[SOURCE_NAMES_ATTR] = ArrayAttr(StringAttr(t.name) for t in tensors)
    call.attributes[SOURCE_IDS_ATTR] = DenseArrayBase.from_list(i64, [t.index for t in tensors])


@dataclass(frozen=True)
class _Variable:
    """A resource variable: its global's symbol and the constant that initialises it."""

    symbol: str
    value: TfliteTensor


def _variable_key(operator: TfliteOperator) -> tuple[str, str]:
    """A ``VAR_HANDLE``'s variable: (container, shared name), as TFLite keys it."""
    return (str(operator.options.get("Container", "")), str(operator.options.get("SharedName", "")))


def _key_text(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


INPUT_COPY = "INPUT_COPY"
"""The pseudo-operator ``inputs_in_arena`` adds: copies an input into the arena."""


def parse_upper_bound(spec: str, option: str = "--upper-bound") -> tuple[tuple[str, int], int]:
    """``INPUT:AXIS=N`` (a bound on a dynamic dim of a subgraph input, given
    as ``option``) as ``((input, axis), N)``; the input name may itself
    contain ``:``."""
    target, sep, value = spec.rpartition("=")
    name, colon, axis = target.rpartition(":")
    try:
        bound, axis_number = int(value), int(axis)
    except ValueError:
        sep = ""
        bound = axis_number = 0
    if not sep or not colon or not name or bound <= 0 or axis_number < 0:
        raise TfliteImportError(
            f"{option} '{spec}' must look like INPUT:AXIS=N (N a positive integer), "
            "e.g. serving_default_x:0:0=64 for axis 0 of input 'serving_default_x:0'"
        )
    return (name, axis_number), bound


def shapes_at(
    model_bytes: bytes,
    subgraph: TfliteSubgraph,
    input_shapes: Mapping[str, tuple[int, ...]],
    upper_bounds: Mapping[tuple[str, int], int],
) -> dict[int, tuple[int, ...]]:
    """Every tensor's shape (by index) with the inputs at ``input_shapes``
    (a ``-1`` dim keeps the model's) and each bounded input dim at its
    bound, from TFLite's own shape propagation (ai-edge-litert resizes the
    inputs and prepares every operator). Each fixed or bounded dim must be
    one the model leaves dynamic (``shape_signature`` -1) of an input of
    subgraph 0."""
    inputs = {subgraph.tensors[t].name: subgraph.tensors[t] for t in subgraph.inputs}
    listed = ", ".join(f"{name} {list(t.signature or t.shape)}" for name, t in inputs.items())
    for name, dims in input_shapes.items():
        tensor = inputs.get(name)
        if tensor is None:
            raise TfliteImportError(
                f"--input-shape names '{name}', which is not an input of subgraph "
                f"{subgraph.index} (inputs: {listed})"
            )
        signature = tensor.signature or tensor.shape
        if len(dims) != len(signature):
            raise TfliteImportError(
                f"--input-shape {name}={_dims_text(dims)}: input '{name}' {list(signature)} "
                f"has {len(signature)} dims, not {len(dims)}"
            )
        for axis, (size, model_size) in enumerate(zip(dims, signature)):
            if size != -1 and model_size != -1 and size != model_size:
                raise TfliteImportError(
                    f"--input-shape {name}={_dims_text(dims)}: axis {axis} of input '{name}' "
                    f"{list(signature)} is {model_size} in the model; only its -1 dims "
                    "(shape_signature) can be set"
                )
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
        fixed = input_shapes.get(name)
        if fixed is not None and fixed[axis] != -1:
            raise TfliteImportError(
                f"--upper-bound {name}:{axis}={bound}: --input-shape fixes axis {axis} of "
                f"input '{name}' to {fixed[axis]} (give '?' there to bound it)"
            )
    option = "--upper-bound" if not input_shapes else "--input-shape"
    if subgraph.index != 0:
        raise TfliteImportError(f"{option} applies to subgraph 0 only")
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as error:
        raise TfliteImportError(
            f"{option} sizes the model with ai-edge-litert (pip install ai-edge-litert)"
        ) from error
    try:
        interpreter = Interpreter(
            model_content=model_bytes,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        for detail in interpreter.get_input_details():
            tensor = subgraph.tensors[detail["index"]]
            fixed = input_shapes.get(tensor.name, (-1,) * len(tensor.shape))
            shape = [
                fixed[axis] if fixed[axis] != -1 else upper_bounds.get((tensor.name, axis), size)
                for axis, size in enumerate(tensor.shape)
            ]
            interpreter.resize_tensor_input(detail["index"], shape, strict=True)
        interpreter.allocate_tensors()
        _size_dynamic_tensors(interpreter)
        return {
            int(detail["index"]): tuple(int(d) for d in detail["shape"])
            for detail in interpreter.get_tensor_details()
        }
    except (RuntimeError, ValueError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        at = "its upper bounds" if not input_shapes else "the given --input-shape"
        raise TfliteImportError(f"cannot size the model at {at}: {first}") from error


def _check_view_sizes(operator: TfliteOperator, data: TfliteTensor, result: TfliteTensor) -> None:
    """A view's result has its data's elements. Where the model records
    sizes that disagree, they are placeholders TFLite replaces when it runs
    the model (tensors whose shape is computed from other tensors' values,
    ``shape_signature`` -1): sizing the model finds the real ones."""
    if prod(data.shape) == prod(result.shape):
        return
    raise TfliteImportError(
        f"{operator.where}: tensor {data.index} '{data.name}' {list(data.shape)} has "
        f"{prod(data.shape)} elements but its result, tensor {result.index} '{result.name}' "
        f"{list(result.shape)}, has {prod(result.shape)}: the model records placeholder sizes "
        "(shape_signature "
        f"{list(result.signature or result.shape)}); give the inputs' sizes with --input-shape"
    )


def _size_dynamic_tensors(interpreter: Any) -> None:
    """Runs ``interpreter`` once on zeros: TFLite sizes a tensor whose shape
    is computed from other tensors' values (BirdNET's framing: a
    ``STRIDED_SLICE`` whose end is ``SHAPE`` arithmetic) only when the
    operator runs; ``allocate_tensors`` leaves it at the size the model
    records (a placeholder). Shapes computed from the inputs' sizes come
    out exact; a run that fails keeps the prepared sizes."""
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    try:
        interpreter.invoke()
    except (RuntimeError, ValueError):
        pass


def _dims_text(dims: Sequence[int]) -> str:
    return "x".join("?" if d == -1 else str(d) for d in dims)


def size_subgraph(
    model_bytes: bytes,
    subgraph: TfliteSubgraph,
    input_shapes: Mapping[str, tuple[int, ...]],
    upper_bounds: Mapping[tuple[str, int], int],
) -> TfliteSubgraph:
    """``subgraph`` with the input dims ``input_shapes`` fixes set, every
    tensor at the shape TFLite gives it then (``shapes_at``); with
    ``upper_bounds``, every dim the model leaves dynamic and no input shape
    fixes stays dynamic, bounded (``_with_dynamic_dims``)."""
    shapes = shapes_at(model_bytes, subgraph, input_shapes, upper_bounds)
    tensors = list(subgraph.tensors)
    for name, dims in input_shapes.items():
        tensor = next(
            subgraph.tensors[t] for t in subgraph.inputs if subgraph.tensors[t].name == name
        )
        signature = tuple(
            size if size != -1 else model
            for size, model in zip(dims, tensor.signature or tensor.shape)
        )
        shape = tuple(size if size != -1 else model for size, model in zip(dims, tensor.shape))
        tensors[tensor.index] = replace(tensor, shape=shape, signature=signature)
    if not upper_bounds:
        for tensor in tensors:
            if tensor.data is None and -1 in tensor.signature:
                # TFLite's own sizes at the fixed inputs: static from here on.
                shape = shapes.get(tensor.index, tensor.shape)
                tensors[tensor.index] = replace(tensor, shape=shape, signature=shape)
        return replace(subgraph, tensors=tensors)
    return _with_dynamic_dims(replace(subgraph, tensors=tensors), shapes)


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


SubgraphReader = Callable[[int], TfliteSubgraph]
"""Reads subgraph N of the model (the branches and loop parts `IF` and
`WHILE` run)."""


def import_subgraph(
    subgraph: TfliteSubgraph,
    inputs_in_arena: bool = False,
    bound_shapes: Mapping[int, tuple[int, ...]] | None = None,
    subgraphs: SubgraphReader | None = None,
) -> ModuleOp:
    """The value-semantic module of ``subgraph``.

    With ``inputs_in_arena``, each input is first copied by a call to
    ``@tfl.INPUT_COPY`` and the operators read the copy: the input then
    takes planned workspace from the start to its last use, as in TFLite's
    and TFLM's arenas (where the application writes the input), instead of
    being the caller's memory for the whole call.

    With ``bound_shapes`` (``shapes_at``), the dims the model leaves dynamic
    stay dynamic, each call records its results' shapes there in
    `memory.max_shapes`, and each kernel with a dynamic result names a
    shape function.

    ``subgraphs`` reads the subgraphs `IF` and `WHILE` run (without it they
    are refused).
    """
    if bound_shapes is not None:
        subgraph = _with_dynamic_dims(subgraph, bound_shapes)
    emitter = _Emitter(root=subgraph.index, subgraphs=subgraphs)
    tensors = subgraph.tensors
    folded = fold_constants(subgraph, values=False)
    inputs = [t for t in subgraph.inputs if t not in folded.constants]
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
            _record_sources(call, [tensor])
            values[tensor_index] = call.results[0]
            block.add_op(call)
    returned = emitter.emit(subgraph, block, values, folded, (subgraph.index,))
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
    return ModuleOp([*emitter.globals, main, *emitter.kernels.declarations])


def import_tflite(
    source: str | Path | bytes,
    subgraph: int = 0,
    inputs_in_arena: bool = False,
    upper_bounds: Mapping[tuple[str, int], int] | None = None,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> ModuleOp:
    """Load the model at ``source`` (a path or the file's bytes) and import
    subgraph ``subgraph`` (see ``import_subgraph``), with the input shapes
    ``input_shapes`` fixes and the dynamic input dims in ``upper_bounds``
    (``(input name, axis) -> bound``) kept dynamic (``size_subgraph``)."""
    model, label = load_model(source)
    read = read_subgraph(model, label, subgraph)
    if upper_bounds or input_shapes or records_placeholder_sizes(read):
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        read = size_subgraph(data, read, input_shapes or {}, upper_bounds or {})
    return import_subgraph(read, inputs_in_arena, subgraphs=subgraph_reader(model, label))


def records_placeholder_sizes(subgraph: TfliteSubgraph) -> bool:
    """Does ``subgraph`` (the one TFLite runs first) have tensors whose sizes
    the model leaves to be computed (-1 in their ``shape_signature``)? Then
    the sizes it records may be placeholders: TFLite recomputes every size
    from the inputs' when it prepares the model, and memplan sizes it the
    same way (``size_subgraph``, at the inputs' recorded sizes when no
    ``--input-shape`` or ``--upper-bound`` gives others), no flag needed."""
    return subgraph.index == 0 and any(-1 in (t.signature or ()) for t in subgraph.tensors)


def subgraph_reader(model: Any, label: str) -> SubgraphReader:
    """Reads (once each) the subgraphs of ``model``."""
    return cache(lambda index: read_subgraph(model, label, index))


def global_data(
    module: ModuleOp, subgraph: TfliteSubgraph, subgraphs: SubgraphReader | None = None
) -> dict[str, np.ndarray]:
    """The data of each constant global of ``module`` (imported from
    ``subgraph``; ``subgraphs`` reads those its `IF` and `WHILE` run), by
    symbol: DEQUANTIZE and DENSIFY outputs computed."""
    folded: dict[int, dict[int, np.ndarray]] = {}
    data: dict[str, np.ndarray] = {}
    for op in module.ops:
        index = op.attributes.get(TFLITE_ATTR_PREFIX + "tensor")
        if not isinstance(op, memref.GlobalOp) or not isinstance(index, IntegerAttr):
            continue
        owner = op.attributes.get(TFLITE_ATTR_PREFIX + "subgraph")
        number = owner.value.data if isinstance(owner, IntegerAttr) else subgraph.index
        if number not in folded:
            if number == subgraph.index:
                folded[number] = fold_constants(subgraph).values
            else:
                folded[number] = fold_constants(subgraphs(number)).values if subgraphs else {}
        array = folded[number].get(index.value.data)
        if array is not None:
            data[op.sym_name.data] = array
    return data
