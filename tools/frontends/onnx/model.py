"""ONNX models loaded and prepared for import: constants folded, shapes inferred.

The first three steps of `memplan-import-onnx` (see ``importer.py``):
load the model and fix its input shapes, fold every constant node with
ONNX's reference evaluator, and run strict shape inference. Also the ONNX
element types as builtin types.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    ComplexType,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

from memplan.tools.frontends.protocol import FrontendError

WeightsMode = Literal["external", "inline"]

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


class OnnxImportError(FrontendError):
    """A model memplan cannot import; the message names the tensor or node."""


# ---------------------------------------------------------------------------
# ONNX element types <-> builtin types
# ---------------------------------------------------------------------------


def onnx_module():
    """The ``onnx`` package, imported on first use (a test-only dependency)."""
    try:
        import onnx
    except ImportError as error:  # pragma: no cover - onnx is in [test]
        raise OnnxImportError("the onnx package is not installed (pip install onnx)") from error
    return onnx


@cache
def _element_types() -> dict[int, Attribute]:
    tensor_proto = onnx_module().TensorProto
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
        tensor_proto.BFLOAT16: BFloat16Type(),
        tensor_proto.COMPLEX64: ComplexType(f32),
        tensor_proto.COMPLEX128: ComplexType(f64),
        tensor_proto.FLOAT8E4M3FN: Float8E4M3FNType(),
        tensor_proto.FLOAT8E4M3FNUZ: Float8E4M3FNUZType(),
        tensor_proto.FLOAT8E5M2: Float8E5M2Type(),
        tensor_proto.FLOAT8E5M2FNUZ: Float8E5M2FNUZType(),
        tensor_proto.FLOAT8E8M0: Float8E8M0FNUType(),
        tensor_proto.FLOAT4E2M1: Float4E2M1FNType(),
        tensor_proto.INT4: IntegerType(4),
        tensor_proto.UINT4: IntegerType(4, Signedness.UNSIGNED),
        tensor_proto.INT2: IntegerType(2),
        tensor_proto.UINT2: IntegerType(2, Signedness.UNSIGNED),
    }


def _element_type_name(elem_type: int) -> str:
    try:
        return onnx_module().TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"data type {elem_type}"


def element_type_for(elem_type: int, tensor: str) -> Attribute:
    """The builtin element type of ONNX ``elem_type``, or an error naming ``tensor``."""
    types = _element_types()
    if elem_type not in types:
        # STRING is the one ONNX element type without a fixed size (and
        # UNDEFINED, or a number a newer ONNX added, none we know).
        why = (
            "its elements have no fixed size, so memplan cannot plan its bytes"
            if elem_type == onnx_module().TensorProto.STRING
            else "memplan knows no size for it"
        )
        raise OnnxImportError(
            f"tensor '{tensor}' has element type {_element_type_name(elem_type)}: {why}"
        )
    return types[elem_type]


def onnx_elem_type(dtype: np.dtype[Any]) -> int:
    return onnx_module().helper.np_dtype_to_tensor_dtype(dtype)


# ---------------------------------------------------------------------------
# Loading and preparing the model
# ---------------------------------------------------------------------------


def load_model(source: str | Path | bytes) -> Any:
    """Parse an ONNX model from a path or bytes; errors are ``OnnxImportError``."""
    onnx = onnx_module()
    if isinstance(source, bytes):
        data = source
        label = "input"
    else:
        label = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as error:
            raise OnnxImportError(f"cannot read {label}: {error.strerror}") from error
    if data[4:8] == b"TFL3":  # TFLite's file identifier
        raise OnnxImportError(
            f"{label} is a TFLite model, not an ONNX one: import it with memplan-import-tflite"
        )
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
        return onnx_module().numpy_helper.to_array(tensor)
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


def parse_bound(spec: str, option: str = "--upper-bound") -> tuple[str, int]:
    """``SYMBOL=N`` (a bound of a symbolic dim, given as ``option``;
    ``INPUT:AXIS`` for a dim without a symbol) as ``(symbol, N)``."""
    name, sep, value = spec.rpartition("=")
    if not sep or not name:
        raise OnnxImportError(f"{option} '{spec}' must look like SYMBOL=N or INPUT:AXIS=N")
    try:
        bound = int(value)
    except ValueError:
        bound = 0
    if bound <= 0:
        raise OnnxImportError(f"{option} '{spec}': the bound must be a positive integer")
    return name, bound


def opset_versions(model: Any) -> dict[str, int]:
    opsets: dict[str, int] = {}
    for opset in model.opset_import:
        domain = "" if opset.domain in ("", "ai.onnx") else opset.domain
        opsets[domain] = opset.version
    return opsets


def node_domain(node: Any) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def describe_node(node: Any, index: int) -> str:
    name = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {name} ({node.op_type})"


MAX_LOOP_TRIPS = 2**31 - 1
"""The largest constant ``Loop`` trip count imported (an ``scf.for`` whose scan
outputs stack one slice per iteration, and which memplan-run runs)."""


def check_model(model: Any) -> None:
    """Refuse what the ONNX spec forbids and the importer would otherwise
    turn into a program silently (``OnnxImportError``, one line): a default
    opset newer than the onnx package knows, a name defined twice in one
    graph (two nodes, or a node and a graph input or initializer), and, from
    IR version 4 on, an initializer with a graph input's name (the input's
    default, which a caller may override: importing it as a constant would
    ignore the caller's value)."""
    onnx = onnx_module()
    known = onnx.defs.onnx_opset_version()
    version = opset_versions(model).get("")
    if version is not None and version > known:
        raise OnnxImportError(
            f"opset {version} of the default ONNX domain is newer than this onnx package "
            f"knows (opset {known})"
        )
    for path, graph in [((), model.graph), *subgraphs(model.graph)]:
        where = "the graph" if not path else f"the subgraph at {'/'.join(map(str, path))}"
        defined: dict[str, str] = {}
        inputs = {i.name for i in graph.input}
        for init in graph.initializer:
            if init.name in inputs and model.ir_version >= 4:
                raise OnnxImportError(
                    f"initializer '{init.name}' has the name of a graph input of {where}: from "
                    f"IR version 4 (this model: {model.ir_version}) that makes it the input's "
                    "default, which a caller may override; memplan imports constants only "
                    "(remove the input or the initializer)"
                )
            defined[init.name] = "an initializer"
        for graph_input in graph.input:
            defined.setdefault(graph_input.name, "a graph input")
        for index, node in enumerate(graph.node):
            for name in node.output:
                if not name:
                    continue
                if name in defined:
                    raise OnnxImportError(
                        f"'{name}' is defined twice in {where}: by {defined[name]} and by "
                        f"{describe_node(node, index)} (ONNX graphs are in SSA form)"
                    )
                defined[name] = describe_node(node, index)


def check_reshapes(
    model: Any, types: Mapping[str, Any], values: Mapping[str, Any], branch_advice: str = ""
) -> None:
    """A ``Reshape`` whose input shape (``types``, from inference) and target
    shape (a folded constant in ``values``) are both known must keep the
    element count (``OnnxImportError`` naming the node and both shapes, and
    ``branch_advice`` when the node is in a subgraph)."""
    for path, graph in [((), model.graph), *subgraphs(model.graph)]:
        for index, node in enumerate(graph.node):
            if node.op_type != "Reshape" or node_domain(node) or len(node.input) < 2:
                continue
            source = _static_dims(types.get(node.input[0]))
            if source is None or node.input[1] not in values:
                continue
            shape = [int(d) for d in np.asarray(values[node.input[1]]).reshape(-1)]
            allowzero = any(a.name == "allowzero" and a.i for a in node.attribute)
            dims = source[1]
            target = [
                dims[i] if d == 0 and not allowzero and i < len(dims) else d
                for i, d in enumerate(shape)
            ]
            count = int(np.prod(dims, dtype=object))
            known = int(np.prod([d for d in target if d != -1], dtype=object))
            wildcard = target.count(-1)
            if wildcard == 0 and known != count or wildcard == 1 and (known == 0 or count % known):
                raise OnnxImportError(
                    f"{describe_node(node, index)}: the {count} elements of "
                    f"'{node.input[0]}' {list(dims)} cannot take the shape {shape}"
                    + (f" ({branch_advice})" if path and branch_advice else "")
                )


def apply_input_shapes(
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
        if old is None and -1 in dims:
            raise OnnxImportError(
                f"--input-shape gives input '{name}' a '?' dim, but the model gives it no "
                "shape to keep"
            )
        if old is not None:
            for axis, (given, dim) in enumerate(zip(dims, old)):
                if given != -1 and dim.HasField("dim_value") and dim.dim_value != given:
                    raise OnnxImportError(
                        f"--input-shape gives input '{name}' size {given} at axis "
                        f"{axis}, the model fixes it to {dim.dim_value}"
                    )
        kept = [copy.copy(dim) for dim in old] if old is not None else []
        tensor_type.ClearField("shape")
        tensor_type.shape.SetInParent()
        for axis, given in enumerate(dims):
            if given == -1:
                tensor_type.shape.dim.add().CopyFrom(kept[axis])
            else:
                tensor_type.shape.dim.add().dim_value = given


def prepare_model(
    model: Any,
    shapes: Mapping[str, Sequence[int]],
    upper_bounds: Mapping[str, int] | None = None,
    input_values: Mapping[str, Sequence[float]] | None = None,
) -> Any:
    """A copy of ``model`` to import: model-local functions inlined (their
    nodes become the graph's, so they plan and run like any other), the
    graph inputs' shapes fixed from ``shapes``, each unnamed dynamic dim
    that ``upper_bounds`` bounds as ``INPUT:AXIS`` named so, and each input
    of ``input_values`` an initializer holding those values."""
    onnx = onnx_module()
    model = onnx.ModelProto.FromString(model.SerializeToString())
    if model.functions:
        import onnx.inliner

        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as error:  # noqa: BLE001 - the inliner's own errors
            raise OnnxImportError(f"cannot inline the model's local functions: {error}") from None
    initializers = {init.name for init in model.graph.initializer}
    unname_negative_dims(model.graph)
    apply_input_shapes(model, initializers, shapes)
    name_bounded_dims(model, initializers, upper_bounds or {})
    apply_input_values(model, initializers, input_values or {})
    return model


def name_bounded_dims(
    model: Any, initializer_names: set[str], upper_bounds: Mapping[str, int]
) -> None:
    """Give each unnamed dynamic dim that ``upper_bounds`` names as
    ``INPUT:AXIS`` that name as its symbol (``dim_param``), so it is bounded
    like a named one. A name that is already a symbol stays one; one that
    names no input, an axis out of range, a static dim or a named one is an
    error (the last says the symbol to bound instead)."""
    inputs = {i.name: i for i in model.graph.input if i.name not in initializer_names}
    symbols = {
        dim.dim_param
        for graph_input in inputs.values()
        for dim in graph_input.type.tensor_type.shape.dim
        if not dim.HasField("dim_value") and dim.dim_param
    }
    for key in upper_bounds:
        if key in symbols:
            continue
        name, colon, axis_text = key.rpartition(":")
        if not colon or name not in inputs or not axis_text.isdigit():
            continue  # at_upper_bounds names the symbols there are
        axis = int(axis_text)
        tensor_type = inputs[name].type.tensor_type
        dims = tensor_type.shape.dim if tensor_type.HasField("shape") else []
        if axis >= len(dims):
            raise OnnxImportError(
                f"--upper-bound {key}: input '{name}' has rank {len(dims)}, no axis {axis}"
            )
        dim = dims[axis]
        if dim.HasField("dim_value"):
            raise OnnxImportError(
                f"--upper-bound {key}: axis {axis} of input '{name}' is static "
                f"({dim.dim_value}), there is nothing to bound"
            )
        if dim.dim_param:
            raise OnnxImportError(
                f"--upper-bound {key}: axis {axis} of input '{name}' is the symbol "
                f"'{dim.dim_param}': bound it with --upper-bound {dim.dim_param}={upper_bounds[key]}"
            )
        dim.dim_param = key


def parse_input_value(spec: str) -> tuple[str, tuple[float, ...]]:
    """``NAME=V[,V...]`` (the values of a graph input, row-major) as
    ``(name, values)``; each value an integer or a float."""
    name, sep, text = spec.rpartition("=")
    if not sep or not name or not text:
        raise OnnxImportError(f"--input-value '{spec}' must look like NAME=V[,V...], e.g. sr=16000")
    values: list[float] = []
    for item in text.split(","):
        try:
            values.append(int(item))
        except ValueError:
            try:
                values.append(float(item))
            except ValueError:
                raise OnnxImportError(f"--input-value '{spec}': '{item}' is not a number") from None
    return name, tuple(values)


def apply_input_values(
    model: Any, initializer_names: set[str], input_values: Mapping[str, Sequence[float]]
) -> None:
    """Make each graph input named in ``input_values`` an initializer holding
    those values, in the input's own element type and (static) shape: the
    import folds what it decides (an ``If`` on it becomes the branch taken)."""
    onnx = onnx_module()
    inputs = {i.name: i for i in model.graph.input if i.name not in initializer_names}
    for name, given in input_values.items():
        if name not in inputs:
            raise OnnxImportError(
                f"--input-value names '{name}', which is not a graph input "
                f"(inputs: {', '.join(inputs) or 'none'})"
            )
        value_type = inputs[name].type
        tensor_type = value_type.tensor_type if value_type.HasField("tensor_type") else None
        if tensor_type is None or not tensor_type.HasField("shape"):
            raise OnnxImportError(
                f"--input-value {name}: the model gives input '{name}' no tensor shape; "
                "give one with --input-shape"
            )
        dims = tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            shape_text = "x".join(
                str(d.dim_value) if d.HasField("dim_value") else "?" for d in dims
            )
            raise OnnxImportError(
                f"--input-value {name}: input '{name}' has dynamic shape [{shape_text}]; "
                f"fix it with --input-shape {name}=..."
            )
        shape = tuple(d.dim_value for d in dims)
        count = int(np.prod(shape, dtype=np.int64))
        if len(given) != count:
            raise OnnxImportError(
                f"--input-value {name}: {len(given)} values given, input '{name}' of shape "
                f"{list(shape)} holds {count}"
            )
        element_type_for(tensor_type.elem_type, name)  # STRING and the like: refused
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
        array = _values_as(given, dtype, name).reshape(shape)
        model.graph.initializer.append(onnx.numpy_helper.from_array(array, name))
        kept = [i for i in model.graph.input if i.name != name]
        del model.graph.input[:]
        model.graph.input.extend(kept)


def _values_as(given: Sequence[float], dtype: np.dtype[Any], name: str) -> np.ndarray:
    """``given`` as an array of ``dtype``; a value the type cannot hold
    exactly (1.5 as an integer, 300 as uint8) is an error naming ``name``."""
    if dtype == np.bool_:
        if any(v not in (0, 1) for v in given):
            raise OnnxImportError(f"--input-value {name}: a BOOL input takes 0 or 1")
        return np.array([bool(v) for v in given], dtype=np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        for v in given:
            if float(v) != int(v) or not info.min <= int(v) <= info.max:
                raise OnnxImportError(
                    f"--input-value {name}: {v} does not fit {dtype.name} "
                    f"(integers {info.min}..{info.max})"
                )
        return np.array([int(v) for v in given], dtype=dtype)
    return np.array(given, dtype=np.float64).astype(dtype)


def unname_negative_dims(graph: Any) -> None:
    """Clears ``dim_value: -1`` (any negative value), which older exporters
    store for a dynamic dim, on the graph's inputs, outputs and value_info:
    it is an unnamed dynamic dim, which ``--input-shape`` fixes."""
    for value in (*graph.input, *graph.output, *graph.value_info):
        tensor_type = value.type.tensor_type if value.type.HasField("tensor_type") else None
        if tensor_type is None or not tensor_type.HasField("shape"):
            continue
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value < 0:
                dim.ClearField("dim_value")


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
    onnx = onnx_module()
    helper = onnx.helper
    input_names = [f"in{i}" if spec is not None else "" for i, spec in enumerate(inputs)]
    output_names = [f"out{i}" for i in range(output_count)]
    node = helper.make_node(op_type, input_names, output_names, domain=domain or None)
    node.attribute.extend(attributes)
    graph_inputs = [
        helper.make_tensor_value_info(name, onnx_elem_type(spec[0]), list(spec[1]))
        for name, spec in zip(input_names, inputs)
        if spec is not None
    ]
    graph_outputs = [helper.make_value_info(n, onnx.TypeProto()) for n in output_names]
    graph = helper.make_graph([node], op_type, graph_inputs, graph_outputs)
    opsets = [helper.make_opsetid(domain, opset)]
    if domain:
        opsets.append(helper.make_opsetid("", 13))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = max(helper.find_min_ir_version_for(opsets, ignore_unknown=True), 4)
    return model, [n for n in input_names if n], output_names


def reference_evaluator(model: Any) -> Any:
    """ONNX's reference evaluator of ``model``, with memplan's corrections
    of its kernels (``reference_ops``)."""
    from onnx.reference import ReferenceEvaluator

    from memplan.tools.frontends.onnx.reference_ops import REFERENCE_OPS

    return ReferenceEvaluator(model, new_ops=REFERENCE_OPS)


def evaluate(evaluator: Any, names: list[str] | None, feeds: Mapping[str, Any]) -> list[Any]:
    """``evaluator.run(names, feeds)`` with NumPy's floating-point warnings
    off: a NaN cast to an integer or an overflow is the operator's defined
    numerics (ONNX's conformance outputs include them), not a failure, and
    under ``-W error`` NumPy's warning would be raised as one."""
    with np.errstate(all="ignore"):
        return evaluator.run(names, feeds)


def _fold_node(
    node: Any,
    opset: int,
    values: Mapping[str, np.ndarray],
    evaluators: dict[tuple[Any, ...], CompiledNode],
) -> list[np.ndarray]:
    """Evaluate ``node`` on constant ``values``; ``evaluators`` caches the
    one-node models by signature (BatchNorm-heavy models repeat a few)."""
    if node.op_type == "ConstantOfShape" and node_domain(node) == "":
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
        node_domain(node),
        opset,
        tuple(a.SerializeToString() for a in node.attribute),
        tuple(specs),
        len(node.output),
    )
    if key not in evaluators:
        model, in_names, out_names = one_node_model(
            node.op_type, node_domain(node), opset, node.attribute, specs, len(node.output)
        )
        evaluators[key] = CompiledNode(reference_evaluator(model), in_names, out_names)
    compiled = evaluators[key]
    feeds = {
        name: np.asarray(values[n], order="C")
        for name, n in zip(compiled.input_names, [n for n in node.input if n])
    }
    results = evaluate(compiled.evaluator, None, feeds)
    return [np.asarray(r) for r in results]


@dataclass(frozen=True)
class CompiledNode:
    """A one-node model ready to run, with its input and output names."""

    evaluator: Any
    input_names: list[str]
    output_names: list[str]


GraphPath = tuple[int | str, ...]
"""Where a graph sits in a model: ``()`` is the model's graph, and each level
of nesting adds the index of the node holding the subgraph and the name of
its graph attribute (``(3, "then_branch")``)."""


def subgraphs(graph: Any, path: GraphPath = ()) -> list[tuple[GraphPath, Any]]:
    """The graphs held by ``graph``'s nodes (``If`` branches, ``Loop`` bodies),
    each with its path, recursively, outermost first."""
    onnx = onnx_module()
    found: list[tuple[GraphPath, Any]] = []
    for index, node in enumerate(graph.node):
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                inner = (*path, index, attribute.name)
                found.append((inner, attribute.g))
                found.extend(subgraphs(attribute.g, inner))
    return found


def has_subgraph(node: Any) -> bool:
    onnx = onnx_module()
    graph_kinds = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    return any(a.type in graph_kinds for a in node.attribute)


@dataclass
class FoldedConstants:
    """Constant tensors by name, which nodes were folded away (by graph path
    and index: ``(*path, index)``), and the graph that defines each constant
    (an initializer or a folded node's output there)."""

    values: dict[str, np.ndarray]
    folded_nodes: set[GraphPath]
    defined_in: dict[str, GraphPath]


def fold_constants(model: Any) -> FoldedConstants:
    """Fold the model's graph and the graphs nested in it: a subgraph's node
    folds when its inputs are constants of its own graph or an enclosing one.

    An ``If`` whose condition folds is replaced by the branch it takes (its
    nodes spliced in, an ``Identity`` per output), in ``model`` itself, and
    folding runs again: exported models test shapes this way (PyTorch's
    ``squeeze`` on a dim that may be 1), and the branches may not even agree
    on a rank. ``If``s with a run-time condition stay.
    """
    evaluators: dict[tuple[Any, ...], CompiledNode] = {}
    while True:
        folded = FoldedConstants({}, set(), {})
        _fold_graph(model.graph, (), opset_versions(model), folded, evaluators)
        if _splice_constant_ifs(model.graph, folded.values):
            continue
        # Shape computations (Shape -> Slice -> Concat -> Reshape, anchors
        # from Shape -> Range, a condition Shape -> Gather -> Equal): fold
        # the Shape and Size ops whose input has a static inferred shape,
        # and go again. At any opset: ONNX's own inference propagates such
        # values only from opset 13 on, and not through every op.
        if not _fold_static_shapes(model, folded):
            return folded


SHAPE_OPS: frozenset[str] = frozenset({"Shape", "Size"})
"""Ops whose result depends only on their input's shape."""


def _fold_static_shapes(model: Any, folded: FoldedConstants) -> bool:
    """Replace each live ``Shape`` or ``Size`` (in the model's graph or a
    nested one) whose input has a static inferred shape (the folded
    constants given by value) by a ``Constant``; did anything change?"""
    onnx = onnx_module()
    graph = model.graph
    candidates = [
        (path, index, node)
        for path, g in [((), graph), *subgraphs(graph)]
        for index, node in enumerate(g.node)
        if node.op_type in SHAPE_OPS
        and node_domain(node) == ""
        and (*path, index) not in folded.folded_nodes
    ]
    if not candidates:
        return False  # no inference needed: most models end here
    try:
        # Here, not at the top: shapes.py imports this module (types need
        # folding, and folding some shapes needs types).
        from memplan.tools.frontends.onnx.shapes import infer_types

        # pyright sees this file both as itself and as memplan.tools...model.
        types = infer_types(model, folded).types  # pyright: ignore[reportArgumentType]
    except OnnxImportError:
        return False
    changed = False
    for _, _, node in candidates:
        static = _static_dims(types.get(node.input[0])) if node.input else None
        if static is None:
            continue
        shape = np.array(static[1], dtype=np.int64)
        if node.op_type == "Size":
            array = np.array(np.prod(shape, dtype=np.int64), dtype=np.int64)
        else:
            # Shape's start and end (opset 15) clamp like Python's slices.
            bounds = {a.name: a.i for a in node.attribute}
            array = shape[slice(bounds.get("start", 0), bounds.get("end", len(shape)))]
        value = onnx.numpy_helper.from_array(array)
        constant = onnx.helper.make_node(
            "Constant", [], list(node.output), name=node.name, value=value
        )
        node.CopyFrom(constant)
        changed = True
    return changed


def _splice_constant_ifs(graph: Any, values: Mapping[str, np.ndarray]) -> bool:
    """Replace each ``If`` of ``graph`` (and of its subgraphs) whose condition
    is in ``values`` by the branch it takes; did anything change?"""
    onnx = onnx_module()
    changed = False
    nodes: list[Any] = []
    for node in graph.node:
        condition = values.get(node.input[0]) if node.input else None
        if node.op_type != "If" or node_domain(node) != "" or condition is None:
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    changed |= _splice_constant_ifs(attribute.g, values)
            nodes.append(node)
            continue
        taken = "then_branch" if bool(np.asarray(condition).reshape(-1)[0]) else "else_branch"
        [branch] = [a.g for a in node.attribute if a.name == taken]
        graph.initializer.extend(branch.initializer)
        nodes.extend(branch.node)
        for inner, outer in zip(branch.output, node.output):
            if outer:
                nodes.append(
                    onnx.helper.make_node(
                        "Identity", [inner.name], [outer], name=f"{node.name}/{taken}"
                    )
                )
        changed = True
    if changed:
        del graph.node[:]
        graph.node.extend(nodes)
    return changed


def _fold_graph(
    graph: Any,
    path: GraphPath,
    opsets: Mapping[str, int],
    folded: FoldedConstants,
    evaluators: dict[tuple[Any, ...], CompiledNode],
) -> None:
    values = folded.values
    for init in graph.initializer:
        values[init.name] = tensor_array(init, f"initializer '{init.name}'")
        folded.defined_in[init.name] = path
    for index, node in enumerate(graph.node):
        if has_subgraph(node):
            _assume_loop_continues(node, (*path, index), folded)
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    _fold_graph(
                        attribute.g, (*path, index, attribute.name), opsets, folded, evaluators
                    )
            continue
        if node.op_type in NONDETERMINISTIC_OPS:
            continue
        if not all(name == "" or name in values for name in node.input):
            continue
        domain = node_domain(node)
        if domain not in opsets:
            continue
        try:
            results = _fold_node(node, opsets[domain], values, evaluators)
        except Exception:  # noqa: BLE001 - not foldable: it stays a runtime kernel
            continue
        folded.folded_nodes.add((*path, index))
        for name, result in zip(node.output, results):
            if name:
                values[name] = result
                folded.defined_in[name] = path


def _assume_loop_continues(node: Any, path: GraphPath, folded: FoldedConstants) -> None:
    """Fold a ``Loop`` body's condition input as ``True`` when the loop starts
    with a constant true (or no) condition.

    By induction this is sound exactly when the body's condition output then
    folds to ``True`` too, which the importer requires of a Loop (else it
    would need ``scf.while``): PyTorch's ``for`` loops pass it through an
    ``Identity``, which then folds.
    """
    if node.op_type != "Loop" or node_domain(node) != "" or len(node.input) < 2:
        return
    condition = node.input[1]
    if condition and not (
        condition in folded.values and bool(np.asarray(folded.values[condition]).all())
    ):
        return
    for attribute in node.attribute:
        if attribute.name == "body" and attribute.HasField("g") and len(attribute.g.input) > 1:
            name = attribute.g.input[1].name
            folded.values[name] = np.array(True)
            folded.defined_in[name] = (*path, "body")


# ---------------------------------------------------------------------------
# Shape inference
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    element_type: Attribute
    shape: tuple[int, ...]
    """Dims, ``-1`` for a dynamic one."""
    max_shape: tuple[int, ...] | None = None
    """The shape when every symbolic dim of the graph inputs is at its upper
    bound (``--upper-bound``); ``None`` when ``shape`` is static."""

    @property
    def bound_shape(self) -> tuple[int, ...]:
        return self.max_shape if self.max_shape is not None else self.shape

    @property
    def tensor_type(self) -> TensorType[Any]:
        return TensorType(self.element_type, self._builtin_shape)

    @property
    def memref_type(self) -> MemRefType[Any]:
        return MemRefType(self.element_type, self._builtin_shape)

    @property
    def _builtin_shape(self) -> list[int]:
        return [DYNAMIC_INDEX if d < 0 else d for d in self.shape]


def live_nodes(graph: Any, path: GraphPath, folded: FoldedConstants) -> list[tuple[int, Any]]:
    """The (index, node) pairs of ``graph`` (at ``path``) that did not fold."""
    return [(i, node) for i, node in enumerate(graph.node) if (*path, i) not in folded.folded_nodes]


def graphs_held(node: Any) -> list[Any]:
    """The graphs ``node`` holds, and every graph nested in them."""
    held = [a.g for a in node.attribute if a.HasField("g")]
    return [g for h in held for g in [h, *(inner for _, inner in subgraphs(h))]]


def names_read_inside(live: Sequence[tuple[int, Any]]) -> list[str]:
    """Tensor names read by the nodes and outputs of the graphs ``live`` holds."""
    return [
        n
        for _, node in live
        for g in graphs_held(node)
        for n in [*(n for inner in g.node for n in inner.input if n), *(o.name for o in g.output)]
    ]


def graph_inputs(model: Any) -> list[Any]:
    """The graph's inputs that are not initializers (IR < 4 lists those too)."""
    initializers = {init.name for init in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def input_symbols(model: Any) -> dict[str, list[tuple[str, int]]]:
    """The named symbolic dims of the graph inputs: symbol -> (input, axis) list."""
    symbols: dict[str, list[tuple[str, int]]] = {}
    for graph_input in graph_inputs(model):
        tensor_type = graph_input.type.tensor_type
        for axis, dim in enumerate(tensor_type.shape.dim):
            if not dim.HasField("dim_value") and dim.dim_param:
                symbols.setdefault(dim.dim_param, []).append((graph_input.name, axis))
    return symbols


def _static_dims(type_proto: Any | None) -> tuple[int, tuple[int, ...]] | None:
    """(element type, shape) of a tensor type with a static shape, else ``None``."""
    if type_proto is None or not type_proto.tensor_type.HasField("shape"):
        return None
    dims = type_proto.tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in dims):
        return None
    return type_proto.tensor_type.elem_type, tuple(d.dim_value for d in dims)


def symbolic_dims(type_proto: Any | None) -> tuple[int | str, ...] | None:
    """A tensor type's dims, each a size or its symbol; ``None`` without a
    shape, or with a dim that has neither."""
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return None
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims: list[int | str] = []
    for dim in tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(dim.dim_value)
        elif dim.dim_param:
            dims.append(dim.dim_param)
        else:
            return None
    return tuple(dims)


@dataclass(frozen=True)
class InferredTypes:
    """Types from shape inference, and why strict inference failed (if it did)."""

    types: dict[str, Any]
    problem: str | None


def tensor_info(
    name: str,
    type_proto: Any | None,
    what: str,
    problem: str | None = None,
    advice: str | None = None,
    bound_type: Any | None = None,
) -> TensorInfo:
    """The element type and shape of tensor ``name`` from its inferred type.

    A dim that is not static is an error, unless ``bound_type`` (its type
    inferred with the graph inputs at their upper bounds) gives it a static
    size there: then the dim is dynamic (``-1``) and that size its bound.
    """
    because = f" (shape inference: {problem})" if problem else ""
    if type_proto is None or not type_proto.HasField("tensor_type"):
        kind = "no type" if type_proto is None else f"a {type_proto.WhichOneof('value')} type"
        raise OnnxImportError(
            f"tensor '{name}' ({what}) has {kind} after shape inference{because}; "
            "only tensors with static shapes can be imported" + (f" ({advice})" if advice else "")
        )
    tensor_type = type_proto.tensor_type
    element = element_type_for(tensor_type.elem_type, name)
    if not tensor_type.HasField("shape"):
        raise OnnxImportError(
            f"tensor '{name}' ({what}) has an unknown rank after shape inference{because}"
            + (f"; {advice}" if advice else "")
        )
    bound = _static_dims(bound_type)
    dims: list[int] = []
    max_dims: list[int] = []
    for axis, dim in enumerate(tensor_type.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            dims.append(dim.dim_value)
            max_dims.append(dim.dim_value)
            continue
        if bound is not None and len(bound[1]) == len(tensor_type.shape.dim):
            dims.append(-1)
            max_dims.append(bound[1][axis])
            continue
        symbol = f" '{dim.dim_param}'" if dim.dim_param else ""
        if bound_type is not None:
            raise OnnxImportError(
                f"tensor '{name}' ({what}) has symbolic dim{symbol} at axis {axis}{because}, "
                "with no static size even when the graph inputs are at their upper bounds "
                f"({type_text(bound_type)} there): its size depends on data"
            )
        example = "x".join(
            str(d.dim_value) if d.HasField("dim_value") else "1" for d in tensor_type.shape.dim
        )
        if what == "graph input":
            hint = f"fix it with --input-shape, e.g. --input-shape {name}={example}"
            symbol_name = dim.dim_param or f"{name}:{axis}"
            hint += f", or bound it with --upper-bound {symbol_name}=<max>"
        else:
            hint = "give the graph inputs static shapes with --input-shape"
        raise OnnxImportError(
            f"tensor '{name}' ({what}) has symbolic dim{symbol} at axis {axis}{because}; "
            + (advice or hint)
        )
    if -1 not in dims:
        return TensorInfo(element, tuple(dims))
    return TensorInfo(element, tuple(dims), tuple(max_dims))


def type_text(type_proto: Any | None) -> str:
    """An ONNX tensor type's shape as ``[2,?,8]`` (``?``: unknown dim), or ``unknown``."""
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return "unknown"
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return "unknown rank"
    dims = [
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
        for d in tensor_type.shape.dim
    ]
    return "[" + ",".join(dims) + "]"
