"""How memplan prints IR: every value under a name of its own.

``MemplanPrinter`` is what ``memplan-opt`` (``MemplanMLIRTarget``) and the
importers (``module_text``) print with: ``DistinctNamePrinter`` (a fix for
xDSL's printer, ``memplan.dialect.xdsl_workarounds``), with the speed paths
of ``memplan.dialect.xdsl_speedups`` when they are on. ``printed_names``
gives the names it prints, so that reports, the C header and diagnostics
name storages and tensors as the IR does.
"""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.targets.mlir import MLIRTarget

from memplan.dialect.xdsl_speedups import ENABLED
from memplan.dialect.xdsl_speedups.printer import FastPrinter
from memplan.dialect.xdsl_workarounds.printer import DistinctNamePrinter

MemplanPrinter: type[DistinctNamePrinter] = FastPrinter if ENABLED else DistinctNamePrinter
"""The printer memplan's tools print with."""


def module_text(module: ModuleOp) -> str:
    """``module`` printed as xDSL/MLIR text, with a final newline, each
    value under a name of its own (``MemplanPrinter``): what the
    importers write."""
    stream = StringIO()
    MemplanPrinter(stream=stream).print_op(module)
    stream.write("\n")
    return stream.getvalue()


class _Discard(StringIO):
    """A stream that keeps nothing (``printed_names`` only wants the names)."""

    def write(self, text: Any) -> int:
        return len(text)


def printed_names(module: ModuleOp) -> dict[SSAValue, str]:
    """The name (without ``%``) each value of ``module`` is printed under
    by ``MemplanPrinter``: its hint, with a ``_N`` suffix where
    another value of its scope took the hint first, or a number."""
    printer = MemplanPrinter(stream=_Discard())
    printer.print_op(module)
    return dict(printer._ssa_values)  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True)
class MemplanMLIRTarget(MLIRTarget):
    """``memplan-opt``'s ``mlir`` output through ``MemplanPrinter``."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:  # xDSL's colour printer: a terminal, not a file
            super().emit(ctx, module, output)
            return
        printer = MemplanPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)
