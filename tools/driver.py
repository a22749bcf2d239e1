"""The drivers' library: what memplan's tools share (a library, not a tool).

``memplan-opt`` and ``memplan-run`` read the same pass pipelines and report
the same diagnostics through this module. (Every tool's argument parser is
``memplan.tools.arguments``, which loads no xDSL.)

* Pipelines: ``normalize_pipeline`` accepts option values written as MLIR
  does, bare up to the next space or ``}`` (``output=out/plan.json``), by
  quoting them for xDSL's parser; ``check_pipeline`` rejects unknown passes
  (with "did you mean"), unknown options and ill-typed values with messages
  such as ``usmp: algorithm must be one of greedy-by-size, ..., auto (got
  'fast')``; ``build_pipeline`` does both and returns the ``PassPipeline``.
* Locations: ``LocatingParser`` records where every op starts, so that a
  verifier or pass error about an op prints as mlir-opt's
  ``file:line:col: error: ...``, the op's line and a caret, then ``note:``
  lines for related ops (``memplan.dialect.diagnostics``). It parses with
  ``memplan.tools.xdsl_compat.CompatParser``, which turns inputs xDSL
  0.74's parser mishandles into parse errors.
* Progress: ``Progress`` shows the running step on a terminal's stderr when
  work takes more than ``PROGRESS_DELAY`` seconds; it is silent when stderr
  is not a terminal.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
import threading
import time
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from io import StringIO
from typing import Any, TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, ParseError, VerifyException
from xdsl.utils.lexer import Span

from memplan.dialect.diagnostics import IRLocus, defining_op, error_notes, error_op
from memplan.passes.output_file import OutputFileError, check_output_path
from memplan.passes.pass_options import option_problem, option_values_text
from memplan.tools.memory_lines import MEMORY_LINES
from memplan.tools.xdsl_compat import CompatParser

PassRegistry = Mapping[str, Callable[[], type[ModulePass]]]


class CommandLineError(Exception):
    """A user error with no location: bad command line, pipeline or file.

    ``str(error)`` is the message; tools print it as ``<prog>: error: ...``.
    """


# ---------------------------------------------------------------------------
# Pipelines
# ---------------------------------------------------------------------------

_PLAIN_VALUE = re.compile(
    r"-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?"  # a number
    r"|[A-Za-z_][A-Za-z0-9_-]*"  # a word: exact, greedy-by-size, true
    r"|\[[^\]]*\]"  # a list
)
"""Option values xDSL's pipeline parser reads unquoted."""


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_option_values(options: str) -> str:
    """``options`` (the inside of ``{...}``) with every bare value that xDSL would
    reject quoted: ``format=json output=out/plan.json`` becomes ``format=json
    output="out/plan.json"``. Quoted values, numbers, words and lists are kept."""
    out: list[str] = []
    i, n = 0, len(options)
    while i < n:
        if options[i].isspace():
            out.append(options[i])
            i += 1
            continue
        j = i
        while j < n and not options[j].isspace() and options[j] not in '="':
            j += 1
        if j < n and options[j] == "=":
            key, j = options[i:j], j + 1
            if j < n and options[j] == '"':
                k = j + 1
                while k < n and options[k] != '"':
                    k += 2 if options[k] == "\\" else 1
                out.append(options[i : k + 1])
                i = k + 1
                continue
            k = j
            while k < n and not options[k].isspace():
                k += 1
            value = options[j:k]
            if value and not _PLAIN_VALUE.fullmatch(value):
                value = _quoted(value)
            out.append(f"{key}={value}")
            i = k
            continue
        j = max(j, i + 1)
        out.append(options[i:j])
        i = j
    return "".join(out)


def _closing_brace(text: str, start: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``start`` (quotes respected), or -1."""
    i = start + 1
    while i < len(text):
        if text[i] == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text[i] == "}":
            return i
        i += 1
    return -1


def normalize_pipeline(pipeline: str) -> str:
    """``pipeline`` with the values inside each ``{...}`` quoted as xDSL needs
    (``quote_option_values``). An unbalanced ``{`` is left for xDSL to report."""
    out: list[str] = []
    i = 0
    while i < len(pipeline):
        if pipeline[i] == "{":
            end = _closing_brace(pipeline, i)
            if end < 0:
                out.append(pipeline[i:])
                break
            out.append("{" + quote_option_values(pipeline[i + 1 : end]) + "}")
            i = end + 1
            continue
        out.append(pipeline[i])
        i += 1
    return "".join(out)


def describe_spec_syntax_error(error: ArgSpecParseError) -> str:
    """Reword xDSL's pipeline syntax error as ``... at column N: <message>``
    plus the pipeline line and a caret.

    xDSL keeps only the rendered text: a header, ``pass-pipeline:1:<col>``,
    the pipeline, the caret line and the indented message.
    """
    lines = str(error).rstrip("\n").split("\n")
    location = lines[1].rpartition(":") if len(lines) == 5 else ("", "", "")
    if not location[0].startswith("pass-pipeline") or not location[2].isdigit():
        return " ".join(line.strip() for line in lines)
    message = lines[4].strip()
    message = message[:1].lower() + message[1:]
    return f"malformed pass pipeline at column {location[2]}: {message}\n{lines[2]}\n{lines[3]}"


def _option_hints(pass_class: type[ModulePass]) -> dict[str, Any]:
    return typing.get_type_hints(pass_class)


def check_pass_options(pass_class: type[ModulePass], spec: ArgSpec) -> None:
    """Raise ``CommandLineError`` for an unknown option of ``spec`` or a value of
    the wrong type, naming the pass, the option and what it takes."""
    fields = {field.name: field for field in dataclasses.fields(pass_class)}
    hints = _option_hints(pass_class)
    for raw_name, values in spec.parameters.items():
        name = raw_name.replace("-", "_")
        shown = name.replace("_", "-")
        if name not in fields:
            options = [f.replace("_", "-") for f in fields]
            message = f"{spec.name}: unknown option '{raw_name}'"
            close = difflib.get_close_matches(shown, options, n=1)
            if close:
                message += f" (did you mean '{close[0]}'?)"
            elif options:
                message += f"; its options are {', '.join(options)}"
            else:
                message += "; it takes no options"
            raise CommandLineError(message)
        if len(values) != 1:
            raise CommandLineError(f"{spec.name}: {shown} takes one value, got {len(values)}")
        problem = option_problem(hints[name], values[0])
        if problem is not None:
            raise CommandLineError(f"{spec.name}: {shown} {problem}")


class _OutputOptionError(CommandLineError):
    """An ``output=`` path that cannot be written (not about the pipeline's text)."""


def _check_output_option(pass_instance: ModulePass) -> None:
    """A pass's ``output=`` path (``plan-report``) must be writable before any
    pass runs: a missing directory is an error now, not after the planning."""
    path = getattr(pass_instance, "output", None)
    if isinstance(path, str):
        try:
            check_output_path(path)
        except OutputFileError as error:
            # As the pass words it when it writes, only before the work.
            raise _OutputOptionError(
                f"{pass_instance.name}: cannot write '{path}': {error.reason}"
            ) from None


def check_pipeline(
    pipeline: str, available: PassRegistry, origin: str | None = None
) -> list[ArgSpec]:
    """The passes of ``pipeline`` (already normalized); ``CommandLineError``
    if it would not build or a pass's ``output=`` path is not writable. ``origin`` (e.g. ``--usmp=...``) prefixes messages."""
    where = f"in {origin}: " if origin else ""
    try:
        specs = list(parse_pipeline(pipeline))
    except ArgSpecParseError as error:
        raise CommandLineError(where + describe_spec_syntax_error(error)) from None
    for spec in specs:
        if spec.name not in available:
            message = f"unknown pass '{spec.name}'"
            close = difflib.get_close_matches(spec.name, list(available), n=1)
            if close:
                message += f" (did you mean '{close[0]}'?)"
            raise CommandLineError(where + message)
        pass_class = available[spec.name]()
        try:
            check_pass_options(pass_class, spec)
            pass_instance = pass_class.from_pass_spec(spec)
            _check_output_option(pass_instance)
        except _OutputOptionError:
            raise
        except CommandLineError as error:
            raise CommandLineError(where + str(error)) from None
        except (ValueError, TypeError) as error:
            message = str(error)
            if not message.startswith(f"{spec.name}: "):  # memplan's passes name themselves
                message = f"invalid options for pass '{spec.name}': {message}"
            raise CommandLineError(where + message) from None
    return specs


def build_pipeline(
    pipeline: str,
    available: PassRegistry,
    callback: PassPipelineCallbackType | None = None,
    origin: str | None = None,
) -> PassPipeline:
    """``pipeline`` (written as on memplan's command lines) as a ``PassPipeline``."""
    normalized = normalize_pipeline(pipeline)
    check_pipeline(normalized, available, origin)
    return PassPipeline.parse_spec(dict(available), normalized, callback)


def pass_options_help(pass_class: type[ModulePass]) -> list[str]:
    """``name=<values> (default D)`` for each option of ``pass_class``."""
    hints = _option_hints(pass_class)
    parts: list[str] = []
    for field in dataclasses.fields(pass_class):
        default = field.default
        if default is dataclasses.MISSING:
            shown_default = "required"
        elif default is None:
            shown_default = "default: none"
        elif isinstance(default, bool):
            shown_default = f"default: {str(default).lower()}"
        else:
            shown_default = f"default: {default}"
        values = option_values_text(hints[field.name])
        parts.append(f"{field.name.replace('_', '-')}={values} ({shown_default})")
    return parts


# ---------------------------------------------------------------------------
# Locations
# ---------------------------------------------------------------------------


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


class LocatingParser(CompatParser):
    """xDSL's parser with memplan's workarounds (``memplan.tools.xdsl_compat``),
    recording where each op starts (``op_spans``) for ``SourceMap``, and
    reading the ``memory`` dialect's common lines in one step
    (``memplan.tools.memory_lines``)."""

    plain_lines = (*CompatParser.plain_lines, *MEMORY_LINES)

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


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------

PROGRESS_DELAY = float(os.environ.get("MEMPLAN_PROGRESS_DELAY", "2.0"))
"""Seconds of work before progress shows (``MEMPLAN_PROGRESS_DELAY`` sets it)."""


class Progress:
    """A one-line status on a terminal's stderr for work that takes long:
    ``memplan-opt: pass 3/4, usmp, 4.2 s``. Shown only when ``stream`` is a
    terminal and the work has run ``delay`` seconds; erased when done."""

    def __init__(
        self,
        prog: str,
        stream: TextIO | None = None,
        delay: float | None = None,
        enabled: bool | None = None,
    ):
        self.prog = prog
        self._enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.delay = PROGRESS_DELAY if delay is None else delay
        self.step = "starting"
        self.start = time.monotonic()
        self._shown = False
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        """As asked, else whether ``stream`` is a terminal."""
        if self._enabled is not None:
            return self._enabled
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def set(self, step: str) -> None:
        """Name the step now running (shown at once once the delay is over)."""
        self.step = step
        if self._thread is not None and time.monotonic() - self.start >= self.delay:
            self._render()

    def _render(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            elapsed = time.monotonic() - self.start
            self.stream.write(f"\r\x1b[K{self.prog}: {self.step}, {elapsed:.1f} s")
            self.stream.flush()
            self._shown = True

    def _run(self) -> None:
        if self._done.wait(self.delay):
            return
        while not self._done.is_set():
            self._render()
            self._done.wait(0.25)

    @contextmanager
    def running(self) -> Iterator[Progress]:
        """Show progress while the body runs (if enabled)."""
        # Fresh state: one Progress serves every chunk of a split input.
        self.start = time.monotonic()
        self._done = threading.Event()
        self._shown = False
        self._thread = None
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        try:
            yield self
        finally:
            with self._lock:
                self._done.set()
            if self._thread is not None:
                self._thread.join()
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
