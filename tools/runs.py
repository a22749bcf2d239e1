"""Running modules and models planned and unplanned: `memplan-run`'s
Python API (``memplan.tools.memplan_run`` is its command line).

    from memplan.tools.runs import run_onnx

    for label, report in run_onnx("model.onnx", "manifest-alloc,insert-kills,usmp"):
        assert report.ok, report.format()

``run_model`` imports a model through the front end its suffix selects,
plans a copy with the pipeline and runs the unplanned module, the planned
one (memory poisoned when allocated and when killed) and the format's own
runtime on the same inputs, once per size when dims are bounded;
``run_mlir`` does the same for a parsed module (without the reference),
at the sizes its ``@main``'s `memory.dim_ranges` allow when
`memory.dim_symbols` places its arguments' dynamic dims; a module that is
already planned is compared with itself unpinned (every storage its own
allocation: the offsets are checked, not the decisions before them);
``execute`` runs one module. ``RunError`` is a failure to set up or run,
with the message `memplan-run` prints.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException

from memplan.dialect.arrays import NoNumpyDtype, numpy_dtype
from memplan.dialect.context import memplan_context
from memplan.dialect.interpreter import (
    ExecutionError,
    ExecutionResult,
    KernelRegistry,
    run_function,
)
from memplan.dialect.kill_order import verify_module
from memplan.dialect.ops import AllocStorageOp, InvokeOp
from memplan.passes.analysis.parametric import function_dims
from memplan.tools.frontends.protocol import ImportOptions
from memplan.tools.frontends.registry import (
    all_frontends,
    entry_for,
    frontend,
    suffixes,
)
from memplan.tools.locations import SourceMap, describe_parse_error, parse_located
from memplan.tools.pipeline import (
    CommandLineError,
    all_passes,
    build_pipeline,
)
from memplan.tools.progress import Progress as CliProgress
from memplan.tools.run_arguments import PROG
from memplan.tools.run_compare import (
    RunReport,
    compare,
    view_kernel_names,
)


class RunError(Exception):
    """A failure to set up or execute a run, reported as ``memplan-run: error``."""


# ---------------------------------------------------------------------------
# Context, parsing and planning
# ---------------------------------------------------------------------------


class LocatedRunError(RunError):
    """A diagnostic that carries its own ``file:line:col: error:`` (or
    ``memplan-run: error:``) prefix: printed as it is."""


SOURCE_MAPS: dict[int, SourceMap] = {}
"""Where the ops of each module ``parse_module`` returned came from (by id of
the module), so that a pass failing on it points at the input's line."""


def parse_module(text: str, name: str, ctx: Context | None = None) -> ModuleOp:
    """Parse ``text``; a parse error becomes ``RunError``."""
    try:
        module, spans = parse_located(ctx or memplan_context(), text, name)
    except ParseError as error:
        raise LocatedRunError(describe_parse_error(error)) from error
    SOURCE_MAPS[id(module)] = SourceMap(spans)
    return module


def _verify_after(
    _previous: ModulePass | None, planned: ModuleOp, _next: ModulePass | None
) -> None:
    verify_module(planned)  # as memplan-opt verifies


@functools.lru_cache(maxsize=16)
def _pass_pipeline(pipeline: str) -> PassPipeline:
    """``pipeline`` built once per process (the passes are immutable): building
    reads every pass's option types, a fifth of planning a small model. An
    ``output=`` path is checked when the pipeline is built; a later failure
    to write it is the pass's own error."""
    return build_pipeline(pipeline, all_passes(), _verify_after, origin=f"--pipeline '{pipeline}'")


def plan(module: ModuleOp, pipeline: str, ctx: Context | None = None) -> ModuleOp:
    """A planned copy of ``module``: the pipeline run in-process, verified after each pass.

    The pipeline is read as ``memplan-opt`` reads its ``-p`` list (bare option
    values, "did you mean", readable option errors), and a pass or verifier
    failure is reported as ``memplan-opt`` reports it.
    """
    ctx = ctx or memplan_context()
    try:
        pass_pipeline = _pass_pipeline(pipeline)
    except CommandLineError as error:
        raise RunError(str(error)) from None
    planned = module.clone()
    original = SOURCE_MAPS.get(id(module), SourceMap())
    # Right after the clone both walks meet the same ops in the same order.
    source = SourceMap(
        {
            copy: original.op_spans[op]
            for op, copy in zip(module.walk(), planned.walk())
            if op in original.op_spans
        },
        original.line_offset,
    )
    try:
        pass_pipeline.apply(ctx, planned)
    except (DiagnosticException, PassFailedException) as error:
        raise LocatedRunError(source.describe(PROG, error, planned)) from error
    return planned


# ---------------------------------------------------------------------------
# Kernels, inputs
# ---------------------------------------------------------------------------


def default_kernels(kernel_files: Sequence[str] = ()) -> KernelRegistry:
    """A registry with the kernels of ``kernel_files``, then every front
    end's resolver (in registry order)."""
    registry = KernelRegistry()
    for path in kernel_files:
        load_kernel_file(path, registry)
    for each in all_frontends():
        registry.add_resolver(each.kernel_resolver())
    return registry


def load_kernel_file(path: str, registry: KernelRegistry) -> None:
    """Run ``register_kernels(registry)`` from the Python file at ``path``."""
    spec = importlib.util.spec_from_file_location(f"memplan_kernels_{Path(path).stem}", path)
    if spec is None or spec.loader is None or not Path(path).is_file():
        raise RunError(f"--kernels {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    register = getattr(module, "register_kernels", None)
    if not callable(register):
        raise RunError(f"--kernels {path}: defines no register_kernels(registry)")
    register(registry)


def _main_function(module: ModuleOp) -> func.FuncOp:
    main = SymbolTable.lookup_symbol(module, "main")
    if not isinstance(main, func.FuncOp) or main.is_declaration:
        raise RunError("the module has no func.func @main with a body")
    return main


def _main_names(module: ModuleOp, key: Literal["inputs", "outputs"], fallback: str) -> list[str]:
    main = _main_function(module)
    types = main.function_type.inputs if key == "inputs" else main.function_type.outputs
    count = len(types.data)
    names = None
    for each in all_frontends():
        names = each.io_names(main, key)
        if names is not None:
            break
    if names is None or len(names) != count:
        return [f"{fallback}{i}" for i in range(count)]
    return names


def input_names(module: ModuleOp) -> list[str]:
    """Names of ``@main``'s arguments: the model's when recorded, else ``argN``."""
    return _main_names(module, "inputs", "arg")


def output_names(module: ModuleOp) -> list[str]:
    """Names of ``@main``'s results: the model's when recorded, else ``resultN``."""
    return _main_names(module, "outputs", "result")


def make_inputs(
    module: ModuleOp,
    seed: int,
    npz: Mapping[str, np.ndarray] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> list[np.ndarray]:
    """Inputs for ``@main``: from ``npz`` (by name, then ``argN``) or random;
    ``shapes`` gives the shapes of the arguments with dynamic dims, by name."""
    main = _main_function(module)
    rng = np.random.default_rng(seed)
    names = input_names(module)
    values: list[np.ndarray] = []
    for index, (name, arg_type) in enumerate(zip(names, main.function_type.inputs.data)):
        if not isinstance(arg_type, TensorType | MemRefType):
            raise RunError(f"argument {name} of @main is {arg_type}, not a tensor")
        shape = tuple(arg_type.get_shape())
        if any(d < 0 for d in shape) and npz is None:
            if shapes is None or name not in shapes:
                raise RunError(
                    f"argument {name} of @main has a dynamic shape {arg_type}: "
                    "give its data with --inputs"
                )
            shape = tuple(shapes[name])
        try:
            dtype = numpy_dtype(arg_type.get_element_type())
        except NoNumpyDtype as error:
            raise RunError(f"argument {name} of @main: {error}") from None
        if npz is not None:
            for key in (name, f"arg{index}"):
                if key in npz:
                    values.append(np.asarray(npz[key]))
                    break
            else:
                raise RunError(f"--inputs has no array '{name}' (or 'arg{index}')")
            continue
        if dtype.kind == "f":
            values.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            values.append(rng.random(shape) < 0.5)
        else:
            values.append(rng.integers(0, 4, size=shape).astype(dtype))
    return values


@dataclass
class CallCounter(Interpreter.Listener):
    """Names the kernel call a run is at as the stage of a terminal's
    ``Progress`` line (``memplan-run: planned: 120/4000 kernel calls, 3.1 s``)."""

    progress: CliProgress
    label: str
    total: int
    done: int = 0

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        if isinstance(op, InvokeOp | func.CallOp):
            self.done += 1
            self.progress.set(f"{self.label}: {self.done}/{self.total} kernel calls")


def _count_calls(module: ModuleOp) -> int:
    return sum(1 for op in module.walk() if isinstance(op, InvokeOp | func.CallOp))


def execute(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    kernels: KernelRegistry,
    globals_data: Mapping[str, np.ndarray],
    label: str,
    *,
    trace: bool = True,
    poison: bool = True,
    pinned: bool = True,
    show_progress: bool = False,
) -> ExecutionResult:
    """``run_function`` on ``@main`` with an optional progress line
    (``pinned=False``: every storage its own allocation, pins ignored)."""
    try:
        with CliProgress(PROG, enabled=show_progress).running() as progress:
            counter = CallCounter(progress, label, _count_calls(module)) if show_progress else None
            return run_function(
                module,
                inputs,
                kernels=kernels,
                globals_data=globals_data,
                poison=poison,
                trace=trace,
                pinned=pinned,
                listeners=(counter,) if counter else (),
            )
    except ExecutionError as error:
        raise RunError(f"{label}: {error}") from error


# ---------------------------------------------------------------------------
# Whole runs
# ---------------------------------------------------------------------------


def run_model(
    model_path: str,
    pipeline: str,
    options: ImportOptions | None = None,
    *,
    dim_values: Mapping[str, Sequence[int]] | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    atol: float | None = None,
    rtol: float | None = None,
    reference: bool = True,
    kernels: KernelRegistry | None = None,
    show_progress: bool = False,
) -> list[tuple[str, RunReport]]:
    """Import, plan and run a model three ways (see the module docstring),
    through the front end its suffix selects.

    With ``options.upper_bounds`` the module keeps those dims dynamic and
    is planned once; then each bounded dim takes each of its ``dim_values``
    (default 1, half the bound and the bound) in turn, all at once (a dim
    with fewer values keeps its last). Returns one labelled report per run
    (the label is empty when there is one run at static shapes). ``atol``
    and ``rtol`` default to the front end's ``tolerance``.
    """
    entry = entry_for(model_path)
    if entry is None:
        raise RunError(f"{model_path}: not a model file ({', '.join(suffixes())})")
    model_frontend = entry.load()
    options = options or model_frontend.options_type()
    # On a terminal the import is a stage of its own: a large model takes
    # seconds to read, fold and type before anything runs.
    with CliProgress(PROG, enabled=show_progress).running() as progress:
        progress.set(f"importing {model_path}")
        imported = model_frontend.import_for_run(model_path, options)
    runs: list[tuple[str, dict[str, tuple[int, ...]]]] = [("", {})]
    if options.upper_bounds and inputs is None:
        runs = _dim_runs(
            imported.input_dims, options.upper_bounds, dim_values or {}, options.lower_bounds
        )
    default_atol, default_rtol = model_frontend.tolerance
    return _run_series(
        imported.module,
        pipeline,
        runs,
        inputs=inputs,
        seed=seed,
        kernels=kernels or default_kernels(),
        globals_data=imported.globals_data,
        reference=imported.reference if reference else None,
        atol=default_atol if atol is None else atol,
        rtol=default_rtol if rtol is None else rtol,
        show_progress=show_progress,
    )


def run_onnx(
    model_path: str,
    pipeline: str,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    upper_bounds: Mapping[str, int] | None = None,
    input_values: Mapping[str, Sequence[float]] | None = None,
    **run: Any,
) -> list[tuple[str, RunReport]]:
    """``run_model`` of an ONNX model, with ``upper_bounds`` by symbol (or
    ``INPUT:AXIS``) and ``input_values`` by input name."""
    options = frontend("onnx").options_type(
        input_shapes={name: tuple(dims) for name, dims in (input_shapes or {}).items()},
        upper_bounds=dict(upper_bounds or {}),
        input_values={name: tuple(values) for name, values in (input_values or {}).items()},
    )
    return run_model(model_path, pipeline, options, **run)


def run_tflite(
    model_path: str,
    pipeline: str,
    *,
    upper_bounds: Mapping[tuple[str, int], int] | None = None,
    **run: Any,
) -> list[tuple[str, RunReport]]:
    """``run_model`` of a TFLite model, with ``upper_bounds`` by
    ``(input, axis)``; a bounded dim is ``INPUT:AXIS`` in the labels and
    ``dim_values``."""
    bounds = {f"{name}:{axis}": bound for (name, axis), bound in (upper_bounds or {}).items()}
    return run_model(
        model_path, pipeline, frontend("tflite").options_type(upper_bounds=bounds), **run
    )


def _run_series(
    module: ModuleOp,
    pipeline: str | None,
    runs: Sequence[tuple[str, Mapping[str, tuple[int, ...]]]],
    *,
    inputs: Mapping[str, np.ndarray] | None,
    seed: int,
    kernels: KernelRegistry,
    globals_data: Mapping[str, np.ndarray],
    reference: Callable[[Sequence[np.ndarray]], Sequence[np.ndarray]] | None,
    atol: float,
    rtol: float,
    show_progress: bool,
) -> list[tuple[str, RunReport]]:
    """Plan a copy of ``module`` once (``pipeline`` ``None``: ``module`` is
    the planned one), then per (label, input shapes) of ``runs`` run both on
    the same inputs and compare them (and the outputs ``reference`` maps the
    arguments to, computed last). The unplanned run ignores the pins a
    planned ``module`` has. Planning keeps the globals' symbols, so
    ``globals_data`` serves both runs."""
    planned = module if pipeline is None else _plan_with_progress(module, pipeline, show_progress)
    names, views = output_names(module), view_kernel_names(module)
    reports: list[tuple[str, RunReport]] = []
    for label, shapes in runs:
        arguments = make_inputs(module, seed, inputs, shapes)
        unplanned_run = execute(
            module,
            arguments,
            kernels,
            globals_data,
            "unplanned run",
            pinned=False,
            show_progress=show_progress,
        )
        planned_run = execute(
            planned, arguments, kernels, globals_data, "planned run", show_progress=show_progress
        )
        reference_outputs = None
        if reference is not None:
            with CliProgress(PROG, enabled=show_progress).running() as progress:
                progress.set("reference run")
                reference_outputs = reference(arguments)
        report = compare(names, unplanned_run, planned_run, reference_outputs, views, atol, rtol)
        reports.append((label, report))
    return reports


def _dim_runs(
    inputs: Sequence[tuple[str, Sequence[int | str]]],
    upper_bounds: Mapping[str, int],
    dim_values: Mapping[str, Sequence[int]],
    lower_bounds: Mapping[str, int] | None = None,
    ranges: str | None = None,
) -> list[tuple[str, dict[str, tuple[int, ...]]]]:
    """(label, input shapes) per run: the symbols of ``upper_bounds`` at
    their ``dim_values`` (default the range's lower end, its middle and its
    upper end; the lower end is 1 unless ``lower_bounds`` raises it).
    ``inputs`` are the inputs' names and dims, each a size or a symbol (an
    unbounded one is 1). ``ranges`` names where the ranges come from in
    errors (default: the command line's bounds)."""
    lower = {name: (lower_bounds or {}).get(name, 1) for name in upper_bounds}
    for name, values in dim_values.items():
        if name not in upper_bounds:
            raise RunError(
                f"--dim-values names '{name}', which "
                + (f"is not in {ranges}" if ranges else "has no --upper-bound")
            )
        for value in values:
            if not lower[name] <= value <= upper_bounds[name]:
                ends = ranges or (
                    "its --upper-bound"
                    if lower[name] == 1
                    else "its --lower-bound and --upper-bound"
                )
                raise RunError(
                    f"--dim-values {name}={value}: outside {lower[name]}..{upper_bounds[name]} ({ends})"
                )
    series = {
        name: list(
            dim_values.get(name) or dict.fromkeys((lower[name], (lower[name] + bound) // 2, bound))
        )
        for name, bound in sorted(upper_bounds.items())
    }
    count = max(len(values) for values in series.values())
    runs: list[tuple[str, dict[str, tuple[int, ...]]]] = []
    for run in range(count):
        at = {name: values[min(run, len(values) - 1)] for name, values in series.items()}
        shapes = {
            name: tuple(d if isinstance(d, int) else at.get(d, 1) for d in dims)
            for name, dims in inputs
        }
        runs.append((", ".join(f"{name}={value}" for name, value in at.items()), shapes))
    return runs


def _plan_with_progress(module: ModuleOp, pipeline: str, show_progress: bool) -> ModuleOp:
    with CliProgress(PROG, enabled=show_progress).running() as progress:
        progress.set(f"planning with {pipeline}")
        return plan(module, pipeline)


def _mlir_dim_runs(
    module: ModuleOp, dim_values: Mapping[str, Sequence[int]]
) -> list[tuple[str, dict[str, tuple[int, ...]]]] | None:
    """(label, input shapes) per run of a module whose ``@main`` places its
    ranged dims on its arguments (`memory.dim_symbols`), at ``dim_values``
    (default each range's lower end, middle and upper end); ``None`` when
    it places none."""
    main = _main_function(module)
    where = "@main's memory.dim_ranges"
    dims = {name: dim for name, dim in function_dims(main).items() if dim.argument is not None}
    if not dims:
        if dim_values:
            raise RunError(
                f"--dim-values names '{next(iter(dim_values))}', which is not in {where} "
                "(with memory.dim_symbols placing it on an argument)"
            )
        return None
    symbols = {(dim.argument, dim.axis): name for name, dim in dims.items()}
    inputs: list[tuple[str, list[int | str]]] = []
    for index, (name, arg_type) in enumerate(
        zip(input_names(module), main.function_type.inputs.data)
    ):
        if not isinstance(arg_type, TensorType | MemRefType):
            continue
        shape: list[int | str] = []
        for axis, size in enumerate(arg_type.get_shape()):
            if size >= 0:
                shape.append(size)
            elif (index, axis) in symbols:
                shape.append(symbols[(index, axis)])
            else:
                raise RunError(
                    f"argument {name} of @main has a dynamic dim at axis {axis} that no "
                    "memory.dim_symbols entry places: give its data with --inputs"
                )
        inputs.append((name, shape))
    return _dim_runs(
        inputs,
        {name: dim.upper for name, dim in dims.items()},
        dim_values,
        {name: dim.lower for name, dim in dims.items()},
        ranges=where,
    )


def _is_planned(module: ModuleOp) -> bool:
    """True when a storage of ``module`` is pinned in a pool."""
    return any(isinstance(op, AllocStorageOp) and op.pinned is not None for op in module.walk())


def run_mlir(
    module: ModuleOp,
    pipeline: str | None,
    *,
    kernels: KernelRegistry,
    globals_data: Mapping[str, np.ndarray],
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    atol: float = 1e-5,
    dim_values: Mapping[str, Sequence[int]] | None = None,
    show_progress: bool = False,
) -> list[tuple[str, RunReport | ExecutionResult]]:
    """Run a parsed module, one labelled result per run.

    Without ``inputs``, a module whose ``@main`` places its ranged dims on
    its arguments runs at each of ``dim_values`` (as ``run_model``),
    labelled ``SYMBOL=V, ...``; otherwise it runs once, unlabelled. With a
    ``pipeline``, each run plans a copy and compares it with the module
    (``RunReport``); without one, a planned module running at sizes is
    compared with itself unpinned, and any other run is a plain
    ``ExecutionResult``.
    """
    runs: list[tuple[str, dict[str, tuple[int, ...]]]] = [("", {})]
    if inputs is None:
        runs = _mlir_dim_runs(module, dim_values or {}) or runs
    if pipeline is None and not (runs[0][0] and _is_planned(module)):
        return [
            (
                label,
                execute(
                    module,
                    make_inputs(module, seed, inputs, shapes),
                    kernels,
                    globals_data,
                    "the run",
                    show_progress=show_progress,
                ),
            )
            for label, shapes in runs
        ]
    return list(
        _run_series(
            module,
            pipeline,
            runs,
            inputs=inputs,
            seed=seed,
            kernels=kernels,
            globals_data=globals_data,
            reference=None,
            atol=atol,
            rtol=0.0,
            show_progress=show_progress,
        )
    )
