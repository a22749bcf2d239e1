"""Dynamic dims as size expressions of the ranged input dims.

With ranges (``--upper-bound``, ``--lower-bound``), each dynamic tensor's
dims are derived symbolically by ONNX Runtime's symbolic shape inference
(``onnxruntime.tools.symbolic_shape_infer``, sympy expressions of the graph
inputs' symbols) and written in the size-expression text of
``memplan.dialect.size_expr`` (`memory.dim_exprs`). The translation takes
integers, the ranged symbols, ``+``, products, ``Max``, and ``floor`` /
``ceiling`` of a sum over a positive integer (``floordiv`` / ``ceildiv``).
A negative constant is kept only where it folds into a rounding division
and the constant added after it: ``floor((X + b) / k) + c`` with ``b < 0``
becomes ``floordiv(X + b + m*k, k) + (c - m)`` for ``m = ceil(-b / k)``
when ``c >= m`` (so ``floor((H - 1) / 2) + 1`` is ``ceildiv(H, 2)``).
Anything else gives the tensor no expression.

Soundness. Inference runs first without merging symbols: a broadcast of
two different symbolic dims then gets a new symbol, which is no ranged
dim, so only the tensors before it get expressions. When that leaves
tensors without one, it runs again with ``auto_merge``, which takes the
two dims of such a broadcast as equal. That holds at run time when
neither can be 1 (ONNX broadcasting then needs them equal): a merge is
kept when both sides translate (so are monotone) and are at least 2 at
the lower ends of the ranges; otherwise every expression reading a dim
of that merge is dropped. The importer then checks every expression
against its own shape inference at both ends of the ranges and drops a
mismatch; ``memplan-run`` checks each storage's size against its reserve.

ONNX Runtime's inference has no ``ConvTranspose`` (it gives the output,
and so everything computed from it, fresh symbols): a handler registered on
the inference derives its dims as ONNX's shape inference does, a spatial
dim ``s*x + c`` for an input dim ``x`` (``c`` from the kernel, dilation,
pads and ``output_padding``; a size expression when ``c >= 0``), so the
tensors after it follow. It merges nothing; a dim ONNX's inference and the
operator's definition disagree on (``auto_pad`` ``SAME_*`` with
``output_padding`` or a kernel shorter than the stride) gets a fresh symbol.

ONNX Runtime and sympy load only here, and only with ranges. A model ONNX
Runtime's inference cannot handle gets no expressions, never an error.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from memplan.dialect.size_expr import SizeExprError, parse_size_expr

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_FUNCTIONS = {"max", "ceildiv", "floordiv", "align"}


class _Untranslatable(Exception):
    """A sympy expression outside what size expressions say."""


@dataclass(frozen=True)
class _Part:
    """``sum(terms) + offset``: ``terms`` are size-expression texts (each a
    product or an atom: no top-level ``+``), ``offset`` any integer."""

    terms: tuple[str, ...]
    offset: int

    def text(self) -> str:
        """The text, when the offset is not negative."""
        if self.offset < 0:
            raise _Untranslatable
        parts = [*self.terms, str(self.offset)] if self.offset or not self.terms else self.terms
        return " + ".join(parts)

    def factor(self) -> str:
        """The text as a factor of a product."""
        text = self.text()
        return f"({text})" if "+" in _top_level(text) else text


def _top_level(text: str) -> str:
    """``text`` with every parenthesized part removed."""
    depth, kept = 0, []
    for char in text:
        depth += char == "("
        if not depth:
            kept.append(char)
        depth -= char == ")"
    return "".join(kept)


class _Translator:
    """sympy -> ``_Part`` over the ranged symbols ``symbols``."""

    def __init__(self, sympy: Any, symbols: frozenset[str]) -> None:
        self.sympy = sympy
        self.symbols = symbols

    def __call__(self, expr: Any) -> str:
        return self.part(self.exact(expr)).text()

    def exact(self, expr: Any) -> Any:
        """``expr`` with floats made rationals (ONNX Runtime writes ``2.0*x``)."""
        sympy = self.sympy
        floats = expr.atoms(sympy.Float)
        return expr.xreplace({f: sympy.Rational(f) for f in floats}) if floats else expr

    def part(self, expr: Any) -> _Part:
        sympy = self.sympy
        if expr.is_Integer:
            return _Part((), int(expr))
        if expr.is_Symbol:
            if expr.name not in self.symbols or not _SYMBOL.match(expr.name):
                raise _Untranslatable
            if expr.name in _FUNCTIONS:
                raise _Untranslatable
            return _Part((expr.name,), 0)
        if expr.is_Add:
            parts = [self.part(arg) for arg in expr.args]
            return _Part(tuple(t for p in parts for t in p.terms), sum(p.offset for p in parts))
        if expr.is_Mul:
            coefficient, rest = expr.as_coeff_Mul()
            if not coefficient.is_Integer or coefficient <= 0:
                raise _Untranslatable
            factors = [self.part(arg) for arg in sympy.Mul.make_args(rest)]
            return _scaled(_product(factors), int(coefficient))
        if expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
            return _product([self.part(expr.base)] * int(expr.exp))
        if isinstance(expr, sympy.Max):
            parts = [self.part(arg) for arg in expr.args]
            low = min(p.offset for p in parts)
            texts = [_Part(p.terms, p.offset - low).text() for p in parts]
            return _Part((f"max({', '.join(texts)})",), low)
        if isinstance(expr, (sympy.floor, sympy.ceiling)):
            numerator, denominator = sympy.fraction(sympy.together(expr.args[0]))
            if not denominator.is_Integer or denominator <= 0:
                raise _Untranslatable
            divisor = int(denominator)
            inner = self.part(sympy.expand(numerator))
            if isinstance(expr, sympy.ceiling):
                inner = _Part(inner.terms, inner.offset + divisor - 1)
            return _floordiv(inner, divisor)
        raise _Untranslatable


def _product(parts: list[_Part]) -> _Part:
    """The product of ``parts``: constants fold, one factor keeps its
    offset (scaled); a product of several needs none negative."""
    coefficient = 1
    varying: list[_Part] = []
    for part in parts:
        if part.terms:
            varying.append(part)
        else:
            coefficient *= part.offset
    if coefficient < 0:
        raise _Untranslatable
    if not varying or coefficient == 0:
        return _Part((), coefficient)
    if len(varying) == 1:
        return _scaled(varying[0], coefficient)
    factors = [p.terms[0] if p.offset == 0 and len(p.terms) == 1 else p.factor() for p in varying]
    return _scaled(_Part(("*".join(factors),), 0), coefficient)


def _scaled(part: _Part, factor: int) -> _Part:
    if factor == 1:
        return part
    return _Part(tuple(f"{factor}*{term}" for term in part.terms), part.offset * factor)


def _floordiv(inner: _Part, divisor: int) -> _Part:
    """``floor(inner / divisor)`` with the offset's whole multiples of the
    divisor taken out (negative ones too: they are subtracted after)."""
    quotient, remainder = divmod(inner.offset, divisor)
    if not inner.terms:
        return _Part((), quotient)
    if divisor == 1:
        return _Part(inner.terms, inner.offset)
    if remainder == divisor - 1:
        body = _Part(inner.terms, 0).text()
        return _Part((f"ceildiv({body}, {divisor})",), quotient)
    body = _Part(inner.terms, remainder).text()
    return _Part((f"floordiv({body}, {divisor})",), quotient)


_ORT_MODULE = "onnxruntime.tools.symbolic_shape_infer"


def _symbolic_shape_infer() -> Any:
    """ONNX Runtime's ``symbolic_shape_infer`` module, loaded from its file
    under its own name without running ``onnxruntime.tools``' ``__init__``:
    that imports torch whenever torch is installed (over a second, for
    nothing the inference uses). The module itself imports only NumPy,
    onnx, sympy and packaging."""
    import importlib.util
    import sys

    module = sys.modules.get(_ORT_MODULE)
    if module is not None:
        return module
    package = importlib.util.find_spec("onnxruntime")
    if package is None or package.submodule_search_locations is None:
        raise ModuleNotFoundError("onnxruntime")
    path = (
        Path(next(iter(package.submodule_search_locations))) / "tools" / "symbolic_shape_infer.py"
    )
    spec = importlib.util.spec_from_file_location(_ORT_MODULE, path)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(_ORT_MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_ORT_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_ORT_MODULE]
        raise
    return module


@contextmanager
def _quiet() -> Iterator[None]:
    """ONNX Runtime's inference logs its merges and failures: not ours to print."""
    logger = logging.getLogger(_ORT_MODULE)
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _ints(value: Any, count: int) -> list[int] | None:
    """``value`` as ``count`` integers, ``None`` otherwise."""
    if not isinstance(value, list) or len(value) != count:  # pyright: ignore[reportUnknownArgumentType]
        return None
    found = [v for v in value if isinstance(v, int)]  # pyright: ignore[reportUnknownVariableType]
    return found if len(found) == count else None


def _conv_transpose_dims(sympy: Any, inference: Any, node: Any) -> list[Any]:
    """A ``ConvTranspose``'s output dims as ONNX's shape inference gives
    them, over the input's sympy dims (``None``: not derived).

    A spatial dim is ``output_shape``'s when that is given; otherwise
    ``s*(x - 1) + output_padding + (k - 1)*d + 1 - pad_begin - pad_end``
    with ``pads`` (or none for ``auto_pad`` ``NOTSET`` / ``VALID``). With
    ``auto_pad`` ``SAME_UPPER`` / ``SAME_LOWER`` ONNX's inference pads
    ``max(0, (k - 1)*d + 1 - s)`` in all, while the operator's definition
    makes the dim ``s*x``: the two agree (``s*x``) only without
    ``output_padding`` and with ``(k - 1)*d + 1 >= s``; otherwise no dim."""
    get_attribute = _symbolic_shape_infer().get_attribute

    shape = inference._get_sympy_shape(node, 0)  # pyright: ignore[reportPrivateUsage]
    rank = len(shape) - 2
    dims: list[Any] = [None] * len(shape)
    if rank < 1:
        return dims
    dims[0] = shape[0]
    weights = inference._try_get_shape(node, 1)  # pyright: ignore[reportPrivateUsage]
    weights = _ints(weights, rank + 2) if weights is not None else None
    group = get_attribute(node, "group", 1)
    if weights is not None and isinstance(group, int):
        dims[1] = sympy.Integer(weights[1] * group)
    output_shape = _ints(get_attribute(node, "output_shape"), rank)
    if output_shape is not None:
        dims[2:] = [sympy.Integer(v) for v in output_shape]
        return dims
    kernel = _ints(get_attribute(node, "kernel_shape", weights and weights[2:]), rank)
    strides = _ints(get_attribute(node, "strides", [1] * rank), rank)
    dilations = _ints(get_attribute(node, "dilations", [1] * rank), rank)
    extra = _ints(get_attribute(node, "output_padding", [0] * rank), rank)
    pads = _ints(get_attribute(node, "pads", [0] * (2 * rank)), 2 * rank)
    auto_pad = get_attribute(node, "auto_pad", b"NOTSET")
    if kernel is None or strides is None or dilations is None or extra is None or pads is None:
        return dims
    for axis in range(rank):
        size, stride = shape[2 + axis], strides[axis]
        span = (kernel[axis] - 1) * dilations[axis] + 1
        if auto_pad in (b"SAME_UPPER", b"SAME_LOWER"):
            if extra[axis] == 0 and span >= stride:
                dims[2 + axis] = stride * size
        elif auto_pad in (b"NOTSET", b"VALID"):
            padding = pads[axis] + pads[rank + axis] if auto_pad == b"NOTSET" else 0
            dims[2 + axis] = stride * size + (extra[axis] + span - padding - stride)
    return dims


def _infer_conv_transpose(sympy: Any, inference: Any, node: Any) -> None:
    """ONNX Runtime's inference handler for ``ConvTranspose``, which it has
    none of: without it the output, and every tensor computed from it, gets
    fresh symbols. The dims ``_conv_transpose_dims`` does not derive (and
    every dim when the input's shape is unknown) get fresh symbols, as
    without the handler."""
    from onnx import TensorProto, helper

    ort = _symbolic_shape_infer()
    get_shape_from_sympy_shape = ort.get_shape_from_sympy_shape
    get_shape_from_value_info = ort.get_shape_from_value_info

    info = inference.known_vi_[node.output[0]]
    if inference._try_get_shape(node, 0) is None:  # pyright: ignore[reportPrivateUsage]
        rank = len(get_shape_from_value_info(info) or [])
        if not rank:
            info.type.tensor_type.elem_type = TensorProto.UNDEFINED  # ONNX Runtime stops here
            return
        dims: list[Any] = [None] * rank
    else:
        dims = _conv_transpose_dims(sympy, inference, node)
    for axis, dim in enumerate(dims):
        if dim is None:
            dims[axis] = inference._new_symbolic_dim_from_output(node, 0, axis)  # pyright: ignore[reportPrivateUsage]
    inference._update_computed_dims(dims)  # pyright: ignore[reportPrivateUsage]
    element = inference.known_vi_[node.input[0]].type.tensor_type.elem_type
    info.CopyFrom(
        helper.make_tensor_value_info(node.output[0], element, get_shape_from_sympy_shape(dims))
    )


def _infer(model: Any, auto_merge: bool) -> Any:
    """ONNX Runtime's symbolic inference of ``model``, as far as it gets,
    with ``_infer_conv_transpose`` for ``ConvTranspose``."""
    import sympy

    SymbolicShapeInference = _symbolic_shape_infer().SymbolicShapeInference

    inference = SymbolicShapeInference(
        int_max=2**31 - 1, auto_merge=auto_merge, guess_output_rank=False, verbose=0
    )
    inference.dispatcher_["ConvTranspose"] = partial(_infer_conv_transpose, sympy, inference)
    inference._preprocess(model)  # pyright: ignore[reportPrivateUsage]
    while inference.run_:
        inference._infer_impl()  # pyright: ignore[reportPrivateUsage]
    return inference


def _dims(inference: Any, sympy: Any) -> dict[str, list[Any]]:
    """Each tensor's dims as sympy expressions (``None`` where unknown)."""
    found: dict[str, list[Any]] = {}
    for name, info in inference.known_vi_.items():
        if not info.type.HasField("tensor_type") or not info.type.tensor_type.HasField("shape"):
            continue
        dims: list[Any] = []
        for dim in info.type.tensor_type.shape.dim:
            if dim.HasField("dim_value"):
                dims.append(sympy.Integer(dim.dim_value))
            else:
                dims.append(inference.symbolic_dims_.get(dim.dim_param))
        found[name] = dims
    return found


def _side(inference: Any, sympy: Any, side: Any) -> Any:
    if isinstance(side, int):
        return sympy.Integer(side)
    return inference.symbolic_dims_.get(side)


def _tainted(
    inference: Any, sympy: Any, translate: _Translator, lower: Mapping[str, int]
) -> set[str]:
    """The ranged dims of every merge that may be wrong: one whose sides do
    not both translate or are not both at least 2 at the lower ends."""
    tainted: set[str] = set()
    for key, value in inference.suggested_merge_.items():
        sides = [_side(inference, sympy, key), _side(inference, sympy, value)]
        if any(side is None for side in sides):
            continue  # a dim no tensor keeps
        names = {s.name for side in sides for s in side.free_symbols}
        try:
            values = [parse_size_expr(translate(side)).evaluate(lower) for side in sides]
        except (_Untranslatable, SizeExprError):
            tainted |= names
            continue
        if min(values) < 2:
            tainted |= names
    return tainted


def _texts(
    inference: Any, sympy: Any, translate: _Translator, tainted: set[str]
) -> dict[str, list[str | None]]:
    """Each tensor's dims of one inference as texts (``None``: no text)."""
    found: dict[str, list[str | None]] = {}
    for name, dims in _dims(inference, sympy).items():
        texts: list[str | None] = []
        for dim in dims:
            text = None
            if dim is not None and not {s.name for s in dim.free_symbols} & tainted:
                try:
                    text = translate(dim)
                except _Untranslatable:
                    pass
            texts.append(text)
        found[name] = texts
    return found


def symbolic_dim_texts(model: Any, lower: Mapping[str, int]) -> dict[str, tuple[str | None, ...]]:
    """Each tensor's dims as size-expression texts of the ranged dims (the
    keys of ``lower``, each at its lower end), ``None`` where none is known;
    empty when ONNX Runtime's inference fails on ``model``. Not yet checked
    against the importer's own inference (the importer does that)."""
    try:
        import sympy
    except ImportError:
        return {}
    translate = _Translator(sympy, frozenset(lower))
    found: dict[str, tuple[str | None, ...]] = {}
    with _quiet():
        for auto_merge in (False, True):
            try:
                inference = _infer(model, auto_merge)
                tainted = _tainted(inference, sympy, translate, lower) if auto_merge else set()
                texts = _texts(inference, sympy, translate, tainted)
            except Exception:  # noqa: BLE001 - ORT's inference failed: no expressions from it
                continue
            for name, dims in texts.items():
                earlier = found.get(name)
                if earlier is not None and len(earlier) == len(dims):
                    dims = [e if e is not None else t for e, t in zip(earlier, dims)]
                found[name] = tuple(dims)
            if all(t is not None for dims in found.values() for t in dims):
                break
    return found
