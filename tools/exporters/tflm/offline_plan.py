"""memplan's plan written into a `.tflite` model for TensorFlow Lite Micro:
the TFLite side of `memplan-export tflm` (``planning``
plans the module ``prepare`` gives and hands the result to ``offsets_from_plan``).

TFLM takes a plan made elsewhere ("offline planned tensor allocations",
TFLM's ``memory_management.md``): a model ``metadata`` entry named
``OfflineMemoryAllocation`` whose buffer holds little-endian int32 words
``[0 (version), 0, n, offset_0, ..., offset_{n-1}]``: one byte offset per
tensor from the start of the arena's head, or -1 for "plan this one at run
time". With several subgraphs the list holds the tensors of all of them,
subgraph 0's first: TFLM's ``AllocationInfoBuilder::InitializeAllocationInfo``
(``micro_allocation_info.cc``) reads it with one running index over every
subgraph's tensors, and ``GetOfflinePlannedOffsets`` refuses a list whose
``n`` is not the tensor count of all subgraphs (TFLM ignores the second
word). TFLM's GreedyMemoryPlanner keeps those offsets, rounds each tensor's
bytes up to 16 and places the rest (-1 tensors, kernels' scratch buffers)
around them; its head is the highest end of all of them.

What ``call_structure``, ``prepare``, ``offsets_from_plan``, ``combine``
and ``write_model`` do:

1. Refuse what TFLM cannot take an offline plan for: a model that already
   holds an ``OfflineMemoryAllocation``, a ``CALL`` (no TFLM kernel), a
   subgraph that runs itself. ``call_structure`` finds which ``IF``,
   ``WHILE`` or ``CALL_ONCE`` runs which subgraph, which operators of one
   subgraph share a block because they run the same subgraph, and which
   subgraphs operators of several subgraphs run (those get a region of
   their own, above the rest).
2. Import each subgraph TFLM runs, the ones an operator runs first, with
   its inputs in the arena (``INPUT_COPY``: TFLM holds inputs in its arena
   from the start to their last reader), mark each call with its operator
   (``OPERATOR_ATTR``) and the TFLite tensors its results are
   (``RESULTS_ATTR``) and plan it with the pipeline. An operator that runs
   subgraphs is one call with one more result: a block as large as the
   largest head of its subgraphs, live during the call (TFLM marks the
   subgraphs' tensors live inside the operator's lifetime, its inputs and
   outputs live throughout; then/else and cond/body never run at once,
   and the kernels copy data into and out of them). ``combine`` puts each
   subgraph at the start of its operator's block. A pipeline that leaves a
   tensor's storage without a static offset in the one pool is refused,
   naming the tensor.
3. Every non-constant tensor gets the offset of its bytes in memplan's pool:
   an operator's result its storage's offset plus the tensor's offset in it
   (in-place results share their operand's offset); a ``RESHAPE``,
   ``SQUEEZE`` or ``EXPAND_DIMS`` result its input's (memplan's views:
   TFLM's RESHAPE and EXPAND_DIMS skip the copy when input and output are
   the same bytes, its SQUEEZE copies the bytes onto themselves). Constants
   get -1 (TFLM never allocates them). -1 is also what a tensor no operator
   reads or writes gets when it is not a subgraph input or output: memplan
   has no storage for it, and TFLM gives it no lifetime; so do the tensors
   of a subgraph no operator runs. Variable tensors (TFLM's
   ``AllocateVariables`` looks their offsets up by the subgraph's own
   tensor index, not the running one) are refused by the importer.
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

import dataclasses
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, i8, i64
from xdsl.rewriter import InsertPoint, Rewriter

from memplan.dialect.ops import AllocStorageOp, AllocTensorOp, InvokeOp, PoolOp
from memplan.dialect.types import static_byte_size
from memplan.passes.planning.model import align_up
from memplan.tools.frontends.protocol import FrontendError
from memplan.tools.frontends.tflite.importer import fold_constants, import_subgraph
from memplan.tools.frontends.tflite.model import (
    ELEMENT_TYPES,
    TfliteSubgraph,
    load_model,
    read_subgraph,
)

OFFLINE_METADATA = "OfflineMemoryAllocation"
"""The metadata name TFLM reads an offline plan from."""

TFLM_BUFFER_ALIGNMENT = 16
"""TFLM's ``MicroArenaBufferAlignment()``: each tensor's bytes are rounded up to it."""

RESULTS_ATTR = "memory.tflite.results"
"""Put on each imported call: the TFLite tensor index of each of its results
(``SCRATCH`` / ``CALLEE_BLOCK`` for the results ``add_scratch_results`` adds)."""

OPERATOR_ATTR = "memory.tflite.operator"
"""Put on each imported call: the TFLite operator index (``INPUT_COPIED`` for
an input copy, ``INPUTS_HELD`` for ``hold_inputs``'s call)."""

INPUT_COPIED = -1
INPUTS_HELD = -2

SCRATCH = -1
CALLEE_BLOCK = -2

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


class ModelError(ExportError):
    """Found in a plan, but about the model: every pipeline would give it."""


@dataclass
class SubgraphPlan:
    """One subgraph's part of the plan (``offsets_from_plan``)."""

    index: int
    offsets: list[int]
    """One per tensor of the subgraph, from the start of the subgraph's own
    block (its base is added by ``combine``); -1 where TFLM plans at run time."""
    head: int
    """The end of the subgraph's block: its tensors, kernel scratch and callee blocks."""
    order: list[int]
    """The subgraph's operator indices in the order to write them (folded ones left out)."""
    folded: dict[int, np.ndarray] = field(default_factory=dict[int, np.ndarray])
    """Constant values of the folded operators' outputs, by tensor index."""
    folded_operators: list[int] = field(default_factory=list[int])
    runtime_planned: dict[int, str] = field(default_factory=dict[int, str])
    """Non-constant tensors left at -1 (by tensor index), and why."""
    pool_used: int = 0
    tensor_names: list[str] = field(default_factory=list[str])
    scratch: list[int] = field(default_factory=list[int])
    """The kernel scratch buffers planned with the tensors (bytes), in call order."""
    callee_blocks: dict[int, int] = field(default_factory=dict[int, int])
    """Operator index -> offset of the block its subgraphs run in (``SUBGRAPH_OPS``)."""


@dataclass
class OfflinePlan:
    """What ``plan_model`` found: the offsets, the head and the order to write."""

    pipeline: str
    offsets: list[int]
    """The words TFLM reads: one per tensor of every subgraph, subgraph 0's
    first (TFLM's one running index over all subgraphs); -1 where TFLM plans
    at run time."""
    head: int
    """The head TFLM reaches with these offsets (kernel scratch included)."""
    subgraphs: list[SubgraphPlan]
    """Each subgraph's part, by subgraph index."""

    @property
    def planned_count(self) -> int:
        return sum(1 for offset in self.offsets if offset >= 0)

    @property
    def tensor_names(self) -> list[str]:
        return [name for part in self.subgraphs for name in part.tensor_names]

    @property
    def runtime_planned(self) -> dict[int, str]:
        """Non-constant tensors left at -1, by their position in ``offsets``, and why."""
        found: dict[int, str] = {}
        start = 0
        for part in self.subgraphs:
            found.update({start + t: why for t, why in part.runtime_planned.items()})
            start += len(part.offsets)
        return found

    @property
    def folded_operators(self) -> list[tuple[int, int]]:
        """(subgraph, operator) of each folded operator."""
        return [(part.index, op) for part in self.subgraphs for op in part.folded_operators]

    @property
    def scratch(self) -> list[int]:
        return [size for part in self.subgraphs for size in part.scratch]

    @property
    def pool_used(self) -> int:
        return sum(part.pool_used for part in self.subgraphs)


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


def add_scratch_results(
    module: Any,
    subgraph: Any,
    callee_bytes: Mapping[int, int] | None = None,
    leaders: Mapping[int, int] | None = None,
) -> int:
    """Give each call whose TFLM kernel asks for scratch one extra ``i8``
    result per scratch buffer (``scratch_bytes``): a storage memplan plans,
    live during the call only (nothing reads it), as TFLM's scratch is
    (``RESULTS_ATTR`` entry ``SCRATCH``). A call that runs other subgraphs
    (``callee_bytes``: operator index -> bytes of the block its subgraphs
    run in) gets one more for that block (entry ``CALLEE_BLOCK``): TFLM
    marks a called subgraph's tensors live inside the call's own lifetime.
    A later operator of a group sharing a block (``leaders``) takes its
    first operator's block as one more operand instead. Returns the number
    of results added."""

    callee_bytes = callee_bytes or {}
    leaders = leaders or {}
    blocks: dict[int, Any] = {}
    declarations = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.is_declaration
    }
    made: dict[tuple[str, tuple[int, ...], tuple[int, ...], tuple[Any, ...]], str] = {}
    added = 0
    for call in [op for op in _main_function(module).body.walk() if isinstance(op, func.CallOp)]:
        index = call.attributes[OPERATOR_ATTR].value.data  # type: ignore[union-attr]
        if index < 0:
            continue
        operator = subgraph.operators[index]
        sizes: tuple[int, ...] = ()
        if operator.name in SCRATCH_OPS:
            sizes = tuple(s for s in scratch_bytes(operator, subgraph.tensors) if s > 0)
        kinds = (SCRATCH,) * len(sizes)
        if callee_bytes.get(index, 0) > 0:
            sizes, kinds = (*sizes, callee_bytes[index]), (*kinds, CALLEE_BLOCK)
        first = leaders.get(index, index)
        shared = [blocks[first]] if first != index and first in blocks else []
        if not sizes and not shared:
            continue
        results = tuple(call.attributes[RESULTS_ATTR].get_values())  # type: ignore[union-attr]
        scratch_types = [TensorType(i8, [size]) for size in sizes]
        callee = call.callee.root_reference.data
        key = (callee, sizes, kinds, tuple(v.type for v in shared))
        if key not in made:
            old = declarations[callee]
            name = f"{callee}.scratch{len(made)}"
            declaration = func.FuncOp.external(
                name,
                [*old.function_type.inputs.data, *(v.type for v in shared)],
                [*old.function_type.outputs.data, *scratch_types],
            )
            declaration.attributes.update(old.attributes)
            module.body.block.add_op(declaration)
            made[key] = name
        new_call = func.CallOp(
            made[key], [*call.arguments, *shared], [*call.result_types, *scratch_types]
        )
        new_call.attributes.update(call.attributes)
        new_call.attributes[RESULTS_ATTR] = DenseArrayBase.from_list(i64, [*results, *kinds])
        for old_result, new_result in zip(call.results, new_call.results):
            new_result.name_hint = old_result.name_hint
        if CALLEE_BLOCK in kinds:
            blocks[index] = new_call.results[-1]
        Rewriter.replace_op(call, new_call, new_results=list(new_call.results[: len(results)]))
        added += len(sizes)
    return added


def open_model(data: bytes, label: str) -> Any:
    """The flatbuffer model of ``data``; refuses what is no TFLite model or
    already holds an offline plan."""
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ExportError(f"{label} is not a TFLite model (no 'TFL3' file identifier)")
    model, _ = load_model(data)
    # Every subgraph read once through the importer's reader first: a cut or
    # damaged file is its one-line error, not a failure deep in planning.
    for index in range(_subgraph_count(model, label)):
        read_subgraph(model, label, index)
    for index in range(model.MetadataLength()):
        name = (model.Metadata(index).Name() or b"").decode("utf-8", "replace")
        if name == OFFLINE_METADATA:
            raise ExportError(
                f"{label} already holds an {OFFLINE_METADATA} plan (metadata entry {index}); "
                "memplan plans a model without one"
            )
    if _has_resources(model):
        model, _ = load_model(_resources_as_constants(data))
    return model


def _subgraph_count(model: Any, label: str) -> int:
    try:
        return model.SubgraphsLength()
    except (struct.error, IndexError) as error:
        raise ExportError(f"{label} is truncated or corrupt ({error})") from None


RESOURCE_OPS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"})
"""Resource-variable operators: their order matters beyond the data flow."""


def _has_resources(model: Any) -> bool:
    import tflite

    return any(
        model.Subgraphs(s).Tensors(t).Type() == tflite.TensorType.RESOURCE
        for s in range(model.SubgraphsLength())
        for t in range(model.Subgraphs(s).TensorsLength())
    )


def _resources_as_constants(data: bytes) -> bytes:
    """``data`` with each RESOURCE tensor (a ``VAR_HANDLE`` output) an INT32
    constant, for planning only: TFLM's ``VarHandlePrepare`` points the
    tensor at the kernel's own resource id, so the planner never gives it
    arena bytes; the variables themselves live in TFLM's persistent tail.
    memplan then plans ``READ_VARIABLE`` and ``ASSIGN_VARIABLE`` as kernels
    reading a constant handle (``prepare`` leaves ``VAR_HANDLE`` out)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model: Any = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    for subgraph in model.subgraphs:
        for tensor in subgraph.tensors:
            if tensor.type == schema.TensorType.RESOURCE:
                tensor.type = schema.TensorType.INT32
                count = int(np.prod(tensor.shape if tensor.shape is not None else ()))
                model.buffers.append(schema.BufferT(data=np.zeros(count, "<i4").view(np.uint8)))
                tensor.buffer = len(model.buffers) - 1
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def tensor_bytes(tensor: Any) -> int:
    """The bytes TFLM gives a tensor (``TfLiteEvalTensorByteLength``)."""
    return int(np.prod(tensor.shape, dtype=np.int64)) * tensor.dtype.itemsize


def _main_function(module: Any) -> Any:

    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise ExportError("the imported module has no @main")  # pragma: no cover


def annotate_calls(
    module: Any, operators: Sequence[int], produced: Sequence[tuple[int, ...]]
) -> None:
    """Put ``OPERATOR_ATTR`` and ``RESULTS_ATTR`` on each call of ``@main``,
    in order: ``operators`` / ``produced`` give each call's operator index
    and the TFLite tensors of its results (``import_subgraph`` emits one
    ``INPUT_COPY`` per non-constant input, then one call per operator not
    folded, in the model's order)."""

    calls = [op for op in _main_function(module).body.walk() if isinstance(op, func.CallOp)]
    if len(calls) != len(produced):  # pragma: no cover - the importer's contract
        raise ExportError(f"the import has {len(calls)} calls for {len(produced)} operators")
    for call, index, tensors in zip(calls, operators, produced):
        call.attributes[OPERATOR_ATTR] = IntegerAttr(index, i64)
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
    reader (after its own input's writer), a view nobody reads at the end.
    In the model's order, the ``VAR_HANDLE`` operators the import left out
    keep their places; a subgraph with resource variables or ``CALL_ONCE``
    is not reordered (their order is not all in the data flow)."""
    operators = subgraph.operators
    if list(planned) == [i for i in live if operators[i].name not in VIEW_OPS]:
        return [op.index for op in operators if op.index in live or op.name == "VAR_HANDLE"]
    stateful = [op for op in operators if op.name in RESOURCE_OPS or op.name == "CALL_ONCE"]
    if stateful:
        raise ExportError(
            f"the pipeline reorders the operators of subgraph {subgraph.index}, which has "
            f"{stateful[0].where}: TFLM must run resource-variable operators in the model's order"
        )
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


CALLEE_OPTIONS: dict[str, tuple[str, ...]] = {
    "IF": ("ThenSubgraphIndex", "ElseSubgraphIndex"),
    "WHILE": ("CondSubgraphIndex", "BodySubgraphIndex"),
    "CALL_ONCE": ("InitSubgraphIndex",),
}
"""The operators TFLM runs other subgraphs with, and the options naming them."""


@dataclass
class CallStructure:
    """Which operator runs which subgraphs, from subgraph 0 down (``call_structure``)."""

    count: int
    """Subgraphs in the model."""
    callees: dict[int, dict[int, tuple[int, ...]]]
    """Subgraph -> operator index -> the subgraphs it runs (then/else, cond/body, init)."""
    order: list[int]
    """The subgraphs TFLM runs, each after the ones it runs (subgraph 0 last)."""
    leaders: dict[int, dict[int, int]]
    """Subgraph -> operator -> the first operator of the subgraph that runs
    any of the same subgraphs (itself when none): they share one block."""
    detached: list[int]
    """Subgraphs run by operators of more than one subgraph: each in a
    region of its own above the rest, not in a block."""
    unreached: dict[int, tuple[int, int, list[int]]]
    """Subgraphs no operator runs -> their tensor and operator counts and
    the tensors that hold no data (TFLM gives them no lifetime)."""


def _callees(model: Any, subgraph: int, operator: Any) -> tuple[int, ...]:
    """The subgraphs ``operator`` runs, read from its options table (the
    importer's option reader skips ``CallOnceOptions.InitSubgraphIndex``)."""
    import tflite

    table = getattr(tflite, f"{operator.name.title().replace('_', '')}Options")()
    union = model.Subgraphs(subgraph).Operators(operator.index).BuiltinOptions()
    if union is None:
        return (-1,) * len(CALLEE_OPTIONS[operator.name])
    table.Init(union.Bytes, union.Pos)
    return tuple(int(getattr(table, field)()) for field in CALLEE_OPTIONS[operator.name])


def call_structure(data: bytes, label: str) -> CallStructure:
    """The subgraphs TFLM runs from subgraph 0, and by which operator.

    TFLM plans all subgraphs in one arena: ``MarkAllocationLifetimes``
    walks subgraph 0 and, at an ``IF``, ``WHILE`` or ``CALL_ONCE``, the
    subgraphs it runs, inside the operator's own lifetime (the operator's
    inputs and outputs stay live through them; then and else, or cond and
    body, one after the other). memplan plans each subgraph on its own and
    gives the operator a block live during its call, as large as the
    largest of its subgraphs (they never run at once: each is run to its
    end, and the kernels copy data in and out of them). Operators of one
    subgraph that run the same subgraph (two IFs with one branch) share one
    block, live from the first to the last of them, as TFLM gives the
    subgraph's tensors one offset, live from its first call to its last.
    A subgraph run by operators of two subgraphs (an ``IF`` and one nested
    in its branch) is "detached": it gets a region of its own above all
    the rest (``combine``), which no other tensor shares at any time."""
    model = open_model(data, label)
    count = model.SubgraphsLength()
    callees: dict[int, dict[int, tuple[int, ...]]] = {}
    calling: dict[int, set[int]] = {}
    order: list[int] = []

    def visit(index: int, path: tuple[int, ...]) -> None:
        subgraph = read_subgraph(model, label, index)
        runs: dict[int, tuple[int, ...]] = {}
        where = f"subgraph {index} " if index else ""
        for operator in subgraph.operators:
            if operator.name == "CALL":
                raise ExportError(
                    f"{label}: {where}{operator.where} runs another subgraph, which TFLM has "
                    "no kernel for"
                )
            if operator.name not in CALLEE_OPTIONS:
                continue
            targets = _callees(model, index, operator)
            for target in targets:
                if not 0 < target < count:
                    raise ExportError(
                        f"{label}: {where}{operator.where} runs subgraph {target}, but the "
                        f"model has {count} subgraphs"
                    )
                if target in path:
                    raise ExportError(
                        f"{label}: {where}{operator.where} runs subgraph {target}, which is "
                        f"already running (subgraphs {' -> '.join(map(str, (*path, target)))})"
                    )
                calling.setdefault(target, set()).add(index)
            runs[operator.index] = targets
        callees[index] = runs
        for targets in runs.values():
            for target in dict.fromkeys(targets):
                if target not in callees:
                    visit(target, (*path, target))
        order.append(index)

    visit(0, (0,))
    detached = sorted(t for t, subgraphs in calling.items() if len(subgraphs) > 1)
    leaders: dict[int, dict[int, int]] = {}
    for index, runs in callees.items():
        first_runner: dict[int, int] = {}  # the first operator running each target
        lead: dict[int, int] = {}  # operators sharing a subgraph: one group, its first
        for op, targets in runs.items():
            lead[op] = op
            kept = [t for t in targets if t not in detached]
            roots = {lead[first_runner.setdefault(t, op)] for t in kept} | {op}
            for member in lead:
                if lead[member] in roots:
                    lead[member] = min(roots)
        leaders[index] = lead
    unreached: dict[int, tuple[int, int, list[int]]] = {}
    for index in range(count):
        if index not in callees:
            flat = model.Subgraphs(index)
            empty = [
                t
                for t in range(flat.TensorsLength())
                if model.Buffers(flat.Tensors(t).Buffer()).DataLength() == 0
            ]
            unreached[index] = (flat.TensorsLength(), flat.OperatorsLength(), empty)
    return CallStructure(count, callees, order, leaders, detached, unreached)


def callee_bytes(
    structure: CallStructure, index: int, plans: Mapping[int, SubgraphPlan]
) -> dict[int, int]:
    """Operator index -> bytes of the block its subgraphs run in, for
    subgraph ``index`` (``plans`` holds the subgraphs it runs): the largest
    of their heads, since they run one at a time. Operators sharing a block
    (``CallStructure.leaders``) have it under their first one."""
    sizes: dict[int, int] = {}
    for operator, targets in structure.callees[index].items():
        first = structure.leaders[index][operator]
        kept = [plans[t].head for t in targets if t not in structure.detached]
        sizes[first] = max(sizes.get(first, 0), *kept, 0)
    return sizes


@dataclass
class Prepared:
    """A subgraph imported for planning (``prepare``)."""

    module: ModuleOp
    """``@main`` with its inputs in the arena, each call marked with ``RESULTS_ATTR``
    and ``OPERATOR_ATTR``, kernels' scratch buffers and callee blocks as extra results."""
    subgraph: TfliteSubgraph
    folded: Any
    inputs: list[int]
    live: list[int]
    leaders: dict[int, int] = field(default_factory=dict[int, int])
    """Operator -> the first operator of its group (``CallStructure.leaders``)."""


def prepare(
    data: bytes,
    label: str,
    fold_dequantize: bool = False,
    index: int = 0,
    callees: Mapping[int, int] | None = None,
    leaders: Mapping[int, int] | None = None,
) -> Prepared:
    """Subgraph ``index`` of ``data`` imported for planning (see the
    module's docstring); refuses what TFLM cannot take. ``callees``
    (``callee_bytes``): the block each operator that runs other subgraphs
    needs, planned as a storage live during its call; ``leaders``
    (``CallStructure.leaders``): the later operators of a group read the
    block their first one makes, so it lives until the last of them."""
    model = open_model(data, label)
    subgraph = read_subgraph(model, label, index)
    where = f"subgraph {index} " if index else ""
    folded = fold_constants(subgraph)
    operators = subgraph.operators
    if folded.folded_operators and not fold_dequantize:
        first = operators[min(folded.folded_operators)]
        raise ExportError(
            f"{where}{first.where} computes a constant that memplan keeps as a constant (as "
            "TFLite folds it at Prepare) but TFLM would hold in its arena: pass "
            "--fold-dequantize to write it as a constant"
        )
    # An operator that runs subgraphs is one kernel call here: its subgraphs
    # are planned on their own, in the block ``callees`` gives it.
    # A VAR_HANDLE's output is a constant here (``_resources_as_constants``).
    opaque = [
        dataclasses.replace(op, name=f"{op.name}.subgraphs") if op.name in CALLEE_OPTIONS else op
        for op in operators
        if op.name != "VAR_HANDLE"
    ]
    module = import_subgraph(dataclasses.replace(subgraph, operators=opaque), inputs_in_arena=True)
    inputs = [t for t in subgraph.inputs if t not in folded.constants]
    live = [
        op.index
        for op in operators
        if op.index not in folded.folded_operators and op.name != "VAR_HANDLE"
    ]
    annotate_calls(
        module,
        [-1] * len(inputs) + live,
        [(t,) for t in inputs] + [operators[i].outputs for i in live],
    )
    hold_inputs(module, len(inputs))
    add_scratch_results(module, subgraph, callees, leaders)
    return Prepared(module, subgraph, folded, inputs, live, dict(leaders or {}))


def hold_inputs(module: Any, count: int) -> None:
    """A call reading every input copy right after the last one: TFLM marks
    all of a subgraph's inputs live from its start (the application, or the
    ``IF`` / ``WHILE`` kernel, writes them all before the first operator),
    so an input no operator reads must not share bytes with another."""
    if count < 2:
        return
    main = _main_function(module)
    calls = [op for op in main.body.walk() if isinstance(op, func.CallOp)]
    copies = [call.results[0] for call in calls[:count]]
    name = "tfl.INPUTS_HELD"
    module.body.block.add_op(func.FuncOp.external(name, [v.type for v in copies], []))
    held = func.CallOp(name, copies, [])
    held.attributes[OPERATOR_ATTR] = IntegerAttr(INPUTS_HELD, i64)
    held.attributes[RESULTS_ATTR] = DenseArrayBase.from_list(i64, [])
    Rewriter.insert_op(held, InsertPoint.after(calls[count - 1]))


def offsets_from_plan(prepared: Prepared, planned: ModuleOp, pipeline: str) -> SubgraphPlan:
    """TFLM's offsets for one subgraph from ``planned`` (``prepared.module``
    after ``pipeline``), from the start of the subgraph's block."""
    subgraph, folded, live = prepared.subgraph, prepared.folded, prepared.live
    operators = subgraph.operators
    tensors = subgraph.tensors
    where = f"subgraph {subgraph.index} " if subgraph.index else ""
    offsets: dict[int, int] = {}
    pools: set[str] = set()
    invoked: list[tuple[int, tuple[int, ...]]] = []
    scratch_end = 0
    scratch: list[int] = []
    blocks: dict[int, int] = {}
    for op in _main_function(planned).body.walk():
        # A call without results (ASSIGN_VARIABLE, CALL_ONCE) stays a func.call.
        if OPERATOR_ATTR not in op.attributes or not isinstance(op, InvokeOp | func.CallOp):
            continue
        values: tuple[int, ...] = tuple(op.attributes[RESULTS_ATTR].get_values())  # type: ignore[union-attr]
        index: int = op.attributes[OPERATOR_ATTR].value.data  # type: ignore[union-attr]
        invoked.append((index, values))
        outs = op.outs if isinstance(op, InvokeOp) else ()
        if len(outs) != len(values):
            raise ExportError(f"{where}{operators[index].where} is not planned by the pipeline")
        for value, tensor in zip(outs, values):
            if tensor < 0:  # kernel scratch or a callee block: TFLM places scratch itself
                kind = "a scratch buffer" if tensor == SCRATCH else "the subgraphs' block"
                pool, offset = _tensor_place(value, f"{kind} of {where}{operators[index].where}")
                size = static_byte_size(value.type) or 0  # type: ignore[arg-type]
                if tensor == SCRATCH:
                    scratch.append(size)
                else:
                    blocks[index] = offset
                scratch_end = max(scratch_end, offset + align_up(size, TFLM_BUFFER_ALIGNMENT))
            else:
                what = f"{where}tensor {tensor} '{tensors[tensor].name}'"
                pool, offset = _tensor_place(value, what)
                offsets[tensor] = offset
            pools.add(pool)
    if len(pools) > 1:
        raise ExportError(
            f"the pipeline puts the tensors in {len(pools)} pools ({', '.join(sorted(pools))}); "
            "TFLM's arena is one"
        )
    # The inputs are in TFLM's arena before the first operator runs.
    seen_operator = False
    for index, values in invoked:
        if index == INPUT_COPIED and seen_operator:
            raise ExportError(
                f"the pipeline copies {where}input tensor {values[0]} "
                f"'{tensors[values[0]].name}' in after an operator has run; TFLM holds inputs "
                "from the start"
            )
        seen_operator = seen_operator or index >= 0
    planned_order = [index for index, _ in invoked if index >= 0]
    for operator, first in prepared.leaders.items():  # a group's later operators
        if first in blocks:
            blocks[operator] = blocks[first]

    for index in live:
        operator = operators[index]
        if operator.name not in VIEW_OPS:
            continue
        source = operator.inputs[0]
        if source not in offsets:
            raise ModelError(
                f"{where}{operator.where} views tensor {source} '{tensors[source].name}', which "
                "is a constant: TFLM copies it into its arena, outside memplan's plan"
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
        elif tensor_bytes(tensor) == 0:  # TFLM gives it no bytes (needs_allocating is false)
            words.append(-1)
        else:  # pragma: no cover - every used tensor is imported
            raise ExportError(f"tensor {tensor.index} '{tensor.name}' has no place in the plan")
    head = max(
        (
            words[t.index] + align_up(tensor_bytes(t), TFLM_BUFFER_ALIGNMENT)
            for t in tensors
            if words[t.index] >= 0 and tensor_bytes(t) > 0
        ),
        default=0,
    )
    head = max(head, scratch_end)
    pool_used = sum(
        op.used.value.data for op in planned.ops if isinstance(op, PoolOp) and op.used is not None
    )
    return SubgraphPlan(
        index=subgraph.index,
        offsets=words,
        head=head,
        order=_operator_order(subgraph, planned_order, live, folded.constants),
        folded={t: folded.values[t] for i in folded.folded_operators for t in operators[i].outputs},
        folded_operators=sorted(folded.folded_operators),
        runtime_planned=runtime,
        pool_used=pool_used,
        tensor_names=[t.name for t in tensors],
        scratch=scratch,
        callee_blocks=blocks,
    )


def combine(
    structure: CallStructure, plans: Mapping[int, SubgraphPlan], pipeline: str
) -> OfflinePlan:
    """The whole model's plan: subgraph 0 at the arena's start, each
    subgraph an operator runs at the start of that operator's block, each
    detached subgraph in a region of its own above the rest, the words of
    all subgraphs one after the other (TFLM's ``InitializeAllocationInfo``
    reads them with one running index, and ``GetOfflinePlannedOffsets``
    wants their count to be all subgraphs' tensors)."""
    base = {0: 0}
    top = align_up(plans[0].head, TFLM_BUFFER_ALIGNMENT)
    for index in structure.detached:
        base[index] = top
        top = align_up(top + plans[index].head, TFLM_BUFFER_ALIGNMENT)
    for index in reversed(structure.order):  # callers before the subgraphs they run
        for operator, targets in structure.callees[index].items():
            for target in targets:
                if target not in structure.detached:
                    base[target] = base[index] + plans[index].callee_blocks.get(operator, 0)
    parts: list[SubgraphPlan] = []
    words: list[int] = []
    for index in range(structure.count):
        if index in plans:
            part = plans[index]
            shifted = [w + base[index] if w >= 0 else -1 for w in part.offsets]
            part = dataclasses.replace(part, offsets=shifted)
        else:
            tensor_count, operator_count, empty = structure.unreached[index]
            part = SubgraphPlan(
                index,
                [-1] * tensor_count,
                0,
                list(range(operator_count)),
                runtime_planned=dict.fromkeys(empty, "no operator runs its subgraph"),
            )
        parts.append(part)
        words.extend(part.offsets)
    head = max((base[i] + plans[i].head for i in plans), default=0)
    return OfflinePlan(pipeline=pipeline, offsets=words, head=head, subgraphs=parts)


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
    for subgraph, part in zip(model.subgraphs, plan.subgraphs, strict=True):
        for tensor_index, values in part.folded.items():
            tensor = subgraph.tensors[tensor_index]
            buffers.append(schema.BufferT(data=_little_endian_bytes(values)))
            tensor.buffer = len(buffers) - 1
        subgraph.operators = [subgraph.operators[i] for i in part.order]
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
    and types (floats in [-1, 1), integers over their type's range). Only the
    input tensors are read: the model may hold tensors memplan does not
    import (a streaming model's RESOURCE handles)."""
    from ai_edge_litert import schema_py_generated as schema

    type_names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    flat: Any = schema.ModelT.InitFromPackedBuf(bytearray(model), 0)
    subgraph = flat.subgraphs[0]
    generator = np.random.default_rng(seed)
    arrays: list[np.ndarray] = []
    for index in subgraph.inputs if subgraph.inputs is not None else ():
        tensor = subgraph.tensors[index]
        shape = [int(d) for d in (tensor.shape if tensor.shape is not None else ())]
        dtype: Any = np.dtype(ELEMENT_TYPES[type_names[tensor.type]][1])
        if np.issubdtype(dtype, np.floating):
            array = generator.uniform(-1, 1, shape).astype(dtype)
        elif dtype == np.bool_:
            array = generator.integers(0, 2, shape).astype(np.bool_)
        else:
            info = np.iinfo(dtype)
            array = generator.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
        arrays.append(array)
    return arrays
