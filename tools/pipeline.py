"""Pass pipelines as memplan's tools read them, and composed from Python.

    from memplan.dialect.context import memplan_context
    from memplan.tools.pipeline import parse_pipeline

    pipeline = parse_pipeline("canonicalize,plan{algorithm=exact},plan-report{format=json}")
    pipeline.apply(memplan_context(), module)

``normalize_pipeline`` accepts option values written as MLIR does, bare up
to the next space or ``}`` (``output=out/plan.json``), by quoting them for
xDSL's parser; ``check_pipeline`` rejects unknown passes (with "did you
mean"), unknown options and ill-typed values with messages such as
``usmp: algorithm must be one of greedy-by-size, ..., auto (got 'fast')``;
``build_pipeline`` does both and returns the ``PassPipeline``.
``parse_pipeline`` is ``build_pipeline`` over every pass ``all_passes``
knows, xDSL's own and memplan's; a bad pipeline raises ``PipelineError``
with the message ``memplan-opt -p`` prints.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.arg_spec import parse_pipeline as parse_specs
from xdsl.utils.exceptions import ArgSpecParseError

from memplan.passes.output_file import OutputFileError, check_output_path
from memplan.passes.pass_options import option_problem, option_values_text

PassRegistry = Mapping[str, Callable[[], type[ModulePass]]]


class CommandLineError(Exception):
    """A user error with no location: bad command line, pipeline or file.

    ``str(error)`` is the message; tools print it as ``<prog>: error: ...``.
    """


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
        specs = list(parse_specs(pipeline))
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


class PipelineError(CommandLineError, ValueError):
    """A pipeline that does not parse or build; ``str()`` is the message."""


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and memplan's, by name (memplan's win on a clash)."""
    from xdsl.transforms import get_all_passes as upstream_passes

    from memplan.passes import get_all_passes

    return {**upstream_passes(), **get_all_passes()}


def parse_pipeline(spec: str, callback: PassPipelineCallbackType | None = None) -> PassPipeline:
    """``spec`` as a ``PassPipeline`` of ``all_passes()``, checked as
    `memplan-opt -p` checks it (``PipelineError`` if it is not valid)."""
    try:
        return build_pipeline(spec, all_passes(), callback)
    except CommandLineError as error:
        raise PipelineError(str(error)) from None
