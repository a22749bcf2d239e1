"""memplan-import-tflite: a TFLite model as a value-semantic `func.func @main`.

Usage::

    memplan-import-tflite MODEL.tflite [-o OUT.mlir] [--subgraph N] [--inputs-in-arena]
                          [--upper-bound INPUT:AXIS=N ...]

The output is the form `manifest-alloc` takes: one `func.call` per operator,
in the model's execution order. The translation is
`memplan.tools.frontends.tflite.importer` (its docstring says what it does and
the choices it makes); this module is its command line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser
from memplan.tools.output_file import OutputFile, OutputFileError

PROG = "memplan-import-tflite"


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog=PROG,
        allow_abbrev=False,
        description="Import a TFLite model as a value-semantic func.func @main for manifest-alloc.",
    )
    parser.add_argument("model", help="the .tflite file")
    parser.add_argument("-o", "--output", help="write the IR here (default: stdout)")
    parser.add_argument(
        "--subgraph",
        type=int,
        default=0,
        metavar="N",
        help="the subgraph to import (default: 0, the model's main subgraph)",
    )
    parser.add_argument(
        "--inputs-in-arena",
        action="store_true",
        help="copy each input into planned workspace first (@tfl.INPUT_COPY), "
        "as TFLite and TFLM hold inputs in their arena",
    )
    parser.add_argument(
        "--upper-bound",
        action="append",
        default=[],
        metavar="INPUT:AXIS=N",
        help="keep a dynamic dim (-1 in the input's shape_signature) dynamic, at most N "
        "(repeatable); shapes at the bounds come from ai-edge-litert",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Loaded after the command line is read: --help and --version need
    # neither xDSL nor the flatbuffer reader.
    from memplan.tools.cli import Progress
    from memplan.tools.frontends.common import module_text
    from memplan.tools.frontends.tflite.importer import import_tflite, parse_upper_bound
    from memplan.tools.frontends.tflite.model import TfliteImportError

    try:
        # Opened first: an unwritable -o fails before the import, not after.
        with OutputFile(args.output) as output:
            # On a terminal, after two seconds: the stage.
            with Progress(PROG).running() as progress:
                progress.set(f"importing {args.model}")
                upper_bounds = dict(parse_upper_bound(spec) for spec in args.upper_bound)
                module = import_tflite(
                    args.model, args.subgraph, args.inputs_in_arena, upper_bounds
                )
                progress.set("verifying")
                module.verify()
                progress.set("writing")
                text = module_text(module)
            output.stream.write(text)
            output.commit()
    except (TfliteImportError, OutputFileError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
