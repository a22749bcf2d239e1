"""ONNX's own command-line options, for `memplan-import`, `memplan-import-onnx`
and `memplan-run` (the registry adds them in a group of their own).
Standard library only: ``--help`` does not load ``onnx``."""

from __future__ import annotations

import argparse


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """``--input-value`` and ``--weights``."""
    group.add_argument(
        "--input-value",
        action="append",
        default=[],
        metavar="NAME=V[,V...]",
        help="bind a graph input to these values (row-major, its shape from the model); "
        "what they decide folds, e.g. an If on it becomes the branch taken; e.g. "
        "--input-value sr=16000 (repeatable)",
    )
    group.add_argument(
        "--weights",
        choices=("external", "inline"),
        default="external",
        help="external (default): globals without data, which stays in the "
        "ONNX file; inline: embed it as dense<...>",
    )
