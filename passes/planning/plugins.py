"""Registry entries from outside the repository: Python entry points.

memplan's registries (offset algorithms, report formats, front ends,
exporters) each name their entries in one place and take more from an
entry-point group (``memplan.algorithms``, ``memplan.report_formats``,
``memplan.frontends``, ``memplan.exporters``): a package installed beside
memplan declares ``[project.entry-points."memplan.algorithms"] name =
"module:object"`` and its entry is there, as xDSL's ``xdsl.universe``
plugins are. Standard library only, like the rest of ``passes/planning``.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _entry_points() -> Any:
    """Every installed entry point, read once per process (a read scans
    every distribution's metadata: tens of milliseconds)."""
    from importlib.metadata import entry_points  # only when a registry is built

    return entry_points()


def entry_point_objects(group: str) -> list[tuple[str, Any]]:
    """``(name, object)`` of each entry point in ``group``, by name (the
    object imported: a plugin's module loads here)."""
    points = sorted(_entry_points().select(group=group), key=lambda point: point.name)
    return [(point.name, point.load()) for point in points]


def entry_point_names(group: str) -> list[str]:
    """The names of the entry points in ``group``, by name, without importing
    them (``--help`` lists a plugin's choices without loading the plugin)."""
    return sorted(point.name for point in _entry_points().select(group=group))
