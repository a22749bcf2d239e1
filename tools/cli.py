"""Pieces shared by memplan's command-line front ends."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class ToolArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors exit with status 1, not 2.

    memplan's tools keep exit status 2 for internal errors, so a bad command
    line is reported like any other user error.
    """

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")
