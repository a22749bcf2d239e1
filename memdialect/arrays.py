"""Builtin element types and dense attributes as NumPy dtypes and arrays.

Shared by the interpreter, ``memplan-run`` and the front ends, which turn a
model's constants into ``dense<...>`` attributes and back. Element types
NumPy lacks (bfloat16, float8 and float4 variants, 2- and 4-bit integers)
come from ``ml_dtypes``.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    ComplexType,
    DenseIntOrFPElementsAttr,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute


class NoNumpyDtype(ValueError):
    """An element type that no NumPy dtype holds, even with ``ml_dtypes``."""


_ML_DTYPES: tuple[tuple[type[Attribute], str], ...] = (
    (BFloat16Type, "bfloat16"),
    (Float8E4M3FNType, "float8_e4m3fn"),
    (Float8E4M3FNUZType, "float8_e4m3fnuz"),
    (Float8E5M2Type, "float8_e5m2"),
    (Float8E5M2FNUZType, "float8_e5m2fnuz"),
    (Float8E8M0FNUType, "float8_e8m0fnu"),
    (Float4E2M1FNType, "float4_e2m1fn"),
)
"""Builtin element types NumPy lacks, by their ``ml_dtypes`` name (one
element per byte, as ``element_byte_size`` plans them)."""


def _ml_dtype(name: str) -> np.dtype[Any]:
    # Imported on first use: only models with these types pay for it.
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def numpy_dtype(element_type: Attribute) -> np.dtype[Any]:
    """The NumPy dtype holding elements of builtin type ``element_type``."""
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, IndexType):
        return np.dtype(np.int64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            return np.dtype(f"{'u' if unsigned else 'i'}{width // 8}")
        if width in (2, 4):
            return _ml_dtype(f"{'uint' if unsigned else 'int'}{width}")
    if isinstance(element_type, ComplexType):
        part = element_type.get_element_type()
        if isinstance(part, Float32Type):
            return np.dtype(np.complex64)
        if isinstance(part, Float64Type):
            return np.dtype(np.complex128)
    for type_class, name in _ML_DTYPES:
        if isinstance(element_type, type_class):
            return _ml_dtype(name)
    raise NoNumpyDtype(f"element type {element_type} has no NumPy equivalent")


def dense_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The array ``attr`` holds, without a copy (a splat is broadcast, read-only)."""
    dtype = numpy_dtype(attr.get_element_type())
    shape = tuple(attr.get_shape())
    data = np.frombuffer(attr.data.data, dtype=dtype)
    if data.size == 1 and prod(shape) != 1:
        return np.broadcast_to(data[0], shape)
    return data.reshape(shape)
