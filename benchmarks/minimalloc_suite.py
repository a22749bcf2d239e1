"""memplan-solve and MiniMalloc side by side on MiniMalloc's problems.

Usage::

    python benchmarks/minimalloc_suite.py [--minimalloc PATH/TO/minimalloc]
        [--runs 1] [--only A,B,...] [--limit S] [--budget N]
        [--factors 1.0,1.01,1.05,1.10] [--families 1000,10000] [--minimize]

Both solvers run as programs on the same CSV files, on this machine, in the
same run: for each case the runs alternate (memplan, MiniMalloc, memplan,
...). Times are the CPU seconds of the solver's process (user + system, its
start-up included), the median of ``--runs`` runs: on a shared machine they
are what wall seconds are on an idle one. Each run is stopped after
``--limit`` CPU seconds (``prlimit --cpu``, the same for both tools;
memplan's own search stops on its node budget, ``--budget``, default
``memplan-solve``'s). Every output CSV is checked by ``passes.planning.validate``
(an independent sweep: no two live buffers share bytes, all within the
capacity).

* The matrix: each of the 11 challenging problems at its lower bound, at
  the bound x 1.01, x 1.05, x 1.10 (``--factors``) and at 1 MiB (the
  suite's own capacity). A cell is the seconds to a valid plan, or what
  the tool said instead: ``infeasible`` (memplan's proof, exit 2),
  ``unknown`` (memplan found no plan and proved nothing, exit 3),
  ``limit`` (stopped after ``--limit`` s), ``fail`` (MiniMalloc's error).
* ``--families``: generated problems of the given buffer counts (seeded):
  CNN-like (a chain of short-lived activations with skip connections),
  training-like (forward activations kept until their backward step:
  nested lifetimes), uniform random lifetimes, and segments (blocks of 50
  buffers one after another, each an exact tiling of 1 MiB that greedy
  orders rarely find: the search's case), each at its lower bound
  and at the bound x 1.05: capacities set from the bound, not from either
  tool's plan.
* ``--minimize``: the smallest capacity each tool finds (``memplan-solve``
  without ``--capacity``, ``minimalloc --minimize_capacity``).

Before the runs the script writes the bytecode of the modules
``memplan-solve`` loads (``compile_memplan``): each run is a new
interpreter, and without cached bytecode (an editable install that never
wrote it, or ``PYTHONDONTWRITEBYTECODE`` set) every run would compile them
again, about 0.05 s that an installed package does not pay.

Without ``--minimalloc`` the MiniMalloc columns are empty: the script never
compares against numbers it did not measure. MiniMalloc is built outside
this repository (see docs/benchmarks.md for the recipe); each of its runs
is capped at ``--memory-limit`` GiB of address space.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import py_compile
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

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
    """One solver run: CPU seconds, peak RSS (MiB), and the checked result."""

    seconds: float
    rss_mib: float
    ok: bool
    peak: int | None
    note: str = ""

    def cell(self) -> str:
        """A matrix cell: seconds to a valid plan, or what stopped the tool."""
        return f"{self.seconds:.2f}" if self.ok else self.note


def _run(
    argv: list[str],
    output: Path,
    problem_csv: Path,
    limit: float,
    memory_gib: float,
    capacity: int | None,
    exit_notes: dict[int, str],
) -> Run:
    """Run ``argv`` for at most ``limit`` CPU seconds, then check ``output``.

    ``exit_notes`` names the tool's non-zero exit statuses (memplan's 2 and 3).
    """
    output.unlink(missing_ok=True)
    # GNU time reports the solver's own peak RSS (a child's rusage would also
    # count this process's pages, copied by the fork); prlimit caps its
    # address space and CPU seconds (SIGXCPU, then SIGKILL a second later).
    rss_file = output.with_suffix(".rss")
    limited = [
        "/usr/bin/time",
        "-f",
        "%M",
        "-o",
        str(rss_file),
        "prlimit",
        f"--as={int(memory_gib * 2**30)}",
        f"--cpu={int(limit)}:{int(limit) + 1}",
        *argv,
    ]
    # A session of its own: on a hang the whole group goes (killing only
    # `time` would leave the solver running, and loading every later run).
    with subprocess.Popen(
        limited, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    ) as process:
        try:
            # Wall guard: a loaded machine may give a run a fraction of a core.
            _, status, usage = _wait(process, limit * 20 + 60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return Run(limit, 0.0, False, None, "limit")
    # The rusage of `time` includes the solver's (it waited for it).
    seconds = usage.ru_utime + usage.ru_stime
    try:
        rss = int(rss_file.read_text().split()[-1]) / 1024
    except (OSError, ValueError, IndexError):
        rss = float("nan")
    if seconds >= limit or status in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU):
        return Run(seconds, rss, False, None, "limit")
    if status != 0 or not output.exists():
        return Run(seconds, rss, False, None, exit_notes.get(status, "fail"))
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
    ok = not findings and len(placements) == len(problem.buffers)
    return Run(seconds, rss, ok, peak, "" if ok else "INVALID")


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


MEMPLAN_EXITS = {2: "infeasible", 3: "unknown"}
"""memplan-solve's exit statuses when it writes no plan (see its --help)."""


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


def _median_run(runs: list[Run]) -> Run:
    """The run of median time (the last one's verdict when they differ)."""
    ordered = sorted(runs, key=lambda r: r.seconds)
    middle = ordered[len(ordered) // 2]
    return Run(
        middle.seconds, max(r.rss_mib for r in runs), runs[-1].ok, runs[-1].peak, runs[-1].note
    )


def measure(
    name: str, csv: Path, capacity: int | None, args: argparse.Namespace, work: Path
) -> tuple[Run, Run | None]:
    """Interleaved runs of both tools on one case: (memplan, MiniMalloc or None)."""
    mine: list[Run] = []
    theirs: list[Run] = []
    for _ in range(args.runs):
        out = work / f"{name}.memplan.csv"
        argv = memplan_argv(csv, out, capacity, args.budget)
        mine.append(_run(argv, out, csv, args.limit, args.memory_limit, capacity, MEMPLAN_EXITS))
        if args.minimalloc:
            out = work / f"{name}.minimalloc.csv"
            argv = minimalloc_argv(args.minimalloc, csv, out, capacity)
            theirs.append(_run(argv, out, csv, args.limit, args.memory_limit, capacity, {}))
    return _median_run(mine), (_median_run(theirs) if theirs else None)


def _ratio(mine: Run, theirs: Run | None) -> str:
    if theirs is None or not (mine.ok and theirs.ok):
        return "-"
    return f"{mine.seconds / max(theirs.seconds, 1e-3):.2f}"


def _verdict(mine: Run, theirs: Run | None) -> str:
    """Who wins a cell: solved beats unsolved, then the faster one."""
    if theirs is None:
        return "-"
    if mine.ok != theirs.ok:
        return "memplan" if mine.ok else "MiniMalloc"
    if not mine.ok:
        return "neither"
    return "memplan" if mine.seconds <= theirs.seconds else "MiniMalloc"


def run_cases(
    label: str,
    cases: list[tuple[str, str, Path, int | None, int]],
    args: argparse.Namespace,
    work: Path,
) -> list[tuple[str, str, Run, Run | None]]:
    """One Markdown row per case (name, capacity label, CSV, capacity, bound)."""
    print(f"### {label}\n")
    print(
        "| case | capacity | bytes | LB | memplan | memplan peak | MiniMalloc "
        "| MiniMalloc peak | ratio | better |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    results = []
    for name, where, csv, capacity, bound in cases:
        mine, theirs = measure(f"{name}-{where}", csv, capacity, args, work)
        cells = [
            name,
            where,
            "-" if capacity is None else str(capacity),
            str(bound),
            mine.cell(),
            str(mine.peak) if mine.ok else "-",
            theirs.cell() if theirs else "-",
            str(theirs.peak) if theirs and theirs.ok else "-",
            _ratio(mine, theirs),
            _verdict(mine, theirs),
        ]
        print("| " + " | ".join(cells) + " |", flush=True)
        results.append((name, where, mine, theirs))
    print()
    return results


def summary(results: list[tuple[str, str, Run, Run | None]]) -> None:
    """Counts: cells each tool solved, and who was better."""
    solved = sum(m.ok for _, _, m, _ in results)
    theirs = [t for _, _, _, t in results if t is not None]
    line = f"memplan solved {solved} of {len(results)} cases"
    if theirs:
        wins: dict[str, int] = {}
        for _, _, m, t in results:
            verdict = _verdict(m, t)
            wins[verdict] = wins.get(verdict, 0) + 1
        line += f", MiniMalloc {sum(t.ok for t in theirs)}; better: " + ", ".join(
            f"{who} {count}" for who, count in sorted(wins.items())
        )
    print(line + ".\n")


def compile_memplan() -> int:
    """Write the cached bytecode of every memplan module ``memplan-solve``
    loads (see the module's docstring); returns how many were written."""
    importlib.import_module("memplan.tools.memplan_solve")
    written = 0
    for name, module in sorted(sys.modules.items()):
        source = getattr(module, "__file__", None)
        if not (name.startswith("memplan.") and source and source.endswith(".py")):
            continue
        try:
            py_compile.compile(source, importlib.util.cache_from_source(source), doraise=True)
        except (OSError, py_compile.PyCompileError):
            continue  # a read-only install: its runs compile, as they would anyway
        written += 1
    return written


def random_problem(count: int, seed: int) -> Problem:
    """``count`` buffers with uniformly random lifetimes and sizes (seeded)."""
    rng = random.Random(seed)
    horizon = count * 2
    buffers = []
    for i in range(count):
        start = rng.randrange(horizon)
        length = 1 + int(rng.expovariate(1 / 20))
        size = rng.choice((64, 128, 256, 512, 1024, 4096, 16384))
        buffers.append(Buffer(str(i), size, start, min(start + length, horizon + 1)))
    return Problem(tuple(buffers))


def cnn_problem(count: int, seed: int) -> Problem:
    """A CNN-like chain: each op's output lives until the next op or two
    (short lifetimes), sizes falling by stage as the feature maps shrink,
    and one output in eight kept for a skip connection a few ops later."""
    rng = random.Random(seed)
    buffers = []
    stages = 5
    for i in range(count):
        stage = i * stages // count
        size = (1 << (20 - 2 * stage)) // rng.choice((1, 2, 4))
        length = rng.choice((1, 1, 2)) if rng.random() > 0.125 else rng.randint(3, 12)
        buffers.append(Buffer(str(i), max(size, 64), i, i + 1 + length))
    return Problem(tuple(buffers))


def training_problem(count: int, seed: int) -> Problem:
    """Training-like: forward activations live from their op to the matching
    backward op (nested lifetimes, the outermost longest), with short
    gradient temporaries in the backward pass."""
    rng = random.Random(seed)
    forward = count * 2 // 3
    end = 2 * forward + 1
    buffers = []
    for i in range(forward):
        size = rng.choice((256, 1024, 4096, 16384, 65536))
        buffers.append(Buffer(f"a{i}", size, i, end - i))
    for j in range(count - forward):
        start = forward + rng.randrange(forward)
        size = rng.choice((256, 1024, 4096, 16384))
        buffers.append(Buffer(f"g{j}", size, start, start + rng.randint(1, 3)))
    return Problem(tuple(buffers))


def tiling(count: int, rng: random.Random, width: int, horizon: int) -> list[tuple[int, ...]]:
    """``count`` rectangles (start, end, offset, size) that tile ``horizon``
    x ``width`` exactly, by random guillotine cuts."""
    pieces = [(0, horizon, 0, width)]
    while len(pieces) < count:
        index = max(
            range(len(pieces)),
            key=lambda k: (pieces[k][1] - pieces[k][0]) * pieces[k][3] * rng.random(),
        )
        start, end, offset, size = pieces[index]
        if rng.random() < 0.5 and end - start > 1:
            cut = rng.randrange(start + 1, end)
            pieces[index : index + 1] = [(start, cut, offset, size), (cut, end, offset, size)]
        elif size > 1:
            cut = rng.randrange(1, size)
            pieces[index : index + 1] = [
                (start, end, offset, cut),
                (start, end, offset + cut, size - cut),
            ]
    return pieces


def segments_problem(count: int, seed: int) -> Problem:
    """Segments run one after another (say, models of a pipeline), each 50
    buffers that tile 1 MiB x 64 steps exactly: the bound (1 MiB) is
    reachable, but only by search (greedy orders rarely find the tiling),
    and lifetimes never cross between segments (time components)."""
    rng = random.Random(seed)
    buffers = []
    for segment in range(max(count // 50, 1)):
        base = segment * 64
        for k, (start, end, _, size) in enumerate(tiling(50, rng, CAPACITY, 64)):
            buffers.append(Buffer(f"s{segment}.{k}", size, base + start, base + end))
    return Problem(tuple(buffers))


FAMILIES = {
    "cnn": cnn_problem,
    "training": training_problem,
    "random": random_problem,
    "segments": segments_problem,
}


def write_problem(problem: Problem, path: Path) -> None:
    lines = ["id,lower,upper,size"]
    lines += [f"{b.id},{b.start},{b.end},{b.size}" for b in problem.buffers]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minimalloc", help="path of a MiniMalloc binary (built outside the repo)")
    parser.add_argument("--suite", help="directory with the A..K CSV files")
    parser.add_argument("--only", default=NAMES, help="problems to run (default all 11)")
    parser.add_argument("--runs", type=int, default=1, help="runs per tool and case (median)")
    parser.add_argument("--limit", type=float, default=30.0, help="CPU seconds per run")
    parser.add_argument("--budget", type=int, help="memplan-solve's --budget (search nodes)")
    parser.add_argument("--memory-limit", type=float, default=8.0, help="GiB per run")
    parser.add_argument(
        "--factors", default="1.0,1.01,1.05,1.10", help="capacities: the bound times these"
    )
    parser.add_argument("--minimize", action="store_true", help="also minimise the capacity")
    parser.add_argument("--families", default="", help="buffer counts of generated problems")
    parser.add_argument(
        "--family-kinds", default=",".join(FAMILIES), help="which generated families"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    suite = find_suite(args.suite)
    compile_memplan()
    names = [n for n in args.only.split(",") if n]
    factors = [float(f) for f in args.factors.split(",") if f]
    print(
        f"Measured {time.strftime('%Y-%m-%d')} on {os.uname().machine}, {os.cpu_count()} "
        f"cores; {args.runs} interleaved run(s) per tool, CPU seconds (median), "
        f"limit {args.limit:g} CPU s.\n"
    )
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        cases: list[tuple[str, str, Path, int | None, int]] = []
        for name in names:
            csv = suite / f"{name}.{CAPACITY}.csv"
            bound = lower_bound(read_csv(csv))["workspace"]
            for factor in factors:
                label = "bound" if factor == 1.0 else f"bound x {factor:g}"
                cases.append((name, label, csv, int(bound * factor), bound))
            if all(int(bound * factor) != CAPACITY for factor in factors):
                cases.append((name, "1 MiB", csv, CAPACITY, bound))
        summary(run_cases("The matrix: MiniMalloc's problems", cases, args, work))
        if args.minimize:
            minimizing = []
            for name in names:
                csv = suite / f"{name}.{CAPACITY}.csv"
                bound = lower_bound(read_csv(csv))["workspace"]
                minimizing.append((name, "minimise", csv, None, bound))
            summary(run_cases("Minimising the capacity", minimizing, args, work))
        generated: list[tuple[str, str, Path, int | None, int]] = []
        for count in [int(c) for c in args.families.split(",") if c]:
            for family in [f for f in args.family_kinds.split(",") if f]:
                problem = FAMILIES[family](count, args.seed)
                path = work / f"{family}-{count}.csv"
                write_problem(problem, path)
                bound = lower_bound(problem)["workspace"]
                for factor in (1.0, 1.05):
                    label = "bound" if factor == 1.0 else f"bound x {factor:g}"
                    generated.append((f"{family} {count}", label, path, int(bound * factor), bound))
        if generated:
            summary(
                run_cases("Generated problems at capacities from the bound", generated, args, work)
            )


if __name__ == "__main__":
    main()
