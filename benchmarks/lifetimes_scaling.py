"""How the lifetime analysis and insert-kills scale with the number of ops.

Usage: python benchmarks/lifetimes_scaling.py [--sizes 2500,10000,20000] [--repeat 3]

Three generated families of functions (deterministic), each at every size
(number of ops, roughly):

* ``straight``: a chain of storages, each tensor read by the next two
  invokes and by an occasional long skip connection.
* ``nested``: the same chain cut into stretches inside ``scf.for`` and
  ``scf.if`` (both regions), nested up to three deep, with values defined
  outside used inside.
* ``cfg``: the chain split over many blocks of a ``cf.cond_br`` diamond
  ladder, with values live across the joins (the liveness fixpoint).

For each: seconds to parse (the baseline), to analyse (``analyze_function``)
and to run ``insert-kills``; analysis time as a ratio of parse time; and
the growth of the analysis time from the previous size divided by the
growth in ops (about 1 for linear, about the ops ratio for quadratic). The
garbage collector is frozen after parsing, so its full collections over the
parsed IR do not blur the timings. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402
from xdsl.parser import Parser  # noqa: E402

from memplan.dialect.context import memplan_context  # noqa: E402
from memplan.passes.analysis import analyze_function  # noqa: E402
from memplan.passes.insert_kills import InsertKillsPass  # noqa: E402

TENSOR = "memref<16xf32>"
HEADER = f"func.func private @k({TENSOR}, {TENSOR})\n"


def _chain_step(lines: list[str], index: int, live: list[str], pad: str) -> None:
    """Allocate one storage and tensor and read the last two (and a skip)."""
    storage, tensor = f"%s{index}", f"%t{index}"
    lines.append(f"{pad}{storage} = memory.alloc_storage : !memory.storage<64>")
    lines.append(
        f"{pad}{tensor} = memory.alloc_tensor {storage}[0] : !memory.storage<64> -> {TENSOR}"
    )
    for source in live[-2:]:
        lines.append(f"{pad}memory.invoke @k ins({source} : {TENSOR}) outs({tensor} : {TENSOR})")
    if index % 17 == 0 and len(live) > 30:
        lines.append(f"{pad}memory.invoke @k ins({live[-30]} : {TENSOR}) outs({tensor} : {TENSOR})")
    live.append(tensor)


def straight(ops: int) -> str:
    lines: list[str] = []
    live: list[str] = ["%x"]
    index = 0
    while len(lines) < ops:
        _chain_step(lines, index, live, "  ")
        index += 1
    return (
        HEADER
        + f"func.func @f(%c: i1, %x: {TENSOR}) {{\n"
        + "\n".join(lines)
        + "\n  func.return\n}\n"
    )


def nested(ops: int) -> str:
    lines = ["  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index"]
    live: list[str] = ["%x"]
    index = 0
    loop = 0
    while len(lines) < ops:
        # One outer-scope step, then a nest: for { if { steps } else { steps } steps }.
        _chain_step(lines, index, live, "  ")
        index += 1
        outer = live[-1]
        loop += 1
        lines.append(f"  scf.for %i{loop} = %c0 to %c1 step %c1 {{")
        lines.append("    scf.if %c {")
        inner = [outer]
        for _ in range(3):
            _chain_step(lines, index, inner, "      ")
            index += 1
        lines.append("    } else {")
        inner = [outer]
        for _ in range(3):
            _chain_step(lines, index, inner, "      ")
            index += 1
        lines.append("    }")
        inner = [outer]
        for _ in range(3):
            _chain_step(lines, index, inner, "    ")
            index += 1
        lines.append("  }")
    return (
        HEADER
        + f"func.func @f(%c: i1, %x: {TENSOR}) {{\n"
        + "\n".join(lines)
        + "\n  func.return\n}\n"
    )


def cfg(ops: int) -> str:
    lines: list[str] = []
    live: list[str] = ["%x"]
    index = 0
    block = 0
    while len(lines) < ops:
        for _ in range(4):
            _chain_step(lines, index, live, "  ")
            index += 1
        then_block, else_block, join = block + 1, block + 2, block + 3
        lines.append(f"  cf.cond_br %c, ^bb{then_block}, ^bb{else_block}")
        lines.append(f"^bb{then_block}:")
        lines.append(f"  memory.invoke @k ins({live[-1]} : {TENSOR}) outs({live[-2]} : {TENSOR})")
        lines.append(f"  cf.br ^bb{join}")
        lines.append(f"^bb{else_block}:")
        lines.append(f"  cf.br ^bb{join}")
        lines.append(f"^bb{join}:")
        block = join
    return (
        HEADER
        + f"func.func @f(%c: i1, %x: {TENSOR}) {{\n"
        + "\n".join(lines)
        + "\n  func.return\n}\n"
    )


FAMILIES = {"straight": straight, "nested": nested, "cfg": cfg}


T = TypeVar("T")


def _best(repeat: int, action: Callable[[], T]) -> tuple[float, T]:
    best = float("inf")
    begin = time.perf_counter()
    result = action()
    best = time.perf_counter() - begin
    for _ in range(repeat - 1):
        begin = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - begin)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="2500,10000,20000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ctx = memplan_context()
    print(
        "| family | ops | storages | parse s | analyse s | insert-kills s "
        "| analyse / parse | analyse growth / ops growth |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for family, build in FAMILIES.items():
        previous: tuple[float, int] | None = None
        for size in sizes:
            text = build(size)
            parse_time, module = _best(1, lambda t=text: Parser(ctx, t).parse_module())
            assert isinstance(module, ModuleOp)
            gc.collect()
            gc.freeze()
            func = next(op for op in module.ops if isinstance(op, FuncOp) and not op.is_declaration)
            analyse_time, lifetimes = _best(args.repeat, lambda f=func: analyze_function(f))
            kills_time, _ = _best(1, lambda m=module: InsertKillsPass().apply(ctx, m))
            gc.unfreeze()
            ops = len(lifetimes.numbering)
            growth = (
                "-"
                if previous is None
                else f"{(analyse_time / previous[0]) / (ops / previous[1]):.2f}"
            )
            previous = (analyse_time, ops)
            print(
                f"| {family} | {ops} | {len(lifetimes.storages)} | "
                f"{parse_time:.3f} | {analyse_time:.3f} | {kills_time:.3f} | "
                f"{analyse_time / parse_time:.2f} | {growth} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
