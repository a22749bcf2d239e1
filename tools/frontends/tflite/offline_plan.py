"""memplan's plan written into a `.tflite` model for TensorFlow Lite Micro:
the TFLite side of `memplan-export-tflite` (``memplan.tools.tflm_export``
plans the module ``prepare`` gives and hands the result to ``offsets_from_plan``).

TFLM takes a plan made elsewhere ("offline planned tensor allocations",
TFLM's ``memory_management.md``): a model ``metadata`` entry named
``OfflineMemoryAllocation`` whose buffer holds little-endian int32 words
``[0 (version), 0 (subgraph), n, offset_0, ..., offset_{n-1}]``: one byte
offset per tensor from the start of the arena's head, or -1 for "plan this
one at run time". TFLM's GreedyMemoryPlanner keeps those offsets, rounds
each tensor's bytes up to 16 and places the rest (-1 tensors, kernels'
scratch buffers) around them; its head is the highest end of all of them.

What ``prepare``, ``offsets_from_plan`` and ``write_model`` do:

1. Refuse what TFLM cannot take an offline plan for: a model with more than
   one subgraph (TFLM reads one offset list, indexed by each subgraph's own
   tensor numbers, and checks its length against the tensors of all
   subgraphs), or a model that already holds an ``OfflineMemoryAllocation``.
2. Import subgraph 0 with its inputs in the arena (``INPUT_COPY``: TFLM
   holds inputs in its arena from the start to their last reader), mark
   each call with the TFLite tensors its results are (``RESULTS_ATTR``) and
   plan it with the pipeline. A pipeline that leaves a tensor's storage
   without a static offset in the one pool is refused, naming the tensor.
3. Every non-constant tensor gets the offset of its bytes in memplan's pool:
   an operator's result its storage's offset plus the tensor's offset in it
   (in-place results share their operand's offset); a ``RESHAPE``,
   ``SQUEEZE`` or ``EXPAND_DIMS`` result its input's (memplan's views:
   TFLM's RESHAPE and EXPAND_DIMS skip the copy when input and output are
   the same bytes, its SQUEEZE copies the bytes onto themselves). Constants
   get -1 (TFLM never allocates them). -1 is also what a tensor no operator
   reads or writes gets when it is not a subgraph input or output: memplan
   has no storage for it, and TFLM gives it no lifetime.
4. ``DEQUANTIZE`` / ``DENSIFY`` of a constant: memplan keeps their outputs
   as constants (TFLite folds them at Prepare), TFLM would run them and hold
   the output in its arena, outside the plan. With ``fold_dequantize`` they
   are written as fp32 (dense) constants and the operator is dropped;
   without it such a model is refused, naming the operator.
5. When the pipeline reorders the calls (``schedule``), the operators are
   written in the planned order (a view just before its first reader), so
   that TFLM runs them in the order the plan assumes; the inputs must still
   be copied in before any operator runs (TFLM holds them from the start).
6. ``write_model`` writes the model back with ai-edge-litert's flatbuffer
   object API (TFLite's schema): buffers, signatures, other metadata and
   every other field are kept; constant buffers are 16-byte aligned, as
   TFLite's converter writes them.

The promised head is the highest ``offset + bytes rounded up to 16`` over
the planned tensors and the kernels' scratch buffers (``scratch_bytes``,
planned as extra results of their call, live during it): TFLM's "Arena
allocation head", since TFLM's planner puts each scratch buffer in the
first hole that fits and memplan's plan leaves one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i8, i64
from xdsl.rewriter import Rewriter

from memplan.dialect.ops import AllocStorageOp, AllocTensorOp, InvokeOp, PoolOp
from memplan.dialect.types import static_byte_size
from memplan.tools.frontends.protocol import FrontendError
from memplan.tools.frontends.tflite.importer import fold_constants, import_subgraph
from memplan.tools.frontends.tflite.model import TfliteSubgraph, load_model, read_subgraph

OFFLINE_METADATA = "OfflineMemoryAllocation"
"""The metadata name TFLM reads an offline plan from."""

TFLM_BUFFER_ALIGNMENT = 16
"""TFLM's ``MicroArenaBufferAlignment()``: each tensor's bytes are rounded up to it."""

RESULTS_ATTR = "memory.tflite.results"
"""Put on each imported call: the TFLite tensor index of each of its results."""

VIEW_OPS = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS"})
"""The importer's views (``tflite_import.VIEW_OPS``): the output is the input's bytes."""


SCRATCH_OPS = (
    "MEAN",
    "SUM",
    "REDUCE_MAX",
    "REDUCE_MIN",
    "REDUCE_ALL",
    "MIRROR_PAD",
    "TRANSPOSE_CONV",
    "ADD_N",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "FULLY_CONNECTED",
)
"""The builtins whose TFLM reference kernels may ask for scratch memory (``scratch_bytes``)."""

HOST_POINTER_BYTES = 8
"""``sizeof(float*)`` where TFLM runs: ADD_N asks for one pointer per input.
memplan's tests run TFLM's Python interpreter on a 64-bit host."""


class ExportError(FrontendError):
    """A model or plan ``memplan-export-tflite`` refuses (one line)."""


@dataclass
class OfflinePlan:
    """What ``plan_model`` found: the offsets, the head and the order to write."""

    pipeline: str
    offsets: list[int]
    """One per tensor of subgraph 0; -1 where TFLM plans at run time."""
    head: int
    """The head TFLM reaches with these offsets (without kernel scratch)."""
    order: list[int]
    """The subgraph's operator indices in the order to write them (folded ones left out)."""
    folded: dict[int, np.ndarray] = field(default_factory=dict[int, np.ndarray])
    """Constant values of the folded operators' outputs, by tensor index."""
    folded_operators: list[int] = field(default_factory=list[int])
    runtime_planned: dict[int, str] = field(default_factory=dict[int, str])
    """Non-constant tensors left at -1, and why."""
    pool_used: int = 0
    """memplan's pool ``used`` bytes."""
    tensor_names: list[str] = field(default_factory=list[str])
    scratch: list[int] = field(default_factory=list[int])
    """The scratch buffers planned with the tensors (bytes), in call order."""

    @property
    def planned_count(self) -> int:
        return sum(1 for offset in self.offsets if offset >= 0)


def align_up(value: int, alignment: int = TFLM_BUFFER_ALIGNMENT) -> int:
    return -(-value // alignment) * alignment


def scratch_bytes(operator: Any, tensors: Sequence[Any]) -> list[int]:
    """The scratch buffers TFLM's reference kernel for ``operator`` asks for
    in Prepare (``RequestScratchBufferInArena``), in bytes, as the kernel
    computes them from the shapes and types (TFLM 2026's ``reduce_common``,
    ``mirror_pad``, ``transpose_conv``, ``add_n``, and the INT4-filter
    unpacking of ``conv_common``, ``depthwise_conv_common`` and
    ``fully_connected``)."""
    inputs = [tensors[t] if t != -1 else None for t in operator.inputs]
    outputs = [tensors[t] for t in operator.outputs]
    first = inputs[0] if inputs else None
    name = operator.name
    if first is None:
        return []
    rank = len(first.shape)
    if name in ("MEAN", "SUM") and len(inputs) > 1 and inputs[1] is not None:
        sizes = [4 * rank, 4 * int(np.prod(inputs[1].shape, dtype=np.int64))]
        if first.type_name in ("INT8", "INT16"):
            sizes.insert(0, 4 * int(np.prod(outputs[0].shape, dtype=np.int64)))
        return sizes
    if name in ("REDUCE_MAX", "REDUCE_MIN", "REDUCE_ALL") and len(inputs) > 1 and inputs[1]:
        return [4 * rank, 4 * int(np.prod(inputs[1].shape, dtype=np.int64))]
    if name == "MIRROR_PAD":
        return [4 * rank, 4 * rank]
    if name == "TRANSPOSE_CONV" and len(inputs) > 2 and inputs[2] is not None:
        data = inputs[2]  # inputs: output shape, weights, data, bias
        count = int(np.prod(outputs[0].shape, dtype=np.int64))
        bias = inputs[3] if len(inputs) > 3 else None
        if data.type_name == "INT8":
            return [4 * count]
        if data.type_name == "INT16":
            extra = [8 * int(np.prod(bias.shape))] if bias and bias.type_name == "INT16" else []
            return [*extra, 8 * count]
        return []
    if name == "ADD_N" and outputs[0].type_name in ("FLOAT32", "INT8"):
        return [HOST_POINTER_BYTES * len(inputs)]
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and len(inputs) > 1:
        weights = inputs[1]
        if weights is not None and weights.type_name == "INT4":
            return [int(np.prod(weights.shape, dtype=np.int64))]
    return []


def add_scratch_results(module: Any, subgraph: Any) -> int:
    """Give each call whose TFLM kernel asks for scratch one extra ``i8``
    result per scratch buffer (``scratch_bytes``): a storage memplan plans,
    live during the call only (nothing reads it), as TFLM's scratch is.
    Its ``RESULTS_ATTR`` entry is -1. Returns the number of buffers added."""

    operators_by_output = {op.outputs: op for op in subgraph.operators}
    declarations = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.is_declaration
    }
    made: dict[tuple[str, tuple[int, ...]], str] = {}
    added = 0
    for call in [op for op in _main_function(module).body.walk() if isinstance(op, func.CallOp)]:
        results = tuple(call.attributes[RESULTS_ATTR].get_values())  # type: ignore[union-attr]
        operator = operators_by_output.get(results)
        if operator is None or operator.name not in SCRATCH_OPS:
            continue
        sizes = tuple(size for size in scratch_bytes(operator, subgraph.tensors) if size > 0)
        if not sizes:
            continue
        scratch_types = [TensorType(i8, [size]) for size in sizes]
        callee = call.callee.root_reference.data
        key = (callee, sizes)
        if key not in made:
            old = declarations[callee]
            name = f"{callee}.scratch{len(made)}"
            declaration = func.FuncOp.external(
                name,
                list(old.function_type.inputs.data),
                [*old.function_type.outputs.data, *scratch_types],
            )
            declaration.attributes.update(old.attributes)
            module.body.block.add_op(declaration)
            made[key] = name
        new_call = func.CallOp(
            made[key], list(call.arguments), [*call.result_types, *scratch_types]
        )
        new_call.attributes.update(call.attributes)
        new_call.attributes[RESULTS_ATTR] = DenseArrayBase.from_list(
            i64, [*results, *(-1 for _ in sizes)]
        )
        for old_result, new_result in zip(call.results, new_call.results):
            new_result.name_hint = old_result.name_hint
        Rewriter.replace_op(call, new_call, new_results=list(new_call.results[: len(results)]))
        added += len(sizes)
    return added


def check_model(model: Any, label: str) -> None:
    """Refuse a model TFLM cannot take memplan's offline plan for."""
    count = model.SubgraphsLength()
    if count != 1:
        raise ExportError(
            f"{label} has {count} subgraphs: TFLM reads one {OFFLINE_METADATA} list "
            "indexed by each subgraph's own tensor numbers, so only a one-subgraph model "
            "takes an offline plan"
        )
    for index in range(model.MetadataLength()):
        name = (model.Metadata(index).Name() or b"").decode("utf-8", "replace")
        if name == OFFLINE_METADATA:
            raise ExportError(
                f"{label} already holds an {OFFLINE_METADATA} plan (metadata entry {index}); "
                "memplan plans a model without one"
            )


def tensor_bytes(tensor: Any) -> int:
    """The bytes TFLM gives a tensor (``TfLiteEvalTensorByteLength``)."""
    return int(np.prod(tensor.shape, dtype=np.int64)) * tensor.dtype.itemsize


def _main_function(module: Any) -> Any:

    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise ExportError("the imported module has no @main")  # pragma: no cover


def annotate_calls(module: Any, produced: Sequence[tuple[int, ...]]) -> None:
    """Put ``RESULTS_ATTR`` on each call of ``@main``, in order: ``produced``
    gives the TFLite tensors of each call's results (``import_subgraph``
    emits one ``INPUT_COPY`` per non-constant input, then one call per
    operator not folded, in the model's order)."""

    calls = [op for op in _main_function(module).body.walk() if isinstance(op, func.CallOp)]
    if len(calls) != len(produced):  # pragma: no cover - the importer's contract
        raise ExportError(f"the import has {len(calls)} calls for {len(produced)} operators")
    for call, tensors in zip(calls, produced):
        call.attributes[RESULTS_ATTR] = DenseArrayBase.from_list(i64, list(tensors))


def _tensor_place(value: Any, what: str) -> tuple[str, int]:
    """(pool, byte offset) of a planned tensor value."""

    tensor_op = value.owner
    if not isinstance(tensor_op, AllocTensorOp) or tensor_op.offset is None:
        raise ExportError(f"{what} is not a memory.alloc_tensor at a static offset after planning")
    storage_op = tensor_op.storage.owner
    if (
        not isinstance(storage_op, AllocStorageOp)
        or storage_op.pool is None
        or storage_op.offset is None
    ):
        raise ExportError(
            f"{what} is in a storage the pipeline leaves unpinned (no 'at @pool[offset]'): "
            "TFLM needs every tensor at an offset (end the pipeline with usmp)"
        )
    pool = storage_op.pool.root_reference.data
    return pool, storage_op.offset.value.data + tensor_op.offset.value.data


def _operator_order(
    subgraph: Any, planned: Sequence[int], live: Sequence[int], folded_constants: set[int]
) -> list[int]:
    """The operators in the planned order: ``planned`` are the non-view
    operators as the plan runs them; each view goes just before its first
    reader (after its own input's writer), a view nobody reads at the end."""
    operators = subgraph.operators
    if list(planned) == [i for i in live if operators[i].name not in VIEW_OPS]:
        return list(live)  # the model's own order
    position = {index: float(n) for n, index in enumerate(planned)}
    readers: dict[int, list[int]] = {}
    for index in live:
        for tensor in operators[index].inputs:
            readers.setdefault(tensor, []).append(index)

    def key(index: int, depth: int = 0) -> float:
        if index in position:
            return position[index]
        following = [
            key(r, depth + 1) for t in operators[index].outputs for r in readers.get(t, ())
        ]
        # Before the first reader, and before a view that feeds it.
        value = (min(following) if following else float(len(planned))) - 0.5 ** (depth + 1)
        position[index] = value
        return value

    order = sorted(live, key=lambda i: (key(i), i))
    written = set(folded_constants) | set(subgraph.inputs)
    written |= {t.index for t in subgraph.tensors if t.data is not None}
    for index in order:
        missing = [t for t in operators[index].inputs if t != -1 and t not in written]
        if missing:
            raise ExportError(
                f"the planned order runs {operators[index].where} before tensor {missing[0]} "
                f"'{subgraph.tensors[missing[0]].name}' is written"
            )
        written.update(operators[index].outputs)
    return order


@dataclass
class Prepared:
    """A model imported for planning (``prepare``)."""

    module: ModuleOp
    """``@main`` with its inputs in the arena, each call marked with ``RESULTS_ATTR``
    and kernels' scratch buffers as extra results."""
    subgraph: TfliteSubgraph
    folded: Any
    inputs: list[int]
    live: list[int]


def prepare(data: bytes, label: str, fold_dequantize: bool = False) -> Prepared:
    """Subgraph 0 of ``data`` (a one-subgraph `.tflite`) imported for
    planning (see the module's docstring); refuses what TFLM cannot take."""
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ExportError(f"{label} is not a TFLite model (no 'TFL3' file identifier)")
    model, _ = load_model(data)
    check_model(model, label)
    subgraph = read_subgraph(model, label, 0)
    folded = fold_constants(subgraph)
    operators = subgraph.operators
    if folded.folded_operators and not fold_dequantize:
        first = operators[min(folded.folded_operators)]
        raise ExportError(
            f"{first.where} computes a constant that memplan keeps as a constant (as TFLite "
            "folds it at Prepare) but TFLM would hold in its arena: pass --fold-dequantize "
            "to write it as a constant"
        )
    module = import_subgraph(subgraph, inputs_in_arena=True)
    inputs = [t for t in subgraph.inputs if t not in folded.constants]
    live = [op.index for op in operators if op.index not in folded.folded_operators]
    annotate_calls(module, [(t,) for t in inputs] + [operators[i].outputs for i in live])
    add_scratch_results(module, subgraph)
    return Prepared(module, subgraph, folded, inputs, live)


def offsets_from_plan(prepared: Prepared, planned: ModuleOp, pipeline: str) -> OfflinePlan:
    """TFLM's offsets from ``planned`` (``prepared.module`` after ``pipeline``)."""
    subgraph, folded, inputs, live = (
        prepared.subgraph,
        prepared.folded,
        prepared.inputs,
        prepared.live,
    )
    operators = subgraph.operators
    tensors = subgraph.tensors
    offsets: dict[int, int] = {}
    pools: set[str] = set()
    invoked: list[tuple[int, ...]] = []
    scratch_end = 0
    scratch: list[int] = []
    for op in _main_function(planned).body.walk():
        if not isinstance(op, InvokeOp) or RESULTS_ATTR not in op.attributes:
            continue
        values: tuple[int, ...] = tuple(op.attributes[RESULTS_ATTR].get_values())  # type: ignore[union-attr]
        results = tuple(t for t in values if t >= 0)
        invoked.append(results)
        for value, tensor in zip(op.outs, values):
            if tensor < 0:  # a scratch buffer: TFLM places it itself, in a hole this big
                pool, offset = _tensor_place(value, f"a scratch buffer of tensor {results[0]}")
                size = static_byte_size(value.type) or 0  # type: ignore[arg-type]
                scratch.append(size)
                scratch_end = max(scratch_end, offset + align_up(size))
            else:
                what = f"tensor {tensor} '{tensors[tensor].name}'"
                pool, offset = _tensor_place(value, what)
                offsets[tensor] = offset
            pools.add(pool)
    if len(pools) > 1:
        raise ExportError(
            f"the pipeline puts the tensors in {len(pools)} pools ({', '.join(sorted(pools))}); "
            "TFLM's arena is one"
        )
    # The inputs are in TFLM's arena before the first operator runs.
    input_set = set(inputs)
    seen_operator = False
    for results in invoked:
        is_copy = len(results) == 1 and results[0] in input_set
        if is_copy and seen_operator:
            raise ExportError(
                f"the pipeline copies input tensor {results[0]} '{tensors[results[0]].name}' "
                "in after an operator has run; TFLM holds inputs from the start"
            )
        seen_operator = seen_operator or not is_copy
    producer = {t: op.index for op in operators for t in op.outputs}
    planned_order = [producer[r[0]] for r in invoked if not (len(r) == 1 and r[0] in input_set)]

    for index in live:
        operator = operators[index]
        if operator.name not in VIEW_OPS:
            continue
        source = operator.inputs[0]
        if source not in offsets:
            raise ExportError(
                f"{operator.where} views tensor {source} '{tensors[source].name}', which is a "
                "constant: TFLM copies it into its arena, outside memplan's plan"
            )
        for output in operator.outputs:
            offsets[output] = offsets[source]

    used = {t for i in live for t in (*operators[i].inputs, *operators[i].outputs)}
    used |= set(subgraph.inputs) | set(subgraph.outputs)
    runtime: dict[int, str] = {}
    words: list[int] = []
    for tensor in tensors:
        if tensor.index in folded.constants:
            words.append(-1)
        elif tensor.index in offsets:
            words.append(offsets[tensor.index])
        elif tensor.index not in used:
            words.append(-1)
            runtime[tensor.index] = "no operator reads or writes it"
        else:  # pragma: no cover - every used tensor is imported
            raise ExportError(f"tensor {tensor.index} '{tensor.name}' has no place in the plan")
    head = max(
        (
            words[t.index] + align_up(tensor_bytes(t))
            for t in tensors
            if words[t.index] >= 0 and tensor_bytes(t) > 0
        ),
        default=0,
    )
    head = max(head, scratch_end)
    pool_used = sum(
        op.used.value.data for op in planned.ops if isinstance(op, PoolOp) and op.used is not None
    )
    return OfflinePlan(
        pipeline=pipeline,
        offsets=words,
        head=head,
        order=_operator_order(subgraph, planned_order, live, folded.constants),
        folded={t: folded.values[t] for i in folded.folded_operators for t in operators[i].outputs},
        folded_operators=sorted(folded.folded_operators),
        runtime_planned=runtime,
        pool_used=pool_used,
        tensor_names=[t.name for t in tensors],
        scratch=scratch,
    )


# ---------------------------------------------------------------------------
# Writing the model
# ---------------------------------------------------------------------------


def _little_endian_bytes(values: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(values)
    return array.astype(array.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8)


def write_model(data: bytes, plan: OfflinePlan, offsets: bool = True) -> bytes:
    """``data`` with ``plan``: folded operators as constants, operators in the
    plan's order, and an ``OfflineMemoryAllocation`` metadata entry (left
    out when ``offsets`` is false: the same model for TFLM's own planner)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    class AlignedBuffer(schema.BufferT):
        """A buffer whose data starts at a multiple of 16, as TFLite's converter writes it."""

        def Pack(self, builder: Any) -> int:  # noqa: N802 - the generated API's name
            vector = None
            if self.data is not None:
                payload = np.asarray(self.data, dtype=np.uint8).tobytes()
                builder.StartVector(1, len(payload), TFLM_BUFFER_ALIGNMENT)
                builder.head = builder.head - len(payload)
                builder.Bytes[builder.head : builder.head + len(payload)] = payload
                builder.vectorNumElems = len(payload)
                vector = builder.EndVector()
            schema.BufferStart(builder)
            if vector is not None:
                schema.BufferAddData(builder, vector)
            schema.BufferAddOffset(builder, self.offset)
            schema.BufferAddSize(builder, self.size)
            return schema.BufferEnd(builder)

    model: Any = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    buffers: list[Any] = list(model.buffers or [])
    [subgraph] = model.subgraphs
    for tensor_index, values in plan.folded.items():
        tensor = subgraph.tensors[tensor_index]
        buffers.append(schema.BufferT(data=_little_endian_bytes(values)))
        tensor.buffer = len(buffers) - 1
    subgraph.operators = [subgraph.operators[i] for i in plan.order]
    words = np.array([0, 0, len(plan.offsets), *plan.offsets], dtype="<i4")
    if offsets:
        buffers.append(schema.BufferT(data=words.view(np.uint8)))
        metadata = schema.MetadataT()
        metadata.name = OFFLINE_METADATA
        metadata.buffer = len(buffers) - 1
        model.metadata = [*(model.metadata or []), metadata]
    for buffer in buffers:
        buffer.__class__ = AlignedBuffer
    model.buffers = buffers
    builder = flatbuffers.Builder(len(data) + 4 * len(words) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def model_inputs(model: bytes, seed: int = 0) -> list[np.ndarray]:
    """Random inputs for subgraph 0 of ``model``, by its input tensors' shapes
    and types (floats in [-1, 1), integers over their type's range)."""
    subgraph = read_subgraph(*load_model(model))
    generator = np.random.default_rng(seed)
    arrays: list[np.ndarray] = []
    for index in subgraph.inputs:
        tensor = subgraph.tensors[index]
        dtype = tensor.dtype
        if np.issubdtype(dtype, np.floating):
            array = generator.uniform(-1, 1, tensor.shape).astype(dtype)
        elif dtype == np.bool_:
            array = generator.integers(0, 2, tensor.shape).astype(np.bool_)
        else:
            info = np.iinfo(dtype)
            array = generator.integers(info.min, info.max, tensor.shape, endpoint=True, dtype=dtype)
        arrays.append(array)
    return arrays
