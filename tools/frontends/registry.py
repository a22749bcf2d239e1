"""The model formats memplan reads: the one place a front end is registered.

A front end is a package under ``tools/frontends/<format>/`` with two
parts: an object implementing ``protocol.Frontend`` (it reads, imports and
runs models), and a light module whose ``add_arguments(group)`` declares
the format's own command-line options (standard library only: ``--help``
loads neither xDSL nor the format's reader). One ``FrontendEntry`` in
``BUILTIN_FRONTENDS`` names both; a front end outside the repository names
its ``FrontendEntry`` with an entry point in the ``memplan.frontends``
group instead (``[project.entry-points."memplan.frontends"]``, as xDSL's
``xdsl.universe`` plugins do). `memplan-import`, `memplan-run` and the
per-format commands find every format here, by the model's suffix.

Each format's options are added to the tools' parsers in a group of its
own; two formats may not declare the same option. The options every format
shares (``--input-shape``, ``--upper-bound``) are the tools'.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from memplan.tools.frontends.protocol import Frontend

ENTRY_POINT_GROUP = "memplan.frontends"
"""The entry-point group of front ends registered from outside the repository."""


@dataclass(frozen=True)
class FrontendEntry:
    """One model format: ``key`` is how ``--format`` names it, ``name`` how
    diagnostics and the help do; ``suffixes`` the files it reads;
    ``frontend`` the ``module:attribute`` of its ``protocol.Frontend``
    object (imported when first used); ``arguments`` a module defining
    ``add_arguments(group)``, or ``None`` for a format without options."""

    key: str
    name: str
    suffixes: tuple[str, ...]
    frontend: str
    arguments: str | None = None

    def load(self) -> Frontend:
        """The front end object (importing its package)."""
        module, _, attribute = self.frontend.partition(":")
        return cast("Frontend", getattr(import_module(module), attribute))

    def add_arguments(self, parser: argparse.ArgumentParser) -> list[str]:
        """Add this format's options to ``parser`` in a group titled for
        it; the ``dest`` of each (to tell which were given)."""
        if self.arguments is None:
            return []
        group = parser.add_argument_group(f"{self.name} options")
        import_module(self.arguments).add_arguments(group)
        return [action.dest for action in group._group_actions]


BUILTIN_FRONTENDS = (
    FrontendEntry(
        "onnx",
        "ONNX",
        (".onnx",),
        "memplan.tools.frontends.onnx.frontend:ONNX_FRONTEND",
        "memplan.tools.frontends.onnx.arguments",
    ),
    FrontendEntry(
        "tflite",
        "TFLite",
        (".tflite",),
        "memplan.tools.frontends.tflite.frontend:TFLITE_FRONTEND",
        "memplan.tools.frontends.tflite.arguments",
    ),
    FrontendEntry(
        "pte",
        "ExecuTorch",
        (".pte",),
        "memplan.tools.frontends.pte.frontend:PTE_FRONTEND",
        "memplan.tools.frontends.pte.arguments",
    ),
)
"""The front ends in this repository, in the order the tools list them."""


@cache
def registered() -> tuple[FrontendEntry, ...]:
    """Every front end: the built-in ones, then the entry points' (by name)."""
    # Here, not at the top: a plugin's package may import this module.
    from memplan.passes.planning.plugins import entry_point_objects

    plugins = entry_point_objects(ENTRY_POINT_GROUP)
    return BUILTIN_FRONTENDS + tuple(cast(FrontendEntry, entry) for _, entry in plugins)


def suffixes() -> list[str]:
    """Every registered suffix, for diagnostics (``.onnx, .tflite``)."""
    return [suffix for entry in registered() for suffix in entry.suffixes]


def entry_for(path: str) -> FrontendEntry | None:
    """The front end reading ``path`` (by its suffix), or ``None``."""
    suffix = Path(path).suffix
    return next((entry for entry in registered() if suffix in entry.suffixes), None)


def entry_named(key: str) -> FrontendEntry:
    """The front end ``--format key`` names (``KeyError`` if none)."""
    for entry in registered():
        if entry.key == key:
            return entry
    raise KeyError(key)


def frontend(key: str) -> Frontend:
    """The front end object registered as ``key`` (``onnx``, ``tflite``)."""
    return entry_named(key).load()


def all_frontends() -> list[Frontend]:
    """Every registered front end object, in registry order."""
    return [entry.load() for entry in registered()]


def add_shared_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options every format takes (``--input-shape``,
    ``--upper-bound``, ``--lower-bound``)."""
    parser.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="fix a graph input's shape (ONNX: any dim; TFLite: its -1 dims, '?' keeps one "
        "dynamic), e.g. data_0=1x3x224x224 (repeatable)",
    )
    parser.add_argument(
        "--upper-bound",
        action="append",
        default=[],
        metavar="SYMBOL=N",
        help="keep a dynamic dim of the graph inputs dynamic, at most N (repeatable): an "
        "ONNX symbol (e.g. sequence_length=4096) or INPUT:AXIS (a TFLite -1 dim, or an ONNX "
        "dim without a symbol), e.g. x:0=8",
    )
    parser.add_argument(
        "--lower-bound",
        action="append",
        default=[],
        metavar="SYMBOL=N",
        help="with --upper-bound of the same dim: it is at least N (default 1); shape "
        "reasoning uses the range (a dim never 1 never broadcasts) and memplan-run refuses "
        "sizes outside it (repeatable)",
    )


def add_format_arguments(
    parser: argparse.ArgumentParser, entries: tuple[FrontendEntry, ...] | None = None
) -> dict[str, list[str]]:
    """Add each format's options (``entries``, default every registered
    one) to ``parser``; the ``dest``s each format added, by its key."""
    return {entry.key: entry.add_arguments(parser) for entry in entries or registered()}


def foreign_options(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    dests: dict[str, list[str]],
    key: str,
) -> list[str]:
    """The options of formats other than ``key`` that ``args`` sets to
    something other than their default, as spelt on the command line."""
    given: list[str] = []
    for other, names in dests.items():
        if other == key:
            continue
        for action in parser._actions:
            if action.dest in names and getattr(args, action.dest) != action.default:
                given.append(action.option_strings[0] if action.option_strings else action.dest)
    return given
