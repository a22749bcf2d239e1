"""TFLite models as value-semantic IR: the library behind `memplan-import-tflite`.

Usage::

    memplan-import-tflite MODEL.tflite [-o OUT.mlir] [--subgraph N] [--inputs-in-arena]

The output is the form `manifest-alloc` takes, as for ONNX
(`onnx_import`): one `func.call` per operator, in the model's execution
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
  takes the size the model records for it, as TFLite does before any resize.
* Element types: f16/f32/f64, signless i8..i64 for TFLite's signed
  integers, `ui8`..`ui64` for its unsigned ones, `i1` for BOOL. STRING,
  RESOURCE, VARIANT, complex, bfloat16 and int4 tensors are refused.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
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

from memplan.dialect.ops import INPLACE_ATTR, VIEW_ATTR
from memplan.tools.frontends.common import UniqueNames, sanitize_name

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

_UNSIGNED = Signedness.UNSIGNED
ELEMENT_TYPES: dict[str, tuple[Attribute, type[np.generic]]] = {
    "FLOAT16": (f16, np.float16),
    "FLOAT32": (f32, np.float32),
    "FLOAT64": (f64, np.float64),
    "INT8": (i8, np.int8),
    "INT16": (i16, np.int16),
    "INT32": (i32, np.int32),
    "INT64": (i64, np.int64),
    "UINT8": (IntegerType(8, _UNSIGNED), np.uint8),
    "UINT16": (IntegerType(16, _UNSIGNED), np.uint16),
    "UINT32": (IntegerType(32, _UNSIGNED), np.uint32),
    "UINT64": (IntegerType(64, _UNSIGNED), np.uint64),
    "BOOL": (i1, np.bool_),
}
"""TFLite tensor types memplan imports: the MLIR element type and NumPy's."""


class TfliteImportError(Exception):
    """A model memplan cannot import; the message names the tensor or operator."""


def _tflite() -> Any:
    try:
        import tflite
    except ImportError as error:  # pragma: no cover - a dependency of memplan
        raise TfliteImportError(
            "the 'tflite' package is not installed (pip install tflite)"
        ) from error
    return tflite


def _enum_names(enum_class: type) -> dict[int, str]:
    return {v: k for k, v in vars(enum_class).items() if not k.startswith("_")}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# ---------------------------------------------------------------------------
# Reading the flatbuffer into plain data
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SparseLevel:
    """One level of a sparse tensor's storage order (TFLite's DimensionMetadata)."""

    dense_size: int | None
    """The level's size when it is dense; None for a CSR level."""
    segments: tuple[int, ...] = ()
    indices: tuple[int, ...] = ()


@dataclass(frozen=True)
class SparseFormat:
    """TFLite's SparsityParameters: storage order, block map and levels."""

    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    levels: tuple[SparseLevel, ...]


@dataclass(frozen=True)
class TfliteTensor:
    index: int
    name: str
    shape: tuple[int, ...]
    type_name: str
    data: bytes | None
    """The buffer's bytes when the tensor is a constant."""
    sparse: bool
    sparsity: SparseFormat | None
    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    quantized_dimension: int

    @property
    def element_type(self) -> Attribute:
        return ELEMENT_TYPES[self.type_name][0]

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(ELEMENT_TYPES[self.type_name][1])

    @property
    def tensor_type(self) -> TensorType[Any]:
        return TensorType(self.element_type, self.shape)

    @property
    def memref_type(self) -> MemRefType[Any]:
        return MemRefType(self.element_type, self.shape)


@dataclass(frozen=True)
class TfliteOperator:
    index: int
    name: str
    """The builtin operator's name (``CONV_2D``), or ``CUSTOM``."""
    custom_code: str
    version: int
    inputs: tuple[int, ...]
    """Tensor indices; -1 for an optional input left out."""
    outputs: tuple[int, ...]
    options: dict[str, Any]
    custom_options: bytes

    @property
    def where(self) -> str:
        what = f"CUSTOM {self.custom_code}" if self.name == "CUSTOM" else self.name
        return f"operator {self.index} ({what})"


@dataclass(frozen=True)
class TfliteSubgraph:
    index: int
    name: str
    tensors: list[TfliteTensor]
    operators: list[TfliteOperator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


class _StrictBytes(bytes):
    """The model's bytes, refusing a slice past their end.

    flatbuffers' Python reader slices strings and vectors out of the buffer
    without a bounds check, so a cut file would give cut names silently;
    here it raises ``IndexError`` (reported as a truncated file).
    """

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice) and key.stop is not None and key.stop > len(self):
            raise IndexError(f"read up to byte {key.stop} of {len(self)}")
        return super().__getitem__(key)


def load_model(source: str | Path | bytes) -> tuple[Any, str]:
    """The model's root table and a name for messages; checks the identifier."""
    if isinstance(source, bytes):
        data, label = source, "<bytes>"
    else:
        label = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as error:
            raise TfliteImportError(f"cannot read {label}: {error.strerror}") from None
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TfliteImportError(f"{label} is not a TFLite model (no 'TFL3' file identifier)")
    return _tflite().Model.GetRootAs(_StrictBytes(data), 0), label


def _numbers(table: Any, field_name: str) -> tuple[Any, ...]:
    """A flatbuffer vector field as a tuple (empty when absent)."""
    if getattr(table, field_name + "IsNone")():
        return ()
    return tuple(getattr(table, field_name + "AsNumpy")().tolist())


def _options_fields(table: Any, options_class: type) -> dict[str, Any]:
    """Every scalar and vector field of an options table, by schema name."""
    tflite = _tflite()
    enums = {"Padding": tflite.Padding, "FusedActivationFunction": tflite.ActivationFunctionType}
    names = set(dir(options_class))
    fields: dict[str, Any] = {}
    for name in sorted(names):
        if (
            not name[0].isupper()
            or name.startswith(("GetRootAs", "Init"))
            or name.endswith(("BufferHasIdentifier", "IsNone", "Length", "AsNumpy"))
        ):
            continue
        if name + "AsNumpy" in names:
            fields[name] = _numbers(table, name)
            continue
        try:
            value = getattr(table, name)()
        except TypeError:  # a table or a vector of tables: not an option value
            continue
        if name in enums and isinstance(value, int):
            value = _enum_names(enums[name]).get(value, value)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, bool | int | float | str):
            fields[name] = value
    return fields


def _operator_options(operator: Any) -> dict[str, Any]:
    tflite = _tflite()
    options: dict[str, Any] = {}
    for getter, enum_class in (
        ("BuiltinOptions", tflite.BuiltinOptions),
        ("BuiltinOptions2", tflite.BuiltinOptions2),
    ):
        kind = getattr(operator, getter + "Type")()
        union = getattr(operator, getter)()
        if not kind or union is None:
            continue
        class_name = _enum_names(enum_class).get(kind)
        options_class = getattr(tflite, class_name or "", None)
        if options_class is None:
            continue
        table = options_class()
        table.Init(union.Bytes, union.Pos)
        options.update(_options_fields(table, options_class))
    return options


def _read_tensor(model: Any, subgraph: Any, index: int, type_names: dict[int, str]) -> TfliteTensor:
    tensor = subgraph.Tensors(index)
    name = (tensor.Name() or b"").decode("utf-8", "replace") or f"tensor_{index}"
    type_name = type_names.get(tensor.Type(), f"type {tensor.Type()}")
    shape = _numbers(tensor, "Shape")
    if type_name not in ELEMENT_TYPES:
        raise TfliteImportError(
            f"tensor {index} '{name}' has element type {type_name}, which memplan does not import"
        )
    if any(d < 0 for d in shape):
        raise TfliteImportError(f"tensor {index} '{name}' has a negative dimension {list(shape)}")
    if tensor.IsVariable():
        raise TfliteImportError(
            f"tensor {index} '{name}' is a variable (state kept across invocations), "
            "which memplan does not import"
        )
    data: bytes | None = None
    buffer_index = tensor.Buffer()
    if buffer_index >= model.BuffersLength():
        raise TfliteImportError(
            f"tensor {index} '{name}' refers to buffer {buffer_index}, but the model has "
            f"{model.BuffersLength()} buffers"
        )
    if buffer_index > 0:
        buffer = model.Buffers(buffer_index)
        if buffer.Offset() > 1:
            raise TfliteImportError(
                f"tensor {index} '{name}' keeps its data outside the flatbuffer "
                "(a model over 2 GB), which memplan does not read"
            )
        if buffer.DataLength() > 0:
            data = buffer.DataAsNumpy().tobytes()
    sparsity = _read_sparsity(tensor.Sparsity())
    sparse = tensor.Sparsity() is not None
    if data is not None and not sparse:
        expected = (
            int(np.prod(shape, dtype=np.int64)) * np.dtype(ELEMENT_TYPES[type_name][1]).itemsize
        )
        if len(data) != expected:
            raise TfliteImportError(
                f"tensor {index} '{name}' {list(shape)} x {type_name} needs {expected} bytes, "
                f"but its buffer {buffer_index} holds {len(data)}"
            )
    quantization = tensor.Quantization()
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    dimension = 0
    if quantization is not None:
        scale = _numbers(quantization, "Scale")
        zero_point = _numbers(quantization, "ZeroPoint")
        dimension = quantization.QuantizedDimension()
    return TfliteTensor(
        index, name, shape, type_name, data, sparse, sparsity, scale, zero_point, dimension
    )


def _read_sparsity(parameters: Any) -> SparseFormat | None:
    if parameters is None:
        return None
    tflite = _tflite()
    vectors = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}

    def vector(kind: int, table: Any) -> tuple[int, ...]:
        if table is None or kind not in vectors:
            return ()
        values = vectors[kind]()
        values.Init(table.Bytes, table.Pos)
        return _numbers(values, "Values")

    levels: list[SparseLevel] = []
    for level in range(parameters.DimMetadataLength()):
        metadata = parameters.DimMetadata(level)
        if metadata.Format() == tflite.DimensionType.DENSE:
            levels.append(SparseLevel(metadata.DenseSize()))
        else:
            levels.append(
                SparseLevel(
                    None,
                    vector(metadata.ArraySegmentsType(), metadata.ArraySegments()),
                    vector(metadata.ArrayIndicesType(), metadata.ArrayIndices()),
                )
            )
    return SparseFormat(
        _numbers(parameters, "TraversalOrder"), _numbers(parameters, "BlockMap"), tuple(levels)
    )


def densify(tensor: TfliteTensor) -> np.ndarray:
    """The dense values of a sparse constant, as TFLite's DENSIFY computes
    them (its FormatConverter: levels in traversal order, dense levels
    counted out, CSR levels read from segments and indices, block levels
    folded back into their dimension)."""
    sparsity = tensor.sparsity
    assert sparsity is not None and tensor.data is not None
    values = np.frombuffer(tensor.data, dtype=tensor.dtype)
    rank = len(tensor.shape)
    order, block_map, levels = sparsity.traversal_order, sparsity.block_map, sparsity.levels
    block_sizes = [levels[order[rank + b]].dense_size or 1 for b in range(len(block_map))]
    dense = np.zeros(tensor.shape, dtype=tensor.dtype)
    taken = 0
    indices = [0] * len(levels)

    def place() -> None:
        nonlocal taken
        original = [0] * rank
        for level in range(rank):
            original[order[level]] = indices[level]
        for level in range(rank, len(levels)):
            block = order[level] - rank
            dim = block_map[block]
            original[dim] = original[dim] * block_sizes[block] + indices[level]
        if taken >= values.size:
            raise TfliteImportError(
                f"tensor {tensor.index} '{tensor.name}': its sparse data holds fewer values "
                "than its indices address"
            )
        dense[tuple(original)] = values[taken]
        taken += 1

    def populate(level: int, previous: int) -> None:
        if level == len(levels):
            place()
            return
        metadata = levels[level]
        if metadata.dense_size is not None:
            for i in range(metadata.dense_size):
                indices[level] = i
                populate(level + 1, previous * metadata.dense_size + i)
        elif previous + 1 < len(metadata.segments):
            for i in range(metadata.segments[previous], metadata.segments[previous + 1]):
                if i < len(metadata.indices):
                    indices[level] = metadata.indices[i]
                    populate(level + 1, i)

    try:
        populate(0, 0)
    except IndexError as error:
        raise TfliteImportError(
            f"tensor {tensor.index} '{tensor.name}': its sparsity does not fit its shape "
            f"{list(tensor.shape)} ({error})"
        ) from None
    return dense


def _read_operator(
    model: Any, operator: Any, index: int, op_names: dict[int, str], tensors: int
) -> TfliteOperator:
    opcode_index = operator.OpcodeIndex()
    if opcode_index >= model.OperatorCodesLength():
        raise TfliteImportError(
            f"operator {index} uses operator code {opcode_index}, but the model has "
            f"{model.OperatorCodesLength()}"
        )
    code = model.OperatorCodes(opcode_index)
    # The schema's rule: the larger of the two fields is the builtin code.
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    name = op_names.get(builtin)
    if name is None:
        raise TfliteImportError(
            f"operator {index} has builtin code {builtin}, which this TFLite schema "
            "does not know (a newer converter?)"
        )
    custom_code = (code.CustomCode() or b"").decode("utf-8", "replace")
    inputs = _numbers(operator, "Inputs")
    outputs = _numbers(operator, "Outputs")
    what = f"CUSTOM {custom_code}" if name == "CUSTOM" else name
    for role, indices in (("input", inputs), ("output", outputs)):
        for position, tensor in enumerate(indices):
            if tensor >= tensors or tensor < -1 or (tensor == -1 and role == "output"):
                raise TfliteImportError(
                    f"operator {index} ({what}) {role} {position} is tensor {tensor}, "
                    f"but the subgraph has {tensors} tensors"
                )
    return TfliteOperator(
        index,
        name,
        custom_code,
        code.Version(),
        inputs,
        outputs,
        _operator_options(operator),
        bytes(_numbers(operator, "CustomOptions")),
    )


def read_subgraph(model: Any, label: str, index: int = 0) -> TfliteSubgraph:
    """Subgraph ``index`` of ``model`` as plain data (see ``load_model``)."""
    tflite = _tflite()
    try:
        count = model.SubgraphsLength()
        if not 0 <= index < count:
            raise TfliteImportError(
                f"{label} has {count} subgraph{'s' if count != 1 else ''}; "
                f"subgraph {index} is out of range"
            )
        subgraph = model.Subgraphs(index)
        type_names = _enum_names(tflite.TensorType)
        op_names = _enum_names(tflite.BuiltinOperator)
        tensor_count = subgraph.TensorsLength()
        tensors = [_read_tensor(model, subgraph, i, type_names) for i in range(tensor_count)]
        operators = [
            _read_operator(model, subgraph.Operators(i), i, op_names, tensor_count)
            for i in range(subgraph.OperatorsLength())
        ]
        inputs = _numbers(subgraph, "Inputs")
        outputs = _numbers(subgraph, "Outputs")
        name = (subgraph.Name() or b"").decode("utf-8", "replace")
    except (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError) as error:
        # flatbuffers reads lazily: a cut or damaged file fails on access.
        raise TfliteImportError(
            f"{label} is truncated or corrupt: reading subgraph {index} failed ({error})"
        ) from None
    for role, indices in (("input", inputs), ("output", outputs)):
        for tensor in indices:
            if not 0 <= tensor < len(tensors):
                raise TfliteImportError(
                    f"subgraph {index} {role} is tensor {tensor}, but it has {len(tensors)} tensors"
                )
    return TfliteSubgraph(index, name, tensors, operators, inputs, outputs)


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
        base = "tfl." + (
            f"custom.{operator.custom_code}" if operator.name == "CUSTOM" else operator.name
        )
        name = self.symbols.get(sanitize_name(base))
        declaration = func.FuncOp.external(name, operand_types, result_types)
        declaration.attributes.update(attributes)
        self.signatures[key] = declaration
        self.declarations.append(declaration)
        return declaration


INPUT_COPY = "INPUT_COPY"
"""The pseudo-operator ``inputs_in_arena`` adds: copies an input into the arena."""


def import_subgraph(subgraph: TfliteSubgraph, inputs_in_arena: bool = False) -> ModuleOp:
    """The value-semantic module of ``subgraph``.

    With ``inputs_in_arena``, each input is first copied by a call to
    ``@tfl.INPUT_COPY`` and the operators read the copy: the input then
    takes planned workspace from the start to its last use, as in TFLite's
    and TFLM's arenas (where the application writes the input), instead of
    being the caller's memory for the whole call.
    """
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
        declaration = emitter.declaration(
            operator, [tensors[t] for t in operands_of(operator)], results, view
        )
        call = func.CallOp(declaration.sym_name.data, operands, [t.tensor_type for t in results])
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
    source: str | Path | bytes, subgraph: int = 0, inputs_in_arena: bool = False
) -> ModuleOp:
    """Load the model at ``source`` (a path or the file's bytes) and import
    subgraph ``subgraph`` (see ``import_subgraph``)."""
    model, label = load_model(source)
    return import_subgraph(read_subgraph(model, label, subgraph), inputs_in_arena)


def global_data(module: ModuleOp, subgraph: TfliteSubgraph) -> dict[str, np.ndarray]:
    """The data of each constant global of ``module`` (imported from
    ``subgraph``), by symbol; a DENSIFY output has none (not computed)."""
    values = fold_constants(subgraph).values
    data: dict[str, np.ndarray] = {}
    for op in module.ops:
        index = op.attributes.get(TFLITE_ATTR_PREFIX + "tensor")
        if isinstance(op, memref.GlobalOp) and isinstance(index, IntegerAttr):
            array = values.get(index.value.data)
            if array is not None:
                data[op.sym_name.data] = array
    return data
