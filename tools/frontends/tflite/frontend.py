"""TFLite behind ``protocol.Frontend``: reads ``.tflite`` flatbuffers
(``model``), imports a subgraph (``importer``), runs its operators
(``kernels``) and the whole model in TFLite's own interpreter
(ai-edge-litert) as the reference."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.traits import SymbolTable

from memplan.tools.frontends.common import dim_ranges, parse_input_shape
from memplan.tools.frontends.protocol import FrontendError, ImportedModel, ImportOptions
from memplan.tools.frontends.tflite.importer import (
    TFLITE_ATTR_PREFIX,
    global_data,
    import_subgraph,
    import_tflite,
    parse_upper_bound,
    records_placeholder_sizes,
    size_subgraph,
    subgraph_reader,
)
from memplan.tools.frontends.tflite.model import TfliteImportError, load_model, read_subgraph

if TYPE_CHECKING:
    from memplan.dialect.interpreter import KernelResolver


@dataclass(frozen=True)
class TfliteImportOptions(ImportOptions):
    """TFLite's options (``arguments``): the ``subgraph`` to import, and
    whether each input is first copied into planned workspace
    (``inputs_in_arena``)."""

    subgraph: int = 0
    inputs_in_arena: bool = False


def _own(options: ImportOptions) -> TfliteImportOptions:
    """``options`` as TFLite's (a plain ``ImportOptions`` takes TFLite's defaults)."""
    if isinstance(options, TfliteImportOptions):
        return options
    return TfliteImportOptions(options.input_shapes, options.upper_bounds, options.lower_bounds)


class TfliteFrontend:
    """TFLite models; ``--upper-bound INPUT:AXIS=N`` names a dynamic dim
    (``-1`` in the input's ``shape_signature``). TFLite sums in another
    order (im2col and GEMM), hence the looser default tolerance."""

    tolerance = (1e-4, 1e-3)
    options_type = TfliteImportOptions

    def parse_options(self, args: argparse.Namespace) -> ImportOptions:
        bounds: dict[str, dict[str, int]] = {"--upper-bound": {}, "--lower-bound": {}}
        for option, specs in (
            ("--upper-bound", args.upper_bound),
            ("--lower-bound", args.lower_bound),
        ):
            for spec in specs:
                (name, axis), bound = parse_upper_bound(spec, option)
                bounds[option][f"{name}:{axis}"] = bound
        return TfliteImportOptions(
            input_shapes=dict(parse_input_shape(spec) for spec in args.input_shape),
            upper_bounds=bounds["--upper-bound"],
            lower_bounds=bounds["--lower-bound"],
            subgraph=args.subgraph,
            inputs_in_arena=args.inputs_in_arena,
        )

    def import_module(self, path: str, options: ImportOptions) -> ModuleOp:
        options = _own(options)
        ranges = dim_ranges(options.lower_bounds, options.upper_bounds)
        module = import_tflite(
            path,
            options.subgraph,
            options.inputs_in_arena,
            _bounds_by_axis(options.upper_bounds),
            options.input_shapes,
        )
        ranges.annotate(_main(module))
        return module

    def import_for_run(self, path: str, options: ImportOptions) -> ImportedModel:
        options = _own(options)
        if options.subgraph != 0:
            raise FrontendError(
                f"--subgraph {options.subgraph}: memplan-run runs subgraph 0 "
                "(the one TFLite's interpreter runs as the reference)"
            )
        ranges = dim_ranges(options.lower_bounds, options.upper_bounds)
        model, label = load_model(path)
        subgraph = read_subgraph(model, label)
        upper_bounds = _bounds_by_axis(options.upper_bounds)
        sized = subgraph
        if upper_bounds or options.input_shapes or records_placeholder_sizes(subgraph):
            sized = size_subgraph(
                Path(path).read_bytes(), subgraph, options.input_shapes, upper_bounds
            )
        subgraphs = subgraph_reader(model, label)
        module = import_subgraph(sized, options.inputs_in_arena, subgraphs=subgraphs)
        ranges.annotate(_main(module))
        globals_data = global_data(module, subgraph, subgraphs)
        for op in module.ops:
            if isinstance(op, memref.GlobalOp) and op.sym_name.data not in globals_data:
                raise FrontendError(f"constant @{op.sym_name.data} has no data memplan can compute")
        input_dims: list[tuple[str, list[int | str]]] = []
        if upper_bounds:
            input_dims = [
                (
                    tensor.name,
                    [
                        f"{tensor.name}:{axis}" if (tensor.name, axis) in upper_bounds else size
                        for axis, size in enumerate(tensor.max_shape or tensor.shape)
                    ],
                )
                for tensor in (sized.tensors[t] for t in sized.inputs)
            ]
        return ImportedModel(module, globals_data, input_dims, partial(reference_run, path))

    def kernel_resolver(self) -> KernelResolver:
        # Here, not at the top: importing a model needs no kernels (nor the interpreter).
        from memplan.tools.frontends.tflite.kernels import TfliteKernelResolver

        return TfliteKernelResolver()

    def io_names(self, main: func.FuncOp, key: Literal["inputs", "outputs"]) -> list[str] | None:
        recorded = main.attributes.get(TFLITE_ATTR_PREFIX + key)
        if isinstance(recorded, ArrayAttr):
            return [n.data for n in recorded.data if isinstance(n, StringAttr)]
        return None

    def weights(self, path: str, module: ModuleOp, options: ImportOptions) -> dict[str, np.ndarray]:
        options = _own(options)
        model, label = load_model(path)
        subgraph = read_subgraph(model, label, options.subgraph)
        return global_data(module, subgraph, subgraph_reader(model, label))


def _main(module: ModuleOp) -> func.FuncOp:
    main = SymbolTable.lookup_symbol(module, "main")
    assert isinstance(main, func.FuncOp)
    return main


def _bounds_by_axis(upper_bounds: Mapping[str, int]) -> dict[tuple[str, int], int]:
    """``INPUT:AXIS`` keys as ``(input, axis)`` (an input name may hold ``:``)."""
    bounds: dict[tuple[str, int], int] = {}
    for key, bound in upper_bounds.items():
        name, _, axis = key.rpartition(":")
        bounds[name, int(axis)] = bound
    return bounds


def reference_run(model_path: str, arguments: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The model's outputs from TFLite's interpreter (builtin kernels, no
    default delegates, so float results do not depend on XNNPACK)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as error:
        raise TfliteImportError(
            "the TFLite reference needs ai-edge-litert (pip install ai-edge-litert), "
            "or pass --no-reference"
        ) from error
    try:
        interpreter = Interpreter(
            model_path=model_path,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        details = interpreter.get_input_details()
        for detail, value in zip(details, arguments):
            if tuple(detail["shape"]) != np.shape(value):
                interpreter.resize_tensor_input(detail["index"], np.shape(value), strict=True)
        interpreter.allocate_tensors()
        for detail, value in zip(details, arguments):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    except (RuntimeError, ValueError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise TfliteImportError(f"TFLite reference run: {first}") from error


TFLITE_FRONTEND = TfliteFrontend()
