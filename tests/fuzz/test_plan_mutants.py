"""A CI-sized plan-mutant campaign (``plan_mutants.py`` runs longer ones):
verify-plan rejects every mutant the interpreter finds unsound, and each
check it makes is needed for that."""

from __future__ import annotations

import pytest

import memplan.passes.verify_plan as verify_plan
from fuzz.plan_mutants import campaign

CI_PROGRAMS = 6
CI_SEED = 7
SKIP_PROGRAMS = 4
"""The first programs of the sample: enough for each skipped check to let one through."""


@pytest.mark.slow
def test_verify_plan_rejects_every_unsound_mutant() -> None:
    tally = campaign(CI_PROGRAMS, CI_SEED)
    # The sample is large enough to mean something: many mutants, most unsound.
    assert tally.programs == CI_PROGRAMS and tally.unsound > 100
    assert not tally.accepted_unsound, "\n\n".join(tally.accepted_unsound[:3])


@pytest.mark.parametrize(
    "check",
    [
        "_pool_findings",  # storages sharing a pool's bytes while live together
        "_used_findings",  # a storage ending past its pool's `used`
        "_storage_findings",  # tensors sharing a coalesced storage's bytes
    ],
)
def test_campaign_fails_when_verify_plan_skips_a_check(
    check: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The campaign can fail: without any one of these checks, verify-plan
    accepts unsound mutants of the sample's first programs."""
    monkeypatch.setattr(verify_plan, check, lambda *args, **kwargs: [])
    tally = campaign(SKIP_PROGRAMS, CI_SEED, until_accepted=True)
    assert tally.accepted_unsound
