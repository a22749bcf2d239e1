"""pytest configuration: hypothesis profiles, and the tests marked slow.

``ci`` (the default) keeps each property test's own example count, which is
sized so the whole suite stays within minutes on 2 cores. ``thorough`` runs
ten times as many examples of every property test (``memplan_testing.examples``
scales them) and prints hypothesis' statistics:

    MEMPLAN_HYPOTHESIS_PROFILE=thorough pytest -W error tests
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile(
    "thorough", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("MEMPLAN_HYPOTHESIS_PROFILE", "ci"))


SLOW = {
    "fuzz/test_mutants.py::test_ci_sample_of_mutants_gives_diagnostics_only",
    "fuzz/test_programs.py::test_ci_sample_of_programs_plans_soundly",
    "test_lifetimes.py::test_call_graph_storages_live_together_at_run_time_conflict",
    "test_onnx_import.py::test_light_model_imports_and_plans[light_densenet121]",
    "test_onnx_import.py::test_every_conformance_case_imports_or_is_refused_cleanly",
    "test_coalesce_reuse.py::test_reuse_is_never_above_coalesce_without_overlap",
    "test_coalesce_reuse.py::test_passes_preserve_the_program",
    "test_docs.py::test_shown_commands_print_what_the_page_shows[tools.md]",
    "test_run.py::test_light_shufflenet_scheduled_below_its_given_order",
    "test_run.py::test_light_squeezenet_end_to_end",
}
"""The tests over ~10 s (pytest --durations on 2 cores, 2026-11-25), relative
to tests/: marked ``slow`` here, in one list, so that ``pytest -m "not slow"``
(``run_tests.sh --quick``) is a documented subset. Each is still run by the
full suite; tests/test_suite.py checks that every entry names a test."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.removeprefix("tests/") in SLOW:
            item.add_marker(pytest.mark.slow)
