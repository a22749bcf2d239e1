"""TFLite flatbuffers read into plain data: the first step of `memplan-import-tflite`.

``read_subgraph`` turns one subgraph of a model loaded by ``load_model`` into
``TfliteSubgraph``: its tensors (with their buffers, quantization and
sparsity) and its operators (builtin or custom, with their options), each
checked against the flatbuffer's bounds. ``densify`` expands a sparse
constant as TFLite's FormatConverter does. See ``importer.py`` for the
rest of the import.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    ComplexType,
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
    "BFLOAT16": (BFloat16Type(), ml_dtypes.bfloat16),
    "COMPLEX64": (ComplexType(f32), np.complex64),
    "COMPLEX128": (ComplexType(f64), np.complex128),
    "INT4": (IntegerType(4), ml_dtypes.int4),
}
"""TFLite tensor types memplan imports: the MLIR element type and NumPy's.
Every type with a fixed size; STRING, RESOURCE and VARIANT have none. INT4
takes one byte per element in memory, as TFLite's kernels unpack it (its
constant buffers, packed two per byte, are unpacked on reading)."""


def _unpack_int4(data: bytes, count: int) -> bytes:
    """TFLite's packed INT4 buffer (low nibble first) as one int4 per byte."""
    packed = np.frombuffer(data, dtype=np.uint8)
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(-1)[:count]
    return nibbles.astype(np.uint8).tobytes()  # ml_dtypes.int4 sign-extends the low nibble


class TfliteImportError(FrontendError):
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
    signature: tuple[int, ...] = ()
    """``shape_signature``: -1 where the model leaves a dim dynamic (empty if
    the model records none)."""
    max_shape: tuple[int, ...] | None = None
    """Set when the tensor is imported with dynamic dims (``-1`` in
    ``shape``): its shape at the upper bounds."""

    @property
    def is_resource(self) -> bool:
        """A resource variable's handle (a ``VAR_HANDLE`` output): no bytes of its own."""
        return self.type_name == "RESOURCE"

    @property
    def element_type(self) -> Attribute:
        return ELEMENT_TYPES[self._checked_type_name][0]

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(ELEMENT_TYPES[self._checked_type_name][1])

    @property
    def _checked_type_name(self) -> str:
        if self.is_resource:
            raise TfliteImportError(
                f"tensor {self.index} '{self.name}' is a resource variable's handle: "
                "only READ_VARIABLE and ASSIGN_VARIABLE take it"
            )
        return self.type_name

    @property
    def tensor_type(self) -> TensorType[Any]:
        return TensorType(self.element_type, self._builtin_shape)

    @property
    def memref_type(self) -> MemRefType[Any]:
        return MemRefType(self.element_type, self._builtin_shape)

    @property
    def _builtin_shape(self) -> list[int]:
        return [DYNAMIC_INDEX if d < 0 else d for d in self.shape]


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
        hint = ": import it with memplan-import-onnx" if label.lower().endswith(".onnx") else ""
        raise TfliteImportError(f"{label} is not a TFLite model (no 'TFL3' file identifier){hint}")
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
            or name.startswith("GetRootAs")
            or name == "Init"
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
    if type_name not in ELEMENT_TYPES and type_name != "RESOURCE":
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
    if data is not None and type_name == "RESOURCE":
        raise TfliteImportError(f"tensor {index} '{name}' is a RESOURCE handle with data")
    sparsity = _read_sparsity(tensor.Sparsity())
    sparse = tensor.Sparsity() is not None
    if data is not None and not sparse:
        count = int(np.prod(shape, dtype=np.int64))
        if type_name == "INT4" and len(data) == (count + 1) // 2 and count > 1:
            data = _unpack_int4(data, count)
        expected = count * np.dtype(ELEMENT_TYPES[type_name][1]).itemsize
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
    signature = _numbers(tensor, "ShapeSignature")
    if len(signature) != len(shape) or any(d < -1 for d in signature):
        signature = ()
    return TfliteTensor(
        index,
        name,
        shape,
        type_name,
        data,
        sparse,
        sparsity,
        scale,
        zero_point,
        dimension,
        signature,
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
