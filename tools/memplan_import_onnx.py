"""memplan-import-onnx: an ONNX model as a value-semantic `func.func @main`.

Usage::

    memplan-import-onnx MODEL.onnx [-o OUT.mlir] [--input-shape NAME=1x3x224x224 ...]
                        [--upper-bound SYMBOL=N ...] [--weights external|inline]

The output is the form `manifest-alloc` takes: one `func.call` per ONNX node
to a kernel declaration, graph inputs as arguments and graph outputs as
results. It is also what `memplan-run` executes. The translation is
`memplan.tools.frontends.onnx.importer` (its docstring says what it does and
the choices it makes); this module is its command line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser
from memplan.tools.output_file import OutputFile, OutputFileError

PROG = "memplan-import-onnx"

# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog=PROG,
        allow_abbrev=False,
        description="Import an ONNX model as a value-semantic func.func @main for manifest-alloc.",
    )
    parser.add_argument("model", help="the .onnx file")
    parser.add_argument("-o", "--output", help="write the IR here (default: stdout)")
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="fix a graph input's shape, e.g. data_0=1x3x224x224 (repeatable)",
    )
    parser.add_argument(
        "--upper-bound",
        action="append",
        default=[],
        metavar="SYMBOL=N",
        help="keep a symbolic dim of the graph inputs dynamic, at most N (repeatable); "
        "e.g. --upper-bound sequence_length=4096",
    )
    parser.add_argument(
        "--weights",
        choices=("external", "inline"),
        default="external",
        help="external (default): globals without data, which stays in the "
        "ONNX file; inline: embed it as dense<...>",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Loaded after the command line is read: --help and --version need
    # neither xDSL nor ONNX (a tenth of the time instead of the whole).
    from memplan.tools.cli import Progress
    from memplan.tools.frontends.common import module_text
    from memplan.tools.frontends.onnx.importer import (
        import_onnx,
        input_shapes_from,
        upper_bounds_from,
    )
    from memplan.tools.frontends.onnx.model import OnnxImportError

    try:
        # Opened first: an unwritable -o fails before the import, not after.
        with OutputFile(args.output) as output:
            # On a terminal, after two seconds: the stage.
            with Progress(PROG).running() as progress:
                progress.set(f"importing {args.model}")
                module = import_onnx(
                    args.model,
                    input_shapes_from(args.input_shape),
                    args.weights,
                    upper_bounds_from(args.upper_bound),
                )
                progress.set("verifying")
                module.verify()
                progress.set("writing")
                text = module_text(module)
            output.stream.write(text)
            output.commit()
    except (OnnxImportError, OutputFileError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
