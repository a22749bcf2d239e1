"""Where an op is in its source, so that diagnostics print as mlir-opt's.

``LocatingParser`` records where every op starts, so that a verifier or pass
error about an op prints as mlir-opt's ``file:line:col: error: ...``, the
op's line and a caret, then ``note:`` lines for related ops
(``memplan.dialect.diagnostics``); ``SourceMap`` prints them. It parses with
``memplan.dialect.parser.MemplanParser``, which turns inputs xDSL 0.74's
parser mishandles into parse errors. `memplan-opt` and `memplan-run` report
through this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from memplan.dialect.diagnostics import IRLocus, defining_op, error_notes, error_op
from memplan.dialect.parser import MemplanParser


def describe_parse_error(error: ParseError) -> str:
    """mlir-opt's form of a parse error: ``path:line:col: error: message``, the
    line and carets, then any notes xDSL attached."""
    from xdsl.utils.exceptions import MultipleSpansParseError

    location = error.span.get_location()
    # print_with_context starts with the bare location; we put it first.
    context = error.span.print_with_context().split("\n", 1)[1]
    text = f"{location}: error: {error.msg}\n{context}"
    if isinstance(error, MultipleSpansParseError):
        if error.ref_text is not None:
            text += error.ref_text + "\n"
        for span, note in error.refs:
            text += span.print_with_context(note)
    return text.rstrip("\n")


class LocatingParser(MemplanParser):
    """memplan's parser (``memplan.dialect.parser``), recording where each
    op starts (``op_spans``) for ``SourceMap``."""

    def __init__(self, ctx: Context, text: str | bytes, name: str) -> None:
        super().__init__(ctx, text, name)
        self.op_spans: dict[Operation, Span] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self.op_spans[op] = start
        return op


def parse_located(
    ctx: Context, text: str | bytes, name: str, *, implicit_module: bool = True
) -> tuple[ModuleOp, dict[Operation, Span]]:
    """Parse ``text`` into a module and where each of its ops starts."""
    parser = LocatingParser(ctx, text, name)
    module = parser.parse_module(implicit_module)
    return module, parser.op_spans


def failing_op(module: ModuleOp) -> tuple[Operation, Exception] | None:
    """The op whose own verifier fails first in xDSL's order (nested ops before
    their parent), with its exception; None if every op verifies.

    xDSL's ``verify`` keeps only the message (and a dump of the module), so a
    driver that wants the op's location asks each op again, once, on failure.
    """

    def visit(op: Operation) -> tuple[Operation, Exception] | None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    found = visit(child)
                    if found is not None:
                        return found
        try:
            op.verify(verify_nested_ops=False)
        except Exception as error:  # noqa: BLE001 - any verifier failure
            return op, error
        return None

    return visit(module)


def _op_line(op: Operation) -> str:
    """``op`` printed generically on one line (regions elided)."""
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(op)
    first = stream.getvalue().split("\n", 1)[0]
    return first + (" ...})" if op.regions and first.rstrip().endswith("({") else "")


def _context(span: Span, line_offset: int) -> tuple[str, list[str]]:
    """``path:line:col`` and the source line with a caret under ``span``."""
    located = dataclasses.replace(span, line_offset=line_offset)
    location = located.get_location()
    content = span.input.content
    begin = span.input.get_start_of_line(span.start)
    end = span.input.get_end_of_line(span.start)
    text = content[begin:end] if isinstance(content, str) else content[begin:end].decode()
    return str(location), [text, " " * (span.start - begin) + "^"]


@dataclasses.dataclass
class SourceMap:
    """Where the ops of one parsed chunk came from."""

    op_spans: dict[Operation, Span] = dataclasses.field(default_factory=dict[Operation, Span])
    line_offset: int = 0

    def diagnostic(
        self,
        prog: str,
        message: str,
        op: Operation | None,
        notes: Sequence[tuple[IRLocus, str]] = (),
        severity: str = "error",
    ) -> str:
        """mlir-opt's form: ``path:line:col: error: message``, the op's line and a
        caret, then ``path:line:col: note: ...`` per note. An op created by a
        pass (no source) is shown printed instead. ``severity`` may be
        ``remark`` for a remark."""
        lines: list[str] = []
        # A message of several lines: the first is the error, the others
        # (details) follow the op's source line.
        head, *details = message.split("\n")
        span = None if op is None else self.op_spans.get(op)
        if span is not None:
            location, context = _context(span, self.line_offset)
            lines += [f"{location}: {severity}: {head}", *context, *details]
        else:
            lines += [f"{prog}: {severity}: {head}", *details]
            if op is not None:
                lines.append(f"note: see current operation: {_op_line(op)}")
        for locus, note in notes:
            note_op = defining_op(locus)
            note_span = None if note_op is None else self.op_spans.get(note_op)
            if note_span is not None:
                location, context = _context(note_span, self.line_offset)
                lines += [f"{location}: note: {note}", *context]
            elif note_op is not None:
                lines.append(f"note: {note}: {_op_line(note_op)}")
            else:
                lines.append(f"note: {note}")
        return "\n".join(lines)

    def describe(self, prog: str, error: BaseException, module: ModuleOp | None) -> str:
        """The diagnostic for a verifier or pass ``error`` on ``module``: at the
        op the error names (``memplan.dialect.diagnostics``), else, for a
        verifier error, at the op that fails verification."""
        op = error_op(error)
        message = str(error)
        if op is None and module is not None and _is_verify_error(error):
            found = failing_op(module)
            if found is not None:
                op, own_error = found
                op = error_op(own_error) or op
                message = str(own_error)
                return self.diagnostic(prog, message, op, error_notes(own_error))
        return self.diagnostic(prog, message, op, error_notes(error))


def _is_verify_error(error: BaseException) -> bool:
    return isinstance(error, VerifyException)
