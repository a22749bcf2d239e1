"""The targets memplan writes plans for: the one place an exporter is
registered.

An exporter is a package under ``tools/exporters/<target>/`` whose command
module implements ``protocol`` (``add_arguments``, ``export``). One
``ExporterEntry`` in ``BUILTIN_EXPORTERS`` names it; an exporter outside
the repository names its ``ExporterEntry`` with an entry point in the
``memplan.exporters`` group instead. `memplan-export TARGET` finds every
target here; `memplan-export-tflite` and `memplan-export-pte` are
`memplan-export tflm` and `memplan-export pte`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module
from types import ModuleType
from typing import cast

ENTRY_POINT_GROUP = "memplan.exporters"
"""The entry-point group of exporters registered from outside the repository."""


@dataclass(frozen=True)
class ExporterEntry:
    """One target: ``key`` is `memplan-export`'s TARGET, ``description`` its
    line in the help, ``input`` what the input file is (the help of the
    positional argument), ``command`` the module implementing ``protocol``."""

    key: str
    description: str
    input: str
    command: str

    def load(self) -> ModuleType:
        """The command module (``add_arguments``, ``export``)."""
        return import_module(self.command)


BUILTIN_EXPORTERS = (
    ExporterEntry(
        "tflm",
        "a .tflite model with memplan's plan as TFLite Micro's offline plan "
        "(OfflineMemoryAllocation metadata)",
        "the .tflite file",
        "memplan.tools.exporters.tflm.command",
    ),
    ExporterEntry(
        "pte",
        "a built ExecuTorch program (.pte) re-planned by memplan",
        "the .pte file",
        "memplan.tools.exporters.executorch.command",
    ),
)
"""The exporters in this repository, in the order `memplan-export` lists them."""


@cache
def registered() -> tuple[ExporterEntry, ...]:
    """Every exporter: the built-in ones, then the entry points' (by name)."""
    # Here, not at the top: a plugin's package may import this module.
    from memplan.passes.planning.plugins import entry_point_objects

    plugins = entry_point_objects(ENTRY_POINT_GROUP)
    return BUILTIN_EXPORTERS + tuple(cast(ExporterEntry, entry) for _, entry in plugins)


def exporter(key: str) -> ExporterEntry:
    """The exporter registered as ``key`` (``KeyError`` if none)."""
    for entry in registered():
        if entry.key == key:
            return entry
    raise KeyError(key)
