"""``plan-report``'s formats: one module each, one registry (``REPORT_FORMATS``).

A format is a function ``(PlanReport, **options) -> str`` in its own module
and one entry here, which names the ``plan-report`` options it takes
beyond ``format`` and ``output`` (``c-header``'s ``prefix``); the pass
refuses such an option with any other format. ``ReportFormatName``, the
type of the pass's ``format`` option, is made from the registry, so
``--help`` lists the choices.

- ``text``: ``format_text``, a table per function and pool;
- ``json``: ``format_json``, docs/design.md's report schema;
- ``svg``: ``format_svg``, a memory map per function and pool;
- ``trace``: ``format_trace``, Chrome trace-event JSON (Perfetto,
  ``chrome://tracing``);
- ``c_header``: ``format_c_header``, pool sizes and offsets as C macros.

``records`` is the report as data (``PlanReport``) and ``gather`` builds it
from the IR (``gather_report``), the one module here that sees IR; the
formats only read ``PlanReport``. ``common`` holds what they share: the
kind of a buffer and the layout drawn for a pool (planned offsets, or
storages stacked when there is no plan).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from memplan.passes.planning.plugins import entry_point_objects
from memplan.passes.report_formats.c_header import format_c_header
from memplan.passes.report_formats.json import format_json
from memplan.passes.report_formats.svg import format_svg
from memplan.passes.report_formats.text import format_text
from memplan.passes.report_formats.trace import format_trace


@dataclass(frozen=True)
class ReportFormat:
    """A format's writer and the ``plan-report`` options it takes (passed as
    keywords when given)."""

    write: Callable[..., str]
    options: tuple[str, ...] = ()


REPORT_FORMATS: dict[str, ReportFormat] = {
    "text": ReportFormat(format_text),
    "json": ReportFormat(format_json),
    "svg": ReportFormat(format_svg),
    "trace": ReportFormat(format_trace),
    "c-header": ReportFormat(format_c_header, options=("prefix",)),
}
"""Report formats by name: a new format is a module and a line here, or,
from outside the repository, an entry point in ``memplan.report_formats``
naming its writer (or a ``ReportFormat``); the built-in names win a clash."""
REPORT_FORMATS.update(
    (name, entry if isinstance(entry, ReportFormat) else ReportFormat(entry))
    for name, entry in entry_point_objects("memplan.report_formats")
    if name not in REPORT_FORMATS
)

FORMAT_OPTIONS: tuple[str, ...] = tuple(
    dict.fromkeys(option for entry in REPORT_FORMATS.values() for option in entry.options)
)
"""The ``plan-report`` options that belong to some formats only."""

if TYPE_CHECKING:
    ReportFormatName = str
else:
    # The registry's names as a type: xDSL's option parser and
    # `pass_options.check_options` accept only these, `--help` lists them.
    ReportFormatName = Literal[tuple(REPORT_FORMATS)]

__all__ = ["FORMAT_OPTIONS", "REPORT_FORMATS", "ReportFormat", "ReportFormatName"]
