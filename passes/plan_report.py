"""``plan-report``: what the plan in the IR uses, against the lower bound.

The pass only dispatches: ``gather_report`` (``report_formats.gather``)
turns the IR into report data, the format named by ``format`` writes it
(``report_formats.REPORT_FORMATS``), and the text goes to ``output``, or
to the driver that defers report files (``report_files``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from memplan.passes.output_file import OutputFileError
from memplan.passes.pass_options import check_options
from memplan.passes.report_files import pending_report_files, write_report_file
from memplan.passes.report_formats import FORMAT_OPTIONS, REPORT_FORMATS, ReportFormatName
from memplan.passes.report_formats.gather import gather_report

__all__ = ["PlanReportPass", "gather_report"]


@dataclass(frozen=True)
class PlanReportPass(ModulePass):
    """Write a report of the memory plan; the IR is left unchanged.

    For each function, a row per pool: its size, the bytes the function's
    pinned storages use in it (highest offset + size), the lower bound
    (`passes.planning`: peak of live bytes of the same storages, rounded for
    alignment), their ratio, the number of storages and the largest ones.
    Static storages not yet pinned go to the pseudo-pool `(unplanned)`,
    whose `used` is the sum of their sizes (memory without planning) and
    whose bound is their plain peak of live bytes (no alignment rounding, as
    the sum has none), so the ratio shows what planning could gain. Dynamic-size storages are listed
    apart. With several functions, a module table follows (functions share
    the pools one after another in time).

    Lifetimes are op numbers from the one lifetime definition
    (`passes.analysis`), half-open `[start, end)`.

    Options:
    - `format` (`text` | `json` | `svg` | `trace` | `c-header`, default
      `text`): `json` follows docs/design.md's
      schema `{"functions": [{"name", "pools": [{"name", "size", "used",
      "lower_bound"}], "buffers": [{"name", "size", "alignment", "start",
      "end", "pool", "offset"}]}]}` with extra keys (`ops`, `tensors`,
      `buffer_count`, `device`, `escapes`, `read_only`, `branch`, and a
      module-level `pools`).
      `svg`: a memory map per function and pool (op number x byte offset,
      one rect per storage coloured by kind, used and lower-bound lines;
      `passes/report_formats/svg.py`). `trace`: Chrome trace-event JSON for
      ui.perfetto.dev / chrome://tracing (live and used bytes counters and
      one slice per storage, per function and pool; `.../trace.py`).
      `c-header`: C99 macros for pool sizes, alignments and offsets and a
      struct of pool base pointers (`.../c_header.py`). Unplanned storages
      are drawn stacked in `svg`/`trace` and listed in a comment by
      `c-header`. A pool with an offset program (`usmp{parametric=true}`)
      is also given as a function of the dims: in `text` and `json` its
      bytes as an expression and at the ranges' lower and upper ends, each
      storage's slot and offset expression; in `c-header` C99 functions of
      the dims (a range check, each storage's offset, the pool's bytes;
      `.../c_functions.py`).
    - `output` (path, default stderr): where to write; written only when
      the whole report was built, and by `memplan-opt` only when the whole
      pipeline succeeds (a later pass that fails leaves the file as it
      was); `memplan-opt` refuses the input file as `output`.
    - `prefix` (C identifier, `c-header` only; default the module's name,
      or `memplan`): the start of every macro name.
    """

    name = "plan-report"

    format: ReportFormatName = "text"
    output: str | None = None
    prefix: str | None = None

    def __post_init__(self) -> None:
        check_options(self)
        taken = REPORT_FORMATS[self.format].options
        for option, _ in self._format_options(FORMAT_OPTIONS):
            if option not in taken:
                formats = " or ".join(
                    f"format={name}"
                    for name, entry in REPORT_FORMATS.items()
                    if option in entry.options
                )
                raise ValueError(
                    f"plan-report: option '{option}' applies to {formats}, not '{self.format}'"
                )

    def _format_options(self, names: tuple[str, ...]) -> list[tuple[str, object]]:
        """The given (not None) options among ``names``, with their values."""
        given = [(name, getattr(self, name)) for name in names]
        return [(name, value) for name, value in given if value is not None]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = REPORT_FORMATS[self.format]  # checked in __post_init__
        text = entry.write(gather_report(op), **dict(self._format_options(entry.options)))
        if self.output is None:
            sys.stderr.write(text)
            return
        deferred = pending_report_files()
        if deferred is not None:
            deferred[self.output] = text
            return
        try:
            write_report_file(self.output, text)
        except OutputFileError as error:
            raise PassFailedException(
                f"plan-report: cannot write '{self.output}': {error.reason}"
            ) from error
