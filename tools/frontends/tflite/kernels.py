"""NumPy kernels for TFLite builtins, so `memplan-run` can execute imported
`.tflite` models (float32, NHWC, as TFLite's reference kernels compute them;
int8 for the quantized operators of ``INTEGER_KERNELS``, bit for bit).

``TfliteKernelResolver`` answers declarations that carry `memory.tflite.op`
with one of ``KERNELS``; options come from the declaration's
`memory.tflite.*` attributes. Operators without a kernel here (custom ops,
quantized arithmetic) make the run fail naming the operator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import ceil, floor, frexp
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute

from memplan.dialect.interpreter import Kernel, kernel_of_shape_function, shape_function_kernel
from memplan.tools.frontends.tflite.importer import TFLITE_ATTR_PREFIX

Options = Mapping[str, Any]
TfliteKernel = Callable[[Sequence[np.ndarray], Options], Any]
"""The result: an array, or a list of arrays for an operator with several outputs."""


def options_of(attributes: Mapping[str, Attribute]) -> dict[str, Any]:
    """The declaration's `memory.tflite.*` attributes as Python values."""
    options: dict[str, Any] = {}
    for key, value in attributes.items():
        if not key.startswith(TFLITE_ATTR_PREFIX):
            continue
        name = key.removeprefix(TFLITE_ATTR_PREFIX)
        if isinstance(value, StringAttr):
            options[name] = value.data
        elif isinstance(value, IntegerAttr):
            options[name] = value.value.data
        elif isinstance(value, FloatAttr):
            options[name] = value.value.data
        elif isinstance(value, DenseArrayBase):
            options[name] = list(value.get_values())
    return options


def _activation(x: np.ndarray, options: Options) -> np.ndarray:
    match options.get("fused_activation_function", "NONE"):
        case "NONE":
            return x
        case "RELU":
            return np.maximum(x, 0)
        case "RELU6":
            return np.clip(x, 0, 6)
        case "RELU_N1_TO_1":
            return np.clip(x, -1, 1)
        case "TANH":
            return np.tanh(x)
        case other:
            raise NotImplementedError(f"fused activation {other}")


def _padding(size: int, kernel: int, stride: int, dilation: int, mode: str) -> tuple[int, int, int]:
    """Output size and the padding before/after, as TFLite computes them."""
    effective = (kernel - 1) * dilation + 1
    if mode == "SAME":
        out = ceil(size / stride)
        total = max((out - 1) * stride + effective - size, 0)
        return out, total // 2, total - total // 2
    return (size - effective) // stride + 1, 0, 0


def _windows(
    x: np.ndarray, kh: int, kw: int, options: Options, fill: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Patches of NHWC ``x``: [N, OH, OW, C, KH, KW], and a mask of which
    taps fall inside the input (for average pooling)."""
    sh, sw = options.get("stride_h", 1), options.get("stride_w", 1)
    dh, dw = options.get("dilation_hfactor", 1), options.get("dilation_wfactor", 1)
    mode = options.get("padding", "VALID")
    oh, top, bottom = _padding(x.shape[1], kh, sh, dh, mode)
    ow, left, right = _padding(x.shape[2], kw, sw, dw, mode)
    pads = ((0, 0), (top, bottom), (left, right), (0, 0))
    padded = np.pad(x, pads, constant_values=fill)
    inside = np.pad(np.ones(x.shape[1:3], bool), pads[1:3])
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    if padded.shape[1] < span_h or padded.shape[2] < span_w:
        # TFLite refuses it too when it prepares the model (a model saved
        # with placeholder input sizes: pyopen-wakeword's melspectrogram).
        raise ValueError(
            f"a {x.shape[1]}x{x.shape[2]} input (padded {padded.shape[1]}x{padded.shape[2]}) "
            f"is smaller than the {span_h}x{span_w} window; if the model's input sizes "
            "are placeholders, give them with --input-shape"
        )
    patches = sliding_window_view(padded, (span_h, span_w), axis=(1, 2))
    patches = patches[:, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, :, ::dh, ::dw]
    mask = sliding_window_view(inside, (span_h, span_w))
    mask = mask[: (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]
    return patches, mask


def conv_2d(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x, weight = ins[0], ins[1]  # weight: [Cout, KH, KW, Cin]
    patches, _ = _windows(x, weight.shape[1], weight.shape[2], options)
    out = np.einsum("nhwcij,oijc->nhwo", patches, weight, dtype=np.result_type(x, weight))
    if len(ins) > 2:
        out = out + ins[2]
    return _activation(out, options)


def depthwise_conv_2d(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x, weight = ins[0], ins[1]  # weight: [1, KH, KW, Cin * multiplier]
    channels = x.shape[3]
    multiplier = weight.shape[3] // channels
    patches, _ = _windows(x, weight.shape[1], weight.shape[2], options)
    kernel = weight[0].reshape(weight.shape[1], weight.shape[2], channels, multiplier)
    out = np.einsum("nhwcij,ijcm->nhwcm", patches, kernel, dtype=np.result_type(x, weight))
    out = out.reshape(*out.shape[:3], channels * multiplier)
    if len(ins) > 2:
        out = out + ins[2]
    return _activation(out, options)


def _pool(ins: Sequence[np.ndarray], options: Options, kind: str) -> np.ndarray:
    kh, kw = options["filter_height"], options["filter_width"]
    fill = -np.inf if kind == "max" else 0.0
    patches, mask = _windows(ins[0], kh, kw, options, fill)
    if kind == "max":
        out = patches.max(axis=(4, 5))
    else:  # TFLite divides by the taps inside the input
        out = patches.sum(axis=(4, 5)) / mask.sum(axis=(2, 3))[None, :, :, None]
    return _activation(out, options)


def fully_connected(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x, weight = ins[0], ins[1]  # weight: [units, depth]
    out = x.reshape(-1, weight.shape[1]) @ weight.T
    if len(ins) > 2:
        out = out + ins[2]
    return _activation(out, options)


def pad(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    value = ins[2].reshape(()) if len(ins) > 2 else 0
    return np.pad(ins[0], [tuple(int(v) for v in row) for row in ins[1]], constant_values=value)


def mirror_pad(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    # TFLite's REFLECT leaves the edge out of the mirror (NumPy's "reflect"),
    # SYMMETRIC repeats it (NumPy's "symmetric").
    mode = "symmetric" if options.get("mode", 0) in (1, "SYMMETRIC") else "reflect"
    return np.pad(ins[0], [tuple(int(v) for v in row) for row in ins[1]], mode=mode)


def strided_slice(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x, begin, end, strides = ins
    index: list[slice] = []
    for axis in range(x.ndim):
        b = None if options.get("begin_mask", 0) >> axis & 1 else int(begin[axis])
        e = None if options.get("end_mask", 0) >> axis & 1 else int(end[axis])
        index.append(slice(b, e, int(strides[axis])))
    out = x[tuple(index)]
    shrink = options.get("shrink_axis_mask", 0)
    if shrink:
        out = out.reshape([d for a, d in enumerate(out.shape) if not shrink >> a & 1])
    return out


def resize_bilinear(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x = ins[0]
    out_h, out_w = (int(v) for v in ins[1])
    in_h, in_w = x.shape[1:3]
    align = bool(options.get("align_corners", 0))
    half = bool(options.get("half_pixel_centers", 0))

    def source(out_size: int, in_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        scale = (in_size - 1) / (out_size - 1) if align and out_size > 1 else in_size / out_size
        positions = np.arange(out_size, dtype=np.float32)
        where = (positions + 0.5) * scale - 0.5 if half else positions * scale
        # TFLite's reference: clamped floor and ceil, weight from the clamped
        # floor (so a position before the first pixel extrapolates).
        low = np.maximum(np.floor(where), 0).astype(np.int64)
        high = np.minimum(np.ceil(where), in_size - 1).astype(np.int64)
        return low, high, (where - low).astype(np.float32)

    (y0, y1, fy), (x0, x1, fx) = source(out_h, in_h), source(out_w, in_w)
    fy, fx = fy[None, :, None, None], fx[None, None, :, None]
    top = x[:, y0][:, :, x0] * (1 - fx) + x[:, y0][:, :, x1] * fx
    bottom = x[:, y1][:, :, x0] * (1 - fx) + x[:, y1][:, :, x1] * fx
    return top * (1 - fy) + bottom * fy


def concatenation(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    return _activation(np.concatenate(ins, axis=options.get("axis", 0)), options)


def mean(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    axes = tuple(int(a) for a in np.asarray(ins[1]).reshape(-1))
    return ins[0].mean(axis=axes, keepdims=bool(options.get("keep_dims", 0)))


def _reducer(function: Callable[..., np.ndarray]) -> TfliteKernel:
    """SUM, REDUCE_MAX, ...: over the axes of input 1 (ReducerOptions' keep_dims)."""

    def reduce(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
        axes = tuple(sorted({int(a) % ins[0].ndim for a in np.asarray(ins[1]).reshape(-1)}))
        return function(ins[0], axis=axes, keepdims=bool(options.get("keep_dims", 0)))

    return reduce


def pack(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    return np.stack(ins, axis=options.get("axis", 0))


def split_v(ins: Sequence[np.ndarray], options: Options) -> list[np.ndarray]:
    # size_splits may hold one -1: the rest of the axis.
    x, sizes = ins[0], [int(v) for v in np.asarray(ins[1]).reshape(-1)]
    axis = int(np.asarray(ins[2]).reshape(-1)[0]) % x.ndim
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def gather(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    if options.get("batch_dims", 0):
        raise NotImplementedError("GATHER with batch_dims")
    return np.take(ins[0], ins[1], axis=options.get("axis", 0))


def batch_matmul(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x, y = ins[0], ins[1]
    if options.get("adj_x", 0):
        x = np.swapaxes(x, -1, -2)
    if options.get("adj_y", 0):
        y = np.swapaxes(y, -1, -2)
    return np.matmul(x, y, dtype=np.float32)


def _range(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in ins)
    return np.arange(start.item(), limit.item(), delta.item(), dtype=np.result_type(*ins))


def depth_to_space(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    x = ins[0]
    n, h, w, c = x.shape
    b = options["block_size"]
    out = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return out.reshape(n, h * b, w * b, c // (b * b))


def leaky_relu(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    # TFLite: x > 0 ? x : x * alpha, alpha a float32 option.
    x = ins[0]
    return np.where(x > 0, x, x * np.float32(options.get("alpha", 0.2)))


def transpose(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    return np.transpose(ins[0], [int(p) for p in np.asarray(ins[1]).reshape(-1)])


def rfft2d(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    # The last two axes, cropped or zero-padded to fft_length, as TFLite does.
    rows, columns = (int(v) for v in np.asarray(ins[1]).reshape(-1))
    return np.fft.rfft2(ins[0], s=(rows, columns), axes=(-2, -1)).astype(np.complex64)


def reshape(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    shape = ins[1] if len(ins) > 1 else options.get("new_shape", [])
    return np.reshape(ins[0], [int(d) for d in np.asarray(shape).ravel()])


def squeeze(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    dims = options.get("squeeze_dims") or []
    return np.squeeze(ins[0], axis=tuple(int(d) for d in dims) if dims else None)


def expand_dims(ins: Sequence[np.ndarray], options: Options) -> np.ndarray:
    return np.expand_dims(ins[0], int(np.asarray(ins[1]).ravel()[0]))


def _binary(function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> TfliteKernel:
    return lambda ins, options: _activation(function(ins[0], ins[1]), options)


def _unary(function: Callable[[np.ndarray], np.ndarray]) -> TfliteKernel:
    return lambda ins, options: function(ins[0])


# --- int8: TFLite's integer kernels ------------------------------------------
# Zero points subtracted, products summed in int64 (exact, as TFLite's int32
# accumulators when they do not overflow), the bias added, then the fixed-point
# rescaling of TFLite's reference kernels (QuantizeMultiplier,
# MultiplyByQuantizedMultiplier: two roundings), the output zero point added
# and the fused activation clamped, so the results are TFLite's bit for bit.


def _quantization(options: Options, role: str, position: int) -> tuple[np.ndarray, np.ndarray]:
    """Scale (float32) and zero point (int64) of operand/result ``position``."""
    scale = np.asarray(options.get(f"{role}_{position}_scale", [1.0]), np.float32)
    zero = np.asarray(options.get(f"{role}_{position}_zero_point", [0]), np.int64)
    return scale, zero


def _quantize_multiplier(multiplier: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: ``multiplier = q * 2**(shift - 31)``, q in Q31."""
    if multiplier == 0.0:
        return 0, 0
    fraction, shift = frexp(multiplier)
    q = int(floor(fraction * (1 << 31) + 0.5))  # std::round of a positive value
    if q == 1 << 31:
        q, shift = q // 2, shift + 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return (1 << 31) - 1, 30
    return q, shift


def _rescale(acc: np.ndarray, multipliers: Sequence[float]) -> np.ndarray:
    """MultiplyByQuantizedMultiplier of int64 ``acc`` by one multiplier per
    last-axis channel (or one for all): SaturatingRoundingDoublingHighMul,
    then RoundingDivideByPOT."""
    pairs = [_quantize_multiplier(m) for m in multipliers]
    q = np.asarray([p[0] for p in pairs], np.int64)
    shift = np.asarray([p[1] for p in pairs], np.int64)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    product = (acc << left) * q
    nudged = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C++ division: toward 0
    mask = (np.int64(1) << right) - 1
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + ((high & mask) > threshold)


def _activation_range(options: Options, dtype: np.dtype[Any]) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation's clamp in the output's units."""
    info = np.iinfo(dtype)
    scale, zero = _quantization(options, "result", 0)

    def quantize(value: float) -> int:
        return int(zero[0]) + int(np.round(np.float32(value) / scale[0]))

    match options.get("fused_activation_function", "NONE"):
        case "NONE":
            return int(info.min), int(info.max)
        case "RELU":
            return max(int(info.min), quantize(0.0)), int(info.max)
        case "RELU6":
            return max(int(info.min), quantize(0.0)), min(int(info.max), quantize(6.0))
        case "RELU_N1_TO_1":
            return max(int(info.min), quantize(-1.0)), min(int(info.max), quantize(1.0))
        case other:
            raise NotImplementedError(f"fused activation {other} on int8")


def _integer_linear(
    float_kernel: TfliteKernel, product_in_float: bool
) -> Callable[[Sequence[np.ndarray], Options, np.dtype[Any]], np.ndarray]:
    """CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED on int8: ``float_kernel``
    run on int64 operands (zero points subtracted), then rescaled per output
    channel. ``product_in_float``: TFLite multiplies the input and filter
    scales in float32 (per-channel convolutions) rather than double."""

    def kernel(ins: Sequence[np.ndarray], options: Options, dtype: np.dtype[Any]) -> np.ndarray:
        (x_scale, x_zero), (w_scale, w_zero) = (
            _quantization(options, "operand", i) for i in (0, 1)
        )
        out_scale, out_zero = _quantization(options, "result", 0)
        operands = [ins[0].astype(np.int64) - x_zero[0], ins[1].astype(np.int64) - w_zero[0]]
        operands += [b.astype(np.int64) for b in ins[2:]]
        acc = float_kernel(operands, {**options, "fused_activation_function": "NONE"})
        if product_in_float:
            products = [float(x_scale[0] * s) for s in w_scale]
        else:
            products = [float(x_scale[0]) * float(s) for s in w_scale]
        out = _rescale(acc, [p / float(out_scale[0]) for p in products]) + out_zero[0]
        low, high = _activation_range(options, dtype)
        return np.clip(out, low, high)

    return kernel


def _integer_logistic(
    ins: Sequence[np.ndarray], options: Options, dtype: np.dtype[Any]
) -> np.ndarray:
    """LOGISTIC on int8 as TFLite's kernel computes it: a table of the 256
    inputs' sigmoids (float32), rounded to the output's units."""
    (x_scale, x_zero), (out_scale, out_zero) = (
        _quantization(options, "operand", 0),
        _quantization(options, "result", 0),
    )
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1, dtype=np.int64)
    real = x_scale[0] * (values - x_zero[0]).astype(np.float32)
    sigmoid = np.float32(1) / (np.float32(1) + np.exp(-real))
    table = np.clip(
        np.round(sigmoid * (np.float32(1) / out_scale[0])) + out_zero[0], info.min, info.max
    )
    return table.astype(np.int64)[ins[0].astype(np.int64) - info.min]


def _integer_requantize(
    ins: Sequence[np.ndarray], options: Options, dtype: np.dtype[Any]
) -> np.ndarray:
    """QUANTIZE between int8 and uint8: TFLite's Requantize."""
    (x_scale, x_zero), (out_scale, out_zero) = (
        _quantization(options, "operand", 0),
        _quantization(options, "result", 0),
    )
    acc = ins[0].astype(np.int64) - x_zero[0]
    out = _rescale(acc[..., None], [float(x_scale[0]) / float(out_scale[0])])[..., 0] + out_zero[0]
    info = np.iinfo(dtype)
    return np.clip(out, info.min, info.max)


IntegerKernel = Callable[[Sequence[np.ndarray], Options, np.dtype[Any]], np.ndarray]
"""An int8 kernel: operands, options, the result's dtype."""

INTEGER_KERNELS: dict[str, IntegerKernel] = {
    "CONV_2D": _integer_linear(conv_2d, product_in_float=True),
    "DEPTHWISE_CONV_2D": _integer_linear(depthwise_conv_2d, product_in_float=True),
    "FULLY_CONNECTED": _integer_linear(fully_connected, product_in_float=False),
    "LOGISTIC": _integer_logistic,
    "QUANTIZE": _integer_requantize,
}
"""Quantized int8 kernels by TFLite builtin name (what pymicro-wakeword's
models run); operands int8, uint8 and int32 biases."""

DATA_MOVEMENT: frozenset[str] = frozenset(
    {"CONCATENATION", "STRIDED_SLICE", "SPLIT_V", "RESHAPE", "SQUEEZE", "EXPAND_DIMS"}
)
"""Builtins that only move elements: on quantized tensors whose operands and
results share one scale and zero point, the float kernel's NumPy indexing
computes them exactly."""

_INTEGER_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def _one_quantization(options: Options) -> bool:
    """Do all quantized operands and results share one scale and zero point?"""
    pairs = {
        (tuple(options[key]), tuple(options.get(key.removesuffix("scale") + "zero_point", [])))
        for key in options
        if key.endswith("_scale")
    }
    return len(pairs) == 1


KERNELS: dict[str, TfliteKernel] = {
    # A variable's value, copied into a planned tensor (the global is operand 0).
    "READ_VARIABLE": lambda ins, options: ins[0].copy(),
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "MAX_POOL_2D": lambda ins, options: _pool(ins, options, "max"),
    "AVERAGE_POOL_2D": lambda ins, options: _pool(ins, options, "average"),
    "FULLY_CONNECTED": fully_connected,
    "ADD": _binary(np.add),
    "SUB": _binary(np.subtract),
    "MUL": _binary(np.multiply),
    "PRELU": lambda ins, options: np.where(ins[0] >= 0, ins[0], ins[0] * ins[1]),
    "RELU": _unary(lambda x: np.maximum(x, 0)),
    "RELU6": _unary(lambda x: np.clip(x, 0, 6)),
    "LOGISTIC": _unary(lambda x: 1 / (1 + np.exp(-x))),
    "TANH": _unary(np.tanh),
    "HARD_SWISH": _unary(lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "PAD": pad,
    "MIRROR_PAD": mirror_pad,
    "STRIDED_SLICE": strided_slice,
    "RESIZE_BILINEAR": resize_bilinear,
    "CONCATENATION": concatenation,
    "MEAN": mean,
    "DEPTH_TO_SPACE": depth_to_space,
    "INPUT_COPY": _unary(lambda x: x),
    "LEAKY_RELU": leaky_relu,
    "SIN": _unary(np.sin),
    "RSQRT": _unary(lambda x: np.float32(1) / np.sqrt(x)),
    "TRANSPOSE": transpose,
    "RFFT2D": rfft2d,
    "COMPLEX_ABS": _unary(np.abs),
    "RESHAPE": reshape,
    "SQUEEZE": squeeze,
    "EXPAND_DIMS": expand_dims,
    "DIV": _binary(np.divide),
    "FLOOR_DIV": lambda ins, options: np.floor_divide(ins[0], ins[1]),
    "POW": lambda ins, options: np.power(ins[0], ins[1]),
    "SQUARED_DIFFERENCE": lambda ins, options: np.square(ins[0] - ins[1]),
    "NEG": _unary(np.negative),
    "ABS": _unary(np.abs),
    "EXP": _unary(np.exp),
    "LOG": _unary(np.log),
    "SQRT": _unary(np.sqrt),
    "SQUARE": _unary(np.square),
    "SUM": _reducer(np.sum),
    "REDUCE_MAX": _reducer(np.max),
    "REDUCE_MIN": _reducer(np.min),
    "REDUCE_PROD": _reducer(np.prod),
    "PACK": pack,
    "SPLIT_V": split_v,
    "GATHER": gather,
    "BATCH_MATMUL": batch_matmul,
    "REVERSE_V2": lambda ins, options: np.flip(
        ins[0], axis=tuple(int(a) for a in np.asarray(ins[1]).reshape(-1))
    ),
    "SELECT_V2": lambda ins, options: np.where(ins[0], ins[1], ins[2]),
    "SHAPE": lambda ins, options: np.asarray(ins[0].shape),
    "CAST": _unary(lambda x: x),
    "RANGE": _range,
    "MAXIMUM": lambda ins, options: np.maximum(ins[0], ins[1]),
    "MINIMUM": lambda ins, options: np.minimum(ins[0], ins[1]),
    "LESS": lambda ins, options: np.less(ins[0], ins[1]),
    "LESS_EQUAL": lambda ins, options: np.less_equal(ins[0], ins[1]),
    "GREATER": lambda ins, options: np.greater(ins[0], ins[1]),
    "GREATER_EQUAL": lambda ins, options: np.greater_equal(ins[0], ins[1]),
    "EQUAL": lambda ins, options: np.equal(ins[0], ins[1]),
    "NOT_EQUAL": lambda ins, options: np.not_equal(ins[0], ins[1]),
    "LOGICAL_AND": lambda ins, options: np.logical_and(ins[0], ins[1]),
    "LOGICAL_OR": lambda ins, options: np.logical_or(ins[0], ins[1]),
    "LOGICAL_NOT": _unary(np.logical_not),
}
"""Float kernels by TFLite builtin name (``RFFT2D`` and ``COMPLEX_ABS``
produce and read complex64; comparisons give bool; ``SPLIT_V`` gives a
list, one array per output). ``RESHAPE``,
``SQUEEZE`` and ``EXPAND_DIMS`` run here only when imported as copies (a
result with two dynamic dims); as views they move no bytes."""

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.complex64))

EXACT_ON_INTEGERS: frozenset[str] = frozenset(
    {
        "ADD",
        "SUB",
        "MUL",
        "FLOOR_DIV",
        "NEG",
        "ABS",
        "SUM",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "REDUCE_PROD",
        "PACK",
        "SPLIT_V",
        "GATHER",
        "REVERSE_V2",
        "SELECT_V2",
        "SHAPE",
        "CAST",
        "RANGE",
        "RESHAPE",
        "SQUEEZE",
        "EXPAND_DIMS",
        "TRANSPOSE",
        "STRIDED_SLICE",
        "CONCATENATION",
        "MAXIMUM",
        "MINIMUM",
        "LESS",
        "LESS_EQUAL",
        "GREATER",
        "GREATER_EQUAL",
        "EQUAL",
        "NOT_EQUAL",
        "LOGICAL_AND",
        "LOGICAL_OR",
        "LOGICAL_NOT",
    }
)
"""Builtins whose kernels also take int32/int64 and bool tensors with no
quantization (TFLite computes them exactly, as NumPy does: the loop
counters and conditions of `WHILE` and `IF`, shape arithmetic); ``SHAPE``
and ``CAST`` read any tensor, ``SELECT_V2`` a bool condition."""

COPIES: frozenset[str] = frozenset({"READ_VARIABLE"})
"""Builtins that copy bytes, on any element type (quantized too)."""

_EXACT_DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_))


def _results(computed: Any) -> list[Any]:
    """A kernel's results as a list (an operator with one output returns an array)."""
    return computed if isinstance(computed, list) else [computed]


def _quantized(options: Mapping[str, Any]) -> bool:
    """Does the declaration record a scale for an operand or result?"""
    return any(key.endswith("_scale") for key in options)


class TfliteKernelResolver:
    """Runs declarations made by `memplan-import-tflite` with ``KERNELS``.

    The shape function of such a kernel (named by its `memory.shape_fn`)
    runs the kernel on its operands and gives the dims of the result that
    the kernel's result type leaves dynamic.
    """

    def __call__(self, declaration: func.FuncOp) -> Kernel | None:
        options = options_of(declaration.attributes)
        name = options.get("op")
        if not isinstance(name, str):
            return self._shape_function(declaration)
        what = options.get("custom_code", name) if name == "CUSTOM" else name
        body = KERNELS.get(name)

        def kernel(
            ins: Sequence[Any], outs: Sequence[np.ndarray], attributes: Mapping[str, Attribute]
        ) -> None:
            arrays = [np.asarray(value) for value in ins]
            integer = INTEGER_KERNELS.get(name)
            if (
                integer is not None
                and _quantized(options)
                and len(outs) == 1
                and arrays[0].dtype in _INTEGER_DTYPES
                and outs[0].dtype in _INTEGER_DTYPES
            ):
                outs[0][...] = integer(arrays, options, outs[0].dtype).astype(outs[0].dtype)
                return
            if body is None:
                raise NotImplementedError(
                    f"memplan-run has no kernel for TFLite operator {what} (@{declaration.sym_name.data})"
                )
            allowed = _KERNEL_DTYPES
            if name in EXACT_ON_INTEGERS and not _quantized(options):
                allowed = (*_KERNEL_DTYPES, *_EXACT_DTYPES)
            if name in COPIES or (name in DATA_MOVEMENT and _one_quantization(options)):
                allowed = tuple({a.dtype for a in (*arrays[:1], *outs)})
            if any(a.dtype not in allowed for a in (*arrays[:1], *outs)):
                dtypes = "/".join(dict.fromkeys(str(a.dtype) for a in (*arrays[:1], *outs)))
                kind = "quantized " if _quantized(options) else ""
                raise NotImplementedError(
                    f"memplan-run has no kernel for TFLite operator {what} on {kind}{dtypes} "
                    f"(@{declaration.sym_name.data}): its kernels compute float32 and "
                    "complex64, and unquantized integers where TFLite is exact"
                )
            results = _results(body(arrays, options))
            if len(results) != len(outs):
                raise ValueError(
                    f"TFLite operator {what}: kernel computed {len(results)} results, "
                    f"the model records {len(outs)}"
                )
            for result, out in zip(results, outs):
                result = np.asarray(result)
                if result.shape != out.shape:
                    raise ValueError(
                        f"TFLite operator {what}: kernel computed {list(result.shape)}, "
                        f"the model records {list(out.shape)}"
                    )
                out[...] = result.astype(out.dtype, copy=False)

        return kernel

    def _shape_function(self, declaration: func.FuncOp) -> Kernel | None:
        kernel = kernel_of_shape_function(declaration)
        if kernel is None:
            return None
        options = options_of(kernel.attributes)
        body = KERNELS.get(options.get("op", ""))
        if body is None:
            return None
        return shape_function_kernel(
            declaration,
            kernel,
            lambda ins: [
                np.shape(r) for r in _results(body([np.asarray(v) for v in ins], options))
            ],
        )
