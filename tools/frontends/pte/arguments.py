"""ExecuTorch's own command-line options, for `memplan-import` and
`memplan-run` (the registry adds them in a group of their own). Standard
library only: ``--help`` does not load ExecuTorch's reader."""

from __future__ import annotations

import argparse


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``--planned``."""
    group.add_argument(
        "--planned",
        action="store_true",
        help="import the method in the memory dialect as the program planned it: one pool "
        "per memory id (@pte_memID), each placed tensor pinned at its offset, kills after "
        "its last instruction; for memplan-opt --verify-plan",
    )
