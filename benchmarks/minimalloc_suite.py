"""MiniMalloc's 11 challenging problems: feasibility at 1 MiB, then minimisation.

Usage: python benchmarks/minimalloc_suite.py [--suite DIR] [--timeout S]
       [--only A,B] [--minimize D,J] [--minimize-timeout S]

Part 1 solves each problem at capacity 1048576 (``exact`` with
``minimize=False``, MiniMalloc's decision problem), validates the plan and
compares the time with MiniMalloc's wall time (C++, same kind of 2-core
machine, unloaded, from the suite README). The ratio uses this process's CPU
time, which stays meaningful when other jobs share the machine; the wall time
is printed too. Part 2 minimises the peak of the listed problems with
``exact`` against MiniMalloc's best known peaks. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memplan.passes.planning.algorithms import PlanOptions, solve  # noqa: E402
from memplan.passes.planning.bounds import lower_bound  # noqa: E402
from memplan.passes.planning.io import read_csv  # noqa: E402
from memplan.passes.planning.validate import validate  # noqa: E402

CAPACITY = 1048576
# MiniMalloc wall seconds (mean of the README's two runs) per problem.
MINIMALLOC_SECONDS = {
    "A": 5.685,
    "B": 4.20,
    "C": 0.735,
    "D": 2.94,
    "E": 4.31,
    "F": 6.225,
    "G": 1.39,
    "H": 2.115,
    "I": 4.27,
    "J": 1.03,
    "K": 0.71,
}
# Best peaks MiniMalloc found when minimising (README section 4).
MINIMALLOC_BEST_PEAK = {"D": 1040384, "J": 1048576}


def find_suite(explicit: str | None) -> Path:
    """The suite directory: ``--suite``, the shared checkout, or ``../shared``."""
    repo = Path(__file__).resolve().parent.parent
    candidates = [Path(explicit)] if explicit else []
    candidates += [
        Path("/work/shared/benchmarks/minimalloc"),
        repo.parent / "shared" / "benchmarks" / "minimalloc",
    ]
    for candidate in candidates:
        if (candidate / "A.1048576.csv").is_file():
            return candidate
    raise SystemExit("minimalloc_suite: cannot find the MiniMalloc suite (use --suite DIR)")


def feasibility(suite: Path, names: list[str], timeout: float) -> None:
    """Part 1: decide each problem at 1 MiB and print one table row per problem."""
    print(f"### Feasibility at capacity {CAPACITY} (`exact`, timeout {timeout:g} s)\n")
    print(
        "| bench | buffers | LB | solved | peak | valid | nodes | wall s | cpu s "
        "| MiniMalloc s | cpu ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    solved_count = 0
    for name in names:
        problem = read_csv(suite / f"{name}.{CAPACITY}.csv", CAPACITY)
        bound = lower_bound(problem)["workspace"]
        started = time.perf_counter()
        cpu = time.process_time()
        solution = solve(problem, "exact", PlanOptions(timeout=timeout, minimize=False))
        cpu = time.process_time() - cpu
        seconds = time.perf_counter() - started
        complete = not solution.unplaced(problem)
        solved = complete and solution.status in ("optimal", "feasible")
        valid = solved and not validate(problem, solution)
        solved_count += valid
        peak = solution.peak(problem) if complete else "-"
        reference = MINIMALLOC_SECONDS[name]
        print(
            f"| {name} | {len(problem.buffers)} | {bound} | {'yes' if solved else solution.status} "
            f"| {peak} | {'yes' if valid else 'no'} | {solution.stats.get('nodes', 0)} "
            f"| {seconds:.2f} | {cpu:.2f} | {reference:.2f} | {cpu / reference:.1f}x |",
            flush=True,
        )
    print(f"\nSolved {solved_count} of {len(names)}.\n")


def minimisation(suite: Path, names: list[str], timeout: float) -> None:
    """Part 2: minimise the peak (unbounded pool) and compare with MiniMalloc's best."""
    print(f"### Minimising the peak (`exact`, timeout {timeout:g} s)\n")
    print(
        "| bench | LB | greedy peak | exact peak | status | MiniMalloc best | beats it "
        "| wall s | cpu s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        problem = read_csv(suite / f"{name}.{CAPACITY}.csv")
        bound = lower_bound(problem)["workspace"]
        greedy = min(
            solve(problem, algorithm).peak(problem)
            for algorithm in ("greedy-by-size", "greedy-by-conflicts")
        )
        started = time.perf_counter()
        cpu = time.process_time()
        solution = solve(problem, "exact", PlanOptions(timeout=timeout))
        cpu = time.process_time() - cpu
        seconds = time.perf_counter() - started
        assert not validate(problem, solution), f"{name}: invalid plan"
        peak = solution.peak(problem)
        reference = MINIMALLOC_BEST_PEAK.get(name)
        beats = "-" if reference is None else ("yes" if peak < reference else "no")
        print(
            f"| {name} | {bound} | {greedy} | {peak} | {solution.status} | {reference or '-'} "
            f"| {beats} | {seconds:.1f} | {cpu:.1f} |",
            flush=True,
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--suite", help="directory with the A..K CSV files")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--only", default="A,B,C,D,E,F,G,H,I,J,K")
    parser.add_argument("--minimize", default="D,J", help="problems to minimise ('' for none)")
    parser.add_argument("--minimize-timeout", type=float, default=60.0)
    args = parser.parse_args()
    suite = find_suite(args.suite)
    names = [n for n in args.only.split(",") if n]
    if names:
        feasibility(suite, names, args.timeout)
    wanted = [n for n in args.minimize.split(",") if n]
    if wanted:
        minimisation(suite, wanted, args.minimize_timeout)


if __name__ == "__main__":
    main()
