"""memplan's op model: what the analyses know about the ops they meet.

One place for the control-flow and aliasing vocabulary, in MLIR's interface
terms (xDSL 0.74 has ``IsTerminator``, ``ReturnLike`` and memory-effect
traits but no RegionBranchOpInterface, LoopLikeOpInterface,
BranchOpInterface or ViewLikeOpInterface, so those are tables here, keyed by
op name so that unregistered ops are covered too):

- region-branching ops (``RegionBranchOpInterface``): whether their regions
  are exclusive (``scf.if``, ``scf.index_switch``), run once
  (``scf.execute_region``) or repeat (loops, ``LoopLikeOpInterface``), and
  which operands, block arguments, yielded values and results are tied
  (``loop_carried``, ``entry_successors``, ``terminator_successors``);
- terminators that yield to the parent op (``scf.yield``, ``scf.condition``:
  ``RegionBranchTerminatorOpInterface``) and branches to blocks (``cf``:
  ``BranchOpInterface``);
- view-like ops (``ViewLikeOpInterface``): the result aliases an operand;
- memory access the traits do not say: pointer escapes, stores of a
  reference, read-only users, the written operand of copies and stores.

Every analysis and pass asks this module; no other module names a
control-flow or view-like op by string (``tests/dialect/test_op_model.py`` checks).
Adding an op is one entry here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, Region, SSAValue
from xdsl.traits import MemoryFreeEffect

# --- Region-branching ops -------------------------------------------------


@dataclass(frozen=True)
class RegionBranching:
    """How the regions of a region-branching op run, per execution of the op."""

    exclusive: bool = False
    """At most one of its regions runs (storages in two of them never conflict)."""
    repeats: bool = False
    """Its regions may run more than once (a loop)."""
    parallel: bool = False
    """Several instances of a region may run at the same time."""


REGION_BRANCHING: dict[str, RegionBranching] = {
    "scf.if": RegionBranching(exclusive=True),
    "scf.index_switch": RegionBranching(exclusive=True),
    "scf.execute_region": RegionBranching(),
    # Its yields (affine.yield) are not modelled, so no branch separation is claimed.
    "affine.if": RegionBranching(),
    "memref.alloca_scope": RegionBranching(),
    "scf.for": RegionBranching(repeats=True),
    "scf.while": RegionBranching(repeats=True),
    "affine.for": RegionBranching(repeats=True),
    "scf.parallel": RegionBranching(repeats=True, parallel=True),
    "scf.forall": RegionBranching(repeats=True, parallel=True),
    "affine.parallel": RegionBranching(repeats=True, parallel=True),
}
"""Region-branching ops memplan knows. An op not listed has neither exclusive
regions nor carried values (a reference its terminator yields escapes when
the op has results that may hold one) and may run its regions in parallel
(``runs_one_instance_at_a_time`` is False)."""

YIELDING_TO_RESULTS: frozenset[str] = frozenset(
    {"scf.if", "scf.index_switch", "scf.execute_region"}
)
"""Ops whose regions run at most once and whose ``scf.yield`` operands
become the op's results (the region-branching ops modelled value by value,
besides the loops of ``loop_carried``)."""

FUNCTION_OPS: frozenset[str] = frozenset({"func.func"})
"""Ops whose body runs once per call (the function a value lives in)."""


def is_function(op: Operation) -> bool:
    """Is ``op`` a function (its body is the outermost region of a lifetime)?"""
    return op.name in FUNCTION_OPS


def has_exclusive_regions(op: Operation) -> bool:
    """Does at most one region of ``op`` run (``scf.if``, ``scf.index_switch``)?"""
    model = REGION_BRANCHING.get(op.name)
    return model is not None and model.exclusive


def is_loop(op: Operation) -> bool:
    """May the regions of ``op`` run more than once (a loop, sequential or parallel)?"""
    model = REGION_BRANCHING.get(op.name)
    return model is not None and model.repeats


def is_sequential_loop(op: Operation) -> bool:
    """Is ``op`` a loop whose iterations run one after another?"""
    model = REGION_BRANCHING.get(op.name)
    return model is not None and model.repeats and not model.parallel


def runs_one_instance_at_a_time(op: Operation) -> bool:
    """Do the regions of ``op`` run one instance at a time (no parallel copies)?

    An allocation nested only in such ops can take one static address.
    """
    model = REGION_BRANCHING.get(op.name)
    return model is not None and not model.parallel


@dataclass(frozen=True)
class RegionChoice:
    """A region-branching op that runs one of ``regions`` once (none when
    ``may_skip``); what its terminators yield becomes its results."""

    regions: Sequence[Region]
    may_skip: bool


def region_choice(op: Operation) -> RegionChoice | None:
    """``scf.if`` / ``scf.index_switch`` / ``scf.execute_region`` as a
    ``RegionChoice``; None for other ops."""
    if op.name not in YIELDING_TO_RESULTS:
        return None
    # An scf.if without an else region may run no region at all.
    may_skip = op.name == "scf.if" and op.regions[1].first_block is None
    return RegionChoice(op.regions, may_skip)


@dataclass(frozen=True)
class LoopCarried:
    """The values a sequential loop carries from one trip to the next.

    ``inits`` (operands) bind ``head`` (the block arguments of the first
    region) on entry; the terminator of the last region yields the next
    trip's ``head``. ``regions`` run in this order each trip. The loop's
    results are the last yielded values, or (``exits_at_condition``, an
    ``scf.while``) the operands of the ``scf.condition`` that ends the first
    region, which also bind the second region's arguments.
    """

    inits: Sequence[SSAValue]
    head: Sequence[SSAValue]
    regions: Sequence[Region]
    exits_at_condition: bool


def loop_carried(op: Operation) -> LoopCarried | None:
    """The carried values of an ``scf.for`` / ``scf.while``; None for other ops."""
    if op.name == "scf.for":
        block = op.regions[0].first_block
        assert block is not None
        # Operands: lower bound, upper bound, step, then the iteration inits;
        # the first block argument is the induction variable.
        return LoopCarried(op.operands[3:], block.args[1:], op.regions, False)
    if op.name == "scf.while":
        block = op.regions[0].first_block
        assert block is not None
        return LoopCarried(op.operands, block.args, op.regions, True)
    return None


def entry_successors(op: Operation, index: int) -> tuple[SSAValue, ...] | None:
    """Values operand ``index`` of a loop flows into when the loop starts:
    the head argument and, unless the results come from a condition, the
    result tied to it; ``()`` for an operand that carries nothing (a bound).
    None when ``op`` is not a loop with carried values."""
    carried = loop_carried(op)
    if carried is None:
        return None
    position = index - (len(op.operands) - len(carried.inits))
    if position < 0:
        return ()
    if carried.exits_at_condition:
        return (carried.head[position],)
    return (carried.head[position], op.results[position])


REGION_TERMINATORS: frozenset[str] = frozenset({"scf.yield", "scf.condition"})
"""Terminators that hand values to their parent op or its next region."""


def is_region_terminator(op: Operation) -> bool:
    """Is ``op`` a terminator that yields values to its parent region-branching op?"""
    return op.name in REGION_TERMINATORS


def successor_operands(terminator: Operation) -> Sequence[SSAValue]:
    """The operands a region terminator forwards (``scf.condition``: all
    but the condition)."""
    if terminator.name == "scf.condition":
        return terminator.operands[1:]
    return terminator.operands


def terminator_successors(op: Operation, index: int) -> tuple[SSAValue, ...] | None:
    """Values operand ``index`` of a region terminator flows into: the
    parent's result and, in a loop, the next region's or trip's argument;
    ``()`` for the condition of ``scf.condition``. None when not modelled."""
    parent = op.parent_op()
    if parent is None:
        return None
    carried = loop_carried(parent)
    if op.name == "scf.condition" and carried is not None and carried.exits_at_condition:
        if index == 0:
            return ()
        after = carried.regions[1].first_block
        assert after is not None
        return (after.args[index - 1], parent.results[index - 1])
    if op.name != "scf.yield":
        return None
    if carried is not None:
        if carried.exits_at_condition:
            return (carried.head[index],)
        return (carried.head[index], parent.results[index])
    if parent.name in YIELDING_TO_RESULTS:
        return (parent.results[index],)
    return None


def yields_to_next_iteration(op: Operation) -> bool:
    """Does ``op`` (an ``scf.yield`` in a loop) carry values to the loop's next trip?"""
    parent = op.parent_op()
    return op.name == "scf.yield" and parent is not None and is_loop(parent)


# --- Branches to blocks and returns -----------------------------------------

BRANCH_OPS: frozenset[str] = frozenset({"cf.br", "cf.cond_br", "cf.switch"})
"""Branches whose operands are modelled (``BranchOpInterface``)."""


def branch_successors(op: Operation, index: int) -> tuple[SSAValue, ...] | None:
    """Block argument fed by operand ``index`` of a ``cf`` branch; ``()``
    for a condition or flag. None when the branch is not modelled."""
    if op.name == "cf.br":
        return (op.successors[0].args[index],)
    if op.name == "cf.cond_br":
        if index == 0:
            return ()
        then_count = len(op.successors[0].args)
        if index - 1 < then_count:
            return (op.successors[0].args[index - 1],)
        return (op.successors[1].args[index - 1 - then_count],)
    if op.name == "cf.switch":
        if index == 0:
            return ()
        default_count = len(op.successors[0].args)
        position = index - 1
        if position < default_count:
            return (op.successors[0].args[position],)
        position -= default_count
        for case_block in op.successors[1:]:
            if position < len(case_block.args):
                return (case_block.args[position],)
            position -= len(case_block.args)
    return None


RETURN_OPS: frozenset[str] = frozenset({"func.return"})
"""Terminators that hand values back to the function's caller."""


def returns_from_function(op: Operation) -> bool:
    """Does ``op`` return its operands to the caller (``func.return``)?"""
    return op.name in RETURN_OPS


def is_control_flow(op: Operation) -> bool:
    """Is ``op`` a structured or unstructured control-flow op (``scf``,
    ``cf``) or a return, which moves values but never writes bytes itself?"""
    return op.name.startswith(("scf.", "cf.")) or op.name in RETURN_OPS


# --- View-like ops ------------------------------------------------------------

VIEW_LIKE_OPS: frozenset[str] = frozenset(
    {
        "memref.view",
        "memref.subview",
        "memref.reinterpret_cast",
        "memref.cast",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.reshape",
        "memref.memory_space_cast",
        "memref.transpose",
        "memory.alloc_tensor",
    }
)
"""Ops whose result views the memory of their first operand (``memory.alloc_tensor``: a tensor of its storage)."""


def is_view_of_operand(op: Operation, operand_index: int) -> bool:
    """True when ``op``'s results alias its operand number ``operand_index``."""
    return op.name in VIEW_LIKE_OPS and operand_index == 0


# --- Memory access the traits do not say ---------------------------------------

POINTER_ESCAPE_OPS: frozenset[str] = frozenset(
    {"memref.extract_aligned_pointer_as_index", "memref.extract_strided_metadata"}
)
"""Ops that turn a memref into a raw address no analysis follows."""

STORE_OPS: frozenset[str] = frozenset({"memref.store", "llvm.store"})
"""Stores: operand 0 is the stored value (a reference stored escapes), operand 1 the target."""

COPY_OPS: frozenset[str] = frozenset({"memref.copy"})
"""Copies: operand 0 is read, operand 1 written."""

READ_ONLY_USERS: frozenset[str] = frozenset(
    {"memref.load", "memref.dim", "memref.rank", "memory.kill", "memory.alloc_tensor"}
)
"""Ops that never write the bytes of their memref operands."""

METADATA_READERS: frozenset[str] = frozenset({"memref.dim", "memref.rank"})
"""Ops that read a memref's shape, not its bytes."""

PLAIN_READERS: frozenset[str] = frozenset(
    {"memory.invoke", "memory.alloc_tensor", "memref.load", "memref.copy"}
)
"""Ops that use an operand's bytes where they are and hand no reference on."""

FOREIGN_FREE_OPS: frozenset[str] = frozenset({"bufferization.dealloc", "gpu.dealloc"})
"""Frees that xDSL may not know (parsed as unregistered ops)."""


def takes_address(op: Operation) -> bool:
    """Does ``op`` turn a memref into a raw address (a pointer escape)?"""
    return op.name in POINTER_ESCAPE_OPS


def stores_operand(op: Operation, index: int) -> bool:
    """Does ``op`` store operand ``index`` itself (a reference) into memory?"""
    return op.name in STORE_OPS and index == 0


def writes_operand(op: Operation, index: int) -> bool | None:
    """Does a store or copy write operand ``index``? None for other ops."""
    if op.name in STORE_OPS or op.name in COPY_OPS:
        return index == 1
    return None


def only_reads(op: Operation) -> bool:
    """Does ``op`` never write the bytes of its memref operands?"""
    return op.name in READ_ONLY_USERS


def reads_metadata_only(op: Operation) -> bool:
    """Does ``op`` read a memref's shape, not its bytes?"""
    return op.name in METADATA_READERS


def is_plain_reader(op: Operation) -> bool:
    """Does ``op`` use its operands' bytes in place, handing no reference on?"""
    return op.name in PLAIN_READERS


def frees_operands(op: Operation) -> bool:
    """Does ``op`` release the memory of its operands?"""
    return op.has_trait(MemoryFreeEffect) or op.name in FOREIGN_FREE_OPS


# --- View closures ---------------------------------------------------------------


def direct_views(value: SSAValue) -> Iterator[SSAValue]:
    """Results of ops that view ``value`` directly (one step)."""
    for use in value.uses:
        if is_view_of_operand(use.operation, use.index):
            yield from use.operation.results


def transitive_views(value: SSAValue) -> list[SSAValue]:
    """``value`` and every value viewing it, in discovery order."""
    found = [value]
    seen = {value}
    index = 0
    while index < len(found):
        for alias in direct_views(found[index]):
            if alias not in seen:
                seen.add(alias)
                found.append(alias)
        index += 1
    return found


def underlying_root(value: SSAValue) -> SSAValue:
    """Walk view-like ops and ``alloc_tensor`` back to the value they view."""
    while isinstance(value.owner, Operation) and value.owner.operands:
        owner = value.owner
        if not is_view_of_operand(owner, 0):
            break
        value = owner.operands[0]
    return value
