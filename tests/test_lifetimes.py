"""Lifetimes (passes/analysis), insert-kills, verify-plan and plan-report.

Property tests draw random programs (straight-line code, nested ``scf.if``
and ``scf.for``, ``scf.if`` results and ``scf.for`` iteration arguments
carrying tensors, views, escapes) and check:

- the intervals, escape flags and branch paths equal a brute-force
  reference computed from the definition in ``passes/analysis``;
- soundness against execution: running the program on many branch/trip-count
  choices, any two storages whose instances are live at the same time are
  reported as conflicting;
- ``insert-kills`` output verifies, is idempotent and changes no conflict;
- ``verify-plan`` accepts a plan without overlaps and rejects every planted
  overlap of two conflicting storages, naming both.
"""

from __future__ import annotations

import io
import itertools
import json
import random
from collections.abc import Iterator
from contextlib import redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from memdialect import AllocStorageOp, AllocTensorOp, KillOp, Memory, PoolOp
from passes import get_all_passes
from passes.analysis import (
    LiveInterval,
    analyze_function,
    analyze_module,
)
from passes.plan_report import REPORT_WRITERS, PlanReportPass, gather_report
from passes.verify_plan import VerifyPlanPass

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _context() -> Context:
    from xdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    ctx.load_dialect(Memory)
    return ctx


def _parse(text: str) -> ModuleOp:
    module = Parser(_context(), text).parse_module()
    module.verify()
    return module


def _run(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply ``spec`` through the registry, verifying after, as memplan-opt does."""
    PassPipeline.parse_spec(get_all_passes(), spec).apply(_context(), module)
    module.verify()
    return module


def _print(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def _function(module: ModuleOp, name: str = "main") -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(name)


# ---------------------------------------------------------------------------
# Random programs
# ---------------------------------------------------------------------------

TENSOR = "memref<4xf32>"
VIEW = "memref<2xf32, strided<[1]>>"


@dataclass
class ProgramGenerator:
    """Random structured programs over storages of 16 bytes, one tensor each."""

    rng: random.Random
    lines: list[str] = field(default_factory=list)
    counter: int = 0
    budget: int = 40

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * (depth + 1) + text)

    def block(self, depth: int, tensors: list[str], views: list[str]) -> None:
        """Random ops; ``tensors``/``views`` are the visible values (extended in place)."""
        for _ in range(self.rng.randint(0, 5)):
            if self.budget <= 0:
                return
            self.budget -= 1
            choice = self.rng.choices(
                ["alloc", "use", "view", "if", "if_yield", "for", "for_iter", "store"],
                weights=[4, 4, 1, 1 if depth < 3 else 0, 1 if depth < 3 else 0,
                         1 if depth < 3 else 0, 1 if depth < 3 else 0, 0.05],
            )[0]
            if choice == "alloc" or (not tensors and choice in ("use", "view", "store")):
                storage = self.fresh("s")
                tensor = self.fresh("t")
                self.emit(depth, f"{storage} = memory.alloc_storage : !memory.storage<16>")
                self.emit(
                    depth,
                    f"{tensor} = memory.alloc_tensor {storage}[0] : "
                    f"!memory.storage<16> -> {TENSOR}",
                )
                tensors.append(tensor)
            elif choice == "use":
                pool = tensors + views
                value = self.rng.choice(pool)
                kind = TENSOR if value in tensors else VIEW
                self.emit(depth, f"memory.invoke @use ins({value} : {kind})")
            elif choice == "view":
                source = self.rng.choice(tensors)
                view = self.fresh("v")
                self.emit(depth, f"{view} = memref.subview {source}[0] [2] [1] : {TENSOR} to {VIEW}")
                views.append(view)
            elif choice == "store":
                self.emit(depth, f"memref.store {self.rng.choice(tensors)}, %box[] : memref<{TENSOR}>")
            elif choice == "if":
                self.emit(depth, "scf.if %c {")
                self.block(depth + 1, list(tensors), list(views))
                self.emit(depth, "} else {")
                self.block(depth + 1, list(tensors), list(views))
                self.emit(depth, "}")
            elif choice == "if_yield":
                result = self.fresh("r")
                self.emit(depth, f"{result} = scf.if %c -> ({TENSOR}) {{")
                for branch in range(2):
                    inner = list(tensors) or []
                    self.block(depth + 1, inner, list(views))
                    if not inner:
                        inner.append("%x")
                    self.emit(depth + 1, f"scf.yield {self.rng.choice(inner)} : {TENSOR}")
                    if branch == 0:
                        self.emit(depth, "} else {")
                self.emit(depth, "}")
                tensors.append(result)
            elif choice == "for":
                self.emit(depth, f"scf.for {self.fresh('i')} = %c0 to %c2 step %c1 {{")
                self.block(depth + 1, list(tensors), list(views))
                self.emit(depth, "}")
            else:  # for_iter
                result = self.fresh("r")
                acc = self.fresh("acc")
                init = self.rng.choice(tensors or ["%x"])
                self.emit(
                    depth,
                    f"{result} = scf.for {self.fresh('i')} = %c0 to %c2 step %c1 "
                    f"iter_args({acc} = {init}) -> ({TENSOR}) {{",
                )
                inner = [*tensors, acc]
                self.block(depth + 1, inner, list(views))
                self.emit(depth + 1, f"scf.yield {self.rng.choice(inner)} : {TENSOR}")
                self.emit(depth, "}")
                tensors.append(result)

    def program(self) -> str:
        tensors: list[str] = []
        self.block(0, tensors, [])
        returned = self.rng.choice(tensors) if tensors and self.rng.random() < 0.3 else "%x"
        body = "\n".join(self.lines)
        return (
            f"func.func private @use({TENSOR})\n"
            f"func.func @main(%c: i1, %x: {TENSOR}, %box: memref<{TENSOR}>) -> {TENSOR} {{\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %c1 = arith.constant 1 : index\n"
            "  %c2 = arith.constant 2 : index\n"
            f"{body}\n"
            f"  func.return {returned} : {TENSOR}\n"
            "}\n"
        )


programs = st.randoms(use_true_random=False).map(lambda rng: ProgramGenerator(rng).program())

PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# ---------------------------------------------------------------------------
# Brute-force reference of the definition
# ---------------------------------------------------------------------------

_LOOPS = {"scf.for", "scf.while"}


def _inside(op: Operation, region: Region) -> bool:
    current: Operation | None = op
    while current is not None:
        if current.parent_region() is region:
            return True
        current = current.parent_op()
    return False


def _anchor(op: Operation, region: Region) -> Operation:
    current: Operation | None = op
    while current is not None and current.parent_region() is not region:
        current = current.parent_op()
    assert current is not None
    return current


def _reference(func: FuncOp, root: SSAValue) -> tuple[LiveInterval, bool, tuple]:
    """The interval, escape flag and branch path of ``root``, by brute force."""
    ops = list(func.walk())[1:]
    number = {id(op): i for i, op in enumerate(ops)}

    def subtree_end(op: Operation) -> int:
        return number[id(op)] + len(list(op.walk()))

    aliases = {root}
    changed = True
    while changed:
        changed = False
        for op in ops:
            targets: list[SSAValue] = []
            for index, operand in enumerate(op.operands):
                if operand not in aliases:
                    continue
                if op.name in ("memory.alloc_tensor", "memref.subview") and index == 0:
                    targets += list(op.results)
                elif op.name == "scf.for" and index >= 3:
                    targets += [op.regions[0].blocks[0].args[index - 2], op.results[index - 3]]
                elif op.name == "scf.yield":
                    parent = op.parent_op()
                    assert parent is not None
                    targets.append(parent.results[index])
                    if parent.name == "scf.for":
                        targets.append(parent.regions[0].blocks[0].args[index + 1])
            for target in targets:
                if target not in aliases:
                    aliases.add(target)
                    changed = True
    users = [op for op in ops if any(operand in aliases for operand in op.operands)]
    # Yielded to the next iteration: used by the loop itself.
    scope_users = [
        user.parent_op() if user.name == "scf.yield" and user.parent_op().name in _LOOPS else user
        for user in users
    ]
    escapes = any(
        op.name == "func.return"
        or (op.name == "memref.store" and op.operands[0] in aliases)
        for op in users
    )
    alloc = root.owner
    assert isinstance(alloc, Operation)
    # Scope: the innermost region around the allocation holding every user.
    scope = alloc.parent_region()
    assert scope is not None
    while not escapes and not all(_inside(user, scope) for user in scope_users):
        parent = scope.parent_op()
        assert parent is not None
        scope = parent.parent_region()
        assert scope is not None
    if escapes:
        scope = func.body
    # Start: the allocation, or the outermost loop between it and the scope.
    start = number[id(alloc)]
    path: list[tuple[int, int]] = []
    below_scope = True
    current = alloc
    while current.parent_op() is not func:
        region = current.parent_region()
        parent = current.parent_op()
        assert region is not None and parent is not None
        if region is scope:
            below_scope = False
        if parent.name == "scf.if":
            path.append((number[id(parent)], list(parent.regions).index(region)))
        elif parent.name in _LOOPS and below_scope:
            start = number[id(parent)]
            path.clear()
        current = parent
    path.reverse()
    end = max([number[id(alloc)] + 1, *(subtree_end(_anchor(u, scope)) for u in users)])
    if escapes:
        end = len(ops)
    return LiveInterval(start, max(end, start + 1)), escapes, tuple(path)


@PROPERTY_SETTINGS
@given(programs)
def test_intervals_match_the_reference(source: str) -> None:
    module = _parse(source)
    func = _function(module)
    lifetimes = analyze_function(func)
    for lifetime in [*lifetimes.storages, *lifetimes.tensors]:
        interval, escapes, branch = _reference(func, lifetime.value)
        assert (lifetime.interval, lifetime.escapes, lifetime.branch) == (
            interval,
            escapes,
            branch,
        ), f"{lifetime.name}\n{source}"


# ---------------------------------------------------------------------------
# Soundness against execution
# ---------------------------------------------------------------------------


@dataclass
class Trace:
    """Instances of storages met while running the program, with their live ranges."""

    storage_of: dict[int, AllocStorageOp] = field(default_factory=dict)
    first: dict[int, int] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)
    time: int = 0
    branches: int = 0


def _execute(func: FuncOp, choices: Iterator[int]) -> Trace:
    """Run ``func`` abstractly: ``choices`` picks if-branches and trip counts (0..2)."""
    trace = Trace()
    env: dict[SSAValue, frozenset[int]] = {}

    def touch(instances: frozenset[int]) -> None:
        for instance in instances:
            trace.last[instance] = trace.time

    def run_block(block: Block) -> list[frozenset[int]] | tuple[Block, list[frozenset[int]]]:
        for op in block.ops:
            trace.time += 1
            operands = [env.get(v, frozenset()) for v in op.operands]
            for instances in operands:
                touch(instances)
            if isinstance(op, AllocStorageOp):
                instance = len(trace.storage_of)
                trace.storage_of[instance] = op
                trace.first[instance] = trace.last[instance] = trace.time
                env[op.storage] = frozenset({instance})
            elif op.name in ("memory.alloc_tensor", "memref.subview"):
                env[op.results[0]] = operands[0]
            elif op.name == "scf.if":
                region = op.regions[next(choices) % 2]
                for result, value in zip(op.results, run_region(region.blocks[0])):
                    env[result] = value
            elif op.name == "scf.for":
                body = op.regions[0].blocks[0]
                carried = operands[3:]
                for _ in range(next(choices) % 3):
                    for arg, value in zip(body.args[1:], carried):
                        env[arg] = value
                    carried = run_region(body)
                    trace.time += 1
                    for instances in carried:
                        touch(instances)
                for result, value in zip(op.results, carried):
                    env[result] = value
            elif op.name == "scf.yield":
                return operands
            elif op.name == "cf.br":
                return (op.successors[0], operands)
            elif op.name == "cf.cond_br":
                trace.branches += 1
                # Bounded run: past the budget, take the second successor
                # (the generated loops exit there).
                pick = next(choices) % 2 if trace.branches < 12 else 1
                then_count = len(op.successors[0].args)
                values = operands[1 : 1 + then_count] if pick == 0 else operands[1 + then_count :]
                return (op.successors[pick], values)
            elif op.name in ("func.return", "memref.store"):
                # Escapes: live to the end of the run.
                for instances in operands:
                    for instance in instances:
                        trace.last[instance] = 1 << 40
        return []

    def run_region(block: Block) -> list[frozenset[int]]:
        """Run from ``block`` through ``cf`` branches until a terminator leaves."""
        while True:
            outcome = run_block(block)
            if not isinstance(outcome, tuple):
                return outcome
            block, values = outcome
            for arg, value in zip(block.args, values):
                env[arg] = value

    run_region(func.body.blocks[0])
    return trace


@settings(PROPERTY_SETTINGS, max_examples=200)
@given(programs, st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_storages_live_together_at_run_time_conflict(source: str, picks: list[int]) -> None:
    module = _parse(source)
    func = _function(module)
    lifetimes = analyze_function(func)
    buffers = {s.op: s.buffer() for s in lifetimes.storages}
    trace = _execute(func, itertools.cycle(picks))
    instances = sorted(trace.storage_of)
    for a, b in itertools.combinations(instances, 2):
        op_a, op_b = trace.storage_of[a], trace.storage_of[b]
        if op_a is op_b:
            continue  # one storage in two iterations: the same buffer
        together = trace.first[a] <= trace.last[b] and trace.first[b] <= trace.last[a]
        if together:
            assert buffers[op_a].conflicts_with(buffers[op_b]), (
                f"{op_a.storage.name_hint} and {op_b.storage.name_hint} are live together "
                f"at run time but do not conflict\n{source}"
            )


def cfg_program(rng: random.Random) -> str:
    """A random ``cf`` CFG: straight stretches, diamonds and loops in sequence.

    Values of the main path (entry and join blocks) are visible to every
    later block; values made in a diamond arm or a loop body stay there, or
    (in diamonds) reach the join as a block argument.
    """
    counter = itertools.count()
    blocks: list[list[str]] = [[]]
    visible: list[str] = []

    def ops(lines: list[str], local: list[str]) -> None:
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.5 or not (visible or local):
                n = next(counter)
                lines.append(f"%s{n} = memory.alloc_storage : !memory.storage<16>")
                lines.append(f"%t{n} = memory.alloc_tensor %s{n}[0] : !memory.storage<16> -> {TENSOR}")
                local.append(f"%t{n}")
            else:
                lines.append(f"memory.invoke @use ins({rng.choice(visible + local)} : {TENSOR})")

    for _ in range(rng.randint(1, 4)):
        ops(blocks[-1], visible)
        shape = rng.choice(["diamond", "loop", "plain"])
        label = len(blocks)
        if shape == "diamond":
            arm_a, arm_b, join = label, label + 1, label + 2
            blocks[-1].append(f"cf.cond_br %c, ^bb{arm_a}, ^bb{arm_b}")
            passed: list[str] = []
            for _arm in range(2):
                lines: list[str] = []
                local: list[str] = []
                ops(lines, local)
                value = rng.choice(local + visible) if (local or visible) and rng.random() < 0.4 else None
                passed.append(value or "")
                blocks.append(lines)
            use_arg = all(passed)
            for arm, value in zip(blocks[-2:], passed):
                arm.append(f"cf.br ^bb{join}({value} : {TENSOR})" if use_arg else f"cf.br ^bb{join}")
            blocks.append([f"^bb{join}(%m{join}: {TENSOR}):" if use_arg else f"^bb{join}:"])
            if use_arg:
                visible.append(f"%m{join}")
        elif shape == "loop":
            header, body, exit_ = label, label + 1, label + 2
            blocks[-1].append(f"cf.br ^bb{header}")
            blocks.append([f"^bb{header}:", f"cf.cond_br %c, ^bb{body}, ^bb{exit_}"])
            lines = [f"^bb{body}:"]
            ops(lines, [])
            lines.append(f"cf.br ^bb{header}")
            blocks.append(lines)
            blocks.append([f"^bb{exit_}:"])
        for block in blocks[label:]:
            if block and not block[0].startswith("^"):
                block.insert(0, f"^bb{blocks.index(block)}:")
    ops(blocks[-1], visible)
    blocks[-1].append(f"func.return %x : {TENSOR}")
    body = "\n".join("  " + line for block in blocks for line in block)
    return (
        f"func.func private @use({TENSOR})\n"
        f"func.func @main(%c: i1, %x: {TENSOR}, %box: memref<{TENSOR}>) -> {TENSOR} {{\n"
        f"{body}\n}}\n"
    )


cfg_programs = st.randoms(use_true_random=False).map(cfg_program)


@settings(PROPERTY_SETTINGS, max_examples=100)
@given(cfg_programs, st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_cfg_storages_live_together_at_run_time_conflict(source: str, picks: list[int]) -> None:
    func = _function(_parse(source))
    buffers = {s.op: s.buffer() for s in analyze_function(func).storages}
    trace = _execute(func, itertools.cycle(picks))
    for a, b in itertools.combinations(sorted(trace.storage_of), 2):
        op_a, op_b = trace.storage_of[a], trace.storage_of[b]
        if op_a is not op_b and trace.first[a] <= trace.last[b] and trace.first[b] <= trace.last[a]:
            assert buffers[op_a].conflicts_with(buffers[op_b]), source


LOOP_CARRIED = [
    # %s2 is allocated in the next iteration while %s1, carried in %acc, is
    # still to be used: %s1 must be live from the loop's start.
    f"""
    func.func private @use({TENSOR})
    func.func @main(%c: i1, %x: {TENSOR}, %box: memref<{TENSOR}>) -> {TENSOR} {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> ({TENSOR}) {{
        %s2 = memory.alloc_storage : !memory.storage<16>
        %t2 = memory.alloc_tensor %s2[0] : !memory.storage<16> -> {TENSOR}
        memory.invoke @use ins(%acc : {TENSOR})
        %s1 = memory.alloc_storage : !memory.storage<16>
        %t1 = memory.alloc_tensor %s1[0] : !memory.storage<16> -> {TENSOR}
        scf.yield %t1 : {TENSOR}
      }}
      func.return %x : {TENSOR}
    }}
    """,
    # The two branches of an scf.if inside a loop: a storage of one branch,
    # carried to the next iteration, is live while the other branch runs.
    f"""
    func.func private @use({TENSOR})
    func.func @main(%c: i1, %x: {TENSOR}, %box: memref<{TENSOR}>) -> {TENSOR} {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> ({TENSOR}) {{
        %q = scf.if %c -> ({TENSOR}) {{
          %s1 = memory.alloc_storage : !memory.storage<16>
          %t1 = memory.alloc_tensor %s1[0] : !memory.storage<16> -> {TENSOR}
          memory.invoke @use ins(%acc : {TENSOR})
          scf.yield %t1 : {TENSOR}
        }} else {{
          %s2 = memory.alloc_storage : !memory.storage<16>
          %t2 = memory.alloc_tensor %s2[0] : !memory.storage<16> -> {TENSOR}
          memory.invoke @use ins(%acc : {TENSOR})
          scf.yield %t2 : {TENSOR}
        }}
        scf.yield %q : {TENSOR}
      }}
      func.return %x : {TENSOR}
    }}
    """,
]


@pytest.mark.parametrize("source", LOOP_CARRIED)
def test_loop_carried_storages_conflict(source: str) -> None:
    """Every choice of branches over two iterations: %s1 and %s2 meet, and conflict."""
    func = _function(_parse(source))
    lifetimes = analyze_function(func)
    s1 = lifetimes.storage_named("s1").buffer()
    s2 = lifetimes.storage_named("s2").buffer()
    met = False
    for picks in itertools.product([0, 1, 2], repeat=3):
        trace = _execute(func, itertools.cycle(picks))
        for a, b in itertools.permutations(trace.storage_of, 2):
            names = {trace.storage_of[a].storage.name_hint, trace.storage_of[b].storage.name_hint}
            if names == {"s1", "s2"} and trace.first[a] <= trace.last[b] <= trace.last[a]:
                met = True
    assert met
    assert s1.conflicts_with(s2)


# ---------------------------------------------------------------------------
# insert-kills
# ---------------------------------------------------------------------------


def _conflicts(module: ModuleOp) -> set[tuple[str, str]]:
    lifetimes = analyze_function(_function(module))
    buffers = [s.buffer() for s in lifetimes.storages]
    return {
        (a.id, b.id)
        for a, b in itertools.combinations(buffers, 2)
        if a.conflicts_with(b)
    }


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(st.one_of(programs, cfg_programs))
def test_insert_kills_verifies_is_idempotent_and_keeps_conflicts(source: str) -> None:
    module = _parse(source)
    before = _conflicts(module)
    once = _print(_run(module, "insert-kills"))  # _run verifies the output
    twice = _print(_run(_parse(once), "insert-kills"))
    assert once == twice
    assert _conflicts(_parse(once)) == before


def test_insert_kills_kills_every_local_value() -> None:
    """Straight-line values that neither escape nor leave their block all get a kill."""
    module = _parse(
        f"""
        func.func private @use({TENSOR})
        func.func @main() {{
          %a = memory.alloc_storage : !memory.storage<16>
          %ta = memory.alloc_tensor %a[0] : !memory.storage<16> -> {TENSOR}
          %b = memory.alloc_storage : !memory.storage<16>
          %tb = memory.alloc_tensor %b[0] : !memory.storage<16> -> {TENSOR}
          memory.invoke @use ins(%tb : {TENSOR})
          memory.invoke @use ins(%ta : {TENSOR})
          func.return
        }}
        """
    )
    _run(module, "insert-kills")
    killed = [op.value.name_hint for op in module.walk() if isinstance(op, KillOp)]
    assert killed == ["tb", "b", "ta", "a"]


# ---------------------------------------------------------------------------
# verify-plan
# ---------------------------------------------------------------------------


def _pin_all(module: ModuleOp, offsets: dict[str, int]) -> None:
    """Pin every storage of ``module`` at ``offsets[name]`` in the pool ``@pool``."""
    for op in module.walk():
        if isinstance(op, AllocStorageOp):
            op.pin("pool", offsets[op.storage.name_hint or ""])


def _verify_plan(module: ModuleOp) -> None:
    VerifyPlanPass().apply(_context(), module)


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(programs, st.randoms(use_true_random=False))
def test_verify_plan_catches_every_planted_overlap(source: str, rng: random.Random) -> None:
    module = _parse(source)
    Rewriter.insert_op(PoolOp("pool"), InsertPoint.at_start(module.body.block))
    lifetimes = analyze_function(_function(module))
    buffers = {s.name: s.buffer() for s in lifetimes.storages}
    names = list(buffers)
    # A plan without overlaps: every storage in its own 64-byte slot.
    distinct = {name: 64 * i for i, name in enumerate(names)}
    _pin_all(module, distinct)
    module.verify()
    _verify_plan(module)
    pairs = list(itertools.combinations(names, 2))
    for first, second in rng.sample(pairs, min(4, len(pairs))):
        planted = dict(distinct)
        planted[second] = planted[first]
        _pin_all(module, planted)
        if buffers[first].conflicts_with(buffers[second]):
            with pytest.raises(PassFailedException) as failure:
                _verify_plan(module)
            message = str(failure.value)
            assert f"%{first} " in message and f"%{second} " in message
            assert "share bytes" in message
        else:
            _verify_plan(module)


# ---------------------------------------------------------------------------
# Examples and API
# ---------------------------------------------------------------------------

CALLS = f"""
memory.pool @sram size 1024
func.func private @use({TENSOR})
func.func @helper() {{
  %h = memory.alloc_storage : !memory.storage<16>
  func.return
}}
func.func @main() {{
  %m = memory.alloc_storage : !memory.storage<16>
  %tm = memory.alloc_tensor %m[0] : !memory.storage<16> -> {TENSOR}
  func.call @helper() : () -> ()
  memory.invoke @use ins(%tm : {TENSOR})
  func.return
}}
func.func @last() {{
  %z = memory.alloc_storage pools [@sram] : !memory.storage<32>
  func.return
}}
"""


def test_module_problem_lays_functions_out_in_time() -> None:
    lifetimes = analyze_module(_parse(CALLS))
    assert lifetimes.time_offset == {"helper": 0, "main": 2, "last": 7}
    problem = lifetimes.problem()
    by_id = {b.id: b for b in problem.buffers}
    assert list(by_id) == ["helper.h", "main.m", "last.z"]
    # @helper is called by @main: its storage spans both functions.
    assert (by_id["helper.h"].start, by_id["helper.h"].end) == (0, 7)
    assert (by_id["main.m"].start, by_id["main.m"].end) == (2, 6)
    assert (by_id["last.z"].start, by_id["last.z"].end) == (7, 8)
    assert by_id["helper.h"].conflicts_with(by_id["main.m"])
    assert not by_id["last.z"].conflicts_with(by_id["main.m"])
    assert by_id["last.z"].candidates == ("sram",)
    assert [p.name for p in problem.pools] == ["sram"]


def test_function_problem_and_placements() -> None:
    module = _parse(
        """
        memory.pool @sram size 1024 align 32
        func.func @f() {
          %a = memory.alloc_storage align 128 at @sram[256] : !memory.storage<100>
          %b = memory.alloc_storage on "npu" : !memory.storage<8>
          %n = arith.constant 4 : index
          %d = memory.alloc_storage(%n) : !memory.storage<?>
          func.return
        }
        """
    )
    lifetimes = analyze_function(_function(module, "f"))
    assert [s.name for s in lifetimes.storages] == ["a", "b", "d"]
    problem = lifetimes.problem()
    a, b = problem.buffers
    assert (a.id, a.size, a.alignment, a.candidates, a.pinned_offset) == ("a", 100, 128, ("sram",), 256)
    assert (b.device, b.candidates, b.pinned_offset) == ("npu", (), None)
    assert problem.pools[0].alignment == 32
    assert lifetimes.placements().placements["a"].offset == 256
    assert lifetimes.storage_named("d").size is None


def test_unnamed_and_duplicate_names_are_made_unique() -> None:
    module = _parse(
        """
        func.func @f(%c: i1) {
          %0 = memory.alloc_storage : !memory.storage<8>
          scf.if %c {
            %s = memory.alloc_storage : !memory.storage<8>
            scf.yield
          } else {
            %s = memory.alloc_storage : !memory.storage<8>
            scf.yield
          }
          %s0 = memory.alloc_storage : !memory.storage<8>
          func.return
        }
        """
    )
    names = [s.name for s in analyze_function(_function(module, "f")).storages]
    assert len(set(names)) == len(names) == 4
    assert names[1] == "s" and names[3] == "s0"


def test_cfg_liveness_is_a_fixpoint_over_blocks() -> None:
    """A value live around a CFG loop covers every block of the loop."""
    module = _parse(
        f"""
        func.func private @use({TENSOR})
        func.func @f(%c: i1) {{
          %s = memory.alloc_storage : !memory.storage<16>
          %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> {TENSOR}
          cf.br ^bb1
        ^bb1:
          cf.cond_br %c, ^bb2, ^bb3
        ^bb2:
          memory.invoke @use ins(%t : {TENSOR})
          cf.br ^bb1
        ^bb3:
          %late = memory.alloc_storage : !memory.storage<16>
          func.return
        }}
        """
    )
    lifetimes = analyze_function(_function(module, "f"))
    s = lifetimes.storage_named("s")
    late = lifetimes.storage_named("late")
    # ^bb2 (the use, ops 4..5) branches back to ^bb1 (op 3): %s is live out of
    # ^bb2, so it covers ^bb1..^bb2 and ends with ^bb2 at 6.
    assert s.interval == LiveInterval(0, 6)
    assert late.interval == LiveInterval(6, 7)
    assert not s.buffer().conflicts_with(late.buffer())


def test_recursion_with_storages_is_refused() -> None:
    module = _parse(
        """
        func.func @r() {
          %s = memory.alloc_storage : !memory.storage<8>
          func.call @r() : () -> ()
          func.return
        }
        """
    )
    with pytest.raises(PassFailedException, match="@r calls itself"):
        analyze_module(module)


# ---------------------------------------------------------------------------
# plan-report
# ---------------------------------------------------------------------------

REPORTED = """
memory.pool @sram size 256
func.func @f() {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %b = memory.alloc_storage at @sram[64] : !memory.storage<64>
  %u = memory.alloc_storage : !memory.storage<32>
  memory.kill %b : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  func.return
}
"""


def test_plan_report_json_follows_the_schema() -> None:
    text = REPORT_WRITERS["json"](gather_report(_parse(REPORTED)))
    report = json.loads(text)
    (function,) = report["functions"]
    assert function["name"] == "f"
    pools = {p["name"]: p for p in function["pools"]}
    assert pools["sram"] == {
        "name": "sram", "size": 256, "used": 128, "lower_bound": 128, "buffer_count": 2,
    }
    assert pools["(unplanned)"]["used"] == 32
    buffers = {b["name"]: b for b in function["buffers"]}
    assert {key: buffers["b"][key] for key in ("size", "alignment", "start", "end", "pool", "offset")} == {
        "size": 64, "alignment": 64, "start": 1, "end": 3, "pool": "sram", "offset": 64,
    }
    assert buffers["u"]["pool"] == "(unplanned)" and buffers["u"]["offset"] is None


def test_plan_report_leaves_the_ir_unchanged_and_writes_stderr() -> None:
    module = _parse(REPORTED)
    before = _print(module)
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        _run(module, "plan-report")
    assert _print(module) == before
    assert "@sram" in stderr.getvalue()


def test_plan_report_writes_nothing_when_it_fails(tmp_path: Path) -> None:
    module = _parse(
        """
        func.func @r() {
          %s = memory.alloc_storage : !memory.storage<8>
          func.call @r() : () -> ()
          func.return
        }
        """
    )
    output = tmp_path / "report.txt"
    with pytest.raises(PassFailedException):
        PlanReportPass(output=str(output)).apply(_context(), module)
    assert not output.exists()


def test_plan_report_rejects_unknown_formats() -> None:
    with pytest.raises(PassFailedException, match="unknown format 'svg-ish'; expected one of .*json.*text"):
        PlanReportPass(format="svg-ish").apply(_context(), _parse(REPORTED))


def test_plan_report_cannot_write(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "r.txt"
    with pytest.raises(PassFailedException, match="cannot write"):
        PlanReportPass(output=str(target)).apply(_context(), _parse(REPORTED))
