"""memplan-import: a model as a value-semantic `func.func @main`.

Usage::

    memplan-import MODEL [-o OUT.mlir] [--format KEY] [--input-shape NAME=DIMS ...]
                   [--upper-bound SYMBOL=N ...] [the format's own options]

The output is the form `manifest-alloc` takes: one `func.call` per node of
the model to a kernel declaration, graph inputs as arguments and graph
outputs as results. It is also what `memplan-run` executes. The format is
found in the front-end registry (``memplan.tools.frontends.registry``) by
MODEL's suffix, or named by ``--format``; each format's own options are in
a group of their own in ``--help``, and giving one to a model of another
format is a usage error. `memplan-import-onnx` and `memplan-import-tflite`
are this command for one format (only its options, no ``--format``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser
from memplan.tools.frontends.registry import (
    FrontendEntry,
    add_format_arguments,
    add_shared_arguments,
    entry_for,
    entry_named,
    foreign_options,
    registered,
    suffixes,
)

PROG = "memplan-import"


def build_parser(
    prog: str = PROG, format_key: str | None = None
) -> tuple[argparse.ArgumentParser, dict[str, list[str]]]:
    """The command line of `memplan-import` (every format, ``--format``), or
    of one format's command (``format_key``); the options each format added."""
    entries = registered() if format_key is None else (entry_named(format_key),)
    which = f" ({entries[0].name})" if format_key is not None else ""
    parser = ToolArgumentParser(
        prog=prog,
        description=f"Import a model{which} as a value-semantic func.func @main for "
        "manifest-alloc.",
    )
    parser.add_argument(
        "model",
        help=f"the model ({', '.join(suffixes())})"
        if format_key is None
        else f"the {entries[0].suffixes[0]} file",
    )
    parser.add_argument("-o", "--output", help="write the IR here (default: stdout)")
    if format_key is None:
        parser.add_argument(
            "--format",
            choices=[entry.key for entry in entries],
            help="the model's format (default: by its suffix)",
        )
    add_shared_arguments(parser)
    return parser, add_format_arguments(parser, entries)


def format_of(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    dests: dict[str, list[str]],
    path: str,
    key: str | None,
) -> FrontendEntry:
    """The format reading ``path`` (``key`` if given, else by suffix); a
    usage error when there is none or another format's option was given."""
    entry = entry_named(key) if key is not None else entry_for(path)
    if entry is None:
        parser.error(
            f"'{path}' is not a model memplan reads (suffixes: {', '.join(suffixes())}); "
            "--format names the format of a file with another suffix"
        )
    foreign = foreign_options(parser, args, dests, entry.key)
    if foreign:
        parser.error(f"{', '.join(foreign)}: not an option of {entry.name} models ('{path}')")
    return entry


def main(
    argv: Sequence[str] | None = None, *, prog: str = PROG, format_key: str | None = None
) -> int:
    parser, dests = build_parser(prog, format_key)
    args = parser.parse_args(argv)
    entry = format_of(parser, args, dests, args.model, format_key or getattr(args, "format", None))
    # Loaded after the command line is read: --help and --version need
    # neither xDSL nor the format's reader.
    from memplan.dialect.printer import module_text
    from memplan.tools.frontends.protocol import FrontendError
    from memplan.tools.progress import Progress

    frontend = entry.load()
    try:
        # Opened first: an unwritable -o fails before the import, not after.
        with OutputFile(args.output) as output:
            # On a terminal, after two seconds: the stage.
            with Progress(prog).running() as progress:
                progress.set(f"importing {args.model}")
                module = frontend.import_module(args.model, frontend.parse_options(args))
                progress.set("verifying")
                module.verify()
                progress.set("writing")
                text = module_text(module)
            output.stream.write(text)
            output.commit()
    except (FrontendError, OutputFileError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
