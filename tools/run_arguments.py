"""``memplan-run``'s command line, in a module that loads neither xDSL nor
NumPy: the console script reads the command line with it first, so that
``--help``, ``--version`` and usage errors cost a tenth of the tool's
start-up (``memplan.tools.launch``). ``memplan.tools.memplan_run`` is the tool.
"""

from __future__ import annotations

import argparse

from memplan.tools.arguments import ToolArgumentParser
from memplan.tools.frontends.registry import (
    add_format_arguments,
    add_shared_arguments,
    suffixes,
)

PROG = "memplan-run"
DEFAULT_PIPELINE = "manifest-alloc,insert-kills,usmp"


def build_parser() -> argparse.ArgumentParser:
    return build_parser_and_dests()[0]


def build_parser_and_dests() -> tuple[argparse.ArgumentParser, dict[str, list[str]]]:
    """The parser, and the options each format added (by its key)."""
    parser = ToolArgumentParser(
        prog=PROG,
        allow_abbrev=False,
        description="Execute a memory-dialect module (or a model) with NumPy, "
        "planned and unplanned, and compare.",
    )
    parser.add_argument("input", help=f"a model ({', '.join(suffixes())}) or an .mlir module")
    parser.add_argument(
        "--pipeline",
        help=f"passes to plan with (default for models: {DEFAULT_PIPELINE}; "
        "usmp{parametric=true} for offsets that are functions of the dims; "
        ".mlir without it: run once, or as planned at each size)",
    )
    add_shared_arguments(parser)
    parser.add_argument(
        "--dim-values",
        action="append",
        default=[],
        metavar="SYMBOL=V,V,...",
        help="the sizes a ranged symbol takes (a model's --upper-bound, an .mlir's "
        "memory.dim_ranges), one run each (default: the range's lower end, middle and "
        "upper end)",
    )
    parser.add_argument("--inputs", metavar="FILE.npz", help="input arrays by name")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument(
        "--weights-from",
        metavar="MODEL",
        help="data of the module's external globals (.mlir input), from the model it was "
        "imported from",
    )
    parser.add_argument(
        "--kernels",
        action="append",
        default=[],
        metavar="FILE.py",
        help="a Python file defining register_kernels(registry)",
    )
    parser.add_argument(
        "--atol",
        type=float,
        help="tolerance against the reference (default 1e-5 for ONNX's reference "
        "evaluator, 1e-4 for TFLite's interpreter)",
    )
    parser.add_argument(
        "--rtol",
        type=float,
        help="tolerance relative to the largest |reference| value, added to --atol "
        "(default 0 for ONNX, 1e-3 for TFLite)",
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="skip the reference run (ONNX's evaluator, or TFLite's interpreter)",
    )
    parser.add_argument(
        "-o",
        "--output",
        "--save-outputs",
        dest="save_outputs",
        metavar="FILE.npz",
        help="write the (planned) outputs here",
    )
    return parser, add_format_arguments(parser)
