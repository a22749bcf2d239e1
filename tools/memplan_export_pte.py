"""memplan-export-pte: a built ExecuTorch program re-planned by memplan.

Usage::

    memplan-export-pte MODEL.pte -o OUT.pte [--capacity MEM_ID=BYTES ...]
        [--algorithm auto] [--budget NODES]

OUT is MODEL with every planned tensor at memplan's offset and each
memory's size memplan's (``memplan.tools.pte_export`` says how lifetimes
and views are read, and what is refused). It prints, per method and
memory, the bytes memplan's plan takes beside the program's own and the
lower bound (the peak of live bytes of the order the program runs).
ExecuTorch's runtime runs OUT as it runs MODEL.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.arguments import ToolArgumentParser

PROG = "memplan-export-pte"


def build_parser() -> argparse.ArgumentParser:
    from memplan.passes.planning.algorithms import ALGORITHMS, DEFAULT_BUDGET

    parser = ToolArgumentParser(
        prog=PROG,
        allow_abbrev=False,
        description="Re-plan a built ExecuTorch program (.pte) with memplan.",
    )
    parser.add_argument("model", help="the .pte file")
    parser.add_argument("-o", "--output", required=True, help="write the re-planned program here")
    parser.add_argument(
        "--capacity",
        action="append",
        default=[],
        metavar="MEM_ID=BYTES",
        help="the most bytes memory MEM_ID may take (repeatable; default unbounded)",
    )
    parser.add_argument(
        "--algorithm", default="auto", choices=ALGORITHMS, help="memplan's planner (default auto)"
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        help=f"search nodes per memory (default {DEFAULT_BUDGET})",
    )
    return parser


def _capacities(parser: argparse.ArgumentParser, given: Sequence[str]) -> dict[int, int]:
    capacities: dict[int, int] = {}
    for text in given:
        memory, _, size = text.partition("=")
        if not (memory.isdigit() and size.isdigit()) or int(memory) < 1:
            parser.error(f"--capacity '{text}' is not MEM_ID=BYTES with MEM_ID >= 1")
        capacities[int(memory)] = int(size)
    return capacities


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    capacities = _capacities(parser, args.capacity)
    if args.budget < 0:
        parser.error(f"--budget must be non-negative, got {args.budget}")
    from memplan.tools.pte_export import PteError, replan

    try:
        with OutputFile(args.output, binary=True) as output:
            try:
                with open(args.model, "rb") as model:
                    data = model.read()
            except OSError as error:
                raise PteError(f"cannot read {args.model}: {error.strerror}") from None
            result = replan(
                data,
                args.model,
                algorithm=args.algorithm,
                budget=args.budget,
                capacities=capacities,
            )
            output.stream.write(result.data)
            output.commit()
    except (PteError, OutputFileError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    for memory in result.memories:
        print(
            f"{args.output}: method '{memory.method}', memory {memory.memory_id}: "
            f"{memory.after} bytes (the program's own plan: {memory.before}; lower bound "
            f"{memory.lower_bound}), {memory.tensors} tensors planned"
        )
    return 0


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
