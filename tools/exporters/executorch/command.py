"""`memplan-export pte` (`memplan-export-pte`): a built ExecuTorch program
re-planned by memplan.

Usage::

    memplan-export pte MODEL.pte -o OUT.pte [--capacity MEM_ID=BYTES ...]
        [--algorithm auto] [--budget NODES] [--no-inplace] [--no-reorder]

OUT is MODEL with every planned tensor at memplan's offset and each
memory's size memplan's (``replan`` says how lifetimes and views are read,
which element-wise kernels write into a dying input's bytes, and what is
refused). It prints, per method and memory, the bytes memplan's plan takes
beside the program's own and the order's lower bound (the peak of live
bytes of the order the program runs, no two live tensors sharing bytes:
in-place outputs take the plan below it; ``--no-inplace`` plans without
them). By default the instructions are reordered first where an order the
dependencies allow has a lower peak (``reorder``); the line then ends with
the order's bound before and after (``reordered: the order's bound A ->
B``), or says the program's order was kept; ``--no-reorder`` keeps it
without trying. ExecuTorch's runtime runs OUT as it runs MODEL.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memplan.tools.exporters.protocol import Export, ExportError, Progress

if TYPE_CHECKING:
    from memplan.tools.exporters.executorch.replan import MemoryPlan


def _capacity(text: str) -> tuple[int, int]:
    memory, _, size = text.partition("=")
    if not (memory.isdigit() and size.isdigit()) or int(memory) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not MEM_ID=BYTES with MEM_ID >= 1")
    return int(memory), int(size)


def _budget(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a non-negative number of nodes, got '{text}'")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--capacity``, ``--algorithm``, ``--budget``, ``--no-inplace`` and ``--no-reorder``."""
    from memplan.passes.planning.algorithms import ALGORITHMS, DEFAULT_BUDGET

    parser.add_argument(
        "--capacity",
        action="append",
        default=[],
        type=_capacity,
        metavar="MEM_ID=BYTES",
        help="the most bytes memory MEM_ID may take (repeatable; default unbounded)",
    )
    parser.add_argument(
        "--algorithm", default="auto", choices=ALGORITHMS, help="memplan's planner (default auto)"
    )
    parser.add_argument(
        "--budget",
        type=_budget,
        default=DEFAULT_BUDGET,
        help=f"search nodes per memory (default {DEFAULT_BUDGET})",
    )
    parser.add_argument(
        "--no-inplace",
        dest="inplace",
        action="store_false",
        help="never write an element-wise kernel's output into its dying input's bytes",
    )
    parser.add_argument(
        "--no-reorder",
        dest="reorder",
        action="store_false",
        help="keep the program's order of instructions (default: the order of lowest peak)",
    )


def export(args: argparse.Namespace, progress: Progress) -> Export:
    """Re-plan the program ``args.input``."""
    from memplan.tools.exporters.executorch.replan import replan

    try:
        with open(args.input, "rb") as model:
            data = model.read()
    except OSError as error:
        raise ExportError(f"cannot read {args.input}: {error.strerror}") from None
    progress.set(f"re-planning {args.input}")
    result = replan(
        data,
        args.input,
        algorithm=args.algorithm,
        budget=args.budget,
        capacities=dict(args.capacity),
        inplace=args.inplace,
        reorder=args.reorder,
    )
    return Export(result.data, [_summary(memory) for memory in result.memories])


def _summary(memory: MemoryPlan) -> str:
    """One memory's line: the bytes of memplan's plan beside the program's
    own and the bound, what in place and the order gave."""
    line = (
        f"method '{memory.method}', memory {memory.memory_id}: {memory.after} bytes "
        f"(the program's own plan: {memory.before}; lower bound {memory.lower_bound}), "
        f"{memory.tensors} tensors planned"
    )
    if memory.shared:
        line += f", {memory.shared} in a dying input's bytes"
    if memory.reordered:
        line += f"; reordered: the order's bound {memory.program_order_bound} -> "
        line += str(memory.lower_bound)
    elif memory.program_order_bound is not None:
        line += "; the program's order kept (no order tried has a lower peak)"
    return line
