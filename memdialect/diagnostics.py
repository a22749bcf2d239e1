"""Where a diagnostic points: the op it is about and notes on related IR.

Verifiers and passes raise xDSL's own exceptions (``VerifyException``,
``PassFailedException``) so that callers keep catching what they always
caught; ``at_op`` attaches the op the message is about and ``(ir, note)``
pairs for the related ops or values (the first kill of a value killed twice,
the other storage of an overlap). Drivers (``memplan-opt``, ``memplan-run``)
turn that into mlir-opt's form::

    file.mlir:12:3: error: %r0 is killed twice on one path
      memory.kill %r0 : memref<4xf32>
      ^
    file.mlir:11:3: note: first kill here
      memory.kill %r0 : memref<4xf32>
      ^

Example::

    raise at_op(VerifyException(f"{name} is killed twice on one path"), second,
                (first, "first kill here"))
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, NoReturn, TypeVar

from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

ErrorT = TypeVar("ErrorT", bound=BaseException)

IRLocus = Operation | SSAValue
"""What a note may point at: an op, or a value (shown at its definition)."""

_OP = "memplan_op"
_NOTES = "memplan_notes"


def at_op(error: ErrorT, op: Operation, *notes: tuple[IRLocus, str]) -> ErrorT:
    """``error`` pointing at ``op``, with ``notes`` on related IR; returned for ``raise``."""
    setattr(error, _OP, op)
    setattr(error, _NOTES, notes)
    return error


def fail_pass(op: Operation, message: str) -> NoReturn:
    """Fail the running pass with ``message``, pointing at ``op`` (``emit_error``
    also attaches the module with ``op`` marked, shown with ``--debug``)."""
    op.emit_error(message, at_op(PassFailedException(message), op))


def error_op(error: BaseException) -> Operation | None:
    """The op ``at_op`` attached to ``error``, if any."""
    op = getattr(error, _OP, None)
    return op if isinstance(op, Operation) else None


def error_notes(error: BaseException) -> tuple[tuple[IRLocus, str], ...]:
    """The notes ``at_op`` attached to ``error`` (empty if none)."""
    return getattr(error, _NOTES, ())


def defining_op(locus: IRLocus) -> Operation | None:
    """The op a note on ``locus`` is shown at: the op itself, a result's
    producer, or the op owning a block argument's block."""
    if isinstance(locus, Operation):
        return locus
    if isinstance(locus, BlockArgument):
        block: Block = locus.block
        return block.parent_op()
    owner = locus.owner
    return owner if isinstance(owner, Operation) else None


Severity = Literal["remark", "warning"]
RemarkHandler = Callable[[Operation, str, Severity], None]
"""Shows a remark or warning about an op: ``(op, message, severity)``."""

_remark_handlers: list[RemarkHandler] = []


def emit_remark(op: Operation, message: str) -> None:
    """Tell the user something about ``op`` that is not an error (mlir-opt's
    ``remark:``). A driver that knows where ops came from installs a handler
    (``remark_handler``) that prints ``file:line:col: remark: ...``; without
    one the remark goes to stderr as ``remark: message``."""
    _emit(op, message, "remark")


def emit_warning(op: Operation, message: str) -> None:
    """Tell the user that something they asked for did nothing or may not be
    what they meant (mlir-opt's ``warning:``); shown as ``emit_remark`` shows
    a remark. The run still succeeds."""
    _emit(op, message, "warning")


def _emit(op: Operation, message: str, severity: Severity) -> None:
    if _remark_handlers:
        _remark_handlers[-1](op, message, severity)
    else:
        print(f"{severity}: {message}", file=sys.stderr)


@contextmanager
def remark_handler(handler: RemarkHandler) -> Iterator[None]:
    """Route ``emit_remark`` and ``emit_warning`` to ``handler`` while the body runs."""
    _remark_handlers.append(handler)
    try:
        yield
    finally:
        _remark_handlers.pop()
