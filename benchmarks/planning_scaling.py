"""How the planners scale: generated problems of 1k, 10k and 100k buffers.

Usage: python benchmarks/planning_scaling.py [--sizes 1000,10000,100000]
       [--algorithms greedy-by-size,greedy-by-conflicts,hill-climb,auto]
       [--budget NODES] [--seed N]

Three families, all deterministic for a seed:

* ``chains``: a sequential network; each op's output lives until one to
  three ops later, with an occasional long skip connection (ResNet-like).
* ``branches``: the same chains, with stretches inside the two regions of
  ``scf.if`` ops (exclusive buffers), some nested.
* ``random``: random starts over the whole timeline, lifetimes 1 to 64,
  sizes log-uniform from 64 B to 1 MiB, alignments 16 to 256.

For every problem and algorithm: wall and CPU seconds, peak / lower bound,
and the time ratio against the same algorithm on the previous size (10x more
buffers; ~10x is linear, ~13x is n log n). ``validate`` runs on every plan
(its time is reported too). Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memplan.passes.planning.algorithms import DEFAULT_BUDGET, PlanOptions, solve  # noqa: E402
from memplan.passes.planning.bounds import lower_bound  # noqa: E402
from memplan.passes.planning.model import Buffer, Problem  # noqa: E402
from memplan.passes.planning.validate import validate  # noqa: E402


def _size(rng: random.Random) -> int:
    return max(64, int(2 ** rng.uniform(6, 20)) // 64 * 64)


def chains(count: int, seed: int, with_branches: bool = False) -> Problem:
    """A sequential network with skips; optionally stretches inside ``scf.if`` regions."""
    rng = random.Random(seed)
    buffers: list[Buffer] = []
    time_step = 0
    branch: tuple[tuple[int, int], ...] = ()
    region_start: list[int] = []  # time the innermost open ifs began
    region_left = 0
    next_choice = 0
    for index in range(count):
        if with_branches:
            if region_left == 0:
                if branch and branch[-1][1] == 0 and rng.random() < 0.7:
                    # The else region: it runs over the same time span as the
                    # then region, so its buffers overlap those in time.
                    choice, _ = branch[-1]
                    branch = branch[:-1] + ((choice, 1),)
                    time_step = region_start[-1]
                elif len(branch) < 2 and rng.random() < 0.3:
                    next_choice += 1
                    branch = branch + ((next_choice, 0),)
                    region_start.append(time_step)
                elif branch:
                    branch = branch[:-1]
                    region_start.pop()
                region_left = rng.randint(4, 40)
            region_left -= 1
        end = time_step + rng.randint(1, 3)
        if rng.random() < 0.05:
            end += rng.randint(10, 200)  # skip connection
        if branch:
            end = min(end, time_step + region_left + 1)  # stays inside its region
        buffers.append(
            Buffer(
                f"t{index}",
                _size(rng),
                time_step,
                max(end, time_step + 1),
                alignment=64,
                branch=branch,
            )
        )
        time_step += 1
    return Problem(tuple(buffers))


def random_lifetimes(count: int, seed: int) -> Problem:
    """Random starts over the timeline, short to medium lifetimes, mixed alignments."""
    rng = random.Random(seed)
    buffers = []
    for index in range(count):
        start = rng.randrange(count)
        buffers.append(
            Buffer(
                f"r{index}",
                _size(rng),
                start,
                start + rng.randint(1, 64),
                alignment=rng.choice([16, 32, 64, 128, 256]),
            )
        )
    return Problem(tuple(buffers))


FAMILIES: dict[str, Callable[[int, int], Problem]] = {
    "chains": lambda n, seed: chains(n, seed),
    "branches": lambda n, seed: chains(n, seed, with_branches=True),
    "random": random_lifetimes,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument(
        "--algorithms", default="greedy-by-size,greedy-by-conflicts,hill-climb,auto"
    )
    parser.add_argument(
        "--budget", type=int, default=DEFAULT_BUDGET, help="search nodes for hill-climb / auto"
    )
    parser.add_argument("--iterations", type=int, default=20, help="hill-climb perturbations")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    algorithms = args.algorithms.split(",")
    options = PlanOptions(budget=args.budget, iterations=args.iterations, seed=args.seed)

    print(f"hill-climb: {args.iterations} iterations; auto/hill-climb budget {args.budget} nodes\n")
    print(
        "| family | buffers | algorithm | wall s | cpu s | x prev size | peak / LB | status | validate s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for family, build in FAMILIES.items():
        previous: dict[str, float] = {}
        for size in sizes:
            problem = build(size, args.seed)
            bound = lower_bound(problem)["workspace"]
            for algorithm in algorithms:
                wall = time.perf_counter()
                cpu = time.process_time()
                solution = solve(problem, algorithm, options)
                cpu = time.process_time() - cpu
                wall = time.perf_counter() - wall
                checked = time.perf_counter()
                findings = validate(problem, solution)
                checked = time.perf_counter() - checked
                assert not findings, findings[0].message
                ratio = f"{cpu / previous[algorithm]:.1f}x" if algorithm in previous else "-"
                previous[algorithm] = cpu
                peak = solution.peak(problem)
                print(
                    f"| {family} | {size} | {algorithm} | {wall:.2f} | {cpu:.2f} | {ratio} "
                    f"| {peak / bound:.3f} | {solution.status} | {checked:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
