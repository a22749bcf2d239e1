"""TFLite benchmark: memplan's plans of real `.tflite` models against the
lower bound, TFLite's ArenaPlanner and TFLite Micro, measured in one run.

The models are the 14 in MediaPipe 0.10.14's wheel (`mediapipe/modules/**`),
fetched with ``pip download --no-deps mediapipe==0.10.14`` into a cache
(``--cache``, default ``~/.cache/memplan/mediapipe-0.10.14``) and never
committed. Per model:

* ops / tensors: operators in the subgraph and the activation tensors
  memplan plans (one storage per operator result after folding);
* lower bound: the peak of live bytes of those storages in execution order
  (``plan-report``'s bound), with element-wise results in place of a dying
  operand (``memory.inplace``, as TFLite shares them); "no in-place" is the
  bound of the fixed order without that (``manifest-alloc{inplace=false}``);
* memplan: the bytes of the pool ``manifest-alloc,insert-kills,usmp``
  fills (verified by ``verify-plan``). It holds every operator result,
  outputs included; the model's input is ``@main``'s argument, held by
  the caller;
* memplan arena: the same with ``--inputs-in-arena``: each input copied
  into the pool first and live until its last reader, as TFLite and TFLM
  hold inputs. This is the figure comparable with their arenas; its lower
  bound is the "arena LB" column;
* TFLite arena (``--with-tflite``): ai-edge-litert's interpreter with
  ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` after ``allocate_tensors()``: the
  span of addresses of its non-constant tensors (inputs, outputs,
  activations and the kernels' scratch tensors; folded DEQUANTIZE/DENSIFY
  outputs are left out, as memplan keeps them as constants);
* TFLM arena (``--with-tflite``): the ``tflite-micro`` package's
  ``Interpreter.from_file(...).print_allocations()``, line "Arena
  allocation head" (the planned tensors, scratch included); "n/a" where
  TFLM cannot run the model (MediaPipe's custom ops, unsupported builtins).

With ``--run``, each model also goes through ``memplan-run``: planned and
unplanned runs must be bit-identical and agree with TFLite's interpreter
(the column gives the largest |difference| over the largest |value| of an
output), or the column says why the model cannot run.

TFLite and TFLM run in subprocesses so an abort in either cannot take the
benchmark down. Both arenas include kernel scratch (im2col and the like)
that memplan does not model; the table says so rather than subtracting it.

Usage::

    python benchmarks/tflite_models.py [--with-tflite] [--run] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wheels import wheel_files

if TYPE_CHECKING:
    from memplan.tools.frontends.tflite.model import TfliteSubgraph

MEDIAPIPE = "mediapipe==0.10.14"
DEFAULT_CACHE = Path.home() / ".cache" / "memplan" / "mediapipe-0.10.14"
PLANNING = "manifest-alloc,insert-kills,usmp,verify-plan"
FIXED_ORDER = "manifest-alloc{inplace=false},insert-kills,usmp,verify-plan"


def fetch_models(cache: Path) -> list[Path]:
    """The MediaPipe models, downloading and extracting the wheel once."""
    return wheel_files(MEDIAPIPE, cache, "mediapipe/modules/", ".tflite")


@dataclass
class Row:
    name: str
    operators: int
    tensors: int
    lower_bound: int
    memplan: int
    fixed_lower_bound: int
    arena_lower_bound: int
    arena: int
    planning_seconds: float
    tflite: int | str | None = None
    tflm: int | str | None = None
    run: str | None = None


def _plan(
    subgraph: TfliteSubgraph, inputs_in_arena: bool, pipeline: str = PLANNING
) -> tuple[int, int, int, float]:
    """Storages, lower bound and pool bytes of ``subgraph`` planned by memplan,
    and the planning seconds."""
    from xdsl.passes import PassPipeline

    from memplan.dialect import PoolOp
    from memplan.dialect.context import memplan_context
    from memplan.passes import get_all_passes
    from memplan.passes.plan_report import gather_report
    from memplan.tools.frontends.tflite.importer import import_subgraph

    module = import_subgraph(subgraph, inputs_in_arena=inputs_in_arena)
    started = time.perf_counter()
    PassPipeline.parse_spec(get_all_passes(), pipeline).apply(memplan_context(), module)
    seconds = time.perf_counter() - started
    module.verify()
    [function] = gather_report(module).functions
    [pool] = function.pools
    used = sum(op.used.value.data for op in module.ops if isinstance(op, PoolOp) and op.used)
    return pool.buffer_count, pool.lower_bound, used, seconds


def measure(path: Path) -> Row:
    from memplan.tools.frontends.tflite.model import load_model, read_subgraph

    subgraph = read_subgraph(*load_model(path))
    tensors, lower_bound, used, seconds = _plan(subgraph, inputs_in_arena=False)
    _, arena_lower_bound, arena, _ = _plan(subgraph, inputs_in_arena=True)
    _, fixed_lower_bound, _, _ = _plan(subgraph, inputs_in_arena=True, pipeline=FIXED_ORDER)
    return Row(
        path.stem,
        len(subgraph.operators),
        tensors,
        lower_bound,
        used,
        fixed_lower_bound,
        arena_lower_bound,
        arena,
        seconds,
    )


_TFLITE_WORKER = r"""
import json, sys
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from memplan.tools.frontends.tflite.importer import fold_constants
from memplan.tools.frontends.tflite.model import load_model, read_subgraph
path = sys.argv[1]
subgraph = read_subgraph(*load_model(path))
folded = fold_constants(subgraph, values=False)
try:
    it = Interpreter(model_path=path,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
except Exception as error:
    print(json.dumps({"error": str(error).splitlines()[0]})); sys.exit(0)
spans = []
for detail in it.get_tensor_details():
    i = detail["index"]
    if i < len(subgraph.tensors) and i in folded.constants:
        continue  # model constants and what TFLite folds at Prepare
    try:
        array = it.tensor(i)()
    except ValueError:
        continue
    if array is not None and array.nbytes:  # None: a resource variable's handle
        start = array.__array_interface__["data"][0]
        spans.append((start, start + array.nbytes))
print(json.dumps({"arena": max(e for _, e in spans) - min(s for s, _ in spans)}))
"""

_TFLM_WORKER = r"""
import ctypes, sys
from tflite_micro.python.tflite_micro import runtime
try:
    runtime.Interpreter.from_file(sys.argv[1], arena_size=512 * 1024 * 1024).print_allocations()
finally:
    ctypes.CDLL(None).fflush(None)  # TFLM's C stdout, which says what failed
"""


def tflite_arena(path: Path) -> int | str:
    done = subprocess.run(
        [sys.executable, "-c", _TFLITE_WORKER, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return f"n/a (exit {done.returncode})"
    result = json.loads(lines[-1])
    if "arena" in result:
        return result["arena"]
    custom = re.search(r"unresolved custom op: (\w+)", result["error"])
    return f"n/a (no custom op {custom.group(1)})" if custom else f"n/a ({result['error']})"


def tflm_arena(path: Path) -> int | str:
    done = subprocess.run(
        [sys.executable, "-c", _TFLM_WORKER, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    found = re.search(r"Arena allocation head (\d+) bytes", output)
    if found is None:
        # TFLM names the first node that failed to prepare, or the op it lacks.
        node = re.search(r"Node (\w+) \(number \d+\) failed to prepare", output)
        if node:
            return f"n/a ({node.group(1)} fails to prepare)"
        missing = re.search(r"registration from op code (\w+)", output)
        return f"n/a (no {missing.group(1)} kernel)" if missing else f"n/a (exit {done.returncode})"
    return int(found.group(1))


def run_check(path: Path) -> str:
    """``memplan-run``'s verdict: planned vs unplanned and vs TFLite."""
    from memplan.tools.frontends.protocol import FrontendError
    from memplan.tools.runs import RunError, run_tflite

    try:
        [(_, report)] = run_tflite(str(path), "manifest-alloc,insert-kills,usmp")
    except (RunError, FrontendError) as error:
        missing = re.search(r"no kernel for TFLite operator (\w+)", str(error))
        if missing:
            return f"not run: no kernel for {missing.group(1)}"
        return f"not run: {error}"
    worst = max(
        (o.planned_vs_reference or 0.0) / (o.reference_magnitude or 1.0) for o in report.outputs
    )
    identical = all(o.identical for o in report.outputs)
    verdict = "OK" if report.ok else "MISMATCH"
    return f"{verdict}: {'bit-identical' if identical else 'DIFFERENT'}, vs TFLite {worst:.1e} rel."


def _ratio(value: int | str | None, base: int) -> str:
    return f"{base / value:.3f}" if isinstance(value, int) and value else "-"


def _cell(value: int | str | None) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else value


def table(rows: Sequence[Row], with_tflite: bool) -> str:
    head = [
        "model",
        "ops",
        "tensors",
        "LB",
        "memplan",
        "arena LB no in-place",
        "arena LB",
        "memplan arena",
    ]
    if with_tflite:
        head += ["TFLite arena", "memplan arena / TFLite", "TFLM arena", "memplan arena / TFLM"]
    if any(row.run is not None for row in rows):
        head += ["memplan-run"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [
            row.name,
            str(row.operators),
            str(row.tensors),
            f"{row.lower_bound:,}",
            f"{row.memplan:,}",
            f"{row.fixed_lower_bound:,}",
            f"{row.arena_lower_bound:,}",
            f"{row.arena:,}",
        ]
        if with_tflite:
            cells += [_cell(row.tflite), _ratio(row.tflite, row.arena)]
            cells += [_cell(row.tflm), _ratio(row.tflm, row.arena)]
        if row.run is not None:
            cells.append(row.run)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--with-tflite", action="store_true")
    parser.add_argument(
        "--run",
        action="store_true",
        help="also execute each model with memplan-run (planned, unplanned, TFLite)",
    )
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for path in fetch_models(args.cache):
        row = measure(path)
        if args.with_tflite:
            row.tflite = tflite_arena(path)
            row.tflm = tflm_arena(path)
        if args.run:
            row.run = run_check(path)
        rows.append(row)
        print(
            f"{path.stem}: memplan {row.memplan} LB {row.lower_bound} "
            f"TFLite {row.tflite} TFLM {row.tflm} ({row.planning_seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    text = table(rows, args.with_tflite)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
