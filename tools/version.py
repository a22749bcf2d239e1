"""Every memplan tool's ``--version`` text (imports no xDSL: ``memplan-solve``
uses it and stays xDSL-free)."""

from __future__ import annotations

from pathlib import Path

# importlib.metadata is imported on use: it is a third of memplan-solve's
# start-up (17 ms), and only --version needs it.


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
