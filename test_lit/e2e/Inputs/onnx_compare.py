"""Compare what ``onnx_kernels.py``'s ``@entry`` printed with ONNX's reference.

Reads mlir-runner's output (for each size: the pools' bytes, one integer
line each, when the module was made with ``--print-pools``, then each result
of ``@main`` as ``printMemrefF32`` prints it), runs the model with
``onnx.reference.ReferenceEvaluator`` at the same inputs (every input
``x[k] = k % 7 - 3``, k the row-major element index, the dims from
``--dim-values``) and prints one line per size::

    at N=1: pools 80 bytes; y float32[1,4] equal to onnx.reference (atol 1e-06, rtol 1e-05)

or ``DIFFERENT (max |diff| D at [i, j])``, in which case it exits 1. A run
that printed fewer results than expected, or other shapes, exits 1 too.

Usage::

    python onnx_compare.py MODEL.onnx RUNNER_OUTPUT --dim-values N=1,32,64
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from memplan.tools.memplan_run import parse_dim_values

ATOL = 1e-6
RTOL = 1e-5
"""printMemrefF32 prints 6 significant digits; the kernels sum in another order than numpy."""
HEADER = re.compile(r"^Unranked Memref .*sizes = \[([0-9, ]*)\].*data =\s*$")


def _inputs(model: onnx.ModelProto, dims: dict[str, int]) -> dict[str, np.ndarray]:
    """Each graph input at these dims, filled with ``k % 7 - 3``."""
    initializers = {i.name for i in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = [
            d.dim_value if d.HasField("dim_value") else dims[d.dim_param]
            for d in value.type.tensor_type.shape.dim
        ]
        count = int(np.prod(shape))
        feeds[value.name] = (np.arange(count) % 7 - 3).astype(np.float32).reshape(shape)
    return feeds


def _printed(text: str) -> list[tuple[list[int], np.ndarray]]:
    """Each printed memref, with the pool lines printed before it."""
    printed: list[tuple[list[int], np.ndarray]] = []
    pools: list[int] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if re.fullmatch(r"[0-9]+", line):
            pools.append(int(line))
            continue
        header = HEADER.match(line)
        if header is None:
            continue
        shape = [int(s) for s in header.group(1).split(",") if s.strip()]
        count = int(np.prod(shape))
        numbers: list[float] = []
        while len(numbers) < count and index < len(lines):
            numbers += [float(n) for n in re.findall(r"[-+0-9.e]+|nan|inf", lines[index])]
            index += 1
        printed.append((pools, np.array(numbers[:count], np.float32).reshape(shape)))
        pools = []
    return printed


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; exit 1 on a difference."""
    parser = argparse.ArgumentParser(prog="onnx_compare.py", description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("output", help="mlir-runner's output")
    parser.add_argument(
        "--dim-values", action="append", default=[], help="SYMBOL=V,... (repeatable)"
    )
    args = parser.parse_args(argv)
    dim_values = parse_dim_values(args.dim_values)
    model = onnx.load(args.model)
    evaluator = ReferenceEvaluator(model)
    with open(args.output) as file:
        printed = _printed(file.read())
    outputs = len(model.graph.output)
    runs = [
        (
            [p for pools, _ in printed[i : i + outputs] for p in pools],
            [a for _, a in printed[i : i + outputs]],
        )
        for i in range(0, len(printed), outputs)
    ]
    count = len(next(iter(dim_values.values())))
    status = 0
    for k in range(count):
        dims = {symbol: values[k] for symbol, values in dim_values.items()}
        heading = "at " + ", ".join(f"{s}={v}" for s, v in dims.items())
        if k >= len(runs):
            print(f"{heading}: nothing printed")
            status = 1
            continue
        pools, results = runs[k]
        expected = evaluator.run(None, _inputs(model, dims))
        parts = [f"pools {', '.join(str(p) for p in pools)} bytes"] if pools else []
        for output, want, got in zip(model.graph.output, expected, results, strict=False):
            shape = ",".join(str(d) for d in want.shape)
            what = f"{output.name} {want.dtype}[{shape}]"
            if got.shape != want.shape:
                parts.append(f"{what} printed as [{','.join(str(d) for d in got.shape)}]")
                status = 1
                continue
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            if bool(np.all(diff <= ATOL + RTOL * np.abs(want))):
                parts.append(f"{what} equal to onnx.reference (atol {ATOL}, rtol {RTOL})")
            else:
                where = [int(i) for i in np.unravel_index(int(diff.argmax()), diff.shape)]
                parts.append(f"{what} DIFFERENT (max |diff| {diff.max():.3g} at {where})")
                status = 1
        if len(results) != len(expected):
            parts.append(f"{len(results)} results printed, {len(expected)} expected")
            status = 1
        print(f"{heading}: {'; '.join(parts)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
