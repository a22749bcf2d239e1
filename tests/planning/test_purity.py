"""The planning core is xDSL-free in fact, not only on paper.

`memplan.passes.planning` (and `memplan-solve`, which drives it) must load
without xDSL: each check imports the module in a fresh interpreter and fails
if any `xdsl` module ended up in `sys.modules`.
"""

import subprocess
import sys

import pytest

PROBE = """
import sys, importlib
importlib.import_module({module!r})
loaded = sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl."))
print(len(loaded), loaded[:5])
"""


@pytest.mark.parametrize(
    "module",
    [
        "memplan.passes.planning",
        "memplan.passes.planning.algorithms",
        "memplan.passes.planning.io",
        "memplan.tools.memplan_solve",
    ],
)
def test_module_loads_no_xdsl(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.startswith("0 "), f"{module} loads xDSL: {result.stdout}"
