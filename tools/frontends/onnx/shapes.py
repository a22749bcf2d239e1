"""Shape inference of ONNX models as the importer needs it: ONNX's own
(``onnx.shape_inference`` with data propagation) over the live nodes, with
the folded constants as initializers, run again with what a round learned
(a Loop's carried types, ONNX Runtime contrib ops' outputs, Reshape and
ConstantOfShape targets read from shapes) until nothing more is learned;
the types at the upper bounds, the types in which one symbol means one
size at run time, and the output types sized by data within a bound.
``model`` reads, checks and folds models; this module types them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import prod
from typing import Any

import numpy as np

from memplan.tools.frontends.onnx.model import (
    SMALL_CONSTANT_ELEMENTS,
    FoldedConstants,
    GraphPath,
    InferredTypes,
    OnnxImportError,
    _static_dims,
    graph_inputs,
    has_subgraph,
    input_symbols,
    live_nodes,
    names_read_inside,
    node_domain,
    onnx_elem_type,
    onnx_module,
    subgraphs,
    symbolic_dims,
)


def at_upper_bounds(model: Any, upper_bounds: Mapping[str, int]) -> Any:
    """A copy of ``model`` whose graph inputs have each symbolic dim named in
    ``upper_bounds`` set to its bound (every name must be such a symbol; the
    lower ends of ranges are set the same way)."""
    symbols = input_symbols(model)
    for name in upper_bounds:
        if name not in symbols:
            known = ", ".join(f"'{s}'" for s in symbols) or "none"
            unnamed = ", ".join(
                f"{graph_input.name}:{axis}"
                for graph_input in graph_inputs(model)
                for axis, dim in enumerate(graph_input.type.tensor_type.shape.dim)
                if not dim.HasField("dim_value") and not dim.dim_param
            )
            raise OnnxImportError(
                f"--upper-bound names '{name}', which is no symbolic dim of a graph input "
                f"(symbols: {known}"
                + (f"; dims without a symbol, as INPUT:AXIS: {unnamed}" if unnamed else "")
                + ")"
            )
    bounded = onnx_module().ModelProto()
    bounded.CopyFrom(model)
    for graph_input in graph_inputs(bounded):
        for dim in graph_input.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value") and dim.dim_param in upper_bounds:
                dim.dim_value = upper_bounds[dim.dim_param]
    return bounded


MAX_INFERENCE_ROUNDS = 16
"""Rounds of ``infer_types`` at most: each learns types for the next; a
model that still learns after them is typed as the last round left it."""


def infer_types(model: Any, folded: FoldedConstants) -> InferredTypes:
    """ONNX ``TypeProto`` per tensor name, after shape inference of the live
    nodes of the model's graph (and the graphs they hold), given the
    constants of the model's graph they read as initializers (by type only
    when large).

    ONNX types a ``Loop``'s carried values by element type only (their shape
    may change from one iteration to the next). So inference runs again with
    each body's carried inputs declared with the types of the loop's
    initial values, and each loop output with that type when the body gives
    it back unchanged, until nothing more is learned (once per level of
    nested loops).
    """
    declared: dict[str, Any] = {}
    for _ in range(MAX_INFERENCE_ROUNDS):
        inferred = _infer_once(model, folded, declared)
        learned = _carried_types(model, folded, inferred.types)
        learned.update(_contrib_types(model, folded, inferred.types))
        learned.update(_reshape_types(model, folded, inferred.types, declared))
        if learned == declared:
            return inferred
        declared = learned
    return inferred


def _carried_types(model: Any, folded: FoldedConstants, types: Mapping[str, Any]) -> dict[str, Any]:
    """For each live ``Loop``: its body's carried inputs typed like the
    initial values (when those have a shape), and its outputs when the body
    output has that same type."""
    learned: dict[str, Any] = {}
    graphs = [((), model.graph), *subgraphs(model.graph)]
    for path, graph in graphs:
        for _, node in live_nodes(graph, path, folded):
            if node.op_type != "Loop" or node_domain(node) != "":
                continue
            body = next((a.g for a in node.attribute if a.name == "body"), None)
            if body is None:
                continue
            for k, initial in enumerate(node.input[2:]):
                start = types.get(initial)
                if initial in folded.values:
                    array = np.asarray(folded.values[initial])
                    if array.dtype == object:
                        continue
                    start = onnx_module().helper.make_tensor_type_proto(
                        onnx_elem_type(array.dtype), list(array.shape)
                    )
                if (
                    start is None
                    or not start.tensor_type.HasField("shape")
                    or k + 2 >= len(body.input)
                ):
                    continue
                learned[body.input[k + 2].name] = start
                end = types.get(body.output[k + 1].name) if k + 1 < len(body.output) else None
                if k < len(node.output) and _static_dims(end) == _static_dims(start):
                    learned[node.output[k]] = start
            # A scan output stacks its body value over a constant trip count.
            carried = len(node.input) - 2
            trips = constant_trip_count(node, folded)
            for name, body_output in zip(node.output[carried:], body.output[carried + 1 :]):
                row = _static_dims(types.get(body_output.name))
                if trips is not None and row is not None:
                    learned[name] = onnx_module().helper.make_tensor_type_proto(
                        row[0], [trips, *row[1]]
                    )
    return learned


def _contrib_types(model: Any, folded: FoldedConstants, types: Mapping[str, Any]) -> dict[str, Any]:
    """The output types of the ONNX Runtime contrib ops ONNX's shape
    inference does not know and memplan does, from their inputs' types (the
    shape functions ONNX Runtime registers for them):

    * ``com.microsoft.DynamicQuantizeLSTM`` (ddddocr's ``common_old.onnx``,
      from ORT's dynamic quantization of an LSTM): ``Y`` [seq_length,
      num_directions, batch, hidden_size], ``Y_h`` and ``Y_c``
      [num_directions, batch, hidden_size], of ``X``'s element type.
    """
    helper = onnx_module().helper
    learned: dict[str, Any] = {}
    for _, node in live_nodes(model.graph, (), folded):
        if node.op_type != "DynamicQuantizeLSTM" or node_domain(node) != "com.microsoft":
            continue
        x = _static_dims(types.get(node.input[0]))
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if x is None or len(x[1]) != 3 or "hidden_size" not in attributes:
            continue
        element, (sequence, batch, _) = x
        directions = 2 if attributes.get("direction") == b"bidirectional" else 1
        hidden = int(attributes["hidden_size"])
        shapes = [
            [sequence, directions, batch, hidden],
            [directions, batch, hidden],
            [directions, batch, hidden],
        ]
        for name, shape in zip(node.output, shapes):
            if name:
                learned[name] = helper.make_tensor_type_proto(element, shape)
    return learned


ShapeValue = tuple[int | str, ...]
"""A 1-D integer tensor whose elements are sizes or the symbols of dims."""


def _shape_value(
    name: str,
    producers: Mapping[str, Any],
    folded: FoldedConstants,
    types: Mapping[str, Any],
    depth: int = 0,
) -> ShapeValue | None:
    """The value of ``name`` when it is computed from shapes (``Shape``,
    ``Gather`` and ``Slice`` of it at constant positions, ``Unsqueeze``,
    ``Squeeze``, ``Concat``, ``Cast``, ``Mul`` of a size by a size): its
    elements are sizes, or the symbol of the dim they are, so a ``Reshape``
    to it keeps its input's symbols. ``None`` for anything else."""
    if name in folded.values:
        array = np.asarray(folded.values[name])
        if array.dtype.kind not in "iu" or array.ndim > 1:
            return None
        return tuple(int(v) for v in array.reshape(-1))
    node = producers.get(name)
    if node is None or node_domain(node) != "" or depth > 64:
        return None
    attributes = {a.name: onnx_module().helper.get_attribute_value(a) for a in node.attribute}

    def operand(index: int) -> ShapeValue | None:
        if index >= len(node.input) or not node.input[index]:
            return None
        return _shape_value(node.input[index], producers, folded, types, depth + 1)

    if node.op_type == "Shape":
        dims = symbolic_dims(types.get(node.input[0]))
        if dims is None:
            return None
        start, end = attributes.get("start", 0), attributes.get("end", len(dims))
        return tuple(dims[start:end])
    if node.op_type in ("Unsqueeze", "Squeeze", "Cast", "Identity"):
        return operand(0)
    if node.op_type == "Concat":
        parts = [operand(i) for i in range(len(node.input))]
        if any(part is None for part in parts):
            return None
        return tuple(element for part in parts for element in part or ())
    if node.op_type == "Gather":
        data, indices = operand(0), folded.values.get(node.input[1])
        if data is None or indices is None or attributes.get("axis", 0) != 0:
            return None
        try:
            return tuple(data[int(i)] for i in np.asarray(indices).reshape(-1))
        except IndexError:
            return None
    if node.op_type == "Slice":
        data = operand(0)
        bounds = [
            np.asarray(folded.values[n]).reshape(-1) for n in node.input[1:3] if n in folded.values
        ]
        if data is None or len(bounds) != 2 or len(node.input) > 3 and node.input[3:] != ["0"]:
            return None
        return data[int(bounds[0][0]) : int(bounds[1][0])]
    if node.op_type == "Mul":
        left, right = operand(0), operand(1)
        if left is None or right is None or len(left) != len(right):
            return None
        product: list[int | str] = []
        for a, b in zip(left, right):
            if isinstance(a, int) and isinstance(b, int):
                product.append(a * b)
            elif a == 1 or b == 1:
                product.append(b if a == 1 else a)
            else:
                return None  # a product of symbols has no symbol of its own
        return tuple(product)
    return None


def _inferred_dim(source: Sequence[int | str], others: Sequence[int | str]) -> int | str | None:
    """A ``Reshape``'s ``-1``: the element count of ``source`` over that of
    the ``others``, with the symbols they share cancelled; ``None`` when it
    is not a size or a single symbol."""
    remaining = [d for d in source if isinstance(d, str)]
    for symbol in (d for d in others if isinstance(d, str)):
        if symbol not in remaining:
            return None
        remaining.remove(symbol)
    numerator = prod(d for d in source if isinstance(d, int))
    denominator = prod(d for d in others if isinstance(d, int))
    if not source or denominator == 0 or numerator % denominator or len(remaining) > 1:
        return None
    quotient = numerator // denominator
    if not remaining:
        return quotient
    return remaining[0] if quotient == 1 else None


def _reshape_types(
    model: Any, folded: FoldedConstants, types: Mapping[str, Any], declared: Mapping[str, Any]
) -> dict[str, Any]:
    """The output types of ``Reshape``s (and ``ConstantOfShape``s) whose
    target ONNX's inference leaves unknown but ``_shape_value`` reads from
    shapes (ddddocr's ``Reshape(x, Concat(Shape(x)[0], Shape(x)[1],
    Shape(x)[2] * Shape(x)[3]))`` with a symbolic width, and the zeros of
    its LSTM's initial state): a size stays a size, a symbol the dim it names,
    ``0`` the input's dim, and ``-1`` (or a dim no shape gives) a symbol of
    its own (``<output>.dim<k>``), sized at the bounds like any other.
    A type learned in an earlier round (``declared``) is learned again from
    what is known now (it may have gained sizes), or kept."""
    helper = onnx_module().helper
    producers = {
        output: node for _, node in live_nodes(model.graph, (), folded) for output in node.output
    }
    learned: dict[str, Any] = {}
    for _, node in live_nodes(model.graph, (), folded):
        if node_domain(node) != "" or not node.input:
            continue
        if node.op_type == "Reshape" and len(node.input) >= 2:
            source, target = (
                types.get(node.input[0]),
                _shape_value(node.input[1], producers, folded, types),
            )
        elif node.op_type == "ConstantOfShape":
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            element = value.data_type if value is not None else onnx_module().TensorProto.FLOAT
            source = helper.make_tensor_type_proto(element, None)
            target = _shape_value(node.input[0], producers, folded, types)
            if target is not None and any(isinstance(d, int) and d <= 0 for d in target):
                target = None  # an empty or malformed shape: ONNX's inference says it
        else:
            continue
        if source is None or target is None:
            if node.output[0] in declared:
                learned[node.output[0]] = declared[node.output[0]]
            continue
        source_dims = (
            list(source.tensor_type.shape.dim) if source.tensor_type.HasField("shape") else []
        )
        dims: list[int | str] = []
        for k, element in enumerate(target):
            if element == 0 and k < len(source_dims):
                dim = source_dims[k]
                element = dim.dim_value if dim.HasField("dim_value") else dim.dim_param
            dims.append(element)
        if dims.count(-1) == 1:
            source_sizes = [
                d.dim_value if d.HasField("dim_value") else d.dim_param for d in source_dims
            ]
            others = [d for d in dims if d != -1]
            dims[dims.index(-1)] = _inferred_dim(source_sizes, others) or -1
        dims = [
            f"{node.output[0]}.dim{k}" if d == "" or isinstance(d, int) and d < 0 else d
            for k, d in enumerate(dims)
        ]
        output = types.get(node.output[0])
        if (
            node.output[0] not in declared
            and output is not None
            and output.tensor_type.HasField("shape")
        ):
            # ONNX's own inference typed it: keep its sizes, take ours for
            # the dims it made up a symbol for.
            existing = [
                d.dim_value if d.HasField("dim_value") else d.dim_param
                for d in output.tensor_type.shape.dim
            ]
            if len(existing) != len(dims):
                continue
            dims = [e if isinstance(e, int) else d for e, d in zip(existing, dims)]
            if dims == existing:
                continue
        earlier = declared.get(node.output[0])
        if earlier is not None:
            # Only sizes are gained: a symbol learned before stays (ONNX
            # names the sizes it derives afresh in every round).
            before = [
                d.dim_value if d.HasField("dim_value") else d.dim_param
                for d in earlier.tensor_type.shape.dim
            ]
            if len(before) == len(dims):
                dims = [
                    b if isinstance(b, int) or isinstance(d, str) else d
                    for b, d in zip(before, dims)
                ]
        learned[node.output[0]] = helper.make_tensor_type_proto(source.tensor_type.elem_type, dims)
    return learned


def constant_trip_count(node: Any, folded: FoldedConstants) -> int | None:
    """The iterations a ``Loop`` runs when its trip count and condition fold."""
    inputs = list(node.input)
    if not inputs or inputs[0] not in folded.values:
        return None
    if len(inputs) > 1 and inputs[1]:
        if inputs[1] not in folded.values:
            return None
        if not bool(np.asarray(folded.values[inputs[1]]).all()):
            return 0
    return int(np.asarray(folded.values[inputs[0]]).reshape(-1)[0])


def data_bound_types(model: Any, types: dict[str, Any], bound_types: dict[str, Any]) -> None:
    """Give the outputs whose size depends on data but has a bound their
    types at that bound in ``bound_types``: ``Unique``'s unique count is at
    most its input's element count (no ``axis``) or its input's dim along
    ``axis``, so ``Y`` (that count along the axis, or flat), ``indices`` and
    ``counts`` (that count) are dynamic with that bound. Its
    ``inverse_indices`` has one entry per element (or slice along ``axis``):
    static in ``types`` when the input is, else bounded with it. Input
    shapes come from ``types``, else ``bound_types`` (inputs at their upper
    bounds)."""
    onnx = onnx_module()
    for _, graph in [((), model.graph), *subgraphs(model.graph)]:
        for node in graph.node:
            if node.op_type != "Unique" or node_domain(node) or not node.input:
                continue
            static = _static_dims(types.get(node.input[0]))
            source = static or _static_dims(bound_types.get(node.input[0]))
            if source is None:
                continue
            element, shape = source
            axis = next((a.i for a in node.attribute if a.name == "axis"), None)
            if axis is not None and not -len(shape) <= axis < len(shape):
                continue  # invalid: ONNX's checker or inference says why
            if axis is None:
                count = int(np.prod(shape, dtype=np.int64))
                unique_shape: tuple[int, ...] = (count,)
            else:
                axis %= len(shape)
                count = shape[axis]
                unique_shape = (*shape[:axis], count, *shape[axis + 1 :])
            outputs = [*node.output, "", "", "", ""]
            int64 = onnx.TensorProto.INT64
            for name, dims, elem in [
                (outputs[0], unique_shape, element),
                (outputs[1], (count,), int64),
                (outputs[2], (count,), int64),
                (outputs[3], (count,), int64),
            ]:
                if name:
                    type_proto = onnx.helper.make_tensor_type_proto(elem, list(dims))
                    (types if name == outputs[2] and static else bound_types)[name] = type_proto


def _infer_once(model: Any, folded: FoldedConstants, declared: Mapping[str, Any]) -> InferredTypes:
    onnx = onnx_module()
    helper = onnx.helper
    graph = model.graph
    live = live_nodes(graph, (), folded)
    read = [*(n for _, node in live for n in node.input if n), *names_read_inside(live)]
    inputs = graph_inputs(model)
    initializers = []
    for name in dict.fromkeys(read):
        if name not in folded.values or folded.defined_in[name] != ():
            continue
        array = np.asarray(folded.values[name])
        if array.dtype == object:
            continue  # string constants: no element type we support anyway
        elem_type = onnx_elem_type(array.dtype)
        if array.size <= SMALL_CONSTANT_ELEMENTS:
            initializers.append(onnx.numpy_helper.from_array(np.asarray(array, order="C"), name))
        else:
            inputs.append(helper.make_tensor_value_info(name, elem_type, list(array.shape)))
    inference_graph = helper.make_graph(
        [_with_folded_subgraphs(node, (index,), folded, declared) for index, node in live],
        graph.name or "main",
        inputs,
        [_declared(_without_foreign_symbols(output, inputs), declared) for output in graph.output],
        initializer=initializers,
        value_info=[
            *(v for v in graph.value_info if v.name not in declared),
            *_declared_outputs([node for _, node in live], declared),
        ],
    )
    inference_model = helper.make_model(inference_graph, opset_imports=list(model.opset_import))
    inference_model.ir_version = max(model.ir_version, 4)
    inference_model.functions.extend(model.functions)
    try:
        try:
            inferred = onnx.shape_inference.infer_shapes(
                inference_model, check_type=True, strict_mode=True, data_prop=True
            )
        except Exception as error:  # noqa: BLE001 - retried below, or re-raised
            if "existing shape differ" not in str(error):
                raise
            # The model declares a shape its own nodes contradict (ddddocr's
            # common.onnx gives a rank-3 Reshape result as output [1, seqlen]):
            # memplan takes the shapes its nodes compute, so infer without the
            # declared ones (element types kept).
            for info in [*inference_model.graph.output, *inference_model.graph.value_info]:
                if info.type.HasField("tensor_type"):
                    info.type.tensor_type.ClearField("shape")
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
    inferred_graphs = [inferred.graph, *(g for _, g in subgraphs(inferred.graph))]
    for graph_ in inferred_graphs:
        for info in [*graph_.input, *graph_.value_info, *graph_.output]:
            if info.type.HasField("tensor_type") or info.name not in types:
                types[info.name] = info.type
    return InferredTypes(types, problem)


def run_time_types(model: Any, folded: FoldedConstants) -> dict[str, Any]:
    """``infer_types`` of ``model`` with the symbols (``dim_param``) it
    declares anywhere but on its graph inputs cleared (value_info, graph
    outputs, the inputs of the graphs its nodes hold): in these types, two
    dims named by one symbol have one size at run time, because the symbol
    is a graph input's or one ONNX's shape inference made up for a size it
    derived (it never reuses a name in the model). A declared symbol would
    not say so: inference prefers it to the one it derives and does not
    check that the tensors it names agree. Empty when inference fails."""
    onnx = onnx_module()
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    graphs = [stripped.graph, *(g for _, g in subgraphs(stripped.graph))]
    for index, graph in enumerate(graphs):
        for info in [*graph.value_info, *graph.output, *(graph.input if index else ())]:
            if info.type.HasField("tensor_type"):
                for dim in info.type.tensor_type.shape.dim:
                    if dim.HasField("dim_param"):
                        dim.ClearField("dim_param")
    try:
        return infer_types(stripped, folded).types
    except OnnxImportError:
        return {}


def _without_foreign_symbols(info: Any, inputs: Sequence[Any]) -> Any:
    """``info`` (a graph output), or a copy without its declared shape when
    a dim of it is a symbol no graph input has: such a shape says nothing
    the output's node does not, and may contradict it without ONNX noticing
    (ddddocr's common_old.onnx declares [1, seqlen] for a [32, 1, 8210]
    Reshape result); the element type is kept."""
    symbols = {
        d.dim_param
        for graph_input in inputs
        if graph_input.type.HasField("tensor_type")
        for d in graph_input.type.tensor_type.shape.dim
        if d.HasField("dim_param")
    }
    if not info.type.HasField("tensor_type"):
        return info
    dims = info.type.tensor_type.shape.dim
    if not any(d.HasField("dim_param") and d.dim_param not in symbols for d in dims):
        return info
    copy = onnx_module().ValueInfoProto()
    copy.CopyFrom(info)
    copy.type.tensor_type.ClearField("shape")
    return copy


def _declared(info: Any, declared: Mapping[str, Any]) -> Any:
    """``info`` (a ``ValueInfoProto``), or a copy typed as ``declared`` says."""
    if info.name not in declared:
        return info
    copy = onnx_module().ValueInfoProto()
    copy.CopyFrom(info)
    copy.type.CopyFrom(declared[info.name])
    return copy


def _declared_outputs(nodes: Iterable[Any], declared: Mapping[str, Any]) -> list[Any]:
    """A ``ValueInfoProto`` for each output of ``nodes`` that ``declared`` types."""
    onnx = onnx_module()
    infos = []
    for node in nodes:
        for name in node.output:
            if name in declared:
                info = onnx.ValueInfoProto(name=name)
                info.type.CopyFrom(declared[name])
                infos.append(info)
    return infos


def _with_folded_subgraphs(
    node: Any, path: GraphPath, folded: FoldedConstants, declared: Mapping[str, Any]
) -> Any:
    """``node`` (at ``path``), or a copy whose nested graphs hold a ``Constant``
    in place of each small folded node (shape inference does not propagate
    values through every op, and a branch's shapes may hang on them), whose
    nested graphs' outputs have no declared shape, and whose inputs and
    values are typed as in ``declared``."""
    if not has_subgraph(node):
        return node
    onnx = onnx_module()
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    for attribute in copy.attribute:
        if attribute.HasField("g"):
            _fold_into_graph(attribute.g, (*path, attribute.name), folded, declared)
    return copy


def _fold_into_graph(
    graph: Any, path: GraphPath, folded: FoldedConstants, declared: Mapping[str, Any]
) -> None:
    onnx = onnx_module()
    # Exporters declare a subgraph's values and outputs with symbolic dims,
    # which inference keeps over what it proves: let it infer them.
    del graph.value_info[:]
    for output in graph.output:
        if output.name in declared:
            output.type.CopyFrom(declared[output.name])
        elif output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
    for graph_input in graph.input:
        if graph_input.name in declared:
            graph_input.type.CopyFrom(declared[graph_input.name])
    graph.value_info.extend(_declared_outputs(graph.node, declared))
    # A subgraph sees the types of the enclosing graphs' values but not their
    # data: small outer constants get a local copy (under a name of its own).
    copies: dict[str, str] = {}
    nodes: list[Any] = []
    for index, node in enumerate(graph.node):
        if (*path, index) in folded.folded_nodes:
            arrays = [np.asarray(folded.values[n]) for n in node.output if n]
            # Object arrays (sequences, optionals) have no TensorProto form.
            if (
                len(arrays) == 1
                and arrays[0].dtype != object
                and arrays[0].size <= SMALL_CONSTANT_ELEMENTS
            ):
                value = onnx.numpy_helper.from_array(np.asarray(arrays[0], order="C"))
                node.CopyFrom(onnx.helper.make_node("Constant", [], [node.output[0]], value=value))
            nodes.append(node)
            continue
        for slot, name in enumerate(node.input):
            outer = name in folded.values and folded.defined_in[name] != path
            array = np.asarray(folded.values[name]) if outer else None
            if (
                array is not None
                and array.dtype != object
                and array.size <= SMALL_CONSTANT_ELEMENTS
            ):
                if name not in copies:
                    copies[name] = f"{name}::local{len(copies)}"
                    value = onnx.numpy_helper.from_array(np.asarray(array, order="C"))
                    nodes.append(onnx.helper.make_node("Constant", [], [copies[name]], value=value))
                node.input[slot] = copies[name]
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _fold_into_graph(attribute.g, (*path, index, attribute.name), folded, declared)
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
