"""A CI-sized sample of the random-program campaign (``programs.py`` runs
the long one), and checks that its independent checks can fail."""

from __future__ import annotations

import random

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, i64

from fuzz.programs import (
    ALGORITHMS,
    ProgramGenerator,
    campaign,
    check_program,
    contract_kernel,
    overlaps_from_report,
)
from memplan.dialect.ops import INPLACE_ATTR

CI_PROGRAMS = 2 * len(ALGORITHMS)  # every algorithm twice
CI_SEED = 7


def test_ci_sample_of_programs_plans_soundly() -> None:
    ran, failures = campaign(CI_PROGRAMS, CI_SEED, max_calls=25)
    assert ran == CI_PROGRAMS
    assert not failures, "\n\n".join(failures)


def test_overlap_check_sees_shared_bytes_and_respects_branches() -> None:
    def report(a_branch: list[list[int]], b_offset: int) -> dict[str, object]:
        buffers = [
            {
                "name": "a",
                "pool": "p",
                "offset": 0,
                "size": 64,
                "start": 0,
                "end": 5,
                "branch": a_branch,
            },
            {
                "name": "b",
                "pool": "p",
                "offset": b_offset,
                "size": 64,
                "start": 2,
                "end": 6,
                "branch": [[3, 1]],
            },
        ]
        return {"functions": [{"name": "f", "buffers": buffers}]}

    assert overlaps_from_report(report([], 32)) == ["@f: a and b overlap"]
    assert overlaps_from_report(report([], 64)) == []
    # The two branches of one scf.if never run together.
    assert overlaps_from_report(report([[3, 0]], 32)) == []


def test_mlir_check_reports_what_mlir_opt_rejects() -> None:
    # `false` stands in for an mlir-opt that rejects the lowered IR: each
    # pipeline that planned reports it.
    source = ProgramGenerator(random.Random(CI_SEED), max_calls=8).program()
    problems = check_program(source, "greedy-by-size", ["usmp"], mlir_opt="false")
    assert len(problems) == 1 and problems[0].startswith("usmp{")
    assert "lower-to-memref: mlir-opt" in problems[0]


def test_contract_kernel_sees_an_undeclared_operand_in_its_output() -> None:
    """The campaign's kernel reads the operands its result may not take
    after scribbling on the result: an output sharing an undeclared
    operand's bytes (the same value at two operands, an alias) changes the
    result; sharing the declared operand's does not."""
    rng = np.random.default_rng(0)
    a, b = rng.random(4).astype(np.float32), rng.random(4).astype(np.float32)
    declared = {INPLACE_ATTR: DenseArrayBase.from_list(i64, [0, 1])}
    fresh = np.zeros(4, np.float32)
    contract_kernel([a, b], [fresh], declared)
    # Result 0 in the declared operand 1's bytes: the same result.
    shared = b.copy()
    contract_kernel([a, shared], [shared], declared)
    assert shared.tobytes() == fresh.tobytes()
    # Result 0 in operand 0's bytes, never declared: another result.
    clobbered = a.copy()
    contract_kernel([clobbered, b], [clobbered], declared)
    assert clobbered.tobytes() != fresh.tobytes()
