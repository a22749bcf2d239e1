"""`memplan-export tflm` (`memplan-export-tflite`): a `.tflite` model with
memplan's plan for TensorFlow Lite Micro.

Usage::

    memplan-export tflm MODEL.tflite -o OUT.tflite [--pipeline P] [--fold-dequantize]

OUT is MODEL with an ``OfflineMemoryAllocation`` metadata entry: the byte
offset of every non-constant tensor in TFLM's arena, as memplan plans it
(``offline_plan`` says how, and which tensors TFLM still places). TFLM runs
OUT with the plan as is; the command prints the head size the plan
promises (TFLM's "Arena allocation head" for OUT).
"""

from __future__ import annotations

import argparse

from memplan.tools.exporters.protocol import Export, Progress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--pipeline`` and ``--fold-dequantize``."""
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


def export(args: argparse.Namespace, progress: Progress) -> Export:
    """Plan ``args.input`` and write the plan into it."""
    from memplan.tools.exporters.tflm.planning import DEFAULT_PIPELINES, export_model

    pipelines = (args.pipeline,) if args.pipeline is not None else DEFAULT_PIPELINES
    progress.set(f"planning {args.input}")
    data, plan = export_model(args.input, pipelines, args.fold_dequantize)
    reasons = list(plan.runtime_planned.values())
    left = "".join(
        f", {reasons.count(reason)} left to TFLM ({reason})" for reason in dict.fromkeys(reasons)
    )
    subgraphs = f" in {len(plan.subgraphs)} subgraphs" if len(plan.subgraphs) > 1 else ""
    summary = (
        f"TFLM head {plan.head} bytes (memplan's plan, pipeline {plan.pipeline}); "
        f"{plan.planned_count} tensors at planned offsets{subgraphs}"
        + left
        + (f", {len(plan.folded_operators)} operators folded" if plan.folded_operators else "")
    )
    return Export(data, [summary])
