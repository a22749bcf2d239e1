"""ONNX behind ``protocol.Frontend``: reads ``.onnx`` files (``model``),
imports them (``importer``), runs their nodes (``kernels``) and the whole
model under ``onnx.reference.ReferenceEvaluator`` as the reference."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.traits import SymbolTable

from memplan.tools.frontends.onnx.importer import (
    constant_values,
    global_data,
    import_model_and_constants,
    import_onnx,
    input_shapes_from,
    input_values_from,
    lower_bounds_from,
    onnx_names,
    upper_bounds_from,
)
from memplan.tools.frontends.onnx.model import (
    evaluate,
    graph_inputs,
    load_model,
    prepare_model,
    reference_evaluator,
    tensor_array,
)
from memplan.tools.frontends.protocol import FrontendError, ImportedModel, ImportOptions

if TYPE_CHECKING:
    from memplan.dialect.interpreter import KernelResolver


@dataclass(frozen=True)
class OnnxImportOptions(ImportOptions):
    """ONNX's options (``arguments``): ``weights``, constants as data-less
    globals (their data stays in the model) or inline ``dense<...>``;
    ``input_values``, graph inputs bound to these values (imported as
    constants)."""

    weights: Literal["external", "inline"] = "external"
    input_values: Mapping[str, tuple[float, ...]] = field(
        default_factory=dict[str, tuple[float, ...]]
    )


def _own(options: ImportOptions) -> OnnxImportOptions:
    """``options`` as ONNX's (a plain ``ImportOptions`` takes ONNX's defaults)."""
    if isinstance(options, OnnxImportOptions):
        return options
    return OnnxImportOptions(options.input_shapes, options.upper_bounds, options.lower_bounds)


class OnnxFrontend:
    """ONNX models; ``--upper-bound`` names a symbolic dim (``SYMBOL=N``)."""

    tolerance = (1e-5, 0.0)
    options_type = OnnxImportOptions

    def parse_options(self, args: argparse.Namespace) -> ImportOptions:
        return OnnxImportOptions(
            input_shapes=input_shapes_from(args.input_shape),
            upper_bounds=upper_bounds_from(args.upper_bound),
            lower_bounds=lower_bounds_from(args.lower_bound),
            weights=args.weights,
            input_values=input_values_from(args.input_value),
        )

    def import_module(self, path: str, options: ImportOptions) -> ModuleOp:
        own = _own(options)
        return import_onnx(
            path,
            own.input_shapes,
            own.weights,
            own.upper_bounds,
            own.input_values,
            own.lower_bounds,
        )

    def import_for_run(self, path: str, options: ImportOptions) -> ImportedModel:
        options = _own(options)
        model = load_model(path)
        module, constants = import_model_and_constants(
            model,
            options.input_shapes,
            upper_bounds=options.upper_bounds,
            input_values=options.input_values,
            lower_bounds=options.lower_bounds,
        )
        prepared = prepare_model(
            model, options.input_shapes, options.upper_bounds, options.input_values
        )
        # The reference runs the model as given: fed the bound values too.
        bound_feeds = {
            init.name: tensor_array(init, f"--input-value {init.name}")
            for init in prepared.graph.initializer
            if init.name in options.input_values
        }
        input_dims: list[tuple[str, list[int | str]]] = []
        if options.upper_bounds:
            # The symbols by name: the module's types only say `?`.
            input_dims = [
                (
                    graph_input.name,
                    [
                        d.dim_value if d.HasField("dim_value") else d.dim_param
                        for d in graph_input.type.tensor_type.shape.dim
                    ],
                )
                for graph_input in graph_inputs(prepared)
            ]
        main = SymbolTable.lookup_symbol(module, "main")
        assert isinstance(main, func.FuncOp)
        names = onnx_names(main, "inputs") or []
        return ImportedModel(
            module,
            global_data(module, constants),
            input_dims,
            partial(reference_run, model, names, bound_feeds=bound_feeds),
        )

    def kernel_resolver(self) -> KernelResolver:
        # Here, not at the top: importing a model needs no kernels (nor the interpreter).
        from memplan.tools.frontends.onnx.kernels import OnnxKernelResolver

        return OnnxKernelResolver()

    def io_names(self, main: func.FuncOp, key: Literal["inputs", "outputs"]) -> list[str] | None:
        return onnx_names(main, key)

    def weights(self, path: str, module: ModuleOp, options: ImportOptions) -> dict[str, np.ndarray]:
        options = _own(options)
        return global_data(
            module,
            constant_values(load_model(path), options.input_shapes, options.input_values),
        )


def reference_run(
    model: Any,
    names: Sequence[str],
    arguments: Sequence[np.ndarray],
    bound_feeds: Mapping[str, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """The outputs of the whole model under ``onnx.reference.ReferenceEvaluator``
    with memplan's corrections of its kernels (``reference_ops``;
    ``bound_feeds``: the inputs ``--input-value`` binds, by name)."""
    try:
        try:
            evaluator = reference_evaluator(model)
        except Exception as error:  # noqa: BLE001 - an op onnx.reference lacks
            # The whole model in ONNX Runtime, when it is installed.
            first = (str(error).splitlines() or [type(error).__name__])[0]
            from memplan.tools.frontends.onnx.kernels import onnxruntime_evaluator

            evaluator = onnxruntime_evaluator(model, "the whole model", first)
        results = evaluate(evaluator, None, {**dict(zip(names, arguments)), **(bound_feeds or {})})
    except Exception as error:  # noqa: BLE001 - the reference's own failures
        raise FrontendError(
            f"reference run: {error} (ONNX's reference evaluator failed; --no-reference skips it)"
        ) from error
    return [np.asarray(r) for r in results]


ONNX_FRONTEND = OnnxFrontend()
