"""The CI-sized mutation campaign (``mutants.py`` runs the long one), and
checks that its pass criterion can fail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fuzz.mutants import SENTINEL, campaign, run_case

TIGHT = Path(__file__).resolve().parents[2] / "test_lit" / "solve" / "Inputs" / "tight.csv"
"""Fits 384 bytes, but the first greedy plan leaves a buffer out."""
CI_CASES = 250
CI_SEED = 20261124


@pytest.mark.slow
def test_ci_sample_of_mutants_gives_diagnostics_only() -> None:
    ran, failures = campaign(CI_CASES, CI_SEED)
    assert ran == CI_CASES
    assert not failures, "\n\n".join(
        f"{f.tool} {' '.join(f.argv)}: {f.problem}\n{f.stderr}" for f in failures
    )


def test_criterion_catches_tracebacks_exit_2_and_clobbered_output(tmp_path: Path) -> None:
    output = tmp_path / "out"

    def raises(argv: list[str]) -> int:
        raise KeyError("bb1")

    def internal(argv: list[str]) -> int:
        return 2

    def clobbers(argv: list[str]) -> int:
        output.write_text("half a result")
        return 1

    def fine(argv: list[str]) -> int:
        return 1

    assert run_case("t", raises, [], output).problem == "traceback: KeyError: 'bb1'"
    assert run_case("t", internal, [], output).problem == "exit code 2"
    assert run_case("t", clobbers, [], output).problem == "output written on failure"
    outcome = run_case("t", fine, [], output)
    assert outcome.problem is None and output.read_text() == SENTINEL


def test_criterion_checks_memplan_solves_verdicts(tmp_path: Path) -> None:
    """memplan-solve's exits 2 and 3 pass only with the matching status, a
    proof (a bound proof the printed numbers confirm) or a reason; its real
    verdicts, run through its ``main``, pass."""
    from memplan.tools.memplan_solve import main

    output = tmp_path / "out.csv"
    problem = tmp_path / "toy.csv"
    problem.write_text("id,lower,upper,size\na,0,3,4\nb,1,4,4\nc,2,5,4\n")
    for argv, code in [
        ([str(problem), "--capacity", "12"], 0),
        ([str(problem), "--capacity", "11"], 2),
        ([str(TIGHT), "--capacity", "384", "--budget", "0"], 3),
    ]:
        outcome = run_case("memplan-solve", main, argv, output)
        assert (outcome.code, outcome.problem) == (code, None), outcome.stderr

    def printing(code: int, line: str) -> Callable[[list[str]], int]:
        def fake(argv: list[str]) -> int:
            print(line)
            return code

        return fake

    claims = [
        (2, "status unknown, peak -, reason budget", "exit code 2 with status unknown"),
        (3, "status infeasible, peak -, proof bound", "exit code 3 with status infeasible"),
        (2, "status infeasible, peak -, lower-bound 12", "infeasible without a proof (None)"),
        (
            2,
            "status infeasible, peak -, lower-bound 12, proof bound",
            "proof bound, but lower bound 12 <= capacity 12",
        ),
        (3, "status unknown, peak -", "unknown without a reason (None)"),
        (0, "status unknown, peak -, reason budget", "exit code 0 with status unknown"),
    ]
    for code, line, found in claims:
        argv = [str(problem), "--capacity", "12"]
        assert run_case("memplan-solve", printing(code, line), argv, output).problem == found
