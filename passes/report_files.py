"""Where ``plan-report{output=F}`` puts F's text: deferred by a driver.

A driver (``memplan-opt``) opens ``deferred_report_files`` around its
pipeline; within it ``plan-report`` records each file's text instead of
writing it, and the driver writes them (``write_report_file``) only once
the whole pipeline has succeeded, so a later pass that fails leaves F as it
was. Outside such a scope (a pass pipeline run from Python) the pass writes
F when it runs. Standard library and ``output_file`` only, so that a driver
reaches it without importing the report formats.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from memplan.passes.output_file import OutputFile

__all__ = ["deferred_report_files", "pending_report_files", "write_report_file"]

_deferred_reports: ContextVar[dict[str, str] | None] = ContextVar(
    "memplan_deferred_reports", default=None
)
"""The innermost open ``deferred_report_files`` scope's files (path -> text),
or None outside one: a context variable, so that each thread and task
sees its own driver's scope."""


@contextmanager
def deferred_report_files() -> Iterator[dict[str, str]]:
    """Within the block, ``plan-report{output=F}`` records F's text in the
    dictionary yielded instead of writing it."""
    pending: dict[str, str] = {}
    token = _deferred_reports.set(pending)
    try:
        yield pending
    finally:
        _deferred_reports.reset(token)


def pending_report_files() -> dict[str, str] | None:
    """The innermost open ``deferred_report_files`` scope's files, or None
    outside one (then a report file is written at once)."""
    return _deferred_reports.get()


def write_report_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file next to it and a
    rename (``output_file.OutputFile``): a failure leaves an existing
    ``path`` as it was. Raises ``OutputFileError``."""
    with OutputFile(path) as output:
        output.stream.write(text)
        output.commit()
