"""Every memplan tool's argument parser (a library, not a tool).

One command-line shape for all of them: a usage error is one line,
``<tool>: error: <message> (see <tool> --help)``, exit status 1 (the status
of every user error; memplan-opt keeps 2 for internal errors), an unknown
option gets a "did you mean", and ``--version`` is there.

Imports only argparse, difflib, os, re, sys and ``memplan.tools.version``:
``--help`` and ``--version`` must not load xDSL or NumPy (nor ``shutil``,
which argparse's own formatter imports to read the terminal's width).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Iterable
from typing import Any, NoReturn

from memplan.tools.version import VersionAction

EXIT_USER_ERROR = 1
"""Bad command line or input: the exit status of every tool's user errors."""

_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")


def suggest_options(message: str, known: Iterable[str]) -> str:
    """``message`` (argparse's) with a "did you mean" for the unrecognized
    ``--options`` close to one of ``known``: ``unrecognized arguments: --plna;
    did you mean --plan?``."""
    found = _UNRECOGNIZED.fullmatch(message)
    if found is None:
        return message
    options = sorted(set(known))
    hints: list[tuple[str, str]] = []
    for word in found.group(1).split():
        name = word.partition("=")[0]
        close = (
            difflib.get_close_matches(name, options, n=1, cutoff=0.8)
            if name.startswith("--")
            else []
        )
        if close:
            hints.append((name, close[0]))
    if not hints:
        return message
    if len(hints) == 1:
        return f"{message}; did you mean {hints[0][1]}?"
    return f"{message}; did you mean {', '.join(f'{good} for {bad}' for bad, good in hints)}?"


def usage_error(prog: str, message: str) -> str:
    """The one line a usage error prints (without the newline)."""
    return f"{prog}: error: {message} (see {prog} --help)"


def terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it
    (``COLUMNS``, else stdout's terminal, else 80), without importing
    ``shutil``: argparse would import it (and its compression modules) on
    every tool's start, to format a help text most runs never print."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, its width from ``terminal_columns``."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class ToolArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line with exit status 1
    (not argparse's usage dump and 2), with "did you mean" for a misspelt
    option, and which gives every tool ``--version``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=VersionAction)

    def error(self, message: str) -> NoReturn:
        message = suggest_options(message, self._option_string_actions)
        self.exit(EXIT_USER_ERROR, usage_error(self.prog, message) + "\n")
