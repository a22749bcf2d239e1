"""memplan's workarounds for xDSL 0.74's parser, in one place (a library, not a tool).

``CompatParser`` is xDSL's ``Parser`` reporting, as parse errors at the
offending token, malformed inputs that xDSL 0.74 lets through as Python
exceptions, accepts, or lexes in exponential time. Each workaround below
names the xDSL behaviour it covers and the upstream fix it waits for;
``tests/tools/test_xdsl_compat.py`` has one test per workaround (failing if the
workaround is removed) and one per upstream behaviour (failing once xDSL
fixes it, when the workaround can go). ``docs/known-limits.md`` lists them
for users. ``DistinctNameMLIRTarget`` is ``memplan-opt``'s output through
the printer's (``memplan.dialect.printer.DistinctNamePrinter``). Beside the workarounds, the
parser keeps caches and reads common lines in one step, for speed on large
programs (``CompatParser``). They touch xDSL internals (``_parser_state``,
``_parse_block``, ``ForwardDeclaredValue``, the lexer's string pattern and
position, the printer's ``_ssa_values``): that is why pyproject.toml pins
``xdsl<0.75``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import IO, Any, TypeVar, cast

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue, UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from memplan.dialect.irdl_caches import property_names
from memplan.dialect.printer import DistinctNamePrinter

# A shaped type with a plain element type, e.g. `tensor<1x64xf32>`: the
# spelling `CompatParser.parse_optional_type` keeps parsed types under.
_SHAPED_TYPE = re.compile(r"(?:tensor|memref|vector)<(?:[0-9?]+x)*[A-Za-z][A-Za-z0-9]*>")
_STORAGE_TYPE = re.compile(r"!memory\.storage<(?:[0-9]+|\?)>")
_Parsed = TypeVar("_Parsed")
# The types parsed once per spelling, by the kind of their first token.
_SPELLED_ONCE = {
    MLIRTokenKind.BARE_IDENT: _SHAPED_TYPE,
    MLIRTokenKind.EXCLAMATION_IDENT: _STORAGE_TYPE,
}

# Building blocks of the lines `CompatParser` reads in one step
# (`plain_lines`): a value's name as xDSL's lexer reads it, not followed by
# a result number (`%x#1`) or a tuple size (`%x:2`); a list of them; a flat
# attribute dictionary; a symbol; the end of the line.
VALUE_NAME = r"%(?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*)(?![A-Za-z0-9$._#:-])"
VALUE_NAME_LIST = rf"{VALUE_NAME}(?:[ \t]*,[ \t]*{VALUE_NAME})*"
FLAT_DICTIONARY = r'\{[^{}"#!\n]*\}'
_FLAT_DICTIONARY = re.compile(FLAT_DICTIONARY)
SYMBOL = r"@[A-Za-z_][A-Za-z0-9_$.]*"
LINE_END = r"[ \t]*(?=\n|$)"
RESULT = rf"(?:(?P<result>{VALUE_NAME})[ \t]*=[ \t]*)?"
# `%r = func.call @f(%a, %b) {k = 1 : i64} : (T1, T2) -> T3`: no result, one
# or a parenthesised list.
_PLAIN_CALL = re.compile(
    rf"{RESULT}func\.call[ \t]+(?P<callee>{SYMBOL})[ \t]*"
    rf"\([ \t]*(?P<operands>(?:{VALUE_NAME_LIST})?)[ \t]*\)[ \t]*(?P<dictionary>{FLAT_DICTIONARY})?"
    r"[ \t]*:[ \t]*\((?P<inputs>[^()\n]*)\)[ \t]*->[ \t]*"
    rf"(?P<outputs>\([^()\n]*\)|[^\s(){{}},]+){LINE_END}"
)
_VALUE_NAMES = re.compile(VALUE_NAME)
_LIST_SEPARATOR = re.compile(r"[ \t]*,[ \t]*")

_INTEGER_RANGE = re.compile(r"Integer value (-?\d+) is out of range for type (\w+)")

# An op's name after its results, e.g. `%a, %b:2 = "test.op"` -> "test.op".
_OP_NAME = re.compile(r'(?:%[\w.$#:-]+(?:\s*,\s*%[\w.$#:-]+)*\s*=\s*)?("[^"]*"|[\w.$]+)')


def reword_value_error(error: Exception) -> str:
    """xDSL's range error as ``integer N does not fit in iK``; other messages as they are."""
    text = str(error)
    match = _INTEGER_RANGE.search(text)
    if match:
        return f"integer {match.group(1)} does not fit in {match.group(2)}"
    return text


class LinearLexer(MLIRLexer):
    """MLIR's lexer with a string-literal pattern that cannot backtrack.

    Upstream (xDSL 0.74 ``MLIRLexer._unescaped_characters_regex``): the
    pattern nests ``[^"...]+`` in ``(...)*``, so on a string left open
    before the end of its line it backtracks exponentially (a 40-byte line
    takes minutes). Waits for: the same one-character-per-repetition
    pattern in ``MLIRLexer``, which matches the same strings in linear time.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


PlainLineReader = Callable[["CompatParser", re.Match[str]], Operation | None]
"""Builds the op of a line its pattern matched, or None (the line is left
to the op's own parser). The pattern's group ``result`` (if present and
matched) names the op's one result."""


def _read_call(parser: CompatParser, found: re.Match[str]) -> Operation | None:
    """A ``_PLAIN_CALL`` line: the op ``func.call``'s format builds."""
    inputs = parser.spelled_types(found.group("inputs"))
    outputs = found.group("outputs")
    results = parser.spelled_types(outputs[1:-1] if outputs.startswith("(") else outputs)
    attributes = parser.spelled_dictionary(found.group("dictionary"), property_names(func.CallOp))
    if inputs is None or results is None or attributes is None:
        return None
    if len(results) != (0 if found.group("result") is None else 1):
        return None  # upstream binds (or refuses) the results
    names = parser.value_names(found, "operands")
    if len(names) != len(inputs):
        return None  # upstream reports the count
    return func.CallOp.create(
        operands=parser.resolve_values(names, inputs),
        result_types=results,
        properties={"callee": SymbolRefAttr(found.group("callee")[1:])},
        attributes=attributes,
    )


class CompatParser(Parser):
    """xDSL's parser with memplan's workarounds for xDSL 0.74 (see the module).

    Each override below is one workaround: a literal too large for its type,
    an op parser failing on what it parsed, a block label defined twice, a
    use of an undefined value reported at the end of the input, an operand
    defined in the region of its own op, a use its definition does not
    reach, and a string left open on its line (``LinearLexer``). The others
    make large programs parse faster and change no result: shaped and
    storage types and flat attribute dictionaries parsed once per
    spelling, and whole lines read in one step (``plain_lines``: here
    ``func.call``'s; ``memplan.tools.memory_lines`` has the ``memory``
    dialect's).
    """

    plain_lines: tuple[tuple[re.Pattern[str], PlainLineReader], ...] = ((_PLAIN_CALL, _read_call),)
    """The lines read in one step (``_parse_plain_line``): a pattern at the
    op's first token and the reader that builds its op."""

    def __init__(self, ctx: Context, text: str | bytes, name: str) -> None:
        super().__init__(ctx, "", name)
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        # The lexer workaround: xDSL's Parser builds its MLIRLexer in
        # __init__ with no way to pass another, so the state is replaced.
        self._parser_state = ParserState(LinearLexer(Input(text, name)))
        # Each use of a not-yet-defined value: its name and where it is written.
        self._forward_uses: dict[ForwardDeclaredValue, tuple[str, Span]] = {}
        self._first_forward_use: dict[str, Span] = {}
        # Where each op starts: the dominance check's fallback location.
        self._op_starts: dict[Operation, Span] = {}
        self._types_by_spelling: dict[str, TypeAttribute] = {}
        # Never handed out: the parser gets a copy (callers take entries out).
        self._dictionaries_by_spelling: dict[str, dict[str, Attribute]] = {}
        if ctx.get_optional_op("func.call") is not func.CallOp:
            # The readers build upstream's ops: not for another `func.call`.
            self.plain_lines = tuple(line for line in self.plain_lines if line[1] is not _read_call)

    def parse_optional_type(self) -> TypeAttribute | None:
        """Each spelling of a plain shaped type or a ``!memory.storage`` is parsed once.

        Upstream (xDSL 0.74): every use of ``tensor<1x64xf32>`` runs the
        type grammar again, a tenth of the time a large program takes to
        parse (``!memory.storage<256>``, a dialect type, goes through
        xDSL's dialect-type path: 8% of parsing a planned program). Types
        are immutable values, so the one parsed first stands for every
        later spelling of the same text. Waits for: nothing; it is a
        cache, not a fix.
        """
        return self._once_per_spelling(
            _SPELLED_ONCE.get(self._current_token.kind),
            self._types_by_spelling,
            super().parse_optional_type,
        )

    def parse_optional_dictionary_attr_dict(self) -> dict[str, Attribute]:
        """Each spelling of a flat attribute dictionary is parsed once.

        Upstream (xDSL 0.74): ``{memory.inplace_of = 0 : i64}`` on every
        tensor of a planned program runs the attribute grammar again, a
        seventh of the time the program takes to parse. A dictionary
        without nested braces, strings or aliases (``#``, ``!``) means the
        same wherever it is written: the one parsed first stands for later
        spellings of the same text. Only a dictionary that parsed is kept.
        Waits for: nothing; a cache.
        """
        pattern = _FLAT_DICTIONARY if self._current_token.kind is MLIRTokenKind.L_BRACE else None
        parsed = self._once_per_spelling(
            pattern,
            self._dictionaries_by_spelling,
            super().parse_optional_dictionary_attr_dict,
        )
        assert parsed is not None  # no dictionary parses as {}
        return dict(parsed)

    def _once_per_spelling(
        self,
        pattern: re.Pattern[str] | None,
        kept: dict[str, _Parsed],
        parse: Callable[[], _Parsed | None],
    ) -> _Parsed | None:
        """``parse()``, or, where ``pattern`` matches at the current token,
        what it gave for the same text before (the text is skipped)."""
        token = self._current_token
        found = (
            None if pattern is None else pattern.match(token.span.input.content, token.span.start)
        )
        if found is None:
            return parse()
        text = found.group()
        known = kept.get(text)
        if known is not None:
            lexer = self._parser_state.lexer
            lexer.pos = found.end()
            self._parser_state.current_token = lexer.lex()
            return known
        parsed = parse()
        if parsed is not None and self._current_token.span.start >= found.end():
            kept[text] = parsed
        return parsed

    def resolve_operand(self, operand: Any, type: Attribute) -> Any:
        # Records forward uses for the undefined-value and dominance workarounds.
        value = super().resolve_operand(operand, type)
        if isinstance(value, ForwardDeclaredValue) and value not in self._forward_uses:
            self._forward_uses[value] = (operand.span.text[1:], operand.span)
            self._first_forward_use.setdefault(operand.span.text[1:], operand.span)
        return value

    def parse_operation(self) -> Operation:
        """Upstream (xDSL 0.74): an attribute or op that rejects what was
        parsed raises ``ValueError`` / ``VerifyException`` / ``OverflowError``
        (``arith.constant 99999999999999999999 : i64``), and some custom op
        parsers index into what they parsed without checking it (a linalg
        named op with no operands: ``IndexError``). Here each is a
        ``ParseError`` where the op starts. Waits for: range checks in the
        attribute parsers and custom parsers that raise ``ParseError``."""
        start = self._current_token.span
        plain = self._parse_plain_line(start)
        if plain is not None:
            self._op_starts[plain] = start
            return plain
        try:
            op = super().parse_operation()
        except (ParseError, RecursionError):
            raise
        except (ValueError, VerifyException) as error:
            raise ParseError(start, reword_value_error(error)) from None
        except OverflowError:
            raise ParseError(start, "a float literal does not fit in its type") from None
        except Exception as error:  # noqa: BLE001 - xDSL's custom op parsers
            found = _OP_NAME.match(str(start.input.content), start.start)
            name = found.group(1).strip('"') if found else start.text
            raise ParseError(
                start, f"malformed '{name}' op ({type(error).__name__}: {error})"
            ) from None
        self._op_starts[op] = start
        return op

    def _parse_plain_line(self, start: Span) -> Operation | None:
        """The op whose line starts at ``start`` read in one step, or None,
        having read nothing, when no ``plain_lines`` reader takes the line.

        Upstream (xDSL 0.74): an op goes through the lexer token by token
        and the declarative format's generic parser: two thirds of the time
        a program of kernel calls (what the importers write) or a planned
        program takes to parse. A reader builds the op the format builds
        (the same operands, resolved as the format resolves them, forward
        references included; result types, properties, attributes); its
        types and dictionary come from the spelling caches, so a line with
        one not seen before takes upstream's path, which fills them. So
        does any other form: a comment or location on the line, a result
        tuple, an operand ``%x#1``, a type outside the caches. Waits for:
        nothing; a fast path.
        """
        content = start.input.content
        for pattern, read in self.plain_lines:
            found = pattern.match(content, start.start)
            if found is None:
                continue
            op = read(self, found)
            if op is None:
                return None
            lexer = self._parser_state.lexer
            lexer.pos = found.end()
            self._parser_state.current_token = lexer.lex()
            result = found.group("result") if "result" in pattern.groupindex else None
            if result is not None:
                span = Span(found.start("result"), found.end("result"), start.input)
                self._register_ssa_definition(result[1:], op.results, span)
            if (location := self.parse_optional_location()) is not None:
                op.location = location
            return op
        return None

    def spelled_type(self, spelling: str) -> Attribute | None:
        """The type ``spelling`` stands for if it was parsed before
        (``parse_optional_type``), else None."""
        return self._types_by_spelling.get(spelling)

    def spelled_types(self, text: str) -> list[Attribute] | None:
        """The types of a comma-separated list, each a spelling parsed
        before; None if one is not."""
        text = text.strip()
        if not text:
            return []
        types = [self._types_by_spelling.get(spelling) for spelling in _LIST_SEPARATOR.split(text)]
        return None if None in types else cast("list[Attribute]", types)

    def spelled_dictionary(
        self, text: str | None, reserved: Container[str]
    ) -> dict[str, Attribute] | None:
        """The attributes of a flat dictionary parsed before (none when
        ``text`` is None); None if it was not, or names a ``reserved`` key."""
        if text is None:
            return {}
        known = self._dictionaries_by_spelling.get(text)
        if known is None or any(name in reserved for name in known):
            return None
        return dict(known)

    def value_names(self, found: re.Match[str], group: str) -> list[Span]:
        """Where each value named in ``found``'s ``group`` (a
        ``VALUE_NAME_LIST``; none if it did not match) is spelled."""
        if found.group(group) is None:
            return []
        source = self._parser_state.lexer.input
        return [
            Span(name.start(), name.end(), source)
            for name in _VALUE_NAMES.finditer(source.content, found.start(group), found.end(group))
        ]

    def resolve_values(self, names: Sequence[Span], types: Sequence[Attribute]) -> list[SSAValue]:
        """The values ``names`` spell, resolved with ``types`` as the format
        resolves operands (forward uses, type mismatches). Check the counts
        first: a mismatch is upstream's to report, and a resolved name may
        have been declared forward."""
        return [
            self.resolve_operand(UnresolvedOperand(name, 0), type)
            for name, type in zip(names, types, strict=True)
        ]

    def _parse_block(self) -> Block:
        """Upstream (xDSL 0.74 ``Parser._parse_block``): a label defined
        twice after a forward reference (``cf.br ^bb1`` ... ``^bb1:`` ...
        ``^bb1:``) raises ``KeyError: 'bb1'``, because defining a
        forward-referenced block does not record its span. Waits for: the
        span recorded when a forward-referenced block is defined."""
        token = self._current_token
        if token.kind is MLIRTokenKind.CARET_IDENT:
            name = token.text[1:]
            known = self.blocks.get(name)
            if known is not None and name not in self.forward_block_references:
                raise ParseError(token.span, f"block ^{name} defined twice")
        return super()._parse_block()

    def parse_dense_int_or_fp_elements_attr(self, type: Any) -> Any:
        """Upstream (xDSL 0.74): a ``dense<...>`` element too large for its
        type raises ``ValueError``. Here it is a ``ParseError`` under the
        literal. Waits for: a range check in the dense attribute parser."""
        start = self._current_token.span
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except ValueError as error:
            message = reword_value_error(error)
            end = self._current_token.span.start
            span = Span(start.start, max(start.end, end), start.input)
            literal = re.match(r"integer (-?\d+) ", message)
            if literal is not None:
                found = re.compile(rf"(?<![\w.]){re.escape(literal.group(1))}(?![\w.])").search(
                    str(start.input.content), start.start, end
                )
                if found is not None:
                    span = Span(found.start(), found.end(), start.input)
            raise ParseError(span, message) from None

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """Upstream (xDSL 0.74): "values used but not defined" points at the
        end of the input (here: at the first use); an op whose operand is
        defined inside the op's own region keeps a ``ForwardDeclaredValue``
        operand (custom parsers build the op after its regions), which
        verification later trips on with ``ValueError: Forward declared
        values do not have an owner``; and no use is checked against where
        its value is defined (``_check_dominance``). Waits for: the error at
        the use, forward references replaced (or reported) when the op is
        created, and a dominance check in the verifier."""
        try:
            module = super().parse_module(allow_implicit_module)
        except ParseError as error:
            if not error.msg.startswith("values used but not defined"):
                raise
            name, span = next(iter(self._forward_uses.values()))
            raise ParseError(span, f"use of undefined value %{name}") from None
        for op in module.walk():
            for operand in op.operands:
                if isinstance(operand, ForwardDeclaredValue):
                    name, span = self._forward_uses[operand]
                    raise ParseError(span, f"operand %{name} does not dominate its use")
        self._check_dominance(module)
        return module

    def _check_dominance(self, module: ModuleOp) -> None:
        """Every operand is defined in a block enclosing its use, before it.

        xDSL 0.74 checks neither: a use written above its definition, or
        outside the region that defines it, parses as a forward reference
        and verifies. Blocks of one CFG region are not ordered here (that
        needs a dominator tree), nor ops of a graph region (a module body).
        """
        order: dict[Block, dict[Operation, int]] = {}
        for op in module.walk():
            for operand in op.operands:
                owner = operand.owner
                block = owner if isinstance(owner, Block) else owner.parent_block()
                if block is None:
                    continue
                region = block.parent_region()
                user: Operation | None = op
                while user is not None and user.parent_region() is not region:
                    user = user.parent_op()
                visible = user is not None
                if (
                    user is not None
                    and user.parent_block() is block
                    and isinstance(owner, Operation)
                    and not isinstance(block.parent_op(), ModuleOp)  # a graph region
                ):
                    index = order.get(block)
                    if index is None:  # once per block: the walk stays linear
                        index = order[block] = {o: i for i, o in enumerate(block.ops)}
                    visible = index[owner] < index[user]
                if not visible:
                    name = operand.name_hint or "value"
                    span = self._first_forward_use.get(name, self._op_starts.get(op))
                    if span is None:
                        continue
                    raise ParseError(span, f"operand %{name} does not dominate its use")


@dataclass(frozen=True)
class DistinctNameMLIRTarget(MLIRTarget):
    """``memplan-opt``'s ``mlir`` output through ``DistinctNamePrinter``."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:  # xDSL's colour printer: a terminal, not a file
            super().emit(ctx, module, output)
            return
        printer = DistinctNamePrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)
