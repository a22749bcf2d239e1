"""memplan's speed paths over xDSL 0.74 (``memplan.dialect.xdsl_speedups``).

Each speed path must give what xDSL gives: the same ops, the same text, the
same diagnostics. Here the parser's caches and one-step lines against
xDSL's parser on random inputs; at the end, every tool's output on the
repository's inputs with the speed paths on and off
(``MEMPLAN_XDSL_SPEEDUPS=0``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from memplan.dialect.context import memplan_context
from memplan.dialect.xdsl_speedups.parser import FastParser
from memplan.dialect.xdsl_speedups.printer import FastPrinter


def _fast_error(text: str) -> tuple[str, str]:
    """The message of ``FastParser``'s parse error and the text it points at."""
    with pytest.raises(ParseError) as info:
        FastParser(memplan_context(), text, "in.mlir").parse_module()
    return info.value.msg, info.value.span.text


def _upstream_parse(text: str) -> Operation:
    return Parser(memplan_context(), text, "in.mlir").parse_module()


# Shaped and storage types: parsed once per spelling (FastParser) and printed once per
# type (FastPrinter). Both are caches, so the text they give must be
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
def test_fast_shaped_types_parse_and_print_as_upstream(spellings: list[str]) -> None:
    arguments = ", ".join(f"%a{i}: {spelling}" for i, spelling in enumerate(spellings))
    text = f"func.func private @f({arguments}) -> {spellings[-1]}"
    compat = StringIO()
    FastPrinter(stream=compat).print_op(
        FastParser(memplan_context(), text, "in.mlir").parse_module()
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
def test_fast_type_is_parsed_once_per_spelling(spellings: tuple[str, str, str]) -> None:
    a, b, c = spellings
    text = f"func.func private @f(%a: {a}, %b: {b}, %c: {c})"
    module = FastParser(memplan_context(), text, "in.mlir").parse_module()
    function = next(iter(module.ops))
    assert isinstance(function, func.FuncOp)
    first, second, third = function.function_type.inputs.data
    assert first is second and first is not third


# Attribute dictionaries: each flat spelling parsed once (FastParser); the
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
def test_fast_attribute_dictionaries_parse_as_upstream(spellings: list[str]) -> None:
    body = "\n".join(f'"test.op"() {spelling} : () -> ()' for spelling in spellings)
    compat = StringIO()
    Printer(stream=compat).print_op(FastParser(memplan_context(), body, "in.mlir").parse_module())
    assert compat.getvalue() == _printed_by_upstream(body)


def test_fast_attribute_dictionary_is_parsed_once_per_spelling() -> None:
    text = """
    "test.op"() {k = 1 : i64, tag} : () -> ()
    "test.op"() {k = 1 : i64, tag} : () -> ()
    """
    first, second = FastParser(memplan_context(), text, "in.mlir").parse_module().ops
    assert first.attributes == second.attributes
    assert first.attributes["k"] is second.attributes["k"]


def test_fast_duplicate_key_is_reported_every_time() -> None:
    text = """
    "test.op"() {k = 1 : i64} : () -> ()
    "test.op"() {k = 1 : i64, k = 2 : i64} : () -> ()
    """
    with pytest.raises(ParseError, match="Duplicate key 'k'"):
        FastParser(memplan_context(), text, "in.mlir").parse_module()


def test_fast_error_after_a_cached_type_points_at_its_token() -> None:
    text = "func.func private @f(%a: tensor<4xf32>, %b: tensor<4xf32> %c: i32)"
    with pytest.raises(ParseError) as caught:
        FastParser(memplan_context(), text, "in.mlir").parse_module()
    assert caught.value.span.text == "%c"


# Plain `func.call` lines: read in one step (FastParser._parse_plain_line)
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
def test_fast_plain_calls_parse_as_upstream(text: str) -> None:
    compat = FastParser(memplan_context(), text, "in.mlir").parse_module()
    assert _generic(compat) == _generic(_upstream_parse(text))


def test_fast_plain_calls_skip_the_declarative_format(monkeypatch: pytest.MonkeyPatch) -> None:
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
    module = FastParser(memplan_context(), text, "in.mlir").parse_module()
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
def test_fast_plain_call_errors_are_upstreams(text: str) -> None:
    message, at = _fast_error(text)
    with pytest.raises(ParseError) as upstream:
        _upstream_parse(text)
    assert (message, at) == (upstream.value.msg, upstream.value.span.text)


def test_fast_plain_call_of_undefined_value_points_at_its_use() -> None:
    text = (
        "func.func @f(%a: tensor<4xf32>) {\n"
        "  %0 = func.call @k(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "  func.return\n}\n"
    )
    assert _fast_error(text) == ("use of undefined value %x", "%x")


# Symbol lookups while a module verifies: from an index, answering as
# xDSL's scan does.

_SYMBOLS = """
builtin.module {
  func.func private @k(tensor<4xf32>) -> tensor<4xf32>
  builtin.module @inner {
    func.func private @deep(tensor<4xf32>) -> tensor<4xf32>
  }
  func.func @f(%a: tensor<4xf32>) {
    %0 = func.call @k(%a) : (tensor<4xf32>) -> tensor<4xf32>
    func.return
  }
}
"""


def test_indexed_lookups_answer_as_xdsls_scan() -> None:
    from xdsl.dialects.builtin import SymbolRefAttr

    from memplan.dialect.xdsl_speedups import symbol_lookup

    module = Parser(memplan_context(), _SYMBOLS).parse_module()
    call = next(op for op in module.walk() if isinstance(op, func.CallOp))
    names = ["k", "f", "inner", "nope", SymbolRefAttr("inner", ["deep"])]
    names += [SymbolRefAttr("inner", ["nope"]), SymbolRefAttr("k", ["deep"])]
    expected = [symbol_lookup._xdsl_lookup(call, name) for name in names]
    assert [op is not None for op in expected] == [True, True, True, False, True, False, False]
    with symbol_lookup._indexed():
        assert [symbol_lookup._indexed_lookup(call, name) for name in names] == expected


def test_an_index_lives_for_one_verification() -> None:
    """A callee erased after one verification is missing in the next."""
    module = Parser(memplan_context(), _SYMBOLS).parse_module()
    module.verify()
    [callee] = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "k"]
    module.body.block.erase_op(callee)
    with pytest.raises(VerifyException, match="'@k' could not be found in symbol table"):
        module.verify()


# Every output with the speed paths on and off: `memplan-opt` on every
# `.mlir` input of the lit suite and the examples, through three pipelines
# (print only, plan with its report, the generic form), in one process per
# setting (the switch is read at import).

REPO = Path(__file__).resolve().parents[2]
_OUTPUTS_SCRIPT = """
import contextlib, io, json, sys, tempfile
from pathlib import Path
from memplan.tools.memplan_opt import main

outputs = {}
with tempfile.TemporaryDirectory() as folder:
    out = Path(folder) / "out.mlir"
    for source in sys.argv[1:]:
        for options in ([], ["--plan", "--plan-report"], ["--print-op-generic"]):
            out.unlink(missing_ok=True)
            errors = io.StringIO()
            with contextlib.redirect_stderr(errors):
                code = main([source, "--split-input-file", *options, "-o", str(out)])
            text = out.read_text() if out.exists() else None
            outputs[" ".join([source, *options])] = [code, text, errors.getvalue()]
print(json.dumps(outputs))
"""


def _outputs(speedups: str, sources: list[str]) -> dict[str, list[object]]:
    environment = {**os.environ, "MEMPLAN_XDSL_SPEEDUPS": speedups}
    done = subprocess.run(
        [sys.executable, "-c", _OUTPUTS_SCRIPT, *sources],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        check=True,
    )
    return json.loads(done.stdout)


_INTERPRETERS_SCRIPT = """
import sys
import memplan.dialect.interpreter
loaded = lambda: sorted(m for m in sys.modules if m.startswith("xdsl.interpreters."))
before = loaded()
from xdsl.interpreters import arith, riscv
import xdsl.interpreters
after_submodules = loaded()
from xdsl.interpreters import register_implementations
print("xdsl.interpreters.riscv" not in before and "xdsl.interpreters.arith" in before)
print("xdsl.interpreters.riscv" in after_submodules, "xdsl.interpreters.pdl" not in after_submodules)
print(xdsl.interpreters.arith is arith, callable(register_implementations))
print("xdsl.interpreters.pdl" in sys.modules, hasattr(xdsl.interpreters, "__getattr__"))
"""


def test_interpreters_import_without_the_package_init() -> None:
    """memplan's interpreter loads xDSL's arith, cf, func and scf
    interpreters (and what they import) but not every upstream one; a
    submodule asked for by name imports alone, and the package's own name
    runs its ``__init__``, which imports the rest."""
    done = subprocess.run(
        [sys.executable, "-c", _INTERPRETERS_SCRIPT],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMPLAN_XDSL_SPEEDUPS": "1"},
        check=True,
    )
    assert done.stdout.split() == ["True", "True", "True", "True", "True", "True", "False"]


def test_speedups_off_switches_every_path_off() -> None:
    script = (
        "from memplan.dialect.parser import MemplanParser\n"
        "from memplan.dialect.printer import MemplanPrinter\n"
        "from memplan.dialect import AllocTensorOp\n"
        "from memplan.dialect.xdsl_speedups.irdl_caches import _DecodedSegmentAccessor\n"
        "from xdsl.traits import SymbolTable\n"
        "from memplan.dialect.xdsl_speedups import symbol_lookup\n"
        "import memplan.dialect.interpreter, sys\n"
        "print(MemplanParser.__name__, MemplanPrinter.__name__,"
        " isinstance(vars(AllocTensorOp)['storage'], _DecodedSegmentAccessor),"
        " SymbolTable.lookup_symbol is not symbol_lookup._xdsl_lookup,"
        " 'xdsl.interpreters.riscv' not in sys.modules)\n"
    )
    for speedups, expected in (
        ("1", "FastParser FastPrinter True True True"),
        ("0", "WorkaroundParser DistinctNamePrinter False False False"),
    ):
        environment = {**os.environ, "MEMPLAN_XDSL_SPEEDUPS": speedups}
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        assert done.stdout.split() == expected.split()


@pytest.mark.slow
def test_every_output_is_the_same_without_speedups() -> None:
    sources = sorted(
        str(path.relative_to(REPO))
        for pattern in ("test_lit/**/*.mlir", "examples/*.mlir")
        for path in REPO.glob(pattern)
        if "Output" not in path.parts  # what lit wrote, not the suite's inputs
    )
    fast, plain = _outputs("1", sources), _outputs("0", sources)
    assert fast.keys() == plain.keys()
    differing = [case for case in fast if fast[case] != plain[case]]
    assert differing == [], f"{len(differing)} outputs differ, first: {differing[0]}"
    # The inputs exercise both kinds of outcome.
    assert {code for code, _, _ in fast.values()} >= {0, 1}
