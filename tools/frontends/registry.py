"""The model formats memplan reads, by file suffix: the one place a new
front end is registered (its package under ``tools/frontends/`` implements
``protocol.Frontend``). Each entry loads its front end when first asked, so
naming the suffixes costs no import of ONNX, TFLite or xDSL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memplan.tools.frontends.protocol import Frontend


def _onnx() -> Frontend:
    from memplan.tools.frontends.onnx.frontend import ONNX_FRONTEND

    return ONNX_FRONTEND


def _tflite() -> Frontend:
    from memplan.tools.frontends.tflite.frontend import TFLITE_FRONTEND

    return TFLITE_FRONTEND


FRONTENDS: dict[str, Callable[[], Frontend]] = {
    ".onnx": _onnx,
    ".tflite": _tflite,
}
"""Front ends by file suffix, in the order `memplan-run` asks them."""


def frontend_for(path: str) -> Frontend | None:
    """The front end reading ``path`` (by its suffix), or ``None``."""
    load = FRONTENDS.get(Path(path).suffix)
    return load() if load is not None else None


def frontend(suffix: str) -> Frontend:
    """The front end registered for ``suffix`` (``.onnx``, ``.tflite``)."""
    return FRONTENDS[suffix]()


def tflite_offline_plan() -> ModuleType:
    """TFLite's offline-plan writer (``tflite.offline_plan``): TFLM's
    ``OfflineMemoryAllocation`` from a planned module, for `memplan-export-tflite`."""
    from memplan.tools.frontends.tflite import offline_plan

    return offline_plan


def all_frontends() -> list[Frontend]:
    """Every registered front end, in registry order."""
    return [load() for load in FRONTENDS.values()]
