"""Caches over xDSL's generic IRDL machinery for the ``memory`` dialect's ops.

xDSL 0.74 interprets an op's IRDL definition every time: it packs
``operandSegmentSizes`` again for every op it builds, unpacks it at every
access of a named operand, and verifies every op by walking its definition
(segment sizes, each operand's and result's constraint, each property).
On a planned 10,000-op program that is a tenth of planning it and two
thirds of verifying it, for a handful of distinct answers: a program has
few distinct segment arrays and few distinct op signatures. The decorators
here keep those answers; what an op means and what its verifier reports
are xDSL's.

* ``decode_segments_once``: a named operand keeps where it sits per
  segment array (by its bytes), and the builders (the ops' own and the
  one xDSL's assembly-format parser calls) share one array per layout.
* ``irdl_op_definition_verified_once``: xDSL's check of an op against its definition
  runs once per signature (the op's class, its operand and result types,
  properties, attributes, region and successor counts: everything that
  check reads of such an op),
  then the op's own ``verify_`` runs as always. A signature that fails is
  not kept, so every failing op gets xDSL's diagnostic.
* ``printed_plain_first``: the op's common form is printed by its
  ``plain_syntax`` printer (the same text as its assembly format) instead
  of by xDSL's interpreter of the format, which checks every optional group
  and whitespace rule again for every op: a third of printing a planned
  program.

With the speed paths off (``memplan.dialect.xdsl_speedups.ENABLED``) each
decorator leaves the op as ``irdl_op_definition`` defines it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, TypeVar, cast

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, IRDLOperation, irdl_op_definition
from xdsl.irdl.operations import BaseAttrAccessor, OptionalDef, VariadicDef, VarIRConstruct
from xdsl.printer import Printer
from xdsl.traits import OpTrait

from memplan.dialect.xdsl_speedups import ENABLED

if TYPE_CHECKING:
    from memplan.dialect.xdsl_speedups.plain_syntax import PlainSyntax

_OpClass = TypeVar("_OpClass", bound=type[IRDLOperation])

# ---------------------------------------------------------------------------
# Operand segments, decoded once
# ---------------------------------------------------------------------------

_SEGMENT_ARRAYS: dict[tuple[int, ...], DenseArrayBase] = {}
_SEGMENTS = AttrSizedOperandSegments.attribute_name


def segment_array(sizes: tuple[int, ...]) -> DenseArrayBase:
    """The one ``operandSegmentSizes`` array of these sizes."""
    array = _SEGMENT_ARRAYS.get(sizes)
    if array is None:
        array = _SEGMENT_ARRAYS[sizes] = DenseArrayBase.from_list(i32, sizes)
    return array


class _Positions:
    """A sequence whose items are their own keys: xDSL's accessor indexing
    it gives the operand position (an index, a slice or ``None``)."""

    def __getitem__(self, key: int | slice) -> int | slice:
        return key


_POSITIONS = _Positions()
_UNKNOWN = object()


class _DecodedSegmentAccessor:
    """A named operand of an op whose segment sizes are a property: its
    position is worked out once per segment array (xDSL's accessor does the
    arithmetic) and the op's operands are indexed with it."""

    def __init__(self, accessor: BaseAttrAccessor) -> None:
        self.accessor = accessor
        self._positions: dict[bytes, object] = {}

    def _position(self, array: DenseArrayBase[IntegerType]) -> object:
        sizes = tuple(int(size) for size in array.get_values())
        return self.accessor.index(sizes, _POSITIONS)  # pyright: ignore[reportArgumentType]

    def __get__(self, op: Operation | None, owner: type | None = None) -> object:
        if op is None:
            return self
        array: DenseArrayBase[IntegerType] = op.properties[_SEGMENTS]  # pyright: ignore[reportAssignmentType]
        if array.elt_type is i32:
            position = self._positions.get(array.data.data, _UNKNOWN)
            if position is _UNKNOWN:
                position = self._positions[array.data.data] = self._position(array)
        else:  # not one xDSL built (a generic-form text): not kept
            position = self._position(array)
        return None if position is None else op.operands[position]  # pyright: ignore[reportArgumentType, reportCallIssue]

    def __set__(self, op: Operation, value: object) -> None:
        self.accessor.__set__(op, value)


def decode_segments_once(op_class: _OpClass) -> _OpClass:
    """Class decorator (above ``irdl_op_definition``) for an op whose
    operand segment sizes are a property: its named operands read cached
    segment sizes, and ``build`` (what xDSL's assembly-format parser calls)
    shares the segment array (``_build_sharing_segments``)."""
    definition = op_class.get_irdl_definition()
    if definition.options != [AttrSizedOperandSegments(as_property=True)]:
        raise TypeError(f"{op_class.__name__}: its operand segments are not a property")
    if not ENABLED:
        return op_class
    for name, accessor in list(vars(op_class).items()):
        if isinstance(accessor, BaseAttrAccessor) and accessor.construct is VarIRConstruct.OPERAND:
            setattr(op_class, name, _DecodedSegmentAccessor(accessor))
    op_class.build = classmethod(_build_sharing_segments)  # pyright: ignore[reportAttributeAccessIssue]
    return op_class


def _fits(group: object, definition: object, kind: type) -> bool:
    """Is ``group`` a sequence of ``kind`` items that ``definition`` (single,
    optional or variadic) takes as it is?"""
    if not isinstance(group, Sequence) or not all(isinstance(item, kind) for item in group):
        return False
    if isinstance(definition, OptionalDef):
        return len(group) <= 1
    return isinstance(definition, VariadicDef) or len(group) == 1


def _build_sharing_segments(
    cls: type[IRDLOperation],
    *,
    operands: Sequence[object] | None = None,
    result_types: Sequence[object] | None = None,
    attributes: Mapping[str, Attribute | None] | None = None,
    properties: Mapping[str, Attribute | None] | None = None,
    successors: Sequence[object] | None = None,
    regions: Sequence[object] | None = None,
) -> IRDLOperation:
    """``IRDLOperation.build`` for an op of ``decode_segments_once``, given
    one sequence of values per operand and of types per result (as xDSL's
    assembly-format parser gives them); anything else goes to xDSL's
    builder, which also reports what does not fit."""
    definition = cls.get_irdl_definition()
    if (
        successors
        or regions
        or operands is None
        or result_types is None
        or len(operands) != len(definition.operands)
        or len(result_types) != len(definition.results)
        or not all(
            _fits(group, d, SSAValue) for group, (_, d) in zip(operands, definition.operands)
        )
        or not all(
            _fits(group, d, Attribute) for group, (_, d) in zip(result_types, definition.results)
        )
    ):
        return IRDLOperation.build.__func__(  # pyright: ignore[reportFunctionMemberAccess]
            cls,
            operands=operands,
            result_types=result_types,
            attributes=attributes,
            properties=properties,
            successors=successors,
            regions=regions,
        )
    op = cls.__new__(cls)
    build_with_segments(
        op,
        cast("Sequence[Sequence[SSAValue]]", operands),
        [t for group in cast("Sequence[Sequence[Attribute]]", result_types) for t in group],
        dict(properties or {}),
        {name: value for name, value in (attributes or {}).items() if value is not None},
    )
    return op


def build_with_segments(
    op: IRDLOperation,
    segments: Sequence[Sequence[SSAValue]],
    result_types: Sequence[Attribute],
    properties: dict[str, Attribute | None],
    attributes: dict[str, Attribute] | None = None,
) -> None:
    """``IRDLOperation.__init__`` for an op with operand segments as a
    property, with the segment array shared (``segment_array``)."""
    if not ENABLED:
        IRDLOperation.__init__(
            op,
            operands=segments,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
        )
        return
    built = {name: value for name, value in properties.items() if value is not None}
    built[_SEGMENTS] = segment_array(tuple(len(segment) for segment in segments))
    Operation.__init__(
        op,
        operands=[value for segment in segments for value in segment],
        result_types=result_types,
        properties=built,
        attributes=attributes or {},
    )


# ---------------------------------------------------------------------------
# Verification against the definition, once per signature
# ---------------------------------------------------------------------------

VERIFIED_SIGNATURES_KEPT = 4096
"""Signatures kept per op class; past that the set starts again (a program
of that many distinct signatures gains little from it)."""


def _signature(op: Operation) -> Hashable:
    """Everything ``OpDef.verify`` reads of an op without regions whose
    traits check nothing (attributes compare and hash by value)."""
    return (
        tuple(operand.type for operand in op.operands),
        tuple(result.type for result in op.results),
        tuple(op.properties.items()),
        tuple(op.attributes.items()),
        len(op.regions),
        len(op.successors),
    )


def irdl_op_definition_verified_once(op_class: _OpClass) -> _OpClass:
    """``irdl_op_definition``, with the op checked against its definition
    once per signature (``_signature``); the class's own ``verify_`` runs
    for every op, as with ``irdl_op_definition``.

    Only for a definition without regions whose traits' ``verify`` is
    ``OpTrait``'s (it checks nothing): a region's contents or a trait such
    as ``HasParent`` depend on more than the op's signature.
    """
    if not ENABLED:
        return irdl_op_definition(op_class)
    # What `irdl_op_definition` takes as the class's own check.
    own_verify = cast("Callable[[IRDLOperation], None]", op_class.verify_)
    op_class = irdl_op_definition(op_class)
    definition = op_class.get_irdl_definition()
    if definition.regions or any(
        type(trait).verify is not OpTrait.verify for trait in definition.traits
    ):
        raise TypeError(f"{op_class.__name__}: its definition depends on more than its signature")
    verified: set[Hashable] = set()

    def verify_(op: IRDLOperation) -> None:
        signature = _signature(op)
        if signature not in verified:
            definition.verify(op)
            if len(verified) >= VERIFIED_SIGNATURES_KEPT:
                verified.clear()
            verified.add(signature)
        own_verify(op)

    op_class.verify_ = verify_  # pyright: ignore[reportAttributeAccessIssue]
    return op_class


# ---------------------------------------------------------------------------
# The common form printed without the format's interpreter
# ---------------------------------------------------------------------------


@cache
def property_names(op_class: type[IRDLOperation]) -> frozenset[str]:
    """The properties an op of ``op_class`` may hold (its operand segment
    sizes included): what its plain form prints, and the names its
    assembly format's attribute dictionary refuses."""
    return frozenset({*op_class.get_irdl_definition().properties, _SEGMENTS})


def printed_plain_first(syntax: PlainSyntax) -> Callable[[_OpClass], _OpClass]:
    """Class decorator (above the definition's decorator, which installs the
    format's printer): the op's custom form is printed by ``syntax.print``
    where that takes the op (it prints what the assembly format prints and
    returns True), by the format otherwise; and ``syntax`` is the line
    ``FastParser`` reads in one step for ops of this class."""

    def decorate(op_class: _OpClass) -> _OpClass:
        if not ENABLED:
            return op_class
        format_print = cast("Callable[[IRDLOperation, Printer], None]", op_class.print)
        print_plain = syntax.print
        assert print_plain is not None

        def print_(op: IRDLOperation, printer: Printer) -> None:
            if not print_plain(op, printer):
                format_print(op, printer)

        op_class.print = print_  # pyright: ignore[reportAttributeAccessIssue]
        syntax.op_class = op_class
        return op_class

    return decorate
