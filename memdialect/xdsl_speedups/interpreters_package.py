"""``xdsl.interpreters``' submodules imported without the package's ``__init__``.

memplan's interpreter uses four of xDSL 0.74's interpreter modules (arith,
cf, func, scf), but importing any submodule first runs
``xdsl/interpreters/__init__.py``, which imports every upstream interpreter
(RISC-V, Snitch, PDL, linalg, ...) for its ``register_implementations``:
more than 0.1 s of each ``memplan-run``. Here the package is put in
``sys.modules`` as a module of its path alone, so a submodule imports its
own dependencies only; the first access to any other name of the package
(``register_implementations``) runs the real ``__init__`` in that module,
so every name of the package is there as xDSL defines it; a submodule
asked for by name (``from xdsl.interpreters import arith``) is imported.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

PACKAGE = "xdsl.interpreters"


def _deferred_package() -> ModuleType | None:
    """The package as a module of its path, its ``__init__`` run on the
    first access to a name it does not have; None if it is not found."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return None
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(name: str) -> object:  # noqa: N807 - a module's own hook (PEP 562)
        # `from xdsl.interpreters import arith` asks for a submodule first.
        if not name.startswith("__") and importlib.util.find_spec(f"{PACKAGE}.{name}"):
            return importlib.import_module(f"{PACKAGE}.{name}")
        del package.__getattr__  # the real names from here on
        loader.exec_module(package)
        return getattr(package, name)

    setattr(package, "__getattr__", __getattr__)  # noqa: B010 - a module attribute
    return package


def import_interpreters_without_package_init() -> None:
    """Install the deferred package (``memplan.dialect.xdsl_speedups.ENABLED``
    decides), unless it is imported already."""
    if PACKAGE in sys.modules:
        return
    package = _deferred_package()
    if package is not None:
        sys.modules[PACKAGE] = package
        # What the import system does for a package it loads itself.
        setattr(sys.modules["xdsl"], "interpreters", package)  # noqa: B010
