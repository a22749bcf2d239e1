"""The op model (``memdialect/op_model.py``): its answers on parsed IR, and
that no other module names a control-flow or aliasing op by string."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from memplan.dialect import op_model
from memplan_testing import parse_module

ROOT = Path(__file__).resolve().parents[2]

MODELLED_NAMES: frozenset[str] = frozenset(
    {
        *op_model.REGION_BRANCHING,
        *op_model.YIELDING_TO_RESULTS,
        *op_model.FUNCTION_OPS,
        *op_model.REGION_TERMINATORS,
        *op_model.BRANCH_OPS,
        *op_model.RETURN_OPS,
        *op_model.VIEW_LIKE_OPS,
        *op_model.POINTER_ESCAPE_OPS,
        *op_model.STORE_OPS,
        *op_model.COPY_OPS,
        *op_model.READ_ONLY_USERS,
        *op_model.METADATA_READERS,
        *op_model.PLAIN_READERS,
        *op_model.FOREIGN_FREE_OPS,
    }
)
CONTROL_FLOW_NAME = re.compile(r"^(scf|cf|affine)\.[a-z_.]*$")

EXEMPT = {
    # The op model itself.
    "memdialect/op_model.py",
}
EXEMPT_FOLDERS = (
    # Importers that emit ops (ONNX, TFLite) build scf/cf ops by class.
    "tools/frontends/",
)
ISINSTANCE_ALLOWED = {
    # manifest-alloc rewrites the tensors of scf.if results and scf.for
    # carried values to memrefs, op by op (it emits those ops).
    "passes/manifest_alloc.py",
    # manifest-alloc's input check: the ops it can rewrite (above).
    "passes/analysis/value_semantic.py",
}


def _sources() -> list[Path]:
    found: list[Path] = []
    for folder in ("memdialect", "passes", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in EXEMPT or relative.startswith(EXEMPT_FOLDERS):
                continue
            found.append(path)
    return found


def _op_name_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants equal to an op name, outside f-strings, docstrings and
    an op class's own ``name = "..."``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in ast.walk(node))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign)
                    and [t.id for t in statement.targets if isinstance(t, ast.Name)] == ["name"]
                    and isinstance(statement.value, ast.Constant)
                ):
                    skipped.add(id(statement.value))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
            and (node.value in MODELLED_NAMES or CONTROL_FLOW_NAME.match(node.value))
        ):
            found.append((node.lineno, node.value))
    return found


def _control_flow_isinstance(tree: ast.AST) -> list[tuple[int, str]]:
    """``isinstance(x, scf.IfOp)``-style tests of scf / cf / affine op classes."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            continue
        for part in ast.walk(node.args[1]):
            if (
                isinstance(part, ast.Attribute)
                and isinstance(part.value, ast.Name)
                and part.value.id in ("scf", "cf", "affine")
            ):
                found.append((node.lineno, f"{part.value.id}.{part.attr}"))
    return found


def test_no_module_but_the_op_model_names_control_flow_or_view_ops() -> None:
    offences: list[str] = []
    for path in _sources():
        relative = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), filename=relative)
        offences += [f"{relative}:{line}: {name!r}" for line, name in _op_name_literals(tree)]
        if relative not in ISINSTANCE_ALLOWED:
            offences += [
                f"{relative}:{line}: isinstance(..., {name})"
                for line, name in _control_flow_isinstance(tree)
            ]
    assert offences == [], "ask memdialect/op_model.py instead:\n" + "\n".join(offences)


def test_the_scan_finds_a_name_test() -> None:
    """The scan is not vacuous: each kind of test it forbids is found."""
    tree = ast.parse(
        'def f(op):\n    """Mentions "scf.if" in prose."""\n'
        '    if op.name in ("scf.if", "memref.subview"):\n'
        '        return f"{op.name} is not scf.for"\n'
        "    return isinstance(op, scf.ForOp | cf.BranchOp)\n"
    )
    assert _op_name_literals(tree) == [(3, "scf.if"), (3, "memref.subview")]
    assert _control_flow_isinstance(tree) == [(5, "scf.ForOp"), (5, "cf.BranchOp")]


def _first(module: ModuleOp, name: str) -> Operation:
    return next(op for op in module.walk() if op.name == name)


PROGRAM = """
func.func @f(%m: memref<4xf32>, %c: i1, %n: index) -> memref<4xf32> {
  %lb = arith.constant 0 : index
  %r = scf.if %c -> (memref<4xf32>) {
    scf.yield %m : memref<4xf32>
  } else {
    scf.yield %m : memref<4xf32>
  }
  %l = scf.for %i = %lb to %n step %n iter_args(%it = %r) -> (memref<4xf32>) {
    %v = "memref.cast"(%it) : (memref<4xf32>) -> memref<?xf32>
    scf.yield %it : memref<4xf32>
  }
  %w = scf.while (%a = %l) : (memref<4xf32>) -> memref<4xf32> {
    scf.condition(%c) %a : memref<4xf32>
  } do {
  ^bb0(%b: memref<4xf32>):
    scf.yield %b : memref<4xf32>
  }
  func.return %w : memref<4xf32>
}
"""


def test_region_branching_queries() -> None:
    module = parse_module(PROGRAM)
    if_op, for_op, while_op = (_first(module, n) for n in ("scf.if", "scf.for", "scf.while"))
    assert op_model.has_exclusive_regions(if_op) and not op_model.has_exclusive_regions(for_op)
    assert op_model.is_loop(for_op) and op_model.is_sequential_loop(while_op)
    assert not op_model.is_loop(if_op) and op_model.runs_one_instance_at_a_time(if_op)
    choice = op_model.region_choice(if_op)
    assert choice is not None and not choice.may_skip and len(choice.regions) == 2
    assert op_model.region_choice(for_op) is None

    carried = op_model.loop_carried(for_op)
    assert carried is not None and not carried.exits_at_condition
    assert list(carried.inits) == [if_op.results[0]]
    body = for_op.regions[0].blocks[0]
    assert list(carried.head) == [body.args[1]]
    # A bound carries nothing; the init flows to the head argument and the result.
    assert op_model.entry_successors(for_op, 0) == ()
    assert op_model.entry_successors(for_op, 3) == (body.args[1], for_op.results[0])
    assert op_model.entry_successors(if_op, 0) is None

    for_yield = body.last_op
    assert for_yield is not None and op_model.yields_to_next_iteration(for_yield)
    assert op_model.terminator_successors(for_yield, 0) == (body.args[1], for_op.results[0])
    if_yield = if_op.regions[0].blocks[0].last_op
    assert if_yield is not None and not op_model.yields_to_next_iteration(if_yield)
    assert op_model.terminator_successors(if_yield, 0) == (if_op.results[0],)

    condition = _first(module, "scf.condition")
    after = while_op.regions[1].blocks[0]
    assert op_model.terminator_successors(condition, 0) == ()
    assert op_model.terminator_successors(condition, 1) == (after.args[0], while_op.results[0])
    assert list(op_model.successor_operands(condition)) == [condition.operands[1]]
    while_yield = after.last_op
    before = while_op.regions[0].blocks[0]
    assert while_yield is not None
    assert op_model.terminator_successors(while_yield, 0) == (before.args[0],)
    assert op_model.entry_successors(while_op, 0) == (before.args[0],)


def test_views_and_returns() -> None:
    module = parse_module(PROGRAM)
    cast = _first(module, "memref.cast")
    body_arg = cast.operands[0]
    assert op_model.is_view_of_operand(cast, 0)
    assert op_model.transitive_views(body_arg) == [body_arg, cast.results[0]]
    assert op_model.underlying_root(cast.results[0]) is body_arg
    assert op_model.returns_from_function(_first(module, "func.return"))
    assert op_model.is_function(_first(module, "func.func"))
