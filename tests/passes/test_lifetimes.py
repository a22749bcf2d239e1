"""Lifetimes of one function (passes/analysis) against a reference and execution.

Property tests draw random programs (straight-line code, nested ``scf.if``
and ``scf.for``, ``scf.if`` results and ``scf.for`` iteration arguments
carrying tensors, views, escapes) and check:

- the intervals, escape flags and branch paths equal a brute-force
  reference computed from the definition in ``passes/analysis``;
- soundness against execution: running the program on many branch/trip-count
  choices, any two storages whose instances are live at the same time are
  reported as conflicting.

The programs come from ``lifetime_programs.py``; ``test_plan_checks.py``
checks insert-kills, verify-plan and plan-report on them, and
``test_module_lifetimes.py`` the module-level analysis.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from lifetime_programs import (
    PROPERTY_SETTINGS,
    TENSOR,
    TWO_INSTANCES,
    call_graph_programs,
    cfg_programs,
    function_named,
    programs,
)
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect import AllocStorageOp
from memplan.passes.analysis import (
    LiveInterval,
    analyze_function,
    analyze_module,
)
from memplan.passes.analysis.aliasing import alias_closure
from memplan_testing import (
    examples,
    parse_module,
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
    func = function_named(module)
    lifetimes = analyze_function(func)
    for lifetime in [*lifetimes.storages, *lifetimes.tensors]:
        interval, escapes, branch = _reference(func, lifetime.value)
        assert (lifetime.interval, lifetime.escapes, lifetime.branch) == (
            interval,
            escapes,
            branch,
        ), f"{lifetime.name}\n{source}"
        # A storage's closure is built from its tensors': the same as a walk.
        aliases, uses, _ = alias_closure(lifetime.value)
        assert (lifetime.aliases, lifetime.uses) == (tuple(aliases), tuple(uses))


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
    func = function_named(module)
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


@settings(PROPERTY_SETTINGS, max_examples=examples(100))
@given(cfg_programs, st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_cfg_storages_live_together_at_run_time_conflict(source: str, picks: list[int]) -> None:
    func = function_named(parse_module(source, verify=True))
    buffers = {s.op: s.buffer() for s in analyze_function(func).storages}
    trace = _execute(func, itertools.cycle(picks))
    for a, b in itertools.combinations(sorted(trace.storage_of), 2):
        op_a, op_b = trace.storage_of[a], trace.storage_of[b]
        if op_a is not op_b and trace.first[a] <= trace.last[b] and trace.first[b] <= trace.last[a]:
            assert buffers[op_a].conflicts_with(buffers[op_b]), source


@settings(PROPERTY_SETTINGS, max_examples=examples(200))
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
    func = function_named(parse_module(source, verify=True))
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
