"""ONNX models as value-semantic IR: the library behind `memplan-import-onnx`.

Usage::

    memplan-import-onnx MODEL.onnx [-o OUT.mlir] [--input-shape NAME=1x3x224x224 ...]
                        [--weights external|inline]

The output is the form `manifest-alloc` takes: one `func.call` per ONNX node
to a kernel declaration, graph inputs as arguments and graph outputs as
results. It is also what `memplan-run` executes.

What the importer does, in order:

1. Loads the model (a file that is not an ONNX model is an error) and fixes
   the graph inputs' shapes from `--input-shape`.
2. Folds constants: initializers, `Constant`, `ConstantOfShape` and every
   other deterministic node whose inputs are all constant are evaluated with
   ONNX's reference evaluator. They become `memref.global "private" constant`
   symbols named after the tensor (never workspace). By default the globals
   carry no initial value: the data stays in the ONNX file (`memplan-run
   --weights-from` reads it back); `--weights inline` embeds it as `dense<>`.
   `ConstantOfShape` outputs are kept as zero-copy splats, so the "light"
   test models (whose weights are all `ConstantOfShape`) import in
   milliseconds.
3. Runs ONNX shape inference (strict) on what is left. Every tensor must get
   a static shape and a supported element type, or the import fails naming
   the tensor.
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
  STRINGS -> `["..."]`, TENSOR -> `dense<...>`. Graph-valued attributes
  (`If`, `Loop`, `Scan`) are not supported.
* Element types: f16/f32/f64, signless i8..i64 for ONNX's signed integers,
  `ui8`..`ui64` for its unsigned ones, `i1` for BOOL. STRING, BFLOAT16,
  complex, 8-bit float and 4-bit types are rejected.
* xDSL 0.74 has no pretty syntax for `memref.global`, so globals print in the
  generic form `"memref.global"() <{sym_name = "w", ..., initial_value,
  constant}>`; each records its ONNX tensor name as `memory.onnx.name`.
* `@main` records the ONNX names of its inputs and outputs as
  `memory.onnx.inputs` / `memory.onnx.outputs`.

The inverse mapping: `onnx_kernels.OnnxKernelResolver` turns a kernel
declaration back into a one-node ONNX model run by the reference evaluator
(for `memplan-run`), and `constant_values` here recomputes the folded
constants.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from memplan.dialect.interpreter import dense_array, numpy_dtype
from memplan.dialect.ops import INPLACE_ATTR, VIEW_ATTR
from memplan.tools.frontends.common import UniqueNames, sanitize_name

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

NONDETERMINISTIC_OPS: frozenset[str] = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)
"""Ops never constant-folded even when all their inputs are constant."""

SMALL_CONSTANT_ELEMENTS = 4096
"""Constants up to this many elements are given to shape inference by value
(shapes, axes, pads); larger ones only by type, which keeps huge weights out
of the protobuf built for inference."""


class OnnxImportError(Exception):
    """A model memplan cannot import; the message names the tensor or node."""


# ---------------------------------------------------------------------------
# ONNX element types <-> builtin types
# ---------------------------------------------------------------------------


def _onnx():
    """The ``onnx`` package, imported on first use (a test-only dependency)."""
    try:
        import onnx
    except ImportError as error:  # pragma: no cover - onnx is in [test]
        raise OnnxImportError("the onnx package is not installed (pip install onnx)") from error
    return onnx


@cache
def _element_types() -> dict[int, Attribute]:
    tensor_proto = _onnx().TensorProto
    return {
        tensor_proto.FLOAT: f32,
        tensor_proto.DOUBLE: f64,
        tensor_proto.FLOAT16: f16,
        tensor_proto.INT8: i8,
        tensor_proto.INT16: i16,
        tensor_proto.INT32: i32,
        tensor_proto.INT64: i64,
        tensor_proto.UINT8: IntegerType(8, Signedness.UNSIGNED),
        tensor_proto.UINT16: IntegerType(16, Signedness.UNSIGNED),
        tensor_proto.UINT32: IntegerType(32, Signedness.UNSIGNED),
        tensor_proto.UINT64: IntegerType(64, Signedness.UNSIGNED),
        tensor_proto.BOOL: i1,
    }


def _element_type_name(elem_type: int) -> str:
    try:
        return _onnx().TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"data type {elem_type}"


def element_type_for(elem_type: int, tensor: str) -> Attribute:
    """The builtin element type of ONNX ``elem_type``, or an error naming ``tensor``."""
    types = _element_types()
    if elem_type not in types:
        supported = ", ".join(_element_type_name(t) for t in types)
        raise OnnxImportError(
            f"tensor '{tensor}' has unsupported element type "
            f"{_element_type_name(elem_type)} (supported: {supported})"
        )
    return types[elem_type]


def _onnx_elem_type(dtype: np.dtype[Any]) -> int:
    return _onnx().helper.np_dtype_to_tensor_dtype(dtype)


# ---------------------------------------------------------------------------
# ONNX attributes <-> builtin attributes
# ---------------------------------------------------------------------------


def dense_attr(array: np.ndarray, element_type: Attribute) -> DenseIntOrFPElementsAttr:
    """``array`` as a ``dense<...>`` attribute of ``element_type`` (bit-exact;
    ``memdialect.interpreter.dense_array`` is the inverse)."""
    contiguous = np.asarray(array, dtype=numpy_dtype(element_type), order="C")
    tensor_type = TensorType(element_type, contiguous.shape)
    return DenseIntOrFPElementsAttr(cast(Any, tensor_type), BytesAttr(contiguous.tobytes()))


def encode_attribute(attribute: Any, where: str) -> Attribute:
    """One ONNX ``AttributeProto`` as a builtin attribute."""
    onnx = _onnx()
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
        case _:
            raise OnnxImportError(
                f"{where}: attribute '{attribute.name}' of type "
                f"{kind.AttributeType.Name(attribute.type)} is not supported "
                "(graph-valued attributes, i.e. If/Loop/Scan, cannot be imported)"
            )


def decode_attribute(name: str, value: Attribute) -> Any:
    """The ``AttributeProto`` that ``encode_attribute`` turned into ``value``."""
    onnx = _onnx()
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
        tensor = onnx.numpy_helper.from_array(np.ascontiguousarray(dense_array(value)))
        return make(name, tensor, attr_type=kind.TENSOR)
    raise ValueError(f"attribute {name} = {value} has no ONNX equivalent")


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# Loading and preparing the model
# ---------------------------------------------------------------------------


def load_model(source: str | Path | bytes) -> Any:
    """Parse an ONNX model from a path or bytes; errors are ``OnnxImportError``."""
    onnx = _onnx()
    if isinstance(source, bytes):
        data = source
        label = "input"
    else:
        label = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as error:
            raise OnnxImportError(f"cannot read {label}: {error.strerror}") from error
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf raises DecodeError and friends
        raise OnnxImportError(f"{label} is not an ONNX model (or is truncated): {error}") from error
    if not model.HasField("graph") or not model.opset_import:
        raise OnnxImportError(f"{label} is not an ONNX model: it has no graph or no opset")
    _check_names(model, label)
    if not isinstance(source, bytes):
        from onnx.external_data_helper import (
            load_external_data_for_model,
            uses_external_data,
        )

        if any(uses_external_data(t) for t in model.graph.initializer):
            try:
                load_external_data_for_model(model, str(Path(source).resolve().parent))
            except (OSError, ValueError) as error:
                raise OnnxImportError(f"{label}: cannot load its external data: {error}") from error
    return model


def tensor_array(tensor: Any, what: str) -> np.ndarray:
    """A ``TensorProto``'s data as an array; data that does not fit its
    type and shape (a damaged file) is an ``OnnxImportError`` naming it."""
    try:
        return _onnx().numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError) as error:
        raise OnnxImportError(
            f"{what} ({list(tensor.dims)}, data type {tensor.data_type}) holds data that does "
            f"not match its type and shape: {error}"
        ) from None


def _check_names(model: Any, label: str) -> None:
    """Every name is text: protobuf hands out a string field that is not
    valid UTF-8 as ``bytes`` (a damaged file)."""
    graph = model.graph
    names: list[Any] = [graph.name]
    names += [i.name for i in [*graph.input, *graph.output, *graph.value_info]]
    names += [t.name for t in graph.initializer]
    for node in graph.node:
        names += [node.name, node.op_type, node.domain, *node.input, *node.output]
        names += [a.name for a in node.attribute]
    if any(not isinstance(name, str) for name in names):
        raise OnnxImportError(f"{label} is damaged: a name in its graph is not valid UTF-8")


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=1x3x224x224`` (``NAME=`` for a scalar) as ``(name, dims)``."""
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise OnnxImportError(f"--input-shape '{spec}' must look like NAME=1x3x224x224")
    if not dims:
        return name, ()
    try:
        shape = tuple(int(d) for d in dims.split("x"))
    except ValueError:
        raise OnnxImportError(
            f"--input-shape '{spec}': dims must be positive integers separated by 'x'"
        ) from None
    if any(d <= 0 for d in shape):
        raise OnnxImportError(f"--input-shape '{spec}': dims must be positive")
    return name, shape


def _opsets(model: Any) -> dict[str, int]:
    opsets: dict[str, int] = {}
    for opset in model.opset_import:
        domain = "" if opset.domain in ("", "ai.onnx") else opset.domain
        opsets[domain] = opset.version
    return opsets


def _node_domain(node: Any) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def _describe_node(node: Any, index: int) -> str:
    name = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {name} ({node.op_type})"


def _apply_input_shapes(
    model: Any, initializer_names: set[str], shapes: Mapping[str, Sequence[int]]
) -> None:
    inputs = {i.name: i for i in model.graph.input if i.name not in initializer_names}
    for name, dims in shapes.items():
        if name not in inputs:
            raise OnnxImportError(
                f"--input-shape names '{name}', which is not a graph input "
                f"(inputs: {', '.join(inputs) or 'none'})"
            )
        tensor_type = inputs[name].type.tensor_type
        old = tensor_type.shape.dim if tensor_type.HasField("shape") else None
        if old is not None and len(old) != len(dims):
            raise OnnxImportError(
                f"--input-shape gives input '{name}' rank {len(dims)}, "
                f"the model says rank {len(old)}"
            )
        if old is not None:
            for axis, (given, dim) in enumerate(zip(dims, old)):
                if dim.HasField("dim_value") and dim.dim_value != given:
                    raise OnnxImportError(
                        f"--input-shape gives input '{name}' size {given} at axis "
                        f"{axis}, the model fixes it to {dim.dim_value}"
                    )
        tensor_type.ClearField("shape")
        tensor_type.shape.SetInParent()
        for given in dims:
            tensor_type.shape.dim.add().dim_value = given


# ---------------------------------------------------------------------------
# One-node evaluation (constant folding and runtime kernels)
# ---------------------------------------------------------------------------


def one_node_model(
    op_type: str,
    domain: str,
    opset: int,
    attributes: Sequence[Any],
    inputs: Sequence[tuple[np.dtype[Any], tuple[int, ...]] | None],
    output_count: int,
) -> tuple[Any, list[str], list[str]]:
    """A model holding one node; returns it with its input and output names.

    ``inputs`` lists each ONNX input slot's dtype and shape, ``None`` for an
    empty optional slot.
    """
    onnx = _onnx()
    helper = onnx.helper
    input_names = [f"in{i}" if spec is not None else "" for i, spec in enumerate(inputs)]
    output_names = [f"out{i}" for i in range(output_count)]
    node = helper.make_node(op_type, input_names, output_names, domain=domain or None)
    node.attribute.extend(attributes)
    graph_inputs = [
        helper.make_tensor_value_info(name, _onnx_elem_type(spec[0]), list(spec[1]))
        for name, spec in zip(input_names, inputs)
        if spec is not None
    ]
    graph_outputs = [helper.make_value_info(n, onnx.TypeProto()) for n in output_names]
    graph = helper.make_graph([node], op_type, graph_inputs, graph_outputs)
    opsets = [helper.make_opsetid(domain, opset)]
    if domain:
        opsets.append(helper.make_opsetid("", 13))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = max(helper.find_min_ir_version_for(opsets), 4)
    return model, [n for n in input_names if n], output_names


def reference_evaluator(model: Any) -> Any:
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model)


def _fold_node(
    node: Any,
    opset: int,
    values: Mapping[str, np.ndarray],
    evaluators: dict[tuple[Any, ...], CompiledNode],
) -> list[np.ndarray]:
    """Evaluate ``node`` on constant ``values``; ``evaluators`` caches the
    one-node models by signature (BatchNorm-heavy models repeat a few)."""
    if node.op_type == "ConstantOfShape" and _node_domain(node) == "":
        # A splat: broadcast_to keeps it zero-copy however large it is.
        shape = tuple(int(d) for d in values[node.input[0]])
        fill = np.zeros((1,), dtype=np.float32)
        for attribute in node.attribute:
            if attribute.name == "value":
                fill = tensor_array(attribute.t, f"attribute 'value' of {node.op_type}").reshape(-1)
        return [np.broadcast_to(fill[0], shape)]
    specs = [(np.asarray(values[n]).dtype, np.shape(values[n])) if n else None for n in node.input]
    key = (
        node.op_type,
        _node_domain(node),
        opset,
        tuple(a.SerializeToString() for a in node.attribute),
        tuple(specs),
        len(node.output),
    )
    if key not in evaluators:
        model, in_names, out_names = one_node_model(
            node.op_type, _node_domain(node), opset, node.attribute, specs, len(node.output)
        )
        evaluators[key] = CompiledNode(reference_evaluator(model), in_names, out_names)
    compiled = evaluators[key]
    feeds = {
        name: np.asarray(values[n], order="C")
        for name, n in zip(compiled.input_names, [n for n in node.input if n])
    }
    results = compiled.evaluator.run(None, feeds)
    return [np.asarray(r) for r in results]


@dataclass(frozen=True)
class CompiledNode:
    """A one-node model ready to run, with its input and output names."""

    evaluator: Any
    input_names: list[str]
    output_names: list[str]


@dataclass
class _Folded:
    """Constant tensors by name, and which nodes were folded away."""

    values: dict[str, np.ndarray]
    folded_nodes: set[int]


def _fold_constants(model: Any) -> _Folded:
    onnx = _onnx()
    graph = model.graph
    opsets = _opsets(model)
    values: dict[str, np.ndarray] = {
        init.name: tensor_array(init, f"initializer '{init.name}'") for init in graph.initializer
    }
    folded: set[int] = set()
    evaluators: dict[tuple[Any, ...], CompiledNode] = {}
    for index, node in enumerate(graph.node):
        if node.op_type in NONDETERMINISTIC_OPS:
            continue
        if any(
            a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            for a in node.attribute
        ):
            continue
        if not all(name == "" or name in values for name in node.input):
            continue
        domain = _node_domain(node)
        if domain not in opsets:
            continue
        try:
            results = _fold_node(node, opsets[domain], values, evaluators)
        except Exception:  # noqa: BLE001 - not foldable: it stays a runtime kernel
            continue
        folded.add(index)
        for name, result in zip(node.output, results):
            if name:
                values[name] = result
    return _Folded(values, folded)


# ---------------------------------------------------------------------------
# Shape inference
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _TensorInfo:
    element_type: Attribute
    shape: tuple[int, ...]

    @property
    def tensor_type(self) -> TensorType[Any]:
        return TensorType(self.element_type, self.shape)

    @property
    def memref_type(self) -> MemRefType[Any]:
        return MemRefType(self.element_type, self.shape)


def _infer_types(
    model: Any,
    folded: _Folded,
    live_nodes: Sequence[Any],
    constant_names: Iterable[str],
    graph_inputs: Sequence[Any],
) -> _InferredTypes:
    """ONNX ``TypeProto`` per tensor name, after shape inference."""
    onnx = _onnx()
    helper = onnx.helper
    graph = model.graph
    inputs = list(graph_inputs)
    initializers = []
    for name in constant_names:
        array = np.asarray(folded.values[name])
        if array.dtype == object:
            continue  # string constants: no element type we support anyway
        elem_type = _onnx_elem_type(array.dtype)
        if array.size <= SMALL_CONSTANT_ELEMENTS:
            initializers.append(onnx.numpy_helper.from_array(np.asarray(array, order="C"), name))
        else:
            inputs.append(helper.make_tensor_value_info(name, elem_type, list(array.shape)))
    inference_graph = helper.make_graph(
        list(live_nodes),
        graph.name or "main",
        inputs,
        list(graph.output),
        initializer=initializers,
        value_info=list(graph.value_info),
    )
    inference_model = helper.make_model(inference_graph, opset_imports=list(model.opset_import))
    inference_model.ir_version = max(model.ir_version, 4)
    inference_model.functions.extend(model.functions)
    try:
        inferred = onnx.shape_inference.infer_shapes(
            inference_model, check_type=True, strict_mode=True, data_prop=True
        )
        problem = None
    except Exception as error:  # InferenceError / ValidationError
        # Custom-domain ops have no shape function: keep going without them
        # (the model's own value_info may type their outputs), and name the
        # problem if a tensor ends up untyped.
        lines = str(error).strip().splitlines()
        problem = lines[0] if lines else type(error).__name__
        try:
            inferred = onnx.shape_inference.infer_shapes(
                inference_model, check_type=False, strict_mode=False, data_prop=True
            )
        except Exception:  # noqa: BLE001 - report the strict run's reason
            raise OnnxImportError(f"ONNX shape inference failed: {problem}") from error
    types: dict[str, Any] = {}
    inferred_graph = inferred.graph
    for info in [*inferred_graph.input, *inferred_graph.value_info, *inferred_graph.output]:
        if info.type.HasField("tensor_type") or info.name not in types:
            types[info.name] = info.type
    return _InferredTypes(types, problem)


@dataclass(frozen=True)
class _InferredTypes:
    """Types from shape inference, and why strict inference failed (if it did)."""

    types: dict[str, Any]
    problem: str | None


def _tensor_info(
    name: str,
    type_proto: Any | None,
    what: str,
    problem: str | None = None,
    advice: str | None = None,
) -> _TensorInfo:
    if type_proto is None or not type_proto.HasField("tensor_type"):
        kind = "no type" if type_proto is None else f"a {type_proto.WhichOneof('value')} type"
        because = f" (shape inference: {problem})" if problem else ""
        raise OnnxImportError(
            f"tensor '{name}' ({what}) has {kind} after shape inference{because}; "
            "only tensors with static shapes can be imported" + (f" ({advice})" if advice else "")
        )
    tensor_type = type_proto.tensor_type
    element = element_type_for(tensor_type.elem_type, name)
    if not tensor_type.HasField("shape"):
        raise OnnxImportError(f"tensor '{name}' ({what}) has an unknown rank after shape inference")
    dims: list[int] = []
    for axis, dim in enumerate(tensor_type.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            dims.append(dim.dim_value)
            continue
        symbol = f" '{dim.dim_param}'" if dim.dim_param else ""
        example = "x".join(
            str(d.dim_value) if d.HasField("dim_value") else "1" for d in tensor_type.shape.dim
        )
        hint = (
            f"fix it with --input-shape, e.g. --input-shape {name}={example}"
            if what == "graph input"
            else "give the graph inputs static shapes with --input-shape"
        )
        raise OnnxImportError(
            f"tensor '{name}' ({what}) has symbolic dim{symbol} at axis {axis}; {hint}"
        )
    return _TensorInfo(element, tuple(dims))


# ---------------------------------------------------------------------------
# IR emission
# ---------------------------------------------------------------------------


def _schema_outputs_optional(node: Any, opset: int) -> list[bool] | None:
    """Per formal output of ``node``'s schema: is it optional? ``None`` if unknown."""
    onnx = _onnx()
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, _node_domain(node))
    except Exception:  # noqa: BLE001 - custom domains have no schema
        return None
    optional = onnx.defs.OpSchema.FormalParameterOption.Optional
    return [o.option == optional for o in schema.outputs]


def _is_view(node: Any, present_outputs: int, constants: Mapping[str, np.ndarray]) -> bool:
    if _node_domain(node) != "" or node.op_type not in VIEW_OPS or present_outputs != 1:
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
    declarations: list[func.FuncOp] = field(default_factory=list)
    signatures: dict[tuple[Any, ...], func.FuncOp] = field(default_factory=dict)
    kernel_names: UniqueNames = field(default_factory=UniqueNames)

    def __post_init__(self) -> None:
        self.kernel_names.taken.add("main")
        self.symbols.taken.add("main")

    def constant(self, name: str, info: _TensorInfo, block: Block) -> SSAValue:
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
    ) -> func.FuncOp:
        """The kernel declaration for ``node``'s signature (created once)."""
        where = _describe_node(node, node_index)
        attributes: dict[str, Attribute] = {
            ONNX_ATTR_PREFIX + "op_type": StringAttr(node.op_type),
            ONNX_ATTR_PREFIX + "domain": StringAttr(_node_domain(node)),
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
        if view:
            attributes[VIEW_ATTR] = UnitAttr()
        elif node.op_type in INPLACE_OPS and _node_domain(node) == "" and len(result_types) == 1:
            same = [i for i, t in enumerate(operand_types) if t == result_types[0]]
            if same:
                attributes[INPLACE_ATTR] = DenseArrayBase.from_list(i64, [0, same[0]])
        key = (
            tuple(sorted((k, str(v)) for k, v in attributes.items())),
            tuple(operand_types),
            tuple(result_types),
        )
        existing = self.signatures.get(key)
        if existing is not None:
            return existing
        domain = _node_domain(node)
        base = "onnx." + (f"{domain}." if domain else "") + node.op_type
        name = self.kernel_names.get(sanitize_name(base))
        self.symbols.taken.add(name)
        declaration = func.FuncOp.external(name, list(operand_types), list(result_types))
        declaration.attributes.update(attributes)
        self.signatures[key] = declaration
        self.declarations.append(declaration)
        return declaration


def import_model(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    weights: WeightsMode = "external",
) -> ModuleOp:
    """The value-semantic module of ``model`` (a ``ModelProto``, not modified)."""
    return import_model_and_constants(model, input_shapes, weights)[0]


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
    info_of: Callable[[str, str], _TensorInfo],
    constants: Mapping[str, np.ndarray],
) -> list[_NodePlan]:
    plans: list[_NodePlan] = []
    for index, node in live:
        where = _describe_node(node, index)
        domain = _node_domain(node)
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
        view = bool(operands) and _is_view(node, len([n for n in outputs if n]), constants)
        if view:
            source = info_of(operands[0], f"input of {where}")
            target = info_of(outputs[0], f"output of {where}")
            count = int(np.prod(source.shape, dtype=np.int64))
            view = source.element_type == target.element_type and count == int(
                np.prod(target.shape, dtype=np.int64)
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
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """``import_model``, plus the folded constants by ONNX tensor name
    (the data of the globals, see ``global_data``)."""
    onnx = _onnx()
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    initializer_names = {init.name for init in graph.initializer}
    _apply_input_shapes(model, initializer_names, input_shapes or {})
    opsets = _opsets(model)
    folded = _fold_constants(model)
    constants = folded.values

    live = [(i, node) for i, node in enumerate(graph.node) if i not in folded.folded_nodes]
    graph_inputs = [i for i in graph.input if i.name not in initializer_names]
    for graph_input in graph_inputs:
        _tensor_info(graph_input.name, graph_input.type, "graph input")
    read_constants = _ordered_unique(n for _, node in live for n in node.input if n in constants)
    inferred = _infer_types(model, folded, [node for _, node in live], read_constants, graph_inputs)

    def info_of(name: str, what: str, advice: str | None = None) -> _TensorInfo:
        if name in constants:
            array = np.asarray(constants[name])
            if array.dtype == object:
                raise OnnxImportError(
                    f"tensor '{name}' ({what}) has unsupported element type STRING"
                )
            element = element_type_for(_onnx_elem_type(array.dtype), name)
            return _TensorInfo(element, tuple(array.shape))
        return _tensor_info(name, inferred.types.get(name), what, inferred.problem, advice)

    consumed = {n for _, node in live for n in node.input if n} | {o.name for o in graph.output}
    plans = _plan_nodes(live, opsets, consumed, info_of, constants)
    # The constants the IR reads: operands of calls and constant graph outputs.
    used_constants = _ordered_unique(
        n
        for n in [*(n for plan in plans for n in plan.operands), *(o.name for o in graph.output)]
        if n in constants
    )

    emitter = _Emitter(weights, constants)
    arg_infos = [info_of(i.name, "graph input") for i in graph_inputs]
    block = Block(arg_types=[info.tensor_type for info in arg_infos])
    values: dict[str, SSAValue] = {}
    for graph_input, argument in zip(graph_inputs, block.args):
        argument.name_hint = sanitize_name(graph_input.name)
        values[graph_input.name] = argument
    for name in used_constants:
        values[name] = emitter.constant(name, info_of(name, "constant"), block)

    for plan in plans:
        where = _describe_node(plan.node, plan.index)
        operands: list[SSAValue] = []
        for name in plan.operands:
            if name not in values:
                raise OnnxImportError(
                    f"{where} reads tensor '{name}', which nothing defines before it "
                    "(the graph must be topologically sorted)"
                )
            operands.append(values[name])
        advice = None
        if _schema_outputs_optional(plan.node, plan.opset) is None:
            domain = _node_domain(plan.node)
            advice = (
                f"ONNX has no shape function for {domain + '.' if domain else ''}"
                f"{plan.node.op_type}: give its outputs a value_info"
            )
        result_types = [info_of(n, f"output of {where}", advice).tensor_type for n in plan.results]
        declaration = emitter.declaration(
            plan.node,
            plan.index,
            plan.opset,
            [o.type for o in operands],
            result_types,
            None if plan.view else _slots(plan.node.input),
            _slots(plan.outputs),
            plan.view,
        )
        call = func.CallOp(declaration.sym_name.data, operands, result_types)
        for name, result in zip(plan.results, call.results):
            result.name_hint = sanitize_name(name)
            values[name] = result
        block.add_op(call)

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
    main.attributes[ONNX_ATTR_PREFIX + "inputs"] = ArrayAttr(
        StringAttr(i.name) for i in graph_inputs
    )
    main.attributes[ONNX_ATTR_PREFIX + "outputs"] = ArrayAttr(
        StringAttr(o.name) for o in graph.output
    )
    return ModuleOp([*emitter.globals, main, *emitter.declarations]), constants


def _ordered_unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def import_onnx(
    source: str | Path | bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    weights: WeightsMode = "external",
) -> ModuleOp:
    """Load and import the model at ``source`` (a path or the file's bytes)."""
    return import_model(load_model(source), input_shapes, weights)


def constant_values(
    model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> dict[str, np.ndarray]:
    """The folded constants of ``model`` by ONNX tensor name.

    These are the data of the globals an import without inline weights
    declares; ``memory.onnx.name`` on each global names its entry.
    """
    onnx = _onnx()
    model = onnx.ModelProto.FromString(model.SerializeToString())
    _apply_input_shapes(model, {i.name for i in model.graph.initializer}, input_shapes or {})
    return _fold_constants(model).values


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


def input_shapes_from(specs: Iterable[str]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, dims = parse_input_shape(spec)
        shapes[name] = dims
    return shapes
