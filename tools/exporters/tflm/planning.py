"""`memplan-export-tflite`'s library: plan a `.tflite` model for TensorFlow
Lite Micro and write the plan into it.

The TFLite side (``offline_plan``) imports the model for planning and turns a
planned module into TFLM's ``OfflineMemoryAllocation`` offsets; this module
runs the pipeline in between and picks the pipeline whose plan gives TFLM
the smallest head.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memplan.tools.exporters import protocol
from memplan.tools.exporters.tflm import offline_plan
from memplan.tools.frontends.protocol import FrontendError

DEFAULT_PIPELINES = (
    "manifest-alloc{alignment=16},insert-kills,usmp,verify-plan",
    "manifest-alloc{alignment=16},insert-kills,coalesce,usmp,verify-plan",
    "schedule{remarks=false},manifest-alloc{alignment=16},insert-kills,usmp,verify-plan",
)
"""The pipelines tried without ``--pipeline``: the one with the smallest head
wins (the first on a tie); one whose plan TFLM cannot run is passed over.
``alignment=16`` is TFLM's buffer alignment (TVM's 64 would waste bytes)."""


class ExportError(protocol.ExportError):
    """A model or pipeline `memplan-export tflm` refuses (one line).
    ``about_model``: every pipeline would give it (the model is refused)."""

    def __init__(self, message: str, about_model: bool = False) -> None:
        super().__init__(message)
        self.about_model = about_model


def plan_module(module: Any, pipeline: str) -> Any:
    """A planned copy of ``module``; the pipeline's first error line as ``ExportError``."""
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import DiagnosticException, PassFailedException

    from memplan.dialect.context import memplan_context
    from memplan.dialect.kill_order import verify_module
    from memplan.passes import get_all_passes
    from memplan.tools.pipeline import CommandLineError, build_pipeline

    def verify(_previous: Any, planned: Any, _next: Any) -> None:
        verify_module(planned)

    try:
        pipeline_passes: PassPipeline = build_pipeline(
            pipeline, get_all_passes(), verify, origin=f"--pipeline '{pipeline}'"
        )
        planned = module.clone()
        pipeline_passes.apply(memplan_context(), planned)
    except (CommandLineError, DiagnosticException, PassFailedException, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ExportError(first.removeprefix("memplan-opt: error: ")) from None
    return planned


def plan_model(data: bytes, label: str, pipeline: str, fold_dequantize: bool = False) -> Any:
    """memplan's plan of ``data`` with ``pipeline`` as TFLM offsets (an
    ``offline_plan.OfflinePlan``): each subgraph TFLM runs planned on its
    own, the ones an operator runs first (their heads size the operator's
    block), then put together."""
    offline = offline_plan
    try:
        structure = offline.call_structure(data, label)
        plans: dict[int, Any] = {}
        for index in structure.order:  # the subgraphs an operator runs before it
            callees = offline.callee_bytes(structure, index, plans)
            leaders = structure.leaders[index]
            prepared = offline.prepare(data, label, fold_dequantize, index, callees, leaders)
            planned = plan_module(prepared.module, pipeline)
            try:
                plans[index] = offline.offsets_from_plan(prepared, planned, pipeline)
            except FrontendError as error:  # this pipeline's plan, unless the model's
                about_model = isinstance(error, offline.ModelError)
                raise ExportError(str(error), about_model) from None
        return offline.combine(structure, plans, pipeline)
    except FrontendError as error:  # reading or importing the model
        raise ExportError(str(error), about_model=True) from None


def best_plan(
    data: bytes, label: str, pipelines: Sequence[str], fold_dequantize: bool = False
) -> Any:
    """The plan with the smallest head over ``pipelines`` (the first on a tie);
    the first pipeline's error if none gives a plan TFLM can run."""
    best: Any = None
    first_error: ExportError | None = None
    for pipeline in pipelines:
        try:
            candidate = plan_model(data, label, pipeline, fold_dequantize)
        except ExportError as error:
            if len(pipelines) == 1 or error.about_model:
                raise
            first_error = first_error or error
            continue
        if best is None or candidate.head < best.head:
            best = candidate
    if best is None:
        assert first_error is not None
        raise first_error
    return best


def write_model(data: bytes, plan: Any, offsets: bool = True) -> bytes:
    """``data`` with ``plan`` written in (see ``offline_plan.write_model``)."""
    return offline_plan.write_model(data, plan, offsets)


def model_inputs(data: bytes, seed: int = 0) -> list[Any]:
    """Random inputs for the model's subgraph 0 (``offline_plan.model_inputs``)."""
    return offline_plan.model_inputs(data, seed)


def export_model(
    source: str | Path,
    pipelines: Sequence[str] = DEFAULT_PIPELINES,
    fold_dequantize: bool = False,
) -> tuple[bytes, Any]:
    """The model at ``source`` with memplan's plan for TFLM, and the plan."""
    label = str(source)
    try:
        data = Path(source).read_bytes()
    except OSError as error:
        raise ExportError(f"cannot read {label}: {error.strerror}") from None
    plan = best_plan(data, label, pipelines, fold_dequantize)
    return write_model(data, plan), plan
