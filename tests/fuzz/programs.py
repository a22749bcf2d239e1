"""Random valid programs through every planning pipeline, checked against
the original program.

``ProgramGenerator`` writes whole programs in memplan's value-semantic input
form: 5 to ``max_calls`` kernel calls on tensors of random shapes and element
types (f32, f16, i8, i32, i64), dense constants, view kernels (`memory.view`,
reshapes), kernels whose result may take an operand's bytes
(`memory.inplace`; the result the operand's type or smaller), the same value
at several operands, ``scf.if`` (on ``%cond`` or its negation, nested, one or
two results) whose branches yield kernel results, outer values or views of
them, ``scf.for`` loops with or without carried tensors (0 to 3 trips,
yielding the next value, the carried one unchanged or an outer value),
``scf.while`` loops on an index whose bodies call kernels, a second function
(planned on its own), and pools: bounded, read-only (`access ro`) and
unbounded ones with targets. Operands are drawn often from values that
alias others (region results, views), where manifest-alloc's in-place and
loop-buffer decisions are hardest.

``check_program`` runs ``manifest-alloc,insert-kills`` and then each of
``usmp``, ``coalesce,usmp``, ``reuse,usmp`` and
``coalesce{overlap=false},reuse,usmp`` with the given algorithm, and
``schedule,plan`` (the given schedule and algorithm) from the original; for
each plan it checks:

1. ``verify-plan`` accepts it;
2. an overlap check written here, from ``plan-report{format=json}`` alone:
   no two storages of one pool that are live together (intervals meet, not
   in different branches of one ``scf.if``) share a byte;
3. the planned program computes what the *original* program does: the
   original is run by the value-semantic reference interpreter
   (`memplan.dialect.reference`: immutable arrays, no memory plan), the plan
   by the interpreter with memory poisoned at allocation and at every kill;
   every kernel call must read the same bytes (in order; as a multiset after
   ``schedule``) and the outputs must be bit-identical, for both values of
   ``%cond``. The unplanned manifest is checked against the original too.
   The kernels (`contract_kernel`) read the operands a result may not share
   only after scribbling on the results, so an undeclared alias shows;
4. when MLIR's ``mlir-opt`` is installed, ``lower-to-memref`` turns the plan
   of one pipeline per program (rotating) into IR that ``mlir-opt
   --verify-each`` accepts.

The usmp algorithms rotate over programs, the schedules over every fifth.

    python tests/fuzz/programs.py --programs 2500 --seed 1   # with --seed 2: the long campaign
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from memplan.dialect.ops import INPLACE_ATTR

SCHEDULED = "schedule,plan"
"""The pipeline that reorders calls first: `schedule`, then `plan`, from the original."""
PIPELINES = [
    "usmp",
    "coalesce,usmp",
    "reuse,usmp",
    "coalesce{overlap=false},reuse,usmp",
    SCHEDULED,
]
"""What follows `manifest-alloc,insert-kills` (but ``SCHEDULED``, run whole)."""
MLIR_OPT = shutil.which("mlir-opt", path="/usr/lib/llvm-22/bin") or shutil.which("mlir-opt")
"""MLIR's mlir-opt (Debian's mlir-22-tools), or None: then check 4 is skipped."""
ALGORITHMS = ["auto", "greedy-by-size", "greedy-by-conflicts", "hill-climb", "exact"]
SCHEDULES = ["best", "post-order", "list", "dfs", "exact"]
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

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * np.dtype(ELEMENT_TYPES[self.element]).itemsize


@dataclass
class Scope:
    """The values a block may use; ``aliased`` are those that may share
    bytes with another value (region results, yielded outer values, views):
    operands drawn from them find the aliasing defects."""

    live: list[Value]
    aliased: list[Value]

    def inner(self) -> Scope:
        return Scope(list(self.live), list(self.aliased))


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
            # In place into any operand at least as large (a smaller result
            # takes the operand's first bytes).
            fits = sorted({i for i, v in enumerate(ins) if v.nbytes >= out.nbytes})
            if not view and fits and self.rng.random() < 0.6:
                pair = f"0, {self.rng.choice(fits)}"
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

    def _pick(self, scope: Scope) -> Value:
        """An operand: often an aliased value or a recent one."""
        roll = self.rng.random()
        if scope.aliased and roll < 0.35:
            return self.rng.choice(scope.aliased)
        if roll < 0.7:
            return self.rng.choice(scope.live[-6:])
        return self.rng.choice(scope.live)

    def _smaller(self, like: Value) -> Value:
        """A result that fits in ``like`` with bytes to spare."""
        narrower = [e for e in ELEMENT_TYPES if self._itemsize(e) < self._itemsize(like.element)]
        if narrower and self.rng.random() < 0.5:
            return self._new(like.shape, self.rng.choice(narrower))
        count = prod(like.shape)
        if count > 1:
            return self._new((self.rng.randint(1, count - 1),), like.element)
        return self._new(like.shape, like.element)

    @staticmethod
    def _itemsize(element: str) -> int:
        return np.dtype(ELEMENT_TYPES[element]).itemsize

    def _kernel_call(self, lines: list[str], indent: str, scope: Scope) -> Value:
        if not scope.live:
            ins: list[Value] = []
        else:
            ins = [self._pick(scope) for _ in range(self.rng.randint(1, 3))]
            if len(ins) > 1 and self.rng.random() < 0.2:
                ins[-1] = ins[0]  # one value at two operands
        roll = self.rng.random()
        if ins and roll < 0.45:
            out = self._new(ins[0].shape, ins[0].element)  # element-wise-like: in place
        elif ins and roll < 0.6:
            out = self._smaller(ins[0])
        else:
            out = self._new()
        value = self._call(lines, indent, ins, out)
        scope.live.append(value)
        return value

    def _view(self, lines: list[str], indent: str, scope: Scope, source: Value) -> Value:
        count = prod(source.shape)
        shape = (count,) if len(source.shape) != 1 or self.rng.random() < 0.5 else (1, count)
        view = self._call(
            lines, indent, [source], Value(self._name("v"), shape, source.element), True
        )
        scope.live.append(view)
        if source in scope.aliased or self.rng.random() < 0.5:
            scope.aliased.append(view)
        return view

    def _body(self, lines: list[str], indent: str, scope: Scope, calls: int, depth: int) -> None:
        for _ in range(calls):
            choice = self.rng.random()
            if depth < 2 and choice < 0.07:
                self._if(lines, indent, scope, depth)
            elif depth < 2 and choice < 0.13:
                self._for(lines, indent, scope, depth)
            elif depth < 2 and choice < 0.15:
                self._while(lines, indent, scope, depth)
            elif choice < 0.22 and scope.live:
                self._view(lines, indent, scope, self._pick(scope))
            elif choice < 0.27:
                value = self._new()
                literal = "1" if value.element.startswith("i") else "0.5"
                lines.append(
                    f"{indent}%{value.name} = arith.constant dense<{literal}> : {value.type}"
                )
                scope.live.append(value)
            else:
                self._kernel_call(lines, indent, scope)

    def _yielded(self, lines: list[str], indent: str, scope: Scope, like: Value) -> Value:
        """A value of ``like``'s type to yield from a block: an outer value
        (an alias), a view of one, or a kernel result."""
        same = [v for v in scope.live if v.type == like.type]
        roll = self.rng.random()
        if same and roll < 0.4:
            return self.rng.choice(same)
        flat = [
            v for v in scope.live if v.element == like.element and prod(v.shape) == prod(like.shape)
        ]
        if flat and roll < 0.55 and len(like.shape) == 1:
            source = self.rng.choice(flat)
            view = Value(self._name("v"), like.shape, like.element)
            self._call(lines, indent, [source], view, view=True)
            return view
        ins = [self._pick(scope) for _ in range(self.rng.randint(1, 2))] if scope.live else []
        return self._call(lines, indent, ins, Value(self._name("v"), like.shape, like.element))

    def _condition(self) -> str:
        return self.rng.choice(("%cond", "%ncond"))

    def _if(self, lines: list[str], indent: str, scope: Scope, depth: int) -> None:
        templates = [
            self._pick(scope) if scope.live and self.rng.random() < 0.7 else self._new()
            for _ in range(self.rng.randint(1, 2))
        ]
        results = [Value(self._name("v"), t.shape, t.element) for t in templates]
        names = ", ".join(f"%{r.name}" for r in results)
        types = ", ".join(r.type for r in results)
        lines.append(f"{indent}{names} = scf.if {self._condition()} -> ({types}) {{")
        for branch in range(2):
            if branch:
                lines.append(f"{indent}}} else {{")
            inner = scope.inner()
            self._body(lines, indent + "  ", inner, self.rng.randint(0, 3), depth + 1)
            yielded = [self._yielded(lines, indent + "  ", inner, r) for r in results]
            lines.append(
                f"{indent}  scf.yield {', '.join('%' + v.name for v in yielded)} : {types}"
            )
        lines.append(f"{indent}}}")
        scope.live += results
        scope.aliased += results

    def _for(self, lines: list[str], indent: str, scope: Scope, depth: int) -> None:
        step = self._name("i")
        trips = self.rng.choice(("%c0", "%c1", "%c2", "%c3", "%c3"))
        if not scope.live or self.rng.random() < 0.3:
            lines.append(f"{indent}scf.for %{step} = %c0 to {trips} step %c1 {{")
            self._body(lines, indent + "  ", scope.inner(), self.rng.randint(1, 4), depth + 1)
            lines.append(f"{indent}}}")
            return
        inits = [self._pick(scope) for _ in range(self.rng.randint(1, 2))]
        carried = [Value(self._name("a"), v.shape, v.element) for v in inits]
        results = [Value(self._name("v"), v.shape, v.element) for v in inits]
        iter_args = ", ".join(f"%{c.name} = %{v.name}" for c, v in zip(carried, inits))
        types = ", ".join(v.type for v in inits)
        names = ", ".join(f"%{r.name}" for r in results)
        lines.append(
            f"{indent}{names} = scf.for %{step} = %c0 to {trips} step %c1 "
            f"iter_args({iter_args}) -> ({types}) {{"
        )
        inner = scope.inner()
        inner.live += carried
        inner.aliased += carried
        self._body(lines, indent + "  ", inner, self.rng.randint(0, 3), depth + 1)
        yielded: list[Value] = []
        for value in carried:
            roll = self.rng.random()
            if roll < 0.5:
                # The next value from the carried one (the usual recurrence).
                ins = [value, *([self._pick(inner)] if self.rng.random() < 0.5 else [])]
                yielded.append(
                    self._call(
                        lines,
                        indent + "  ",
                        ins,
                        Value(self._name("v"), value.shape, value.element),
                    )
                )
            elif roll < 0.6:
                yielded.append(value)  # carried unchanged
            else:
                yielded.append(self._yielded(lines, indent + "  ", inner, value))
        lines.append(f"{indent}  scf.yield {', '.join('%' + v.name for v in yielded)} : {types}")
        lines.append(f"{indent}}}")
        scope.live += results
        scope.aliased += results

    def _while(self, lines: list[str], indent: str, scope: Scope, depth: int) -> None:
        # manifest-alloc carries tensors through scf.for only: an index loop
        # whose body computes on the outer values.
        name, before, after = self._name("w"), self._name("wi"), self._name("wj")
        bound = self.rng.choice(("%c0", "%c1", "%c2", "%c3"))
        lines += [
            f"{indent}%{name} = scf.while (%{before} = %c0) : (index) -> index {{",
            f"{indent}  %{name}_go = arith.cmpi slt, %{before}, {bound} : index",
            f"{indent}  scf.condition(%{name}_go) %{before} : index",
            f"{indent}}} do {{",
            f"{indent}^bb0(%{after}: index):",
        ]
        self._body(lines, indent + "  ", scope.inner(), self.rng.randint(1, 3), depth + 1)
        lines += [
            f"{indent}  %{name}_next = arith.addi %{after}, %c1 : index",
            f"{indent}  scf.yield %{name}_next : index",
            f"{indent}}}",
        ]

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
        scope = Scope(list(arguments), [])
        self._body(lines, "  ", scope, calls, 0)
        results = [
            self._pick(scope) if self.rng.random() < 0.3 else scope.live[-1]
            for _ in range(self.rng.randint(1, 2))
        ]
        params = ", ".join(f"%{v.name}: {v.type}" for v in arguments)
        head = (
            f"func.func @{name}(%cond: i1, {params}) -> ({', '.join(v.type for v in results)}) {{"
        )
        constants = [
            *(f"  %c{n} = arith.constant {n} : index" for n in range(4)),
            "  %true = arith.constant true",
            "  %ncond = arith.xori %cond, %true : i1",
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


def contract_kernel(
    ins: Sequence[Any], outs: Sequence[np.ndarray], attributes: Mapping[str, Any]
) -> None:
    """Fill every output with bytes derived from every input's bytes, as
    adversarially as the kernel contract allows: the operands a result may
    take in place (`memory.inplace`) are read first, then every output is
    scribbled over, then the other operands are read. A plan that lets an
    undeclared operand share an output's bytes (the same value at two
    operands, an alias) therefore changes the result."""
    pairs = attributes.get(INPLACE_ATTR)
    values = pairs.get_values() if pairs is not None else ()
    shared = sorted(set(values[1::2]))
    seed = hashlib.sha256()
    for index in shared:
        seed.update(np.ascontiguousarray(ins[index]).tobytes())
    for out in outs:
        out.reshape(-1).view(np.uint8)[:] = 0xA5
    for index, value in enumerate(ins):
        if index not in shared:
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
            registry.register(op.sym_name.data, contract_kernel)
    return registry


def _arguments(function: Any, condition: bool) -> list[Any]:
    from xdsl.dialects.builtin import MemRefType, TensorType

    values: list[Any] = []
    rng = np.random.default_rng(0)
    for argument in function.body.block.args:
        kind = argument.type
        if isinstance(kind, MemRefType | TensorType):
            dtype = ELEMENT_TYPES[str(kind.element_type)]
            shape = tuple(kind.get_shape())
            values.append((rng.random(shape) * 10).astype(dtype))
        else:
            values.append(condition)
    return values


Run = tuple[list[bytes], list[str]]
"""A run: the outputs' bytes and, per kernel call, its callee and input digests."""


def _run(module: Any, name: str, condition: bool, reference: bool = False) -> Run:
    """``@name`` run by the planned-module interpreter (memory poisoned at
    allocation and kills), or with ``reference`` by the value-semantic
    reference interpreter."""
    from xdsl.dialects import func

    from memplan.dialect.interpreter import run_function
    from memplan.dialect.reference import run_reference

    function = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name
    )
    arguments = _arguments(function, condition)
    if reference:
        result = run_reference(module, arguments, kernels=_kernels(module), trace=True, name=name)
    else:
        result = run_function(
            module, arguments, kernels=_kernels(module), trace=True, poison=True, name=name
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


def _apply(module: Any, spec: str, verify: bool = True) -> Any:
    """``module`` after the pipeline ``spec``, verified once at the end (a
    pass that broke the IR on the way breaks it at the end too, or is
    caught by the checks)."""
    from xdsl.passes import PassPipeline

    from memplan.dialect.context import memplan_context
    from memplan.passes import get_all_passes

    PassPipeline.parse_spec(get_all_passes(), spec).apply(memplan_context(), module)
    if verify:
        module.verify()
    return module


def check_program(
    source: str,
    algorithm: str,
    pipelines: Sequence[str] = PIPELINES,
    mlir_opt: str | None = MLIR_OPT,
    schedule: str = "best",
    lowered_index: int = 0,
) -> list[str]:
    """Every problem found with ``source`` (empty when it passes); check 4
    on the plan of ``pipelines[lowered_index]`` only (``mlir-opt`` is slow
    to start: the campaign rotates it over the pipelines)."""
    from xdsl.utils.exceptions import DiagnosticException, PassFailedException

    from memplan.passes.plan_report import gather_report
    from memplan.passes.report_formats import REPORT_FORMATS
    from memplan_testing import parse_module, print_module

    problems: list[str] = []
    original = parse_module(source, verify=True)
    names = [n for n in ("main", "other") if f"func.func @{n}(" in source]
    runs = [(n, c) for n in names for c in (False, True)]
    expected = {run: _run(original, *run, reference=True) for run in runs}
    base = _apply(original.clone(), "manifest-alloc,insert-kills")
    for name, condition in runs:
        if _run(base, name, condition) != expected[name, condition]:
            problems.append(
                f"manifest-alloc,insert-kills: @{name} (cond={condition}) differs from the "
                "original program\n" + print_module(base)
            )
    for pipeline in pipelines:
        # A small budget: hill-climb and exact search until it runs out.
        options = f"algorithm={algorithm} budget=5000"
        if pipeline == SCHEDULED:
            spec, start = (
                f"schedule{{algorithm={schedule} remarks=false}},plan{{{options}}}",
                original,
            )
        else:
            spec = ",".join(
                f"{step}{{{options}}}" if step in ("usmp", "coalesce") else step
                for step in pipeline.split(",")
            )
            start = base
        try:
            planned = _apply(start.clone(), spec + ",verify-plan")
        except PassFailedException as error:
            if "fits in none" in str(error) or "has no pool" in str(error):
                continue  # a bounded pool too small: a diagnostic, not a bug
            problems.append(f"{spec}: {error}")
            continue
        except DiagnosticException as error:
            problems.append(f"{spec}: {error}")
            continue
        report = json.loads(REPORT_FORMATS["json"].write(gather_report(planned)))
        problems += [f"{spec}: {p}" for p in overlaps_from_report(report)]
        for (name, condition), (outputs, reads) in expected.items():
            got_outputs, got_reads = _run(planned, name, condition)
            if pipeline == SCHEDULED:
                # Reordered calls: the same calls reading the same bytes.
                reads, got_reads = sorted(reads), sorted(got_reads)
            if (got_outputs, got_reads) != (outputs, reads):
                problems.append(
                    f"{spec}: @{name} (cond={condition}) differs from the original program\n"
                    + print_module(planned)
                )
        if mlir_opt is not None and pipeline == pipelines[lowered_index % len(pipelines)]:
            lowered = print_module(_apply(planned, "lower-to-memref", verify=False))
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
    """``programs`` programs from ``seed``; algorithms rotate over programs,
    and schedules over every fifth. With ``progress``, each failure is
    printed as it is found, and a line every 100 programs."""
    failures: list[str] = []
    started = time.perf_counter()
    for index in range(programs):
        if progress and index and index % 100 == 0:
            elapsed = time.perf_counter() - started
            print(f"{index} programs, {len(failures)} problems, {elapsed:.0f} s", flush=True)
            print(summary(failures), flush=True)
        source = ProgramGenerator(random.Random(seed * 1_000_003 + index), max_calls).program()
        algorithm = ALGORITHMS[index % len(ALGORITHMS)]
        schedule = SCHEDULES[index // len(ALGORITHMS) % len(SCHEDULES)]
        checked = check_program(source, algorithm, schedule=schedule, lowered_index=index)
        for problem in checked:
            failures.append(
                f"program {index} (seed {seed}, {algorithm}, schedule {schedule}): "
                f"{problem}\n{source}"
            )
            if progress:
                print(failures[-1], end="\n\n", flush=True)
    return programs, failures


def reduce_program(source: str, failing: Callable[[str], bool]) -> str:
    """A smaller program on which ``failing`` still holds: lines deleted
    (halves, then smaller chunks, then single lines, as ddmin does) and
    values (kernel calls, whole `scf` ops) replaced by constants, which
    frees their operands for deletion, while the result still parses,
    verifies and fails."""

    def still_fails(lines: Sequence[str]) -> bool:
        try:
            return failing("\n".join(lines) + "\n")
        except Exception:
            return False  # not a valid program any more

    lines = source.splitlines()
    while True:
        before = len(lines), sum(map(len, lines))
        lines = _delete_chunks(lines, still_fails)
        index = 0
        while index < len(lines):
            candidate = _as_constants(lines, index)
            if candidate is not None and still_fails(candidate):
                lines = candidate
            index += 1
        if (len(lines), sum(map(len, lines))) == before:
            return "\n".join(lines) + "\n"


def _delete_chunks(lines: list[str], still_fails: Callable[[Sequence[str]], bool]) -> list[str]:
    chunk = max(1, len(lines) // 2)
    while True:
        index, changed = 0, False
        while index < len(lines):
            candidate = lines[:index] + lines[index + chunk :]
            if still_fails(candidate):
                lines, changed = candidate, True
            else:
                index += chunk
        if chunk == 1 and not changed:
            return lines
        if not changed:
            chunk = max(1, chunk // 2)


def _as_constants(lines: list[str], index: int) -> list[str] | None:
    """``lines`` with the kernel call or `scf` op at ``index`` (its whole
    region) replaced by one constant per result, or None."""
    line = lines[index]
    names, equals, rest = line.partition(" = ")
    if not equals or not names.strip().startswith("%"):
        return None
    if rest.startswith("func.call"):
        types = [rest.rpartition("-> ")[2]]
        end = index + 1
    elif rest.startswith(("scf.if", "scf.for")) and rest.endswith("{"):
        types = rest.rpartition("-> (")[2].removesuffix(") {").split(", ")
        depth, end = 0, index
        while True:
            depth += lines[end].count("{") - lines[end].count("}")
            end += 1
            if depth == 0:
                break
    else:
        return None
    indent = line[: len(line) - len(line.lstrip())]
    values = [n.strip() for n in names.split(",")]
    if len(values) != len(types) or not all(t.startswith("tensor<") for t in types):
        return None
    constants = [
        f"{indent}{value} = arith.constant dense<{'1' if '>' in t and 'xi' in t else '0.5'}> : {t}"
        for value, t in zip(values, types)
    ]
    return lines[:index] + constants + lines[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-calls", type=int, default=60)
    parser.add_argument(
        "--reduce",
        metavar="INDEX",
        type=int,
        help="reduce program INDEX of --seed to a small one with the same kind of problem, "
        "through the first pipeline that has one",
    )
    args = parser.parse_args(argv)
    if args.reduce is not None:
        return _reduce(args.seed, args.reduce, args.max_calls)
    started = time.perf_counter()
    ran, failures = campaign(args.programs, args.seed, args.max_calls, progress=True)
    print(
        f"{ran} programs x {len(PIPELINES)} pipelines, {len(failures)} problems "
        f"(seed {args.seed}, {time.perf_counter() - started:.0f} s)"
    )
    print(summary(failures))
    return 1 if failures else 0


def _reduce(seed: int, index: int, max_calls: int) -> int:
    source = ProgramGenerator(random.Random(seed * 1_000_003 + index), max_calls).program()
    algorithm = ALGORITHMS[index % len(ALGORITHMS)]
    schedule = SCHEDULES[index // len(ALGORITHMS) % len(SCHEDULES)]
    for pipeline in PIPELINES:
        problems = check_program(source, algorithm, [pipeline], None, schedule)
        if problems:
            break
    else:
        print(f"program {index} of seed {seed} has no problem")
        return 1
    kind = _kind(problems[0])
    # The unplanned manifest is checked before any pipeline runs.
    pipelines = [] if kind.startswith("unplanned") else [pipeline]

    def failing(candidate: str) -> bool:
        found = check_program(candidate, algorithm, pipelines, None, schedule)
        return any(_kind(p) == kind for p in found)

    reduced = reduce_program(source, failing)
    print(f"// {pipeline} ({algorithm}, schedule {schedule}): {kind}")
    print(reduced, end="")
    for problem in check_program(reduced, algorithm, pipelines, None, schedule):
        print("// " + problem.splitlines()[0])
    return 0


def _kind(problem: str) -> str:
    """What a problem of ``check_program`` is (its pipeline and its check)."""
    spec, _, detail = problem.partition(": ")
    detail = detail.splitlines()[0] if detail else ""
    if spec == "manifest-alloc,insert-kills":
        return "unplanned manifest differs from the original"
    if "differs from the original" in detail:
        return "plan differs from the original"
    if detail.startswith("verify-plan"):
        return "verify-plan finding"
    if detail.endswith(" overlap"):
        return "overlap in the JSON report"
    if "mlir-opt" in spec or detail.startswith("mlir-opt"):
        return "mlir-opt rejection"
    return "diagnostic or error"


def summary(failures: Sequence[str]) -> str:
    """The problems of a campaign counted by program, plan and kind."""
    programs: set[str] = set()
    plans: set[tuple[str, str]] = set()
    kinds: dict[str, int] = {}
    for failure in failures:
        head, _, problem = failure.partition("): ")
        spec = problem.partition(": ")[0]
        program = head.partition(" (")[0]
        programs.add(program)
        if spec != "manifest-alloc,insert-kills":
            plans.add((program, spec))
        kind = _kind(problem)
        kinds[kind] = kinds.get(kind, 0) + 1
    counts = ", ".join(f"{kind}: {count}" for kind, count in sorted(kinds.items()))
    return f"programs with a problem: {len(programs)}; unsound or failed plans: {len(plans)}" + (
        f" ({counts})" if counts else ""
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
