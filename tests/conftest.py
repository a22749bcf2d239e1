"""pytest configuration: hypothesis profiles. (Tests over ~10 s on 2 cores
carry ``@pytest.mark.slow`` themselves; ``run_tests.sh --quick`` leaves them out.)

``ci`` (the default) keeps each property test's own example count, which is
sized so the whole suite stays within minutes on 2 cores, and is
derandomized: every run draws the same examples, so a CI failure reproduces
and the suite's time does not move with the draw. ``thorough`` searches at
random, ten times as many examples of every property test
(``memplan_testing.examples`` scales them), and prints hypothesis'
statistics:

    MEMPLAN_HYPOTHESIS_PROFILE=thorough pytest -W error tests
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
    derandomize=True,
)
settings.register_profile(
    "thorough", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("MEMPLAN_HYPOTHESIS_PROFILE", "ci"))
