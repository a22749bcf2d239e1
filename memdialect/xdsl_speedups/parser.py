"""``FastParser``: memplan's parser with its speed paths (see the package).

It reads the lines ``plain_syntax`` knows in one step and parses each
spelling of a plain shaped type, a ``!memory.storage`` type or a flat
attribute dictionary once. Every op it builds, and every error it reports,
is the one ``WorkaroundParser`` (xDSL's parser with memplan's fixes)
builds or reports for the same text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from typing import TypeVar, cast

from xdsl.context import Context
from xdsl.ir import Attribute, Operation, SSAValue, TypeAttribute
from xdsl.parser.core import UnresolvedOperand
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from memplan.dialect.xdsl_speedups.plain_syntax import (
    FLAT_DICTIONARY,
    PLAIN_SYNTAX,
    VALUE_NAME,
    PlainSyntax,
)
from memplan.dialect.xdsl_workarounds.parser import WorkaroundParser

# A shaped type with a plain element type, e.g. `tensor<1x64xf32>`: the
# spelling `FastParser.parse_optional_type` keeps parsed types under.
_SHAPED_TYPE = re.compile(r"(?:tensor|memref|vector)<(?:[0-9?]+x)*[A-Za-z][A-Za-z0-9]*>")
_STORAGE_TYPE = re.compile(r"!memory\.storage<(?:[0-9]+|\?)>")
_Parsed = TypeVar("_Parsed")
# The types parsed once per spelling, by the kind of their first token.
_SPELLED_ONCE = {
    MLIRTokenKind.BARE_IDENT: _SHAPED_TYPE,
    MLIRTokenKind.EXCLAMATION_IDENT: _STORAGE_TYPE,
}
_FLAT_DICTIONARY = re.compile(FLAT_DICTIONARY)
_VALUE_NAMES = re.compile(VALUE_NAME)
_LIST_SEPARATOR = re.compile(r"[ \t]*,[ \t]*")


class FastParser(WorkaroundParser):
    """``WorkaroundParser`` with the speed paths: whole lines read in one
    step (``plain_lines``) and types and flat dictionaries parsed once per
    spelling."""

    def __init__(self, ctx: Context, text: str | bytes, name: str) -> None:
        super().__init__(ctx, text, name)
        self._types_by_spelling: dict[str, TypeAttribute] = {}
        # Never handed out: the parser gets a copy (callers take entries out).
        self._dictionaries_by_spelling: dict[str, dict[str, Attribute]] = {}
        # A reader builds memplan's (or upstream's) op: only where the
        # context holds that class under the op's name.
        self.plain_lines: tuple[tuple[PlainSyntax, type[Operation]], ...] = tuple(
            (syntax, syntax.op_class)
            for syntax in PLAIN_SYNTAX
            if syntax.op_class is not None
            and ctx.get_optional_op(syntax.op_class.name) is syntax.op_class
        )

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

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        plain = self._parse_plain_line(start)
        if plain is not None:
            self._op_starts[plain] = start
            return plain
        return super().parse_operation()

    def _parse_plain_line(self, start: Span) -> Operation | None:
        """The op whose line starts at ``start`` read in one step, or None,
        having read nothing, when no ``plain_lines`` reader takes the line
        (``memplan.dialect.xdsl_speedups.plain_syntax``).

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
        for syntax, op_class in self.plain_lines:
            pattern = syntax.pattern
            found = pattern.match(content, start.start)
            if found is None:
                continue
            op = syntax.read(self, found, op_class)
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
