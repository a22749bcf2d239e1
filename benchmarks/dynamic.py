"""Real models with dynamic dims: what one plan for a range of sizes costs
at each size, against memplan's own plan for that size alone.

Per model: the ranged import (``--upper-bound``, and ``--lower-bound`` where
the model has a smallest size) planned once, and at five sizes across the
range the model imported at that size (``--input-shape``) and planned, with
the lower bound there (the peak of live bytes). Each step is the command
line a user runs (``memplan-import``, ``memplan-opt --plan
--plan-report=format=json``); seconds are CPU seconds of the ranged import
plus plan. The ranged plan holds the upper bound's bytes at every size:
the column "ranged / static" is what a plan that is a function of the
dims would save at that size.

The models come from published wheels, cached outside the repository
(``real_models.fetch``).

Usage::

    python benchmarks/dynamic.py [--cache DIR] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from real_models import BIN, DEFAULT_CACHE, Model, _command, _error_line, _plan, fetch

PPOCR = Model(
    "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
)
DDDDOCR = Model("ddddocr==1.6.1", "ddddocr/common.onnx")
_H, _W = "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"


@dataclass(frozen=True)
class DynamicModel:
    """A model, its range (``ranged``: the import options), the sizes to
    measure, and the import options of the model fixed at one of them."""

    model: Model
    label: str
    ranged: tuple[str, ...]
    sizes: tuple[int, ...]
    fixed: Callable[[int], tuple[str, ...]]


MODELS = (
    DynamicModel(
        PPOCR,
        "PP-OCRv4 det, H = W in 1..640",
        ("--input-shape", "x=1x3x?x?", "--upper-bound", f"{_H}=640", "--upper-bound", f"{_W}=640"),
        (32, 160, 320, 480, 640),
        lambda s: ("--input-shape", f"x=1x3x{s}x{s}"),
    ),
    DynamicModel(
        PPOCR,
        "PP-OCRv4 det, H = W in 32..640",
        (
            "--input-shape",
            "x=1x3x?x?",
            "--upper-bound",
            f"{_H}=640",
            "--upper-bound",
            f"{_W}=640",
            "--lower-bound",
            f"{_H}=32",
            "--lower-bound",
            f"{_W}=32",
        ),
        (32, 160, 320, 480, 640),
        lambda s: ("--input-shape", f"x=1x3x{s}x{s}"),
    ),
    DynamicModel(
        DDDDOCR,
        "ddddocr common, width in 1..512",
        ("--upper-bound", "image_width=512"),
        (64, 128, 256, 384, 512),
        lambda s: ("--input-shape", f"input1=1x1x64x{s}"),
    ),
)


@dataclass
class Row:
    label: str
    size: int
    ranged: int | str
    static: int | str
    lower_bound: int | str
    seconds: float | None


def _import_and_plan(
    path: Path, options: Sequence[str], work: Path
) -> tuple[int, int, float] | str:
    mlir = work / "model.mlir"
    code, output, import_seconds = _command([BIN / "memplan-import", path, *options, "-o", mlir])
    if code != 0:
        return "timeout" if code is None else _error_line(output)
    planned = _plan(mlir, (), work)
    if isinstance(planned, str):
        return planned
    used, lower, plan_seconds = planned
    return used, lower, import_seconds + plan_seconds


def measure(spec: DynamicModel, cache: Path) -> list[Row]:
    path = fetch(spec.model, cache)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        ranged = _import_and_plan(path, spec.ranged, work)
        rows = []
        for size in spec.sizes:
            static = _import_and_plan(path, spec.fixed(size), work)
            rows.append(
                Row(
                    spec.label,
                    size,
                    ranged if isinstance(ranged, str) else ranged[0],
                    static if isinstance(static, str) else static[0],
                    static if isinstance(static, str) else static[1],
                    None if isinstance(ranged, str) else ranged[2],
                )
            )
        return rows


def _ratio(a: int | str, b: int | str) -> str:
    return f"{a / b:.2f}x" if isinstance(a, int) and isinstance(b, int) and b else "-"


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| model and range | size | ranged plan | static plan at the size | lower bound there "
        "| ranged / static | ranged plan CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seconds = f"{row.seconds:.1f}" if row.seconds is not None else "-"
        lines.append(
            f"| {row.label} | {row.size} | {row.ranged:,} | {row.static:,} | {row.lower_bound:,} "
            f"| {_ratio(row.ranged, row.static)} | {seconds} |"
            if isinstance(row.ranged, int) and isinstance(row.static, int)
            else f"| {row.label} | {row.size} | {row.ranged} | {row.static} | {row.lower_bound} | - "
            f"| {seconds} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--markdown", type=Path, help="write the table here too")
    args = parser.parse_args(argv)
    rows = [row for spec in MODELS for row in measure(spec, args.cache)]
    text = (
        f"{table(rows)}\n\n{date.today().isoformat()}, {platform.machine()}, "
        f"Python {platform.python_version()}; `python benchmarks/dynamic.py`.\n"
    )
    print(text, end="")
    if args.markdown:
        args.markdown.write_text("# Dynamic dims: one plan for a range of sizes\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
