"""`memplan-export pte` (`memplan-export-pte`): a built ExecuTorch program
re-planned by memplan.

Usage::

    memplan-export pte MODEL.pte -o OUT.pte [--capacity MEM_ID=BYTES ...]
        [--algorithm auto] [--budget NODES] [--no-inplace]

OUT is MODEL with every planned tensor at memplan's offset and each
memory's size memplan's (``replan`` says how lifetimes and views are read,
which element-wise kernels write into a dying input's bytes, and what is
refused). It prints, per method and memory, the bytes memplan's plan takes
beside the program's own and the order's lower bound (the peak of live
bytes of the order the program runs, no two live tensors sharing bytes:
in-place outputs take the plan below it; ``--no-inplace`` plans without
them). ExecuTorch's runtime runs OUT as it runs MODEL.
"""

from __future__ import annotations

import argparse

from memplan.tools.exporters.protocol import Export, ExportError, Progress


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
    """``--capacity``, ``--algorithm``, ``--budget`` and ``--no-inplace``."""
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
    )
    return Export(
        result.data,
        [
            f"method '{memory.method}', memory {memory.memory_id}: {memory.after} bytes "
            f"(the program's own plan: {memory.before}; lower bound {memory.lower_bound}), "
            f"{memory.tensors} tensors planned"
            + (f", {memory.shared} in a dying input's bytes" if memory.shared else "")
            for memory in result.memories
        ],
    )
