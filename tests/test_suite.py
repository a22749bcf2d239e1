"""The test suite's own promises: the ``slow`` list of conftest.py names
tests that exist (a renamed test would silently join the quick subset)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import SLOW

TESTS = Path(__file__).resolve().parent


def test_every_slow_entry_names_a_test() -> None:
    missing = []
    for entry in sorted(SLOW):
        path, _, name = entry.partition("::")
        function = name.partition("[")[0]
        tree = ast.parse((TESTS / path).read_text())
        names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        if function not in names:
            missing.append(entry)
    assert not missing
    assert len(SLOW) >= 5  # the list is read
