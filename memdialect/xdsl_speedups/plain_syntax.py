"""The common forms of the ``memory`` ops (and of ``func.call``), printed and read in one step.

A planned program is mostly ``memory.alloc_tensor``, ``memory.invoke`` and
``memory.kill`` lines, and an imported one ``func.call`` lines. xDSL 0.74
prints each through its interpreter of the op's declarative format (which
checks every optional group and whitespace rule again for every op: a third
of printing a planned program) and reads each through its lexer and the
format's generic parser (two thirds of parsing a program of kernel calls).

Each ``PlainSyntax`` here is one op's common form, written once: the
pattern of the line, the reader that builds the op from a match, and (for
memplan's ops) the printer that writes that line, side by side. Each prints
and reads exactly what the op's ``assembly_format`` prints and reads for
that form, and hands anything else back to the format: a printer returns
False, a reader None (a type or dictionary not parsed before, a dynamic
offset or dimension, a comment or location on the line, any other
spelling). ``tests/dialect/test_dialect.py`` compares both with the format
on random ops, and ``tests/dialect/test_xdsl_speedups.py`` every tool's
output with the speed paths on and off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, SymbolRefAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.printer import Printer
from xdsl.utils.lexer import Span

from memplan.dialect.xdsl_speedups.irdl_caches import property_names

# Building blocks of the patterns: a value's name as xDSL's lexer reads it,
# not followed by a result number (`%x#1`) or a tuple size (`%x:2`); a list
# of them; a flat attribute dictionary; a symbol; the end of the line.
VALUE_NAME = r"%(?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*)(?![A-Za-z0-9$._#:-])"
VALUE_NAME_LIST = rf"{VALUE_NAME}(?:[ \t]*,[ \t]*{VALUE_NAME})*"
FLAT_DICTIONARY = r'\{[^{}"#!\n]*\}'
SYMBOL = r"@[A-Za-z_][A-Za-z0-9_$.]*"
LINE_END = r"[ \t]*(?=\n|$)"
RESULT = rf"(?:(?P<result>{VALUE_NAME})[ \t]*=[ \t]*)?"
# At most 18 digits: within i64, so the format's range check cannot fail.
_BYTES = r"[0-9]{1,18}"
_TYPE = r"[^\s,(){}]+"


class LineReader(Protocol):
    """What a reader asks of the parser (``FastParser``): the types and
    dictionaries spelled before, and the values a line names."""

    def spelled_type(self, spelling: str) -> Attribute | None: ...

    def spelled_types(self, text: str) -> list[Attribute] | None: ...

    def spelled_dictionary(
        self, text: str | None, reserved: Container[str]
    ) -> dict[str, Attribute] | None: ...

    def value_names(self, found: re.Match[str], group: str) -> list[Span]: ...

    def resolve_values(
        self, names: Sequence[Span], types: Sequence[Attribute]
    ) -> list[SSAValue]: ...


PlainReader = Callable[[LineReader, re.Match[str], type[Operation]], Operation | None]
"""Builds the op (of the class given) of a line its pattern matched, or None:
the line is left to the op's own parser. The pattern's group ``result`` (if
present and matched) names the op's one result."""

PlainPrinter = Callable[[Operation, Printer], bool]
"""Prints the op's custom form after its name and returns True, or prints
nothing and returns False (the format prints it)."""


@dataclass
class PlainSyntax:
    """One op's common form: its line's pattern, reader and printer."""

    pattern: re.Pattern[str]
    """The whole line, from the op's first token (its result, if any)."""
    read: PlainReader
    print: PlainPrinter | None = None
    """None where the op's own printer is xDSL's (``func.call``)."""
    op_class: type[Operation] | None = None
    """The class the reader builds: set by ``printed_plain_first`` on
    memplan's ops. ``FastParser`` reads the line only where its context
    holds this class under its name."""


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def _holds_only_its_properties(op: Operation) -> bool:
    """The op's properties are all its definition's, and no attribute shares a
    property's name (the format would print such an op another way)."""
    properties = op.properties
    return properties.keys() <= property_names(type(op)) and properties.keys().isdisjoint(
        op.attributes
    )


# ---------------------------------------------------------------------------
# memory.alloc_tensor: a static offset, no dynamic dimensions
# ---------------------------------------------------------------------------

# `%t = memory.alloc_tensor %s[64] align 16 {k = 1 : i64} : !memory.storage<256> -> memref<4xf32>`
_ALLOC_TENSOR = re.compile(
    rf"{RESULT}memory\.alloc_tensor[ \t]+(?P<storage>{VALUE_NAME})\[(?P<offset>-?{_BYTES})\]"
    rf"(?:[ \t]+align[ \t]+(?P<align>{_BYTES}))?[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?"
    rf"[ \t]*:[ \t]*(?P<storage_type>{_TYPE})[ \t]*->[ \t]*(?P<tensor_type>{_TYPE}){LINE_END}"
)


def _print_alloc_tensor(op: Operation, printer: Printer) -> bool:
    offset = op.properties.get("offset")
    if (
        len(op.operands) != 1
        or not isinstance(offset, IntegerAttr)
        or not _holds_only_its_properties(op)
    ):
        return False
    storage = op.operands[0]
    printer.print_string(" ")
    printer.print_operand(storage)
    printer.print_string(f"[{offset.value.data}]")
    align = op.properties.get("align")
    if isinstance(align, IntegerAttr):
        printer.print_string(f" align {align.value.data}")
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(storage.type)
    printer.print_string(" -> ")
    printer.print_attribute(op.results[0].type)
    return True


def _read_alloc_tensor(
    parser: LineReader, found: re.Match[str], op_class: type[Operation]
) -> Operation | None:
    if found.group("result") is None:
        return None  # upstream refuses the line
    storage_type = parser.spelled_type(found.group("storage_type"))
    tensor_type = parser.spelled_type(found.group("tensor_type"))
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(op_class))
    if storage_type is None or tensor_type is None or attributes is None:
        return None
    storage = parser.resolve_values(parser.value_names(found, "storage"), [storage_type])
    properties = {"offset": _i64(int(found.group("offset")))}
    if found.group("align") is not None:
        properties["align"] = _i64(int(found.group("align")))
    assert issubclass(op_class, IRDLOperation)
    return op_class.build(
        operands=[storage, [], []],
        result_types=[[tensor_type]],
        properties=properties,
        attributes=attributes,
    )


ALLOC_TENSOR = PlainSyntax(_ALLOC_TENSOR, _read_alloc_tensor, _print_alloc_tensor)

# ---------------------------------------------------------------------------
# memory.invoke
# ---------------------------------------------------------------------------

# `memory.invoke @k ins(%a, %b : T1, T2) outs(%c : T3) {k = 1 : i64}`
_INVOKE = re.compile(
    rf"memory\.invoke[ \t]+(?P<callee>{SYMBOL})"
    rf"(?:[ \t]+ins\([ \t]*(?P<ins>{VALUE_NAME_LIST})[ \t]*:(?P<in_types>[^(){{}}\n]*)\))?"
    rf"(?:[ \t]+outs\([ \t]*(?P<outs>{VALUE_NAME_LIST})[ \t]*:(?P<out_types>[^(){{}}\n]*)\))?"
    rf"[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?{LINE_END}"
    # The format lets the op go on after a line break: not if it does.
    r"(?!(?:\s|//[^\n]*)*(?:ins\b|outs\b|\{))"
)


def _print_invoke(op: Operation, printer: Printer) -> bool:
    callee = op.properties.get("callee")
    if callee is None or not _holds_only_its_properties(op):
        return False
    printer.print_string(" ")
    printer.print_attribute(callee)
    for keyword in ("ins", "outs"):
        values = getattr(op, keyword)
        if values:
            printer.print_string(f" {keyword}(")
            printer.print_list(values, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list(values.types, printer.print_attribute)
            printer.print_string(")")
    printer.print_op_attributes(op.attributes)
    return True


def _read_invoke(
    parser: LineReader, found: re.Match[str], op_class: type[Operation]
) -> Operation | None:
    in_types = parser.spelled_types(found.group("in_types") or "")
    out_types = parser.spelled_types(found.group("out_types") or "")
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(op_class))
    if in_types is None or out_types is None or attributes is None:
        return None
    ins = parser.value_names(found, "ins")
    outs = parser.value_names(found, "outs")
    if len(ins) != len(in_types) or len(outs) != len(out_types):
        return None  # upstream reports the count, before resolving any value
    assert issubclass(op_class, IRDLOperation)
    return op_class.build(
        operands=[parser.resolve_values(ins, in_types), parser.resolve_values(outs, out_types)],
        result_types=[],
        properties={"callee": SymbolRefAttr(found.group("callee")[1:])},
        attributes=attributes,
    )


INVOKE = PlainSyntax(_INVOKE, _read_invoke, _print_invoke)

# ---------------------------------------------------------------------------
# memory.kill
# ---------------------------------------------------------------------------

# `memory.kill %t {k = 1 : i64} : memref<4xf32>`
_KILL = re.compile(
    rf"memory\.kill[ \t]+(?P<value>{VALUE_NAME})[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?"
    rf"[ \t]*:[ \t]*(?P<type>{_TYPE}){LINE_END}"
)


def _print_kill(op: Operation, printer: Printer) -> bool:
    if op.properties:
        return False
    value = op.operands[0]
    printer.print_string(" ")
    printer.print_operand(value)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(value.type)
    return True


def _read_kill(
    parser: LineReader, found: re.Match[str], op_class: type[Operation]
) -> Operation | None:
    value_type = parser.spelled_type(found.group("type"))
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(op_class))
    if value_type is None or attributes is None:
        return None
    value = parser.resolve_values(parser.value_names(found, "value"), [value_type])
    return op_class.create(operands=value, attributes=attributes)


KILL = PlainSyntax(_KILL, _read_kill, _print_kill)

# ---------------------------------------------------------------------------
# func.call (upstream's op: read here, printed by xDSL)
# ---------------------------------------------------------------------------

# `%r = func.call @f(%a, %b) {k = 1 : i64} : (T1, T2) -> T3`: no result, one
# or a parenthesised list.
_CALL = re.compile(
    rf"{RESULT}func\.call[ \t]+(?P<callee>{SYMBOL})[ \t]*"
    rf"\([ \t]*(?P<operands>(?:{VALUE_NAME_LIST})?)[ \t]*\)[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?"
    r"[ \t]*:[ \t]*\((?P<inputs>[^()\n]*)\)[ \t]*->[ \t]*"
    rf"(?P<outputs>\([^()\n]*\)|[^\s(){{}},]+){LINE_END}"
)


def _read_call(
    parser: LineReader, found: re.Match[str], op_class: type[Operation]
) -> Operation | None:
    inputs = parser.spelled_types(found.group("inputs"))
    outputs = found.group("outputs")
    results = parser.spelled_types(outputs[1:-1] if outputs.startswith("(") else outputs)
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(op_class))
    if inputs is None or results is None or attributes is None:
        return None
    if len(results) != (0 if found.group("result") is None else 1):
        return None  # upstream binds (or refuses) the results
    names = parser.value_names(found, "operands")
    if len(names) != len(inputs):
        return None  # upstream reports the count
    return op_class.create(
        operands=parser.resolve_values(names, inputs),
        result_types=results,
        properties={"callee": SymbolRefAttr(found.group("callee")[1:])},
        attributes=attributes,
    )


CALL = PlainSyntax(_CALL, _read_call, op_class=func.CallOp)

PLAIN_SYNTAX: tuple[PlainSyntax, ...] = (CALL, ALLOC_TENSOR, INVOKE, KILL)
"""Every common form ``FastParser`` reads in one step, in the order tried."""
