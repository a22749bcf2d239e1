"""memplan-export-tflite: a `.tflite` model with memplan's plan for TensorFlow Lite Micro.

Usage::

    memplan-export-tflite MODEL.tflite -o OUT.tflite [--pipeline P] [--fold-dequantize]

OUT is MODEL with an ``OfflineMemoryAllocation`` metadata entry: the byte
offset of every non-constant tensor in TFLM's arena, as memplan plans it
(``memplan.tools.frontends.tflite.offline_plan`` says how, and which tensors
TFLM still places).
TFLM runs OUT with the plan as is; the command prints the head size the plan
promises (TFLM's "Arena allocation head" for OUT).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser

PROG = "memplan-export-tflite"


def build_parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog=PROG,
        allow_abbrev=False,
        description="Write memplan's plan into a .tflite model as TFLM's offline plan "
        "(OfflineMemoryAllocation metadata).",
    )
    parser.add_argument("model", help="the .tflite file")
    parser.add_argument("-o", "--output", required=True, help="write the planned model here")
    parser.add_argument(
        "--pipeline",
        metavar="P",
        help="the passes to plan with, as memplan-opt's -p (default: the smallest head of "
        "manifest-alloc,insert-kills,usmp / with coalesce / with schedule, each verified)",
    )
    parser.add_argument(
        "--fold-dequantize",
        action="store_true",
        help="write DEQUANTIZE (and DENSIFY) of constant weights as fp32 constants, as "
        "TFLite folds them at Prepare (TFLM has no fp16 DEQUANTIZE)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Loaded after the command line is read: --help and --version need
    # neither xDSL nor the flatbuffer reader.
    from memplan.tools.driver import Progress
    from memplan.tools.tflm_export import DEFAULT_PIPELINES, ExportError, export

    pipelines = (args.pipeline,) if args.pipeline is not None else DEFAULT_PIPELINES
    try:
        # Opened first: an unwritable -o fails before the planning, not after.
        with OutputFile(args.output, binary=True) as output:
            with Progress(PROG).running() as progress:
                progress.set(f"planning {args.model}")
                data, plan = export(args.model, pipelines, args.fold_dequantize)
            output.stream.write(data)
            output.commit()
    except (ExportError, OutputFileError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    reasons = list(plan.runtime_planned.values())
    left = "".join(
        f", {reasons.count(reason)} left to TFLM ({reason})" for reason in dict.fromkeys(reasons)
    )
    subgraphs = f" in {len(plan.subgraphs)} subgraphs" if len(plan.subgraphs) > 1 else ""
    print(
        f"{args.output}: TFLM head {plan.head} bytes (memplan's plan, pipeline {plan.pipeline}); "
        f"{plan.planned_count} tensors at planned offsets{subgraphs}"
        + left
        + (f", {len(plan.folded_operators)} operators folded" if plan.folded_operators else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
