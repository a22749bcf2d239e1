"""Lifetimes of storages and tensors: the one definition every pass uses.

See ``passes/analysis/__init__.py`` for the definition and the API summary.
This module implements it in three steps per function:

1. number the ops in pre-order (``OpNumbering``);
2. for each root (an ``alloc_storage`` or ``alloc_tensor`` result) follow
   its aliases and their uses (``flow.alias_closure``) and find its *scope*:
   the innermost region holding its allocation and every use of an alias;
3. within the scope, every use counts at the end of its outermost ancestor
   op in the scope (so a use in a loop keeps the value live for the whole
   loop); in a scope with several blocks, a backward liveness fixpoint over
   the blocks (``RegionLiveness``) extends the interval over every block the
   value (or an alias defined in the scope) is live in or out of.

Every ``func.call`` is also recorded (``CallSite``: where its results live,
how they leave the function) for ``passes/analysis/module.py``, which lays
the functions of a module out on one time line.

Cost: one walk for the numbering, then per root O(uses of its aliases x
region depth), plus one bit-vector fixpoint per multi-block scope region.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from math import lcm
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue, Use
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator

from memplan.dialect.ops import (
    LOOP_OPS,
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
    PoolOp,
    ancestor_in_region,
    reachable_blocks,
)
from memplan.dialect.types import element_byte_size, static_byte_size
from memplan.passes.analysis.flow import (
    EXCLUSIVE_OPS,
    UseKind,
    alias_closure,
    may_hold_reference,
    region_index,
    writes,
)
from memplan.passes.analysis.numbering import OpNumbering
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution

BranchPath = tuple[tuple[int, int], ...]


@dataclass(frozen=True, order=True)
class LiveInterval:
    """A half-open range ``[start, end)`` of op numbers."""

    start: int
    end: int

    def overlaps(self, other: LiveInterval) -> bool:
        """True when the two intervals share an op number."""
        return self.start < other.end and other.start < self.end

    def shifted(self, offset: int) -> LiveInterval:
        return LiveInterval(self.start + offset, self.end + offset)

    def __len__(self) -> int:
        return self.end - self.start

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"


class EscapeKind(Enum):
    """How a value leaves its function (what a caller must assume about it)."""

    NONE = "none"
    """It does not escape."""
    RETURNED = "returned"
    """Only through ``func.return``: the caller holds it in the call's results."""
    LEAKED = "leaked"
    """Some other way (stored, pointer taken, passed to an op returning a
    reference, ...): it may be reached from anywhere later on."""


def escape_kind(uses: Iterable[tuple[Use, UseKind]]) -> EscapeKind:
    """The ``EscapeKind`` of a value whose aliases have these ``uses``."""
    escaping = [use.operation.name for use, kind in uses if kind is UseKind.ESCAPE]
    if not escaping:
        return EscapeKind.NONE
    if all(name == "func.return" for name in escaping):
        return EscapeKind.RETURNED
    return EscapeKind.LEAKED


@dataclass(frozen=True)
class KillPoint:
    """Where ``insert-kills`` puts a ``memory.kill``: after an op, or at a block's start."""

    after: Operation | None = None
    block_start: Block | None = None

    def insert_point(self) -> InsertPoint:
        if self.after is not None:
            return InsertPoint.after(self.after)
        assert self.block_start is not None
        return InsertPoint.at_start(self.block_start)


@dataclass(eq=False)
class Lifetime:
    """The lifetime of one root value: a storage or a tensor.

    ``name`` is unique among the function's storages (or tensors): the SSA
    name hint, or ``s<N>`` / ``t<N>`` (N = position among the function's
    storages / tensors in pre-order) when there is none or it is taken.
    ``branch`` is the planning model's path of exclusive regions (see
    ``passes.planning.Buffer``), with op numbers as choice ids. ``scope`` is
    the innermost region holding the allocation and every use of an alias.
    ``uses`` lists every use of every alias with its ``UseKind``.
    ``kills`` are the ``memory.kill`` ops of the root itself.
    ``carrying_loop`` is the loop that carries the value allocated in it to
    its next iteration (see ``carried_across_iterations``), else None.
    """

    value: SSAValue
    op: Operation
    name: str
    interval: LiveInterval
    escapes: bool
    branch: BranchPath
    aliases: tuple[SSAValue, ...]
    uses: tuple[tuple[Use, UseKind], ...]
    kills: tuple[KillOp, ...]
    scope: Region
    carrying_loop: Operation | Block | None = None

    @property
    def label(self) -> str:
        """How diagnostics name the value: ``%hint`` or the generated name."""
        return f"%{self.value.name_hint}" if self.value.name_hint else self.name

    @property
    def killed(self) -> bool:
        """Has the value an explicit ``memory.kill`` (a tensor: or its storage)?"""
        return bool(self.kills)

    @property
    def leaves_region(self) -> bool:
        """True when an alias is used outside the region that allocates the value."""
        return self.scope is not self.op.parent_region()

    @property
    def escape_kind(self) -> EscapeKind:
        """How the value leaves the function: returned only, leaked, or not at all."""
        return escape_kind(self.uses)

    @property
    def carried_across_iterations(self) -> bool:
        """Is the value allocated inside a loop and carried to its next iteration?

        Then the previous iteration's instance is still live when the
        allocation runs again: two instances live at once, which one static
        place cannot hold. Precisely: an alias (a value brought in through
        ``scf`` iteration arguments or a ``cf`` block argument: all others
        are defined after the allocation) is live where the allocation, or
        the op holding it, runs. ``carrying_loop`` is then the innermost loop
        op around the block where that is found, or that block when it lies
        in a multi-block region (a ``cf`` cycle). Yielding the value to the
        next trip is not enough: if that trip reads it only before the
        allocation, the previous instance is dead by then.
        """
        return self.carrying_loop is not None


@dataclass(eq=False)
class StorageLifetime(Lifetime):
    """A ``memory.alloc_storage`` and its lifetime, with the tensors carved from it.

    ``read_only`` is True when no alias is ever written (``outs`` of
    ``memory.invoke``, target of ``memref.store``/``memref.copy``, or an op
    with a write or unknown effect): such a storage may go to an ``ro`` pool.
    """

    tensors: list[TensorLifetime] = field(default_factory=list)
    read_only: bool = False

    @property
    def alloc(self) -> AllocStorageOp:
        assert isinstance(self.op, AllocStorageOp)
        return self.op

    @property
    def size(self) -> int | None:
        """Bytes, or ``None`` for a dynamic-size storage."""
        return self.alloc.byte_size

    @property
    def alignment(self) -> int:
        return self.alloc.alignment_value

    @property
    def device(self) -> str:
        return self.alloc.device_name

    @property
    def candidates(self) -> tuple[str, ...]:
        return self.alloc.candidate_pools

    @property
    def pinned(self) -> tuple[str, int] | None:
        return self.alloc.pinned

    def buffer(
        self,
        *,
        buffer_id: str | None = None,
        interval: LiveInterval | None = None,
        branch: BranchPath | None = None,
        pin: bool = True,
    ) -> Buffer:
        """This storage as a planning ``Buffer`` (static size only).

        With ``pin`` (the default) a pinned storage becomes a buffer fixed at
        its offset (``candidates=(pool,)``, ``pinned_offset``); without it
        the buffer keeps the storage's own candidates, so that a checker can
        test the pinned placement against them.
        """
        size = self.size
        if size is None:
            raise ValueError(f"storage {self.label} has a dynamic size")
        interval = interval or self.interval
        candidates = self.candidates
        pinned_offset = None
        if pin and self.pinned is not None:
            candidates = (self.pinned[0],)
            pinned_offset = self.pinned[1]
        return Buffer(
            id=buffer_id or self.name,
            size=size,
            start=interval.start,
            end=interval.end,
            alignment=self.alignment,
            device=self.device,
            candidates=candidates,
            read_only=self.read_only,
            branch=self.branch if branch is None else branch,
            pinned_offset=pinned_offset,
        )


@dataclass(eq=False)
class TensorLifetime(Lifetime):
    """A ``memory.alloc_tensor`` and its lifetime inside its storage."""

    storage: StorageLifetime | None = None

    @property
    def alloc(self) -> AllocTensorOp:
        assert isinstance(self.op, AllocTensorOp)
        return self.op

    @property
    def killed(self) -> bool:
        return bool(self.kills) or (self.storage is not None and bool(self.storage.kills))

    @property
    def offset(self) -> int | None:
        """Byte offset in the storage, or ``None`` when it is an SSA value."""
        return self.alloc.static_offset

    @property
    def size(self) -> int | None:
        """Bytes, or ``None`` when a dimension is dynamic."""
        return static_byte_size(self.alloc.tensor_type)

    @property
    def alignment(self) -> int:
        """The alignment the offset must have: the element's byte size and the `align`."""
        return lcm(element_byte_size(self.alloc.tensor_type), self.alloc.required_alignment or 1)

    def buffer(self, *, buffer_id: str | None = None) -> Buffer:
        """This tensor as a ``Buffer`` of its storage (static size only)."""
        size = self.size
        if size is None:
            raise ValueError(f"tensor {self.label} has a dynamic shape")
        return Buffer(
            id=buffer_id or self.name,
            size=size,
            start=self.interval.start,
            end=self.interval.end,
            alignment=self.alignment,
            branch=self.branch,
        )


@dataclass(eq=False)
class CallSite:
    """A ``func.call`` in a function, and where the values it returns are live.

    ``number`` is the call's op number. ``results`` is the hull of the
    intervals of its results that may hold a reference, each computed as for
    a root allocated by the call (``None`` when it has no such result): a
    value the callee returns is live there. ``results_escape`` is how those
    results leave this function. ``repeat_start`` is the first op number
    from which the call may run again (the start of the outermost loop around
    it, or of the first block a CFG path from it reaches; else ``number``):
    a value the call leaks may be live from there on.
    """

    op: CallOp
    callee: str
    number: int
    results: LiveInterval | None
    results_escape: EscapeKind
    repeat_start: int


class RegionLiveness:
    """Backward liveness of SSA values over the blocks of one region.

    Values are tracked only if defined directly in the region (results of
    its ops, arguments of its blocks). A use inside a nested op counts at
    that op; a branch operand is a use at the terminator of the predecessor
    and a block argument is defined at its block's start (SSA phi
    semantics). The fixpoint runs on Python ints as bit vectors:
    ``live_in(B) = gen(B) | (live_out(B) & ~defs(B))``,
    ``live_out(B) = union of live_in(successors)``.
    """

    def __init__(self, region: Region, values: Sequence[SSAValue], numbering: OpNumbering) -> None:
        self.region = region
        self.blocks: list[Block] = list(region.blocks)
        self.bit: dict[SSAValue, int] = {value: i for i, value in enumerate(values)}
        block_index = {block: i for i, block in enumerate(self.blocks)}
        gen = [0] * len(self.blocks)
        defs = [0] * len(self.blocks)
        for value, bit in self.bit.items():
            definition = _defining_block(value)
            defs[block_index[definition]] |= 1 << bit
            for use in value.uses:
                if isinstance(use.operation, KillOp):
                    continue  # a kill reads nothing: it never makes a value live
                anchor = ancestor_in_region(use.operation, region)
                assert anchor is not None, "uses stay within the defining region"
                block = anchor.parent_block()
                assert block is not None
                if block is not definition:
                    gen[block_index[block]] |= 1 << bit
        successors = [
            [block_index[s] for s in block.last_op.successors if s in block_index]
            if block.last_op is not None
            else []
            for block in self.blocks
        ]
        live_in = [0] * len(self.blocks)
        live_out = [0] * len(self.blocks)
        changed = True
        while changed:
            changed = False
            for i in reversed(range(len(self.blocks))):
                out = 0
                for successor in successors[i]:
                    out |= live_in[successor]
                inn = gen[i] | (out & ~defs[i])
                if out != live_out[i] or inn != live_in[i]:
                    live_out[i] = out
                    live_in[i] = inn
                    changed = True
        self.live_in: dict[Block, int] = dict(zip(self.blocks, live_in))
        self.live_out: dict[Block, int] = dict(zip(self.blocks, live_out))
        self.successors: dict[Block, list[Block]] = {
            block: [self.blocks[s] for s in successors[i]] for i, block in enumerate(self.blocks)
        }
        # Per value: the blocks it is live into, and the hull of the blocks it
        # is live into / out of (sizes sum to the liveness, not values x blocks).
        self.live_in_blocks: dict[int, list[Block]] = {}
        self.first_live_in: dict[int, int] = {}
        self.last_live_out: dict[int, int] = {}
        # Blocks in region order are numbered in ascending order: the first
        # block a value is live into has the lowest start.
        for block in self.blocks:
            bounds = numbering.block_range[block]
            for bit in _bits(self.live_in[block]):
                self.live_in_blocks.setdefault(bit, []).append(block)
                self.first_live_in.setdefault(bit, bounds.start)
            for bit in _bits(self.live_out[block]):
                self.last_live_out[bit] = max(self.last_live_out.get(bit, 0), bounds.end)

    def mask(self, values: Iterable[SSAValue]) -> int:
        """The bit vector of those ``values`` that are tracked here."""
        result = 0
        for value in values:
            bit = self.bit.get(value)
            if bit is not None:
                result |= 1 << bit
        return result


def has_one_block(region: Region) -> bool:
    """True when ``region`` has exactly one block (O(1): ``len(region.blocks)`` walks them)."""
    first = region.first_block
    return first is not None and first.next_block is None


def _bits(vector: int) -> Iterable[int]:
    while vector:
        low = vector & -vector
        yield low.bit_length() - 1
        vector ^= low


def _defining_block(value: SSAValue) -> Block:
    if isinstance(value, BlockArgument):
        return value.block
    assert isinstance(value.owner, Operation)
    block = value.owner.parent_block()
    assert block is not None
    return block


def _unique_names(values: Sequence[SSAValue], prefix: str) -> list[str]:
    """Name hints made unique in order; ``<prefix><N>`` for unnamed or taken ones."""
    hints = [value.name_hint for value in values]
    taken = {hint for hint in hints if hint}
    used: set[str] = set()
    names: list[str] = []
    for position, hint in enumerate(hints):
        name = hint if hint and hint not in used else None
        if name is None:
            name = f"{prefix}{position}"
            while name in used or (name in taken and name != hint):
                name += "_"
        used.add(name)
        names.append(name)
    return names


@dataclass(eq=False)
class FunctionLifetimes:
    """Lifetimes of every storage and tensor of one ``func.func``.

    ``storages`` and ``tensors`` are in pre-order; each tensor also sits in
    its storage's ``tensors``. ``pools`` are the module's ``memory.pool``s
    (empty when the function is not in a module or the module has none).
    ``calls`` are the function's ``func.call`` ops in pre-order (the module
    analysis lays callees out from them).
    """

    func: FuncOp
    numbering: OpNumbering
    storages: list[StorageLifetime]
    tensors: list[TensorLifetime]
    pools: tuple[Pool, ...]
    liveness: dict[Region, RegionLiveness]
    calls: list[CallSite] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.func.sym_name.data

    @property
    def end(self) -> int:
        """One past the last op number: where escaping values end."""
        return len(self.numbering)

    def __post_init__(self) -> None:
        self._by_root: dict[SSAValue, Lifetime] = {
            lifetime.value: lifetime for lifetime in [*self.storages, *self.tensors]
        }
        self._by_name: dict[str, StorageLifetime] = {s.name: s for s in self.storages}

    def storage_named(self, name: str) -> StorageLifetime:
        """The storage called ``name`` (``KeyError`` if none)."""
        return self._by_name[name]

    @property
    def static_storages(self) -> list[StorageLifetime]:
        return [s for s in self.storages if s.size is not None]

    def problem(self, *, pin: bool = True) -> Problem:
        """The static storages as a planning ``Problem`` over the module's pools.

        Buffer ids are the storage names. Dynamic-size storages are left out
        (they cannot be placed statically); see ``static_storages``.
        """
        return Problem(tuple(s.buffer(pin=pin) for s in self.static_storages), self.pools)

    def placements(self) -> Solution:
        """The plan already in the IR: every pinned storage's pool and offset."""
        return Solution(
            {s.name: Placement(*s.pinned) for s in self.static_storages if s.pinned is not None}
        )

    def carried_diagnostic(self, lifetime: Lifetime) -> str:
        """Why ``lifetime`` (``carried_across_iterations``) cannot have one static place."""
        carrier = lifetime.carrying_loop
        assert carrier is not None
        if isinstance(carrier, Block):
            region = carrier.parent
            assert region is not None
            position = list(region.blocks).index(carrier)
            where = (
                f"a CFG cycle through block {position} of its region "
                f"(ops {self.numbering.block_range[carrier].start}-"
                f"{self.numbering.block_range[carrier].end - 1}) and passed round the back edge"
            )
        else:
            where = (
                f"{carrier.name} (op {self.numbering.index[carrier]}) "
                "and yielded into its iteration arguments"
            )
        kind = "storage" if isinstance(lifetime, StorageLifetime) else "tensor"
        size = lifetime.size if isinstance(lifetime, StorageLifetime | TensorLifetime) else None
        return (
            f"{kind} {lifetime.label} of @{self.name} ({size} bytes) is allocated inside "
            f"{where}: the previous iteration's instance and the new one would be live at once, "
            f"and two instances of one {kind} cannot share one static place"
        )

    def kill_points(self, lifetime: Lifetime) -> list[KillPoint]:
        """Where ``insert-kills`` kills ``lifetime.value`` (empty: no kill).

        No kill for escaping values, values already killed, values whose
        aliases leave the allocating region (yielded out of it), and values
        that flow into a block argument of their scope. In a single-block
        scope the kill goes right after the outermost op holding the last
        use. In a multi-block scope it goes after the last use in each block
        where the value dies, and at the start of each successor block that
        the value does not enter live from a block it is live out of, when
        every predecessor of that block has it live out (an edge to a block
        with another predecessor would need a new block: no kill there). A
        last use that is a terminator gets no kill either.
        """
        if lifetime.escapes or lifetime.killed or lifetime.leaves_region:
            return []
        scope = lifetime.scope
        if has_one_block(scope):
            anchor = lifetime.op
            for use, _ in lifetime.uses:
                candidate = ancestor_in_region(use.operation, scope)
                assert candidate is not None
                if self.numbering.end[candidate] > self.numbering.end[anchor]:
                    anchor = candidate
            if anchor.has_trait(IsTerminator):
                return []
            return [KillPoint(after=anchor)]
        if any(
            isinstance(alias, BlockArgument) and alias.block.parent is scope
            for alias in lifetime.aliases
        ):
            return []
        liveness = self.liveness[scope]
        mask = liveness.mask(lifetime.aliases)
        last_in_block: dict[Block, Operation] = {}
        definition_block = lifetime.op.parent_block()
        assert definition_block is not None
        last_in_block[definition_block] = lifetime.op
        for use, _ in lifetime.uses:
            anchor = ancestor_in_region(use.operation, scope)
            assert anchor is not None
            block = anchor.parent_block()
            assert block is not None
            current = last_in_block.get(block)
            if current is None or self.numbering.end[anchor] > self.numbering.end[current]:
                last_in_block[block] = anchor
        # Only the blocks where the value is: live into, or used/defined in.
        present_blocks: dict[Block, None] = dict.fromkeys(last_in_block)
        for alias in lifetime.aliases:
            bit = liveness.bit.get(alias)
            if bit is not None:
                present_blocks.update(dict.fromkeys(liveness.live_in_blocks.get(bit, ())))
        block_order = self.numbering.block_range
        points: list[KillPoint] = []
        for block in sorted(present_blocks, key=lambda b: block_order[b].start):
            live_in = bool(liveness.live_in[block] & mask)
            live_out = bool(liveness.live_out[block] & mask)
            present = live_in or block in last_in_block
            if present and not live_out:
                anchor = last_in_block.get(block)
                if anchor is not None and not anchor.has_trait(IsTerminator):
                    points.append(KillPoint(after=anchor))
                continue
            if not live_out:
                continue
            for successor in liveness.successors[block]:
                if liveness.live_in[successor] & mask or successor is definition_block:
                    continue
                if successor in last_in_block:
                    continue  # used there: it dies inside that block
                if any(not liveness.live_out[pred] & mask for pred in successor.predecessors()):
                    continue
                point = KillPoint(block_start=successor)
                if point not in points:
                    points.append(point)
        return points


class _FunctionAnalyzer:
    """Builds a ``FunctionLifetimes`` (one instance per function)."""

    def __init__(self, func: FuncOp, pools: tuple[Pool, ...]) -> None:
        self.func = func
        self.pools = pools
        self.body = func.body
        self.numbering = OpNumbering.of_region(self.body)

    def run(self) -> FunctionLifetimes:
        storage_ops = [op for op in self.numbering if isinstance(op, AllocStorageOp)]
        tensor_ops = [op for op in self.numbering if isinstance(op, AllocTensorOp)]
        call_ops = [op for op in self.numbering if isinstance(op, CallOp)]
        closures: dict[SSAValue, tuple[list[SSAValue], list[tuple[Use, UseKind]], bool]] = {}
        scopes: dict[SSAValue, Region] = {}
        # Call results that may hold a reference are followed like roots: a
        # value the callee returns lives as long as they do.
        roots = [
            *(op.results[0] for op in [*storage_ops, *tensor_ops]),
            *(r for op in call_ops for r in op.results if may_hold_reference(r)),
        ]
        for root in roots:
            closures[root] = alias_closure(root)
            aliases, uses, escapes = closures[root]
            scopes[root] = self._scope(root, uses, escapes)
        liveness = self._region_liveness(roots, closures, scopes)
        storage_names = _unique_names([op.results[0] for op in storage_ops], "s")
        tensor_names = _unique_names([op.results[0] for op in tensor_ops], "t")
        storages: list[StorageLifetime] = []
        by_storage: dict[SSAValue, StorageLifetime] = {}
        for op, name in zip(storage_ops, storage_names):
            root = op.results[0]
            aliases, uses, escapes = closures[root]
            lifetime = StorageLifetime(
                **self._common(root, name, closures[root], scopes[root], liveness),
                carrying_loop=self._carrying_loop(op, aliases, liveness),
                read_only=not any(writes(use) for use, _ in uses),
            )
            storages.append(lifetime)
            by_storage[root] = lifetime
        tensors: list[TensorLifetime] = []
        for op, name in zip(tensor_ops, tensor_names):
            root = op.results[0]
            assert isinstance(op, AllocTensorOp)
            storage = by_storage.get(op.storage)
            lifetime = TensorLifetime(
                **self._common(root, name, closures[root], scopes[root], liveness),
                carrying_loop=self._carrying_loop(op, closures[root][0], liveness),
                storage=storage,
            )
            tensors.append(lifetime)
            if storage is not None:
                storage.tensors.append(lifetime)
        calls = [self._call_site(op, closures, scopes, liveness) for op in call_ops]
        return FunctionLifetimes(
            self.func, self.numbering, storages, tensors, self.pools, liveness, calls
        )

    def _call_site(
        self,
        op: CallOp,
        closures: dict[SSAValue, tuple[list[SSAValue], list[tuple[Use, UseKind]], bool]],
        scopes: dict[SSAValue, Region],
        liveness: dict[Region, RegionLiveness],
    ) -> CallSite:
        intervals: list[LiveInterval] = []
        uses: list[tuple[Use, UseKind]] = []
        for result in op.results:
            if not may_hold_reference(result):
                continue
            common = self._common(result, "", closures[result], scopes[result], liveness)
            interval = common["interval"]
            assert isinstance(interval, LiveInterval)
            intervals.append(interval)
            uses.extend(closures[result][1])
        results = (
            LiveInterval(min(i.start for i in intervals), max(i.end for i in intervals))
            if intervals
            else None
        )
        # Leaked if any result leaks, else returned if any is returned.
        results_escape = escape_kind(uses)
        return CallSite(
            op=op,
            callee=op.callee.root_reference.data,
            number=self.numbering.index[op],
            results=results,
            results_escape=results_escape,
            repeat_start=self._repeat_start(op),
        )

    def _repeat_start(self, op: Operation) -> int:
        """The first op number from which ``op`` may run again (see ``CallSite``)."""
        numbering = self.numbering
        start = numbering.index[op]
        current = op
        while True:
            region = current.parent_region()
            block = current.parent_block()
            assert region is not None and block is not None
            if not has_one_block(region):
                for reached in reachable_blocks(block):
                    start = min(start, numbering.block_range[reached].start)
            parent = region.parent_op()
            if parent is None or parent is self.func:
                return start
            if parent.name in LOOP_OPS:
                start = min(start, numbering.index[parent])
            current = parent

    def _scope(self, root: SSAValue, uses: list[tuple[Use, UseKind]], escapes: bool) -> Region:
        if escapes:
            return self.body
        owner = root.owner
        assert isinstance(owner, Operation)
        region = owner.parent_region()
        assert region is not None
        for use, kind in uses:
            user = use.operation
            parent = user.parent_op()
            if (
                kind is UseKind.ALIAS
                and user.name == "scf.yield"
                and parent is not None
                and parent.name in LOOP_OPS
            ):
                # Carried to the next iteration: the loop itself uses it, so
                # the scope lies outside the loop and the value is live from
                # the loop's start (_start_and_branch).
                user = parent
            while ancestor_in_region(user, region) is None:
                parent = region.parent_op()
                assert parent is not None and parent is not self.func
                outer = parent.parent_region()
                assert outer is not None
                region = outer
        return region

    def _region_liveness(
        self,
        roots: list[SSAValue],
        closures: dict[SSAValue, tuple[list[SSAValue], list[tuple[Use, UseKind]], bool]],
        scopes: dict[SSAValue, Region],
    ) -> dict[Region, RegionLiveness]:
        """One liveness fixpoint per multi-block scope, over the aliases defined in it."""
        tracked: dict[Region, dict[SSAValue, None]] = {}
        for root in roots:
            scope = scopes[root]
            if has_one_block(scope):
                continue
            values = tracked.setdefault(scope, {})
            for alias in closures[root][0]:
                if _defining_block(alias).parent_region() is scope:
                    values[alias] = None
        return {
            region: RegionLiveness(region, list(values), self.numbering)
            for region, values in tracked.items()
        }

    def _common(
        self,
        root: SSAValue,
        name: str,
        closure: tuple[list[SSAValue], list[tuple[Use, UseKind]], bool],
        scope: Region,
        liveness: dict[Region, RegionLiveness],
    ) -> dict[str, Any]:
        """The fields storages and tensors share, as keyword arguments."""
        aliases, uses, escapes = closure
        op = root.owner
        assert isinstance(op, Operation)
        numbering = self.numbering
        start, branch = self._start_and_branch(op, scope)
        end = numbering.index[op] + 1
        kills: list[KillOp] = []
        region_liveness = liveness.get(scope)
        present = (
            None
            if region_liveness is None
            else self._present_blocks(op, aliases, uses, scope, region_liveness)
        )
        # Anchors of the uses that count (kills where the value is dead do not).
        counted: list[Operation] = []
        for use, kind in uses:
            user = use.operation
            anchor = ancestor_in_region(user, scope)
            assert anchor is not None
            if kind is UseKind.KILL and use.operation.operands[0] is root:
                assert isinstance(user, KillOp)
                kills.append(user)
            block = anchor.parent_block()
            if kind is UseKind.KILL and present is not None and block not in present:
                # A kill where the value is dead anyway (insert-kills puts one
                # at the start of a block entered from where it was live):
                # nothing to end, and counting it would widen the hull.
                continue
            counted.append(anchor)
            if kind is UseKind.KILL and anchor is user:
                # A kill ends the lifetime: [alloc, kill), so an allocation
                # right after the kill may take the bytes.
                end = max(end, numbering.index[user])
            else:
                end = max(end, numbering.end[anchor])
        if region_liveness is not None:
            # Several blocks: block numbering need not follow control flow
            # (a block argument or a back edge may bring the value into an
            # earlier-numbered block), so every live point lowers the start.
            own_anchor = ancestor_in_region(op, scope)
            for anchor in counted:
                if anchor is not own_anchor:
                    start = min(start, numbering.index[anchor])
            for alias in aliases:
                bit = region_liveness.bit.get(alias)
                if bit is None:
                    continue
                if isinstance(alias, BlockArgument):
                    start = min(start, numbering.block_range[alias.block].start)
                start = min(start, region_liveness.first_live_in.get(bit, start))
                end = max(end, region_liveness.last_live_out.get(bit, end))
        if escapes:
            # Live to the end, and so through every later trip of a loop
            # around the allocation, earlier-numbered blocks included.
            end = len(numbering)
            start = min(start, self._repeat_start(op))
        end = max(end, start + 1)
        return {
            "value": root,
            "op": op,
            "name": name,
            "interval": LiveInterval(start, end),
            "escapes": escapes,
            "branch": branch,
            "aliases": tuple(aliases),
            "uses": tuple(uses),
            "kills": tuple(kills),
            "scope": scope,
        }

    def _carrying_loop(
        self,
        op: Operation,
        aliases: Sequence[SSAValue],
        liveness: dict[Region, RegionLiveness],
    ) -> Operation | Block | None:
        """The loop or CFG cycle that carries the previous trip's value to ``op``.

        Every alias is defined after the allocation ``op`` in the same trip,
        so an alias live where ``op`` (or the op holding it) runs is the
        previous trip's instance, brought in through iteration arguments or
        a block argument. Checked in each block around ``op``: an alias
        defined in it before that point (or, in a multi-block region, live
        into it) and used at or after it (or live out of it).
        """
        index = self.numbering.index
        current = op
        while current is not self.func:
            region = current.parent_region()
            block = current.parent_block()
            assert region is not None and block is not None
            defined = [a for a in aliases if _defining_block(a).parent is region]
            live_in = live_out = 0
            region_liveness: RegionLiveness | None = None
            if defined and not has_one_block(region):
                region_liveness = liveness.get(region)
                if region_liveness is None or any(a not in region_liveness.bit for a in defined):
                    region_liveness = RegionLiveness(region, defined, self.numbering)
                live_in = region_liveness.live_in[block]
                live_out = region_liveness.live_out[block]
            for alias in defined:
                bit = -1 if region_liveness is None else region_liveness.bit[alias]
                defined_before = _defining_block(alias) is block and (
                    isinstance(alias, BlockArgument) or index[alias.owner] < index[current]  # type: ignore[index]
                )
                if not (defined_before or (bit >= 0 and live_in >> bit & 1)):
                    continue
                if (bit >= 0 and live_out >> bit & 1) or any(
                    not isinstance(u.operation, KillOp)
                    and (anchor := ancestor_in_region(u.operation, region)) is not None
                    and anchor.parent_block() is block
                    and index[anchor] >= index[current]
                    for u in alias.uses
                ):
                    return self._carrier(block)
            parent = region.parent_op()
            assert parent is not None
            current = parent
        return None

    def _carrier(self, block: Block) -> Operation | Block:
        """The innermost loop op around ``block``, or the block of a multi-block region."""
        current: Block = block
        while True:
            region = current.parent
            assert region is not None
            if not has_one_block(region):
                return current
            parent = region.parent_op()
            assert parent is not None
            if parent.name in LOOP_OPS or parent is self.func:
                return parent
            outer = parent.parent_block()
            assert outer is not None
            current = outer

    def _present_blocks(
        self,
        op: Operation,
        aliases: Sequence[SSAValue],
        uses: Sequence[tuple[Use, UseKind]],
        scope: Region,
        region_liveness: RegionLiveness,
    ) -> set[Block]:
        """Blocks of a multi-block ``scope`` where the value is (kills aside).

        The block of the allocation, those holding a use other than a kill
        or defining an alias, and those an alias is live into.
        """
        present: set[Block] = set()
        for user in [op, *(use.operation for use, kind in uses if kind is not UseKind.KILL)]:
            anchor = ancestor_in_region(user, scope)
            if anchor is not None and anchor.parent_block() is not None:
                present.add(anchor.parent_block())  # type: ignore[arg-type]
        for alias in aliases:
            block = _defining_block(alias)
            if block.parent is scope:
                present.add(block)
            bit = region_liveness.bit.get(alias)
            if bit is not None:
                present.update(region_liveness.live_in_blocks.get(bit, ()))
        return present

    def _start_and_branch(self, op: Operation, scope: Region) -> tuple[int, BranchPath]:
        """Start number and exclusive-region path of a value allocated by ``op``.

        Inside the scope the value starts at its allocation, unless a loop
        lies between the allocation and the scope: then the value outlives an
        iteration, so it is live from the loop's start, and the ``scf.if``
        choices inside that loop no longer separate it from anything.
        """
        numbering = self.numbering
        start = numbering.index[op]
        inner: list[tuple[int, int]] = []
        outer: list[tuple[int, int]] = []
        current = op
        crossed_scope = False
        while True:
            region = current.parent_region()
            parent = region.parent_op() if region is not None else None
            if parent is None or parent is self.func:
                break
            if region is scope:
                crossed_scope = True
            assert region is not None
            if parent.name in EXCLUSIVE_OPS:
                entry = (numbering.index[parent], region_index(parent, region))
                (outer if crossed_scope else inner).append(entry)
            elif parent.name in LOOP_OPS and not crossed_scope:
                start = numbering.index[parent]
                inner.clear()
            current = parent
        path = [*inner, *outer]
        path.reverse()
        return start, tuple(path)


def pools_of(module: ModuleOp | None) -> tuple[Pool, ...]:
    """The module's ``memory.pool`` ops as planning ``Pool``s, in module order."""
    if module is None:
        return ()
    return tuple(
        Pool(
            name=op.pool_name,
            size=op.byte_size,
            alignment=op.alignment_value,
            targets=op.target_names,
            access="ro" if op.is_read_only else "rw",
        )
        for op in module.ops
        if isinstance(op, PoolOp)
    )


def _enclosing_module(op: Operation) -> ModuleOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    return parent


def analyze_function(func: FuncOp, pools: tuple[Pool, ...] | None = None) -> FunctionLifetimes:
    """Lifetimes of ``func``'s storages and tensors (``func`` must have a body).

    ``pools`` defaults to the ``memory.pool`` ops of the enclosing module.
    """
    if pools is None:
        pools = pools_of(_enclosing_module(func))
    if func.is_declaration:
        raise ValueError(f"@{func.sym_name.data} is a declaration")
    return _FunctionAnalyzer(func, pools).run()
