"""``usmp``'s diagnostics: why a storage fits in no pool, and what breaks a
plan the pins force. Each names the storage, its size and lifetime, every
candidate pool's size and peak, and, when cheap to find, the live storages
that prove a pool too small.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect.diagnostics import at_op
from memplan.passes.analysis import (
    FunctionLifetimes,
    StorageLifetime,
)
from memplan.passes.planning.bounds import buffers_lower_bound, forced_pool
from memplan.passes.planning.model import Buffer, Pool, Problem, Solution
from memplan.passes.planning.validate import Finding
from memplan.passes.usmp.groups import Group


def _storage_label(function: FunctionLifetimes, storage: StorageLifetime) -> str:
    return f"storage {storage.label} in @{function.name}"


def _lifetime_text(storage: StorageLifetime) -> str:
    """The storage's interval in op numbers of its own function."""
    return f"live {storage.interval}"


def _live_set_text(group: Group, members: Sequence[Buffer]) -> str:
    """``%a (64 bytes, live [0, 3)) and %b (...)``, in the group's terms."""
    parts = []
    for buffer in members:
        function, storage = group.storages[buffer.id]
        where = "" if len(group.functions) == 1 else f" in @{function.name}"
        parts.append(f"{storage.label}{where} ({buffer.size} bytes, {_lifetime_text(storage)})")
    if len(parts) < 2:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _only_pool(problem: Problem, buffer: Buffer) -> Pool | None:
    """The one pool ``buffer`` can go to, counting only pools large enough for it."""
    forced = forced_pool(problem, buffer)
    if forced is not None:
        return forced
    fitting = [
        pool
        for pool in problem.candidate_pools(buffer)
        if pool.size is None or pool.size >= buffer.size
    ]
    return fitting[0] if len(fitting) == 1 else None


def _blocking_set(problem: Problem, buffer: Buffer, pool: Pool) -> tuple[int, list[Buffer]] | None:
    """A proof that ``buffer`` cannot fit ``pool``, when one is cheap to find.

    Looks at the buffers that conflict with ``buffer`` and can only go to
    ``pool`` (the only candidate large enough for them). At each time in
    ``buffer``'s lifetime where one of them starts, the ones live then and
    ``buffer`` must be stacked; when the bytes they need
    (``buffers_lower_bound``: ``scf.if`` regions as max, alignment rounding)
    exceed the pool's size, returns the most such bytes and those buffers
    (none when ``buffer`` alone is larger than the pool).
    """
    if pool.size is None:
        return None
    neighbours = [
        other
        for other in problem.buffers
        if other.id != buffer.id
        and other.conflicts_with(buffer)
        and _only_pool(problem, other) == pool
    ]
    times = sorted({buffer.start, *(max(o.start, buffer.start) for o in neighbours)})
    best: tuple[int, list[Buffer]] | None = None
    for moment in times:
        live = [o for o in neighbours if o.start <= moment < o.end]
        point = [
            Buffer(b.id, b.size, moment, moment + 1, b.alignment, branch=b.branch)
            for b in [buffer, *live]
        ]
        need = buffers_lower_bound(point, pool.alignment)
        if need > pool.size and (best is None or need > best[0]):
            best = (need, live)
    return best


def _peak_during(problem: Problem, solution: Solution, buffer: Buffer, pool: Pool) -> int:
    """The highest top, in ``pool``, of placed buffers that conflict with ``buffer``."""
    top = 0
    for other in problem.buffers:
        placement = solution.placements.get(other.id)
        if placement is None or placement.pool != pool.name:
            continue
        if other.id != buffer.id and other.conflicts_with(buffer):
            top = max(top, placement.offset + other.size)
    return top


def _members_text(storage: StorageLifetime, candidates: Sequence[Pool]) -> str:
    """What a storage holding several tensors (made by `coalesce` or `reuse`)
    holds, largest first, naming a tensor that alone is larger than every
    candidate pool: the storage's own name says nothing of the program's."""
    members = sorted(storage.tensors, key=lambda t: -(t.size or 0))
    parts = []
    for tensor in members[:4]:
        size = "dynamic size" if tensor.size is None else f"{tensor.size} bytes"
        at = "a dynamic offset" if tensor.offset is None else f"offset {tensor.offset}"
        parts.append(f"{tensor.label} ({size} at {at}, live {tensor.interval})")
    text = f"it holds {len(members)} tensors: " + ", ".join(parts)
    if len(members) > 4:
        text += f" and {len(members) - 4} more"
    sizes = [pool.size for pool in candidates]
    if sizes and all(size is not None for size in sizes):
        largest_pool = max(size for size in sizes if size is not None)
        too_big = [t for t in members if t.size is not None and t.size > largest_pool]
        if too_big:
            text += f"; {too_big[0].label} alone ({too_big[0].size} bytes) is larger than " + (
                "the pool" if len(sizes) == 1 else "every candidate pool"
            )
    return text


@dataclass(frozen=True)
class Failure:
    """Why a plan failed: the message and the storage op it is about."""

    message: str
    op: Operation | None = None

    def exception(self) -> PassFailedException:
        error = PassFailedException(self.message)
        return error if self.op is None else at_op(error, self.op)


def unplaced_diagnostic(
    group: Group, solution: Solution, algorithm: str, unplaced: Sequence[str]
) -> tuple[Failure, bool]:
    """Why the storages ``unplaced`` fit nowhere: names, sizes, lifetimes, pools.

    Names the storage, its size and lifetime, and for every candidate pool its
    size and its peak in the attempted plan (overall, and while the storage
    is live), plus the set of live storages that makes the pool impossible
    when one is cheap to find. Returns the message and whether it proves
    that the storage fits nowhere (no pool, or each candidate impossible).
    """
    problem = group.problem
    by_id = {b.id: b for b in problem.buffers}
    proofs: dict[str, dict[str, tuple[int, list[Buffer]]]] = {}
    for buffer_id in unplaced:
        buffer = by_id[buffer_id]
        proofs[buffer_id] = {}
        for pool in problem.candidate_pools(buffer):
            proof = _blocking_set(problem, buffer, pool)
            if proof is not None:
                proofs[buffer_id][pool.name] = proof

    # Name first a storage that provably fits nowhere, else the largest.
    def rank(buffer_id: str) -> tuple[int, int, int]:
        buffer = by_id[buffer_id]
        proven = len(proofs[buffer_id]) == len(problem.candidate_pools(buffer))
        return (0 if proven else 1, -buffer.size, list(by_id).index(buffer_id))

    culprit_id = min(unplaced, key=rank)
    culprit = by_id[culprit_id]
    function, storage = group.storages[culprit_id]
    candidates = problem.candidate_pools(culprit)
    head = (
        f"usmp: {_storage_label(function, storage)} ({culprit.size} bytes, "
        f'align {culprit.alignment}, device "{culprit.device}", '
        f"{_lifetime_text(storage)}) "
        + ("fits in none of its candidate pools" if candidates else "has no pool it may use")
    )
    lines: list[str] = []
    proven = True
    if not candidates:
        named = culprit.candidates or tuple(p.name for p in problem.pools)
        reasons = []
        for name in named:
            try:
                pool = problem.pool(name)
            except KeyError:
                reasons.append(f"@{name}: no such pool")
                continue
            if pool.targets is not None and culprit.device not in pool.targets:
                targets = ", ".join(f'"{target}"' for target in pool.targets)
                reasons.append(f"@{name}: targets [{targets}]")
            elif pool.access == "ro":
                reasons.append(f"@{name}: read-only and the storage is written")
        lines = reasons
    used = solution.used(problem)
    for pool in candidates:
        size = "unbounded" if pool.size is None else f"size {pool.size}"
        peak = used.get(pool.name, 0)
        line = f"@{pool.name}: {size}, peak {peak}"
        reach = _peak_during(problem, solution, culprit, pool)
        if reach != peak:
            line += f", storages live with it reach {reach}"
        proof = proofs[culprit_id].get(pool.name)
        if pool.size is not None and culprit.size > pool.size:
            line += "; the storage is larger than the pool"
        elif proof is not None:
            need, live = proof
            line += (
                f"; impossible: live together with {_live_set_text(group, live)}, "
                f"it needs {need} bytes"
            )
        else:
            line += f"; no gap found by algorithm={algorithm}"
            proven = False
        lines.append(line)
    if len(storage.tensors) > 1:
        lines.append(_members_text(storage, candidates))
    others = len(unplaced) - 1
    if others:
        lines.append(f"({others} other storage{'s' if others > 1 else ''} did not fit either)")
    text = head + ("" if not lines else ":\n" + "\n".join(f"  {line}" for line in lines))
    return Failure(text, storage.alloc), proven


def invalid_plan_diagnostic(group: Group, solution: Solution, findings: Sequence[Finding]) -> str:
    """What is wrong with a plan that ``validate`` rejects, in storage names.

    Storages are planned around pinned ones, so this only happens when the
    input pins break the rules themselves (e.g. two pinned storages live
    together at overlapping bytes).
    """
    by_id = {buffer.id: buffer for buffer in group.problem.buffers}
    texts = []
    for finding in findings:
        if finding.kind == "overlap":
            parts = []
            for buffer_id in finding.buffers:
                function, storage = group.storages[buffer_id]
                placement = solution.placements[buffer_id]
                top = placement.offset + by_id[buffer_id].size
                parts.append(
                    f"{_storage_label(function, storage)} (bytes [{placement.offset}, {top}) "
                    f"of @{placement.pool}, {_lifetime_text(storage)})"
                )
            texts.append(f"{parts[0]} and {parts[1]} are live together but share bytes")
            continue
        message = finding.message
        for buffer_id in finding.buffers:
            function, storage = group.storages[buffer_id]
            message = message.replace(f"buffer '{buffer_id}'", _storage_label(function, storage))
        texts.append(message)
    head = "usmp: the pinned storages break the plan's rules (fix the pins or use replan=true)"
    return head + ":\n" + "\n".join(f"  {text}" for text in texts)
