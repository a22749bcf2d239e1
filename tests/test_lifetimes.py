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
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect import AllocStorageOp, KillOp, PoolOp
from memplan.passes.analysis import (
    EscapeKind,
    LiveInterval,
    analyze_function,
    analyze_module,
)
from memplan.passes.plan_report import REPORT_WRITERS, PlanReportPass, gather_report
from memplan.passes.planning.model import Buffer
from memplan.passes.verify_plan import VerifyPlanPass
from memplan_testing import (
    examples,
    memplan_context,
    parse_module,
    print_module,
    run_passes,
)

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


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
    """Random structured programs over storages of 16 bytes, one tensor each.

    ``callees`` (name, returns a tensor) are functions the program may call
    with ``%c``, a tensor and ``%box``. With ``store_own_only`` only tensors
    of storages allocated here are stored (a callee storing its argument
    would hide the caller's storage from every analysis).
    """

    rng: random.Random
    lines: list[str] = field(default_factory=list)
    counter: int = 0
    budget: int = 40
    callees: list[tuple[str, bool]] = field(default_factory=list)
    store_own_only: bool = False
    own: set[str] = field(default_factory=set)

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
                ["alloc", "use", "view", "if", "if_yield", "for", "for_iter", "store", "call"],
                weights=[
                    4,
                    4,
                    1,
                    1 if depth < 3 else 0,
                    1 if depth < 3 else 0,
                    1 if depth < 3 else 0,
                    1 if depth < 3 else 0,
                    0.6 if self.store_own_only else 0.05,
                    2 if self.callees else 0,
                ],
            )[0]
            storable = [t for t in tensors if t in self.own] if self.store_own_only else tensors
            if (choice == "store" and not storable) or (choice == "call" and not self.callees):
                choice = "alloc"  # (hypothesis' random may pick a zero weight)
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
                self.own.add(tensor)
            elif choice == "call":
                callee, returns = self.rng.choice(self.callees)
                argument = self.rng.choice([*tensors, "%x"])
                call = (
                    f"func.call @{callee}(%c, {argument}, %box) : (i1, {TENSOR}, memref<{TENSOR}>)"
                )
                if returns:
                    result = self.fresh("r")
                    self.emit(depth, f"{result} = {call} -> {TENSOR}")
                    tensors.append(result)
                else:
                    self.emit(depth, f"{call} -> ()")
            elif choice == "use":
                pool = tensors + views
                value = self.rng.choice(pool)
                kind = TENSOR if value in tensors else VIEW
                self.emit(depth, f"memory.invoke @use ins({value} : {kind})")
            elif choice == "view":
                source = self.rng.choice(tensors)
                view = self.fresh("v")
                self.emit(
                    depth, f"{view} = memref.subview {source}[0] [2] [1] : {TENSOR} to {VIEW}"
                )
                views.append(view)
            elif choice == "store":
                stored = self.rng.choice(storable)
                self.emit(depth, f"memref.store {stored}, %box[] : memref<{TENSOR}>")
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
        return f"func.func private @use({TENSOR})\n" + self.function("main", returns=True)

    def function(self, name: str, *, returns: bool) -> str:
        """One function ``@name(%c, %x, %box)``, returning a tensor or nothing."""
        tensors: list[str] = []
        self.block(0, tensors, [])
        body = "\n".join(self.lines)
        if returns:
            returned = self.rng.choice(tensors) if tensors and self.rng.random() < 0.3 else "%x"
            result, ret = f" -> {TENSOR}", f"func.return {returned} : {TENSOR}"
        else:
            result, ret = "", "func.return"
        return (
            f"func.func @{name}(%c: i1, %x: {TENSOR}, %box: memref<{TENSOR}>){result} {{\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %c1 = arith.constant 1 : index\n"
            "  %c2 = arith.constant 2 : index\n"
            f"{body}\n"
            f"  {ret}\n"
            "}\n"
        )


def call_graph_program(rng: random.Random) -> str:
    """Random ``@main`` and one to three functions it calls, directly or not.

    ``@f<i>`` may call ``@f<j>`` for ``j > i`` (no recursion), ``@main`` any;
    each returns a tensor (its own, one it was handed back, or its argument)
    or nothing. Functions come in a random module order.
    """
    names = [f"f{i}" for i in range(rng.randint(1, 3))]
    returns = {name: rng.random() < 0.6 for name in names}
    texts = []
    for position, name in enumerate(names):
        callees = [(other, returns[other]) for other in names[position + 1 :]]
        generator = ProgramGenerator(rng, budget=15, callees=callees, store_own_only=True)
        texts.append(generator.function(name, returns=returns[name]))
    main = ProgramGenerator(rng, budget=25, callees=[(name, returns[name]) for name in names])
    texts.append(main.function("main", returns=True))
    rng.shuffle(texts)
    return f"func.func private @use({TENSOR})\n" + "".join(texts)


programs = st.randoms(use_true_random=False).map(lambda rng: ProgramGenerator(rng).program())
call_graph_programs = st.randoms(use_true_random=False).map(call_graph_program)

PROPERTY_SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
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
    scope_users: list[Operation] = []
    for user in users:
        parent = user.parent_op()
        looped = user.name == "scf.yield" and parent is not None and parent.name in _LOOPS
        scope_users.append(parent if looped and parent is not None else user)
    escapes = any(
        op.name == "func.return" or (op.name == "memref.store" and op.operands[0] in aliases)
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
    module = parse_module(source, verify=True)
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
    frame: dict[int, int] = field(default_factory=dict)
    time: int = 0
    branches: int = 0
    calls: int = 0


def _execute(
    func: FuncOp, choices: Iterator[int], functions: dict[str, FuncOp] | None = None
) -> Trace:
    """Run ``func`` abstractly: ``choices`` picks if-branches and trip counts (0..2).

    A ``func.call`` of one of ``functions`` runs its body (a new frame): the
    values it returns flow into the call's results; only what ``func``
    itself returns or what is stored lives to the end of the run.
    """
    trace = Trace()
    env: dict[SSAValue, frozenset[int]] = {}
    frames = [0]

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
                trace.frame[instance] = frames[-1]
                env[op.storage] = frozenset({instance})
            elif isinstance(op, CallOp) and functions and op.callee.string_value() in functions:
                callee = functions[op.callee.string_value()]
                for arg, value in zip(callee.body.blocks[0].args, operands):
                    env[arg] = value
                trace.calls += 1
                frames.append(trace.calls)
                returned = run_region(callee.body.blocks[0])
                frames.pop()
                for result, value in zip(op.results, returned):
                    env[result] = value
            elif op.name == "func.return" and len(frames) > 1:
                return operands
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


@settings(PROPERTY_SETTINGS, max_examples=examples(200))
@given(programs, st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_storages_live_together_at_run_time_conflict(source: str, picks: list[int]) -> None:
    module = parse_module(source, verify=True)
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
                lines.append(
                    f"%t{n} = memory.alloc_tensor %s{n}[0] : !memory.storage<16> -> {TENSOR}"
                )
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
                value = (
                    rng.choice(local + visible)
                    if (local or visible) and rng.random() < 0.4
                    else None
                )
                passed.append(value or "")
                blocks.append(lines)
            use_arg = all(passed)
            for arm, value in zip(blocks[-2:], passed):
                arm.append(
                    f"cf.br ^bb{join}({value} : {TENSOR})" if use_arg else f"cf.br ^bb{join}"
                )
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


@settings(PROPERTY_SETTINGS, max_examples=examples(100))
@given(cfg_programs, st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_cfg_storages_live_together_at_run_time_conflict(source: str, picks: list[int]) -> None:
    func = _function(parse_module(source, verify=True))
    buffers = {s.op: s.buffer() for s in analyze_function(func).storages}
    trace = _execute(func, itertools.cycle(picks))
    for a, b in itertools.combinations(sorted(trace.storage_of), 2):
        op_a, op_b = trace.storage_of[a], trace.storage_of[b]
        if op_a is not op_b and trace.first[a] <= trace.last[b] and trace.first[b] <= trace.last[a]:
            assert buffers[op_a].conflicts_with(buffers[op_b]), source


TWO_INSTANCES = "two instances of one storage"


@settings(PROPERTY_SETTINGS, max_examples=examples(400))
@given(call_graph_programs, st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_call_graph_storages_live_together_at_run_time_conflict(
    source: str, picks: list[int]
) -> None:
    """Module intervals (callees inline) are sound for a run from ``@main``.

    Any two storages whose instances are live together, in any functions,
    conflict as module buffers. Two live instances of one storage from
    different calls cannot be planned: the analysis must have refused the
    module (instances of one storage in two loop iterations of one call are
    the function analysis' business, as in the tests above).
    """
    module = parse_module(source, verify=True)
    functions = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, FuncOp) and not op.is_declaration
    }
    trace = _execute(functions["main"], itertools.cycle(picks), functions)
    try:
        lifetimes = analyze_module(module)
    except PassFailedException as error:
        assert TWO_INSTANCES in str(error), source
        # Refused programs say nothing about conflicts: discard the example
        # (hypothesis fails the test if too few remain) and count them.
        event("refused: two instances of one storage")
        assume(False)
        raise AssertionError("unreachable") from error
    buffers = {s.op: lifetimes.module_buffer(f, s) for f, s in lifetimes.storages()}
    for a, b in itertools.combinations(sorted(trace.storage_of), 2):
        op_a, op_b = trace.storage_of[a], trace.storage_of[b]
        if not (trace.first[a] <= trace.last[b] and trace.first[b] <= trace.last[a]):
            continue
        if op_a is op_b:
            assert trace.frame[a] == trace.frame[b], (
                f"{op_a.storage.name_hint} is live twice at once from two calls\n{source}"
            )
            continue
        assert buffers[op_a].conflicts_with(buffers[op_b]), (
            f"{buffers[op_a].id} and {buffers[op_b].id} are live together at run time "
            f"but do not conflict\n{source}"
        )


@settings(PROPERTY_SETTINGS, max_examples=examples(60))
@given(call_graph_programs)
def test_a_leaf_called_once_keeps_its_own_conflicts(source: str) -> None:
    """The point of the inline layout: a function called from one place that
    calls nothing plans its storages as if alone (escaping ones aside)."""
    module = parse_module(source, verify=True)
    try:
        lifetimes = analyze_module(module)
    except PassFailedException as error:
        event("refused by the module analysis")
        assume(False)
        raise AssertionError("unreachable") from error
    calls = [site for f in lifetimes.functions for site in f.calls]
    bodies = {f.name for f in lifetimes.functions}
    for function in lifetimes.functions:
        called = [site for site in calls if site.callee == function.name]
        if len(called) != 1 or any(site.callee in bodies for site in function.calls):
            continue
        own = [s for s in function.storages if not s.escapes]
        for a, b in itertools.combinations(own, 2):
            alone = a.buffer().conflicts_with(b.buffer())
            inline = lifetimes.module_buffer(function, a).conflicts_with(
                lifetimes.module_buffer(function, b)
            )
            assert alone == inline, f"@{function.name}: {a.name}, {b.name}\n{source}"


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
    func = _function(parse_module(source, verify=True))
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
    return {(a.id, b.id) for a, b in itertools.combinations(buffers, 2) if a.conflicts_with(b)}


@settings(PROPERTY_SETTINGS, max_examples=examples(40))
@given(st.one_of(programs, cfg_programs))
def test_insert_kills_verifies_is_idempotent_and_keeps_conflicts(source: str) -> None:
    module = parse_module(source, verify=True)
    before = _conflicts(module)
    once = print_module(run_passes(module, "insert-kills"))  # _run verifies the output
    twice = print_module(run_passes(parse_module(once, verify=True), "insert-kills"))
    assert once == twice
    assert _conflicts(parse_module(once, verify=True)) == before


def test_insert_kills_kills_every_local_value() -> None:
    """Straight-line values that neither escape nor leave their block all get a kill."""
    module = parse_module(
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
        """,
        verify=True,
    )
    run_passes(module, "insert-kills")
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
    VerifyPlanPass().apply(memplan_context(), module)


@settings(PROPERTY_SETTINGS, max_examples=examples(40))
@given(programs, st.randoms(use_true_random=False))
def test_verify_plan_catches_every_planted_overlap(source: str, rng: random.Random) -> None:
    module = parse_module(source, verify=True)
    Rewriter.insert_op(PoolOp("pool"), InsertPoint.at_start(module.body.block))
    lifetimes = analyze_function(_function(module))
    buffers = {s.name: s.buffer() for s in lifetimes.storages}
    names = list(buffers)
    # A plan without overlaps: every storage in its own 64-byte slot.
    distinct = {name: 64 * i for i, name in enumerate(names)}
    _pin_all(module, distinct)
    module.verify()
    if any(s.carried_across_iterations for s in lifetimes.storages):
        # Two instances live at once: no plan is right, whatever the offsets.
        with pytest.raises(PassFailedException, match="two instances of one storage"):
            _verify_plan(module)
        return
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
    lifetimes = analyze_module(parse_module(CALLS, verify=True))
    # @main and @last are top level, one after the other; @helper (2 ops) is
    # nested right after its call, @main's op 2: @main's ops 3, 4 move to 5, 6.
    assert lifetimes.time_offset == {"main": 0, "helper": 3, "last": 7}
    assert lifetimes.homes["helper"].number == 2
    assert lifetimes.segment(lifetimes.function("main")) == LiveInterval(0, 7)
    problem = lifetimes.problem()
    by_id = {b.id: b for b in problem.buffers}
    assert list(by_id) == ["helper.h", "main.m", "last.z"]
    assert (by_id["helper.h"].start, by_id["helper.h"].end) == (3, 4)
    # %m [0, 4) is live across the call: [0, 6) covers @helper's segment.
    assert (by_id["main.m"].start, by_id["main.m"].end) == (0, 6)
    assert (by_id["last.z"].start, by_id["last.z"].end) == (7, 8)
    assert by_id["helper.h"].conflicts_with(by_id["main.m"])
    assert not by_id["last.z"].conflicts_with(by_id["main.m"])
    assert by_id["last.z"].candidates == ("sram",)
    assert [p.name for p in problem.pools] == ["sram"]


def _storage_text(name: str) -> str:
    return (
        f"%{name} = memory.alloc_storage : !memory.storage<16>\n"
        f"%t{name} = memory.alloc_tensor %{name}[0] : !memory.storage<16> -> {TENSOR}\n"
    )


CALLEE = f"""
func.func private @use({TENSOR})
func.func @callee() {{
  {_storage_text("a")}
  memory.invoke @use ins(%ta : {TENSOR})
  memory.kill %a : !memory.storage<16>
  {_storage_text("b")}
  memory.invoke @use ins(%tb : {TENSOR})
  memory.kill %b : !memory.storage<16>
  func.return
}}
"""


def _module_buffers(source: str) -> dict[str, Buffer]:
    return {b.id: b for b in analyze_module(parse_module(source, verify=True)).problem().buffers}


def test_a_callee_keeps_its_own_intervals() -> None:
    """Only what is live across the call conflicts with the callee's storages."""
    buffers = _module_buffers(
        CALLEE
        + f"""
        func.func @main() {{
          {_storage_text("before")}
          memory.invoke @use ins(%tbefore : {TENSOR})
          memory.kill %before : !memory.storage<16>
          {_storage_text("across")}
          func.call @callee() : () -> ()
          memory.invoke @use ins(%tacross : {TENSOR})
          memory.kill %across : !memory.storage<16>
          {_storage_text("after")}
          func.return
        }}
        """
    )
    a, b = buffers["callee.a"], buffers["callee.b"]
    # @main's call is op 6: @callee's 9 ops take times 7..15.
    assert (a.start, a.end, b.start, b.end) == (7, 10, 11, 14)
    assert not a.conflicts_with(b)
    across = buffers["main.across"]
    assert (across.start, across.end) == (4, 17)
    assert across.conflicts_with(a) and across.conflicts_with(b)
    for name in ("main.before", "main.after"):
        assert not buffers[name].conflicts_with(a) and not buffers[name].conflicts_with(b)


def test_a_value_live_across_a_later_call_covers_the_callee_segment() -> None:
    """Two calls: the segment sits at the first; %s, live across the second, reaches back over it."""
    buffers = _module_buffers(
        CALLEE
        + f"""
        func.func @main() {{
          func.call @callee() : () -> ()
          {_storage_text("s")}
          func.call @callee() : () -> ()
          memory.invoke @use ins(%ts : {TENSOR})
          memory.kill %s : !memory.storage<16>
          func.return
        }}
        """
    )
    s = buffers["main.s"]
    # @callee's segment is [1, 10) (after op 0); %s [1, 5) maps to [10, 14).
    assert (s.start, s.end) == (1, 14)
    assert s.conflicts_with(buffers["callee.a"]) and s.conflicts_with(buffers["callee.b"])
    assert not buffers["callee.a"].conflicts_with(buffers["callee.b"])


MAKE = f"""
func.func private @use({TENSOR})
func.func @make() -> {TENSOR} {{
  {_storage_text("r")}
  memory.invoke @use ins(%tr : {TENSOR})
  func.return %tr : {TENSOR}
}}
"""


def test_a_returned_storage_lives_until_the_callers_last_use() -> None:
    lifetimes = analyze_module(
        parse_module(
            MAKE
            + f"""
            func.func @main() {{
              %v = func.call @make() : () -> {TENSOR}
              {_storage_text("s")}
              memory.invoke @use ins(%v : {TENSOR})
              memory.invoke @use ins(%ts : {TENSOR})
              {_storage_text("late")}
              func.return
            }}
            """,
            verify=True,
        )
    )
    assert lifetimes.function("make").storage_named("r").escape_kind is EscapeKind.RETURNED
    call = lifetimes.function("main").calls[0]
    assert (call.results, call.results_escape) == (LiveInterval(0, 4), EscapeKind.NONE)
    buffers = {b.id: b for b in lifetimes.problem().buffers}
    r = buffers["make.r"]
    # @make's segment is [1, 5), its %r [0, 4) there is [1, 5); in @main the
    # call's result %v is live [0, 4): times [0, 8) (op 3 moved up to 7).
    assert (r.start, r.end) == (0, 8)
    assert r.conflicts_with(buffers["main.s"])
    assert not r.conflicts_with(buffers["main.late"])


STASH = f"""
func.func @stash(%box: memref<{TENSOR}>) {{
  {_storage_text("k")}
  memref.store %tk, %box[] : memref<{TENSOR}>
  func.return
}}
func.func @mid(%box: memref<{TENSOR}>) {{
  func.call @stash(%box) : (memref<{TENSOR}>) -> ()
  func.return
}}
"""


def test_a_leaked_storage_lives_to_the_end_of_every_caller() -> None:
    """%k is stored: whoever reads %box later may reach it, up to @main's end."""
    lifetimes = analyze_module(
        parse_module(
            f"func.func private @use({TENSOR})\n"
            + STASH
            + f"""
            func.func @main(%box: memref<{TENSOR}>) {{
              func.call @mid(%box) : (memref<{TENSOR}>) -> ()
              {_storage_text("late")}
              func.return
            }}
            """,
            verify=True,
        )
    )
    assert lifetimes.function("stash").storage_named("k").escape_kind is EscapeKind.LEAKED
    buffers = {b.id: b for b in lifetimes.problem().buffers}
    assert buffers["stash.k"].conflicts_with(buffers["main.late"])
    assert buffers["stash.k"].end == lifetimes.segment(lifetimes.function("main")).end


@pytest.mark.parametrize(
    "main",
    [
        # The first result is still used when the second call makes %r again.
        f"""
        func.func @main() {{
          %v = func.call @make() : () -> {TENSOR}
          %w = func.call @make() : () -> {TENSOR}
          memory.invoke @use ins(%v : {TENSOR})
          func.return
        }}
        """,
        # Leaked by the call in the first iteration, made again in the next
        # (the call has no result: the loop, not a result, makes it repeat).
        f"""
        func.func @main(%box: memref<{TENSOR}>) {{
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %c2 = arith.constant 2 : index
          scf.for %i = %c0 to %c2 step %c1 {{
            func.call @mid(%box) : (memref<{TENSOR}>) -> ()
          }}
          func.return
        }}
        """,
        # Carried to the next iteration of the loop that calls @make again.
        f"""
        func.func @main(%x: {TENSOR}) {{
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %c2 = arith.constant 2 : index
          %out = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> ({TENSOR}) {{
            memory.invoke @use ins(%acc : {TENSOR})
            %v = func.call @make() : () -> {TENSOR}
            scf.yield %v : {TENSOR}
          }}
          func.return
        }}
        """,
    ],
)
def test_two_live_instances_of_one_storage_are_refused(main: str) -> None:
    with pytest.raises(PassFailedException) as failure:
        analyze_module(parse_module(MAKE + STASH + main, verify=True))
    message = str(failure.value)
    expected = (
        "storage %k of @stash (16 bytes) is still live in @main at its call of @mid"
        if "@mid" in main
        else "storage %r of @make (16 bytes) is still live in @main at its call of @make"
    )
    assert expected in message
    assert TWO_INSTANCES in message


def test_a_returned_storage_dead_before_the_next_call_is_fine() -> None:
    buffers = _module_buffers(
        MAKE
        + f"""
        func.func @main() {{
          %v = func.call @make() : () -> {TENSOR}
          memory.invoke @use ins(%v : {TENSOR})
          %w = func.call @make() : () -> {TENSOR}
          memory.invoke @use ins(%w : {TENSOR})
          func.return
        }}
        """
    )
    assert list(buffers) == ["make.r"]


def test_function_problem_and_placements() -> None:
    module = parse_module(
        """
        memory.pool @sram size 1024 align 32
        func.func @f() {
          %a = memory.alloc_storage align 128 at @sram[256] : !memory.storage<100>
          %b = memory.alloc_storage on "npu" : !memory.storage<8>
          %n = arith.constant 4 : index
          %d = memory.alloc_storage(%n) : !memory.storage<?>
          func.return
        }
        """,
        verify=True,
    )
    lifetimes = analyze_function(_function(module, "f"))
    assert [s.name for s in lifetimes.storages] == ["a", "b", "d"]
    problem = lifetimes.problem()
    a, b = problem.buffers
    assert (a.id, a.size, a.alignment, a.candidates, a.pinned_offset) == (
        "a",
        100,
        128,
        ("sram",),
        256,
    )
    assert (b.device, b.candidates, b.pinned_offset) == ("npu", (), None)
    assert problem.pools[0].alignment == 32
    assert lifetimes.placements().placements["a"].offset == 256
    assert lifetimes.storage_named("d").size is None


def test_unnamed_and_duplicate_names_are_made_unique() -> None:
    module = parse_module(
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
        """,
        verify=True,
    )
    names = [s.name for s in analyze_function(_function(module, "f")).storages]
    assert len(set(names)) == len(names) == 4
    assert names[1] == "s" and names[3] == "s0"


def test_cfg_liveness_is_a_fixpoint_over_blocks() -> None:
    """A value live around a CFG loop covers every block of the loop."""
    module = parse_module(
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
        """,
        verify=True,
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
    module = parse_module(
        """
        func.func @r() {
          %s = memory.alloc_storage : !memory.storage<8>
          func.call @r() : () -> ()
          func.return
        }
        """,
        verify=True,
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
    text = REPORT_WRITERS["json"](gather_report(parse_module(REPORTED, verify=True)))
    report = json.loads(text)
    (function,) = report["functions"]
    assert function["name"] == "f"
    pools = {p["name"]: p for p in function["pools"]}
    assert pools["sram"] == {
        "name": "sram",
        "size": 256,
        "used": 128,
        "lower_bound": 128,
        "no_planning": 128,
        "base_alignment": 64,
        "buffer_count": 2,
    }
    assert pools["(unplanned)"]["used"] == 32
    buffers = {b["name"]: b for b in function["buffers"]}
    assert {
        key: buffers["b"][key] for key in ("size", "alignment", "start", "end", "pool", "offset")
    } == {
        "size": 64,
        "alignment": 64,
        "start": 1,
        "end": 3,
        "pool": "sram",
        "offset": 64,
    }
    assert buffers["u"]["pool"] == "(unplanned)" and buffers["u"]["offset"] is None


def test_plan_report_leaves_the_ir_unchanged_and_writes_stderr() -> None:
    module = parse_module(REPORTED, verify=True)
    before = print_module(module)
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        run_passes(module, "plan-report")
    assert print_module(module) == before
    assert "@sram" in stderr.getvalue()


def test_plan_report_writes_nothing_when_it_fails(tmp_path: Path) -> None:
    module = parse_module(
        """
        func.func @r() {
          %s = memory.alloc_storage : !memory.storage<8>
          func.call @r() : () -> ()
          func.return
        }
        """,
        verify=True,
    )
    output = tmp_path / "report.txt"
    with pytest.raises(PassFailedException):
        PlanReportPass(output=str(output)).apply(memplan_context(), module)
    assert not output.exists()


def test_plan_report_rejects_unknown_formats() -> None:
    with pytest.raises(
        PassFailedException, match="unknown format 'svg-ish'; expected one of .*json.*text"
    ):
        PlanReportPass(format="svg-ish").apply(
            memplan_context(), parse_module(REPORTED, verify=True)
        )


def test_plan_report_cannot_write(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "r.txt"
    with pytest.raises(PassFailedException, match="cannot write"):
        PlanReportPass(output=str(target)).apply(
            memplan_context(), parse_module(REPORTED, verify=True)
        )


def test_a_storage_escaping_in_a_cfg_loop_outlives_the_next_trip() -> None:
    """%s escapes in the loop body; on the next trip %y (loop header, numbered
    before %s) is live while %s still is, so the two must conflict."""
    module = parse_module(
        """
        func.func @main(%c : i1) {
          cf.br ^loop
        ^loop:
          %y = memory.alloc_storage : !memory.storage<64>
          %yt = memory.alloc_tensor %y[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%yt) : (memref<16xf32>) -> ()
          memory.kill %y : !memory.storage<64>
          cf.cond_br %c, ^body, ^exit
        ^body:
          %s = memory.alloc_storage : !memory.storage<64>
          %st = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          %r = "test.op"(%st) : (memref<16xf32>) -> memref<16xf32>
          cf.br ^loop
        ^exit:
          func.return
        }
        """,
        verify=True,
    )
    lifetimes = analyze_function(_function(module))
    y = lifetimes.storage_named("y")
    s = lifetimes.storage_named("s")
    assert s.escapes
    assert s.interval == LiveInterval(1, 11)
    assert y.buffer().conflicts_with(s.buffer())


# ---------------------------------------------------------------------------
# Storages carried to the next iteration of the loop allocating them
# ---------------------------------------------------------------------------

_CARRY_CASES = {
    # Allocated in the body, yielded into %acc, which the next trip reads.
    "for_inside": (
        """
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<16xf32>) {
          %s = memory.alloc_storage : !memory.storage<64>
          %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%acc, %t) : (memref<16xf32>, memref<16xf32>) -> ()
          scf.yield %t : memref<16xf32>
        }
        """,
        "scf.for",
    ),
    # One instance, allocated before the loop and carried through it.
    "for_outside": (
        """
        %s = memory.alloc_storage : !memory.storage<64>
        %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %t) -> (memref<16xf32>) {
          "test.op"(%acc) : (memref<16xf32>) -> ()
          scf.yield %acc : memref<16xf32>
        }
        """,
        None,
    ),
    # Yielded, but the next trip never reads %acc: the previous instance is dead.
    "for_unused_argument": (
        """
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<16xf32>) {
          %s = memory.alloc_storage : !memory.storage<64>
          %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%t) : (memref<16xf32>) -> ()
          scf.yield %t : memref<16xf32>
        }
        """,
        None,
    ),
    # scf.while: allocated in `after`, yielded to `before`'s argument.
    "while_inside": (
        """
        %r = scf.while (%acc = %init) : (memref<16xf32>) -> memref<16xf32> {
          "test.op"(%acc) : (memref<16xf32>) -> ()
          scf.condition(%go) %acc : memref<16xf32>
        } do {
        ^bb0(%cur: memref<16xf32>):
          %s = memory.alloc_storage : !memory.storage<64>
          %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%cur, %t) : (memref<16xf32>, memref<16xf32>) -> ()
          scf.yield %t : memref<16xf32>
        }
        """,
        "scf.while",
    ),
    # cf back edge: %acc (the previous %t) is read after the new %s exists.
    "cf_inside": (
        """
        cf.br ^loop(%init : memref<16xf32>)
      ^loop(%acc: memref<16xf32>):
        %s = memory.alloc_storage : !memory.storage<64>
        %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
        "test.op"(%acc, %t) : (memref<16xf32>, memref<16xf32>) -> ()
        cf.cond_br %go, ^loop(%t : memref<16xf32>), ^exit
      ^exit:
        """,
        "block",
    ),
    # cf back edge, but %acc is last read before the new %s is allocated.
    "cf_dead_before_alloc": (
        """
        cf.br ^loop(%init : memref<16xf32>)
      ^loop(%acc: memref<16xf32>):
        "test.op"(%acc) : (memref<16xf32>) -> ()
        %s = memory.alloc_storage : !memory.storage<64>
        %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
        "test.op"(%t) : (memref<16xf32>) -> ()
        cf.cond_br %go, ^loop(%t : memref<16xf32>), ^exit
      ^exit:
        """,
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(_CARRY_CASES))
def test_carried_across_iterations(case: str) -> None:
    body, carrier = _CARRY_CASES[case]
    module = parse_module(
        f"""
        func.func @main(%n : index, %init : memref<16xf32>, %go : i1) {{
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          {body}
          func.return
        }}
        """,
        verify=True,
    )
    lifetimes = analyze_function(_function(module))
    s = lifetimes.storage_named("s")
    assert s.carried_across_iterations == (carrier is not None)
    if carrier == "block":
        assert isinstance(s.carrying_loop, Block)
    elif carrier is not None:
        assert isinstance(s.carrying_loop, Operation) and s.carrying_loop.name == carrier
    if carrier is None:
        run_passes(module, "usmp")
        assert s.alloc.pinned is not None
    else:
        with pytest.raises(PassFailedException, match=r"storage %s of @main .* two instances"):
            run_passes(module, "usmp")
