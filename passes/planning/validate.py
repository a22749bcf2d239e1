"""An independent checker for plans: what is wrong, precisely, and where.

``validate(problem, solution)`` returns a list of ``Finding``s (empty for a
valid plan). Overlaps are found by a sweep over time per pool
(``intervals.overlapping_live_pairs``): O((n + k) log n) for ``k``
address-overlapping live pairs, so it scales to 100k buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memplan.passes.planning.intervals import overlapping_live_pairs
from memplan.passes.planning.model import Buffer, Placement, Problem, Solution

FindingKind = Literal[
    "overlap",
    "misaligned",
    "out-of-bounds",
    "unplaced",
    "unknown-buffer",
    "unknown-pool",
    "wrong-pool",
    "moved-pinned",
]


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a plan. ``message`` is a complete diagnostic."""

    kind: FindingKind
    message: str
    buffers: tuple[str, ...] = ()
    pool: str | None = None

    def __str__(self) -> str:
        return self.message


def _where(buffer: Buffer, placement: Placement) -> str:
    top = placement.offset + buffer.size
    return (
        f"'{buffer.id}' (bytes [{placement.offset}, {top}) of @{placement.pool}, "
        f"live [{buffer.start}, {buffer.end}))"
    )


def _check_single(problem: Problem, buffer: Buffer, placement: Placement) -> list[Finding]:
    """Per-buffer rules: pool choice, alignment, bounds, pinning."""
    findings: list[Finding] = []
    names = {p.name for p in problem.pools}
    if placement.pool not in names:
        return [
            Finding(
                "unknown-pool",
                f"buffer '{buffer.id}' is placed in unknown pool @{placement.pool}",
                (buffer.id,),
                placement.pool,
            )
        ]
    pool = problem.pool(placement.pool)
    allowed = [p.name for p in problem.candidate_pools(buffer)]
    if pool.name not in allowed:
        if buffer.candidates and pool.name not in buffer.candidates:
            why = f"not among its candidates [{', '.join('@' + c for c in buffer.candidates)}]"
        elif pool.targets is not None and buffer.device not in pool.targets:
            why = f"device '{buffer.device}' is not in its targets {list(pool.targets)}"
        else:
            why = "the pool is read-only and the buffer is written"
        findings.append(
            Finding(
                "wrong-pool",
                f"buffer '{buffer.id}' may not be placed in @{pool.name}: {why}",
                (buffer.id,),
                pool.name,
            )
        )
    if placement.offset < 0:
        findings.append(
            Finding(
                "out-of-bounds",
                f"buffer '{buffer.id}' has negative offset {placement.offset} in @{pool.name}",
                (buffer.id,),
                pool.name,
            )
        )
    if placement.offset % buffer.alignment:
        findings.append(
            Finding(
                "misaligned",
                f"buffer '{buffer.id}' at offset {placement.offset} in @{pool.name} "
                f"is not a multiple of its alignment {buffer.alignment}",
                (buffer.id,),
                pool.name,
            )
        )
    if placement.offset % pool.alignment:
        findings.append(
            Finding(
                "misaligned",
                f"buffer '{buffer.id}' at offset {placement.offset} in @{pool.name} "
                f"is not a multiple of the pool alignment {pool.alignment}",
                (buffer.id,),
                pool.name,
            )
        )
    top = placement.offset + buffer.size
    if pool.size is not None and top > pool.size:
        findings.append(
            Finding(
                "out-of-bounds",
                f"buffer '{buffer.id}' at bytes [{placement.offset}, {top}) "
                f"runs past the end of @{pool.name} (size {pool.size})",
                (buffer.id,),
                pool.name,
            )
        )
    if buffer.pinned_offset is not None and (
        placement.offset != buffer.pinned_offset or (allowed and pool.name != allowed[0])
    ):
        pinned_pool = allowed[0] if allowed else "?"
        findings.append(
            Finding(
                "moved-pinned",
                f"buffer '{buffer.id}' is pinned at @{pinned_pool}[{buffer.pinned_offset}] "
                f"but placed at @{pool.name}[{placement.offset}]",
                (buffer.id,),
                pool.name,
            )
        )
    return findings


def _overlaps(pool: str, placed: list[tuple[Buffer, Placement]]) -> list[Finding]:
    """Pairs of conflicting buffers sharing bytes of one pool (time sweep)."""
    buffers = [buffer for buffer, _ in placed]
    offsets = [placement.offset for _, placement in placed]
    findings: list[Finding] = []
    for earlier, later in overlapping_live_pairs(buffers, offsets):
        first, second = sorted([placed[earlier], placed[later]], key=lambda bp: bp[0].id)
        findings.append(
            Finding(
                "overlap",
                f"buffers {_where(*first)} and {_where(*second)} are live together but share bytes",
                (first[0].id, second[0].id),
                pool,
            )
        )
    return findings


def validate(problem: Problem, solution: Solution) -> list[Finding]:
    """Every way ``solution`` breaks the rules of ``problem`` (empty when valid).

    Checks: each buffer is placed exactly in a pool it may use (candidates,
    device targets, ``ro`` access), at an offset that is a non-negative
    multiple of its own and the pool's alignment, within a bounded pool's size,
    at its pinned offset if it has one; no two conflicting buffers share bytes;
    no placement names an unknown buffer.
    """
    findings: list[Finding] = []
    by_id = {b.id: b for b in problem.buffers}
    for buffer_id in solution.placements:
        if buffer_id not in by_id:
            findings.append(
                Finding(
                    "unknown-buffer",
                    f"the plan places '{buffer_id}', which is not a buffer of the problem",
                    (buffer_id,),
                )
            )
    per_pool: dict[str, list[tuple[Buffer, Placement]]] = {}
    names = {p.name for p in problem.pools}
    for buffer in problem.buffers:
        placement = solution.placements.get(buffer.id)
        if placement is None:
            findings.append(
                Finding(
                    "unplaced",
                    f"buffer '{buffer.id}' ({buffer.size} bytes) is not placed",
                    (buffer.id,),
                )
            )
            continue
        findings.extend(_check_single(problem, buffer, placement))
        if placement.pool in names:
            per_pool.setdefault(placement.pool, []).append((buffer, placement))
    for pool in problem.pools:
        findings.extend(_overlaps(pool.name, per_pool.get(pool.name, [])))
    return findings
