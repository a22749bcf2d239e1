"""Parametric plans: offsets that are functions of the buffer sizes, valid
for every sizes vector up to the maximum sizes.

A dynamic dim makes a buffer's size a function of the dim; the planner plans
at the upper bound (every buffer at its maximum size). This module turns
that plan into an *offset program* valid at every smaller size.

Construction. Take a plan of the problem (a ``Solution``, at the maximum
sizes or at any sizes vector it is valid at). Two buffers *conflict* when
they share a pool, ``Buffer.conflicts_with`` holds and both have a positive
maximum size (a buffer that is empty at its maximum is empty everywhere and
overlaps nothing, as in ``validate``); the pairs are the planning core's own
``intervals.overlapping_live_pairs`` with every offset at 0. The plan's
offsets rank the buffers (by offset, then top, then problem order: a strict
total order), and for each buffer ``i``, ``below(i)`` is the conflicting
buffers ranked before it. At a sizes vector ``s`` (``0 <= s_i <= max_i``),
in rank order::

    offset_i = pinned_offset_i                          if i is pinned
    offset_i = align_up(max(0, max_{j in below(i)} offset_j + s_j), a_i)
    pool_p   = max_{i in p} (offset_i + s_i)             (0 for an empty pool)

with ``a_i`` the pool's alignment for ``i`` (``Pool.alignment_for``).

Validity at every sizes vector, without sampling. Every conflicting pair is
ordered by ``below`` (the rank is total), so for an unpinned ``i`` and ``j``
in ``below(i)``, ``offset_i >= offset_j + s_j`` by construction, whatever
``s``. ``max``, ``+`` and ``align_up`` are monotone, so every offset is a
non-decreasing function of ``s`` (induction over the rank order): an offset
is at most its value at the maximum sizes. For a pinned ``i`` and ``j`` in
``below(i)`` it is then enough that ``offset_j + max_j <= pinned_i`` at the
maximum sizes, which ``check_parametric`` verifies, and which holds when the
plan is valid at the maximum sizes (next paragraph). For the same reason a
bounded pool that holds the evaluation at the maximum sizes holds it at
every sizes vector.

Bound. Let ``P`` be a plan valid at the maximum sizes and ``C`` the
evaluation of ``derive_parametric(problem, P)`` at the maximum sizes.
Induction over the rank order gives ``C_i <= P_i`` for every buffer
(``P_i`` is a multiple of ``a_i`` and at or above the top of every
conflicting buffer ranked below it), hence at every sizes vector each pool
is at most ``P``'s pool. ``C`` is ``P`` with every unpinned buffer dropped
onto the highest conflicting buffer below it (or the floor), a *compaction*.
``C`` equals ``P`` exactly when ``P`` is compact (every unpinned buffer rests
on the floor or, aligned, on a conflicting buffer below it: the plans of the
greedy placers are); then the pools at the maximum sizes equal ``P``'s. The
pools of ``C`` also equal ``P``'s whenever ``P``'s pools are minimal (``C``
is itself a valid plan at the maximum sizes). Compaction keeps the order of
every conflicting pair, so deriving again from ``C`` gives ``C`` back.

``choose_parametric`` picks, among plans induced by other solutions (static
plans at sample sizes), the order whose evaluation is closest to the static
plans at the samples, without making the maximum sizes' pools larger.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from memplan.passes.planning.intervals import overlapping_live_pairs
from memplan.passes.planning.model import Buffer, Placement, Problem, Solution, align_up
from memplan.passes.planning.validate import validate

Sizes = Sequence[int]
"""One non-negative size per buffer, in the order of ``Problem.buffers``."""


@dataclass(frozen=True)
class ParametricPlan:
    """An offset program: per buffer (in problem order) its pool, the buffers
    that sit below it, its offset alignment, its pinned offset and its
    maximum size; ``order`` lists every buffer after all of its ``below``."""

    ids: tuple[str, ...]
    pools: tuple[str, ...]
    below: tuple[tuple[int, ...], ...]
    alignments: tuple[int, ...]
    pinned: tuple[int | None, ...]
    max_sizes: tuple[int, ...]
    order: tuple[int, ...]
    pool_names: tuple[str, ...]
    """Every pool of the problem, so evaluations report empty pools too."""


@dataclass(frozen=True)
class Evaluation:
    """A parametric plan at one sizes vector: offsets in problem order and
    the bytes each pool takes."""

    offsets: tuple[int, ...]
    pools: dict[str, int]

    @property
    def total(self) -> int:
        """Bytes over all pools."""
        return sum(self.pools.values())


def max_sizes(problem: Problem) -> tuple[int, ...]:
    """The sizes vector of ``problem`` itself (its maximum sizes)."""
    return tuple(buffer.size for buffer in problem.buffers)


def at_sizes(problem: Problem, sizes: Sizes) -> Problem:
    """``problem`` with each buffer resized to ``sizes`` (same lifetimes, pools)."""
    if len(sizes) != len(problem.buffers):
        raise ValueError(f"{len(sizes)} sizes for {len(problem.buffers)} buffers")
    buffers = tuple(
        replace(buffer, size=size) for buffer, size in zip(problem.buffers, sizes, strict=True)
    )
    return Problem(buffers, problem.pools)


def conflicting_pairs(problem: Problem, pools: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of buffers placed in one pool (``pools[i]``) that conflict
    and both have a positive size in ``problem``: the pairs that must never
    share bytes."""
    by_pool: dict[str, list[int]] = {}
    for index, pool in enumerate(pools):
        by_pool.setdefault(pool, []).append(index)
    pairs: list[tuple[int, int]] = []
    for members in by_pool.values():
        buffers = [problem.buffers[i] for i in members]
        for a, b in overlapping_live_pairs(buffers, [0] * len(buffers)):
            pairs.append((members[a], members[b]))
    return pairs


def derive_parametric(
    problem: Problem, solution: Solution, sizes: Sizes | None = None
) -> ParametricPlan:
    """The offset program ordered like ``solution``.

    ``problem`` holds the maximum sizes; ``solution`` must be a valid plan
    of ``problem`` at ``sizes`` (default: the maximum sizes; a
    ``ValueError`` says what is wrong with it otherwise).
    """
    maxima = max_sizes(problem)
    at = tuple(sizes) if sizes is not None else maxima
    _check_sizes(problem.buffers, maxima, at)
    findings = validate(at_sizes(problem, at), solution)
    if findings:
        raise ValueError(f"the plan is not valid at its sizes: {findings[0]}")
    placements = [solution.placements[buffer.id] for buffer in problem.buffers]
    pools = tuple(placement.pool for placement in placements)
    ranked = sorted(
        range(len(placements)),
        key=lambda i: (placements[i].offset, placements[i].offset + at[i], i),
    )
    rank = {index: position for position, index in enumerate(ranked)}
    below: list[list[int]] = [[] for _ in placements]
    for a, b in conflicting_pairs(problem, pools):
        lower, upper = (a, b) if rank[a] < rank[b] else (b, a)
        below[upper].append(lower)
    return ParametricPlan(
        ids=tuple(buffer.id for buffer in problem.buffers),
        pools=pools,
        below=tuple(tuple(sorted(js, key=rank.__getitem__)) for js in below),
        alignments=tuple(
            problem.pool(pool).alignment_for(buffer)
            for buffer, pool in zip(problem.buffers, pools, strict=True)
        ),
        pinned=tuple(buffer.pinned_offset for buffer in problem.buffers),
        max_sizes=maxima,
        order=tuple(ranked),
        pool_names=tuple(pool.name for pool in problem.pools),
    )


def _check_sizes(buffers: Sequence[Buffer | str], maxima: Sizes, sizes: Sizes) -> None:
    if len(sizes) != len(maxima):
        raise ValueError(f"{len(sizes)} sizes for {len(maxima)} buffers")
    for buffer, size, most in zip(buffers, sizes, maxima, strict=True):
        if not 0 <= size <= most:
            name = buffer if isinstance(buffer, str) else buffer.id
            raise ValueError(f"buffer '{name}': size {size} is outside [0, {most}]")


def stack_offsets(
    order: Iterable[int],
    below: Sequence[Sequence[int]],
    alignments: Sequence[int],
    sizes: Sizes,
    pinned: Sequence[int | None] | None = None,
) -> list[int]:
    """The offset program's formula: in ``order`` (every index after all of
    its ``below``), ``offset_i = pinned_i`` if pinned, else
    ``align_up(max(0, offset_j + sizes_j for j in below_i), alignments_i)``.

    The one evaluation of an offset program: ``evaluate`` runs it on a
    ``ParametricPlan``, and the IR's reader
    (``passes.analysis.parametric``) on the slots of a pool.
    """
    offsets = [0] * len(alignments)
    for i in order:
        fixed = pinned[i] if pinned is not None else None
        if fixed is not None:
            offsets[i] = fixed
            continue
        floor = 0
        for j in below[i]:
            top = offsets[j] + sizes[j]
            if top > floor:
                floor = top
        offsets[i] = align_up(floor, alignments[i])
    return offsets


def evaluate(plan: ParametricPlan, sizes: Sizes | None = None) -> Evaluation:
    """The offsets and pool sizes of ``plan`` at ``sizes`` (default: the
    maximum sizes); each size must lie in ``[0, max]``."""
    at = tuple(sizes) if sizes is not None else plan.max_sizes
    _check_sizes(plan.ids, plan.max_sizes, at)
    offsets = stack_offsets(plan.order, plan.below, plan.alignments, at, plan.pinned)
    pools = dict.fromkeys(plan.pool_names, 0)
    for i, pool in enumerate(plan.pools):
        pools[pool] = max(pools.get(pool, 0), offsets[i] + at[i])
    return Evaluation(tuple(offsets), pools)


def as_solution(plan: ParametricPlan, evaluation: Evaluation) -> Solution:
    """An evaluation as a ``Solution`` (for ``validate`` and the reports)."""
    return Solution(
        {
            name: Placement(pool, offset)
            for name, pool, offset in zip(plan.ids, plan.pools, evaluation.offsets, strict=True)
        }
    )


def reachable_below(order: Iterable[int], below: Sequence[Sequence[int]]) -> list[int]:
    """Per index, the indices below it directly or through others (the
    transitive closure of ``below``), as bit sets; ``order`` lists every
    index after all of its ``below``. Two conflicting buffers are ordered by
    a program when one is in the other's set."""
    reach = [0] * len(below)
    for i in order:
        bits = 0
        for j in below[i]:
            bits |= reach[j] | (1 << j)
        reach[i] = bits
    return reach


def check_parametric(problem: Problem, plan: ParametricPlan) -> list[str]:
    """Why ``plan`` is not valid for ``problem`` at every sizes vector up to
    its sizes (empty when it is).

    Rebuilds the conflicting pairs itself and checks: the buffers, sizes and
    pools match the problem; ``order`` puts every buffer after its
    ``below``; every conflicting pair is ordered by ``below``, directly or
    through other buffers; alignments honour the pool's; pinned buffers sit
    at their pinned offset, above everything below them at the maximum
    sizes; bounded pools hold the maximum sizes' evaluation.
    """
    buffers = problem.buffers
    n = len(buffers)
    if plan.ids != tuple(b.id for b in buffers):
        return ["the plan's buffers are not the problem's"]
    if plan.max_sizes != max_sizes(problem):
        return ["the plan's maximum sizes are not the problem's sizes"]
    fields = (plan.pools, plan.below, plan.alignments, plan.pinned)
    if any(len(field) != n for field in fields) or sorted(plan.order) != list(range(n)):
        return ["the plan's fields do not have one entry per buffer"]
    findings: list[str] = []
    for buffer, pool, alignment, pinned in zip(
        buffers, plan.pools, plan.alignments, plan.pinned, strict=True
    ):
        allowed = [p.name for p in problem.candidate_pools(buffer)]
        if pool not in allowed:
            findings.append(f"buffer '{buffer.id}' may not be placed in @{pool}")
            continue
        needed = problem.pool(pool).alignment_for(buffer)
        if alignment % needed:
            findings.append(
                f"buffer '{buffer.id}': alignment {alignment} is not a multiple of {needed}"
            )
        if pinned != buffer.pinned_offset or (pinned is not None and pool != allowed[0]):
            findings.append(
                f"buffer '{buffer.id}' is pinned at {buffer.pinned_offset} "
                f"but the plan has @{pool}[{pinned}]"
            )
    if findings:
        return findings
    position = {index: k for k, index in enumerate(plan.order)}
    for i, js in enumerate(plan.below):
        for j in js:
            if position[j] >= position[i] or plan.pools[j] != plan.pools[i]:
                findings.append(
                    f"'{buffers[j].id}' is below '{buffers[i].id}' but comes after it "
                    "in the order or sits in another pool"
                )
    if findings:
        return findings
    reach = reachable_below(plan.order, plan.below)
    for a, b in conflicting_pairs(problem, plan.pools):
        if not (reach[a] >> b) & 1 and not (reach[b] >> a) & 1:
            first, second = sorted((buffers[a].id, buffers[b].id))
            findings.append(
                f"buffers '{first}' and '{second}' conflict in @{plan.pools[a]} "
                "but neither is below the other"
            )
    at_max = evaluate(plan)
    for i, pinned in enumerate(plan.pinned):
        if pinned is None:
            continue
        for j in plan.below[i]:
            top = at_max.offsets[j] + plan.max_sizes[j]
            if top > pinned:
                findings.append(
                    f"buffer '{buffers[j].id}' reaches {top} at its maximum size, above "
                    f"'{buffers[i].id}' pinned at {pinned}"
                )
    for pool in problem.pools:
        used = at_max.pools.get(pool.name, 0)
        if pool.size is not None and used > pool.size:
            findings.append(
                f"@{pool.name} takes {used} bytes at the maximum sizes, more than its {pool.size}"
            )
    return findings


@dataclass(frozen=True)
class Choice:
    """The order ``choose_parametric`` kept: its plan, which candidate it
    came from (``None``: the bound's own order), and its ratio of bytes to
    the static plan's at each sample."""

    plan: ParametricPlan
    candidate: int | None
    ratios: tuple[Fraction, ...]

    @property
    def worst(self) -> Fraction:
        """The largest ratio over the samples (1 without samples)."""
        return max(self.ratios, default=Fraction(1))


def choose_parametric(
    problem: Problem,
    bound: Solution,
    candidates: Sequence[tuple[Sizes, Solution]],
    samples: Sequence[tuple[Sizes, int]],
) -> Choice:
    """The best order among the bound plan's and the candidates'.

    ``problem`` holds the maximum sizes and ``bound`` plans it; each
    candidate is a solution with the sizes vector it is valid at (a static
    plan at a sample size); each sample is a sizes vector with the bytes
    (over all pools) of the static plan there. Kept: candidates whose
    program passes ``check_parametric`` and, at the maximum sizes, takes no
    more bytes in any pool than ``bound``; among them the lowest worst ratio
    over the samples, ties to the bound's own order, then to the earliest
    candidate.
    """
    limit = bound.used(problem)

    def score(plan: ParametricPlan, candidate: int | None) -> Choice:
        ratios = []
        for sizes, static in samples:
            total = evaluate(plan, sizes).total
            ratios.append(
                Fraction(total, static) if static else Fraction(1 if not total else 2**62)
            )
        return Choice(plan, candidate, tuple(ratios))

    best = score(derive_parametric(problem, bound), None)
    for index, (sizes, solution) in enumerate(candidates):
        try:
            plan = derive_parametric(problem, solution, sizes)
        except ValueError:
            continue
        if check_parametric(problem, plan):
            continue
        at_max = evaluate(plan).pools
        if any(used > limit.get(pool, 0) for pool, used in at_max.items()):
            continue
        choice = score(plan, index)
        if choice.worst < best.worst:
            best = choice
    return best
