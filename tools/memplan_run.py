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
                [--dim-values SYMBOL=V,V,... ...]

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

A parametric plan (`usmp{parametric=true}` in the pipeline:
`--pipeline=manifest-alloc,insert-kills,usmp{parametric=true}`) is run at
each size with its storages at the offsets its program gives at that
size, in a pool of exactly the program's bytes there, which the `pools:`
line prints (a static plan's pool is its `used` bytes at every size).

With an `.mlir` file, the same happens without the reference run; without
`--pipeline` the module is simply run once and its outputs summarised.
When `@main` places its ranged dims on its arguments (`memory.dim_ranges`
and `memory.dim_symbols`, as the importers write them) and no `--inputs`
are given, the module runs at each of `--dim-values` (default each range's
lower end, middle and upper end) instead. An already planned module (a
storage pinned in a pool) running at sizes without `--pipeline` is
compared with itself unpinned (every storage its own allocation, the
plan's pins, offset programs and reserves ignored): that checks its
offsets, not the decisions `manifest-alloc` made before them, which both
runs share; with `--pipeline` the pipeline's copy is compared with the
module unpinned the same way.
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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from memplan.dialect.interpreter import ExecutionResult
from memplan.passes.output_file import OutputFile, OutputFileError
from memplan.tools import launch
from memplan.tools.frontends.protocol import Frontend, FrontendError
from memplan.tools.frontends.registry import (
    entry_for,
    foreign_options,
    suffixes,
)
from memplan.tools.pipeline import (
    CommandLineError,
    all_passes,
    check_pipeline,
    normalize_pipeline,
)
from memplan.tools.run_arguments import DEFAULT_PIPELINE, PROG, build_parser_and_dests
from memplan.tools.run_compare import RunReport
from memplan.tools.runs import (
    LocatedRunError,
    RunError,
    default_kernels,
    output_names,
    parse_module,
    run_mlir,
    run_model,
)

# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def parse_dim_values(specs: Sequence[str]) -> dict[str, list[int]]:
    """``--dim-values`` (``SYMBOL=1,32,64``, repeatable) as each symbol's
    values; ``RunError`` naming a malformed one."""
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
            dim_values=parse_dim_values(args.dim_values),
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
    results = run_mlir(
        module,
        args.pipeline,
        kernels=kernels,
        globals_data=globals_data,
        inputs=npz,
        seed=args.seed,
        atol=args.atol if args.atol is not None else 1e-5,
        dim_values=parse_dim_values(args.dim_values),
        show_progress=show_progress,
    )
    reports = [(label, r) for label, r in results if isinstance(r, RunReport)]
    if reports:
        how = (
            f"pipeline {args.pipeline}"
            if args.pipeline is not None
            else "as planned, against its storages unpinned"
        )
        out.write(f"{args.input}: {how}\n")
        return _write_reports(reports, out, save_outputs)
    for label, result in results:
        assert isinstance(result, ExecutionResult)
        if label:
            out.write(f"at {label}:\n")
        for name, value in zip(names, result.outputs):
            array = np.asarray(value)
            out.write(
                f"{name}: {array.dtype}[{','.join(str(d) for d in array.shape)}] "
                f"sum {float(array.astype(np.float64).sum()):.6g}\n"
            )
    last = results[-1][1]
    assert isinstance(last, ExecutionResult)
    _save_outputs(save_outputs, names, last.outputs)
    return 0


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
