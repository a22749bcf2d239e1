"""Random valid programs through every planning pipeline, checked three ways.

``ProgramGenerator`` writes whole programs in memplan's value-semantic input
form: a DAG of 5 to ``max_calls`` kernel calls on tensors of random shapes
and element types (f32, f16, i8, i32, i64), dense constants, view kernels
(`memory.view`, a reshape), kernels that may write their result over an
operand of the same type (`memory.inplace`), an ``scf.if`` whose branches call kernels and
yield a tensor, ``scf.for`` loops with calls inside, a second function
(planned on its own), and pools: bounded, read-only (`access ro`) and
unbounded ones with targets.

``check_program`` runs ``manifest-alloc,insert-kills`` and then each of
``usmp``, ``coalesce,usmp``, ``reuse,usmp`` and
``coalesce{overlap=false},reuse,usmp`` with the given algorithm, and for each
plan checks:

1. ``verify-plan`` accepts it;
2. an overlap check written here, from ``plan-report{format=json}`` alone:
   no two storages of one pool that are live together (intervals meet, not
   in different branches of one ``scf.if``) share a byte;
3. the planned program computes what the unplanned one does: run by the
   interpreter with memory poisoned at allocation and at every kill, every
   kernel call reads the same bytes and the outputs are bit-identical, for
   both values of the ``scf.if`` condition;
4. when MLIR's ``mlir-opt`` is installed, ``lower-to-memref`` turns the plan
   into IR that ``mlir-opt --verify-each`` accepts.

    python tests/fuzz/programs.py --programs 5000 --seed 1   # the long campaign
    pytest tests/fuzz                                        # a CI-sized sample
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

PIPELINES = [
    "usmp",
    "coalesce,usmp",
    "reuse,usmp",
    "coalesce{overlap=false},reuse,usmp",
]
MLIR_OPT = shutil.which("mlir-opt", path="/usr/lib/llvm-22/bin") or shutil.which("mlir-opt")
"""MLIR's mlir-opt (Debian's mlir-22-tools), or None: then check 4 is skipped."""
ALGORITHMS = ["auto", "greedy-by-size", "greedy-by-conflicts", "hill-climb", "exact"]
ELEMENT_TYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "i8": np.int8,
    "i32": np.int32,
    "i64": np.int64,
}


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    element: str

    @property
    def type(self) -> str:
        return f"tensor<{'x'.join(map(str, self.shape))}x{self.element}>"


@dataclass
class ProgramGenerator:
    """One random program from ``rng`` (see the module docstring)."""

    rng: random.Random
    max_calls: int = 60
    declarations: dict[str, str] = field(default_factory=dict[str, str])
    signatures: dict[tuple[Any, ...], str] = field(default_factory=dict[tuple[Any, ...], str])
    counter: int = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _shape(self) -> tuple[int, ...]:
        rank = self.rng.randint(1, 3)
        return tuple(self.rng.choice((1, 2, 3, 4, 8, 16)) for _ in range(rank))

    def _kernel(self, ins: Sequence[Value], out: Value, view: bool = False) -> str:
        signature = (tuple(v.type for v in ins), out.type, view)
        name = self.signatures.get(signature)
        if name is None:
            name = self.signatures[signature] = f"k_{len(self.declarations)}"
            attributes = " attributes {memory.view}" if view else ""
            same = [i for i, v in enumerate(ins) if v.type == out.type]
            if not view and same and self.rng.random() < 0.5:
                # hash_kernel reads every input before writing: in-place safe.
                pair = f"0, {self.rng.choice(same)}"
                attributes = f" attributes {{memory.inplace = array<i64: {pair}>}}"
            self.declarations[name] = (
                f"func.func private @{name}({', '.join(v.type for v in ins)}) -> {out.type}"
                f"{attributes}"
            )
        return name

    def _call(
        self, lines: list[str], indent: str, ins: Sequence[Value], out: Value, view: bool = False
    ) -> Value:
        kernel = self._kernel(ins, out, view)
        operands = ", ".join(f"%{v.name}" for v in ins)
        types = ", ".join(v.type for v in ins)
        lines.append(
            f"{indent}%{out.name} = func.call @{kernel}({operands}) : ({types}) -> {out.type}"
        )
        return out

    def _new(self, shape: tuple[int, ...] | None = None, element: str | None = None) -> Value:
        return Value(
            self._name("v"), shape or self._shape(), element or self.rng.choice(list(ELEMENT_TYPES))
        )

    def _body(
        self, lines: list[str], indent: str, live: list[Value], calls: int, allow_regions: bool
    ) -> None:
        for _ in range(calls):
            choice = self.rng.random()
            if allow_regions and choice < 0.06:
                self._if(lines, indent, live)
                continue
            if allow_regions and choice < 0.10:
                self._for(lines, indent, live)
                continue
            if choice < 0.16 and live:
                source = self.rng.choice(live)
                count = prod(source.shape)
                flat = Value(self._name("v"), (count,), source.element)
                live.append(self._call(lines, indent, [source], flat, view=True))
                continue
            if choice < 0.22:
                value = self._new()
                literal = "1" if value.element.startswith("i") else "0.5"
                lines.append(
                    f"{indent}%{value.name} = arith.constant dense<{literal}> : {value.type}"
                )
                live.append(value)
                continue
            ins = self.rng.sample(live, min(len(live), self.rng.randint(1, 3))) if live else []
            # An element-wise-like result (an operand's type) now and then,
            # so that in-place pairs occur.
            like = ins[0] if ins and self.rng.random() < 0.4 else None
            out = self._new(like.shape, like.element) if like else self._new()
            live.append(self._call(lines, indent, ins, out))

    def _if(self, lines: list[str], indent: str, live: list[Value]) -> None:
        result = self._new()
        lines.append(f"{indent}%{result.name} = scf.if %cond -> ({result.type}) {{")
        for branch in range(2):
            if branch:
                lines.append(f"{indent}}} else {{")
            inner = list(live)
            self._body(lines, indent + "  ", inner, self.rng.randint(1, 4), False)
            out = self._call(
                lines,
                indent + "  ",
                self.rng.sample(inner, min(2, len(inner))),
                Value(self._name("v"), result.shape, result.element),
            )
            lines.append(f"{indent}  scf.yield %{out.name} : {out.type}")
        lines.append(f"{indent}}}")
        live.append(result)

    def _for(self, lines: list[str], indent: str, live: list[Value]) -> None:
        lines.append(f"{indent}scf.for %i{self._name('')} = %c0 to %c3 step %c1 {{")
        inner = list(live)
        self._body(lines, indent + "  ", inner, self.rng.randint(1, 4), False)
        lines.append(f"{indent}}}")

    def _pools(self) -> list[str]:
        pools: list[str] = []
        if self.rng.random() < 0.5:
            pools.append(
                f'memory.pool @sram size {self.rng.choice((256, 1024, 4096))} targets ["cpu"]'
            )
        if self.rng.random() < 0.3:
            pools.append("memory.pool @flash access ro")
        if pools or self.rng.random() < 0.5:
            pools.append('memory.pool @dram align 64 targets ["cpu"]')
        return pools

    def _function(self, name: str, calls: int) -> str:
        arguments = [self._new() for _ in range(self.rng.randint(1, 3))]
        lines: list[str] = []
        live = list(arguments)
        self._body(lines, "  ", live, calls, True)
        results = [v for v in live[-self.rng.randint(1, 2) :]]
        params = ", ".join(f"%{v.name}: {v.type}" for v in arguments)
        head = (
            f"func.func @{name}(%cond: i1, {params}) -> ({', '.join(v.type for v in results)}) {{"
        )
        constants = [
            "  %c0 = arith.constant 0 : index",
            "  %c1 = arith.constant 1 : index",
            "  %c3 = arith.constant 3 : index",
        ]
        ret = (
            f"  func.return {', '.join('%' + v.name for v in results)} : "
            f"{', '.join(v.type for v in results)}"
        )
        return "\n".join([head, *constants, *lines, ret, "}"])

    def program(self) -> str:
        calls = self.rng.randint(5, self.max_calls)
        functions = [self._function("main", calls)]
        if self.rng.random() < 0.3:
            functions.append(self._function("other", self.rng.randint(5, 20)))
        return "\n".join([*self._pools(), *self.declarations.values(), *functions]) + "\n"


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def hash_kernel(
    ins: Sequence[Any], outs: Sequence[np.ndarray], attributes: Mapping[str, Any]
) -> None:
    """Fill every output with bytes derived from every input's bytes."""
    seed = hashlib.sha256()
    for value in ins:
        seed.update(np.ascontiguousarray(value).tobytes())
    for index, out in enumerate(outs):
        digest = seed.copy()
        digest.update(bytes([index]))
        flat = out.reshape(-1).view(np.uint8)
        flat[:] = np.resize(np.frombuffer(digest.digest(), dtype=np.uint8), flat.size)


def _kernels(module: Any) -> Any:
    from xdsl.dialects import func

    from memplan.dialect.interpreter import KernelRegistry
    from memplan.dialect.ops import VIEW_ATTR

    registry = KernelRegistry()
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.is_declaration and VIEW_ATTR not in op.attributes:
            registry.register(op.sym_name.data, hash_kernel)
    return registry


def _arguments(function: Any, condition: bool) -> list[Any]:
    from xdsl.dialects.builtin import MemRefType

    values: list[Any] = []
    rng = np.random.default_rng(0)
    for argument in function.body.block.args:
        kind = argument.type
        if isinstance(kind, MemRefType):
            dtype = ELEMENT_TYPES[str(kind.element_type)]
            shape = tuple(kind.get_shape())
            values.append((rng.random(shape) * 10).astype(dtype))
        else:
            values.append(condition)
    return values


def _run(module: Any, name: str, condition: bool) -> tuple[list[bytes], list[str]]:
    from xdsl.dialects import func

    from memplan.dialect.interpreter import run_function

    function = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name
    )
    result = run_function(
        module,
        _arguments(function, condition),
        kernels=_kernels(module),
        trace=True,
        poison=True,
        name=name,
    )
    assert result.calls is not None
    reads = [f"{call.callee}:{','.join(call.input_digests)}" for call in result.calls]
    return [np.asarray(o).tobytes() for o in result.outputs], reads


def overlaps_from_report(report: dict[str, Any]) -> list[str]:
    """Storages of one pool live together (and not in exclusive branches) that
    share bytes, from the JSON report alone."""
    problems: list[str] = []
    for function in report["functions"]:
        placed = [b for b in function["buffers"] if b["offset"] is not None]
        for i, a in enumerate(placed):
            for b in placed[i + 1 :]:
                if a["pool"] != b["pool"]:
                    continue
                if a["end"] <= b["start"] or b["end"] <= a["start"]:
                    continue
                if _exclusive(a["branch"], b["branch"]):
                    continue
                if a["offset"] + a["size"] <= b["offset"] or b["offset"] + b["size"] <= a["offset"]:
                    continue
                problems.append(f"@{function['name']}: {a['name']} and {b['name']} overlap")
    return problems


def _exclusive(a: list[list[int]], b: list[list[int]]) -> bool:
    """Two branch paths that part at one ``scf.if`` (same op, other region)."""
    return any(x[0] == y[0] and x[1] != y[1] for x in a for y in b)


def check_program(
    source: str,
    algorithm: str,
    pipelines: Sequence[str] = PIPELINES,
    mlir_opt: str | None = MLIR_OPT,
) -> list[str]:
    """Every problem found with ``source`` (empty when it passes)."""
    from xdsl.utils.exceptions import DiagnosticException, PassFailedException

    from memplan.passes.plan_report import REPORT_WRITERS, gather_report
    from memplan_testing import parse_module, print_module, run_passes

    problems: list[str] = []
    base = run_passes(parse_module(source, verify=True), "manifest-alloc,insert-kills")
    names = [n for n in ("main", "other") if f"func.func @{n}(" in source]
    expected = {(n, c): _run(base, n, c) for n in names for c in (False, True)}
    for pipeline in pipelines:
        # A short timeout: hill-climb searches until it runs out.
        options = f"algorithm={algorithm} timeout=0.5"
        spec = ",".join(
            f"{step}{{{options}}}" if step in ("usmp", "coalesce") else step
            for step in pipeline.split(",")
        )
        try:
            planned = run_passes(base.clone(), spec + ",verify-plan")
        except PassFailedException as error:
            if "fits in none" in str(error) or "has no pool" in str(error):
                continue  # a bounded pool too small: a diagnostic, not a bug
            problems.append(f"{spec}: {error}")
            continue
        except DiagnosticException as error:
            problems.append(f"{spec}: {error}")
            continue
        report = json.loads(REPORT_WRITERS["json"](gather_report(planned)))
        problems += [f"{spec}: {p}" for p in overlaps_from_report(report)]
        for (name, condition), want in expected.items():
            if _run(planned, name, condition) != want:
                problems.append(
                    f"{spec}: @{name} (cond={condition}) differs from the unplanned run\n"
                    + print_module(planned)
                )
        if mlir_opt is not None:
            lowered = print_module(run_passes(planned, "lower-to-memref"))
            verified = subprocess.run(
                [mlir_opt, "--verify-each", "-o", "/dev/null"],
                input=lowered,
                capture_output=True,
                text=True,
            )
            if verified.returncode != 0:
                problems.append(f"{spec},lower-to-memref: mlir-opt: {verified.stderr}\n{lowered}")
    return problems


def campaign(
    programs: int, seed: int, max_calls: int = 60, progress: bool = False
) -> tuple[int, list[str]]:
    """``programs`` programs from ``seed``; algorithms rotate over programs.
    With ``progress``, a line every 100 programs."""
    failures: list[str] = []
    started = time.perf_counter()
    for index in range(programs):
        if progress and index and index % 100 == 0:
            elapsed = time.perf_counter() - started
            print(f"{index} programs, {len(failures)} problems, {elapsed:.0f} s", flush=True)
        source = ProgramGenerator(random.Random(seed * 1_000_003 + index), max_calls).program()
        algorithm = ALGORITHMS[index % len(ALGORITHMS)]
        for problem in check_program(source, algorithm):
            failures.append(f"program {index} (seed {seed}, {algorithm}): {problem}\n{source}")
    return programs, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-calls", type=int, default=60)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    ran, failures = campaign(args.programs, args.seed, args.max_calls, progress=True)
    for failure in failures:
        print(failure, end="\n\n")
    print(
        f"{ran} programs x {len(PIPELINES)} pipelines, {len(failures)} problems "
        f"(seed {args.seed}, {time.perf_counter() - started:.0f} s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
