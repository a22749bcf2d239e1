"""The interface every exporter implements, for `memplan-export`.

An exporter's command module (``ExporterEntry.command``) defines two
functions:

* ``add_arguments(parser)``: the target's own options (the command adds
  the input and ``-o``). It runs for ``--help``: it imports nothing heavy.
* ``export(args, progress) -> Export``: the bytes of the output and the
  lines that describe it, or ``ExportError`` (one line) for input it
  refuses; ``progress.set(stage)`` names the stage on a terminal.

`memplan-export` writes ``Export.data`` to ``-o`` only when ``export``
returns (never a part of it), then prints each summary line after the
output's path. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class ExportError(Exception):
    """An input or option an exporter refuses; the message names what and
    why (the command prints it as one line)."""


@dataclass(frozen=True)
class Export:
    """What an exporter wrote: ``data``, and ``summary``, the lines
    `memplan-export` prints after ``OUT: ``."""

    data: bytes
    summary: list[str] = field(default_factory=list[str])


class Progress(Protocol):
    """What ``export`` may tell the command of its stages."""

    def set(self, step: str) -> None:
        """Name the stage now running (shown on a terminal after a delay)."""
        ...
