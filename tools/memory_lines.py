"""The ``memory`` dialect's common lines, read in one step (a library, not a tool).

A planned program is mostly ``memory.alloc_tensor``, ``memory.invoke`` and
``memory.kill`` lines; xDSL 0.74 reads each through its lexer and the
declarative format's generic parser. ``MEMORY_LINES`` are readers for
``CompatParser.plain_lines`` (``LocatingParser`` uses them): each pattern
takes the form ``memplan-opt`` prints, and its reader builds the op the
assembly format builds from it, or leaves the line to the format (a type
or dictionary not parsed before, a dynamic offset or dimension, any other
spelling). ``tests/dialect/test_dialect.py`` compares both on random ops.
"""

from __future__ import annotations

import re

from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.ir import Operation

from memplan.dialect import AllocTensorOp, InvokeOp, KillOp
from memplan.dialect.irdl_caches import property_names
from memplan.dialect.ops import i64_attr
from memplan.tools.xdsl_compat import (
    FLAT_DICTIONARY,
    LINE_END,
    RESULT,
    SYMBOL,
    VALUE_NAME,
    VALUE_NAME_LIST,
    CompatParser,
    PlainLineReader,
)

# At most 18 digits: within i64, so the format's range check cannot fail.
_BYTES = r"[0-9]{1,18}"
_TYPE = r"[^\s,(){}]+"

# `%t = memory.alloc_tensor %s[64] align 16 {k = 1 : i64} : !memory.storage<256> -> memref<4xf32>`
_ALLOC_TENSOR = re.compile(
    rf"{RESULT}memory\.alloc_tensor[ \t]+(?P<storage>{VALUE_NAME})\[(?P<offset>-?{_BYTES})\]"
    rf"(?:[ \t]+align[ \t]+(?P<align>{_BYTES}))?[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?"
    rf"[ \t]*:[ \t]*(?P<storage_type>{_TYPE})[ \t]*->[ \t]*(?P<tensor_type>{_TYPE}){LINE_END}"
)
# `memory.invoke @k ins(%a, %b : T1, T2) outs(%c : T3) {k = 1 : i64}`
_INVOKE = re.compile(
    rf"memory\.invoke[ \t]+(?P<callee>{SYMBOL})"
    rf"(?:[ \t]+ins\([ \t]*(?P<ins>{VALUE_NAME_LIST})[ \t]*:(?P<in_types>[^(){{}}\n]*)\))?"
    rf"(?:[ \t]+outs\([ \t]*(?P<outs>{VALUE_NAME_LIST})[ \t]*:(?P<out_types>[^(){{}}\n]*)\))?"
    rf"[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?{LINE_END}"
    # The format lets the op go on after a line break: not if it does.
    r"(?!(?:\s|//[^\n]*)*(?:ins\b|outs\b|\{))"
)
# `memory.kill %t {k = 1 : i64} : memref<4xf32>`
_KILL = re.compile(
    rf"memory\.kill[ \t]+(?P<value>{VALUE_NAME})[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?"
    rf"[ \t]*:[ \t]*(?P<type>{_TYPE}){LINE_END}"
)


def _read_alloc_tensor(parser: CompatParser, found: re.Match[str]) -> Operation | None:
    if found.group("result") is None:
        return None  # upstream refuses the line
    storage_type = parser.spelled_type(found.group("storage_type"))
    tensor_type = parser.spelled_type(found.group("tensor_type"))
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(AllocTensorOp))
    if storage_type is None or tensor_type is None or attributes is None:
        return None
    storage = parser.resolve_values(parser.value_names(found, "storage"), [storage_type])
    properties = {"offset": i64_attr(int(found.group("offset")))}
    if found.group("align") is not None:
        properties["align"] = i64_attr(int(found.group("align")))
    return AllocTensorOp.build(
        operands=[storage, [], []],
        result_types=[[tensor_type]],
        properties=properties,
        attributes=attributes,
    )


def _read_invoke(parser: CompatParser, found: re.Match[str]) -> Operation | None:
    in_types = parser.spelled_types(found.group("in_types") or "")
    out_types = parser.spelled_types(found.group("out_types") or "")
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(InvokeOp))
    if in_types is None or out_types is None or attributes is None:
        return None
    ins = parser.value_names(found, "ins")
    outs = parser.value_names(found, "outs")
    if len(ins) != len(in_types) or len(outs) != len(out_types):
        return None  # upstream reports the count, before resolving any value
    return InvokeOp.build(
        operands=[parser.resolve_values(ins, in_types), parser.resolve_values(outs, out_types)],
        result_types=[],
        properties={"callee": SymbolRefAttr(found.group("callee")[1:])},
        attributes=attributes,
    )


def _read_kill(parser: CompatParser, found: re.Match[str]) -> Operation | None:
    value_type = parser.spelled_type(found.group("type"))
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(KillOp))
    if value_type is None or attributes is None:
        return None
    value = parser.resolve_values(parser.value_names(found, "value"), [value_type])
    return KillOp.create(operands=value, attributes=attributes)


MEMORY_LINES: tuple[tuple[re.Pattern[str], PlainLineReader], ...] = (
    (_ALLOC_TENSOR, _read_alloc_tensor),
    (_INVOKE, _read_invoke),
    (_KILL, _read_kill),
)
"""``CompatParser.plain_lines`` readers for the ``memory`` dialect's common lines."""
