"""``coalesce``: one storage per control-free region and device (Relay VM StorageCoalesce).

TVM's Relay VM memory planner (PR 5144, "part 1") grouped the allocations of
each basic-block-like region into one storage, laid end to end; the promised
"part 2", overlapping allocations that are never live together, never
shipped. This pass does both: ``overlap=false`` is part 1, ``overlap=true``
(the default) is part 2, with the offsets chosen by ``passes.planning``.

``plan_function`` computes the plan of one function without touching the IR
(the benchmark and the tests call it); ``CoalescePass`` applies it. The
helpers ``storage_only_feeds_tensors`` and ``retarget_storage`` are shared
with ``reuse``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from memplan.dialect.diagnostics import emit_remark
from memplan.dialect.ops import (
    AllocStorageOp,
    KillOp,
)
from memplan.dialect.regions import ancestor_in_region
from memplan.dialect.types import MAX_BYTES
from memplan.passes.analysis import FunctionLifetimes, StorageLifetime, analyze_function
from memplan.passes.analysis.forms import warn_value_semantic
from memplan.passes.pass_options import PlanningPassOptions, check_options
from memplan.passes.planning.algorithms import (
    Budget,
    PlanOptions,
    solve,
)
from memplan.passes.planning.algorithms.end_to_end import end_to_end
from memplan.passes.planning.bounds import buffers_lower_bound
from memplan.passes.planning.model import Buffer, Pool, Problem
from memplan.passes.storage_rewrites import (
    is_terminator,
    new_storage_op,
    retarget_storage,
    storage_only_feeds_tensors,
)

REGION_POOL = "region"
"""Name of the one unbounded pool a region's members are planned into."""


# ---------------------------------------------------------------------------
# Planning (no IR changes)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RegionPlan:
    """How one group of storages of one region becomes one storage.

    ``members`` are in IR order; ``offsets[i]`` is where member ``i`` starts
    in the merged storage of ``size`` bytes and ``alignment`` (the largest
    member alignment). ``lower_bound`` is the peak of live member bytes
    (``passes.planning.bounds``); ``status`` is ``end-to-end`` for
    ``overlap=false`` or the planning ``Solution.status`` (``optimal``: the
    size is proven minimal). ``kill_after`` is the op after which the merged
    storage is killed (None: no kill).
    """

    block: Block
    members: tuple[StorageLifetime, ...]
    offsets: tuple[int, ...]
    size: int
    alignment: int
    device: str
    candidates: tuple[str, ...]
    lower_bound: int
    status: str
    kill_after: Operation | None

    @property
    def member_bytes(self) -> int:
        """The members' sizes added up (what the region cost before the pass)."""
        return sum(m.size or 0 for m in self.members)


def unmergeable_reason(storage: StorageLifetime) -> str | None:
    """Why ``storage`` cannot join its block's merged storage, or None if it can."""
    if storage.is_dynamic:
        return "its size is dynamic"
    if storage.pinned is not None:
        return "it is pinned to a pool"
    if storage.escapes:
        return "it escapes the function"
    if storage.carried_across_iterations:
        # Left alone: usmp refuses it with the full diagnostic.
        return "it is carried to the next iteration of the loop that allocates it"
    if storage.leaves_region:
        return "it is used outside the region that allocates it"
    if not storage_only_feeds_tensors(storage):
        return "the storage value flows into an op other than alloc_tensor or kill"
    block = storage.alloc.parent_block()
    region = storage.alloc.parent_region()
    assert block is not None and region is not None
    for use, _ in storage.uses:
        anchor = ancestor_in_region(use.operation, region)
        if anchor is None or anchor.parent_block() is not block:
            return "it is used in another block"
    return None


def _latest_anchor(members: Sequence[StorageLifetime], lifetimes: FunctionLifetimes) -> Operation:
    """The last op of the members' block holding a use of a member or of an alias."""
    index = lifetimes.numbering.index
    latest: Operation = members[0].alloc
    for member in members:
        region = member.alloc.parent_region()
        assert region is not None
        for use, _ in member.uses:
            anchor = ancestor_in_region(use.operation, region)
            assert anchor is not None
            if index[anchor] > index[latest]:
                latest = anchor
    return latest


def _segments(lifetimes: FunctionLifetimes) -> list[list[StorageLifetime]]:
    """Storages of each block, cut at every dynamic-size storage (TVM's rule), in IR order."""
    by_block: dict[Block, list[list[StorageLifetime]]] = {}
    for storage in lifetimes.storages:
        block = storage.alloc.parent_block()
        assert block is not None
        segments = by_block.setdefault(block, [[]])
        if storage.is_dynamic:
            segments.append([])
            continue
        segments[-1].append(storage)
    return [segment for segments in by_block.values() for segment in segments if segment]


def _member_buffer(member: StorageLifetime) -> Buffer:
    # One unbounded pool per region: candidates and pins do not apply inside it.
    return replace(member.buffer(pin=False), candidates=(), pinned_offset=None)


def plan_group(
    members: Sequence[StorageLifetime],
    lifetimes: FunctionLifetimes,
    *,
    overlap: bool,
    algorithm: str,
    options: PlanOptions,
    budget: Budget | None = None,
) -> RegionPlan | None:
    """The merged storage for ``members`` (same block, device and candidates).

    ``None`` when ``overlap`` is set and even the best layout found, alignment
    padding included, is bigger than the members' sizes added up, or when
    the merged storage would exceed 2^63-1 bytes. With ``budget``, the
    search runs within what is left of it and is charged to it.
    """
    buffers = [_member_buffer(member) for member in members]
    lower_bound = buffers_lower_bound(buffers)
    offsets, size = end_to_end(buffers)
    status = "end-to-end"
    if overlap:
        problem = Problem(tuple(buffers), (Pool(REGION_POOL),))
        if budget is not None:
            options = options.within(budget)
        solution = solve(problem, algorithm, options)
        if budget is not None:
            budget.absorb(solution.stats)
        planned = solution.peak(problem)
        # Never worse than part 1 (a heuristic with odd alignments could be).
        if not solution.unplaced(problem) and planned <= size:
            offsets = [solution.placements[b.id].offset for b in buffers]
            size = planned
            status = solution.status
        if size > sum(b.size for b in buffers):
            # Alignment padding would make the merged storage bigger than the
            # members side by side: not worth it.
            return None
    if size > MAX_BYTES:
        return None  # no storage type holds it: usmp reports the pool instead
    killed = any(member.killed for member in members)
    latest = _latest_anchor(members, lifetimes)
    block = members[0].alloc.parent_block()
    assert block is not None
    return RegionPlan(
        block=block,
        members=tuple(members),
        offsets=tuple(offsets),
        size=size,
        alignment=max(member.alignment for member in members),
        device=members[0].device,
        candidates=members[0].candidates,
        lower_bound=lower_bound,
        status=status,
        kill_after=latest if killed and not is_terminator(latest) else None,
    )


def merge_groups(lifetimes: FunctionLifetimes) -> list[list[StorageLifetime]]:
    """The groups of storages ``coalesce`` considers merging, in IR order.

    One group per piece of a block (cut at dynamic-size storages), device
    and candidate list, of at least two mergeable storages.
    """
    result: list[list[StorageLifetime]] = []
    for segment in _segments(lifetimes):
        groups: dict[tuple[str, tuple[str, ...]], list[StorageLifetime]] = {}
        for storage in segment:
            if unmergeable_reason(storage) is None:
                groups.setdefault((storage.device, storage.candidates), []).append(storage)
        result.extend(members for members in groups.values() if len(members) >= 2)
    return result


def plan_function(
    lifetimes: FunctionLifetimes,
    *,
    overlap: bool = True,
    algorithm: str = "auto",
    options: PlanOptions | None = None,
) -> list[RegionPlan]:
    """Every merge ``coalesce`` makes in one function, in IR order (the IR is not changed).

    Each group is planned with ``options`` (its ``budget`` per group).
    """
    options = options or PlanOptions()
    plans = [
        plan_group(members, lifetimes, overlap=overlap, algorithm=algorithm, options=options)
        for members in merge_groups(lifetimes)
    ]
    return [plan for plan in plans if plan is not None]


# ---------------------------------------------------------------------------
# Rewriting
# ---------------------------------------------------------------------------


def apply_plan(plan: RegionPlan) -> AllocStorageOp:
    """Rewrite the IR for one ``RegionPlan``; returns the merged ``alloc_storage``."""
    first = plan.members[0].alloc
    # Named after the first tensor it holds, so that reports and headers
    # name it by what it holds.
    tensors = [t.value.name_hint for member in plan.members for t in member.tensors]
    name = next((f"{hint}_storage" for hint in tensors if hint), "region")
    merged = new_storage_op(plan.size, plan.alignment, plan.device, plan.candidates, name)
    Rewriter.insert_op(merged, InsertPoint.before(first))
    if plan.kill_after is not None:
        Rewriter.insert_op(KillOp(merged.storage), InsertPoint.after(plan.kill_after))
    for member, offset in zip(plan.members, plan.offsets):
        retarget_storage(member.alloc, merged.storage, offset)
        Rewriter.erase_op(member.alloc)
    return merged


@dataclass(frozen=True)
class CoalescePass(PlanningPassOptions, ModulePass):
    """Merge the static storages of each control-free region into one storage per device.

    Relay VM StorageCoalesce (TVM PR 5144), with its promised part 2.

    Regions: every block of every function is a region: the function's
    blocks, each branch of an `scf.if`, each loop body. Within a block the
    storages are taken in IR order; a dynamic-size storage
    (`!memory.storage<?>`) is never merged and, as in TVM, cuts the block:
    the storages before it and after it are merged separately (whatever
    their device). The storages of one piece are grouped by device and by
    candidate pools (`pools [...]`, identical lists only, so that the merged
    storage keeps the same candidates), and every group of two or more
    becomes one `memory.alloc_storage`, named after the first tensor it
    holds (`%<tensor>_storage`, as reports and C headers name it too):

    - its size covers the members at their offsets, its alignment is the
      largest member alignment, and every member sits at a multiple of its
      own alignment (TVM asserted equal alignments; mixed ones are fine);
    - it is allocated where the first member was (which dominates the other
      members and all their uses: they are in the same block, and only
      storages used in that block are merged);
    - each member's tensors are re-pointed at it: a static `alloc_tensor`
      offset becomes old offset + the member's offset, a dynamic one gets an
      `arith.addi`; a tensor at a static offset that the merged storage
      aligns more than its own storage did (a member of alignment 16 at
      offset 0 of a 128-aligned storage) gets `align` with the alignment it
      had (unless it has one already), so that `usmp`, splitting the merged
      storage, aligns it no more than before: `coalesce` then `usmp` costs no
      memory over `usmp` alone (recorded only then: with storages of one
      alignment no tensor gets `align`);
    - the members' own kills are dropped and, if any member had one, the
      merged storage is killed right after the last op of the block that
      uses a member or a value aliasing it (the last member kill, after
      `insert-kills`), so no use follows the kill.

    Placement: with `overlap=false` the members are laid end to end in IR
    order (TVM part 1). With `overlap=true` (part 2) members whose lifetimes
    (`passes.analysis`) never conflict may share bytes: the offsets come
    from `passes.planning` (`algorithm`, default `auto`: greedy, then the
    exact search within the work budget), so the merged size equals the
    region's lower bound (its peak of live member bytes) whenever the exact
    search reaches it within its budget. The searches stop on a count of
    work, not on a clock: the output is the same on every machine at any
    load, unless an explicit `timeout` cuts a search short (the pass then
    says so in a remark). A plan is never bigger than the end-to-end
    layout (if a heuristic's were, the end-to-end layout is kept).

    Alignment padding: laid end to end, a member starts at the next multiple
    of its alignment, so part 1 may cost a few bytes more than the members
    side by side (at most each member rounded up to the largest alignment;
    TVM's part 1 rounded every member the same way). With `overlap=true` the
    total never grows: a group whose best layout is still bigger than its
    members' sizes added up is left as it is.

    Left alone: dynamic-size storages; storages pinned to a pool;
    storages that escape the function, are used outside their block
    (another `cf` block, or yielded out of an `scf.if`/loop region), or
    whose storage value is used by anything but `alloc_tensor`/`kill`; and
    groups of a single storage (nothing to merge).

    Options:
    - `overlap` (bool, default true): let non-conflicting members share bytes.
    - `algorithm` (default `auto`): the planning algorithm for `overlap=true`.
    - `budget` (integer, default 60000): search nodes of the whole pass (a
      greedy placement costs one per 4 buffers), shared evenly by the groups
      still to plan (the greedy stage always runs, so `budget=0` gives
      greedy plans).
    - `timeout` (seconds, no default): also stop the searches after this
      much wall-clock time, shared like the budget (an opt-in; the plan then
      depends on machine speed and load; `timeout=0` gives greedy plans).
    - `seed`, `iterations`, `minimize`, `exact-max-buffers`: the other knobs
      of the algorithms, as in `usmp` (one option set:
      `passes.pass_options.PlanningPassOptions`).
    """

    name = "coalesce"

    overlap: bool = True

    def __post_init__(self) -> None:
        check_options(self, non_negative=self.NON_NEGATIVE)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_value_semantic(op, self.name)
        functions = [f for f in op.walk() if isinstance(f, FuncOp) and not f.is_declaration]
        work = [
            (lifetimes, merge_groups(lifetimes))
            for lifetimes in (analyze_function(func, pools=()) for func in functions)
        ]
        # One budget for the pass, shared evenly by the groups still to plan.
        budget = Budget(self.budget, self.timeout)
        left = sum(len(groups) for _, groups in work)
        plans: list[RegionPlan] = []
        timed_out: list[FuncOp] = []
        for lifetimes, groups in work:
            for members in groups:
                share = budget.part(1 / left)
                left -= 1
                plan = plan_group(
                    members,
                    lifetimes,
                    overlap=self.overlap,
                    algorithm=self.algorithm,
                    options=self.plan_options(),
                    budget=share,
                )
                if plan is not None:
                    plans.append(plan)
                if share.stopped_by == "timeout" and lifetimes.func not in timed_out:
                    timed_out.append(lifetimes.func)
        for plan in plans:
            apply_plan(plan)
        for function in timed_out:
            emit_remark(
                function,
                f"coalesce: @{function.sym_name.data}: timeout={self.timeout} cut the search "
                "short: the merged sizes depend on machine speed and load (without timeout "
                f"the search stops on budget={self.budget}, the same everywhere)",
            )
