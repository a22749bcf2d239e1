"""TFLite's own command-line options, for `memplan-import`,
`memplan-import-tflite` and `memplan-run` (the registry adds them in a group
of their own). Standard library only: ``--help`` does not load the
flatbuffer reader."""

from __future__ import annotations

import argparse


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``--subgraph`` and ``--inputs-in-arena``."""
    group.add_argument(
        "--subgraph",
        type=int,
        default=0,
        metavar="N",
        help="the subgraph to import (default: 0, the model's main subgraph)",
    )
    group.add_argument(
        "--inputs-in-arena",
        action="store_true",
        help="copy each input into planned workspace first (@tfl.INPUT_COPY), "
        "as TFLite and TFLM hold inputs in their arena",
    )
