"""Every memplan tool's argument parser (a library, not a tool).

One command-line shape for all of them: a usage error is one line,
``<tool>: error: <message> (see <tool> --help)``, exit status 1 (the status
of every user error; memplan-opt keeps 2 for internal errors), an unknown
option gets a "did you mean", and ``--version`` is there.

Imports only argparse, difflib and ``memplan.tools.version``: ``--help`` and
``--version`` must not load xDSL or NumPy.
"""

from __future__ import annotations

import argparse
import difflib
import re
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


class ToolArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line with exit status 1
    (not argparse's usage dump and 2), with "did you mean" for a misspelt
    option, and which gives every tool ``--version``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=VersionAction)

    def error(self, message: str) -> NoReturn:
        message = suggest_options(message, self._option_string_actions)
        self.exit(EXIT_USER_ERROR, usage_error(self.prog, message) + "\n")
