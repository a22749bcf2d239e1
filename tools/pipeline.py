"""Composing memplan's passes with xDSL's from Python.

    from memplan.dialect.context import memplan_context
    from memplan.tools.pipeline import parse_pipeline

    pipeline = parse_pipeline("canonicalize,plan{algorithm=exact},plan-report{format=json}")
    pipeline.apply(memplan_context(), module)

``parse_pipeline`` reads a pipeline as memplan's command lines do (bare
option values, memplan's option checks and messages) over every pass
``all_passes`` knows: xDSL's own and memplan's. A bad pipeline raises
``PipelineError`` with the message ``memplan-opt -p`` prints, e.g.
``usmp: algorithm must be one of greedy-by-size, ... (got 'exakt')``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memplan.tools.driver import CommandLineError, build_pipeline

if TYPE_CHECKING:
    from xdsl.passes import ModulePass, PassPipeline
    from xdsl.passes import PassPipelineCallbackType as Callback


class PipelineError(CommandLineError, ValueError):
    """A pipeline that does not parse or build; ``str()`` is the message."""


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes and memplan's, by name (memplan's win on a clash)."""
    from xdsl.transforms import get_all_passes as upstream_passes

    from memplan.passes import get_all_passes

    return {**upstream_passes(), **get_all_passes()}


def parse_pipeline(spec: str, callback: Callback | None = None) -> PassPipeline:
    """``spec`` as a ``PassPipeline`` of ``all_passes()``, checked as
    `memplan-opt -p` checks it (``PipelineError`` if it is not valid)."""
    try:
        return build_pipeline(spec, all_passes(), callback)
    except CommandLineError as error:
        raise PipelineError(str(error)) from None
