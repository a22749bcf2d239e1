"""The CI-sized mutation campaign (``mutants.py`` runs the long one), and
checks that its pass criterion can fail."""

from __future__ import annotations

from pathlib import Path

from fuzz.mutants import SENTINEL, campaign, run_case

CI_CASES = 400
CI_SEED = 20261124


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
