"""``WorkaroundParser``: xDSL 0.74's parser with memplan's fixes for its bugs.

Each override is one fix, naming the xDSL behaviour it covers and the
upstream change it waits for (see the package).
"""

from __future__ import annotations

import re
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation
from xdsl.parser import Parser
from xdsl.parser.core import ForwardDeclaredValue
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

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


class WorkaroundParser(Parser):
    """xDSL's parser with memplan's fixes for xDSL 0.74.

    Each override below is one fix: a literal too large for its type, an op
    parser failing on what it parsed, a block label defined twice, a use of
    an undefined value reported at the end of the input, an operand defined
    in the region of its own op, a use its definition does not reach, and a
    string left open on its line (``LinearLexer``).
    """

    def __init__(self, ctx: Context, text: str | bytes, name: str) -> None:
        super().__init__(ctx, "", name)
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        # The lexer fix: xDSL's Parser builds its MLIRLexer in __init__ with
        # no way to pass another, so the state is replaced.
        self._parser_state = ParserState(LinearLexer(Input(text, name)))
        # Each use of a not-yet-defined value: its name and where it is written.
        self._forward_uses: dict[ForwardDeclaredValue, tuple[str, Span]] = {}
        self._first_forward_use: dict[str, Span] = {}
        # Where each op starts: the dominance check's fallback location.
        self._op_starts: dict[Operation, Span] = {}

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
