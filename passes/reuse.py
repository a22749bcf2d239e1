"""``reuse``: whole-storage slot reuse (TVM GraphPlanMemory, Relax StaticPlanBlockMemory).

GraphPlanMemory walks a function in op order keeping a free list of storage
tokens per device: a token whose reference count drops to zero goes back on
the list, and a later request of ``n`` bytes takes a free token whose size
lies in ``[n / match_range, n * match_range]`` (the smallest one of at least
``n`` bytes, else the largest smaller one, grown to ``n``) or opens a new one.
Here the tokens are *slots*, a request is a static ``memory.alloc_storage``,
and "dies" is the end of its lifetime from ``passes.analysis``.

``assign_slots`` is the rule on planning ``Buffer``s (no IR, in
``passes/planning/algorithms/slot_reuse.py``); ``plan_function`` applies it
to a function's storages and finds where each slot goes in the IR;
``ReusePass`` rewrites the IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from memplan.dialect.ops import AllocStorageOp, KillOp
from memplan.dialect.regions import ancestor_in_region
from memplan.passes.analysis import FunctionLifetimes, StorageLifetime, analyze_function
from memplan.passes.analysis.forms import warn_value_semantic
from memplan.passes.pass_options import check_options
from memplan.passes.planning.algorithms.slot_reuse import assign_slots
from memplan.passes.storage_rewrites import (
    is_terminator,
    new_storage_op,
    retarget_storage,
    storage_only_feeds_tensors,
)

# ---------------------------------------------------------------------------
# Planning on a function (no IR changes)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotPlan:
    """One slot of a function: its members, its size and where it goes in the IR.

    ``members`` are in request order (the order they take the slot).
    ``home`` is the block holding the slot's ``alloc_storage``: the deepest
    block enclosing every member and every use of every alias of them;
    ``before`` is the op it is inserted before (``None``: at the start of
    ``home``, the function's entry block when the members span its blocks).
    ``kill_after`` is where the slot is killed (``None``: no kill).
    """

    members: tuple[StorageLifetime, ...]
    size: int
    alignment: int
    device: str
    candidates: tuple[str, ...]
    home: Block
    before: Operation | None
    kill_after: Operation | None

    @property
    def member_bytes(self) -> int:
        return sum(m.size or 0 for m in self.members)


def reusable(storage: StorageLifetime) -> bool:
    """May ``storage`` take part in slot reuse (static, unpinned, only carved or killed)?

    A storage carried to the next iteration of the loop allocating it is
    left alone (two instances live at once; ``usmp`` refuses it).
    """
    return (
        not storage.is_dynamic
        and storage.pinned is None
        and not storage.carried_across_iterations
        and storage_only_feeds_tensors(storage)
    )


def _ancestor_blocks(op: Operation, func: Operation) -> list[Block]:
    """The block of ``op``, the block of its parent op, ... up to ``func``'s body."""
    blocks: list[Block] = []
    current: Operation | None = op
    while current is not None and current is not func:
        block = current.parent_block()
        if block is None:
            break
        blocks.append(block)
        current = block.parent_op()
    return blocks


def _footprint(members: Sequence[StorageLifetime]) -> list[Operation]:
    """Every op the slot must dominate: the members' allocations and all alias uses."""
    ops: list[Operation] = []
    for member in members:
        ops.append(member.alloc)
        ops.extend(use.operation for use, _ in member.uses)
    return ops


def _home(
    members: Sequence[StorageLifetime], lifetimes: FunctionLifetimes
) -> tuple[Block, Operation | None, Operation | None]:
    """Where the slot is allocated and killed: (block, insert before, kill after)."""
    ops = _footprint(members)
    index = lifetimes.numbering.index
    for block in _ancestor_blocks(members[0].alloc, lifetimes.func):
        region = block.parent
        assert region is not None
        anchors = [ancestor_in_region(op, region) for op in ops]
        if any(a is None or a.parent_block() is not block for a in anchors):
            continue
        placed = [a for a in anchors if a is not None]
        allocs = [ancestor_in_region(m.alloc, region) for m in members]
        first = min((a for a in allocs if a is not None), key=lambda a: index[a])
        latest = max(placed, key=lambda a: index[a])
        killed = any(m.killed for m in members) and not any(m.escapes for m in members)
        kill_after = latest if killed and not is_terminator(latest) else None
        return block, first, kill_after
    # The members span several blocks of the function body: only its entry
    # block dominates them all, and no single point follows every use.
    entry = lifetimes.func.body.blocks[0]
    return entry, None, None


def plan_function(lifetimes: FunctionLifetimes, match_range: int = 16) -> list[SlotPlan]:
    """The slots ``reuse`` makes in one function (only slots of two or more members)."""
    storages = [s for s in lifetimes.storages if reusable(s)]
    buffers = [s.buffer(pin=False) for s in storages]
    plans: list[SlotPlan] = []
    for slot in assign_slots(buffers, match_range):
        if len(slot) < 2:
            continue
        members = [storages[i] for i in slot]
        home, before, kill_after = _home(members, lifetimes)
        plans.append(
            SlotPlan(
                members=tuple(members),
                size=max(m.size or 0 for m in members),
                alignment=max(m.alignment for m in members),
                device=members[0].device,
                candidates=members[0].candidates,
                home=home,
                before=before,
                kill_after=kill_after,
            )
        )
    return plans


def apply_plan(plan: SlotPlan) -> AllocStorageOp:
    """Rewrite the IR for one slot; returns its ``alloc_storage``."""
    slot = new_storage_op(plan.size, plan.alignment, plan.device, plan.candidates, "slot")
    point = (
        InsertPoint.before(plan.before)
        if plan.before is not None
        else InsertPoint.at_start(plan.home)
    )
    Rewriter.insert_op(slot, point)
    if plan.kill_after is not None:
        Rewriter.insert_op(KillOp(slot.storage), InsertPoint.after(plan.kill_after))
    for member in plan.members:
        retarget_storage(member.alloc, slot.storage, 0)
        Rewriter.erase_op(member.alloc)
    return slot


@dataclass(frozen=True)
class ReusePass(ModulePass):
    """Hand the storage of a dead value to a later allocation (whole-storage slot reuse).

    TVM GraphPlanMemory / Relax StaticPlanBlockMemory. Each function is
    walked in order of the storages' lifetime starts (`passes.analysis`;
    ties in IR order). When a storage's lifetime ends, its slot returns to
    a free list of its device (and candidate pools: only identical `pools
    [...]` lists share). A static request of `n` bytes takes a free slot
    whose size is in `[n / match-range, n * match-range]`: the smallest
    one of at least `n` bytes, else the largest smaller one, grown to `n`
    (ties: the slot opened first); otherwise it opens a new slot.

    Free means: no member of the slot conflicts with the request, by the
    analysis's definition: every member's lifetime has ended, or it lives in
    another region of one `scf.if` (so the two branches' results can share
    a slot). Lifetimes are half-open `[alloc, end)` and an op's output
    storage is allocated before the op, so an op's outputs never take its
    own inputs' slots. Loops need nothing special: a storage that outlives
    an iteration is live from the loop's start. Function arguments and
    constants are not storages (they never enter a free list); an escaping
    storage (returned, stored) may take a slot but never gives it back.

    Output: one `memory.alloc_storage` per slot of two or more members: its
    size is the largest member's, its alignment the largest member
    alignment; each member's tensors are re-pointed at it with their offsets
    unchanged (every member starts at offset 0 of its slot), with `align`
    where the slot aligns a tensor more than its own storage did (as in
    `coalesce`), and the members are erased. The slot's allocation must
    dominate every member and every use of a value aliasing one: it goes in
    the deepest block enclosing all of them, right before the first member
    (or the op holding it); when the members span several blocks of a
    function body (`cf` branches), it is hoisted to the start of the entry
    block. The members' own kills are dropped; the slot is killed right
    after the last op of its block that uses a member (after
    `insert-kills`: the last member's kill) when some member had a kill and
    none escapes; a hoisted slot is not killed.

    Left alone: dynamic-size storages, storages pinned to a pool, and
    storages whose storage value is used by anything but
    `alloc_tensor`/`kill`.

    Options:
    - `match-range` (int, default 16): the size ratio a reused slot may
      differ by; 0 disables reuse.
    """

    name = "reuse"

    match_range: int = 16

    def __post_init__(self) -> None:
        check_options(self, non_negative=("match_range",))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_value_semantic(op, self.name)
        functions = [f for f in op.walk() if isinstance(f, FuncOp) and not f.is_declaration]
        for func in functions:
            lifetimes = analyze_function(func, pools=())
            for plan in plan_function(lifetimes, self.match_range):
                apply_plan(plan)
