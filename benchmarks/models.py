"""Model benchmark: memplan's plans of real networks against the lower bound.

For each ONNX "light" model shipped with the ``onnx`` package
(``onnx/backend/test/data/light``), imported with ``memplan-import-onnx``:

* buffers: storages ``manifest-alloc`` creates (one per kernel result);
* no planning: the sum of their sizes;
* reuse: the sum of the slot sizes after ``reuse`` (whole-storage reuse,
  GraphPlanMemory / Relax StaticPlanBlockMemory style);
* coalesce+usmp, usmp: the bytes of the pool ``usmp`` fills;
* lower bound: the peak of live bytes (``plan-report``'s bound) -- no plan
  of these buffers in this order can use less;
* usmp / lower bound;
* usmp in place: ``manifest-alloc,insert-kills,usmp`` with element-wise
  results sharing a dying operand's bytes (``memory.inplace``; the columns
  above use ``manifest-alloc{inplace=false}``), its lower bound, and its
  ratio to the fixed-order lower bound;
* schedule + in place: the same after ``schedule`` (kernel calls reordered
  to lower the peak), its ratio to the fixed-order lower bound, and its
  planning time (``memplan-opt`` with that pipeline, as below) over text I/O;
* with ``--run``, proven: ``memplan-run`` on that schedule + in-place plan
  ("bit-identical" when every output equals the unplanned run's and every
  kernel call read the same bytes, and agrees with ONNX's reference within
  ``memplan-run``'s tolerance);
* planning seconds: what a user runs, ``memplan-opt -p
  'manifest-alloc,insert-kills,usmp' model.mlir`` as its own process
  (start-up, parse, verify, the passes, verify, print), CPU seconds, best
  of ``--repeat`` runs (``benchmarks/processes.py``);
* planning / text I/O: those seconds divided by ``memplan-opt model.mlir``
  with no pass (start-up, parse, verify, print), measured the same way in
  the same run. Target: at most 1.5.

Every plan is verified (``module.verify()`` and ``verify-plan`` when
registered) outside the timed part. A pass that is not registered yet shows
as "n/a".

``--with-tvm`` adds Apache TVM Relax's footprint for the same model, measured
in the same run: ``apache-tvm`` is installed with pip into its own venv
(``--tvm-venv``, default ``~/.cache/memplan/tvm-venv``), the model goes
through ``relax.frontend.onnx.from_onnx`` (weights bound as constants) and
the CPU default pipeline's passes up to and including
``StaticPlanBlockMemory`` (LegalizeOps, AnnotateTIROpPattern, FoldConstant,
FuseOps, FuseTIR, RewriteDataflowReshape, ToNonDataflow,
RemovePurityChecking, CallTIRRewrite). Its footprint is the sum of the
planned ``R.memory.alloc_storage`` sizes plus the function outputs Relax
allocates outside the plan (``R.builtin.alloc_tensor``); memplan's pool
holds its outputs too. Relax fuses operators first (a fused Conv+Relu has
no intermediate tensor), so a second TVM column runs the same passes
without FuseOps/FuseTIR: about the buffers memplan plans (one per
operator).

Usage::

    python benchmarks/models.py [--models squeezenet,resnet50] [--repeat 3]
                                [--with-tvm] [--markdown benchmarks/RESULTS-models.md]

Only the standard library is imported at the top, so the same file runs as
the TVM worker inside the TVM venv (``--tvm-worker MODEL.onnx ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TVM_VENV = Path.home() / ".cache" / "memplan" / "tvm-venv"
TARGET_RATIO = 1.5
# The table's main columns are fixed-order plans: one storage per kernel
# result, no in-place sharing (how they were first measured against TVM).
FIXED = "manifest-alloc{inplace=false}"
PLANNING = f"{FIXED},insert-kills,usmp"
CONFIGURATIONS = {
    "manifest": f"{FIXED},insert-kills",
    "reuse": f"{FIXED},insert-kills,reuse",
    "coalesce+usmp": f"{FIXED},insert-kills,coalesce,usmp",
    "usmp": PLANNING,
    "in place": "manifest-alloc,insert-kills,usmp",
    "schedule": "schedule{remarks=false},manifest-alloc,insert-kills,usmp",
}


def light_models() -> list[Path]:
    import onnx

    folder = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(folder.glob("light_*.onnx"))


# ---------------------------------------------------------------------------
# memplan side
# ---------------------------------------------------------------------------


@dataclass
class ModelRow:
    """One model's measurements (``None``: the pass is not available)."""

    name: str
    nodes: int
    buffers: int
    no_planning: int
    reuse: int | None
    coalesce_usmp: int | None
    usmp: int | None
    lower_bound: int
    planning_seconds: float | None
    text_io_seconds: float
    inplace_usmp: int | None = None
    inplace_lower_bound: int | None = None
    scheduled_usmp: int | None = None
    scheduled_run: str | None = None
    schedule_planning_seconds: float | None = None
    tvm_fused: int | None = None
    tvm_unfused: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return None if self.usmp is None else self.usmp / self.lower_bound

    @property
    def planning_vs_io(self) -> float | None:
        return _over(self.planning_seconds, self.text_io_seconds)


def _missing_passes(spec: str) -> list[str]:
    from memplan.passes import get_all_passes

    available = get_all_passes()
    names = [step.split("{", 1)[0] for step in spec.split(",")]
    return [name for name in names if name not in available]


def _cli_seconds(mlir: Path, spec: str | None, repeat: int) -> float:
    """CPU seconds of ``memplan-opt [-p spec] mlir``, best of ``repeat``."""
    from processes import best_of, tool  # benchmarks/processes.py

    command = [tool("memplan-opt"), str(mlir)] + (["-p", spec] if spec else [])
    result = best_of(repeat, command)
    if not result.ok:
        raise AssertionError(f"{' '.join(command)}: {result.note}")
    return result.cpu


def _plan(ctx: Any, text: str, spec: str) -> Any:
    """Parse ``text``, run ``spec`` on it and verify the plan; the module."""
    from xdsl.parser import Parser
    from xdsl.passes import PassPipeline

    from memplan.passes import get_all_passes

    module = Parser(ctx, text).parse_module()
    PassPipeline.parse_spec(get_all_passes(), spec).apply(ctx, module)
    module.verify()
    if not _missing_passes("verify-plan"):
        PassPipeline.parse_spec(get_all_passes(), "verify-plan").apply(ctx, module)
    return module


def _storage_bytes(module: Any) -> int:
    from memplan.dialect import AllocStorageOp

    return sum(op.byte_size or 0 for op in module.walk() if isinstance(op, AllocStorageOp))


def _pool_bytes(module: Any) -> int:
    from memplan.dialect import AllocStorageOp, PoolOp

    unpinned = [op for op in module.walk() if isinstance(op, AllocStorageOp) and op.pinned is None]
    if unpinned:
        raise AssertionError(f"{len(unpinned)} storages left unpinned")
    return sum(op.used.value.data for op in module.ops if isinstance(op, PoolOp) and op.used)


def measure_model(path: Path, repeat: int, run: bool = False) -> ModelRow:
    """Import ``path`` and measure every configuration on it."""
    import onnx

    from memplan.dialect.context import memplan_context
    from memplan.dialect.printer import module_text
    from memplan.passes.plan_report import gather_report
    from memplan.tools.frontends.onnx.importer import import_model

    model = onnx.load(path)
    text = module_text(import_model(model))
    ctx = memplan_context()
    with tempfile.TemporaryDirectory() as folder:
        mlir = Path(folder) / f"{path.stem}.mlir"
        mlir.write_text(text)
        io_seconds = _cli_seconds(mlir, None, repeat)
        manifested = _plan(ctx, text, CONFIGURATIONS["manifest"])
        [function] = gather_report(manifested).functions
        [unplanned] = function.pools
        row = ModelRow(
            name=path.stem.removeprefix("light_"),
            nodes=len(model.graph.node),
            buffers=unplanned.buffer_count,
            no_planning=unplanned.used,
            reuse=None,
            coalesce_usmp=None,
            usmp=None,
            lower_bound=unplanned.lower_bound,
            planning_seconds=None,
            text_io_seconds=io_seconds,
        )
        if not _missing_passes(CONFIGURATIONS["reuse"]):
            row.reuse = _storage_bytes(_plan(ctx, text, CONFIGURATIONS["reuse"]))
        if not _missing_passes(CONFIGURATIONS["coalesce+usmp"]):
            row.coalesce_usmp = _pool_bytes(_plan(ctx, text, CONFIGURATIONS["coalesce+usmp"]))
        if not _missing_passes(PLANNING):
            row.usmp = _pool_bytes(_plan(ctx, text, PLANNING))
            row.planning_seconds = _cli_seconds(mlir, PLANNING, repeat)
            shared = _plan(ctx, text, CONFIGURATIONS["in place"])
            row.inplace_usmp = _pool_bytes(shared)
            [shared_pool] = [p for f in gather_report(shared).functions for p in f.pools]
            row.inplace_lower_bound = shared_pool.lower_bound
            if not _missing_passes(CONFIGURATIONS["schedule"]):
                row.scheduled_usmp = _pool_bytes(_plan(ctx, text, CONFIGURATIONS["schedule"]))
                row.schedule_planning_seconds = _cli_seconds(
                    mlir, CONFIGURATIONS["schedule"], repeat
                )
                if run:
                    row.scheduled_run = _prove(path, CONFIGURATIONS["schedule"])
    return row


def _prove(path: Path, pipeline: str) -> str:
    """``memplan-run``'s verdict on ``pipeline``'s plan of ``path``."""
    from memplan.tools.runs import run_onnx

    [(_, report)] = run_onnx(str(path), pipeline)
    return "bit-identical" if report.ok else "FAILED"


# ---------------------------------------------------------------------------
# TVM side
# ---------------------------------------------------------------------------


def ensure_tvm_venv(venv: Path) -> Path:
    """The TVM venv's python, creating the venv and installing apache-tvm if needed."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import tvm, onnx; from tvm.relax.frontend.onnx import from_onnx"]
    if python.exists() and subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return python
    print(f"installing apache-tvm into {venv} ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "apache-tvm", "onnx", "numpy"], check=True
    )
    subprocess.run(check, check=True)
    return python


def tvm_footprints(python: Path, paths: Sequence[Path]) -> dict[str, Any]:
    """Run the TVM worker (this file, in the TVM venv) on ``paths``:
    ``{"version": ..., "models": {name: {"fused": bytes, "unfused": bytes}}}``."""
    result = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--tvm-worker", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"TVM worker failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout)


def _tvm_worker(paths: Sequence[str]) -> None:
    """Inside the TVM venv: print {model: {"fused": bytes, "unfused": bytes}}."""
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    alloc_storage = tvm.ir.Op.get("relax.memory.alloc_storage")
    alloc_tensor = tvm.ir.Op.get("relax.builtin.alloc_tensor")

    def footprint(mod: Any) -> int:
        total = 0

        def visit(expr: Any) -> None:
            nonlocal total
            if not isinstance(expr, relax.Call):
                return
            if expr.op.same_as(alloc_storage):
                total += int(expr.args[0].values[0])
            elif expr.op.same_as(alloc_tensor):
                count = 1
                for dim in expr.args[0].values:
                    count *= int(dim)
                total += count * ((tvm.runtime.DataType(expr.args[1].value).bits + 7) // 8)

        relax.analysis.post_order_visit(mod["main"].body, visit)
        return total

    results: dict[str, dict[str, int]] = {}
    for path in paths:
        module = from_onnx(onnx.load(path), keep_params_in_input=False)
        sizes: dict[str, int] = {}
        for fused in (True, False):
            passes = [
                relax.transform.LegalizeOps(),
                relax.transform.AnnotateTIROpPattern(),
                relax.transform.FoldConstant(),
            ]
            if fused:
                passes += [relax.transform.FuseOps(), relax.transform.FuseTIR()]
            passes += [
                relax.transform.RewriteDataflowReshape(),
                relax.transform.ToNonDataflow(),
                relax.transform.RemovePurityChecking(),
                relax.transform.CallTIRRewrite(),
                relax.transform.StaticPlanBlockMemory(),
            ]
            with tvm.target.Target("llvm"):
                planned = tvm.transform.Sequential(passes)(module)
            sizes["fused" if fused else "unfused"] = footprint(planned)
        results[Path(path).stem.removeprefix("light_")] = sizes
        print(f"tvm: {Path(path).stem} done", file=sys.stderr)
    json.dump({"version": tvm.__version__, "models": results}, sys.stdout)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


COLUMNS = """\
Generated by `benchmarks/models.py` (see its docstring). Bytes are the
activation memory of `@main` (weights are constants and never planned):
*no planning* is one storage per kernel result; *reuse* the slots of
`reuse`; *coalesce+usmp* and *usmp* the pool `usmp` fills; *lower bound* the
peak of live bytes of the same buffers. *planning s* is
`manifest-alloc,insert-kills,usmp` in process (best of the repeats) and
*planning / text I/O* that time over xDSL parsing and printing the imported
module, measured in the same run. *TVM Relax* is the sum of
`R.memory.alloc_storage` after `StaticPlanBlockMemory` plus the outputs
Relax allocates outside its plan, after the CPU pipeline's passes, which
fuse operators first; *TVM Relax unfused* runs the same passes without
FuseOps/FuseTIR: about the buffers memplan plans (one per operator)."""


def _bytes(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _ratio(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _over(value: float | None, base: float | None) -> float | None:
    return None if value is None or not base else value / base


def table(rows: Sequence[ModelRow], with_tvm: bool) -> str:
    header = [
        "model",
        "nodes",
        "buffers",
        "no planning",
        "reuse",
        "coalesce+usmp",
        "usmp",
        "lower bound",
        "usmp / LB",
        "planning s",
        "planning / text I/O",
        "usmp in place",
        "in-place LB",
        "in place / LB",
        "schedule + in place",
        "schedule / LB",
        "schedule planning / text I/O",
    ]
    if any(row.scheduled_run is not None for row in rows):
        header.append("proven")
    if with_tvm:
        header += [
            "TVM Relax",
            "usmp / TVM",
            "schedule + in place / TVM",
            "TVM Relax unfused",
            "usmp / TVM unfused",
        ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [
            row.name,
            str(row.nodes),
            str(row.buffers),
            _bytes(row.no_planning),
            _bytes(row.reuse),
            _bytes(row.coalesce_usmp),
            _bytes(row.usmp),
            _bytes(row.lower_bound),
            _ratio(row.ratio),
            _ratio(row.planning_seconds, 2),
            _ratio(row.planning_vs_io, 2),
            _bytes(row.inplace_usmp),
            _bytes(row.inplace_lower_bound),
            _ratio(_over(row.inplace_usmp, row.lower_bound)),
            _bytes(row.scheduled_usmp),
            _ratio(_over(row.scheduled_usmp, row.lower_bound)),
            _ratio(_over(row.schedule_planning_seconds, row.text_io_seconds), 2),
        ]
        if "proven" in header:
            cells.append(row.scheduled_run or "n/a")
        if with_tvm:
            cells += [
                _bytes(row.tvm_fused),
                _ratio(_over(row.usmp, row.tvm_fused)),
                _ratio(_over(row.scheduled_usmp, row.tvm_fused)),
                _bytes(row.tvm_unfused),
                _ratio(_over(row.usmp, row.tvm_unfused)),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: Sequence[ModelRow], with_tvm: bool) -> list[str]:
    lines: list[str] = []
    at_bound = [r.name for r in rows if r.usmp is not None and r.usmp == r.lower_bound]
    lines.append(f"usmp at the lower bound: {len(at_bound)} of {len(rows)} models.")
    slow = [
        r.name for r in rows if r.planning_vs_io is not None and r.planning_vs_io > TARGET_RATIO
    ]
    lines.append(
        f"planning / text I/O above {TARGET_RATIO}: " + (", ".join(slow) if slow else "none") + "."
    )
    if with_tvm:
        lines.append(
            "Relax fuses operators before planning (e.g. BatchNorm, Mul, Add and Relu "
            "into one kernel), so it plans fewer buffers: where its footprint is below "
            "memplan's lower bound, no plan of the unfused buffers can match it."
        )
        for label, attribute in (("TVM Relax", "tvm_fused"), ("TVM Relax unfused", "tvm_unfused")):
            above = [
                f"{r.name} ({r.usmp / getattr(r, attribute):.3f}x; its lower bound is "
                f"{r.lower_bound / getattr(r, attribute):.3f}x)"
                for r in rows
                if r.usmp is not None and getattr(r, attribute) and r.usmp > getattr(r, attribute)
            ]
            lines.append(f"usmp above {label}: " + ("; ".join(above) if above else "none") + ".")
        beaten = [
            r.name
            for r in rows
            if r.scheduled_usmp is not None and r.tvm_fused and r.scheduled_usmp < r.tvm_fused
        ]
        lines.append(
            f"schedule + in place below TVM Relax (fused): {len(beaten)} of {len(rows)} models."
        )
    runs = [r for r in rows if r.scheduled_run is not None]
    if runs:
        identical = [r for r in runs if r.scheduled_run == "bit-identical"]
        lines.append(
            f"memplan-run on the schedule + in-place plans: {len(identical)} of {len(runs)} "
            "bit-identical to the unplanned run."
        )
    missing = sorted({p for spec in CONFIGURATIONS.values() for p in _missing_passes(spec)})
    if missing:
        lines.append("Passes not registered (their columns are n/a): " + ", ".join(missing) + ".")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], allow_abbrev=False
    )
    parser.add_argument("--models", help="comma-separated names, e.g. squeezenet,resnet50")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (best of)")
    parser.add_argument("--with-tvm", action="store_true", help="add TVM Relax's footprint")
    parser.add_argument("--tvm-venv", type=Path, default=DEFAULT_TVM_VENV)
    parser.add_argument("--markdown", type=Path, help="also write the results here")
    parser.add_argument(
        "--run", action="store_true", help="prove the schedule + in-place plans with memplan-run"
    )
    parser.add_argument("--tvm-worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tvm_worker:
        _tvm_worker(args.tvm_worker)
        return 0

    sys.path.insert(0, str(REPO))
    paths = light_models()
    if args.models:
        wanted = {f"light_{m.strip().removeprefix('light_')}" for m in args.models.split(",")}
        paths = [p for p in paths if p.stem in wanted]
    rows: list[ModelRow] = []
    for path in paths:
        rows.append(measure_model(path, args.repeat, args.run))
        print(f"{path.stem}: done", file=sys.stderr)
    tvm_version = None
    if args.with_tvm:
        python = ensure_tvm_venv(args.tvm_venv)
        footprints = tvm_footprints(python, paths)
        tvm_version = footprints["version"]
        for row in rows:
            row.tvm_fused = footprints["models"][row.name]["fused"]
            row.tvm_unfused = footprints["models"][row.name]["unfused"]

    text = table(rows, args.with_tvm)
    notes = summary(rows, args.with_tvm)
    if tvm_version is not None:
        notes.append(f"TVM: apache-tvm {tvm_version} (pip), target llvm.")
    print(text)
    print()
    print("\n".join(notes))
    if args.markdown:
        environment = (
            f"Python {platform.python_version()} on {platform.machine()}, "
            f"{os.cpu_count()} CPUs; repeat={args.repeat}; "
            f"command: python benchmarks/models.py {' '.join(argv if argv is not None else sys.argv[1:])}"
        )
        args.markdown.write_text(
            "# Model benchmark results\n\n"
            + f"{environment}\n\n{COLUMNS}\n\n{text}\n\n"
            + "\n".join(f"- {n}" for n in notes)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
