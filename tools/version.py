"""Every memplan tool's ``--version`` text (imports no xDSL: ``memplan-solve``
uses it and stays xDSL-free)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

# importlib.metadata is imported on use, and the text is only built when
# ``--version`` is given: the import is a third of memplan-solve's start-up.


def memplan_version() -> str:
    """The installed distribution's version, or pyproject's in a checkout."""
    from importlib import metadata

    try:
        return metadata.version("memplan")
    except metadata.PackageNotFoundError:
        pass
    import tomllib

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        with pyproject.open("rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def version_text(prog: str) -> str:
    """``<prog> <memplan version> (xdsl <version>)``."""
    from importlib import metadata

    try:
        xdsl_version = metadata.version("xdsl")
    except metadata.PackageNotFoundError:
        xdsl_version = "unknown"
    return f"{prog} {memplan_version()} (xdsl {xdsl_version})"


class VersionAction(argparse.Action):
    """``--version``: prints ``version_text(parser.prog)`` and exits.

    Like argparse's ``"version"`` action, but the text is built only when
    the option is given.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print memplan's and xDSL's versions and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> NoReturn:
        print(version_text(parser.prog))
        parser.exit()
