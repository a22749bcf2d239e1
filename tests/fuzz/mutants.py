"""Mutation fuzzing of memplan's tools: damaged inputs must give diagnostics.

Takes every ``.mlir`` file under ``test_lit/`` and ``examples/``, damages it
(lines deleted, duplicated or swapped; numbers set to 0, -1, 2**32 or
10**20; SSA names swapped; stray brackets and bytes; the file cut short)
and runs it through ``memplan-opt`` with the README's pipelines, in process.
The same for ``memplan-solve`` on damaged CSV files, and for
``memplan-import-onnx`` and ``memplan-import-tflite`` on truncated or
bit-flipped ``.onnx`` and ``.tflite`` files.

A case passes when the tool exits 0 or 1 (never 2, memplan's "internal
error"), prints no Python traceback, finishes within ``CASE_SECONDS``, and,
when it fails, leaves the ``-o`` file exactly as it was.

    python tests/fuzz/mutants.py --cases 10000 --seed 1   # a long campaign
    pytest tests/fuzz                                     # the CI-sized sample
"""

from __future__ import annotations

import argparse
import io
import random
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASE_SECONDS = 60
SENTINEL = "previous output: must survive a failed run\n"

PIPELINES: list[list[str]] = [
    ["--plan"],
    ["--manifest-alloc", "--insert-kills", "--usmp"],
    ["--manifest-alloc", "--insert-kills", "--coalesce", "--usmp", "--verify-plan"],
    ["--manifest-alloc", "--insert-kills", "--reuse", "--usmp", "--plan-report=format=json"],
    ["--manifest-alloc", "--insert-kills", "--usmp", "--lower-to-memref"],
    ["--import-memref", "--insert-kills", "--usmp", "--lower-to-memref=pool-mode=arg"],
    ["--usmp=algorithm=exact budget=20000", "--verify-plan", "--plan-report=format=c-header"],
    ["--coalesce=overlap=false", "--reuse", "--usmp=scope=module", "--plan-report=format=svg"],
]
"""What memplan-opt runs each mutant through (the README's and docs' pipelines)."""

NUMBERS = ["0", "-1", str(2**32), str(10**20)]
JUNK = ["(", ")", "{", "}", "[", "]", "<", ">", "%", "^", ":", "@", '"', "\x00", "\xff", "\u00e9"]


def corpus() -> list[Path]:
    """Every .mlir input of the lit suite and the examples (not lit's outputs)."""
    files = sorted((REPO / "test_lit").rglob("*.mlir")) + sorted((REPO / "examples").glob("*.mlir"))
    return [f for f in files if "Output" not in f.parts]


def mutate(text: str, rng: random.Random) -> str:
    """``text`` with one to three random mutations."""
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        kind = rng.randrange(8)
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[j])
        elif kind == 2:
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            numbers = list(re.finditer(r"\b\d+\b", text))
            if numbers:
                m = rng.choice(numbers)
                text = text[: m.start()] + rng.choice(NUMBERS) + text[m.end() :]
                continue
        elif kind == 4:
            names = sorted(set(re.findall(r"%[A-Za-z_][\w.]*", text)))
            if len(names) >= 2:
                a, b = rng.sample(names, 2)
                text = re.sub(re.escape(a) + r"\b", b, text, count=rng.randint(1, 3))
                continue
        elif kind == 5:
            position = rng.randrange(len(text) + 1)
            text = text[:position] + rng.choice(JUNK) + text[position:]
            continue
        elif kind == 6:
            text = text[: rng.randrange(len(text) + 1)]
            continue
        else:
            lines[i] = lines[i][::-1] if rng.random() < 0.2 else lines[i].replace(",", "", 1)
        text = "\n".join(lines)
    return text


@dataclass
class Outcome:
    """What one case did; ``problem`` is None when it passed."""

    tool: str
    argv: list[str]
    code: int | None
    problem: str | None
    stderr: str


class CaseTimeout(Exception):
    pass


@contextmanager
def _deadline(seconds: int) -> Iterator[list[bool]]:
    """Interrupt the block after ``seconds``; the yielded flag says whether it
    fired (the tool under test may catch the exception and exit 2)."""
    fired = [False]

    def expire(signum: int, frame: object) -> None:
        fired[0] = True
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield fired
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


SOLVE_EXITS = {0: ("optimal", "feasible"), 2: ("infeasible",), 3: ("unknown",)}
"""memplan-solve's exit status for each status its summary line prints."""


def solve_verdict_problem(code: int | None, stdout: str, argv: list[str]) -> str | None:
    """What is dishonest in memplan-solve's verdict, or None: its exit status
    must match the status it prints, ``infeasible`` must name its proof (a
    bound proof: the printed lower bound above ``--capacity``) and
    ``unknown`` its reason."""
    if code == 1:
        return None  # bad input: one error line, checked like every tool's
    fields = dict(part.split(" ", 1) for part in stdout.strip().split(", ") if " " in part)
    status = fields.get("status")
    if status not in SOLVE_EXITS.get(code or 0, ()):
        return f"exit code {code} with status {status}"
    if status == "infeasible":
        proof = fields.get("proof")
        if proof not in ("bound", "search"):
            return f"infeasible without a proof ({proof})"
        capacity = argv[argv.index("--capacity") + 1] if "--capacity" in argv else None
        if proof == "bound" and (capacity is None or int(fields["lower-bound"]) <= int(capacity)):
            return f"proof bound, but lower bound {fields['lower-bound']} <= capacity {capacity}"
    if status == "unknown" and fields.get("reason") not in ("budget", "timeout", "heuristic"):
        return f"unknown without a reason ({fields.get('reason')})"
    return None


def run_case(tool: str, main: Callable[[list[str]], int], argv: list[str], output: Path) -> Outcome:
    """Run ``main(argv)`` in process with ``output`` holding the sentinel."""
    output.write_text(SENTINEL)
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    problem: str | None = None
    fired = [False]
    try:
        with _deadline(CASE_SECONDS) as fired, redirect_stdout(out), redirect_stderr(err):
            code = main(argv)
    except CaseTimeout:
        problem = "hang"
    except SystemExit as exit_request:  # argparse paths of some tools
        code = exit_request.code if isinstance(exit_request.code, int) else 1
    except BaseException as error:  # noqa: BLE001 - any escape is the bug we look for
        problem = f"traceback: {type(error).__name__}: {error}"
    text = err.getvalue()
    if fired[0]:
        problem = f"hang (over {CASE_SECONDS} s)"
    if problem is None:
        if code not in (0, 1) and not (tool == "memplan-solve" and code in (2, 3)):
            problem = f"exit code {code}"
        elif "Traceback" in text or "internal error" in text:
            problem = "internal error"
        elif tool == "memplan-solve":
            problem = solve_verdict_problem(code, out.getvalue(), argv)
        elif code != 0 and output.read_text() != SENTINEL:
            problem = "output written on failure"
    return Outcome(tool, argv, code, problem, text[-2000:])


def opt_mutants(rng: random.Random, count: int) -> Iterator[tuple[str, list[str]]]:
    """The memplan-opt mutants a campaign draws first: text and pipeline flags."""
    files = corpus()
    for _ in range(count):
        source = rng.choice(files)
        yield mutate(source.read_text(errors="replace"), rng), list(rng.choice(PIPELINES))


def opt_cases(rng: random.Random, count: int, work: Path) -> Iterator[Outcome]:
    from memplan.tools.memplan_opt import main

    for index, (text, flags) in enumerate(opt_mutants(rng, count)):
        mutant = work / f"mutant-{index}.mlir"
        mutant.write_text(text, errors="replace")
        argv = [str(mutant), *flags, "--split-input-file", "-o", str(work / "out")]
        yield run_case("memplan-opt", main, argv, work / "out")


def solve_cases(rng: random.Random, count: int, work: Path) -> Iterator[Outcome]:
    from memplan.tools.memplan_solve import main

    sources = sorted((REPO / "test_lit" / "solve" / "Inputs").glob("*.csv"))
    sources += sorted((REPO.parent / "shared" / "benchmarks" / "minimalloc").glob("input*.csv"))
    for index in range(count):
        source = rng.choice(sources)
        mutant = work / f"mutant-{index}.csv"
        mutant.write_text(mutate(source.read_text(), rng))
        argv = [str(mutant), "-o", str(work / "out.csv"), "--budget", "20000"]
        if rng.random() < 0.5:
            argv += ["--capacity", rng.choice(["0", "12", "64", "1048576", "-5"])]
        yield run_case("memplan-solve", main, argv, work / "out.csv")


def _damaged_bytes(data: bytes, rng: random.Random) -> bytes:
    """``data`` cut short, or with one to eight bits flipped."""
    damaged = bytearray(data)
    if damaged and rng.random() < 0.5:
        return bytes(damaged[: rng.randrange(len(damaged))])
    for _ in range(rng.randint(1, 8)):
        if damaged:
            position = rng.randrange(len(damaged))
            damaged[position] ^= 1 << rng.randrange(8)
    return bytes(damaged)


def onnx_cases(rng: random.Random, count: int, work: Path) -> Iterator[Outcome]:
    from memplan.tools.memplan_import import main

    sources = sorted((REPO / "tests" / "fixtures" / "onnx").glob("*.onnx"))
    for index in range(count):
        mutant = work / f"mutant-{index}.onnx"
        mutant.write_bytes(_damaged_bytes(rng.choice(sources).read_bytes(), rng))
        argv = [str(mutant), "-o", str(work / "out.mlir")]
        yield run_case("memplan-import-onnx", main, argv, work / "out.mlir")


def tflite_cases(rng: random.Random, count: int, work: Path) -> Iterator[Outcome]:
    from memplan.tools.memplan_import import main

    sources = sorted((REPO / "tests" / "fixtures" / "tflite").glob("*.tflite"))
    for index in range(count):
        mutant = work / f"mutant-{index}.tflite"
        mutant.write_bytes(_damaged_bytes(rng.choice(sources).read_bytes(), rng))
        argv = [str(mutant), "-o", str(work / "out.mlir")]
        if rng.random() < 0.2:
            argv += ["--subgraph", str(rng.randrange(4))]
        yield run_case("memplan-import-tflite", main, argv, work / "out.mlir")


def campaign(cases: int, seed: int, keep: Path | None = None) -> tuple[int, list[Outcome]]:
    """``cases`` mutants (80% memplan-opt, 10% memplan-solve, 5% each
    importer) from ``seed``; returns the count run and the failures. With
    ``keep``, each failing mutant file is copied there."""
    rng = random.Random(seed)
    failures: list[Outcome] = []
    ran = 0
    solve_count = max(1, cases // 10)
    onnx_count = tflite_count = max(1, cases // 20)
    opt_count = max(0, cases - solve_count - onnx_count - tflite_count)
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        for generator, count in (
            (opt_cases, opt_count),
            (solve_cases, solve_count),
            (onnx_cases, onnx_count),
            (tflite_cases, tflite_count),
        ):
            for outcome in generator(rng, count, work):
                ran += 1
                if outcome.problem is not None:
                    failures.append(outcome)
                    if keep is not None:
                        keep.mkdir(parents=True, exist_ok=True)
                        shutil.copy(outcome.argv[0], keep)
    return ran, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--show", type=int, metavar="N", help="print memplan-opt mutant N of the campaign, and stop"
    )
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="copy each failing mutant file into DIR"
    )
    args = parser.parse_args(argv)
    if args.show is not None:
        opt_count = max(0, args.cases - max(1, args.cases // 10) - 2 * max(1, args.cases // 20))
        mutants = opt_mutants(random.Random(args.seed), opt_count)
        for index, (text, flags) in enumerate(mutants):
            if index == args.show:
                print(f"// memplan-opt {' '.join(flags)} --split-input-file\n{text}")
                return 0
        return 1
    ran, failures = campaign(args.cases, args.seed, args.keep)
    for outcome in failures:
        print(f"{outcome.tool} {' '.join(outcome.argv)}: {outcome.problem}\n{outcome.stderr}\n")
    print(f"{ran} mutants, {len(failures)} failures (seed {args.seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "tests"))
    sys.exit(main())
