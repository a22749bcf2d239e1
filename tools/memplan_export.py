"""memplan-export: a plan written into a runtime's own format.

Usage::

    memplan-export TARGET INPUT -o OUT [the target's own options]
    memplan-export-tflite INPUT -o OUT [...]     # memplan-export tflm
    memplan-export-pte INPUT -o OUT [...]        # memplan-export pte

The targets are the exporter registry's (``memplan.tools.exporters.registry``);
``memplan-export --help`` lists them and ``memplan-export TARGET --help``
gives a target's options. OUT is written only when the export succeeds;
then one line per part of it says what it holds (``OUT: ...``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser
from memplan.tools.exporters.registry import ExporterEntry, exporter, registered

PROG = "memplan-export"


def _add_target_arguments(parser: argparse.ArgumentParser, entry: ExporterEntry) -> None:
    parser.add_argument("input", help=entry.input)
    parser.add_argument("-o", "--output", required=True, help="write the output here")
    entry.load().add_arguments(parser)


def build_parser(prog: str = PROG, target: str | None = None) -> argparse.ArgumentParser:
    """The command line of `memplan-export` (a TARGET first), or of one
    target's command (``target``)."""
    if target is not None:
        entry = exporter(target)
        parser = ToolArgumentParser(prog=prog, description=f"Write {entry.description}.")
        _add_target_arguments(parser, entry)
        parser.set_defaults(target=target)
        return parser
    parser = ToolArgumentParser(
        prog=prog, description="Write memplan's plan into a runtime's own format."
    )
    targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for entry in registered():
        sub = targets.add_parser(
            entry.key, help=entry.description, description=f"Write {entry.description}."
        )
        _add_target_arguments(sub, entry)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = PROG, target: str | None = None) -> int:
    parser = build_parser(prog, target)
    args = parser.parse_args(argv)
    command = exporter(args.target).load()
    # Loaded after the command line is read: --help needs no xDSL.
    from memplan.tools.exporters.protocol import ExportError
    from memplan.tools.progress import Progress

    try:
        # Opened first: an unwritable -o fails before the work, not after.
        with OutputFile(args.output, binary=True) as output:
            with Progress(prog).running() as progress:
                progress.set(f"exporting {args.input}")
                result = command.export(args, progress)
            output.stream.write(result.data)
            output.commit()
    except (ExportError, OutputFileError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 1
    for line in result.summary:
        print(f"{args.output}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
