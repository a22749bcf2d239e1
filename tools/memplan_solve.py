"""``memplan-solve``: plan a MiniMalloc CSV problem from the command line.

    memplan-solve --input IN.csv [--output OUT.csv] [--capacity N]
                  [--algorithm auto] [--budget NODES] [--timeout SECONDS]
                  [--validate] [--json]

With ``--capacity`` the problem is a feasibility question (like MiniMalloc's
``--capacity``); without it the pool is unbounded and the peak is minimised.
The output CSV is the input columns plus ``offset``, written (through a
temporary file and a rename) only when a plan is found. A one-line summary
goes to stdout, or one JSON object with ``--json``; both give the same
status:

* ``optimal``: a plan, its peak proven minimal (it meets the lower bound, or
  a complete search showed one step below it does not fit);
* ``feasible``: a plan within ``--capacity`` (or, minimising, the best
  found), not proven minimal;
* ``infeasible``: proven that no plan fits ``--capacity``: the lower bound
  (live bytes at some time, rounded up to a multiple every peak is) is
  above it (``proof bound``), or the complete search tried every canonical
  plan (``proof search``);
* ``unknown``: no plan found and nothing proven; ``reason`` says what
  stopped the search: ``budget`` (``--budget`` nodes spent), ``timeout``
  (``--timeout``), or ``heuristic`` (a heuristic algorithm gave up).

The search stops after ``--budget`` nodes in all (a node places one buffer
at an offset; the same plan on every machine); ``--timeout`` adds a
wall-clock limit. Minimising, half the budget goes first to the search at
the lower bound (exactly what ``--capacity BOUND`` runs), the rest to
walking the best peak down; the default budget is twice as large then, so
that at the defaults minimisation proves whatever ``--capacity BOUND``
proves, in the same work.

Exit status: 0 a plan was found (and, with ``--validate``, passed the
check); 2 proven infeasible; 3 unknown (no plan found, nothing proven); 1
validation failed, or bad usage or input (one ``memplan-solve: error: ...``
line on stderr, no traceback, as every memplan tool's user errors),
including pre-placed offsets no plan can keep (two live together sharing
bytes, or one past ``--capacity``).
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack

from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.passes.planning.algorithms import ALGORITHMS, DEFAULT_BUDGET, PlanOptions, solve
from memplan.passes.planning.bounds import lower_bound
from memplan.passes.planning.io import PlanningInputError, format_csv, read_csv_table
from memplan.passes.planning.model import Placement, Problem, Solution
from memplan.passes.planning.validate import validate
from memplan.tools import launch
from memplan.tools.arguments import EXIT_USER_ERROR, ToolArgumentParser

PROG = "memplan-solve"
CAPACITY_BUDGET = 4 * DEFAULT_BUDGET
"""``--budget``'s default with ``--capacity``: above the bound four searches
race and share it (the bound's decision, restarts at the capacity and at a
tighter target, the walk), so this is four times the planning passes'
default."""
MINIMIZE_BUDGET = 2 * CAPACITY_BUDGET
"""Minimising, half the budget goes to the search at the lower bound: twice
the default gives that search what ``--capacity BOUND`` gives it, so at the
defaults minimisation proves whatever feasibility at the bound proves."""
EXIT_INFEASIBLE = 2
"""Proven: no plan fits ``--capacity``."""
EXIT_UNKNOWN = 3
"""No plan found, and no proof that none exists (the budget or clock ran out)."""


class UsageError(Exception):
    """A command-line or input problem, reported as one line with exit status 1."""


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog=PROG,
        description="Assign offsets to the buffers of a MiniMalloc CSV problem.",
        epilog=(
            "statuses: optimal (a plan, peak proven minimal), feasible (a plan), "
            "infeasible (proven: no plan fits --capacity), unknown (no plan found, "
            "nothing proven; the reason says what stopped the search). "
            f"exit status: 0 plan found, {EXIT_INFEASIBLE} proven infeasible, "
            f"{EXIT_UNKNOWN} unknown, {EXIT_USER_ERROR} bad usage or input or a plan "
            "that fails --validate."
        ),
    )
    parser.add_argument("input", nargs="?", help="MiniMalloc CSV problem")
    # --input is the older spelling of the positional input.
    parser.add_argument("--input", dest="input_option", help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", help="write the input columns plus 'offset' here")
    parser.add_argument(
        "--capacity", type=int, help="pool size in bytes: solve feasibility, not minimisation"
    )
    parser.add_argument(
        "--algorithm", default="auto", help=f"one of: {', '.join(ALGORITHMS)} (default auto)"
    )
    parser.add_argument(
        "--budget",
        type=int,
        help=f"the most search nodes the run visits in all (a node places one buffer at "
        f"an offset; default {CAPACITY_BUDGET} with --capacity, {MINIMIZE_BUDGET} minimising, "
        "half of it for the search at the lower bound; the same plan on every machine)",
    )
    parser.add_argument(
        "--timeout", type=float, help="also a wall-clock limit in seconds (default: none)"
    )
    parser.add_argument("--validate", action="store_true", help="check the plan independently")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _check_pinned(problem: Problem, source: str) -> None:
    """Refuse pre-placed offsets (an ``offset`` column) that no plan can keep:
    two buffers live together sharing bytes, one past ``--capacity`` or off
    its alignment.
    Without this the search would report a plan below the lower bound."""
    if all(b.pinned_offset is None for b in problem.buffers):
        return  # nothing pre-placed: no sweep over the problem
    pinned = Solution(
        {
            b.id: Placement(problem.pools[0].name, b.pinned_offset)
            for b in problem.buffers
            if b.pinned_offset is not None
        }
    )
    for finding in validate(problem, pinned):
        if finding.kind in ("overlap", "out-of-bounds", "misaligned"):
            raise UsageError(f"{source}: infeasible pre-placed offsets: {finding.message}")


def run(argv: list[str] | None, cleanup: ExitStack) -> int:
    """Parse ``argv``, solve, report; return the exit status (raises ``UsageError``).
    ``cleanup`` closes the output file (removing it unless it was committed)."""
    args = _parser().parse_args(argv)
    if args.input is not None and args.input_option is not None:
        raise UsageError("give the input once: as an argument or with --input")
    args.input = args.input if args.input is not None else args.input_option
    if args.input is None:
        raise UsageError("the following arguments are required: input (a MiniMalloc CSV)")
    if args.algorithm not in ALGORITHMS:
        raise UsageError(
            f"unknown algorithm '{args.algorithm}' (choose from {', '.join(ALGORITHMS)})"
        )
    if args.capacity is not None and args.capacity < 0:
        raise UsageError(f"--capacity must be non-negative, got {args.capacity}")
    if args.budget is None:
        args.budget = CAPACITY_BUDGET if args.capacity is not None else MINIMIZE_BUDGET
    if args.budget < 0:
        raise UsageError(f"--budget must be non-negative, got {args.budget}")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    try:
        table = read_csv_table(args.input, args.capacity)
    except PlanningInputError as error:
        raise UsageError(str(error)) from None
    problem = table.problem
    _check_pinned(problem, args.input)
    output = None
    if args.output:
        try:
            # Opened before the search: an unwritable path fails at once.
            output = cleanup.enter_context(OutputFile(args.output))
        except OutputFileError as error:
            raise UsageError(str(error)) from None

    started = time.perf_counter()
    options = PlanOptions(budget=args.budget, timeout=args.timeout, minimize=args.capacity is None)
    solution = solve(problem, args.algorithm, options)
    seconds = time.perf_counter() - started

    pool = problem.pools[0].name
    bound = lower_bound(problem)[pool]
    peak = solution.peak(problem)
    complete = not solution.unplaced(problem)
    solved = complete and solution.status in ("optimal", "feasible")
    findings = validate(problem, solution) if args.validate and solved else []
    valid = solved and not findings
    status = (
        solution.status if solved or solution.status in ("infeasible", "unknown") else "unknown"
    )
    reason = None
    if status == "unknown":
        stats = solution.stats
        reason = str(stats.get("stopped_by", stats.get("reason", "heuristic")))
    proof = None
    if status == "infeasible":
        proof = solution.stats.get("proof")
        if proof is None:  # an algorithm's claim without its proof is not reported as one
            status, reason = "unknown", "heuristic"
        else:
            proof = str(proof)

    if valid and output is not None:
        output.stream.write(format_csv(problem, solution, table))
        output.commit()

    for finding in findings:
        print(f"{PROG}: invalid plan: {finding.message}", file=sys.stderr)
    if args.json:
        import json  # on use: the summary line does not need it

        report: dict[str, object] = {
            "input": args.input,
            "buffers": len(problem.buffers),
            "capacity": args.capacity,
            "algorithm": args.algorithm,
            "status": status,
            "peak": peak if solved else None,
            "lower_bound": bound,
            "seconds": round(seconds, 3),
            "stopped_by": solution.stats.get("stopped_by"),
            "work": solution.stats.get("work"),
        }
        if reason is not None:
            report["reason"] = reason
        if proof is not None:
            report["proof"] = proof
        if args.validate:
            report["valid"] = valid
        if args.output:
            report["output"] = args.output if valid else None
        print(json.dumps(report))
    else:
        parts = [
            f"status {status}",
            f"peak {peak if solved else '-'}",
            f"lower-bound {bound}",
            f"buffers {len(problem.buffers)}",
            f"seconds {seconds:.3f}",
        ]
        if reason is not None:
            parts.append(f"reason {reason}")
        if proof is not None:
            parts.append(f"proof {proof}")
        if "stopped_by" in solution.stats:
            parts.append(f"stopped by {solution.stats['stopped_by']}")
        if args.validate and solved:
            parts.append("validation " + ("PASS" if valid else "FAIL"))
        print(", ".join(parts))
    if valid:
        return 0
    if status == "infeasible":
        return EXIT_INFEASIBLE
    if status == "unknown":
        return EXIT_UNKNOWN
    return EXIT_USER_ERROR  # a plan that fails --validate


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memplan-solve`` console script."""
    try:
        with ExitStack() as cleanup:
            return run(argv, cleanup)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
