"""What the model importers share: MLIR-safe names, kernel declarations
(one per signature, in-place pairs, shape functions for dynamic results)
and counted loops."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import prod

from xdsl.dialects import arith, func, scf, tensor
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from memplan.dialect.ops import DIM_RANGES_ATTR, INPLACE_ATTR, SHAPE_FN_ATTR, VIEW_ATTR
from memplan.tools.frontends.protocol import FrontendError

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_$.]")


def sanitize_name(name: str) -> str:
    """An MLIR bare identifier for ``name``: other characters become ``_``."""
    cleaned = _INVALID_NAME_CHARS.sub("_", name)
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "t" + cleaned
    return cleaned


@dataclass
class UniqueNames:
    """Hands out distinct symbol names, suffixing ``_1``, ``_2``, ... on clashes."""

    taken: set[str] = field(default_factory=set[str])

    def get(self, base: str) -> str:
        name = base
        counter = 0
        while name in self.taken:
            counter += 1
            name = f"{base}_{counter}"
        self.taken.add(name)
        return name


@dataclass(frozen=True)
class DimRanges:
    """The range ``lower[d]..upper[d]`` of each bounded dynamic dim ``d``
    (``--upper-bound d=N``; ``--lower-bound d=M`` raises ``lower`` from 1)."""

    lower: Mapping[str, int]
    upper: Mapping[str, int]

    def attribute(self) -> DictionaryAttr:
        """`memory.dim_ranges`: ``{d = array<i64: lower, upper>, ...}``."""
        return DictionaryAttr(
            {
                name: DenseArrayBase.from_list(i64, [self.lower.get(name, 1), bound])
                for name, bound in sorted(self.upper.items())
            }
        )

    def annotate(self, main: func.FuncOp) -> None:
        """Record the ranges on ``main`` when ``--lower-bound`` gave any."""
        if self.lower:
            main.attributes[DIM_RANGES_ATTR] = self.attribute()


def dim_ranges(lower: Mapping[str, int], upper: Mapping[str, int]) -> DimRanges:
    """The ranges of ``--lower-bound`` and ``--upper-bound`` (keyed alike);
    ``FrontendError`` for a lower end without an upper one or above it."""
    for name, low in sorted(lower.items()):
        if name not in upper:
            raise FrontendError(
                f"--lower-bound {name}={low}: '{name}' has no --upper-bound (a range needs both ends)"
            )
        if low > upper[name]:
            raise FrontendError(
                f"--lower-bound {name}={low} is above --upper-bound {name}={upper[name]}"
            )
    return DimRanges(dict(lower), dict(upper))


@dataclass
class KernelDeclarations:
    """The kernel declarations of one imported module: one per signature
    (the attributes and the types), each followed by its shape function
    when a result is dynamic. ``unique_name`` turns a base name into a
    module-unique symbol."""

    unique_name: Callable[[str], str]
    declarations: list[func.FuncOp] = field(default_factory=list[func.FuncOp])
    _by_signature: dict[tuple[object, ...], func.FuncOp] = field(
        default_factory=dict[tuple[object, ...], func.FuncOp]
    )

    def declare(
        self,
        base: str,
        attributes: dict[str, Attribute],
        operand_types: Sequence[Attribute],
        result_types: Sequence[Attribute],
        *,
        view: bool,
        inplace_candidate: bool,
        same_shape_at_run_time: Sequence[bool] | None = None,
    ) -> func.FuncOp:
        """The declaration ``@base`` (or ``@base_N``) of this signature,
        created on first use. A view gets `memory.view`; an element-wise
        op (``inplace_candidate``) with one result gets `memory.inplace`
        when an operand may hold it (``inplace_operand``)."""
        if view:
            attributes[VIEW_ATTR] = UnitAttr()
        elif inplace_candidate and len(result_types) == 1:
            operand = inplace_operand(operand_types, result_types[0], same_shape_at_run_time)
            if operand is not None:
                attributes[INPLACE_ATTR] = DenseArrayBase.from_list(i64, [0, operand])
        key = (
            tuple(sorted((k, str(v)) for k, v in attributes.items())),
            tuple(operand_types),
            tuple(result_types),
        )
        existing = self._by_signature.get(key)
        if existing is not None:
            return existing
        name = self.unique_name(sanitize_name(base))
        declaration = func.FuncOp.external(name, list(operand_types), list(result_types))
        declaration.attributes.update(attributes)
        self._by_signature[key] = declaration
        self.declarations.append(declaration)
        if has_dynamic_shape(result_types):
            shape_fn = shape_function(
                self.unique_name(name + ".shape"), operand_types, result_types, view
            )
            declaration.attributes[SHAPE_FN_ATTR] = SymbolRefAttr(shape_fn.sym_name.data)
            self.declarations.append(shape_fn)
        return declaration


def inplace_operand(
    operand_types: Sequence[Attribute],
    result_type: Attribute,
    same_shape_at_run_time: Sequence[bool] | None = None,
) -> int | None:
    """The operand an element-wise op's result may overwrite: the first of
    the result's type. A dynamic result is the operand's size only if no
    other operand can broadcast it larger at run time: so either the model
    says so (``same_shape_at_run_time[i]``: the importer knows operand
    ``i``'s run-time shape is the result's, from the model's symbols), or
    the operand is the first of that type and the others are static."""
    same = [i for i, t in enumerate(operand_types) if t == result_type]
    if not same:
        return None
    if _has_static_shape(result_type):
        return same[0]
    if same_shape_at_run_time is not None:
        known = [i for i in same if same_shape_at_run_time[i]]
        if known:
            return known[0]
    others = [t for i, t in enumerate(operand_types) if i != same[0]]
    return same[0] if all(_has_static_shape(t) for t in others) else None


def shape_function(
    name: str,
    operand_types: Sequence[Attribute],
    result_types: Sequence[Attribute],
    view: bool,
) -> func.FuncOp:
    """``@name``, the `memory.shape_fn` of a kernel with dynamic results
    (``has_dynamic_shape``): one ``index`` per dynamic dim.

    For a view (at most one dynamic dim) it has a body: the source's element
    count over the result's static dims. Otherwise it is a declaration the
    runtime implements (`memplan-run` evaluates the kernel and reads the
    shapes of its results).
    """
    count = sum(
        1 for t in result_types if isinstance(t, TensorType) for d in t.get_shape() if d < 0
    )
    assert count, "shape_function: every result is static"
    if not view:
        return func.FuncOp.external(name, list(operand_types), [IndexType()] * count)
    return _view_shape_function(name, operand_types[0], result_types[0])


def has_dynamic_shape(types: Sequence[Attribute]) -> bool:
    """Does any of ``types`` (kernel results) need a shape function?"""
    return not all(_has_static_shape(t) for t in types)


def _has_static_shape(type_: Attribute) -> bool:
    return not isinstance(type_, TensorType) or type_.has_static_shape()


def _view_shape_function(name: str, source_type: Attribute, result_type: Attribute) -> func.FuncOp:
    """``@name``: the one dynamic dim of view ``source_type -> result_type``,
    the source's element count over the result's static dims (a view keeps
    the count; the importer makes views with at most one dynamic dim)."""
    assert isinstance(source_type, TensorType) and isinstance(result_type, TensorType)
    block = Block(arg_types=[source_type])
    block.args[0].name_hint = "source"
    ops: list[Operation] = []

    def index(value: int) -> SSAValue:
        constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
        constant.result.name_hint = f"c{value}"
        ops.append(constant)
        return constant.result

    source_static = prod(d for d in source_type.get_shape() if d >= 0)
    result_static = prod(d for d in result_type.get_shape() if d >= 0)
    count: SSAValue | None = None
    for axis, size in enumerate(source_type.get_shape()):
        if size >= 0:
            continue
        dim = tensor.DimOp(block.args[0], index(axis))
        dim.result.name_hint = f"dim{axis}"
        ops.append(dim)
        count = dim.result if count is None else _append(ops, arith.MuliOp(count, dim.result))
    if count is None:
        count = index(source_static // result_static)
    elif source_static % result_static == 0:
        if source_static != result_static:
            count = _append(ops, arith.MuliOp(count, index(source_static // result_static)))
    else:
        count = _append(ops, arith.MuliOp(count, index(source_static)))
        count = _append(ops, arith.DivUIOp(count, index(result_static)))
    block.add_ops([*ops, func.ReturnOp(count)])
    return func.FuncOp(name, ([source_type], [IndexType()]), Region(block), "private")


def counted_for(
    trips: int, count_name: str, initial: Sequence[SSAValue], body: Block, block: Block
) -> Sequence[SSAValue]:
    """An ``scf.for`` from 0 to ``trips`` (its bound named ``count_name``)
    carrying ``initial`` through ``body``, appended to ``block``; its results."""
    bounds = [arith.ConstantOp(IntegerAttr(n, IndexType())) for n in (0, trips, 1)]
    for bound, name in zip(bounds, ("c0", count_name, "c1")):
        bound.result.name_hint = name
    block.add_ops(bounds)
    start, stop, step = bounds
    for_op = scf.ForOp(start, stop, step, initial, Region(body))
    block.add_op(for_op)
    return for_op.results


def _append(ops: list[Operation], op: Operation) -> SSAValue:
    ops.append(op)
    return op.results[0]


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=1x3x224x224`` (``NAME=`` for a scalar) as ``(name, dims)``; a
    ``?`` dim (``-1``) keeps the model's own, dynamic, dim."""
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise FrontendError(f"--input-shape '{spec}' must look like NAME=1x3x224x224")
    if not dims:
        return name, ()
    try:
        shape = tuple(-1 if d == "?" else int(d) for d in dims.split("x"))
    except ValueError:
        raise FrontendError(
            f"--input-shape '{spec}': dims must be positive integers (or '?') separated by 'x'"
        ) from None
    if any(d == 0 or d < -1 for d in shape):
        raise FrontendError(f"--input-shape '{spec}': dims must be positive")
    return name, shape
