"""``usmp``: pin every static storage to a memory pool at a byte offset (TVM USMP)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import lcm
from typing import Literal, TypeVar

from memplan.dialect.diagnostics import at_op
from memplan.dialect.ops import (
    DEFAULT_STORAGE_ALIGNMENT,
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
    PoolOp,
)
from memplan.passes.analysis import (
    FunctionLifetimes,
    LiveInterval,
    ModuleLifetimes,
    StorageLifetime,
    TensorLifetime,
    analyze_function,
    analyze_module,
    pools_of,
)
from memplan.passes.analysis.forms import remark_value_semantic
from memplan.passes.planning.algorithms import AlgorithmName, PlanOptions, solve
from memplan.passes.planning.bounds import buffers_lower_bound, forced_pool, pool_groups
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.validate import Finding, validate
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolOpInterface
from xdsl.utils.exceptions import PassFailedException

PlanningScope = Literal["function", "module"]

OpT = TypeVar("OpT", bound=Operation)

GREEDY_ALGORITHMS = ("greedy-by-size", "greedy-by-conflicts")

DEFAULT_POOL_PREFIX = "workspace_"
"""Pools made for a module without any: ``@workspace_<device>``."""


@dataclass
class Group:
    """Functions planned together: one ``Problem`` on one time line."""

    functions: list[FunctionLifetimes]
    storages: dict[str, tuple[FunctionLifetimes, StorageLifetime]]
    problem: Problem


Component = str | None
"""A set of pools linked by storages that may use several of them, named by
its first pool; ``None`` for storages that may use no pool at all."""


@dataclass
class Plan:
    """A plan of a whole module: where each storage goes and what each pool uses.

    ``placements`` is keyed by the storage's ``alloc_storage`` op; ``used``
    holds every pool of the module (0 when nothing went there). Storages
    left unplaced are counted per pool component, with the first complete
    diagnostic of each component in ``failures``.
    """

    placements: dict[AllocStorageOp, Placement] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    unplaced: dict[Component, int] = field(default_factory=dict)
    failures: dict[Component, Failure] = field(default_factory=dict)

    def fail(self, component: Component, count: int, message: Failure) -> None:
        self.unplaced[component] = self.unplaced.get(component, 0) + count
        self.failures.setdefault(component, message)

    def cost(
        self, component: Component, pools: Sequence[str]
    ) -> tuple[int, int, tuple[int, ...]]:
        """Smaller is better: storages left unplaced, total bytes, bytes per pool."""
        used = tuple(self.used.get(pool, 0) for pool in pools)
        return (self.unplaced.get(component, 0), sum(used), used)


def pool_components(lifetimes: ModuleLifetimes) -> dict[str, str]:
    """Each pool's component: pools are linked when one storage may use both.

    Plans of different components never interact (no storage can move from
    one to the other), so each can be chosen on its own.
    """
    return pool_groups(lifetimes.problem())


def planning_groups(
    lifetimes: ModuleLifetimes, scope: PlanningScope
) -> list[list[FunctionLifetimes]]:
    """The functions to plan together, in module order.

    With ``scope="module"`` that is every function. With ``"function"`` it is
    each function on its own, except that functions whose spans on the module
    time line overlap (one calls the other, so their storages can be live
    together) form one group: planning them apart could give a caller's and
    a callee's live storages the same bytes.
    """
    functions = lifetimes.functions
    if scope == "module" or not functions:
        return [list(functions)] if functions else []
    spans: list[tuple[LiveInterval, int]] = []
    for index, function in enumerate(functions):
        spans.append((lifetimes.span(function), index))
    spans.sort(key=lambda item: (item[0].start, item[1]))
    groups: list[list[int]] = []
    reach = -1
    for span, index in spans:
        if groups and span.start < reach:
            groups[-1].append(index)
            reach = max(reach, span.end)
        else:
            groups.append([index])
            reach = span.end
    return [[functions[i] for i in sorted(group)] for group in sorted(groups, key=min)]


def build_group(
    lifetimes: ModuleLifetimes, functions: Sequence[FunctionLifetimes], *, pin: bool = True
) -> Group:
    """The static storages of ``functions`` as one ``Problem`` on the module time line."""
    storages: dict[str, tuple[FunctionLifetimes, StorageLifetime]] = {}
    buffers: list[Buffer] = []
    for function in functions:
        for storage in function.static_storages:
            buffer = lifetimes.module_buffer(function, storage, pin=pin)
            storages[buffer.id] = (function, storage)
            buffers.append(buffer)
    return Group(list(functions), storages, Problem(tuple(buffers), lifetimes.pools))


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
        parts.append(
            f"{storage.label}{where} ({buffer.size} bytes, {_lifetime_text(storage)})"
        )
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


def _blocking_set(
    problem: Problem, buffer: Buffer, pool: Pool
) -> tuple[int, list[Buffer]] | None:
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


def _peak_during(
    problem: Problem, solution: Solution, buffer: Buffer, pool: Pool
) -> int:
    """The highest top, in ``pool``, of placed buffers that conflict with ``buffer``."""
    top = 0
    for other in problem.buffers:
        placement = solution.placements.get(other.id)
        if placement is None or placement.pool != pool.name:
            continue
        if other.id != buffer.id and other.conflicts_with(buffer):
            top = max(top, placement.offset + other.size)
    return top


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
        f"align {culprit.alignment}, device \"{culprit.device}\", "
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
    others = len(unplaced) - 1
    if others:
        lines.append(f"({others} other storage{'s' if others > 1 else ''} did not fit either)")
    text = head + ("" if not lines else ":\n" + "\n".join(f"  {line}" for line in lines))
    return Failure(text, storage.alloc), proven


def _invalid_plan_diagnostic(group: Group, solution: Solution, findings: Sequence[Finding]) -> str:
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


def default_pools(module: ModuleOp) -> list[PoolOp]:
    """One unbounded pool per device of a static storage, in order of first use.

    Named ``@workspace_<device>`` (with a numeric suffix should that symbol
    already exist), with ``targets [device]``.
    """
    taken = {
        op.properties["sym_name"].data  # type: ignore[union-attr]
        for op in module.ops
        if op.has_trait(SymbolOpInterface) and "sym_name" in op.properties
    }
    devices: list[str] = []
    for op in module.walk():
        if isinstance(op, AllocStorageOp) and op.byte_size is not None:
            if op.device_name not in devices:
                devices.append(op.device_name)
    pools: list[PoolOp] = []
    for device in devices:
        name = DEFAULT_POOL_PREFIX + device
        suffix = 0
        while name in taken:
            suffix += 1
            name = f"{DEFAULT_POOL_PREFIX}{device}_{suffix}"
        taken.add(name)
        pools.append(PoolOp(name, targets=[device]))
    return pools


@dataclass(frozen=True)
class UsmpPass(ModulePass):
    """Pin every static storage to a memory pool at a byte offset (TVM's USMP).

    Builds one planning `Problem` per group of functions from the lifetime
    analysis (`passes.analysis`), solves it with an algorithm of
    `passes.planning.algorithms`, and writes the plan back:
    every static `memory.alloc_storage` gets `at @pool[offset]` and every
    `memory.pool` gets `used N` (the highest byte any function uses in it;
    bounded and unbounded pools alike). Dynamic-size storages are left as
    they are.

    Pools are the module's `memory.pool` ops. A module without any gets one
    unbounded pool per device of its static storages, `memory.pool
    @workspace_<device> targets ["<device>"]`, inserted at the top of the
    module in order of the devices' first use. A storage's candidates are its
    `pools [...]`, else every pool whose targets include its device, in
    module order; `ro` pools only take storages that are never written
    (the analysis' `read_only`). A storage that does not fit its first
    candidate falls back to the next (the algorithms do this). A storage that
    fits nowhere fails the pass with a diagnostic that names it, its size
    and lifetime, and for each candidate pool its size and peak; when the
    storages forced into a pool and live with it provably exceed the pool,
    it names them. A static storage allocated inside a loop (`scf.for`/
    `scf.while` body or `cf` cycle) and carried to its next iteration
    (`StorageLifetime.carried_across_iterations`) fails the pass: two
    instances would be live at once, and no static place holds both.

    Planning scope: with `scope=function` (default) each function is planned
    on its own and a pool's `used` is the maximum over functions: a
    workspace shared between models run one at a time (the USMP RFC's U2).
    Functions that call each other are planned together, since a callee's
    storages are live while the caller's are. `scope=module` plans every
    function as one program on the module time line (functions one after
    another; a callee laid out inline at its first call).

    Already pinned storages stay where they are and are planned around
    (pre-placed), unless `replan=true`, which first removes every pin.

    Coalesced storages: a static storage holding several tensors at static
    offsets (what `coalesce` and `reuse` produce) is also planned split
    into one storage per group of tensors that share bytes while live
    together (usually one per tensor), each created right before its first
    tensor in the innermost region holding the tensors' uses and killed
    right after its last use (if the old storage was killed), aligned as
    the tensor needs: its `align` if it has one, else as its address was
    aligned in the old storage. For each set of pools that storages link by
    their candidates, the split plan is kept when it is strictly better
    (fewer unplaced storages, then fewer bytes), and the storages of those
    pools are split in the IR; elsewhere they stay whole. So running
    `coalesce` first costs no memory: the split form of a coalesced program
    is the uncoalesced one, alignments included, since `coalesce` records
    the alignment of a member's storage as `align` on each of its tensors
    that the merged storage aligns more. `split-storages=false` keeps every
    storage whole.

    The output is deterministic, except where `timeout` cuts a search short.

    Options:
    - `algorithm` (default `auto`): `greedy-by-size`, `greedy-by-conflicts`,
      `hill-climb`, `exact` or `auto` (heuristics, then `exact` or
      `hill-climb` until the lower bound or the timeout).
    - `timeout` (seconds, default 10): time budget of the whole pass, shared
      among the problems it solves.
    - `seed` (default 0): seed of `hill-climb`'s random moves.
    - `scope` (default `function`): `function` or `module`, as above.
    - `replan` (default false): re-plan storages that are already pinned.
    - `split-storages` (default true): consider splitting multi-tensor
      storages, as above.
    """

    name = "usmp"

    algorithm: AlgorithmName = "auto"
    # `int` too: xDSL's option parser rejects `timeout=10` for a plain float.
    timeout: float | int = 10.0
    seed: int = 0
    scope: PlanningScope = "function"
    replan: bool = False
    split_storages: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        remark_value_semantic(op, self.name)
        if self.timeout < 0:
            raise PassFailedException(f"usmp: timeout must be non-negative, got {self.timeout}")
        if not any(isinstance(child, PoolOp) for child in op.ops):
            pools = default_pools(op)
            if pools:
                first = op.body.block.first_op
                point = (
                    InsertPoint.before(first)
                    if first is not None
                    else InsertPoint.at_end(op.body.block)
                )
                Rewriter.insert_op(pools, point)
        if self.replan:
            for storage in op.walk():
                if isinstance(storage, AllocStorageOp) and storage.pinned is not None:
                    storage.pool = None
                    storage.offset = None
        deadline = time.perf_counter() + self.timeout
        lifetimes = analyze_module(op)
        for function, storage in lifetimes.storages():
            # Two instances live at once, one static place: no plan is right.
            if storage.size is not None and storage.carried_across_iterations:
                raise at_op(
                    PassFailedException(f"usmp: {function.carried_diagnostic(storage)}"),
                    storage.alloc,
                )
        components = pool_components(lifetimes)
        splits = storage_splits(lifetimes) if self.split_storages else []
        plan = self._plan(lifetimes, components, deadline, 2 if splits else 1)
        if splits:
            plan = self._plan_split(op, splits, plan, components, deadline)
        failures = [
            plan.failures[component]
            for component in [*dict.fromkeys(components.values()), None]
            if component in plan.failures
        ]
        if failures:
            raise failures[0].exception()
        for storage, placement in plan.placements.items():
            storage.pin(placement.pool, placement.offset)
        for pool in op.ops:
            if isinstance(pool, PoolOp):
                pool.properties["used"] = IntegerAttr(plan.used.get(pool.pool_name, 0), 64)

    def _plan_split(
        self,
        module: ModuleOp,
        splits: list[StorageSplit],
        whole: Plan,
        components: dict[str, str],
        deadline: float,
    ) -> Plan:
        """Plan with the multi-tensor storages split; keep the split where it pays.

        The split form is planned on a copy of the module. Then, pool
        component by component, the better of the two plans is kept: the
        storages of the components where the split plan is strictly better
        are split in ``module`` and the plan returned combines both.
        """
        pools = pools_of(module)
        clone = module.clone()
        # The copy's ops in walk order match the module's: the splits found
        # on the module apply to the copy through them (no second analysis).
        in_clone = dict(zip(module.walk(), clone.walk(), strict=True))
        original_of = dict(zip(_storage_ops(clone), _storage_ops(module), strict=True))
        clone_fragments = apply_splits(clone, splits, in_clone)
        split = self._plan(analyze_module(clone), components, deadline, 1)
        component_pools: dict[str, list[str]] = {}
        for pool, component in components.items():
            component_pools.setdefault(component, []).append(pool)
        chosen = {
            component
            for component, names in component_pools.items()
            if split.cost(component, names) < whole.cost(component, names)
        }
        if not chosen:
            return whole
        selected = [
            index
            for index, storage_split in enumerate(splits)
            if _component_of(storage_split.storage, pools, components) in chosen
        ]
        fragments = apply_splits(module, [splits[index] for index in selected])
        for index, new_storages in zip(selected, fragments):
            original_of.update(zip(clone_fragments[index], new_storages, strict=True))
        plan = Plan(used=dict(whole.used))
        for storage, placement in whole.placements.items():
            if components[placement.pool] not in chosen:
                plan.placements[storage] = placement
        for storage, placement in split.placements.items():
            if components[placement.pool] in chosen:
                plan.placements[original_of[storage]] = placement
        for pool, component in components.items():
            if component in chosen:
                plan.used[pool] = split.used.get(pool, 0)
        for component in [*component_pools, None]:
            source = split if component in chosen else whole
            if component in source.failures:
                plan.fail(component, source.unplaced[component], source.failures[component])
        return plan

    def _plan(
        self,
        lifetimes: ModuleLifetimes,
        components: dict[str, str],
        deadline: float,
        rounds: int,
    ) -> Plan:
        """Plan every group of the analysed module (the IR is not changed).

        ``rounds`` is how many whole-module plans (this one included) still
        share the time left before ``deadline``.
        """
        groups = [
            build_group(lifetimes, functions)
            for functions in planning_groups(lifetimes, self.scope)
        ]
        plan = Plan(used={pool.name: 0 for pool in lifetimes.pools})

        def component(group: Group, buffer_id: str) -> Component:
            problem = group.problem
            buffer = next(b for b in problem.buffers if b.id == buffer_id)
            pools = problem.candidate_pools(buffer)
            return components[pools[0].name] if pools else None

        solves = [group for group in groups if group.problem.buffers]
        for position, group in enumerate(solves):
            left = len(solves) - position + (rounds - 1) * len(solves)
            budget = max(0.0, deadline - time.perf_counter()) / max(left, 1)
            options = PlanOptions(timeout=budget, seed=self.seed)
            solution = solve(group.problem, self.algorithm, options)
            unplaced = solution.unplaced(group.problem)
            if unplaced:
                message = self._unplaced_failure(group, solution)
                for buffer_id in unplaced:
                    plan.fail(component(group, buffer_id), 1, message)
                continue
            findings = validate(group.problem, solution)
            if findings:
                first = findings[0].buffers[0]
                message = Failure(
                    _invalid_plan_diagnostic(group, solution, findings),
                    group.storages[first][1].alloc if first in group.storages else None,
                )
                count = len(group.problem.buffers)
                plan.fail(component(group, first), count, message)
                continue
            for buffer_id, placement in solution.placements.items():
                plan.placements[group.storages[buffer_id][1].alloc] = placement
            for pool, used in solution.used(group.problem).items():
                plan.used[pool] = max(plan.used.get(pool, 0), used)
        return plan

    def _unplaced_failure(self, group: Group, solution: Solution) -> Failure:
        """The diagnostic for a group whose plan leaves storages unplaced.

        A search that proves a pool infeasible places none of its buffers;
        the greedy plan then shows better which storage is left over, so the
        diagnostic describes whichever of the two places more.
        """
        attempt, algorithm = solution, self.algorithm
        if self.algorithm not in GREEDY_ALGORITHMS:
            greedy = solve(group.problem, "greedy-by-size")
            if len(greedy.unplaced(group.problem)) < len(solution.unplaced(group.problem)):
                attempt, algorithm = greedy, "greedy-by-size"
        failure, proven = unplaced_diagnostic(
            group, attempt, algorithm, attempt.unplaced(group.problem)
        )
        message = failure.message
        stage = solution.stats.get("stage", solution.stats.get("algorithm"))
        if proven:
            pass
        elif stage == "exact" and solution.status == "infeasible":
            several = any(
                len(group.problem.candidate_pools(b)) > 1 for b in group.problem.buffers
            )
            # The search is complete for offsets only once pools are chosen.
            message += (
                "\n  the exact search proved that no offsets fit the pools it chose"
                if several
                else "\n  the exact search proved that no plan fits the pool sizes"
            )
        elif solution.status == "timeout":
            message += f"\n  the search found no plan within timeout={self.timeout}"
        elif self.algorithm != "exact":
            message += (
                "\n  (a heuristic's failure is no proof: algorithm=exact searches every plan)"
            )
        return Failure(message, failure.op)


def _component_of(
    storage: StorageLifetime, pools: tuple[Pool, ...], components: dict[str, str]
) -> Component:
    """The pool component of a storage: that of its first usable candidate pool."""
    buffer = storage.buffer()
    candidates = Problem((buffer,), pools).candidate_pools(buffer)
    return components[candidates[0].name] if candidates else None


def _storage_ops(module: ModuleOp) -> list[AllocStorageOp]:
    return [op for op in module.walk() if isinstance(op, AllocStorageOp)]


# ---------------------------------------------------------------------------
# Seeing through multi-tensor storages (coalesce, reuse)
# ---------------------------------------------------------------------------


@dataclass
class Fragment:
    """Tensors of one storage that must stay together, and the bytes they span.

    ``base`` is where the fragment starts in the old storage and ``size``
    runs from there to the highest tensor end. ``alignment`` is the largest
    that a tensor of the fragment needs: its `align` if it has one (a pass
    that merged its storage recorded what it had before), else the
    alignment its address has in the old storage: the storage's, or the
    largest power of two dividing its offset if that is smaller. A single
    tensor's fragment is exactly its bytes. A fragment of several tensors
    starts at the lowest offset rounded down to a multiple of that alignment
    and of every element size, so every tensor keeps the alignment it needs.
    """

    tensors: list[TensorLifetime]
    base: int
    size: int
    alignment: int
    anchor: Operation | None = None
    """The op the fragment's storage is created right before."""


@dataclass
class StorageSplit:
    """A storage to replace by one storage per fragment."""

    storage: StorageLifetime
    fragments: list[Fragment]


def _anchor_in_block(op: Operation, block: Block) -> Operation | None:
    """The op of ``block`` that is ``op`` or holds it, if any."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def _encloses(outer: Region, inner: Region) -> bool:
    """``inner`` is ``outer`` or nested in it."""
    current: Region | None = inner
    while current is not None:
        if current is outer:
            return True
        parent = current.parent_op()
        current = parent.parent_region() if parent is not None else None
    return False


def _fragment_anchor(fragment: Fragment, storage: StorageLifetime) -> Operation | None:
    """Where the fragment's storage goes: before its first tensor, as deep as allowed.

    The home is the innermost region enclosing the scopes of all the
    fragment's tensors (where every alias of them is used), so a storage
    whose tensors live in one branch of an `scf.if` is created in that
    branch, as it was before a pass merged it. Within the old storage's
    region only, and only into a single-block region; ``None`` when the
    tensors' scopes reach a multi-block region.
    """
    scopes = [tensor.scope for tensor in fragment.tensors]
    home: Region | None = scopes[0]
    while home is not None and not all(_encloses(home, scope) for scope in scopes):
        parent = home.parent_op()
        home = parent.parent_region() if parent is not None else None
    outer = storage.alloc.parent_region()
    if home is None or outer is None or not _encloses(outer, home):
        return None
    if len(home.blocks) != 1:
        if home is not outer:
            return None
        block = storage.alloc.parent_block()
    else:
        block = home.block
    assert block is not None
    # Tensors are in pre-order: the first one's anchor comes first.
    return _anchor_in_block(fragment.tensors[0].alloc, block)


def _needed_alignment(tensor: TensorLifetime) -> int:
    """The address alignment a tensor at a static offset needs: its `align`, else what it has."""
    needed = tensor.alloc.required_alignment or tensor.alloc.address_alignment
    assert needed is not None
    return needed


def _fragments(storage: StorageLifetime) -> list[Fragment] | None:
    """The storage's tensors grouped into fragments, or ``None`` if it cannot split.

    It can split when it is static and not pinned, its value is only used by
    ``memory.alloc_tensor`` (static offset and shape) and ``memory.kill``,
    it holds two or more tensors, and every fragment has a home
    (``_fragment_anchor``). Two tensors are in one fragment when they share bytes while they
    conflict (an intended alias: they must keep their relative offsets); a
    valid plan inside a storage has no such pair, so usually every tensor is
    a fragment of its own.
    """
    if storage.size is None or storage.pinned is not None or len(storage.tensors) < 2:
        return None
    block = storage.alloc.parent_block()
    if block is None:
        return None
    tensors_by_op = {tensor.alloc: tensor for tensor in storage.tensors}
    for use in storage.value.uses:
        user = use.operation
        if isinstance(user, KillOp):
            continue
        if not isinstance(user, AllocTensorOp) or user not in tensors_by_op:
            return None
        tensor = tensors_by_op[user]
        if tensor.offset is None or tensor.size is None:
            return None
    tensors = storage.tensors
    buffers = [tensor.buffer() for tensor in tensors]
    offsets = [tensor.offset for tensor in tensors]
    parent = list(range(len(tensors)))

    def find(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    for i in range(len(tensors)):
        for j in range(i + 1, len(tensors)):
            low_i, low_j = offsets[i], offsets[j]
            assert low_i is not None and low_j is not None
            shares_bytes = (
                low_i < low_j + buffers[j].size and low_j < low_i + buffers[i].size
            )
            if shares_bytes and buffers[i].conflicts_with(buffers[j]):
                parent[find(j)] = find(i)
    members: dict[int, list[int]] = {}
    for index in range(len(tensors)):
        members.setdefault(find(index), []).append(index)
    fragments: list[Fragment] = []
    for group in members.values():
        # Each tensor needs its `align`, else the alignment its address has
        # in the old storage (the storage's, or less at an offset that is a
        # smaller power of two); powers of two, so the largest covers all.
        alignment = max(_needed_alignment(tensors[i]) for i in group)
        if len(group) == 1:
            # One tensor: exactly its bytes.
            (index,) = group
            offset = offsets[index]
            assert offset is not None
            fragments.append(
                Fragment([tensors[index]], offset, buffers[index].size, alignment)
            )
            continue
        step = alignment
        for index in group:
            step = lcm(step, tensors[index].alignment)
        low = min(offsets[i] for i in group)  # type: ignore[type-var]
        high = max(offsets[i] + buffers[i].size for i in group)  # type: ignore[operator]
        base = low - low % step
        fragments.append(Fragment([tensors[i] for i in group], base, high - base, alignment))
    if len(fragments) < 2:
        return None
    for fragment in fragments:
        fragment.anchor = _fragment_anchor(fragment, storage)
        if fragment.anchor is None:
            return None
    return fragments


def storage_splits(lifetimes: ModuleLifetimes) -> list[StorageSplit]:
    """The storages of the module that split into two or more fragments."""
    splits: list[StorageSplit] = []
    for _, storage in lifetimes.storages():
        fragments = _fragments(storage)
        if fragments is not None:
            splits.append(StorageSplit(storage, fragments))
    return splits


def _function_of(op: Operation) -> FuncOp | None:
    current = op.parent_op()
    while current is not None and not isinstance(current, FuncOp):
        current = current.parent_op()
    return current


def apply_splits(
    module: ModuleOp,
    splits: Sequence[StorageSplit],
    ops: Mapping[Operation, Operation] | None = None,
) -> list[list[AllocStorageOp]]:
    """Replace each split storage by one storage per fragment.

    ``splits`` come from the analysis of ``module``, or of a module it is a
    clone of: then ``ops`` maps each op of that module to its copy here.

    A fragment's storage has the fragment's alignment and the old one's
    device and candidate pools, and is created right before the op holding
    its first tensor in the fragment's home block (``_fragment_anchor``);
    its tensors move to it at their offsets minus the fragment's base, and
    lose an `align` that their new place guarantees anyway. If
    the old storage was killed, the old kills go and each new storage is
    killed where `insert-kills` would put it (right after its last use); if
    not, none is. Returns the new storages of each split, fragment by fragment.
    """

    def here(op: OpT) -> OpT:
        copy = op if ops is None else ops[op]
        assert isinstance(copy, type(op))
        return copy

    created: list[list[AllocStorageOp]] = []
    touched: list[FuncOp] = []
    new_storages: list[SSAValue] = []
    for split in splits:
        old = here(split.storage.alloc)
        killed = bool(split.storage.kills)
        created.append([])
        for fragment in split.fragments:
            tensor_ops = [here(tensor.alloc) for tensor in fragment.tensors]
            assert fragment.anchor is not None
            first = here(fragment.anchor)
            new = AllocStorageOp(fragment.size)
            for key in ("device", "pools"):
                if key in old.properties:
                    new.properties[key] = old.properties[key]
            if fragment.alignment != DEFAULT_STORAGE_ALIGNMENT:
                new.properties["alignment"] = IntegerAttr(fragment.alignment, 64)
            hints = [op.tensor.name_hint for op in tensor_ops]
            if len(tensor_ops) == 1 and hints[0]:
                new.storage.name_hint = f"{hints[0]}_storage"
            elif old.storage.name_hint:
                new.storage.name_hint = old.storage.name_hint
            Rewriter.insert_op(new, InsertPoint.before(first))
            created[-1].append(new)
            for op in tensor_ops:
                offset = op.static_offset
                assert offset is not None
                op.operands[0] = new.storage
                op.set_static_offset(offset - fragment.base)
                if op.required_alignment == op.address_alignment:
                    # Its own storage gives it exactly that: nothing to record.
                    op.set_required_alignment(None)
            if killed:
                new_storages.append(new.storage)
        for use in list(old.storage.uses):
            assert isinstance(use.operation, KillOp)
            Rewriter.erase_op(use.operation)
        func = _function_of(old)
        Rewriter.erase_op(old)
        if func is not None and func not in touched:
            touched.append(func)
    if not new_storages:
        return created
    wanted = set(new_storages)
    for func in touched:
        lifetimes = analyze_function(func)
        for storage in lifetimes.storages:
            if storage.value not in wanted:
                continue
            for point in lifetimes.kill_points(storage):
                Rewriter.insert_op(KillOp(storage.value), point.insert_point())
    return created
