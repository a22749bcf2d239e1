"""Random programs in the memory form, for the lifetime and plan-check tests.

``programs`` draws straight-line code with nested ``scf.if`` / ``scf.for``,
results and iteration arguments carrying tensors, views and escapes;
``cfg_programs`` draws ``cf`` CFGs (stretches, diamonds, loops);
``call_graph_programs`` draws several functions calling one another.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from memplan_testing import examples

TWO_INSTANCES = "two instances of one storage"
"""How the analysis refuses a storage with two live instances."""

RECURSIVE = """
func.func @r() {
  %s = memory.alloc_storage : !memory.storage<8>
  func.call @r() : () -> ()
  func.return
}
"""
"""A function that calls itself while holding a storage: the module analysis
refuses it (no static place serves every depth)."""

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


def function_named(module: ModuleOp, name: str = "main") -> FuncOp:
    """The ``func.func @name`` of ``module``."""
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(name)


PROPERTY_SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
"""The lifetime property tests' settings (each may raise ``max_examples``)."""
