"""How what users run scales: generated ONNX graphs through the real command lines.

Usage: python benchmarks/scaling.py [--sizes 1000,10000,100000]
       [--families chain,wide,transformer] [--stages import,...]
       [--solve-sizes 10000,100000,300000] [--work DIR] [--repeat N]

Three families of ONNX graphs, generated here (deterministic, opset 17):

* ``chain``: a sequence of element-wise ops on a ``1x64`` tensor, with an
  ``Add`` of an earlier value (3 to 9 back) every 7th node (skips);
* ``wide``: a DAG of 32 lanes; each node combines one or two values of the
  previous layer (``Add``/``Mul``/``Relu``/``Sigmoid``), so about 32
  values are live at every step;
* ``transformer``: blocks of ``MatMul`` (Q, K, V), ``Transpose``,
  ``MatMul``, ``Softmax``, ``MatMul``, ``Reshape``, ``Add`` (residual),
  weights shared by every block, ``1x16x32`` activations.

Each stage runs as its own process, as a user runs it; the table gives CPU
seconds (user + system, from ``wait4``) and peak RSS for:

* ``import``: ``memplan-import-onnx``;
* ``parse+print``: ``memplan-opt`` with no pass (parse, verify, print);
* ``xdsl-opt`` / ``mlir-opt``: plain ``xdsl-opt`` and MLIR's ``mlir-opt``
  (``--allow-unregistered-dialect``; when installed) parsing and printing the
  same imported file, the baselines;
* ``plan``: ``memplan-opt --plan``; ``schedule+plan``: ``--schedule --plan``;
* ``report-json`` / ``report-svg``: ``--plan --plan-report`` to a file;
* ``verify-plan`` and ``lower-to-memref``: on the planned file.

With ``--repeat N`` every size runs N rounds, each stage once per round in
turn, and the table gives each stage's median CPU seconds and its largest
peak RSS: on a shared machine one run's CPU seconds move with the load it
meets (10% and more at 100k nodes), and rounds let the baseline and the
stages meet the same loads.

For each stage: the ratio to ``xdsl-opt`` on the same file, and the growth
exponent from the previous size (``log(time ratio) / log(size ratio)``:
1.0 is linear). ``memplan-solve`` runs beside them on generated MiniMalloc
problems (``planning_scaling.random_lifetimes``) of ``--solve-sizes``
buffers. Generated files go to ``--work`` (default a temporary folder).
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto, TensorProto

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from processes import BIN, Measure, measure, tool  # noqa: E402

MLIR_OPT = Path("/usr/lib/llvm-22/bin/mlir-opt")
STAGES = (
    "import",
    "parse+print",
    "xdsl-opt",
    "mlir-opt",
    "plan",
    "schedule+plan",
    "report-json",
    "report-svg",
    "verify-plan",
    "lower-to-memref",
)


# ---------------------------------------------------------------------------
# Graph families


def chain(nodes: int) -> ModelProto:
    """Element-wise ops in a row, with an ``Add`` skip every 7th node."""
    from onnx import TensorProto, helper

    graph_nodes = []
    values = ["x"]
    for i in range(nodes):
        out = f"v{i}"
        if i % 7 == 3 and len(values) > 10:
            back = 3 + (i * 5) % 7
            graph_nodes.append(helper.make_node("Add", [values[-1], values[-back]], [out]))
        else:
            graph_nodes.append(
                helper.make_node("Relu" if i % 3 == 0 else "Sigmoid", [values[-1]], [out])
            )
        values.append(out)
    return _model(graph_nodes, [("x", [1, 64])], [(values[-1], [1, 64])], [], TensorProto.FLOAT)


def wide(nodes: int, lanes: int = 32) -> ModelProto:
    """A DAG of ``lanes`` parallel values per layer, mixing neighbours."""
    from onnx import TensorProto, helper

    graph_nodes = []
    layer = [f"x{lane}" for lane in range(lanes)]
    inputs = [(name, [1, 64]) for name in layer]
    count = 0
    while count < nodes:
        nxt = []
        for lane in range(lanes):
            out = f"l{count}"
            kind = ("Add", "Mul", "Relu", "Sigmoid")[(count * 7 + lane) % 4]
            operands = [layer[lane]]
            if kind in ("Add", "Mul"):
                operands.append(layer[(lane + 1 + count % 5) % lanes])
            graph_nodes.append(helper.make_node(kind, operands, [out]))
            nxt.append(out)
            count += 1
        layer = nxt
    outputs = [(name, [1, 64]) for name in layer]
    return _model(graph_nodes, inputs, outputs, [], TensorProto.FLOAT)


def transformer(nodes: int, seq: int = 16, dim: int = 32) -> ModelProto:
    """Attention blocks (9 nodes each) with shared weights and a residual Add."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((dim, dim)).astype(np.float32), name)
        for name in ("wq", "wk", "wv")
    ]
    weights.append(numpy_helper.from_array(np.array([1, seq, dim], dtype=np.int64), "shape"))
    graph_nodes = []
    x = "x"
    for b in range(max(1, nodes // 9)):
        q, k, v, kt, s, p, o, r, y = (
            f"{n}{b}" for n in ("q", "k", "v", "kt", "s", "p", "o", "r", "y")
        )
        graph_nodes += [
            helper.make_node("MatMul", [x, "wq"], [q]),
            helper.make_node("MatMul", [x, "wk"], [k]),
            helper.make_node("MatMul", [x, "wv"], [v]),
            helper.make_node("Transpose", [k], [kt], perm=[0, 2, 1]),
            helper.make_node("MatMul", [q, kt], [s]),
            helper.make_node("Softmax", [s], [p], axis=-1),
            helper.make_node("MatMul", [p, v], [o]),
            helper.make_node("Reshape", [o, "shape"], [r]),
            helper.make_node("Add", [x, r], [y]),
        ]
        x = y
    return _model(
        graph_nodes, [("x", [1, seq, dim])], [(x, [1, seq, dim])], weights, TensorProto.FLOAT
    )


def _model(
    graph_nodes: list[NodeProto],
    inputs: list[tuple[str, list[int]]],
    outputs: list[tuple[str, list[int]]],
    initializers: list[TensorProto],
    elem: int,
) -> ModelProto:
    from onnx import helper

    graph = helper.make_graph(
        graph_nodes,
        "generated",
        [helper.make_tensor_value_info(name, elem, shape) for name, shape in inputs],
        [helper.make_tensor_value_info(name, elem, shape) for name, shape in outputs],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


FAMILIES: dict[str, Callable[[int], ModelProto]] = {
    "chain": chain,
    "wide": wide,
    "transformer": transformer,
}


# ---------------------------------------------------------------------------
# Running a stage


def stage_commands(stage: str, onnx_file: Path, mlir: Path, planned: Path, work: Path) -> list[str]:
    opt = tool("memplan-opt")
    commands = {
        "import": [tool("memplan-import-onnx"), str(onnx_file), "-o", str(mlir)],
        "parse+print": [opt, str(mlir)],
        "xdsl-opt": [tool("xdsl-opt"), str(mlir)],
        "mlir-opt": [str(MLIR_OPT), "--allow-unregistered-dialect", str(mlir)],
        "plan": [opt, "--plan", str(mlir), "-o", str(planned)],
        "schedule+plan": [opt, "--schedule", "--plan", str(mlir)],
        "report-json": [
            opt,
            "--plan",
            f"--plan-report=format=json output={work / 'r.json'}",
            str(mlir),
        ],
        "report-svg": [
            opt,
            "--plan",
            f"--plan-report=format=svg output={work / 'r.svg'}",
            str(mlir),
        ],
        "verify-plan": [opt, "--verify-plan", str(planned)],
        "lower-to-memref": [opt, "--lower-to-memref", str(planned)],
    }
    return commands[stage]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--solve-sizes", default="10000,100000,300000")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per stage, seconds")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds per size; the table gives medians"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    stages = [s for s in args.stages.split(",") if s]
    if "mlir-opt" in stages and not MLIR_OPT.exists():
        stages.remove("mlir-opt")
    work = args.work or Path(tempfile.mkdtemp(prefix="memplan-scaling-"))
    work.mkdir(parents=True, exist_ok=True)

    import onnx

    how = f"median of {args.repeat} rounds" if args.repeat > 1 else "one run"
    print(f"CPU seconds (user+system) and peak RSS per process, {how}; work files in {work}\n")
    header = "| family | nodes | ops | " + " | ".join(stages) + " |"
    print(header)
    print("|" + "---|" * (3 + len(stages)))
    for family in [f for f in args.families.split(",") if f]:
        previous: dict[str, tuple[int, float]] = {}
        for size in sizes:
            onnx_file = work / f"{family}{size}.onnx"
            mlir = work / f"{family}{size}.mlir"
            planned = work / f"{family}{size}.planned.mlir"
            if not onnx_file.exists():
                onnx.save(FAMILIES[family](size), str(onnx_file))
            rounds: dict[str, list[Measure]] = {stage: [] for stage in stages}
            for _ in range(args.repeat):
                for stage in stages:
                    if stage != "import" and not mlir.exists():
                        rounds[stage].append(Measure(math.nan, math.nan, False, "no import"))
                    elif stage in ("verify-plan", "lower-to-memref") and not planned.exists():
                        rounds[stage].append(Measure(math.nan, math.nan, False, "no plan"))
                    else:
                        command = stage_commands(stage, onnx_file, mlir, planned, work)
                        rounds[stage].append(measure(command, args.timeout))
            results = {stage: median_measure(rounds[stage]) for stage in stages}
            ops = _count_ops(mlir)
            baseline = results.get("xdsl-opt")
            cells = []
            for stage in stages:
                m = results[stage]
                if not m.ok:
                    cells.append(f"failed ({m.note})")
                    continue
                cell = f"{m.cpu:.2f} s, {m.rss_mb:.0f} MB"
                if baseline is not None and baseline.ok and stage != "xdsl-opt":
                    cell += f", {m.cpu / baseline.cpu:.2f}x"
                if stage in previous:
                    old_size, old_cpu = previous[stage]
                    exponent = math.log(m.cpu / old_cpu) / math.log(size / old_size)
                    cell += f", n^{exponent:.2f}"
                previous[stage] = (size, m.cpu)
                cells.append(cell)
            print(f"| {family} | {size} | {ops} | " + " | ".join(cells) + " |", flush=True)
    solve_sizes = [int(s) for s in args.solve_sizes.split(",") if s]
    if solve_sizes:
        print("\n| memplan-solve problem | buffers | cpu s | peak RSS MB | n^k |")
        print("|---|---|---|---|---|")
        print("\n".join(_solve_rows(solve_sizes, work, args.timeout)))


def median_measure(runs: list[Measure]) -> Measure:
    """One stage's rounds: the median CPU seconds and the largest peak RSS,
    or the first failed run when one failed."""
    failed = next((run for run in runs if not run.ok), None)
    if failed is not None:
        return failed
    return Measure(
        statistics.median(run.cpu for run in runs), max(run.rss_mb for run in runs), True
    )


def _count_ops(mlir: Path) -> int:
    """Lines holding an op in the imported file (about the op count)."""
    if not mlir.exists():
        return 0
    with open(mlir) as text:
        return sum(1 for line in text if line.strip() and not line.strip().startswith("}"))


def _solve_rows(sizes: list[int], work: Path, timeout: float) -> list[str]:
    """``memplan-solve`` on generated random-lifetime problems."""
    from planning_scaling import random_lifetimes  # benchmarks/planning_scaling.py

    rows = []
    previous: tuple[int, float] | None = None
    for size in sizes:
        csv = work / f"random{size}.csv"
        if not csv.exists():
            rows_text = ["id,lower,upper,size,alignment"] + [
                f"{b.id},{b.start},{b.end},{b.size},{b.alignment}"
                for b in random_lifetimes(size, 0).buffers
            ]
            csv.write_text("\n".join(rows_text) + "\n")
        m = measure([tool("memplan-solve"), str(csv)], timeout)
        growth = "-"
        if m.ok and previous is not None:
            growth = f"{math.log(m.cpu / previous[1]) / math.log(size / previous[0]):.2f}"
        if m.ok:
            previous = (size, m.cpu)
        cpu = f"{m.cpu:.2f}" if m.ok else f"failed ({m.note})"
        rows.append(f"| random lifetimes | {size} | {cpu} | {m.rss_mb:.0f} | {growth} |")
    return rows


if __name__ == "__main__":
    if shutil.which("memplan-opt") is None and not (BIN / "memplan-opt").exists():
        sys.exit("scaling.py: memplan-opt is not installed in this Python's environment")
    main()
