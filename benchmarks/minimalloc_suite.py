"""memplan-solve and MiniMalloc side by side on MiniMalloc's problems.

Usage::

    python benchmarks/minimalloc_suite.py [--minimalloc PATH/TO/minimalloc]
        [--runs 3] [--only A,B,...] [--timeout S] [--budget N] [--minimize]
        [--scaling 1000,10000]

Both solvers run as programs on the same CSV files, on this machine, in the
same run: for each problem the runs alternate (memplan, MiniMalloc, memplan,
...), and the tables give the median wall time of ``--runs`` runs, the
largest resident set, and the ratio memplan / MiniMalloc. Every output CSV is
checked by ``passes.planning.validate`` (an independent sweep: no two live
buffers share bytes, all within the capacity).

* Feasibility: each of the 11 challenging problems at 1 MiB
  (``memplan-solve --capacity 1048576``, ``minimalloc --capacity=1048576``).
* ``--minimize``: the smallest capacity each tool finds (``memplan-solve``
  without ``--capacity``, ``minimalloc --minimize_capacity``), with the
  status memplan reports (``optimal`` only when proven).
* ``--scaling``: random problems of the given buffer counts (seeded), at the
  capacity of memplan's greedy plan, with time and peak memory of both.

Without ``--minimalloc`` the MiniMalloc columns are empty: the script never
compares against numbers it did not measure. MiniMalloc is built outside
this repository (see docs/benchmarks.md for the recipe); each of its runs
is capped at ``--memory-limit`` GiB of address space and ``--timeout``
seconds. memplan's search stops on its node budget (``--budget``, default
``memplan-solve``'s), so its plans do not depend on the machine's load;
``--timeout`` (plus 30 s) only stops a run that hangs.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from memplan.passes.planning.algorithms import solve
from memplan.passes.planning.bounds import lower_bound
from memplan.passes.planning.io import PlanningInputError, read_csv
from memplan.passes.planning.model import Buffer, Placement, Problem, Solution
from memplan.passes.planning.validate import validate

CAPACITY = 1048576
NAMES = "A,B,C,D,E,F,G,H,I,J,K"


def find_suite(explicit: str | None) -> Path:
    """The suite directory: ``--suite``, or ``shared/benchmarks/minimalloc`` beside the repo."""
    repo = Path(__file__).resolve().parent.parent
    candidates = [Path(explicit)] if explicit else []
    candidates += [
        repo.parent / "shared" / "benchmarks" / "minimalloc",
        Path("/work/shared/benchmarks/minimalloc"),
    ]
    for candidate in candidates:
        if (candidate / "A.1048576.csv").is_file():
            return candidate
    raise SystemExit("minimalloc_suite: cannot find the MiniMalloc suite (use --suite DIR)")


@dataclass
class Run:
    """One solver run: wall seconds, peak RSS (MiB), and the checked result."""

    seconds: float
    rss_mib: float
    ok: bool
    peak: int | None
    note: str = ""


def _run(
    argv: list[str],
    output: Path,
    problem_csv: Path,
    timeout: float,
    memory_gib: float,
    capacity: int | None,
) -> Run:
    """Run ``argv``, then check ``output`` against the problem."""
    output.unlink(missing_ok=True)
    # GNU time reports the solver's own peak RSS (a child's rusage would also
    # count this process's pages, copied by the fork); prlimit caps its
    # address space.
    rss_file = output.with_suffix(".rss")
    limited = [
        "/usr/bin/time",
        "-f",
        "%M",
        "-o",
        str(rss_file),
        "prlimit",
        f"--as={int(memory_gib * 2**30)}",
        *argv,
    ]
    started = time.perf_counter()
    # A session of its own: on a timeout the whole group goes (killing only
    # `time` would leave the solver running, and loading every later run).
    with subprocess.Popen(
        limited, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    ) as process:
        try:
            _, status, _ = _wait(process, timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return Run(timeout, 0.0, False, None, "timeout")
    seconds = time.perf_counter() - started
    try:
        rss = int(rss_file.read_text().split()[-1]) / 1024
    except (OSError, ValueError, IndexError):
        rss = float("nan")
    if status != 0 or not output.exists():
        return Run(seconds, rss, False, None, f"exit {status}")
    try:
        solved = read_csv(output)
    except PlanningInputError as error:
        return Run(seconds, rss, False, None, f"bad output: {error}")
    problem = read_csv(problem_csv)
    by_id = {b.id: b for b in solved.buffers}
    if {b.id for b in problem.buffers} != set(by_id):
        return Run(seconds, rss, False, None, "output lists other buffers")
    pool = problem.pools[0].name
    placements = {
        b.id: Placement(pool, b.pinned_offset)
        for b in solved.buffers
        if b.pinned_offset is not None
    }
    solution = Solution(placements)
    checked = (
        Problem(problem.buffers, problem.pools)
        if capacity is None
        else read_csv(problem_csv, capacity)
    )
    findings = validate(checked, solution)
    peak = solution.peak(checked)
    return Run(
        seconds,
        rss,
        not findings and len(placements) == len(problem.buffers),
        peak,
        findings[0].message if findings else "",
    )


def _wait(
    process: subprocess.Popen[bytes], timeout: float
) -> tuple[int, int, resource.struct_rusage]:
    deadline = time.perf_counter() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return pid, process.returncode, usage
        if time.perf_counter() > deadline:
            raise subprocess.TimeoutExpired(process.args, timeout)
        time.sleep(0.005)


def memplan_argv(csv: Path, out: Path, capacity: int | None, budget: int | None) -> list[str]:
    argv = [sys.executable, "-m", "memplan.tools.memplan_solve", str(csv), "-o", str(out)]
    if budget is not None:
        argv += ["--budget", str(budget)]
    return argv + (["--capacity", str(capacity)] if capacity is not None else [])


def minimalloc_argv(binary: str, csv: Path, out: Path, capacity: int | None) -> list[str]:
    argv = [binary, f"--input={csv}", f"--output={out}"]
    if capacity is None:
        # Minimisation starts from an upper bound: the capacity in the file's
        # name (the suite's 1 MiB), else the sum of the sizes.
        return argv + [f"--capacity={_start_capacity(csv)}", "--minimize_capacity"]
    return argv + [f"--capacity={capacity}"]


def _start_capacity(csv: Path) -> int:
    stem = csv.name.split(".")
    if len(stem) == 3 and stem[1].isdigit():
        return int(stem[1])
    return sum(b.size for b in read_csv(csv).buffers)


def _median(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def compare(
    label: str, cases: list[tuple[str, Path, int | None]], args: argparse.Namespace, work: Path
) -> None:
    """Interleaved runs of both tools on each case; one Markdown row per case."""
    if not cases:
        return
    print(f"### {label}\n")
    print(
        "| case | buffers | LB | memplan peak | memplan s | memplan MiB | MiniMalloc peak "
        "| MiniMalloc s | MiniMalloc MiB | time ratio | all valid |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, csv, capacity in cases:
        problem = read_csv(csv)
        bound = lower_bound(problem)["workspace"]
        mine: list[Run] = []
        theirs: list[Run] = []
        for _ in range(args.runs):
            out = work / f"{name}.memplan.csv"
            mine.append(
                _run(
                    memplan_argv(csv, out, capacity, args.budget),
                    out,
                    csv,
                    args.timeout + 30,
                    args.memory_limit,
                    capacity,
                )
            )
            if args.minimalloc:
                out = work / f"{name}.minimalloc.csv"
                theirs.append(
                    _run(
                        minimalloc_argv(args.minimalloc, csv, out, capacity),
                        out,
                        csv,
                        args.timeout,
                        args.memory_limit,
                        capacity,
                    )
                )
        valid = all(r.ok for r in mine + theirs)
        m_peak = mine[-1].peak if mine[-1].ok else mine[-1].note
        cells = [
            name,
            str(len(problem.buffers)),
            str(bound),
            str(m_peak),
            f"{_median(mine):.2f}",
            f"{max(r.rss_mib for r in mine):.0f}",
        ]
        if theirs:
            t_peak = theirs[-1].peak if theirs[-1].ok else theirs[-1].note
            ratio = _median(mine) / _median(theirs) if all(r.ok for r in theirs) else None
            cells += [
                str(t_peak),
                f"{_median(theirs):.2f}",
                f"{max(r.rss_mib for r in theirs):.0f}",
                "-" if ratio is None else f"{ratio:.2f}",
            ]
        else:
            cells += ["-", "-", "-", "-"]
        cells.append("yes" if valid else "no")
        print("| " + " | ".join(cells) + " |", flush=True)
    print()


def random_problem(count: int, seed: int) -> Problem:
    """``count`` buffers with random lifetimes and sizes (seeded)."""
    rng = random.Random(seed)
    horizon = count * 2
    buffers = []
    for i in range(count):
        start = rng.randrange(horizon)
        length = 1 + int(rng.expovariate(1 / 20))
        size = rng.choice((64, 128, 256, 512, 1024, 4096, 16384))
        buffers.append(Buffer(str(i), size, start, min(start + length, horizon + 1)))
    return Problem(tuple(buffers))


def write_problem(problem: Problem, path: Path) -> None:
    lines = ["id,lower,upper,size"]
    lines += [f"{b.id},{b.start},{b.end},{b.size}" for b in problem.buffers]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minimalloc", help="path of a MiniMalloc binary (built outside the repo)")
    parser.add_argument("--suite", help="directory with the A..K CSV files")
    parser.add_argument("--only", default=NAMES, help="problems to run (default all 11)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool and case (median)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run")
    parser.add_argument("--budget", type=int, help="memplan-solve's --budget (search nodes)")
    parser.add_argument("--memory-limit", type=float, default=8.0, help="GiB per run")
    parser.add_argument("--minimize", action="store_true", help="also minimise the capacity")
    parser.add_argument("--scaling", default="", help="buffer counts of random problems")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    suite = find_suite(args.suite)
    names = [n for n in args.only.split(",") if n]
    print(
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores; "
        f"{args.runs} interleaved runs per tool, median wall seconds.\n"
    )
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        cases: list[tuple[str, Path, int | None]] = [
            (n, suite / f"{n}.{CAPACITY}.csv", CAPACITY) for n in names
        ]
        compare(f"Feasibility at {CAPACITY}", cases, args, work)
        if args.minimize:
            compare(
                "Minimising the capacity",
                [(n, suite / f"{n}.{CAPACITY}.csv", None) for n in names],
                args,
                work,
            )
        counts = [int(c) for c in args.scaling.split(",") if c]
        scaling: list[tuple[str, Path, int | None]] = []
        for count in counts:
            problem = random_problem(count, args.seed)
            path = work / f"random-{count}.csv"
            write_problem(problem, path)
            capacity = solve(problem, "greedy-by-size").peak(problem)
            scaling.append((f"random {count}", path, capacity))
        if scaling:
            compare("Scaling: random problems at the greedy plan's capacity", scaling, args, work)


if __name__ == "__main__":
    main()
