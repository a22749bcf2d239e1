"""C identifiers and comments for the C header (``c_header``, ``c_functions``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for "
    "goto if inline int long register restrict return short signed sizeof static struct "
    "switch typedef union unsigned void volatile while".split()
)


def sanitise(name: str) -> str:
    """``name`` with every run of non-alphanumerics as one ``_``, trimmed (may be empty)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def comment(text: str) -> str:
    """``text`` safe inside ``/* */``."""
    return text.replace("*/", "* /").replace("/*", "/ *")


class UniqueNames:
    """Hands out unique identifiers."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken: set[str] = set(taken)

    def unique(self, stem: str, suffixes: Iterable[str] = ("",)) -> str:
        """The first of ``stem``, ``stem_2``, ... for which every ``stem + suffix`` is free."""
        suffixes = tuple(suffixes)
        candidate = stem
        counter = 1
        while any(candidate + suffix in self.taken for suffix in suffixes):
            counter += 1
            candidate = f"{stem}_{counter}"
        self.taken.update(candidate + suffix for suffix in suffixes)
        return candidate
