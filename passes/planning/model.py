"""The planning model: buffers with lifetimes, pools, problems and solutions.

This module is the contract between the IR side (``passes/analysis`` builds a
``Problem``) and the algorithms (``passes/planning/algorithms`` return a
``Solution``). It never imports xDSL.

Lifetimes are half-open ``[start, end)`` op indices, as in MiniMalloc's CSV.
Two buffers *conflict* when their lifetimes intersect and they can both be
live on one path: buffers in different regions of the same ``scf.if`` never
conflict, which ``Buffer.branch`` records.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from math import lcm
from operator import attrgetter
from typing import Literal, TypeVar, cast

Access = Literal["rw", "ro"]
Status = Literal["optimal", "feasible", "unknown", "infeasible"]
_T = TypeVar("_T")

CANDIDATE_FIELDS = ("candidates", "device", "read_only")
"""The buffer fields ``Problem.candidate_pools`` depends on: callers that
group buffers by their candidate lists key them by ``candidate_key``."""
candidate_key = attrgetter(*CANDIDATE_FIELDS)


def align_up(value: int, alignment: int) -> int:
    """Round ``value`` up to a multiple of ``alignment`` (a positive integer)."""
    return -(-value // alignment) * alignment


def pool_base_alignment(pool_alignment: int, storage_alignments: Iterable[int]) -> int:
    """The alignment a pool's base address needs: the largest of the pool's own
    and those of the storages placed in it.

    Offsets are multiples of each storage's alignment, so a storage's address
    is as aligned as it asks only when the base is at least that aligned.
    `lower-to-memref` allocates the pool buffer with it and the C header tells
    users to align their array to it: one definition for both.
    """
    return max([pool_alignment, *storage_alignments])


@dataclass(frozen=True)
class Buffer:
    """One block of bytes to place.

    ``branch`` is the path of exclusive regions the buffer lives in, outermost
    first: a tuple of ``(choice_id, region_index)`` pairs, one per enclosing
    ``scf.if`` (``choice_id`` identifies the if, e.g. its op index). Two buffers
    whose paths hold the same ``choice_id`` with different region indices can
    never be live together.

    ``candidates`` names the pools the buffer may go to, in priority order; an
    empty tuple means every pool whose targets include ``device``, in problem
    order. ``read_only`` buffers (constants) may be placed in ``ro`` pools.

    ``pinned_offset`` fixes the buffer at that byte offset of its first
    candidate pool (``alloc_storage ... at @pool[offset]``, or MiniMalloc's
    ``offset`` column); algorithms keep it there and plan around it.
    """

    id: str
    size: int
    start: int
    end: int
    alignment: int = 1
    device: str = "cpu"
    candidates: tuple[str, ...] = ()
    read_only: bool = False
    branch: tuple[tuple[int, int], ...] = ()
    pinned_offset: int | None = None

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ValueError(f"buffer '{self.id}': negative size {self.size}")
        if self.start >= self.end:
            raise ValueError(f"buffer '{self.id}': empty lifetime [{self.start}, {self.end})")
        if self.alignment <= 0:
            raise ValueError(
                f"buffer '{self.id}': alignment must be positive, got {self.alignment}"
            )
        if self.pinned_offset is not None and self.pinned_offset < 0:
            raise ValueError(f"buffer '{self.id}': negative pinned offset {self.pinned_offset}")

    def overlaps_in_time(self, other: Buffer) -> bool:
        """True when the half-open lifetimes intersect."""
        return self.start < other.end and other.start < self.end

    def exclusive_with(self, other: Buffer) -> bool:
        """True when the two buffers sit in different regions of one ``scf.if``."""
        if not self.branch or not other.branch:
            return False
        mine = dict(self.branch)
        return any(choice in mine and mine[choice] != region for choice, region in other.branch)

    def conflicts_with(self, other: Buffer) -> bool:
        """True when the two buffers may be live together (so must not overlap)."""
        return self.overlaps_in_time(other) and not self.exclusive_with(other)


@dataclass(frozen=True)
class Pool:
    """A named memory (USMP's PoolInfo). ``size=None`` means unbounded."""

    name: str
    size: int | None = None
    alignment: int = 1
    targets: tuple[str, ...] | None = None
    access: Access = "rw"

    def accepts(self, buffer: Buffer) -> bool:
        """May ``buffer`` be placed here (device and access rules; not capacity)?"""
        if self.targets is not None and buffer.device not in self.targets:
            return False
        return self.access == "rw" or buffer.read_only

    def alignment_for(self, buffer: Buffer) -> int:
        """The alignment an offset of ``buffer`` in this pool must have.

        Offsets are relative to the pool base, which is itself aligned to the
        pool's alignment, so both rules hold exactly at a multiple of the lcm.
        """
        return lcm(buffer.alignment, self.alignment)


@dataclass(frozen=True)
class Problem:
    """Buffers to place in pools. With no pools, one unbounded pool is implied."""

    buffers: tuple[Buffer, ...]
    pools: tuple[Pool, ...] = (Pool("workspace"),)
    # Facts derived from the (immutable) problem, computed once on first use
    # (``bounds.lower_bound``, the candidate lists): not part of its value.
    _derived: dict[Hashable, object] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # Accept lists from callers, and honour "no pools = one implicit pool".
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "pools", tuple(self.pools) or (Pool("workspace"),))
        seen: set[str] = set()
        for buffer in self.buffers:
            if buffer.id in seen:
                raise ValueError(f"duplicate buffer id '{buffer.id}'")
            seen.add(buffer.id)
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("duplicate pool name")

    def pool(self, name: str) -> Pool:
        """The pool called ``name`` (``KeyError`` if there is none)."""
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)

    def derived(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``, a fact of this (immutable) problem named ``key``,
        computed on the first call only (``bounds.lower_bound``, the
        candidate lists: the CLI, the greedy stage and the search share them)."""
        try:
            return cast(_T, self._derived[key])
        except KeyError:
            value = self._derived[key] = compute()
            return value

    def candidate_pools(self, buffer: Buffer) -> list[Pool]:
        """The pools ``buffer`` may use, in priority order."""
        # A function of the buffer's candidates, device and access alone
        # (most buffers share them): computed once per distinct triple.
        key = ("candidates", candidate_key(buffer))
        pools = self._derived.get(key)
        if pools is None:
            if buffer.candidates:
                by_name = {p.name: p for p in self.pools}
                named = [by_name[n] for n in buffer.candidates if n in by_name]
            else:
                named = list(self.pools)
            pools = self._derived[key] = tuple(p for p in named if p.accepts(buffer))
        return list(cast(tuple[Pool, ...], pools))


@dataclass(frozen=True)
class Placement:
    """Where one buffer lives: a pool and a byte offset in it."""

    pool: str
    offset: int


@dataclass
class Solution:
    """Where each buffer goes, and how the search ended.

    ``status`` is ``optimal`` when the peak of every pool is proven minimal,
    ``feasible`` when a valid plan was found without that proof,
    ``infeasible`` only with a proof that no plan fits the pool sizes (a
    buffer no pool accepts, a lower bound above a pool's size, or a complete
    search), and ``unknown`` when no plan was found and nothing was proven:
    the budget or the clock stopped the search (``stats["stopped_by"]``), or
    a heuristic gave up. ``placements`` then holds the buffers that were
    placed. ``stats`` carries algorithm details for reports (nodes searched,
    probes, seconds).
    """

    placements: dict[str, Placement] = field(default_factory=dict)
    status: Status = "feasible"
    stats: dict[str, float | int | str] = field(default_factory=dict)

    def used(self, problem: Problem) -> dict[str, int]:
        """Bytes used per pool: the highest ``offset + size`` placed there."""
        sizes = {b.id: b.size for b in problem.buffers}
        used = {p.name: 0 for p in problem.pools}
        for buffer_id, placement in self.placements.items():
            if buffer_id not in sizes:
                continue
            top = placement.offset + sizes[buffer_id]
            used[placement.pool] = max(used.get(placement.pool, 0), top)
        return used

    def peak(self, problem: Problem) -> int:
        """The largest ``used`` over all pools (0 for an empty plan)."""
        return max(self.used(problem).values(), default=0)

    def unplaced(self, problem: Problem) -> list[str]:
        """Ids of the buffers of ``problem`` this solution does not place."""
        return [b.id for b in problem.buffers if b.id not in self.placements]
