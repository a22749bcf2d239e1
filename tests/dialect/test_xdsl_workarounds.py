"""memplan's fixes for xDSL 0.74's parser and printer (``memplan.dialect.xdsl_workarounds``).

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
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.mlir_lexer import MLIRLexer

from memplan.dialect.context import memplan_context
from memplan.dialect.xdsl_workarounds.parser import LinearLexer, WorkaroundParser
from memplan.dialect.xdsl_workarounds.printer import DistinctNamePrinter
from memplan.tools.memplan_opt import main as memplan_opt_main

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
    """The message of ``WorkaroundParser``'s parse error and the text it points at."""
    with pytest.raises(ParseError) as info:
        WorkaroundParser(memplan_context(), text, "in.mlir").parse_module()
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
        WorkaroundParser(memplan_context(), UNDEFINED_VALUE, "in.mlir").parse_module()
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
    parser = WorkaroundParser(memplan_context(), '"test.op"() : () -> ()', "in.mlir")
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
    module = WorkaroundParser(memplan_context(), SUFFIXED_NAMES, "in.mlir").parse_module()
    stream = StringIO()
    DistinctNamePrinter(stream=stream).print_op(module)
    names = _defined_names(stream.getvalue())
    assert len(names) == len(set(names)) == 4
    # The text means the same program: it prints the same once parsed again.
    again = WorkaroundParser(memplan_context(), stream.getvalue(), "out.mlir").parse_module()
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
