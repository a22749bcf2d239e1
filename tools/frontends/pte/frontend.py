"""ExecuTorch programs behind ``protocol.Frontend``: a ``.pte``'s
``forward`` method imported for planning, verification and reports, or
with ``--planned`` (``PteImportOptions.planned``) as the program itself
planned it, for ``verify-plan``. `memplan-run` does not run them: memplan has no NumPy kernels for ATen's
operators (ExecuTorch's runtime runs what ``memplan-export pte`` writes)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp

from memplan.tools.frontends.protocol import FrontendError, ImportedModel, ImportOptions
from memplan.tools.frontends.pte.importer import PTE_ATTR_PREFIX, import_program
from memplan.tools.frontends.pte.planned import import_planned
from memplan.tools.frontends.pte.program import load_pte

if TYPE_CHECKING:
    from memplan.dialect.interpreter import KernelResolver


@dataclass(frozen=True)
class PteImportOptions(ImportOptions):
    """ExecuTorch's options (``arguments``): ``planned`` imports the method
    in the `memory` dialect at the program's own offsets (``planned``)
    instead of the value-semantic form."""

    planned: bool = False


class PteFrontend:
    """ExecuTorch programs; their shapes are fixed when they are built."""

    tolerance = (0.0, 0.0)
    options_type = PteImportOptions

    def parse_options(self, args: argparse.Namespace) -> ImportOptions:
        for option in ("input_shape", "upper_bound", "lower_bound"):
            if getattr(args, option):
                flag = "--" + option.replace("_", "-")
                raise FrontendError(f"{flag}: a .pte's shapes are fixed when ExecuTorch builds it")
        return PteImportOptions(planned=bool(getattr(args, "planned", False)))

    def import_module(self, path: str, options: ImportOptions) -> ModuleOp:
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as error:
            raise FrontendError(f"cannot read {path}: {error.strerror}") from None
        program = load_pte(data, path).program
        if isinstance(options, PteImportOptions) and options.planned:
            return import_planned(program)
        return import_program(program)

    def import_for_run(self, path: str, options: ImportOptions) -> ImportedModel:
        raise FrontendError(
            f"{path}: memplan-run does not run ExecuTorch programs (memplan has no kernels "
            "for ATen's operators); ExecuTorch's runtime runs what memplan-export pte writes"
        )

    def kernel_resolver(self) -> KernelResolver:
        return lambda declaration: None

    def io_names(self, main: func.FuncOp, key: Literal["inputs", "outputs"]) -> list[str] | None:
        recorded = main.attributes.get(PTE_ATTR_PREFIX + key)
        if isinstance(recorded, ArrayAttr):
            return [f"v{v.value.data}" for v in recorded.data if isinstance(v, IntegerAttr)]
        return None

    def weights(self, path: str, module: ModuleOp, options: ImportOptions) -> dict[str, np.ndarray]:
        raise FrontendError(f"--weights-from {path}: memplan-run does not run ExecuTorch programs")


PTE_FRONTEND = PteFrontend()
