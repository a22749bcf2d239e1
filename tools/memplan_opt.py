"""``memplan-opt``: xdsl-opt with the ``memory`` dialect and memplan's passes.

Every upstream xDSL dialect and pass stays available (``-p canonicalize``,
``test.op``, ``memref``, ...). On top of that, each memplan pass gets an
MLIR-style flag::

    memplan-opt --manifest-alloc --insert-kills --usmp='algorithm=exact' in.mlir

* Flag passes run first, in command-line order, then the ``-p`` list.
* Options are attached with ``=`` and written as inside ``{}``:
  ``--usmp='algorithm=exact timeout=5'`` is ``usmp{algorithm=exact timeout=5}``.
* Flags must be spelled in full: ``--coal`` is rejected ("abbreviated pass
  flag"), and no other long option may be abbreviated either.

The flags are generated from ``passes.get_all_passes()``, so a pass registered
there is a flag without touching this file. They are taken out of ``argv``
before argparse sees it: an argparse option with an optional value would
swallow the input file (``--coalesce in.mlir``). argparse only lists them in
``--help``, in the "memplan passes" group.

Failures never show a Python traceback. Parse errors print
``<file>:<line>:<col>: error: <message>`` and the offending line; everything
else a user can cause (verifier errors, a pass's ``PassFailedException``,
unknown passes or options, unreadable files, input nested too deeply for the
parser) prints ``memplan-opt: error: <message>``. Both exit with 1. Any other
exception is a bug: ``memplan-opt: internal error: <Type>: <message>``, exit 2,
and the traceback only with ``--debug``. With ``--split-input-file`` every
chunk is processed even after one fails (as in ``mlir-opt``), and the exit
code reports whether any failed. ``--verify-diagnostics`` and
``--parsing-diagnostics`` keep xDSL's behaviour: the diagnostic goes to
stdout and the exit code is 0.

``-o FILE`` is written only when the run succeeds: the output goes to a
temporary file next to FILE, created before the input is parsed (an
unwritable FILE fails at once), that replaces it at the end, so a failed or
interrupted run leaves an existing FILE untouched
(``memplan.passes.output_file``). So are the ``output=`` options of the
pipeline's passes checked before any pass runs (the input file is refused
there), and their files written only when every pass of every chunk
succeeded. Ctrl-C, SIGTERM and SIGHUP
print ``memplan-opt: interrupted`` (``memplan.tools.launch``).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, ClassVar, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Dialect, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import (
    DiagnosticException,
    ParseError,
    PassFailedException,
    ShrinkException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from memplan import passes
from memplan.dialect.diagnostics import Severity, remark_handler
from memplan.dialect.kill_order import ChecksKillOrder, verify_kill_order
from memplan.dialect.printer import MemplanMLIRTarget
from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.arguments import suggest_options
from memplan.tools.locations import LocatingParser, SourceMap, describe_parse_error
from memplan.tools.pipeline import (
    CommandLineError,
    check_pipeline,
    normalize_pipeline,
    pass_options_help,
)
from memplan.tools.progress import Progress
from memplan.tools.version import version_text

PROG = "memplan-opt"
PASS_GROUP_TITLE = "memplan passes"

EXIT_USER_ERROR = 1
"""Bad input, bad command line, or a pass that rejected its input."""
EXIT_INTERNAL_ERROR = 2
"""A bug in memplan or xDSL: an exception nobody raised on purpose."""


class MemplanOptError(Exception):
    """A failure the user caused: bad command line, unreadable file, bad IR.

    ``str(error)`` is the whole diagnostic, without the ``memplan-opt: error:``
    prefix when it has no location of its own.
    """


def _get_memory_dialect() -> Dialect:
    from memplan.dialect import Memory

    return Memory


def _options_part(argv: Sequence[str]) -> Sequence[str]:
    """The arguments before a ``--`` terminator (after it, all are file names)."""
    return argv[: argv.index("--")] if "--" in argv else argv


def pass_summary(pass_class: type[ModulePass]) -> str:
    """The one-line summary of the pass's own docstring (not an inherited one).

    That is the first sentence of the first paragraph, unwrapped: a summary
    too long for one source line is often wrapped onto the next.
    """
    doc = pass_class.__dict__.get("__doc__") or ""
    # @dataclass invents "Name(field: type, ...)" when there is no docstring.
    if doc.startswith(f"{pass_class.__name__}("):
        return ""
    paragraph = inspect.cleandoc(doc).split("\n\n", 1)[0]
    summary = " ".join(paragraph.split())
    sentence_end = re.search(r"\.(?=\s+[A-Z])", summary)
    if sentence_end:
        summary = summary[: sentence_end.end()]
    return summary.replace("``", "`")


def flag_help_text(pass_class: type[ModulePass]) -> str:
    """A pass flag's ``--help`` text: its summary and its options."""
    text = pass_summary(pass_class)
    options = pass_options_help(pass_class)
    if options:
        text += f" Options: {'; '.join(options)}."
    return text


@dataclasses.dataclass(frozen=True)
class FlagPass:
    """A pass requested by a ``--<pass>[=<options>]`` flag."""

    flag: str
    """The argument as written, e.g. ``--usmp=algorithm=exact``."""
    spec: str
    """The pipeline element, e.g. ``usmp{algorithm=exact}``."""


def split_flag_passes(
    argv: Sequence[str], pass_names: Sequence[str]
) -> tuple[list[FlagPass], list[str]]:
    """Take the ``--<pass>[=<options>]`` flags out of ``argv``.

    Returns the flag passes in command-line order and the remaining
    arguments for argparse. Raises ``MemplanOptError`` for an abbreviated
    pass flag and for options given as a separate argument.
    """
    names = set(pass_names)
    flag_passes: list[FlagPass] = []
    rest: list[str] = []
    for position, arg in enumerate(argv):
        if arg == "--":
            rest.extend(argv[position:])
            break
        if not arg.startswith("--"):
            rest.append(arg)
            continue
        name, has_options, options = arg[2:].partition("=")
        if name in names:
            if has_options and options.strip():
                flag_passes.append(FlagPass(arg, f"{name}{{{options}}}"))
            else:
                flag_passes.append(FlagPass(arg, name))
            following = argv[position + 1] if position + 1 < len(argv) else None
            if (
                not has_options
                and following is not None
                and _looks_like_pass_options(following)
                and not os.path.exists(following)
            ):
                raise MemplanOptError(
                    f"options of --{name} must be attached with '=': write --{name}='{following}'"
                )
            continue
        expansions = sorted(n for n in names if n.startswith(name)) if name else []
        if expansions:
            # memplan pass names never start with an xdsl-opt option name
            # (tests/tools/test_driver.py checks it), so this is never a real option.
            suggestion = " or ".join(f"--{n}" for n in expansions)
            raise MemplanOptError(f"abbreviated pass flag --{name}; write {suggestion} in full")
        rest.append(arg)
    return flag_passes, rest


def _looks_like_pass_options(arg: str) -> bool:
    """``algorithm=exact`` or ``'algorithm=exact timeout=5'``: ``key=...``."""
    key, has_value, _ = arg.partition("=")
    return bool(has_value and key and key[0].isalpha()) and all(
        c.isalnum() or c in "-_" for c in key
    )


# The options whose choices a plugin adds to (``memplan.passes.planning.plugins``),
# and the entry-point group that adds them.
_PLUGIN_CHOICES = {"algorithm": "memplan.algorithms", "format": "memplan.report_formats"}


def _with_plugin_choices(text: str) -> str:
    """A pass's generated help (``FLAG_HELP``, memplan's own choices) with
    the names installed plugins add to ``algorithm=`` and ``format=``."""
    from memplan.passes.planning.plugins import entry_point_names

    for option, group in _PLUGIN_CHOICES.items():
        names = entry_point_names(group)
        if names:
            added = "|".join(names)
            text = re.sub(rf"\b({option}=[a-z0-9|-]+) \(default", rf"\1|{added} (default", text)
    return text


class MemplanOptMain(xDSLOptMain):
    """The ``memplan-opt`` driver.

    In-process use (tests)::

        with redirect_stdout(out):
            MemplanOptMain(args=["in.mlir", "--coalesce"]).run()

    ``__init__`` raises ``MemplanOptError`` for a bad command line; ``run``
    reports failing chunks on stderr and returns the exit code. ``main``
    wraps both and turns every exception into a diagnostic.
    """

    version_format: ClassVar[str] = version_text(PROG).replace("{", "{{").replace("}", "}}")

    memplan_passes: dict[str, Callable[[], type[ModulePass]]]
    """memplan's own passes, the ones that get a ``--<pass>`` flag."""
    flag_passes: list[FlagPass]
    """The ``--<pass>`` flags given, in command-line order."""

    def __init__(self, args: Sequence[str] | None = None):
        argv = sys.argv[1:] if args is None else list(args)
        self.memplan_passes = dict(passes.get_all_passes())
        self.flag_passes, rest = split_flag_passes(argv, list(self.memplan_passes))
        options_part = _options_part(rest)
        # Pass summaries import every pass module; only --help shows them.
        self._describe_passes = "-h" in options_part or "--help" in options_part
        self.source = SourceMap()
        self.progress = Progress(PROG)
        super().__init__(description="memplan modular optimizer driver", args=rest)

    # ------------------------------------------------------------------
    # Registration

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        # Installed, the xdsl.universe entry point has registered it already.
        if "memory" not in self.ctx.registered_dialect_names:
            self.ctx.register_dialect("memory", _get_memory_dialect)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in self.memplan_passes.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        # Every value printed under a name of its own (memplan.dialect.printer).
        self.available_targets["mlir"] = lambda: MemplanMLIRTarget

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = PROG
        # Abbreviations could silently pick the wrong option (--verify could
        # be --verify-diagnostics or --verify-plan).
        arg_parser.allow_abbrev = False

        # Exit 1, no usage dump, "did you mean" for a misspelt option.
        def error(message: str) -> NoReturn:
            known = list(arg_parser._option_string_actions)  # pyright: ignore[reportPrivateUsage]
            self._command_line_error(suggest_options(message, known))

        arg_parser.error = error
        arg_parser.add_argument(
            "--debug",
            default=False,
            action="store_true",
            help="Print the Python traceback of errors (for memplan developers)",
        )
        group = arg_parser.add_argument_group(
            PASS_GROUP_TITLE,
            "Each flag runs one memplan pass. Flag passes run first, in "
            "command-line order, then the -p list. Options are attached "
            "with '=' as in --usmp='algorithm=exact timeout=5' "
            "(= -p 'usmp{algorithm=exact timeout=5}').",
        )
        for name, factory in self.memplan_passes.items():
            # Help-only: split_flag_passes consumed these before argparse.
            group.add_argument(
                f"--{name}",
                action="store_true",
                dest=f"memplan_pass_flag_{name}",
                help=self._flag_help(name, factory) if self._describe_passes else None,
            )

    @staticmethod
    def _flag_help(name: str, factory: Callable[[], type[ModulePass]]) -> str:
        # memplan's own passes from the table docs/gen_passes.py writes
        # (importing every pass would double --help's start-up); another
        # registered pass from its class.
        from memplan.passes.flag_help import FLAG_HELP

        text = FLAG_HELP.get(name)
        if text is None:
            try:
                text = flag_help_text(factory())
            except Exception as error:  # a broken pass must not break --help
                return f"(cannot load: {type(error).__name__}: {error})"
        else:
            text = _with_plugin_choices(text)
        # argparse %-formats help strings.
        return text.replace("%", "%%")

    @staticmethod
    def _command_line_error(message: str) -> NoReturn:
        raise MemplanOptError(f"{message} (see {PROG} --help)")

    # ------------------------------------------------------------------
    # Pipeline

    def setup_pipeline(self) -> None:
        """Flag passes first, in command-line order, then the ``-p`` list.

        Option values may be bare, as in MLIR (``output=out/plan.json``):
        ``normalize_pipeline`` quotes them for xDSL. Each part is checked on
        its own so that a diagnostic names the flag it is about.
        """
        specs: list[str] = []
        parts = [(flag_pass.spec, flag_pass.flag) for flag_pass in self.flag_passes]
        if self.args.passes:
            parts.append((self.args.passes, f"-p '{self.args.passes}'"))
        for spec, origin in parts:
            normalized = normalize_pipeline(spec)
            try:
                check_pipeline(normalized, self.available_passes, origin)
            except CommandLineError as error:
                raise MemplanOptError(str(error)) from None
            specs.append(normalized)
        self.args.passes = ",".join(specs)
        super().setup_pipeline()
        self._refuse_input_as_report_output()
        # Between passes: verify (xDSL's verifier, then the kill order) and
        # name the next pass for the progress line.
        verify = self.pipeline.callback

        total = len(self.pipeline.passes)
        step = 0

        def callback(
            previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
        ) -> None:
            nonlocal step
            if verify is not None:
                verify(previous, module, next_pass)
            checked = isinstance(previous, ChecksKillOrder) and previous.kill_order_checked
            if not self.args.disable_verify and not checked:
                # The path checks of `memory.kill`, once per module (linear);
                # not again right after a pass that ended with them on the
                # module it leaves (verify-plan, plan).
                verify_kill_order(module)
            if next_pass is not None:
                step = 1 if previous is None else step + 1
                self.progress.set(f"pass {step}/{total}, {next_pass.name}")

        self.pipeline = dataclasses.replace(self.pipeline, callback=callback)

    def _refuse_input_as_report_output(self) -> None:
        """A pass's ``output=`` (``plan-report``) that names the input file
        would overwrite the program with its report."""
        source = self.args.input_file
        if source in (None, "-") or not os.path.isfile(source):
            return
        for pass_instance in self.pipeline.passes:
            path = getattr(pass_instance, "output", None)
            if not isinstance(path, str) or not os.path.exists(path):
                continue
            if os.path.samefile(path, source):
                raise MemplanOptError(
                    f"{pass_instance.name}: output '{path}' is the input file; "
                    "the report would overwrite the program"
                )

    # ------------------------------------------------------------------
    # Input and output

    def register_all_frontends(self) -> None:
        """MLIR text is parsed with ``LocatingParser``: the chunk's ``SourceMap``
        lets a verifier or pass error point at the op's line."""
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name())
            self.source.op_spans = parser.op_spans
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def get_input_name(self) -> str:
        if self.args.input_file in (None, "-"):
            return "<stdin>"
        return self.args.input_file

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file in (None, "-"):
            return sys.stdin.buffer, "mlir"
        try:
            return super().get_input_stream()
        except OSError as error:
            raise MemplanOptError(
                f"cannot read input file '{self.args.input_file}': {error.strerror or error}"
            ) from None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        hint = import_hint(self.get_input_name())
        if hint is not None and not self.args.frontend:
            raise MemplanOptError(hint)
        try:
            return super().prepare_input()
        except ValueError as error:  # "Unrecognized file extension 'txt'"
            raise MemplanOptError(f"{error} (use -f mlir)") from None

    def _open_output(self) -> OutputFile:
        """The ``-o`` file (or stdout), opened before any chunk runs: an
        unwritable path fails before the work, not after it."""
        try:
            return OutputFile(self.args.output_file)
        except OutputFileError as error:
            raise MemplanOptError(str(error)) from None

    # ------------------------------------------------------------------
    # Running

    def run(self) -> int:
        """Process every chunk; return the exit code.

        A failing chunk is reported on stderr and the next chunk still runs.
        Exceptions other than the user errors listed in ``describe_error``
        propagate (``main`` reports them as internal errors).
        """
        from memplan.passes.report_files import deferred_report_files  # only when running

        chunks, file_extension = self.prepare_input()
        failed = False
        output_file: OutputFile | None = None
        try:
            output_file = self._open_output()
            output = output_file.stream
            # `plan-report{output=F}` writes F only when every pass succeeded.
            with deferred_report_files() as reports:
                for index, (chunk, line_offset) in enumerate(chunks):
                    with chunk:
                        if index > 0:
                            output.write("// -----\n")
                        succeeded = self._run_chunk(chunk, file_extension, line_offset, output)
                        failed = failed or not succeeded
            if self.args.shrink:
                print("Failure, can't shrink")
                return EXIT_USER_ERROR
            if not failed:
                failed = not self._write_reports(reports)
            if not failed:
                output_file.commit()
        except ShrinkException:
            print("Success, can shrink")
            return 0
        finally:
            if output_file is not None:
                output_file.discard()
            for chunk, _ in chunks:
                chunk.close()
        return EXIT_USER_ERROR if failed else 0

    def _write_reports(self, reports: dict[str, str]) -> bool:
        """Write the deferred ``plan-report`` files; False (reported) if one
        cannot be written."""
        from memplan.passes.report_files import write_report_file

        for path, text in reports.items():
            try:
                write_report_file(path, text)
            except OutputFileError as error:
                print(
                    f"{PROG}: error: plan-report: cannot write '{path}': {error.reason}",
                    file=sys.stderr,
                )
                return False
        return True

    def _run_chunk(
        self, chunk: IO[bytes], file_extension: str, line_offset: int, output: IO[str]
    ) -> bool:
        """Parse, transform and print one chunk; False if it failed."""
        self.source = SourceMap(line_offset=line_offset)
        module: ModuleOp | None = None
        try:
            # On a terminal, the stage: reading, each pass, writing.
            with self.progress.running() as progress:
                progress.set(f"reading {self.get_input_name()}")
                module = self.parse_chunk(chunk, file_extension, line_offset)
                text = None
                if module is not None:
                    with remark_handler(self._remark):
                        self.apply_passes(module)
                    progress.set("writing")
                    text = self.output_resulting_program(module)
            if text is not None:
                output.write(text)
            output.flush()
            return True
        except ParseError as error:
            error.span = dataclasses.replace(error.span, line_offset=line_offset)
            if self.args.parsing_diagnostics:
                print(error)
                return True
            self.report(error)
            return False
        except (DiagnosticException, PassFailedException) as error:
            if self.args.verify_diagnostics and isinstance(error, DiagnosticException):
                print(error)
                for note in getattr(error, "__notes__", ()):
                    print(note)
                return True
            self.report(error, module)
            return False
        except (RecursionError, UnicodeDecodeError) as error:
            self.report(error)
            return False

    def _remark(self, op: Operation, message: str, severity: Severity) -> None:
        sys.stdout.flush()
        print(self.source.diagnostic(PROG, message, op, severity=severity), file=sys.stderr)

    def report(self, error: BaseException, module: ModuleOp | None = None) -> None:
        """Print a user error's diagnostic on stderr: at the op it is about
        when it has one (``SourceMap.describe``). With ``--debug``, first the
        traceback and the annotated module xDSL attached."""
        sys.stdout.flush()  # keep stdout and stderr in order under 2>&1
        if self.args.debug:
            traceback.print_exception(error)
        if isinstance(error, DiagnosticException | PassFailedException):
            message = self.source.describe(PROG, error, module)
        else:
            message = describe_error(error)
        assert message is not None
        hint = import_hint(self.get_input_name())
        if isinstance(error, ParseError | UnicodeDecodeError) and hint is not None:
            # A model read with -f mlir.
            message += "\nnote: " + hint.replace("\nnote: ", "; ")
        print(message, file=sys.stderr)


MODEL_IMPORTERS = {
    ".onnx": ("an ONNX", "memplan-import-onnx"),
    ".tflite": ("a TFLite", "memplan-import-tflite"),
}
"""The importer of each model file extension memplan reads."""


def import_hint(input_name: str) -> str | None:
    """For a model file (``.onnx``, ``.tflite``): that memplan-opt reads MLIR,
    and a ``note:`` line with the command that imports the model; None for
    other names."""
    path = Path(input_name)
    found = MODEL_IMPORTERS.get(path.suffix.lower())
    if found is None:
        return None
    kind, importer = found
    mlir = path.with_suffix(".mlir").name
    return (
        f"{input_name} is {kind} model; memplan-opt reads MLIR\n"
        f"note: import it first: {importer} {input_name} -o {mlir}"
    )


def describe_error(error: BaseException) -> str | None:
    """The diagnostic for a user error without an op to point at, or None if
    ``error`` is a bug. (Verifier and pass errors go through ``SourceMap``.)"""
    if isinstance(error, ParseError):
        return describe_parse_error(error)
    if isinstance(error, MemplanOptError | OutputFileError):
        return f"{PROG}: error: {error}"
    if isinstance(error, DiagnosticException | PassFailedException):
        return f"{PROG}: error: {error}"
    if isinstance(error, RecursionError):
        return f"{PROG}: error: input nested too deeply"
    if isinstance(error, UnicodeDecodeError):
        return f"{PROG}: error: input is not valid UTF-8 ({error.reason} at byte {error.start})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memplan-opt`` on ``argv`` (default ``sys.argv[1:]``); return the
    exit code: 0 success, 1 user error, 2 internal error."""
    if argv is None:
        # As xdsl-opt: show deprecations to whoever runs the tool. In-process
        # callers (tests) pass argv and keep their own warning filters.
        warnings.filterwarnings("default", category=DeprecationWarning)
        argv = sys.argv[1:]
    debug = "--debug" in _options_part(argv)
    try:
        return MemplanOptMain(args=argv).run()
    except SystemExit as exit_request:  # --help, --version
        code = exit_request.code
        return code if isinstance(code, int) else 0 if code is None else 1
    except KeyboardInterrupt as error:
        return launch.interrupted(PROG, error)
    except BrokenPipeError:
        # The reader went away (`memplan-opt ... | head`); stay quiet.
        sys.stdout = open(os.devnull, "w")
        return EXIT_USER_ERROR
    except BaseException as error:
        message = describe_error(error)
        if debug:
            traceback.print_exception(error)
        if message is not None:
            print(message, file=sys.stderr)
            return EXIT_USER_ERROR
        print(
            f"{PROG}: internal error: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
