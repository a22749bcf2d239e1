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

The parametric columns are such a plan (``passes/planning/parametric``):
the ranged plan's buffers (lifetimes, alignments, maximum sizes, offsets,
read from its JSON report) become an offset program, evaluated at each
size with the buffer sizes of the model imported at that size. A ranged
storage's size there is the largest ``offset + size`` of its tensors,
matched by tensor name (ONNX names are stable) in the fixed import's
report; a storage with a tensor the fixed import does not have keeps its
maximum size (counted in the column "kept at max"). "parametric" keeps
the order of the ranged plan; "chosen order" is ``choose_parametric``'s
pick among it and the orders of the planning core's plans (``auto``) of the
ranged buffers at the five sizes, scored against the static plans. "ranged
storages' lower bound there" is the peak of live bytes of the ranged
import's storages at the size: no offsets for those storages do better, so
where it is above the static plan the storages themselves (their lifetimes,
what shares a storage in place) cost the difference, not the offsets.

The models come from published wheels, cached outside the repository
(``real_models.fetch``).

Usage::

    python benchmarks/dynamic.py [--cache DIR] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from real_models import BIN, DEFAULT_CACHE, Model, _command, _error_line, _plan, fetch

from memplan.passes.planning.algorithms import solve
from memplan.passes.planning.bounds import lower_bound
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.parametric import (
    at_sizes,
    choose_parametric,
    derive_parametric,
    evaluate,
)

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
    parametric: int | str = "-"
    chosen: int | str = "-"
    matched: str = "-"
    """Ranged storages sized from the fixed import / kept at their maximum."""
    ranged_lower: int | str = "-"
    """The peak of live bytes of the ranged storages at the size."""


@dataclass(frozen=True)
class Planned:
    used: int
    lower: int
    seconds: float
    report: dict[str, Any]
    """The JSON report's ``main`` function."""


def _import_and_plan(path: Path, options: Sequence[str], work: Path) -> Planned | str:
    mlir = work / "model.mlir"
    code, output, import_seconds = _command([BIN / "memplan-import", path, *options, "-o", mlir])
    if code != 0:
        return "timeout" if code is None else _error_line(output)
    planned = _plan(mlir, (), work)
    if isinstance(planned, str):
        return planned
    used, lower, plan_seconds = planned
    data = json.loads((work / "plan.json").read_text())
    [main] = [f for f in data["functions"] if f["name"] == "main"]
    return Planned(used, lower, import_seconds + plan_seconds, main)


def bound_plan(report: dict[str, Any]) -> tuple[Problem, Solution]:
    """The planned buffers of a report, at their sizes, and their offsets."""
    placed = [b for b in report["buffers"] if b["pool"] is not None and b["offset"] is not None]
    buffers = tuple(
        Buffer(
            b["name"],
            b["size"],
            b["start"],
            b["end"],
            alignment=b["alignment"],
            device=b["device"],
            candidates=(b["pool"],),
            read_only=b["read_only"],
            branch=tuple((choice, region) for choice, region in b["branch"]),
        )
        for b in placed
    )
    pools = tuple(Pool(p["name"], size=p["size"]) for p in report["pools"])
    solution = Solution({b["name"]: Placement(b["pool"], b["offset"]) for b in placed})
    return Problem(buffers, pools), solution


def sizes_at(
    problem: Problem, ranged: dict[str, Any], fixed: dict[str, Any]
) -> tuple[tuple[int, ...], int]:
    """Each ranged storage's size in the fixed import, and how many storages
    kept their maximum (a tensor of theirs is not in the fixed import)."""
    fixed_sizes = {t["name"]: t["size"] for t in fixed["tensors"]}
    extent: dict[str, int | None] = {}
    for tensor in ranged["tensors"]:
        storage = tensor["storage"]
        size = fixed_sizes.get(tensor["name"])
        if size is None:
            size = tensor["size"]  # a static tensor folded away at a fixed size
        if size is None or extent.get(storage, 0) is None:
            extent[storage] = None
        else:
            extent[storage] = max(extent.get(storage, 0) or 0, tensor["offset"] + size)
    sizes, kept = [], 0
    for buffer in problem.buffers:
        found = extent.get(buffer.id)
        if found is None:
            kept += 1
        sizes.append(buffer.size if found is None else min(found, buffer.size))
    return tuple(sizes), kept


def measure(spec: DynamicModel, cache: Path) -> list[Row]:
    path = fetch(spec.model, cache)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        ranged = _import_and_plan(path, spec.ranged, work)
        statics = [_import_and_plan(path, spec.fixed(size), work) for size in spec.sizes]
    rows = [
        Row(
            spec.label,
            size,
            ranged if isinstance(ranged, str) else ranged.used,
            static if isinstance(static, str) else static.used,
            static if isinstance(static, str) else static.lower,
            None if isinstance(ranged, str) else ranged.seconds,
        )
        for size, static in zip(spec.sizes, statics, strict=True)
    ]
    if isinstance(ranged, str):
        return rows
    problem, bound = bound_plan(ranged.report)
    plan = derive_parametric(problem, bound)
    samples: list[tuple[tuple[int, ...], int]] = []
    for row, static in zip(rows, statics, strict=True):
        if isinstance(static, str):
            continue
        sizes, kept = sizes_at(problem, ranged.report, static.report)
        row.parametric = evaluate(plan, sizes).total
        row.ranged_lower = sum(lower_bound(at_sizes(problem, sizes)).values())
        row.matched = f"{len(sizes) - kept} / {kept}"
        samples.append((sizes, static.used))
    candidates = [(sizes, solve(at_sizes(problem, sizes))) for sizes, _ in samples]
    choice = choose_parametric(problem, bound, candidates, samples)
    measured = iter(samples)
    for row in rows:
        if isinstance(row.static, int):
            row.chosen = evaluate(choice.plan, next(measured)[0]).total
    return rows


def _ratio(a: int | str, b: int | str) -> str:
    return f"{a / b:.3f}x" if isinstance(a, int) and isinstance(b, int) and b else "-"


def _bytes(value: int | str) -> str:
    return f"{value:,}" if isinstance(value, int) else value


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| model and range | size | ranged plan | static plan at the size | lower bound there "
        "| ranged / static | ranged plan CPU s | parametric | parametric / static "
        "| parametric, chosen order | chosen / static | ranged storages' lower bound there "
        "| storages sized / kept at max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seconds = f"{row.seconds:.1f}" if row.seconds is not None else "-"
        lines.append(
            f"| {row.label} | {row.size} | {_bytes(row.ranged)} | {_bytes(row.static)} "
            f"| {_bytes(row.lower_bound)} | {_ratio(row.ranged, row.static)} | {seconds} "
            f"| {_bytes(row.parametric)} | {_ratio(row.parametric, row.static)} "
            f"| {_bytes(row.chosen)} | {_ratio(row.chosen, row.static)} "
            f"| {_bytes(row.ranged_lower)} | {row.matched} |"
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
