"""Bytes and pass time of `coalesce` and `reuse` against no planning and the lower bounds.

Usage: python benchmarks/coalesce_reuse.py [--sizes 10,100,1000] [--budget N] [--markdown FILE]

Programs (every one through `manifest-alloc` and `insert-kills` first):

* the `examples/*.mlir` models;
* ``chain-N``: N kernel calls in a row, each reading the previous result,
  every fourth one also the result from three calls back (a residual), with
  tensor sizes drawn from 128 B to 16 KiB (seeded, deterministic);
* ``branches-N``: N kernel calls in stretches of straight-line code and
  ``scf.if``s whose two branches compute a result each (different lengths
  and sizes) that the code after the ``scf.if`` reads.

Columns: kernel calls and static storages; total bytes (the sizes of all
static storages added up, i.e. what is allocated) with no planning, after
``coalesce{overlap=false}`` (TVM part 1), ``reuse`` and ``coalesce``
(part 2); *regions bound*: the best ``coalesce`` can reach, the lower bound
of each merged region (its peak of live bytes) plus the storages it leaves
alone; *peak*: the lower bound of the whole function (peak of live bytes of
all static storages, what a whole-function planner such as ``usmp`` could
reach); regions of ``coalesce`` at their bound / proven optimal / all; and
the time of each pass (ms, median of ``--repeat`` runs, the analysis
included) next to the time to parse the program (the baseline of the same
run). The targets the last two columns check: ``coalesce`` equals the
regions bound wherever the exact search can reach it (every region is at
its bound, or ``optimal``: proven minimal above a bound that is not tight),
and ``reuse`` is never above ``coalesce{overlap=false}``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402
from xdsl.parser import Parser  # noqa: E402
from xdsl.passes import ModulePass  # noqa: E402

from memplan.dialect import AllocStorageOp  # noqa: E402
from memplan.dialect.context import memplan_context  # noqa: E402
from memplan.passes.analysis import analyze_function  # noqa: E402
from memplan.passes.coalesce import CoalescePass, plan_function  # noqa: E402
from memplan.passes.insert_kills import InsertKillsPass  # noqa: E402
from memplan.passes.manifest_alloc import ManifestAllocPass  # noqa: E402
from memplan.passes.planning.algorithms import DEFAULT_BUDGET, PlanOptions  # noqa: E402
from memplan.passes.planning.bounds import buffers_lower_bound  # noqa: E402
from memplan.passes.reuse import ReusePass  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SIZES = (128, 256, 512, 1024, 2048, 4096, 16384)


# ---------------------------------------------------------------------------
# Generated programs (value-semantic, before manifest-alloc)
# ---------------------------------------------------------------------------


class _Writer:
    """Kernel declarations on demand, calls with fresh names."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.kernels: dict[str, str] = {}
        self.body: list[str] = []
        self.count = 0
        self.calls = 0

    @staticmethod
    def tensor(size: int) -> str:
        return f"tensor<{size // 4}xf32>"

    def call(self, inputs: list[tuple[str, int]], size: int, indent: str) -> tuple[str, int]:
        name = "k_" + "_".join(str(s) for _, s in inputs) + f"_to_{size}"
        types = ", ".join(self.tensor(s) for _, s in inputs)
        self.kernels[name] = f"func.func private @{name}({types}) -> {self.tensor(size)}"
        self.count += 1
        self.calls += 1
        result = f"%v{self.count}"
        operands = ", ".join(v for v, _ in inputs)
        self.body.append(
            f"{indent}{result} = func.call @{name}({operands}) : ({types}) -> {self.tensor(size)}"
        )
        return result, size

    def program(self, result: tuple[str, int]) -> str:
        declarations = "\n".join(self.kernels[k] for k in sorted(self.kernels))
        body = "\n".join(self.body)
        return (
            f"{declarations}\n"
            f"func.func @main(%c: i1, %x: {self.tensor(1024)}) -> {self.tensor(result[1])} {{\n"
            f"{body}\n"
            f"  func.return {result[0]} : {self.tensor(result[1])}\n"
            "}\n"
        )


def _chain_steps(writer: _Writer, history: list[tuple[str, int]], steps: int, indent: str) -> None:
    for _ in range(steps):
        inputs = [history[-1]]
        if writer.calls % 4 == 3 and len(history) >= 4:
            inputs.append(history[-4])
        history.append(writer.call(inputs, writer.rng.choice(SIZES), indent))


def chain(calls: int) -> str:
    writer = _Writer(calls)
    history: list[tuple[str, int]] = [("%x", 1024)]
    _chain_steps(writer, history, calls, "  ")
    return writer.program(history[-1])


def branches(calls: int) -> str:
    writer = _Writer(calls + 1)
    history: list[tuple[str, int]] = [("%x", 1024)]
    while writer.calls < calls:
        _chain_steps(writer, history, min(2, calls - writer.calls), "  ")
        left = calls - writer.calls
        if left < 2:
            continue
        size = writer.rng.choice(SIZES)
        result = f"%r{writer.calls}"
        writer.body.append(f"  {result} = scf.if %c -> ({writer.tensor(size)}) {{")
        for branch, length in enumerate((min(3, left - 1), 1)):
            inner = list(history)
            _chain_steps(writer, inner, length - 1, "    ")
            value, _ = writer.call([inner[-1]], size, "    ")
            writer.body.append(f"    scf.yield {value} : {writer.tensor(size)}")
            if branch == 0:
                writer.body.append("  } else {")
        writer.body.append("  }")
        history.append((result, size))
    return writer.program(history[-1])


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    calls: int
    storages: int
    none: int
    part1: int
    reuse: int
    coalesce: int
    regions_bound: int
    peak: int
    at_bound: int
    proven: int
    settled: int
    regions: int
    parse_ms: float
    part1_ms: float
    reuse_ms: float
    coalesce_ms: float


def _static_storages(module: ModuleOp) -> list[AllocStorageOp]:
    return [
        op for op in module.walk() if isinstance(op, AllocStorageOp) and op.byte_size is not None
    ]


def _total(module: ModuleOp) -> int:
    return sum(op.byte_size or 0 for op in _static_storages(module))


def _functions(module: ModuleOp) -> list[FuncOp]:
    return [op for op in module.ops if isinstance(op, FuncOp) and not op.is_declaration]


def _timed(module: ModuleOp, make: Callable[[], ModulePass], repeat: int) -> tuple[ModuleOp, float]:
    times: list[float] = []
    result = module
    for _ in range(repeat):
        result = module.clone()
        started = time.perf_counter()
        make().apply(memplan_context(), result)
        times.append(time.perf_counter() - started)
    result.verify()
    return result, statistics.median(times) * 1000


def measure(name: str, source: str, *, budget: int, repeat: int) -> Row:
    parse_times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        module = Parser(memplan_context(), source).parse_module()
        parse_times.append(time.perf_counter() - started)
    parse_ms = statistics.median(parse_times) * 1000
    calls = sum(1 for op in module.walk() if op.name == "func.call")
    ManifestAllocPass().apply(memplan_context(), module)
    InsertKillsPass().apply(memplan_context(), module)
    module.verify()

    part1, part1_ms = _timed(module, lambda: CoalescePass(overlap=False), repeat)
    reused, reuse_ms = _timed(module, lambda: ReusePass(), repeat)
    coalesced, coalesce_ms = _timed(module, lambda: CoalescePass(budget=budget), repeat)

    regions_bound = peak = at_bound = proven = settled = regions = 0
    for func in _functions(module):
        lifetimes = analyze_function(func)
        plans = plan_function(lifetimes, options=PlanOptions(budget=budget))
        merged = {id(m.value) for plan in plans for m in plan.members}
        regions_bound += sum(plan.lower_bound for plan in plans)
        regions_bound += sum(
            s.size or 0 for s in lifetimes.static_storages if id(s.value) not in merged
        )
        peak += buffers_lower_bound(s.buffer(pin=False) for s in lifetimes.static_storages)
        regions += len(plans)
        at_bound += sum(1 for plan in plans if plan.size == plan.lower_bound)
        proven += sum(1 for plan in plans if plan.status == "optimal")
        settled += sum(
            1 for plan in plans if plan.size == plan.lower_bound or plan.status == "optimal"
        )

    return Row(
        name=name,
        calls=calls,
        storages=len(_static_storages(module)),
        none=_total(module),
        part1=_total(part1),
        reuse=_total(reused),
        coalesce=_total(coalesced),
        regions_bound=regions_bound,
        peak=peak,
        at_bound=at_bound,
        proven=proven,
        settled=settled,
        regions=regions,
        parse_ms=parse_ms,
        part1_ms=part1_ms,
        reuse_ms=reuse_ms,
        coalesce_ms=coalesce_ms,
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| program | calls | storages | none | coalesce{overlap=false} | reuse | coalesce "
        "| regions bound | peak | regions at bound / proven / all "
        "| parse ms | part 1 ms | reuse ms | coalesce ms "
        "| coalesce at bound or proven optimal | reuse <= part 1 |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|--:|--:|--:|--:|:-:|:-:|",
    ]
    for r in rows:
        unsettled = r.regions - r.settled
        target_coalesce = "yes" if unsettled == 0 else f"{unsettled} regions unproven"
        lines.append(
            f"| {r.name} | {r.calls} | {r.storages} | {r.none} | {r.part1} | {r.reuse} "
            f"| {r.coalesce} | {r.regions_bound} | {r.peak} "
            f"| {r.at_bound} / {r.proven} / {r.regions} "
            f"| {r.parse_ms:.0f} | {r.part1_ms:.0f} | {r.reuse_ms:.0f} | {r.coalesce_ms:.0f} "
            f"| {target_coalesce} | {'yes' if r.reuse <= r.part1 else 'NO'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="kernel calls per generated program")
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        help="coalesce's search nodes (whole pass)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per pass (median)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    programs: list[tuple[str, str]] = [
        (f"examples/{path.name}", path.read_text())
        for path in sorted((REPO / "examples").glob("*.mlir"))
    ]
    programs += [(f"chain-{n}", chain(n)) for n in sizes]
    programs += [(f"branches-{n}", branches(n)) for n in sizes]
    rows = []
    for name, source in programs:
        rows.append(measure(name, source, budget=args.budget, repeat=args.repeat))
        print(f"measured {name}", file=sys.stderr)
    text = table(rows)
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
