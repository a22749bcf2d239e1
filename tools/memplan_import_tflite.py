"""memplan-import-tflite: a TFLite model as a value-semantic `func.func @main`.

Usage::

    memplan-import-tflite MODEL.tflite [-o OUT.mlir] [--subgraph N] [--inputs-in-arena]
                          [--input-shape NAME=DIMS ...] [--upper-bound INPUT:AXIS=N ...]

The output is the form `manifest-alloc` takes: one `func.call` per operator,
in the model's execution order. The translation is
`memplan.tools.frontends.tflite` (``importer``'s docstring says what it does
and the choices it makes), reached through the front-end registry; this
module is its command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser

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
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="set an input's dynamic dims (-1 in its shape_signature), e.g. x=4x8; '?' keeps "
        "one dynamic (repeatable); every tensor's shape comes from ai-edge-litert",
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
    from memplan.dialect.printer import module_text
    from memplan.tools.driver import Progress
    from memplan.tools.frontends.protocol import FrontendError
    from memplan.tools.frontends.registry import frontend

    tflite = frontend(".tflite")
    try:
        # Opened first: an unwritable -o fails before the import, not after.
        with OutputFile(args.output) as output:
            # On a terminal, after two seconds: the stage.
            with Progress(PROG).running() as progress:
                progress.set(f"importing {args.model}")
                options = tflite.parse_options(args.input_shape, args.upper_bound)
                options = dataclasses.replace(
                    options, subgraph=args.subgraph, inputs_in_arena=args.inputs_in_arena
                )
                module = tflite.import_module(args.model, options)
                progress.set("verifying")
                module.verify()
                progress.set("writing")
                text = module_text(module)
            output.stream.write(text)
            output.commit()
    except (FrontendError, OutputFileError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
