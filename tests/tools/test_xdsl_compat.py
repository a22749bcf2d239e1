"""memplan's workarounds for xDSL 0.74's parser and printer (``memplan.tools.xdsl_compat``).

Two tests per workaround: ``test_compat_*`` fails if the workaround is
removed (the input is again a traceback, accepted, or misplaced);
``test_upstream_*`` checks that xDSL still behaves as the workaround
assumes, so it fails once xDSL fixes the bug: then the workaround (and
its upstream test) can go. The driver's end-to-end view of the same inputs
is ``test_lit/driver/parse-error-xdsl-gaps.mlir``.
"""

from __future__ import annotations

import os
import re
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.mlir_lexer import MLIRLexer

from memplan.dialect.context import memplan_context
from memplan.dialect.printer import DistinctNamePrinter
from memplan.tools.memplan_opt import main as memplan_opt_main
from memplan.tools.xdsl_compat import CompatParser, LinearLexer

INTEGER_TOO_LARGE = """\
func.func @f() -> i64 {
  %c = arith.constant 99999999999999999999 : i64
  func.return %c : i64
}
"""
FLOAT_TOO_LARGE = """\
func.func @f() -> f32 {
  %c = arith.constant -1.0e60 : f32
  func.return %c : f32
}
"""
DENSE_TOO_LARGE = """\
func.func @f() -> tensor<2xi64> {
  %c = arith.constant dense<99999999999999999999> : tensor<2xi64>
  func.return %c : tensor<2xi64>
}
"""
NAMED_OP_WITHOUT_OPERANDS = """\
func.func @f() {
  linalg.add
  func.return
}
"""
BLOCK_DEFINED_TWICE = """\
func.func @f() {
  cf.br ^bb1
^bb1:
  cf.br ^bb1
^bb1:
  func.return
}
"""
UNDEFINED_VALUE = """\
func.func @f() {
  "test.op"(%x) : (i32) -> ()
  func.return
}


"""
OPERAND_DEFINED_IN_OWN_REGION = """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], \
iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%empty : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %empty = tensor.empty() : tensor<4xf32>
    linalg.yield %in : f32
  } -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
USE_ABOVE_DEFINITION = """\
func.func @f() {
  "test.op"(%t) : (i32) -> ()
  %t = "test.op"() : () -> i32
  func.return
}
"""
USE_OUTSIDE_REGION = """\
"test.op"(%t) : (i32) -> ()
func.func @inner() {
  %t = "test.op"() : () -> i32
  func.return
}
"""


def _compat_error(text: str) -> tuple[str, str]:
    """The message of ``CompatParser``'s parse error and the text it points at."""
    with pytest.raises(ParseError) as info:
        CompatParser(memplan_context(), text, "in.mlir").parse_module()
    return info.value.msg, info.value.span.text


def _upstream_parse(text: str) -> Operation:
    return Parser(memplan_context(), text, "in.mlir").parse_module()


# An integer literal too large for its type.


def test_compat_integer_too_large() -> None:
    assert _compat_error(INTEGER_TOO_LARGE) == (
        "integer 99999999999999999999 does not fit in i64",
        "%c",
    )


def test_upstream_integer_too_large_is_not_a_parse_error() -> None:
    with pytest.raises(Exception, match="out of range for type i64") as info:
        _upstream_parse(INTEGER_TOO_LARGE)
    assert not isinstance(info.value, ParseError)


# A float literal beyond its type's range.


def test_compat_float_too_large() -> None:
    assert _compat_error(FLOAT_TOO_LARGE)[0] == "a float literal does not fit in its type"


def test_upstream_float_too_large_is_an_overflow_error() -> None:
    with pytest.raises(OverflowError):
        _upstream_parse(FLOAT_TOO_LARGE)


# A dense element too large for its type: the error is under the literal.


def test_compat_dense_element_too_large() -> None:
    assert _compat_error(DENSE_TOO_LARGE) == (
        "integer 99999999999999999999 does not fit in i64",
        "99999999999999999999",
    )


def test_upstream_dense_element_too_large_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="out of range for type i64"):
        _upstream_parse(DENSE_TOO_LARGE)


# A custom op parser indexing into what it parsed.


def test_compat_custom_parser_failure() -> None:
    assert _compat_error(NAMED_OP_WITHOUT_OPERANDS) == (
        "malformed 'linalg.add' op (IndexError: list index out of range)",
        "linalg.add",
    )


def test_upstream_custom_parser_raises_index_error() -> None:
    with pytest.raises(IndexError):
        _upstream_parse(NAMED_OP_WITHOUT_OPERANDS)


# A block label defined twice after a forward reference.


def test_compat_block_defined_twice() -> None:
    message, at = _compat_error(BLOCK_DEFINED_TWICE)
    assert (message, at) == ("block ^bb1 defined twice", "^bb1")
    assert BLOCK_DEFINED_TWICE.count("^bb1:") == 2


def test_upstream_block_defined_twice_raises_key_error() -> None:
    with pytest.raises(KeyError):
        _upstream_parse(BLOCK_DEFINED_TWICE)


# A use of an undefined value: at the use, not at the end of the input.


def test_compat_undefined_value_at_its_use() -> None:
    with pytest.raises(ParseError) as info:
        CompatParser(memplan_context(), UNDEFINED_VALUE, "in.mlir").parse_module()
    assert info.value.msg == "use of undefined value %x"
    assert str(info.value.span.get_location()) == "in.mlir:2:13"


def test_upstream_undefined_value_at_end_of_input() -> None:
    with pytest.raises(ParseError) as info:
        _upstream_parse(UNDEFINED_VALUE)
    assert info.value.msg.startswith("values used but not defined")
    assert info.value.span.start >= len(UNDEFINED_VALUE.rstrip())


# An operand defined only inside the region of the op that uses it.


def test_compat_operand_defined_in_own_region() -> None:
    assert _compat_error(OPERAND_DEFINED_IN_OWN_REGION) == (
        "operand %empty does not dominate its use",
        "%empty",
    )


def test_upstream_operand_defined_in_own_region_stays_forward_declared() -> None:
    module = _upstream_parse(OPERAND_DEFINED_IN_OWN_REGION)
    with pytest.raises(ValueError, match="Forward declared values do not have an owner"):
        module.verify()


# A use its definition does not reach (above it; outside its region).


@pytest.mark.parametrize("text", [USE_ABOVE_DEFINITION, USE_OUTSIDE_REGION])
def test_compat_use_not_dominated(text: str) -> None:
    assert _compat_error(text) == ("operand %t does not dominate its use", "%t")


@pytest.mark.parametrize("text", [USE_ABOVE_DEFINITION, USE_OUTSIDE_REGION])
def test_upstream_accepts_use_not_dominated(text: str) -> None:
    _upstream_parse(text).verify()


# A string left open on its line: xDSL's pattern backtracks exponentially
# (minutes on a 40-byte line), so neither test times the upstream lexer.


def test_compat_parser_lexes_strings_in_linear_time() -> None:
    parser = CompatParser(memplan_context(), '"test.op"() : () -> ()', "in.mlir")
    assert type(parser._parser_state.lexer) is LinearLexer  # pyright: ignore[reportPrivateUsage]
    # No group in the linear pattern repeats a repetition.
    pattern = LinearLexer._unescaped_characters_regex.pattern  # pyright: ignore[reportPrivateUsage]
    assert not re.search(r"[+*]\|.*\)\*", pattern)
    message, _ = _compat_error('"test.op"() {a = "an open string} : () -> ()')
    assert message == "End of file reached before closing string literal."


def test_upstream_string_pattern_still_nests_repetitions() -> None:
    pattern = MLIRLexer._unescaped_characters_regex.pattern  # pyright: ignore[reportPrivateUsage]
    assert re.search(r"[+*]\|.*\)\*", pattern), pattern


@given(st.text(alphabet='ab \\"nt0F\n', max_size=12))
def test_linear_pattern_matches_the_same_strings(body: str) -> None:
    text = '"' + body
    linear = LinearLexer._unescaped_characters_regex.match(text)  # pyright: ignore[reportPrivateUsage]
    upstream = MLIRLexer._unescaped_characters_regex.match(text)  # pyright: ignore[reportPrivateUsage]
    assert (linear and linear.group()) == (upstream and upstream.group())


# Name hints one of which is another's printer suffix: %a_1 is the second
# %a's name and the hint of another value (its own hint loses one suffix).

SUFFIXED_NAMES = """\
func.func @f(%a: i32) -> i32 {
  %a_1 = arith.addi %a, %a : i32
  %a_1_1 = arith.addi %a_1, %a : i32
  %a_1_2 = arith.addi %a_1_1, %a_1 : i32
  func.return %a_1_2 : i32
}
"""


def _defined_names(text: str) -> list[str]:
    return re.findall(r"(%[\w.$-]+)(?: = |: )", text)


def test_compat_printer_names_each_value_once() -> None:
    module = CompatParser(memplan_context(), SUFFIXED_NAMES, "in.mlir").parse_module()
    stream = StringIO()
    DistinctNamePrinter(stream=stream).print_op(module)
    names = _defined_names(stream.getvalue())
    assert len(names) == len(set(names)) == 4
    # The text means the same program: it prints the same once parsed again.
    again = CompatParser(memplan_context(), stream.getvalue(), "out.mlir").parse_module()
    reprinted = StringIO()
    DistinctNamePrinter(stream=reprinted).print_op(again)
    assert reprinted.getvalue() == stream.getvalue()


def test_compat_memplan_opt_output_parses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(SUFFIXED_NAMES)
    assert memplan_opt_main([str(source), "-o", str(tmp_path / "out.mlir")]) == 0
    out = (tmp_path / "out.mlir").read_text()
    assert "%a_1_2 = arith.addi %a_1_1, %a_1 : i32" in out
    assert memplan_opt_main([str(tmp_path / "out.mlir"), "-o", os.devnull]) == 0, (
        capsys.readouterr().err
    )


def test_upstream_printer_prints_a_name_twice() -> None:
    module = Parser(memplan_context(), SUFFIXED_NAMES, "in.mlir").parse_module()
    stream = StringIO()
    Printer(stream=stream).print_op(module)
    names = _defined_names(stream.getvalue())
    assert len(names) == 4 and len(set(names)) == 3


# Shaped and storage types: parsed once per spelling (CompatParser) and printed once per
# type (DistinctNamePrinter). Both are caches, so the text they give must be
# upstream's, including for spellings the cache does not take (a layout, a
# memory space, an encoding, a nested element type) and a type written last
# in the input.

_SHAPED_SPELLINGS = [
    "tensor<1x64xf32>",
    "tensor<?x3xbf16>",
    "tensor<i8>",
    "memref<4xf8E4M3FN>",
    "memref<4xf32, 1 : i64>",
    "memref<2x3xf32, strided<[3, 1]>>",
    "tensor<4xcomplex<f32>>",
    "vector<4xi32>",
    "memref<4x?xindex>",
    "!memory.storage<256>",
    "!memory.storage<?>",
    "!memory.storage<0>",
]


def _printed_by_upstream(text: str) -> str:
    """``text`` parsed and printed by xDSL's own parser and printer."""
    stream = StringIO()
    Printer(stream=stream).print_op(Parser(memplan_context(), text, "in.mlir").parse_module())
    return stream.getvalue()


@given(st.lists(st.sampled_from(_SHAPED_SPELLINGS), min_size=1, max_size=8))
def test_compat_shaped_types_parse_and_print_as_upstream(spellings: list[str]) -> None:
    arguments = ", ".join(f"%a{i}: {spelling}" for i, spelling in enumerate(spellings))
    text = f"func.func private @f({arguments}) -> {spellings[-1]}"
    compat = StringIO()
    DistinctNamePrinter(stream=compat).print_op(
        CompatParser(memplan_context(), text, "in.mlir").parse_module()
    )
    assert compat.getvalue() == _printed_by_upstream(text)
    for spelling in spellings:
        assert spelling in compat.getvalue()


@pytest.mark.parametrize(
    "spellings",
    [
        ("tensor<1x64xf32>", "tensor<1x64xf32>", "tensor<2xf32>"),
        ("!memory.storage<64>", "!memory.storage<64>", "!memory.storage<?>"),
    ],
)
def test_compat_type_is_parsed_once_per_spelling(spellings: tuple[str, str, str]) -> None:
    a, b, c = spellings
    text = f"func.func private @f(%a: {a}, %b: {b}, %c: {c})"
    module = CompatParser(memplan_context(), text, "in.mlir").parse_module()
    function = next(iter(module.ops))
    assert isinstance(function, func.FuncOp)
    first, second, third = function.function_type.inputs.data
    assert first is second and first is not third


# Attribute dictionaries: each flat spelling parsed once (CompatParser); the
# ops must be upstream's, including dictionaries the cache does not take
# (nested braces, strings, aliases) and one spelling written twice.

_DICTIONARY_SPELLINGS = [
    "{tag}",
    "{memory.inplace_of = 0 : i64}",
    '{memory.inplace_of = 1 : i64, memory.source_names = ["a"]}',
    "{strides = [1, 1], note = dense<[1, 2]> : tensor<2xi32>}",
    "{nested = {a = 1 : i32}}",
    "{}",
    "{w = 2.5 : f32, k = array<i64: 1, 2>}",
]


@given(st.lists(st.sampled_from(_DICTIONARY_SPELLINGS), min_size=1, max_size=8))
def test_compat_attribute_dictionaries_parse_as_upstream(spellings: list[str]) -> None:
    body = "\n".join(f'"test.op"() {spelling} : () -> ()' for spelling in spellings)
    compat = StringIO()
    Printer(stream=compat).print_op(CompatParser(memplan_context(), body, "in.mlir").parse_module())
    assert compat.getvalue() == _printed_by_upstream(body)


def test_compat_attribute_dictionary_is_parsed_once_per_spelling() -> None:
    text = """
    "test.op"() {k = 1 : i64, tag} : () -> ()
    "test.op"() {k = 1 : i64, tag} : () -> ()
    """
    first, second = CompatParser(memplan_context(), text, "in.mlir").parse_module().ops
    assert first.attributes == second.attributes
    assert first.attributes["k"] is second.attributes["k"]


def test_compat_duplicate_key_is_reported_every_time() -> None:
    text = """
    "test.op"() {k = 1 : i64} : () -> ()
    "test.op"() {k = 1 : i64, k = 2 : i64} : () -> ()
    """
    with pytest.raises(ParseError, match="Duplicate key 'k'"):
        CompatParser(memplan_context(), text, "in.mlir").parse_module()


def test_compat_error_after_a_cached_type_points_at_its_token() -> None:
    text = "func.func private @f(%a: tensor<4xf32>, %b: tensor<4xf32> %c: i32)"
    with pytest.raises(ParseError) as caught:
        CompatParser(memplan_context(), text, "in.mlir").parse_module()
    assert caught.value.span.text == "%c"


# Plain `func.call` lines: read in one step (CompatParser._parse_plain_call)
# when every type and the dictionary were parsed before. The op must be the
# one upstream's declarative format builds, whatever the line's form: the
# generic form (properties and attributes apart) and the names must match.

_CALL_TYPES = ["tensor<4xf32>", "tensor<2x2xf32>", "memref<4xf32>", "i32", "index"]
_CALL_DICTIONARIES = ["", " {k = 1 : i64}", " {strides = [1, 1], tag}", ' {s = "x"}', " {}"]


@st.composite
def _call_programs(draw: st.DrawFn) -> str:
    """A function of calls of every form: 0 to 3 operands (arguments and
    earlier results), no result, one or a result list, dictionaries,
    spacing and line ends the fast path takes or not."""
    arguments = draw(st.lists(st.sampled_from(_CALL_TYPES), min_size=1, max_size=3))
    values: list[tuple[str, str]] = [(f"%a{i}", t) for i, t in enumerate(arguments)]
    lines: list[str] = []
    count = draw(st.integers(1, 5))
    for index in range(count):
        operands = draw(st.lists(st.sampled_from(values), max_size=3))
        results = draw(st.sampled_from(["one", "none", "list"]))
        result_type = draw(st.sampled_from(_CALL_TYPES))
        space = draw(st.sampled_from([" ", "  ", "\t"]))
        names = ", ".join(name for name, _ in operands)
        types = ", ".join(t for _, t in operands)
        dictionary = draw(st.sampled_from(_CALL_DICTIONARIES))
        call = f"func.call{space}@k{index}({names}){dictionary} :{space}({types})"
        if results == "one":
            lines.append(f"%r{index} ={space}{call} -> {result_type}")
            values.append((f"%r{index}", result_type))
        elif results == "none":
            lines.append(f"{call} -> ()")
        else:
            lines.append(f"%r{index}:2 = {call} -> ({result_type}, {result_type})")
        lines[-1] += draw(st.sampled_from(["", " // note", " loc(unknown)"]))
    header = ", ".join(f"{name}: {t}" for name, t in values[: len(arguments)])
    body = "\n".join(f"  {line}" for line in lines)
    return f"func.func @f({header}) {{\n{body}\n  func.return\n}}\n"


def _generic(module: Operation) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    return stream.getvalue()


@given(_call_programs())
def test_compat_plain_calls_parse_as_upstream(text: str) -> None:
    compat = CompatParser(memplan_context(), text, "in.mlir").parse_module()
    assert _generic(compat) == _generic(_upstream_parse(text))


def test_compat_plain_calls_skip_the_declarative_format(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every type and the dictionary are spelled before the calls (the
    # signature, the first call): only the first call needs the format.
    text = """
    func.func @f(%a: tensor<4xf32>, %b: tensor<2xf32>) {
      %0 = func.call @k(%a) {n = 1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
      %1 = func.call @k(%a) {n = 1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
      %2 = func.call @j(%1, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
      func.call @k(%2) : (tensor<4xf32>) -> ()
      func.return
    }
    """
    parsed: list[str] = []
    upstream = func.CallOp.parse.__func__  # pyright: ignore[reportFunctionMemberAccess]

    def counted(cls: type[func.CallOp], parser: Parser) -> func.CallOp:
        parsed.append(cls.name)
        return upstream(cls, parser)

    monkeypatch.setattr(func.CallOp, "parse", classmethod(counted))
    module = CompatParser(memplan_context(), text, "in.mlir").parse_module()
    assert len(parsed) == 1
    assert _generic(module) == _generic(_upstream_parse(text))


@pytest.mark.parametrize(
    "text",
    [
        # %a is a tensor<4xf32>, used as a tensor<2xf32>.
        "func.func @f(%a: tensor<4xf32>, %b: tensor<2xf32>) {\n"
        "  %0 = func.call @k(%a) : (tensor<2xf32>) -> tensor<4xf32>\n  func.return\n}\n",
        # Two definitions of %0.
        "func.func @f(%a: tensor<4xf32>) {\n"
        "  %0 = func.call @k(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  %0 = func.call @k(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  func.return\n}\n",
    ],
)
def test_compat_plain_call_errors_are_upstreams(text: str) -> None:
    message, at = _compat_error(text)
    with pytest.raises(ParseError) as upstream:
        _upstream_parse(text)
    assert (message, at) == (upstream.value.msg, upstream.value.span.text)


def test_compat_plain_call_of_undefined_value_points_at_its_use() -> None:
    text = (
        "func.func @f(%a: tensor<4xf32>) {\n"
        "  %0 = func.call @k(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return\n}\n"
    )
    assert _compat_error(text) == ("use of undefined value %x", "%x")
