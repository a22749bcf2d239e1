"""Lifetimes of storages and tensors: the result types of the one definition.

See ``passes/analysis/__init__.py`` for the definition and the API summary,
and ``function_lifetimes.py`` for how ``analyze_function`` computes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from math import lcm

from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue, Use
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator

from memplan.dialect.numbering import OpNumbering
from memplan.dialect.op_model import returns_from_function
from memplan.dialect.ops import (
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
)
from memplan.dialect.regions import ancestor_in_region, has_one_block
from memplan.dialect.types import element_byte_size, static_byte_size
from memplan.passes.analysis.aliasing import UseKind
from memplan.passes.analysis.region_liveness import RegionLiveness
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
    escaping = [use.operation for use, kind in uses if kind is UseKind.ESCAPE]
    if not escaping:
        return EscapeKind.NONE
    if all(returns_from_function(op) for op in escaping):
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
        """Bytes a plan reserves (a dynamic storage's `max` bound), or ``None``
        for an unbounded dynamic-size storage."""
        return self.alloc.size_bound

    @property
    def is_dynamic(self) -> bool:
        """Is the size only known at run time (bounded or not)?"""
        return self.alloc.storage_type.is_dynamic

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
        """This storage as a planning ``Buffer`` (static or bounded size).

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
