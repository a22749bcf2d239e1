"""memplan-run: execute a module with NumPy and prove a plan correct.

Usage::

    memplan-run MODEL.onnx [--pipeline=manifest-alloc,insert-kills,usmp]
                [--input-shape NAME=DIMS ...] [--input-value NAME=V[,V...] ...]
                [--inputs FILE.npz] [--seed N]
                [--upper-bound SYMBOL=N ... [--dim-values SYMBOL=V,V,... ...]]
    memplan-run MODEL.tflite [--pipeline=...] [--input-shape NAME=DIMS ...]
                [--inputs FILE.npz] [--seed N]
                [--upper-bound INPUT:AXIS=N ... [--dim-values INPUT:AXIS=V,V,... ...]]
    memplan-run FILE.mlir [--pipeline=...] [--weights-from MODEL.onnx]
                [--kernels KERNELS.py ...] [--inputs FILE.npz]

With an ONNX model, memplan-run imports it (as `memplan-import-onnx` does),
plans a copy with the pipeline, and runs three things on the same inputs:
the unplanned module (value semantics: every kernel result in a fresh
buffer), the planned module (every tensor inside its storage or pool, memory
poisoned when allocated and when killed), and the original model under ONNX's
reference evaluator. It reports, per output, the max absolute difference of
planned vs unplanned and planned vs reference, and fails (exit 1) unless
planned and unplanned are bit-identical, agree with the reference within
`--atol`, and every kernel call of the planned run read exactly the bytes
the unplanned run read (compared by digest, call by call per kernel), which
catches a clobbered buffer even when the outputs hide it.

A `.tflite` model is imported as `memplan-import-tflite` does and run the
same way, with the NumPy kernels of `frontends.tflite.kernels` (float32) and
TFLite's own interpreter (ai-edge-litert, builtin kernels without default
delegates) as the reference. TFLite sums in another order (im2col and
GEMM), so there an output passes within `--atol` 1e-4 plus `--rtol` 1e-3
times its largest reference value (random inputs drive the MediaPipe
models' outputs into the hundreds).

With `--upper-bound` the ONNX model keeps those symbolic dims dynamic (as
`memplan-import-onnx --upper-bound` imports it) and is planned once; then
every bounded symbol takes each of its `--dim-values` (default 1, half the
bound and the bound) in turn, with random inputs of those shapes, and each
run is compared as above against the same plan ("at SYMBOL=V:" before each
report). The exit code is 0 only if every run passes; `--save-outputs`
keeps the last run's outputs. A `.tflite` model takes the same options with
`INPUT:AXIS` for the symbol (its reference is TFLite's interpreter resized
to each run's input shapes).

`--input-value NAME=V[,V...]` binds an ONNX graph input to those values:
the import folds it as a constant (an `If` it decides becomes the branch
taken, as `memplan-import-onnx --input-value` does) and the reference run
is fed the same values.

With an `.mlir` file, the same happens without the reference run; without
`--pipeline` the module is simply run once and its outputs summarised.
External `memref.global`s (the importer's default) take their data from the
ONNX file given with `--weights-from`. `--kernels FILE.py` loads Python
kernels for a project's own declarations: the file defines
`register_kernels(registry)` and calls `registry.register("name", fn)`.

Inputs are random with a fixed seed (floats standard normal, integers in
[0, 4), booleans fair coins) unless `--inputs FILE.npz` gives them, keyed by
ONNX input name or `arg0`, `arg1`, ... The light test models ship no input
file, so their `*_output_0.pb` are not compared.

On a terminal, runs longer than two seconds show a progress line on stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Operation
from xdsl.passes import ModulePass
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
from memplan.dialect.ops import InvokeOp
from memplan.passes.analysis.kill_order import verify_kill_order
from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.driver import (
    CommandLineError,
    SourceMap,
    build_pipeline,
    check_pipeline,
    describe_parse_error,
    normalize_pipeline,
    parse_located,
)
from memplan.tools.driver import Progress as CliProgress
from memplan.tools.frontends.protocol import Frontend, FrontendError, ImportOptions
from memplan.tools.frontends.registry import (
    all_frontends,
    entry_for,
    foreign_options,
    frontend,
    suffixes,
)
from memplan.tools.pipeline import all_passes
from memplan.tools.run_arguments import DEFAULT_PIPELINE, PROG, build_parser_and_dests
from memplan.tools.run_compare import (
    RunReport,
    compare,
    view_kernel_names,
)

PROGRESS_DELAY_SECONDS = 2.0


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


def plan(module: ModuleOp, pipeline: str, ctx: Context | None = None) -> ModuleOp:
    """A planned copy of ``module``: the pipeline run in-process, verified after each pass.

    The pipeline is read as ``memplan-opt`` reads its ``-p`` list (bare option
    values, "did you mean", readable option errors), and a pass or verifier
    failure is reported as ``memplan-opt`` reports it.
    """
    ctx = ctx or memplan_context()

    def verify(_previous: ModulePass | None, planned: ModuleOp, _next: ModulePass | None) -> None:
        planned.verify()
        verify_kill_order(planned)  # as memplan-opt verifies

    try:
        pass_pipeline = build_pipeline(
            pipeline, all_passes(), verify, origin=f"--pipeline '{pipeline}'"
        )
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


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


@dataclass
class Progress(Interpreter.Listener):
    """A progress line on a terminal for runs longer than a couple of seconds."""

    label: str
    total: int
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    last_print: float = 0.0
    shown: bool = False

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        if not isinstance(op, InvokeOp | func.CallOp):
            return
        self.done += 1
        now = time.monotonic()
        if now - self.started < PROGRESS_DELAY_SECONDS or now - self.last_print < 0.1:
            return
        self.last_print = now
        self.shown = True
        self.stream.write(f"\r{self.label}: {self.done}/{self.total} kernel calls")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * (len(self.label) + 40) + "\r")
            self.stream.flush()


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
    show_progress: bool = False,
) -> ExecutionResult:
    """``run_function`` on ``@main`` with an optional progress line."""
    progress = Progress(label, _count_calls(module)) if show_progress else None
    try:
        return run_function(
            module,
            inputs,
            kernels=kernels,
            globals_data=globals_data,
            poison=poison,
            trace=trace,
            listeners=(progress,) if progress else (),
        )
    except ExecutionError as error:
        raise RunError(f"{label}: {error}") from error
    finally:
        if progress is not None:
            progress.close()


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
        runs = _dim_runs(imported.input_dims, options.upper_bounds, dim_values or {})
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
    pipeline: str,
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
    """Plan a copy of ``module`` once, then per (label, input shapes) of
    ``runs`` run both on the same inputs and compare them (and the outputs
    ``reference`` maps the arguments to, computed last). Planning keeps the
    globals' symbols, so ``globals_data`` serves both runs."""
    planned = _plan_with_progress(module, pipeline, show_progress)
    names, views = output_names(module), view_kernel_names(module)
    reports: list[tuple[str, RunReport]] = []
    for label, shapes in runs:
        arguments = make_inputs(module, seed, inputs, shapes)
        unplanned_run, planned_run = (
            execute(m, arguments, kernels, globals_data, name, show_progress=show_progress)
            for m, name in ((module, "unplanned run"), (planned, "planned run"))
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
) -> list[tuple[str, dict[str, tuple[int, ...]]]]:
    """(label, input shapes) per run: the symbols of ``upper_bounds`` at
    their ``dim_values`` (default ``1, ceil(bound / 2), bound``). ``inputs``
    are the inputs' names and dims, each a size or a symbol (an unbounded
    one is 1)."""
    for name, values in dim_values.items():
        if name not in upper_bounds:
            raise RunError(f"--dim-values names '{name}', which has no --upper-bound")
        for value in values:
            if not 1 <= value <= upper_bounds[name]:
                raise RunError(
                    f"--dim-values {name}={value}: outside 1..{upper_bounds[name]} "
                    "(its --upper-bound)"
                )
    series = {
        name: list(dim_values.get(name) or dict.fromkeys((1, (bound + 1) // 2, bound)))
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


def run_mlir(
    module: ModuleOp,
    pipeline: str | None,
    *,
    kernels: KernelRegistry,
    globals_data: Mapping[str, np.ndarray],
    inputs: Mapping[str, np.ndarray] | None = None,
    seed: int = 0,
    atol: float = 1e-5,
    show_progress: bool = False,
) -> RunReport | ExecutionResult:
    """Run a parsed module: plan-and-compare with a pipeline, else once."""
    if pipeline is None:
        arguments = make_inputs(module, seed, inputs)
        return execute(
            module, arguments, kernels, globals_data, "the run", show_progress=show_progress
        )
    [(_, report)] = _run_series(
        module,
        pipeline,
        [("", {})],
        inputs=inputs,
        seed=seed,
        kernels=kernels,
        globals_data=globals_data,
        reference=None,
        atol=atol,
        rtol=0.0,
        show_progress=show_progress,
    )
    return report


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _dim_values(specs: Sequence[str]) -> dict[str, list[int]]:
    values: dict[str, list[int]] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        try:
            values[name] = [int(v) for v in text.split(",")]
        except ValueError:
            sep = ""
        if not sep or not name:
            raise RunError(f"--dim-values '{spec}' must look like SYMBOL=1,32,64")
    return values


def _load_npz(path: str | None) -> dict[str, np.ndarray] | None:
    if path is None:
        return None
    try:
        with np.load(path) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise RunError(f"--inputs {path}: {error}") from error


def _save_outputs(save: OutputFile | None, names: Sequence[str], outputs: Sequence[Any]) -> None:
    if save is None:
        return
    arrays = {name: np.asarray(value) for name, value in zip(names, outputs)}
    # numpy's stubs take the first keyword for allow_pickle.
    np.savez(save.stream, **arrays)  # pyright: ignore[reportArgumentType]
    save.commit()


def _write_reports(
    reports: Sequence[tuple[str, RunReport]], out: TextIO, save_outputs: OutputFile | None
) -> int:
    """Print each run's report (labelled when there are sizes); save the
    last run's outputs (at the bounds); 0 if every run passed."""
    for label, report in reports:
        out.write((f"at {label}:\n" if label else "") + report.format() + "\n")
    report = reports[-1][1]
    _save_outputs(save_outputs, [o.name for o in report.outputs], report.planned_outputs)
    return 0 if all(r.ok for _, r in reports) else 1


def _check_pipeline(pipeline: str) -> None:
    """``RunError`` for a pipeline that would not build or names an ``output=``
    that cannot be written: checked before the import and the runs."""
    try:
        check_pipeline(normalize_pipeline(pipeline), all_passes(), f"--pipeline '{pipeline}'")
    except CommandLineError as error:
        raise RunError(str(error)) from None


def _main(
    args: argparse.Namespace,
    out: TextIO,
    save_outputs: OutputFile | None,
    model_frontend: Frontend | None,
) -> int:
    show_progress = sys.stderr.isatty()
    if args.pipeline is not None or model_frontend is not None:
        _check_pipeline(args.pipeline or DEFAULT_PIPELINE)
    npz = _load_npz(args.inputs)
    kernels = default_kernels(args.kernels)
    if model_frontend is not None:
        options = model_frontend.parse_options(args)
        pipeline = args.pipeline or DEFAULT_PIPELINE
        reports = run_model(
            args.input,
            pipeline,
            options,
            dim_values=_dim_values(args.dim_values),
            inputs=npz,
            seed=args.seed,
            atol=args.atol,
            rtol=args.rtol,
            reference=not args.no_reference,
            kernels=kernels,
            show_progress=show_progress,
        )
        # Written once the model has run: a model that fails prints its error only.
        out.write(f"{args.input}: pipeline {pipeline}\n")
        return _write_reports(reports, out, save_outputs)
    try:
        text = Path(args.input).read_text()
    except OSError as error:
        raise RunError(f"cannot read {args.input}: {error.strerror}") from error
    module = parse_module(text, args.input)
    names = output_names(module)
    globals_data: dict[str, np.ndarray] = {}
    if args.weights_from:
        globals_data = _weights(args, module)
    result = run_mlir(
        module,
        args.pipeline,
        kernels=kernels,
        globals_data=globals_data,
        inputs=npz,
        seed=args.seed,
        atol=args.atol if args.atol is not None else 1e-5,
        show_progress=show_progress,
    )
    if isinstance(result, ExecutionResult):
        for name, value in zip(names, result.outputs):
            array = np.asarray(value)
            out.write(
                f"{name}: {array.dtype}[{','.join(str(d) for d in array.shape)}] "
                f"sum {float(array.astype(np.float64).sum()):.6g}\n"
            )
        _save_outputs(save_outputs, names, result.outputs)
        return 0
    out.write(f"{args.input}: pipeline {args.pipeline}\n")
    out.write(result.format() + "\n")
    _save_outputs(save_outputs, names, result.planned_outputs)
    return 0 if result.ok else 1


def _weights(args: argparse.Namespace, module: ModuleOp) -> dict[str, np.ndarray]:
    """``--weights-from``: the data of ``module``'s globals from the model
    ``args.weights_from``, read by the front end its suffix selects (with
    the command line's options but ``--upper-bound``: the data has no dims)."""
    path = args.weights_from
    entry = entry_for(path)
    if entry is None:
        raise RunError(f"--weights-from {path}: not a model file ({', '.join(suffixes())})")
    weights_frontend = entry.load()
    options = weights_frontend.parse_options(
        argparse.Namespace(**{**vars(args), "upper_bound": []})
    )
    return weights_frontend.weights(path, module, options)


def main(argv: Sequence[str] | None = None) -> int:
    parser, dests = build_parser_and_dests()
    args = parser.parse_args(argv)
    # A format's options go with a model of that format (or --weights-from one).
    model = entry_for(args.input)
    owner = model or (entry_for(args.weights_from) if args.weights_from else None)
    foreign = foreign_options(parser, args, dests, owner.key if owner is not None else "")
    if foreign:
        what = f"{owner.name} models" if owner is not None else ".mlir input without --weights-from"
        parser.error(f"{', '.join(foreign)}: not an option of {what} ('{args.input}')")
    save: OutputFile | None = None
    try:
        # Opened first: an unwritable -o fails before the run, not after it.
        if args.save_outputs is not None:
            save = OutputFile(args.save_outputs, binary=True)
        return _main(args, sys.stdout, save, model.load() if model is not None else None)
    except LocatedRunError as error:
        print(error, file=sys.stderr)
        return 1
    except (RunError, FrontendError, OutputFileError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    finally:
        if save is not None:
            save.discard()


if __name__ == "__main__":
    sys.exit(launch.run(PROG, main))
