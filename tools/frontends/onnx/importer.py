"""ONNX models as value-semantic IR: the library behind `memplan-import-onnx`.

Usage::

    memplan-import-onnx MODEL.onnx [-o OUT.mlir] [--input-shape NAME=1x3x224x224 ...]
                        [--upper-bound SYMBOL=N | INPUT:AXIS=N ...]
                        [--input-value NAME=V[,V...] ...] [--weights external|inline]

The output is the form `manifest-alloc` takes: one `func.call` per ONNX node
to a kernel declaration, graph inputs as arguments and graph outputs as
results. It is also what `memplan-run` executes.

What the importer does, in order (steps 1 to 3 in ``model.py``):

1. Loads the model (a file that is not an ONNX model is an error) and fixes
   the graph inputs' shapes from `--input-shape`. A dim stored as
   `dim_value: -1` (older exporters) is an unnamed dynamic dim.
2. Folds constants: initializers, `Constant`, `ConstantOfShape` and every
   other deterministic node whose inputs are all constant are evaluated with
   ONNX's reference evaluator. They become `memref.global "private" constant`
   symbols named after the tensor (never workspace). By default the globals
   carry no initial value: the data stays in the ONNX file (`memplan-run
   --weights-from` reads it back); `--weights inline` embeds it as `dense<>`.
   `ConstantOfShape` outputs are kept as zero-copy splats, so the "light"
   test models (whose weights are all `ConstantOfShape`) import in
   milliseconds. Nodes inside `If` branches fold too (reading constants of
   their branch or of an enclosing graph). An `If` whose condition folds is
   replaced by the branch it takes. A `Shape` or `Size` whose input has a
   static inferred shape folds, at any opset, and folding and inference
   repeat until nothing changes: exporters compute `Reshape` targets and
   anchors from shapes, and test shapes with `If` (PyTorch's `squeeze` on a
   dim that may be 1, whose branches differ in rank). `--input-value
   NAME=V[,V...]` makes a graph input an initializer first, so what it
   decides folds too.
3. Runs ONNX shape inference (strict) on what is left. Every tensor must get
   a static shape and a supported element type, or the import fails naming
   the tensor. With upper bounds (``--upper-bound SYMBOL=N``, for symbolic
   dims of the graph inputs; ``INPUT:AXIS=N`` names a dim without a symbol) a dim may stay dynamic when a second inference,
   with each bounded symbol at its bound, gives it a static size: that size
   is its bound (sizes are assumed to grow with the symbols; a run checks).
   A size that depends on data but has a bound is dynamic with that bound,
   static inputs or not: ``Unique``'s unique count (``Y`` along ``axis`` or
   flat, ``indices``, ``counts``) is at most its input's dim along ``axis``
   (its element count without one); its ``inverse_indices`` is static.
4. Emits IR. Each distinct (op type, domain, attributes, operand types)
   signature gets one kernel declaration
   `func.func private @onnx.Conv(...) -> ...` carrying `memory.onnx.op_type`,
   `memory.onnx.domain`, `memory.onnx.opset` and one `memory.onnx.<attr>` per
   ONNX attribute. Layout-preserving ops (`Reshape`, `Flatten`, `Squeeze`,
   `Unsqueeze`, `Identity`, inference-mode `Dropout`) are marked
   `memory.view`: their result aliases their first operand.

Choices where ONNX leaves room:

* Graph inputs that have an initializer (IR version < 4 lists every
  initializer as an input) are constants, not arguments.
* Optional outputs that nothing reads (e.g. `Dropout`'s mask, the training
  outputs of `BatchNormalization`) are dropped from the node, so the kernel
  does not allocate them.
* Optional inputs or outputs left empty in the middle of a node's list are
  recorded as `memory.onnx.input_slots` / `memory.onnx.output_slots` (the
  ONNX positions of the operands that are present).
* ONNX attributes map to builtin attributes: INT -> `i64`, FLOAT -> `f32`,
  STRING -> string, INTS -> `array<i64: ...>`, FLOATS -> `array<f32: ...>`,
  STRINGS -> `["..."]`, TENSOR -> `dense<...>`.
* An `If` decided at run time becomes `scf.if`: `tensor.extract` reads the
  condition's one bool element, each branch graph becomes a region of
  kernel calls ending in `scf.yield` of its outputs, and values of the
  enclosing graphs are used directly. Constants a branch defines are read at
  the top of that branch. Each output needs one static shape: when the
  branches disagree, the error names both.
* A ``Loop`` whose trip count and condition fold and whose body passes its
  condition through (or computes a constant true) becomes `scf.for` from 0
  to the trip count, its carried values the iteration arguments; the body's
  iteration number, when read, is ``tensor.from_elements`` of the induction
  variable's ``arith.index_cast``. Each carried value keeps its initial
  value's static type (the error names both shapes otherwise). Each scan
  output (a body value stacked over the iterations) is carried as a
  ``[trips, ...]`` tensor starting at zeros, and the body writes its row
  ``i`` with an in-place ``ScatterND`` (index ``tensor<1x1xi64>`` from the
  iteration number, the row an ``Unsqueeze`` view of the value): one buffer,
  no copy per iteration.
* A ``Loop`` whose trip count or condition is known only at run time (or
  whose body computes its condition) becomes `scf.while`, as the TFLite
  importer makes ``WHILE``: it carries the tensors, then the iteration
  number (`i64`) and the condition (`i1`); its first region decides ``i <
  M and cond`` with `arith.cmpi` / `arith.andi` (the trip count and the
  condition read with `tensor.extract`, or constants when they fold) and
  forwards its arguments, its second runs the body and yields the next
  values, ``i + 1`` and the body's condition. Without a condition input the
  body's condition is ignored (ONNX's rule); without either input the loop
  never stops and is rejected. A scan output of such a loop has one row per
  iteration, a length that depends on data with no bound: rejected.
* A node holding a graph that is not control flow (FlexAttention's
  ``score_mod``, run inside the kernel) is an ordinary kernel call; each
  GRAPH attribute is kept as ``{onnx_graph = "<base64 GraphProto>"}``,
  which ``decode_attribute`` (and so memplan-run) hands back to ONNX. One
  whose graph reads a tensor of the enclosing graph (an operand the plan
  would not see) is rejected.
* ``Scan`` (opset 9+, with every scan axis 0 and every direction forward;
  others are rejected naming the attribute) becomes the same `scf.for`, its
  trip count the scan inputs' first dim: the state variables are carried,
  iteration ``i`` reads row ``i`` of each scan input with ``Gather`` (axis
  0), and the scan outputs stack as for ``Loop``. Before opset 9 ``Scan``
  has a batch dim first on every input and output: an outer `scf.for` over
  the batch rows runs that loop on row ``b`` of each input (``Gather``) and
  writes its results into row ``b`` of the outputs (``ScatterND`` in
  place); ``sequence_lens`` and reverse ``directions`` are rejected.
* Dynamic results: each call records its results' shapes at the bounds
  in `memory.max_shapes`; each kernel with a dynamic result names a shape
  function (`memory.shape_fn = @<kernel>.shape`). For a view it has a
  body: its one dynamic dim is the source's element count over the result's
  static dims (a view with more than one dynamic dim is imported as an
  ordinary, copying kernel). For any other node it is a declaration that
  the runtime provides (`memplan-run` evaluates the node). An in-place
  pair is kept on a dynamic result when the operand has the result's shape
  at run time: ONNX's shape inference gives both the same dims (a symbol
  of a graph input, or one the inference made up for a size it derived;
  symbols the model itself declares elsewhere are not taken at their
  word: `model.run_time_types`), or the other operands are static, so
  none can broadcast the result past the operand's size. Two operands of
  one printed type may still differ (`tensor<1x8x?x?xf32>` of H and of
  P): such a pair is dropped (`memplan-run` checks the promise).
* Ranges: with `--upper-bound` (and `--lower-bound`), `@main` records
  `memory.dim_ranges` and `memory.dim_symbols` (where each ranged dim is
  read: the first input and axis carrying it), and each call with dynamic
  results gets `memory.dim_exprs`, its dims as size expressions of the
  ranged dims, when every dim has one that matches this importer's shape
  inference at both ends of the ranges (`dim_exprs`: ONNX Runtime's
  symbolic shape inference, loaded only then).
* Element types: every ONNX type with a fixed size. f16/f32/f64, `bf16`,
  `f8E4M3FN`/`f8E4M3FNUZ`/`f8E5M2`/`f8E5M2FNUZ`/`f8E8M0FNU` for the
  FLOAT8 types, `f4E2M1FN`, signless i2/i4/i8..i64 for ONNX's signed
  integers, `ui2`/`ui4`/`ui8`..`ui64` for its unsigned ones, `i1` for
  BOOL, `complex<f32>`/`complex<f64>`. Sub-byte types take one byte an
  element (``prod(shape) * ceil(bits / 8)``, the design's rule), not the
  packed size ONNX gives their serialized data (two INT4 per byte): MLIR's
  memrefs and ml_dtypes' arrays, which `memplan-run` computes on, hold one
  element per byte, so that is what a kernel indexes; the cost is 2x (4x
  for 2-bit) bytes against a runtime that keeps them packed. STRING (no
  fixed size) and sequence, optional and map types are rejected.
* xDSL 0.74 has no pretty syntax for `memref.global`, so globals print in the
  generic form `"memref.global"() <{sym_name = "w", ..., initial_value,
  constant}>`; each records its ONNX tensor name as `memory.onnx.name`.
* `@main` records the ONNX names of its inputs and outputs as
  `memory.onnx.inputs` / `memory.onnx.outputs`.

The inverse mapping: `kernels.OnnxKernelResolver` turns a kernel
declaration back into a one-node ONNX model run by the reference evaluator
(for `memplan-run`), and `constant_values` here recomputes the folded
constants.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from xdsl.dialects import arith, bufferization, func, memref, scf, tensor
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from memplan.dialect.arrays import dense_array, numpy_dtype
from memplan.dialect.ops import (
    DIM_EXPRS_ATTR,
    DIM_RANGES_ATTR,
    DIM_SYMBOLS_ATTR,
    MAX_SHAPES_ATTR,
)
from memplan.dialect.size_expr import parse_size_expr
from memplan.tools.frontends.common import (
    DimRanges,
    KernelDeclarations,
    UniqueNames,
    counted_for,
    dim_ranges,
    has_dynamic_shape,
    parse_input_shape,
    sanitize_name,
)
from memplan.tools.frontends.onnx.model import (
    MAX_LOOP_TRIPS,
    FoldedConstants,
    GraphPath,
    OnnxImportError,
    TensorInfo,
    check_model,
    check_reshapes,
    describe_node,
    element_type_for,
    fold_constants,
    graph_inputs,
    has_subgraph,
    live_nodes,
    load_model,
    names_read_inside,
    node_domain,
    onnx_elem_type,
    onnx_module,
    opset_versions,
    parse_bound,
    parse_input_value,
    prepare_model,
    subgraphs,
    symbolic_dims,
    tensor_array,
    tensor_info,
    type_text,
)
from memplan.tools.frontends.onnx.shapes import (
    at_upper_bounds,
    constant_trip_count,
    data_bound_types,
    infer_types,
    run_time_types,
)

WeightsMode = Literal["external", "inline"]

ONNX_ATTR_PREFIX = "memory.onnx."

VIEW_OPS: frozenset[str] = frozenset(
    {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
)
"""ONNX ops whose single output has the bytes of their first input."""

INPLACE_OPS: frozenset[str] = frozenset(
    {
        "Relu",
        "Sigmoid",
        "Tanh",
        "Clip",
        "LeakyRelu",
        "Elu",
        "Selu",
        "HardSigmoid",
        "HardSwish",
        "Softplus",
        "Softsign",
        "ScatterND",
        "Neg",
        "Abs",
        "Exp",
        "Log",
        "Sqrt",
        "Reciprocal",
        "Erf",
        "Floor",
        "Ceil",
        "Round",
        "Sign",
        "Not",
        "PRelu",
        "BatchNormalization",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Max",
        "Min",
        "Sum",
        "Mean",
        "And",
        "Or",
        "Xor",
    }
)
"""Element-wise ops (each output element reads only the same element of its
operands): the output may take the bytes of an operand of its own type
(`memory.inplace`)."""

# ---------------------------------------------------------------------------
# ONNX attributes <-> builtin attributes
# ---------------------------------------------------------------------------


def dense_attr(array: np.ndarray, element_type: Attribute) -> DenseIntOrFPElementsAttr:
    """``array`` as a ``dense<...>`` attribute of ``element_type`` (bit-exact;
    ``memdialect.arrays.dense_array`` is the inverse)."""
    contiguous = np.asarray(array, dtype=numpy_dtype(element_type), order="C")
    tensor_type = TensorType(element_type, contiguous.shape)
    return DenseIntOrFPElementsAttr(cast(Any, tensor_type), BytesAttr(contiguous.tobytes()))


GRAPH_KEY = "onnx_graph"
"""A GRAPH attribute of a kernel (one the kernel runs itself, such as
FlexAttention's ``score_mod``) is ``{onnx_graph = "<base64 of the
serialized GraphProto>"}``."""


def encode_attribute(attribute: Any, where: str) -> Attribute:
    """One ONNX ``AttributeProto`` as a builtin attribute."""
    onnx = onnx_module()
    kind = onnx.AttributeProto
    match attribute.type:
        case kind.INT:
            return IntegerAttr(attribute.i, 64)
        case kind.FLOAT:
            return FloatAttr(attribute.f, f32)
        case kind.STRING:
            return StringAttr(attribute.s.decode("utf-8"))
        case kind.INTS:
            return DenseArrayBase.from_list(i64, list(attribute.ints))
        case kind.FLOATS:
            return DenseArrayBase.from_list(f32, list(attribute.floats))
        case kind.STRINGS:
            return ArrayAttr(StringAttr(s.decode("utf-8")) for s in attribute.strings)
        case kind.TENSOR:
            array = tensor_array(attribute.t, f"{where}: attribute '{attribute.name}'")
            element = element_type_for(attribute.t.data_type, f"{where}.{attribute.name}")
            return dense_attr(array, element)
        case kind.GRAPH:
            # A graph the kernel runs inside (FlexAttention's score_mod): the
            # planner never looks in, memplan-run hands it back to ONNX.
            encoded = base64.b64encode(attribute.g.SerializeToString()).decode("ascii")
            return DictionaryAttr({GRAPH_KEY: StringAttr(encoded)})
        case _:
            raise OnnxImportError(
                f"{where}: attribute '{attribute.name}' of type "
                f"{kind.AttributeType.Name(attribute.type)} is not supported"
            )


def decode_attribute(name: str, value: Attribute) -> Any:
    """The ``AttributeProto`` that ``encode_attribute`` turned into ``value``."""
    onnx = onnx_module()
    make = onnx.helper.make_attribute
    kind = onnx.AttributeProto
    if isinstance(value, IntegerAttr):
        return make(name, value.value.data, attr_type=kind.INT)
    if isinstance(value, FloatAttr):
        return make(name, value.value.data, attr_type=kind.FLOAT)
    if isinstance(value, StringAttr):
        return make(name, value.data, attr_type=kind.STRING)
    if isinstance(value, DenseArrayBase):
        values = list(value.get_values())
        is_int = isinstance(value.elt_type, IntegerType)
        return make(name, values, attr_type=kind.INTS if is_int else kind.FLOATS)
    if isinstance(value, ArrayAttr):
        strings = [s.data for s in value.data if isinstance(s, StringAttr)]
        return make(name, strings, attr_type=kind.STRINGS)
    if isinstance(value, DenseIntOrFPElementsAttr):
        tensor = onnx.numpy_helper.from_array(np.asarray(dense_array(value), order="C"))
        return make(name, tensor, attr_type=kind.TENSOR)
    encoded = value.data.get(GRAPH_KEY) if isinstance(value, DictionaryAttr) else None
    if isinstance(encoded, StringAttr):
        graph = onnx.GraphProto()
        graph.ParseFromString(base64.b64decode(encoded.data))
        return make(name, graph, attr_type=kind.GRAPH)
    raise ValueError(f"attribute {name} = {value} has no ONNX equivalent")


# ---------------------------------------------------------------------------
# IR emission
# ---------------------------------------------------------------------------


def _schema_outputs_optional(node: Any, opset: int) -> list[bool] | None:
    """Per formal output of ``node``'s schema: is it optional? ``None`` if unknown."""
    onnx = onnx_module()
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node_domain(node))
    except Exception:  # noqa: BLE001 - custom domains have no schema
        return None
    optional = onnx.defs.OpSchema.FormalParameterOption.Optional
    return [o.option == optional for o in schema.outputs]


def _is_view(node: Any, present_outputs: int, constants: Mapping[str, np.ndarray]) -> bool:
    if node_domain(node) != "" or node.op_type not in VIEW_OPS or present_outputs != 1:
        return False
    if node.op_type == "Dropout" and len(node.input) >= 3 and node.input[2]:
        training = constants.get(node.input[2])
        return training is not None and not bool(np.asarray(training).reshape(-1)[0])
    return True


def _slots(names: Sequence[str]) -> list[int] | None:
    """ONNX positions of the non-empty names, or ``None`` when they are 0..k-1."""
    positions = [i for i, n in enumerate(names) if n]
    return None if positions == list(range(len(positions))) else positions


@dataclass
class _Emitter:
    """Builds the module: globals, `@main`, kernel declarations."""

    weights: WeightsMode
    constants: Mapping[str, np.ndarray]
    symbols: UniqueNames = field(default_factory=UniqueNames)
    globals: list[memref.GlobalOp] = field(default_factory=list)
    kernel_names: UniqueNames = field(default_factory=UniqueNames)
    kernels: KernelDeclarations = field(init=False)

    def __post_init__(self) -> None:
        self.kernel_names.taken.add("main")
        self.symbols.taken.add("main")
        self.kernels = KernelDeclarations(self._kernel_name)

    def _kernel_name(self, base: str) -> str:
        """A kernel's symbol: unique among the kernels, and kept from the globals."""
        name = self.kernel_names.get(base)
        self.symbols.taken.add(name)
        return name

    def constant(self, name: str, info: TensorInfo, block: Block) -> SSAValue:
        """Declare the global for constant ``name`` and read it in ``block``."""
        symbol = self.symbols.get(sanitize_name(name))
        initial: Attribute = UnitAttr()
        if self.weights == "inline":
            array = np.asarray(self.constants[name])
            if array.size > 1 and all(stride == 0 for stride in array.strides):
                # A zero-copy splat (ConstantOfShape): one element, which
                # dense<> prints as a splat, instead of materialising it.
                one = np.asarray(array.flat[0], dtype=numpy_dtype(info.element_type))
                initial = DenseIntOrFPElementsAttr(
                    info.tensor_type, BytesAttr(one.reshape(1).tobytes())
                )
            else:
                initial = dense_attr(array, info.element_type)
        global_op = memref.GlobalOp.get(
            StringAttr(symbol), info.memref_type, initial, constant=UnitAttr()
        )
        global_op.attributes[ONNX_ATTR_PREFIX + "name"] = StringAttr(name)
        self.globals.append(global_op)
        get = memref.GetGlobalOp(symbol, info.memref_type)
        to_tensor = bufferization.ToTensorOp(get.memref, restrict=True)
        get.memref.name_hint = sanitize_name(name)
        to_tensor.tensor.name_hint = sanitize_name(name)
        block.add_ops([get, to_tensor])
        return to_tensor.tensor

    def declaration(
        self,
        node: Any,
        node_index: int,
        opset: int,
        operand_types: Sequence[Attribute],
        result_types: Sequence[Attribute],
        input_slots: list[int] | None,
        output_slots: list[int] | None,
        view: bool,
        same_shape_at_run_time: Sequence[bool] | None = None,
    ) -> func.FuncOp:
        """The kernel declaration for ``node``'s signature (created once).
        ``same_shape_at_run_time``: per operand, whether the model's symbols
        make its run-time shape the (one) result's (``inplace_operand``)."""
        where = describe_node(node, node_index)
        attributes: dict[str, Attribute] = {
            ONNX_ATTR_PREFIX + "op_type": StringAttr(node.op_type),
            ONNX_ATTR_PREFIX + "domain": StringAttr(node_domain(node)),
            ONNX_ATTR_PREFIX + "opset": IntegerAttr(opset, 64),
        }
        for attribute in node.attribute:
            key = ONNX_ATTR_PREFIX + attribute.name
            if attribute.name in RESERVED_ONNX_KEYS:
                raise OnnxImportError(
                    f"{where}: attribute '{attribute.name}' clashes with memplan's own '{key}'"
                )
            attributes[key] = encode_attribute(attribute, where)
        if input_slots is not None:
            attributes[ONNX_ATTR_PREFIX + "input_slots"] = DenseArrayBase.from_list(
                i64, input_slots
            )
        if output_slots is not None:
            attributes[ONNX_ATTR_PREFIX + "output_slots"] = DenseArrayBase.from_list(
                i64, output_slots
            )
        domain = node_domain(node)
        return self.kernels.declare(
            "onnx." + (f"{domain}." if domain else "") + node.op_type,
            attributes,
            operand_types,
            result_types,
            view=view,
            inplace_candidate=node.op_type in INPLACE_OPS and domain == "",
            same_shape_at_run_time=same_shape_at_run_time,
        )


def helper_node(op_type: str, inputs: list[str], name: str, **attributes: Any) -> Any:
    """An ONNX node the importer adds (its kernel declaration is made from it)."""
    return onnx_module().helper.make_node(op_type, inputs, ["out"], name=name, **attributes)


@dataclass(frozen=True)
class _ForLoop:
    """An ONNX ``Loop`` or ``Scan`` that becomes `scf.for`: names in its body."""

    where: str
    node: Any
    trips: int
    """Its trip count (``-1`` for a ``Loop`` that becomes `scf.while`)."""
    body: Any
    body_path: GraphPath
    carried_inputs: list[str]
    """Body inputs of the carried values."""
    carried_outputs: list[str]
    """Body outputs that give their next values."""
    scan_outputs: list[str]
    """Body outputs stacked over the iterations."""
    iteration: str | None = None
    """The body input holding the iteration number (``Loop``)."""
    slices: list[tuple[str, SSAValue]] = field(default_factory=list[tuple[str, SSAValue]])
    """(body input, tensor): row `i` of the tensor in iteration `i` (``Scan``)."""
    batched: bool = False
    """The node's outputs have a batch dim first (``Scan`` before opset 9),
    which the loop's values have not."""


def import_model(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    weights: WeightsMode = "external",
    upper_bounds: Mapping[str, int] | None = None,
    input_values: Mapping[str, Sequence[float]] | None = None,
    lower_bounds: Mapping[str, int] | None = None,
) -> ModuleOp:
    """The value-semantic module of ``model`` (a ``ModelProto``, not modified)."""
    return import_model_and_constants(
        model, input_shapes, weights, upper_bounds, input_values, lower_bounds
    )[0]


@dataclass(frozen=True)
class _NodePlan:
    """How one live node becomes a call."""

    index: int
    node: Any
    opset: int
    operands: list[str]
    """ONNX names of the call's operands (a view keeps only its data input)."""
    outputs: list[str]
    """The node's outputs, ``""`` where an optional output was dropped."""
    view: bool

    @property
    def results(self) -> list[str]:
        return [n for n in self.outputs if n]


def _plan_nodes(
    live: Sequence[tuple[int, Any]],
    opsets: Mapping[str, int],
    consumed: set[str],
    info_of: Callable[[str, str], TensorInfo],
    constants: Mapping[str, np.ndarray],
) -> list[_NodePlan]:
    plans: list[_NodePlan] = []
    for index, node in live:
        where = describe_node(node, index)
        domain = node_domain(node)
        if domain not in opsets:
            raise OnnxImportError(f"{where}: domain '{domain}' is not in the model's opset_import")
        opset = opsets[domain]
        outputs = list(node.output)
        optional = _schema_outputs_optional(node, opset)
        if optional is not None:
            outputs = [
                n if n in consumed or i >= len(optional) or not optional[i] else ""
                for i, n in enumerate(outputs)
            ]
        while outputs and not outputs[-1]:
            outputs.pop()
        operands = [n for n in node.input if n]
        if node.op_type == "Loop" and domain == "":
            # The trip count and the condition must fold: only the carried
            # values' initial tensors are operands of the scf.for.
            operands = list(node.input[2:])
        view = bool(operands) and _is_view(node, len([n for n in outputs if n]), constants)
        if view:
            source = info_of(operands[0], f"input of {where}")
            target = info_of(outputs[0], f"output of {where}")
            count = int(np.prod(source.bound_shape, dtype=np.int64))
            view = (
                source.element_type == target.element_type
                and count == int(np.prod(target.bound_shape, dtype=np.int64))
                # A dynamic view's one dynamic dim follows from the element count.
                and target.shape.count(-1) <= 1
            )
        if view:
            # The result type says everything the shape/axes inputs said.
            operands = operands[:1]
        plans.append(_NodePlan(index, node, opset, operands, outputs, view))
    return plans


def import_model_and_constants(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    weights: WeightsMode = "external",
    upper_bounds: Mapping[str, int] | None = None,
    input_values: Mapping[str, Sequence[float]] | None = None,
    lower_bounds: Mapping[str, int] | None = None,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """``import_model``, plus the folded constants by ONNX tensor name
    (the data of the globals, see ``global_data``). ``lower_bounds`` (each
    of a dim ``upper_bounds`` bounds) make ranges: see ``DimRanges``."""
    ranges = dim_ranges(lower_bounds or {}, upper_bounds or {})
    model = prepare_model(model, input_shapes or {}, upper_bounds, input_values)
    check_model(model)
    graph = model.graph
    opsets = opset_versions(model)
    folded = fold_constants(model)
    constants = folded.values
    inputs = graph_inputs(model)
    # With upper bounds, a symbolic dim stays dynamic and its bound is its
    # size in a second shape inference with the graph inputs at the bounds.
    bound_types: dict[str, Any] = {}
    if upper_bounds:
        bound_types = infer_types(at_upper_bounds(model, upper_bounds), folded).types
    # With ranges, the types at their lower ends too (see `never_one`).
    range_types: tuple[Mapping[str, Any], ...] = ()
    if lower_bounds:
        lower_types = infer_types(at_upper_bounds(model, ranges.lower), folded).types
        range_types = (lower_types, bound_types)
    for graph_input in inputs:
        dims = graph_input.type.tensor_type.shape.dim
        bounded = all(d.HasField("dim_value") or d.dim_param in (upper_bounds or {}) for d in dims)
        tensor_info(
            graph_input.name,
            graph_input.type,
            "graph input",
            bound_type=bound_types.get(graph_input.name) if bounded else None,
        )
    inferred = infer_types(model, folded)
    # Outputs sized by data within a bound (Unique's) are dynamic dims too.
    data_bound_types(model, inferred.types, bound_types)
    static_inputs = all(
        d.HasField("dim_value") and d.dim_value >= 0
        for i in inputs
        for d in i.type.tensor_type.shape.dim
    )
    deciding = inputs_deciding_ifs(model, folded)
    # An untaken branch may fail inference (silero-vad's 8 kHz branch on a
    # 16 kHz chunk): name the inputs whose value would drop it.
    branch_advice = (
        "an If's condition depends on input "
        + ", ".join(f"'{name}'" for name in deciding)
        + f": --input-value {deciding[0]}=V makes it take one branch"
        if deciding
        else ""
    )
    if inferred.problem is not None and branch_advice:
        inferred = type(inferred)(inferred.types, f"{inferred.problem}; {branch_advice}")
    custom = any(node_domain(node) for _, g in [((), graph), *subgraphs(graph)] for node in g.node)
    if inferred.problem is not None and not custom and "has inconsistent type" in inferred.problem:
        # Operand types an ONNX op does not accept (Add(float, int64)): the
        # non-strict run that follows a strict failure (for a project's own
        # ops, which have no shape function) would type it anyway.
        raise OnnxImportError(f"the model is invalid: ONNX shape inference: {inferred.problem}")
    check_reshapes(model, inferred.types, constants, branch_advice)

    def info_of(name: str, what: str, advice: str | None = None) -> TensorInfo:
        if name in constants:
            array = np.asarray(constants[name])
            if array.dtype == object:
                raise OnnxImportError(
                    f"tensor '{name}' ({what}) has unsupported element type STRING"
                )
            element = element_type_for(onnx_elem_type(array.dtype), name)
            return TensorInfo(element, tuple(array.shape))
        try:
            return tensor_info(
                name,
                inferred.types.get(name),
                what,
                inferred.problem,
                advice,
                bound_types.get(name),
            )
        except OnnxImportError:
            origin = custom_origin(graph, name) if advice is None else None
            if origin is None:
                found = inferred.types.get(name)
                if (
                    advice is None
                    and not upper_bounds
                    and static_inputs
                    and found is not None
                    and found.HasField("tensor_type")  # not a sequence, optional or map
                ):
                    # Nothing to fix in the inputs' shapes: the dims follow
                    # from values (sizes, axes given as inputs) or from data.
                    # Sizes and axes given at run time are integer inputs.
                    integral = {i.name for i in inputs if i.type.tensor_type.elem_type in INTEGERS}
                    deciding = inputs_computing(graph, name, integral)
                    tensor_info(
                        name,
                        inferred.types.get(name),
                        what,
                        inferred.problem,
                        "every graph input has a static shape, so its size depends on "
                        + (
                            "the values of integer input "
                            + ", ".join(f"'{n}'" for n in deciding)
                            + f" (--input-value {deciding[0]}=V[,V...] binds one)"
                            if deciding
                            else "the data, with no bound memplan knows"
                        ),
                    )
                raise
            # The shape is lost at an op ONNX cannot infer, not at the inputs.
            return tensor_info(
                name,
                inferred.types.get(name),
                what,
                inferred.problem,
                f"it is computed from node {origin}, of a domain ONNX shape inference does "
                "not know; the model's value_info must give that node's outputs static "
                "shapes",
                bound_types.get(name),
            )

    importer = _GraphImporter(
        _Emitter(weights, constants),
        folded,
        opsets,
        # Optional outputs are kept when anything reads them, in any graph.
        consumed={
            *(
                n
                for _, g in [((), graph), *subgraphs(graph)]
                for node in g.node
                for n in node.input
            ),
            *(o.name for o in graph.output),
        },
        info_of=info_of,
        types=inferred.types,
        run_time_types=run_time_types(model, folded) if upper_bounds else {},
        range_types=range_types,
        dim_exprs=checked_dim_exprs(
            model,
            folded,
            ranges,
            bound_types,
            info_of,
            # The lower ends' types when every ranged dim has a lower bound.
            range_types[0] if range_types and ranges.lower.keys() == ranges.upper.keys() else None,
        )
        if upper_bounds
        else {},
    )
    arg_infos = [info_of(i.name, "graph input") for i in inputs]
    block = Block(arg_types=[info.tensor_type for info in arg_infos])
    values: dict[str, SSAValue] = {}
    for graph_input, argument in zip(inputs, block.args):
        argument.name_hint = sanitize_name(graph_input.name)
        values[graph_input.name] = argument
    importer.emit(graph, (), block, values)

    returned: list[SSAValue] = []
    for output in graph.output:
        if output.name not in values:
            raise OnnxImportError(f"graph output '{output.name}' is not computed by any node")
        returned.append(values[output.name])
    block.add_op(func.ReturnOp(*returned))
    main = func.FuncOp(
        "main",
        ([info.tensor_type for info in arg_infos], [v.type for v in returned]),
        Region(block),
    )
    main.attributes[ONNX_ATTR_PREFIX + "inputs"] = ArrayAttr(StringAttr(i.name) for i in inputs)
    main.attributes[ONNX_ATTR_PREFIX + "outputs"] = ArrayAttr(
        StringAttr(o.name) for o in graph.output
    )
    if upper_bounds:
        main.attributes[DIM_RANGES_ATTR] = ranges.attribute()
        main.attributes[DIM_SYMBOLS_ATTR] = dim_symbols(inputs, upper_bounds)
    emitter = importer.emitter
    return ModuleOp([*emitter.globals, main, *emitter.kernels.declarations]), constants


def dim_symbols(inputs: Sequence[Any], upper_bounds: Mapping[str, int]) -> DictionaryAttr:
    """`memory.dim_symbols`: each ranged symbol's argument index and axis,
    the first graph input and axis that carries it."""
    places: dict[str, Attribute] = {}
    for argument, graph_input in enumerate(inputs):
        for axis, dim in enumerate(graph_input.type.tensor_type.shape.dim):
            symbol = dim.dim_param if not dim.HasField("dim_value") else ""
            if symbol in upper_bounds and symbol not in places:
                places[symbol] = DenseArrayBase.from_list(i64, [argument, axis])
    return DictionaryAttr(dict(sorted(places.items())))


def _dims_of(type_proto: Any | None) -> tuple[int, ...] | None:
    """A tensor type's static dims, ``None`` unless every dim is a size."""
    found = symbolic_dims(type_proto)
    if found is None or not all(isinstance(d, int) for d in found):
        return None
    return tuple(int(d) for d in found)


def checked_dim_exprs(
    model: Any,
    folded: FoldedConstants,
    ranges: DimRanges,
    bound_types: Mapping[str, Any],
    info_of: Callable[[str, str], TensorInfo],
    lower_types: Mapping[str, Any] | None = None,
) -> dict[str, tuple[str, ...]]:
    """The dims of each dynamic tensor of the main graph as size
    expressions (``dim_exprs.symbolic_dim_texts``), kept only when every
    dim has one and each equals the importer's own shape inference at the
    lower and at the upper ends of the ranges (static dims are their size).
    ``bound_types`` are the types at the upper ends; ``lower_types`` those
    at the lower ends when the caller has them (inferred here otherwise)."""
    from memplan.tools.frontends.onnx.dim_exprs import symbolic_dim_texts

    lower = {name: ranges.lower.get(name, 1) for name in ranges.upper}
    upper = dict(ranges.upper)
    stripped = onnx_module().ModelProto()
    stripped.CopyFrom(model)
    del stripped.graph.value_info[:]
    texts = symbolic_dim_texts(stripped, lower)
    if not texts:
        return {}
    if lower_types is None:
        try:
            lower_types = infer_types(at_upper_bounds(model, lower), folded).types
        except OnnxImportError:
            return {}
    checked: dict[str, tuple[str, ...]] = {}
    for node in model.graph.node:
        for name in node.output:
            found = texts.get(name)
            if not name or found is None or name in folded.values:
                continue
            try:
                shape = info_of(name, "tensor").shape
            except OnnxImportError:
                continue
            if -1 not in shape or len(found) != len(shape):
                continue
            at_lower, at_upper = _dims_of(lower_types.get(name)), _dims_of(bound_types.get(name))
            if at_lower is None or at_upper is None:
                continue
            dims: list[str] = []
            for axis, size in enumerate(shape):
                text = found[axis]
                if size >= 0:
                    dims.append(str(size))
                    continue
                if text is None:
                    break
                expression = parse_size_expr(text)
                if (
                    expression.evaluate(lower) != at_lower[axis]
                    or expression.evaluate(upper) != at_upper[axis]
                ):
                    break
                dims.append(text)
            else:
                checked[name] = tuple(dims)
    return checked


@dataclass
class _GraphImporter:
    """Emits a graph's live nodes into a block: kernel calls, `scf.if` for
    `If` and `scf.for` for `Loop`."""

    emitter: _Emitter
    folded: FoldedConstants
    opsets: Mapping[str, int]
    consumed: set[str]
    info_of: Callable[..., TensorInfo]
    types: Mapping[str, Any]
    run_time_types: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Types in which one symbol means one size at run time
    (``model.run_time_types``); empty without upper bounds."""
    range_types: tuple[Mapping[str, Any], ...] = ()
    """The types with the ranged dims at their lower and at their upper
    ends; empty without ``--lower-bound``."""
    dim_exprs: Mapping[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    """Size expressions of the dims of the main graph's dynamic tensors
    (`memory.dim_exprs`, ``checked_dim_exprs``); empty without ranges."""

    def never_one(self, name: str, type_: Attribute) -> bool:
        """Whether every dynamic dim of tensor ``name`` (of ``type_``) is at
        least 2 anywhere in the ranges, so that it cannot broadcast: it is
        at least 2 at both ends of them. This takes the shape functions of
        the model's ops as monotone in the input dims between the ends
        (convolutions, pools, resizes, reshapes by products are), and
        `memplan-run` checks the in-place pairs it lets in."""
        if not self.range_types or not isinstance(type_, TensorType):
            return False
        dynamic = [axis for axis, size in enumerate(type_.get_shape()) if size < 0]
        for types in self.range_types:
            proto = types.get(name)
            if proto is None or not proto.HasField("tensor_type"):
                return False
            dims = proto.tensor_type.shape.dim
            if len(dims) != len(type_.get_shape()):
                return False
            if any(not dims[a].HasField("dim_value") or dims[a].dim_value < 2 for a in dynamic):
                return False
        return True

    def run_time_dims(self, name: str) -> tuple[int | str, ...] | None:
        """Tensor ``name``'s dims as far as its run-time shape is known: a
        static size, or the symbol of a dynamic dim (two dims with one
        symbol have one size). ``None`` when a dim is unknown."""
        constant = self.folded.values.get(name)
        if constant is not None:
            return tuple(int(d) for d in np.shape(constant))
        return symbolic_dims(self.run_time_types.get(name))

    def emit(
        self,
        graph: Any,
        path: GraphPath,
        block: Block,
        values: dict[str, SSAValue],
        outputs: Sequence[str] | None = None,
    ) -> None:
        """Emit ``graph`` (at ``path``) into ``block``; ``values`` maps the ONNX
        names visible there (the enclosing graphs') and gains this graph's.
        ``outputs`` are the graph outputs the caller reads (default: all)."""
        constants = self.folded.values
        live = live_nodes(graph, path, self.folded)
        plans = _plan_nodes(live, self.opsets, self.consumed, self.info_of, constants)
        # The constants this graph defines, read here or in a graph nested in
        # it, are read once at its start (weights of the model's graph at the
        # top of @main, a branch's own constants at the top of the branch).
        read = [
            *(n for plan in plans for n in plan.operands),
            *(outputs if outputs is not None else (o.name for o in graph.output)),
            *names_read_inside(live),
        ]
        for name in _ordered_unique(read):
            if name in constants and self.folded.defined_in[name] == path and name not in values:
                values[name] = self.emitter.constant(name, self.info_of(name, "constant"), block)
        for plan in plans:
            where = describe_node(plan.node, plan.index)
            operands: list[SSAValue] = []
            for name in plan.operands:
                if name not in values:
                    raise OnnxImportError(
                        f"{where} reads tensor '{name}', which nothing defines before it "
                        "(the graph must be topologically sorted)"
                    )
                operands.append(values[name])
            if plan.node.op_type == "If" and node_domain(plan.node) == "":
                results = self._emit_if(plan, path, operands[0], block, values)
            elif plan.node.op_type == "Loop" and node_domain(plan.node) == "":
                results = self._emit_loop(plan, path, operands, block, values)
            elif plan.node.op_type == "Scan" and node_domain(plan.node) == "":
                results = self._emit_scan(plan, path, operands, block, values)
            elif has_subgraph(plan.node):
                # Not control flow: a graph the kernel runs inside itself
                # (FlexAttention's score_mod), kept as an attribute. Its
                # bytes are the kernel's own, but a tensor it read from
                # outside would be an operand the plan does not see.
                outer = sorted(set(outer_names_read(plan.node)))
                if outer:
                    raise OnnxImportError(
                        f"{where}: a graph attribute of {plan.node.op_type} reads "
                        + ", ".join(f"'{n}'" for n in outer)
                        + " of the enclosing graph; only If (scf.if), Loop and Scan "
                        "(scf.for, scf.while) may hold graphs that do"
                    )
                results = self._emit_call(plan, operands, block)
            else:
                results = self._emit_call(plan, operands, block)
            for name, result in zip(plan.results, results):
                result.name_hint = sanitize_name(name)
                values[name] = result

    def _emit_call(
        self, plan: _NodePlan, operands: list[SSAValue], block: Block
    ) -> Sequence[SSAValue]:
        where = describe_node(plan.node, plan.index)
        advice = None
        if _schema_outputs_optional(plan.node, plan.opset) is None:
            domain = node_domain(plan.node)
            advice = (
                f"ONNX has no shape function for {domain + '.' if domain else ''}"
                f"{plan.node.op_type}: give its outputs a value_info"
            )
        infos = [self.info_of(n, f"output of {where}", advice) for n in plan.results]
        result_types = [info.tensor_type for info in infos]
        same_shape: list[bool] | None = None
        if len(plan.results) == 1 and has_dynamic_shape(result_types):
            result_dims = self.run_time_dims(plan.results[0])
            same_shape = [
                (result_dims is not None and self.run_time_dims(name) == result_dims)
                or self.never_one(name, operand.type)
                for name, operand in zip(plan.operands, operands)
            ]
        declaration = self.emitter.declaration(
            plan.node,
            plan.index,
            plan.opset,
            [o.type for o in operands],
            result_types,
            None if plan.view else _slots(plan.node.input),
            _slots(plan.outputs),
            plan.view,
            same_shape,
        )
        call = func.CallOp(declaration.sym_name.data, operands, result_types)
        if not plan.view and any(info.max_shape is not None for info in infos):
            call.attributes[MAX_SHAPES_ATTR] = ArrayAttr(
                DenseArrayBase.from_list(i64, info.bound_shape) for info in infos
            )
        if has_dynamic_shape(result_types) and all(n in self.dim_exprs for n in plan.results):
            call.attributes[DIM_EXPRS_ATTR] = ArrayAttr(
                ArrayAttr(StringAttr(text) for text in self.dim_exprs[n]) for n in plan.results
            )
        block.add_op(call)
        return call.results

    def _emit_if(
        self,
        plan: _NodePlan,
        path: GraphPath,
        condition: SSAValue,
        block: Block,
        values: dict[str, SSAValue],
    ) -> Sequence[SSAValue]:
        """``If`` as `scf.if`: the condition's one element, both branches as regions."""
        node = plan.node
        where = describe_node(node, plan.index)
        info = self.info_of(node.input[0], f"condition of {where}")
        if info.element_type != i1 or int(np.prod(info.shape, dtype=np.int64)) != 1:
            raise OnnxImportError(
                f"{where}: condition '{node.input[0]}' is {info.tensor_type}; "
                "an If needs one bool element"
            )
        indices: list[SSAValue] = []
        if info.shape:
            zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
            block.add_op(zero)
            indices = [zero.result] * len(info.shape)
        extract = tensor.ExtractOp(condition, indices, i1)
        block.add_op(extract)
        held = {a.name: a.g for a in node.attribute if a.HasField("g")}
        if set(held) != {"then_branch", "else_branch"}:
            raise OnnxImportError(f"{where} must hold a then_branch and an else_branch graph")
        branches = {name: held[name] for name in ("then_branch", "else_branch")}
        result_types: list[Attribute] = []
        for k, name in enumerate(node.output):
            shapes = " and ".join(
                f"'{b.output[k].name}' {type_text(self.types.get(b.output[k].name))}"
                for b in branches.values()
                if k < len(b.output)
            )
            advice = f"its branches give {shapes}; an If's output needs one static shape"
            result_types.append(self.info_of(name, f"output of {where}", advice).tensor_type)
        regions: list[Region] = []
        for attribute, branch in branches.items():
            if len(branch.output) != len(node.output):
                raise OnnxImportError(
                    f"{where}: {attribute} has {len(branch.output)} outputs, the If "
                    f"{len(node.output)}"
                )
            branch_block = Block()
            self._emit_region(
                branch,
                (*path, plan.index, attribute),
                branch_block,
                dict(values),
                list(zip([o.name for o in branch.output], result_types)),
                f"{where}: {attribute}",
                "the If's output",
            )
            regions.append(Region(branch_block))
        if_op = scf.IfOp(extract.result, result_types, regions[0], regions[1])
        block.add_op(if_op)
        return if_op.results

    def _emit_loop(
        self,
        plan: _NodePlan,
        path: GraphPath,
        initial: list[SSAValue],
        block: Block,
        values: dict[str, SSAValue],
    ) -> Sequence[SSAValue]:
        """``Loop`` as `scf.for` (``_emit_for``) when its trip count folds
        and it runs them all, else as `scf.while` (``_emit_while``)."""
        node = plan.node
        where = describe_node(node, plan.index)
        constants = self.folded.values
        [body] = [a.g for a in node.attribute if a.name == "body" and a.HasField("g")] or [None]
        carried = len(initial)
        if body is None or len(body.input) != carried + 2 or len(body.output) < carried + 1:
            raise OnnxImportError(
                f"{where} must hold a body graph with {carried + 2} inputs (iteration "
                f"number, condition, {carried} carried values) and at least {carried + 1} "
                "outputs"
            )
        keep_going = body.output[0].name
        trips = constant_trip_count(node, self.folded)
        runs_all = keep_going == body.input[1].name or (
            keep_going in constants and bool(np.asarray(constants[keep_going]).all())
        )
        loop = _ForLoop(
            where=where,
            node=node,
            trips=-1 if trips is None else trips,
            body=body,
            body_path=(*path, plan.index, "body"),
            carried_inputs=[i.name for i in body.input[2:]],
            carried_outputs=[o.name for o in body.output[1 : carried + 1]],
            scan_outputs=[o.name for o in body.output[carried + 1 :]],
            iteration=body.input[0].name,
        )
        if trips is None or (not runs_all and trips > 0):
            return self._emit_while(loop, initial, block, values)
        if not 0 <= trips <= MAX_LOOP_TRIPS:
            what = "negative" if trips < 0 else f"beyond {MAX_LOOP_TRIPS} iterations"
            raise OnnxImportError(f"{where}: its trip count {trips} is {what}")
        return self._emit_for(loop, initial, block, values)

    def _scalar_of(
        self, name: str, what: str, block: Block, values: dict[str, SSAValue]
    ) -> SSAValue:
        """The one element of tensor ``name`` (a ``Loop``'s trip count or
        condition) as a scalar: a constant when it folds, else
        `tensor.extract` of its value."""
        info = self.info_of(name, what)
        if int(np.prod(info.shape, dtype=np.int64)) != 1:
            raise OnnxImportError(
                f"tensor '{name}' ({what}) is {info.tensor_type}; it needs one element"
            )
        element = info.element_type
        if not isinstance(element, IntegerType):
            raise OnnxImportError(
                f"tensor '{name}' ({what}) is {info.tensor_type}; it needs an integer or "
                "bool element"
            )
        constant = self.folded.values.get(name)
        if constant is not None:
            value = np.asarray(constant).reshape(-1)[0]
            scalar = arith.ConstantOp(IntegerAttr(int(value), element))
            scalar.result.name_hint = sanitize_name(name)
            block.add_op(scalar)
            return scalar.result
        indices: list[SSAValue] = []
        if info.shape:
            zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
            block.add_op(zero)
            indices = [zero.result] * len(info.shape)
        extract = tensor.ExtractOp(values[name], indices, info.element_type)
        extract.result.name_hint = sanitize_name(name) + "_scalar"
        block.add_op(extract)
        return extract.result

    def _emit_while(
        self,
        loop: _ForLoop,
        initial: Sequence[SSAValue],
        block: Block,
        values: dict[str, SSAValue],
    ) -> Sequence[SSAValue]:
        """A ``Loop`` whose trip count or condition is known only at run time
        as `scf.while`, as the TFLite importer makes ``WHILE``: it carries
        the tensors of ``loop``, then the iteration number (`i64`) and the
        condition (`i1`). The first region decides, ``i < M and cond``
        (`arith.cmpi`, `arith.andi`) and forwards its arguments; the second
        runs the body, its iteration number and condition inputs
        `tensor.from_elements` of the scalars, and yields the next values,
        ``i + 1`` and its condition output (`tensor.extract`)."""
        where, node, body = loop.where, loop.node, loop.body
        trip_name = node.input[0] if node.input else ""
        condition_name = node.input[1] if len(node.input) > 1 else ""
        if loop.scan_outputs:
            decided = (
                f"its trip count '{trip_name}' is computed at run time"
                if trip_name and trip_name not in self.folded.values
                else f"the body computes its condition '{body.output[0].name}' at run time"
            )
            raise OnnxImportError(
                f"{where}: {decided}, so its scan output '{loop.scan_outputs[0]}' (a row "
                "per iteration) has a length that depends on data, with no bound"
            )
        if not trip_name and not condition_name:
            raise OnnxImportError(
                f"{where}: it has neither a trip count nor a condition and the body's "
                f"condition '{body.output[0].name}' is ignored: it never stops"
            )
        result_types = self._carried_types(loop, initial)
        carried = len(result_types)
        trip_count = (
            self._scalar_of(trip_name, f"trip count of {where}", block, values)
            if trip_name
            else None
        )
        if condition_name:
            go = self._scalar_of(condition_name, f"condition of {where}", block, values)
        else:
            true = arith.ConstantOp(IntegerAttr(1, i1))
            true.result.name_hint = "no_condition"
            block.add_op(true)
            go = true.result
        zero = arith.ConstantOp(IntegerAttr(0, i64))
        zero.result.name_hint = "iteration0"
        block.add_op(zero)
        types = [*result_types, i64, i1]

        head = Block(arg_types=types)
        for name, argument in zip(loop.carried_inputs, head.args):
            argument.name_hint = sanitize_name(name)
        head.args[carried].name_hint = "iteration"
        head.args[carried + 1].name_hint = "keep_going"
        decision: SSAValue = head.args[carried + 1]
        if trip_count is not None:
            below = arith.CmpiOp(head.args[carried], trip_count, "slt")
            below.result.name_hint = "below_trip_count"
            head.add_op(below)
            decision = below.result
            if condition_name:
                both = arith.AndIOp(below.result, head.args[carried + 1])
                both.result.name_hint = "runs_again"
                head.add_op(both)
                decision = both.result
        head.add_op(scf.ConditionOp(decision, *head.args))

        body_block = Block(arg_types=types)
        body_values = dict(values)
        for name, argument in zip(loop.carried_inputs, body_block.args):
            argument.name_hint = sanitize_name(name)
            body_values[name] = argument
        iteration = body_block.args[carried]
        iteration.name_hint = "iteration"
        flag = body_block.args[carried + 1]
        flag.name_hint = "keep_going"
        live = live_nodes(body, loop.body_path, self.folded)
        read = [*(n for _, inner in live for n in inner.input), *names_read_inside(live)]
        keep_going = body.output[0].name
        for name, scalar, role in (
            (body.input[0].name, iteration, "iteration number"),
            (body.input[1].name, flag, "condition"),
        ):
            if name in read:
                info = self.info_of(name, f"{role} of {where}")
                number = tensor.FromElementsOp(scalar, result_type=info.tensor_type)
                number.result.name_hint = sanitize_name(name)
                body_block.add_op(number)
                body_values[name] = number.result

        def next_counters(body_values: dict[str, SSAValue]) -> list[SSAValue]:
            one = arith.ConstantOp(IntegerAttr(1, i64))
            one.result.name_hint = "one"
            following = arith.AddiOp(iteration, one.result)
            following.result.name_hint = "next_iteration"
            body_block.add_ops([one, following])
            if not condition_name or keep_going == body.input[1].name:
                # Without a condition input the body's condition is ignored.
                return [following.result, flag]
            return [
                following.result,
                self._scalar_of(
                    keep_going, f"condition output of {where}", body_block, body_values
                ),
            ]

        self._emit_region(
            body,
            loop.body_path,
            body_block,
            body_values,
            list(zip(loop.carried_outputs, result_types)),
            f"{where}: body",
            "the carried value",
            [
                *loop.carried_outputs,
                *([keep_going] if condition_name and keep_going not in self.folded.values else []),
            ],
            next_counters,
        )
        while_op = scf.WhileOp([*initial, zero.result, go], types, Region(head), Region(body_block))
        block.add_op(while_op)
        return while_op.results[:carried]

    def _carried_types(self, loop: _ForLoop, initial: Sequence[SSAValue]) -> list[Attribute]:
        """The types of the values ``loop`` carries: each its initial value's
        (the node's output must agree)."""
        where, node = loop.where, loop.node
        result_types: list[Attribute] = []
        for k, name in enumerate(node.output[: len(loop.carried_inputs)]):
            body_output = loop.carried_outputs[k]
            advice = (
                f"it starts as {initial[k].type} and the body gives "
                f"'{body_output}' {type_text(self.types.get(body_output))}; a carried "
                "value needs one static shape"
            )
            info = self.info_of(name, f"output of {where}", advice)
            if loop.batched:
                info = TensorInfo(info.element_type, info.shape[1:])
            result_type = info.tensor_type
            if result_type != initial[k].type:
                raise OnnxImportError(
                    f"{where}: carried value '{name}' is {result_type} after the loop but "
                    f"starts as '{node.input[len(node.input) - len(initial) + k]}' "
                    f"{initial[k].type}; a carried value needs one static shape"
                )
            result_types.append(result_type)
        return result_types

    def _emit_scan(
        self,
        plan: _NodePlan,
        path: GraphPath,
        operands: list[SSAValue],
        block: Block,
        values: dict[str, SSAValue],
    ) -> Sequence[SSAValue]:
        """``Scan`` (every axis 0 and every direction forward) as `scf.for`
        over the scan inputs' first dim: the state variables are carried,
        iteration `i` reads row `i` of each scan input (`Gather`). Before
        opset 9 every input and output has a batch dim first: an outer
        `scf.for` over it runs that loop on each batch row
        (``_emit_batched``)."""
        node = plan.node
        where = describe_node(node, plan.index)
        batched = plan.opset < 9
        attributes = {a.name: a for a in node.attribute}
        scan_count = attributes["num_scan_inputs"].i if "num_scan_inputs" in attributes else 0
        if batched and node.input and node.input[0]:
            raise OnnxImportError(
                f"{where}: sequence_lens '{node.input[0]}' is not supported (every batch row "
                "must scan the whole sequence)"
            )
        for name in (
            ("directions",)
            if batched
            else (
                "scan_input_axes",
                "scan_input_directions",
                "scan_output_axes",
                "scan_output_directions",
            )
        ):
            if name in attributes and any(attributes[name].ints):
                raise OnnxImportError(
                    f"{where}: {name} {list(attributes[name].ints)} is not supported (only "
                    "axis 0, forward)"
                )
        body = attributes["body"].g if "body" in attributes else None
        states = len(operands) - scan_count
        if body is None or scan_count < 1 or states < 0 or len(body.input) != len(operands):
            raise OnnxImportError(
                f"{where} must hold a body graph with one input per state variable and "
                "scan input, and at least one scan input"
            )
        axis = 1 if batched else 0
        shapes = {
            name: self.info_of(name, f"scan input of {where}").shape
            for name in list(node.input)[len(node.input) - scan_count :]
        }
        lengths = {name: shape[axis : axis + 1] for name, shape in shapes.items()}
        if len(set(lengths.values())) != 1 or () in lengths.values():
            raise OnnxImportError(
                f"{where}: its scan inputs need one static length along axis {axis}, got "
                + ", ".join(f"'{n}' {list(d)}" for n, d in lengths.items())
            )
        [(trips,)] = set(lengths.values())
        loop = _ForLoop(
            where=where,
            node=node,
            trips=trips,
            body=body,
            body_path=(*path, plan.index, "body"),
            carried_inputs=[i.name for i in body.input[:states]],
            carried_outputs=[o.name for o in body.output[:states]],
            scan_outputs=[o.name for o in body.output[states:]],
            slices=list(zip((i.name for i in body.input[states:]), operands[states:])),
            batched=batched,
        )
        if not batched:
            return self._emit_for(loop, operands[:states], block, values)
        return self._emit_batched(loop, operands, block, values)

    def _emit_batched(
        self,
        loop: _ForLoop,
        operands: Sequence[SSAValue],
        block: Block,
        values: dict[str, SSAValue],
    ) -> Sequence[SSAValue]:
        """A ``Scan`` before opset 9 as an `scf.for` over the batch dim: row
        `b` of each state and scan input (`Gather`) goes through the
        opset-9 loop (``_emit_for``), and its final states and scan outputs
        are written into row `b` of the node's outputs, carried as
        ``[batch, ...]`` tensors starting at zeros (an in-place
        `ScatterND` each, as ``Loop`` stacks its scan outputs)."""
        where, node = loop.where, loop.node
        states = len(loop.carried_inputs)
        infos = [self.info_of(name, f"output of {where}") for name in node.output]
        batch = {info.shape[0] for info in infos if info.shape} | {
            cast(TensorType[Attribute], o.type).get_shape()[0] for o in operands
        }
        if len(batch) != 1 or any(not info.shape for info in infos):
            raise OnnxImportError(
                f"{where}: its inputs and outputs need one static batch dim first, got "
                + ", ".join(sorted(str(b) for b in batch))
            )
        [rows] = batch
        outer = Block(arg_types=[IndexType(), *(info.tensor_type for info in infos)])
        outer.args[0].name_hint = "batch"
        initial: list[SSAValue] = []
        for name, info, argument in zip(node.output, infos, outer.args[1:]):
            initial.append(_zeros(block, name, info))
            argument.name_hint = sanitize_name(name) + "_in"
        row = arith.IndexCastOp(outer.args[0], i64)
        row.result.name_hint = "batch_i64"
        index = tensor.FromElementsOp(row.result, result_type=TensorType(i64, []))
        index.result.name_hint = "batch_row"
        outer.add_ops([row, index])
        rows_of: list[SSAValue] = []
        for k, operand in enumerate(operands):
            shape = cast(TensorType[Attribute], operand.type).get_shape()[1:]
            element = cast(TensorType[Attribute], operand.type).element_type
            taken = self._call(
                helper_node("Gather", ["", ""], f"{node.name}/batch{k}", axis=0),
                [operand, index.result],
                TensorType(element, shape),
                outer,
            )
            taken.name_hint = (operand.name_hint or f"input{k}") + "_row"
            rows_of.append(taken)
        per_row = replace(
            loop,
            slices=[(name, taken) for (name, _), taken in zip(loop.slices, rows_of[states:])],
        )
        results = self._emit_for(per_row, rows_of[:states], outer, dict(values))
        write_at = tensor.FromElementsOp(row.result, result_type=TensorType(i64, [1, 1]))
        write_at.result.name_hint = "batch_index"
        outer.add_op(write_at)
        written: list[SSAValue] = []
        for k, (name, result, stack) in enumerate(zip(node.output, results, outer.args[1:])):
            result_type = cast(TensorType[Attribute], result.type)
            unsqueezed = self._call(
                helper_node("Unsqueeze", [name], f"{node.name}/out{k}/row"),
                [result],
                TensorType(result_type.element_type, [1, *result_type.get_shape()]),
                outer,
                view=True,
            )
            unsqueezed.name_hint = sanitize_name(name) + "_row"
            written.append(
                self._call(
                    helper_node("ScatterND", ["", "", ""], f"{node.name}/out{k}/write"),
                    [stack, write_at.result, unsqueezed],
                    stack.type,
                    outer,
                )
            )
            written[-1].name_hint = sanitize_name(name) + "_next"
        outer.add_op(scf.YieldOp(*written))
        return counted_for(rows, "batch_size", initial, outer, block)

    def _emit_for(
        self,
        loop: _ForLoop,
        initial: Sequence[SSAValue],
        block: Block,
        values: dict[str, SSAValue],
    ) -> Sequence[SSAValue]:
        """``loop`` as `scf.for` from 0 to its trip count carrying its tensors.

        The body's iteration number (an int64 tensor) is built from the
        induction variable with `arith.index_cast` and
        `tensor.from_elements` when the body reads it. Each scan output
        stacks a body value over the iterations: it is carried as a
        [trips, ...] tensor (zeros at first) that a `ScatterND` writes row
        `i` of, in place. Each sliced input's row `i` is read with `Gather`.
        """
        where, node, body, trips = loop.where, loop.node, loop.body, loop.trips
        carried = len(loop.carried_inputs)
        result_types = self._carried_types(loop, initial)
        scans = loop.scan_outputs
        scan_infos = [self.info_of(n, f"scan output of {where}") for n in scans]
        stacked = [TensorInfo(info.element_type, (trips, *info.shape)) for info in scan_infos]
        for name, info in zip(node.output[carried:], stacked):
            declared = self.info_of(name, f"output of {where}")
            if loop.batched:
                declared = TensorInfo(declared.element_type, declared.shape[1:])
            if declared.shape != info.shape:
                raise OnnxImportError(
                    f"{where}: scan output '{name}' is {declared.tensor_type}, but "
                    f"{trips} iterations stack {info.tensor_type}"
                )
        initial = list(initial)
        for name, info in zip(node.output[carried:], stacked):
            initial.append(_zeros(block, name, info))
        carried_types = [*result_types, *(info.tensor_type for info in stacked)]
        body_block = Block(arg_types=[IndexType(), *carried_types])
        body_values = dict(values)
        induction = body_block.args[0]
        induction.name_hint = "iteration"
        for name, argument in zip(loop.carried_inputs, body_block.args[1:]):
            argument.name_hint = sanitize_name(name)
            body_values[name] = argument
        for name, argument in zip(node.output[carried:], body_block.args[1 + carried :]):
            argument.name_hint = sanitize_name(name) + "_in"
        live = live_nodes(body, loop.body_path, self.folded)
        read = [*(n for _, inner in live for n in inner.input), *names_read_inside(live)]
        reads_iteration = loop.iteration is not None and loop.iteration in read
        iteration_i64: SSAValue | None = None
        if scans or loop.slices or reads_iteration:
            cast = arith.IndexCastOp(induction, i64)
            cast.result.name_hint = "iteration_i64"
            body_block.add_op(cast)
            iteration_i64 = cast.result
        if loop.iteration is not None and reads_iteration:
            assert iteration_i64 is not None
            info = self.info_of(loop.iteration, f"iteration number of {where}")
            number = tensor.FromElementsOp(iteration_i64, result_type=info.tensor_type)
            number.result.name_hint = sanitize_name(loop.iteration)
            body_block.add_op(number)
            body_values[loop.iteration] = number.result
        if loop.slices:
            assert iteration_i64 is not None
            index = tensor.FromElementsOp(iteration_i64, result_type=TensorType(i64, []))
            index.result.name_hint = "scan_row"
            body_block.add_op(index)
            for k, (name, source) in enumerate(loop.slices):
                info = self.info_of(name, f"scan input slice of {where}")
                row = self._call(
                    helper_node("Gather", ["", ""], f"{node.name}/slice{k}", axis=0),
                    [source, index.result],
                    info.tensor_type,
                    body_block,
                )
                row.name_hint = sanitize_name(name)
                body_values[name] = row

        def stack_scans(body_values: dict[str, SSAValue]) -> list[SSAValue]:
            if not scans:
                return []
            # One ScatterND index, row i, for every scan output.
            assert iteration_i64 is not None
            index = tensor.FromElementsOp(iteration_i64, result_type=TensorType(i64, [1, 1]))
            index.result.name_hint = "scan_index"
            body_block.add_op(index)
            rows: list[SSAValue] = []
            for k, (name, info) in enumerate(zip(scans, scan_infos)):
                stack = body_block.args[1 + carried + k]
                row = self._call(
                    helper_node("Unsqueeze", [name], f"{node.name}/scan{k}/row"),
                    [body_values[name]],
                    TensorInfo(info.element_type, (1, *info.shape)).tensor_type,
                    body_block,
                    view=True,
                )
                row.name_hint = sanitize_name(node.output[carried + k]) + "_row"
                rows.append(
                    self._call(
                        helper_node("ScatterND", ["", "", ""], f"{node.name}/scan{k}/write"),
                        [stack, index.result, row],
                        stack.type,
                        body_block,
                    )
                )
                rows[-1].name_hint = sanitize_name(node.output[carried + k]) + "_next"
            return rows

        self._emit_region(
            body,
            loop.body_path,
            body_block,
            body_values,
            list(zip(loop.carried_outputs, result_types)),
            f"{where}: body",
            "the carried value",
            [*loop.carried_outputs, *scans],
            stack_scans,
        )
        return counted_for(trips, "trips", initial, body_block, block)

    def _call(
        self,
        node: Any,
        operands: Sequence[SSAValue],
        result_type: Attribute,
        block: Block,
        view: bool = False,
    ) -> SSAValue:
        """A call of the kernel of ``node`` (one the importer makes) in ``block``."""
        declaration = self.emitter.declaration(
            node,
            -1,
            self.opsets[""],
            [o.type for o in operands],
            [result_type],
            None,
            None,
            view,
        )
        call = func.CallOp(declaration.sym_name.data, operands, [result_type])
        block.add_op(call)
        return call.results[0]

    def _emit_region(
        self,
        graph: Any,
        path: GraphPath,
        block: Block,
        values: dict[str, SSAValue],
        outputs: Sequence[tuple[str, Attribute]],
        where: str,
        expected: str,
        read: Sequence[str] | None = None,
        more: Callable[[dict[str, SSAValue]], list[SSAValue]] | None = None,
    ) -> None:
        """Emit ``graph`` into ``block`` and end it with an `scf.yield` of the
        graph outputs ``outputs`` names, each of the type given with it, then
        of what ``more`` adds (given the values). ``read``: the graph outputs
        used (default: those of ``outputs``)."""
        self.emit(graph, path, block, values, read or [name for name, _ in outputs])
        yielded: list[SSAValue] = []
        for name, result_type in outputs:
            value = values.get(name)
            if value is None:
                raise OnnxImportError(f"{where} output '{name}' is not computed by any node")
            if value.type != result_type:
                raise OnnxImportError(
                    f"{where} output '{name}' is {value.type}, {expected} is {result_type}"
                )
            yielded.append(value)
        if more is not None:
            yielded.extend(more(values))
        block.add_op(scf.YieldOp(*yielded))


def outer_names_read(node: Any) -> list[str]:
    """The tensor names the graphs ``node`` holds read from outside them
    (nested graphs included), in order of reading."""
    read: list[str] = []
    for graph in (a.g for a in node.attribute if a.HasField("g")):
        defined = {
            *(i.name for i in graph.input),
            *(i.name for i in graph.initializer),
            *(o for inner in graph.node for o in inner.output),
        }
        names = [
            *(n for inner in graph.node for n in inner.input if n),
            *(n for inner in graph.node for n in outer_names_read(inner)),
            *(o.name for o in graph.output),
        ]
        read.extend(n for n in names if n not in defined)
    return read


INTEGERS = frozenset({2, 3, 4, 5, 6, 7, 12, 13})
"""ONNX's integer element types (UINT8, INT8, UINT16, INT16, INT32, INT64,
UINT32, UINT64)."""


def inputs_computing(graph: Any, name: str, inputs: set[str]) -> list[str]:
    """The names of ``inputs`` (graph inputs) that tensor ``name`` of
    ``graph`` is computed from, sorted."""
    producer = {output: node for node in graph.node for output in node.output if output}
    pending, seen = [name], set[str]()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in producer:
            pending.extend(n for n in producer[current].input if n)
    return sorted(seen & inputs)


def custom_origin(graph: Any, name: str) -> str | None:
    """The nearest node of a custom domain that tensor ``name`` of ``graph``
    is computed from (``'name' (domain.OpType)``), or ``None``."""
    producer = {output: node for node in graph.node for output in node.output if output}
    pending, seen = [name], set()
    while pending:
        current = pending.pop(0)
        node = producer.get(current)
        if node is None or current in seen:
            continue
        seen.add(current)
        if node_domain(node):
            return f"'{node.name or node.output[0]}' ({node_domain(node)}.{node.op_type})"
        pending.extend(n for n in node.input if n)
    return None


def inputs_deciding_ifs(model: Any, folded: FoldedConstants) -> list[str]:
    """The graph inputs that the condition of a live ``If`` of the model's
    graph depends on, in input order."""
    graph = model.graph
    live = live_nodes(graph, (), folded)
    producer = {name: node for _, node in live for name in node.output if name}
    pending = [node.input[0] for _, node in live if node.op_type == "If" and node.input]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in producer:
            pending.extend(n for n in producer[name].input if n)
    return [i.name for i in graph_inputs(model) if i.name in seen]


def _ordered_unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def import_onnx(
    source: str | Path | bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    weights: WeightsMode = "external",
    upper_bounds: Mapping[str, int] | None = None,
    input_values: Mapping[str, Sequence[float]] | None = None,
    lower_bounds: Mapping[str, int] | None = None,
) -> ModuleOp:
    """Load and import the model at ``source`` (a path or the file's bytes)."""
    return import_model(
        load_model(source), input_shapes, weights, upper_bounds, input_values, lower_bounds
    )


def constant_values(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    input_values: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, np.ndarray]:
    """The folded constants of ``model`` by ONNX tensor name.

    These are the data of the globals an import without inline weights
    declares; ``memory.onnx.name`` on each global names its entry.
    """
    return fold_constants(prepare_model(model, input_shapes or {}, None, input_values)).values


# ---------------------------------------------------------------------------
# Runtime kernels for imported nodes
# ---------------------------------------------------------------------------


RESERVED_ONNX_KEYS = frozenset({"op_type", "domain", "opset", "input_slots", "output_slots"})


def int_list(attr: Attribute | None) -> list[int] | None:
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    return None


def onnx_names(main: func.FuncOp, key: Literal["inputs", "outputs"]) -> list[str] | None:
    """The ONNX tensor names recorded on ``@main`` by the importer."""
    attr = main.attributes.get(ONNX_ATTR_PREFIX + key)
    if isinstance(attr, ArrayAttr):
        return [s.data for s in attr.data if isinstance(s, StringAttr)]
    return None


def global_data(module: ModuleOp, constants: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The data of each external ``memref.global`` of ``module``, by symbol."""
    data: dict[str, np.ndarray] = {}
    for op in module.ops:
        if not isinstance(op, memref.GlobalOp):
            continue
        onnx_name = op.attributes.get(ONNX_ATTR_PREFIX + "name")
        if isinstance(onnx_name, StringAttr) and onnx_name.data in constants:
            data[op.sym_name.data] = np.asarray(constants[onnx_name.data])
    return data


def upper_bounds_from(specs: Iterable[str]) -> dict[str, int]:
    return dict(parse_bound(spec) for spec in specs)


def lower_bounds_from(specs: Iterable[str]) -> dict[str, int]:
    return dict(parse_bound(spec, "--lower-bound") for spec in specs)


def input_values_from(specs: Iterable[str]) -> dict[str, tuple[float, ...]]:
    return dict(parse_input_value(spec) for spec in specs)


def input_shapes_from(specs: Iterable[str]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, dims = parse_input_shape(spec)
        shapes[name] = dims
    return shapes


def _zeros(block: Block, name: str, info: TensorInfo) -> SSAValue:
    """A splat zero of ``info``'s type appended to ``block``, named after
    ``name``: the initial value of a stacked (scan) output."""
    zeros = arith.ConstantOp(
        DenseIntOrFPElementsAttr(
            info.tensor_type,
            BytesAttr(np.zeros(1, numpy_dtype(info.element_type)).tobytes()),
        )
    )
    zeros.result.name_hint = sanitize_name(name) + "_zeros"
    block.add_op(zeros)
    return zeros.result
