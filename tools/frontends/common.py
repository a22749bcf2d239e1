"""What the model importers share: MLIR-safe names and printing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_$.]")


def sanitize_name(name: str) -> str:
    """An MLIR bare identifier for ``name``: other characters become ``_``."""
    cleaned = _INVALID_NAME_CHARS.sub("_", name)
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "t" + cleaned
    return cleaned


@dataclass
class UniqueNames:
    """Hands out distinct symbol names, suffixing ``_1``, ``_2``, ... on clashes."""

    taken: set[str] = field(default_factory=set[str])

    def get(self, base: str) -> str:
        name = base
        counter = 0
        while name in self.taken:
            counter += 1
            name = f"{base}_{counter}"
        self.taken.add(name)
        return name


def module_text(module: ModuleOp) -> str:
    """``module`` printed as xDSL/MLIR text, with a final newline."""
    stream = StringIO()
    Printer(stream=stream).print_op(module)
    stream.write("\n")
    return stream.getvalue()
