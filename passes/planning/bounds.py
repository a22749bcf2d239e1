"""Lower bounds on pool usage: the peak of live bytes over time.

Any set of buffers that pairwise conflict must be stacked without overlap, so
the pool they share needs at least the sum of their sizes. At one time point
the live buffers form such a set, except that buffers in different regions of
one ``scf.if`` never conflict: there the regions combine as ``max``, not sum
(`BranchTree`). The bound is the maximum of that quantity over time.

Alignment: when every offset in a pool is a multiple of ``g`` (the gcd of the
effective alignments), stacking ``k`` buffers costs at least the sum of their
sizes rounded up to ``g``, minus the rounding of the top one. Subtracting the
largest rounding of any buffer keeps the bound valid for every clique.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import accumulate
from math import gcd

from memplan.passes.planning.intervals import sweep_events
from memplan.passes.planning.model import Buffer, Pool, Problem, align_up, candidate_key

PoolKey = str | tuple[str, ...]
"""A pool name, or the names of a group of pools whose *total* use is bounded."""

Path = tuple[tuple[int, int], ...]


class BranchTree:
    """Live bytes of a set of buffers, with exclusive ``scf.if`` regions.

    Each node is a branch path (a region). Its value is the bytes live directly
    in it plus, for every ``scf.if`` nested in it, the largest value among that
    if's regions. ``total`` (the root's value) is then the largest sum of
    pairwise conflicting live buffers. Updates cost O(depth x regions).
    """

    def __init__(self) -> None:
        self._own: dict[Path, int] = {(): 0}
        self._value: dict[Path, int] = {(): 0}
        # (parent path, choice id) -> {region index: child path}
        self._regions: dict[tuple[Path, int], dict[int, Path]] = {}
        self._choice_max: dict[tuple[Path, int], int] = {}

    @property
    def total(self) -> int:
        return self._value[()]

    def _ensure(self, path: Path) -> None:
        for depth in range(1, len(path) + 1):
            node = path[:depth]
            if node in self._own:
                continue
            self._own[node] = 0
            self._value[node] = 0
            choice, region = node[-1]
            key = (node[:-1], choice)
            self._regions.setdefault(key, {})[region] = node
            self._choice_max.setdefault(key, 0)

    def add(self, path: Path, delta: int) -> None:
        """Add ``delta`` live bytes at ``path`` (negative to remove)."""
        self._ensure(path)
        self._own[path] += delta
        self._value[path] += delta
        node = path
        while node:
            parent = node[:-1]
            key = (parent, node[-1][0])
            new_max = max(self._value[child] for child in self._regions[key].values())
            change = new_max - self._choice_max[key]
            if change == 0:
                return
            self._choice_max[key] = new_max
            self._value[parent] += change
            node = parent


def _paths_are_trees(buffers: Sequence[Buffer]) -> bool:
    """True when every ``scf.if`` id appears under one single enclosing path.

    The region tree bound is only a valid clique when the paths nest properly;
    otherwise the caller falls back to a weaker bound.
    """
    parent_of: dict[int, Path] = {}
    for buffer in buffers:
        for depth, (choice, _) in enumerate(buffer.branch):
            prefix = buffer.branch[:depth]
            if parent_of.setdefault(choice, prefix) != prefix:
                return False
    return True


def peak_live_bytes(
    buffers: Sequence[Buffer],
    sizes: Sequence[int] | None = None,
    events: list[tuple[int, int, int]] | None = None,
) -> int:
    """Max over time of the largest sum of ``sizes`` of pairwise conflicting live buffers.

    ``sizes`` defaults to the buffer sizes; ``events`` may pass the sorted
    sweep events of ``buffers`` when the caller already has them. Exclusive ``scf.if`` regions
    combine as ``max``. When branch paths do not nest consistently, falls back
    to (unbranched live bytes + the largest branched live buffer), still valid.
    """
    if sizes is None:
        sizes = [b.size for b in buffers]
    if events is None and not any(b.branch for b in buffers):
        # No exclusive regions: the largest running sum of the net change at
        # each time (ends and starts at one time net out before the peak is
        # taken, as ends sorting first would), without sorting every event.
        change: dict[int, int] = {}
        for buffer, size in zip(buffers, sizes):
            change[buffer.start] = change.get(buffer.start, 0) + size
            change[buffer.end] = change.get(buffer.end, 0) - size
        return max(accumulate(change[time] for time in sorted(change)), default=0)
    if events is None:
        events = sweep_events(buffers)
    best = 0
    if not any(b.branch for b in buffers):
        live = 0
        for _, kind, index in events:
            if kind:
                live += sizes[index]
                if live > best:
                    best = live
            else:
                live -= sizes[index]
        return best
    if _paths_are_trees(buffers):
        tree = BranchTree()
        for _, kind, index in events:
            size = sizes[index]
            tree.add(buffers[index].branch, size if kind else -size)
            if kind and tree.total > best:
                best = tree.total
        return best
    # Fallback: unbranched buffers conflict with every live buffer, so they
    # plus any single branched one form a clique.
    plain = 0
    branched: Counter[int] = Counter()
    heap: list[int] = []
    for _, kind, index in events:
        size = sizes[index]
        if not buffers[index].branch:
            plain += size if kind else -size
        elif kind:
            branched[size] += 1
            heapq.heappush(heap, -size)
        else:
            branched[size] -= 1
        while heap and branched[-heap[0]] <= 0:
            heapq.heappop(heap)
        if kind:
            best = max(best, plain + (-heap[0] if heap else 0))
    return best


def buffers_lower_bound(buffers: Iterable[Buffer], pool_alignment: int = 1) -> int:
    """A lower bound on the bytes one pool needs to hold ``buffers`` together.

    Every offset is a multiple of ``lcm(buffer.alignment, pool_alignment)``;
    the bound uses the gcd of those to round sizes up (see module docstring).
    """
    buffers = list(buffers)
    if not buffers:
        return 0
    # Sorted events only where exclusive regions need a sweep (see ``peak_live_bytes``).
    events = sweep_events(buffers) if any(b.branch for b in buffers) else None
    plain = peak_live_bytes(buffers, events=events)
    # The gcd of each buffer's alignment in the pool, over one buffer per
    # distinct alignment.
    pool = Pool("_", alignment=pool_alignment)
    step = gcd(*(pool.alignment_for(b) for b in {b.alignment: b for b in buffers}.values()))
    if step <= 1:
        return plain
    rounded = [align_up(b.size, step) for b in buffers]
    slack = max(r - b.size for r, b in zip(rounded, buffers))
    return max(plain, peak_live_bytes(buffers, rounded, events) - slack)


def forced_pool(problem: Problem, buffer: Buffer) -> Pool | None:
    """The only pool ``buffer`` can go to (pinned, or a single candidate), if any."""
    pools = problem.candidate_pools(buffer)
    if buffer.pinned_offset is not None and pools:
        return pools[0]
    return pools[0] if len(pools) == 1 else None


def pool_groups(problem: Problem) -> dict[str, str]:
    """Each pool's group, named by its first pool in problem order.

    Pools are linked when one buffer that is not forced into a single pool
    (``forced_pool``) may use both. No buffer can move from one group to
    another, so each group's use is bounded (and planned) on its own.
    """
    order = {pool.name: index for index, pool in enumerate(problem.pools)}
    parent = {name: name for name in order}
    if len(order) == 1:
        return parent  # one pool: nothing to link

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for buffer in problem.buffers:
        if forced_pool(problem, buffer) is not None:
            continue
        names = [pool.name for pool in problem.candidate_pools(buffer)]
        for name in names[1:]:
            first, other = find(names[0]), find(name)
            if first != other:
                # The root is the pool that comes first in problem order.
                low, high = sorted((first, other), key=order.__getitem__)
                parent[high] = low
    return {name: find(name) for name in parent}


def lower_bound(problem: Problem) -> dict[PoolKey, int]:
    """Lower bounds on pool usage, keyed by pool name or group of pool names.

    ``bound[pool.name]`` bounds ``used`` of that pool from the buffers that can
    only go there (every pool has an entry, 0 when nothing is forced into it).
    For buffers with several candidates, pools linked by shared candidates form
    a group; ``bound[(name, ...)]`` (names in problem order) bounds the *sum*
    of ``used`` over the group, from every buffer that can only use its pools.
    Buffers no pool accepts are left out (they cannot be placed at all).
    """
    # Computed once per problem: the CLI, the greedy stage and the search all ask.
    return dict(problem.derived("lower_bound", lambda: _lower_bound(problem)))


def _one_pool_buffers(problem: Problem) -> list[Buffer]:
    """With one pool: the buffers it accepts (each forced there; the others
    have no pool), looking up each distinct candidate list once."""
    keys = list(map(candidate_key, problem.buffers))
    # One buffer per distinct key (the last one: any would do).
    accepted = {
        key: bool(problem.candidate_pools(buffer))
        for key, buffer in dict(zip(keys, problem.buffers)).items()
    }
    if all(accepted.values()):
        return list(problem.buffers)
    return [buffer for buffer, key in zip(problem.buffers, keys) if accepted[key]]


def _lower_bound(problem: Problem) -> dict[PoolKey, int]:
    if len(problem.pools) == 1:
        pool = problem.pools[0]
        return {pool.name: buffers_lower_bound(_one_pool_buffers(problem), pool.alignment)}
    bounds: dict[PoolKey, int] = {}
    forced: dict[str, list[Buffer]] = {pool.name: [] for pool in problem.pools}
    group_of = pool_groups(problem)
    groups: dict[str, list[str]] = {}
    for pool in problem.pools:
        groups.setdefault(group_of[pool.name], []).append(pool.name)
    members: dict[str, list[Buffer]] = {root: [] for root in groups}
    for buffer in problem.buffers:
        pool = forced_pool(problem, buffer)
        if pool is not None:
            forced[pool.name].append(buffer)
            continue
        candidates = problem.candidate_pools(buffer)
        if candidates:
            members[group_of[candidates[0].name]].append(buffer)

    for pool in problem.pools:
        bounds[pool.name] = buffers_lower_bound(forced[pool.name], pool.alignment)

    for root, names in groups.items():
        if len(names) < 2:
            continue
        group_buffers = [b for name in names for b in forced[name]] + members[root]
        # Plain sizes: per-pool alignment rounding does not add up across pools.
        bounds[tuple(names)] = peak_live_bytes(group_buffers)
    return bounds


def first_choice_bounds(problem: Problem) -> dict[str, int]:
    """Per pool, the lower bound of the buffers whose first candidate it is:
    the pool's use in any plan that puts every buffer in its first candidate
    is at least this (the greedy plan's proof of optimality)."""

    def compute() -> dict[str, int]:
        if len(problem.pools) == 1:
            # Every buffer the pool accepts is forced there: ``lower_bound``'s set.
            return {problem.pools[0].name: lower_bound(problem)[problem.pools[0].name]}
        members: dict[str, list[Buffer]] = {pool.name: [] for pool in problem.pools}
        forced_everywhere = True
        for buffer in problem.buffers:
            pools = problem.candidate_pools(buffer)
            if pools:
                members[pools[0].name].append(buffer)
                forced_everywhere = forced_everywhere and forced_pool(problem, buffer) is not None
        if forced_everywhere:
            # Each buffer's first candidate is its only choice: ``lower_bound``'s sets.
            bounds = lower_bound(problem)
            return {pool.name: bounds[pool.name] for pool in problem.pools}
        return {
            pool.name: buffers_lower_bound(members[pool.name], pool.alignment)
            for pool in problem.pools
        }

    return dict(problem.derived("first_choice_bounds", compute))
