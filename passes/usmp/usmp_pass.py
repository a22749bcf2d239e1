"""``usmp``: pin every static storage to a memory pool at a byte offset (TVM USMP)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolOpInterface
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect.diagnostics import at_op, emit_remark
from memplan.dialect.ops import (
    AllocStorageOp,
    PoolOp,
    describe,
)
from memplan.dialect.types import MAX_BYTES
from memplan.passes.analysis import (
    ModuleLifetimes,
    StorageLifetime,
    analyze_module,
    pools_of,
)
from memplan.passes.analysis.forms import warn_value_semantic
from memplan.passes.analysis.parametric import SLOT_ATTR
from memplan.passes.pass_options import PlanningPassOptions, check_options
from memplan.passes.planning.algorithms import (
    GREEDY_ALGORITHMS,
    Budget,
    solve,
)
from memplan.passes.planning.bounds import buffers_lower_bound
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.validate import validate
from memplan.passes.usmp.diagnostics import (
    Failure,
    invalid_plan_diagnostic,
    unplaced_diagnostic,
)
from memplan.passes.usmp.groups import (
    Component,
    Group,
    PlanningScope,
    build_group,
    planning_groups,
    pool_components,
)
from memplan.passes.usmp.parametric import (
    drop_program,
    forget_stale_programs,
    write_parametric,
)
from memplan.passes.usmp.splitting import (
    SplitEdits,
    StorageSplit,
    apply_splits,
    split_form_bound_buffers,
    storage_splits,
)

OpT = TypeVar("OpT", bound=Operation)

DEFAULT_POOL_PREFIX = "workspace_"
"""Pools made for a module without any: ``@workspace_<device>``."""


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
    # Functions whose search the opt-in timeout cut short.
    timed_out: set[str] = field(default_factory=set)

    def fail(self, component: Component, count: int, message: Failure) -> None:
        self.unplaced[component] = self.unplaced.get(component, 0) + count
        self.failures.setdefault(component, message)

    def cost(self, component: Component, pools: Sequence[str]) -> tuple[int, int, tuple[int, ...]]:
        """Smaller is better: storages left unplaced, total bytes, bytes per pool."""
        used = tuple(self.used.get(pool, 0) for pool in pools)
        return (self.unplaced.get(component, 0), sum(used), used)


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
        if isinstance(op, AllocStorageOp) and op.size_bound is not None:
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
class UsmpPass(PlanningPassOptions, ModulePass):
    """Pin every static storage to a memory pool at a byte offset (TVM's USMP).

    Builds one planning `Problem` per group of functions from the lifetime
    analysis (`passes.analysis`), solves it with an algorithm of
    `passes.planning.algorithms`, and writes the plan back:
    every static `memory.alloc_storage` gets `at @pool[offset]` and every
    `memory.pool` gets `used N` (the highest byte any function uses in it;
    bounded and unbounded pools alike). A dynamic-size storage with a `max`
    bound is planned like a static one of its bound's size (pinned at a
    static offset reserving the bound, as TVM Relax plans symbolic shapes
    under `tir_var_upper_bound`); one without a bound is left as it is
    (`plan-report` names it).

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
    that the merged storage aligns more. The split form is not planned
    when the whole plan already meets a lower bound of it in every pool
    (the peak live bytes of the storages and of the tensors that would be
    storages of their own): it could not be strictly better.
    `split-storages=false` keeps every storage whole.

    Parametric plans (`parametric=true`): dynamic storages whose bytes
    depend on the dynamic dims (`memory.reserve = "<size expression>"`, the
    dims' ranges in the function's `memory.dim_ranges`) are planned at the
    bound as above, each reserving its `max`; then, for each pool of each
    function that holds a pinned storage with a reserve, the planning core
    (`passes.planning.parametric`, on the same `Problem`: the conflicts are
    its own) turns a plan into an offset program, written on every pinned
    storage of that pool in that function: `memory.slot = K` numbers the
    storages in the plan's order (by offset, then top, then program order)
    and `memory.above = array<i64: J, ...>` lists the slots of the
    conflicting storages below it. The plan whose order is kept is the
    bound's, or a static plan of the function at a sample of the dims (all
    at the lower ends, all at the upper ends, and three points between,
    spaced geometrically; planned with the pass's algorithm and a share of
    the budget left), whichever program comes closest, at its worst sample,
    to the static plans there without growing any pool at the bound
    (`choose_parametric`). At dims `d`,
    slot K sits at `align(max(0, offset(J) + size(J, d) for J in above),
    alignment)` (`alignment`: lcm of the storage's and the pool's), with
    `size` the reserve at `d` (the static size, or `max`, for a storage
    without one); `passes.analysis.parametric` reads the program. Every
    conflicting pair is ordered by `above`, so the program never overlaps
    two live storages at any size, and it is monotone in the sizes, so its
    largest values are at the reserved sizes. The `at` offsets become the
    program at the reserved sizes (the bound's plan dropped onto the
    storages below: never higher), and the pool's `used` the highest end
    there over the functions. A pool used by storages of several functions,
    or holding storages pinned before the pass (which keep their offsets),
    stays static, with a remark naming it; a pool whose storages the pass
    places again loses the program an earlier run wrote. `verify-plan`
    checks the programs independently.

    The searches stop on a count of work, not on a clock, so the output is
    the same on every machine at any load. Only an explicit `timeout` makes
    it depend on the machine: when the clock cuts a search short the pass
    says so in a remark (`usmp: timeout=T cut the search short ...`).

    Options:
    - `algorithm` (default `auto`): an offset algorithm of
      `passes.planning.algorithms.ALGORITHMS` (listed below); `auto` runs
      the heuristics, then `exact` or `hill-climb` until the lower bound or
      the end of the budget.
    - `budget` (integer, default 60000): search nodes of the whole pass (a
      greedy placement costs one per 4 buffers), shared among the problems
      it solves: each gets an even share of what is left. Spent in full, it
      takes some 5 to 20 seconds; `budget=0` gives greedy plans.
    - `timeout` (seconds, no default): also stop the searches after this
      much wall-clock time, shared like the budget (an opt-in; the plan
      then depends on machine speed and load).
    - `seed` (default 0): seed of `hill-climb`'s random moves and of `exact`'s
      shuffled preorders when it restarts at a capacity above the bound;
      `iterations`, `minimize`, `exact-max-buffers`: the other knobs of the
      algorithms (`PlanOptions`), shared with `coalesce` and `plan`
      (`passes.pass_options.PlanningPassOptions`).
    - `scope` (default `function`): `function` or `module`, as above.
    - `replan` (default false): re-plan storages that are already pinned
      (their `memory.slot` and `memory.above` go with their pins).
    - `split-storages` (default true): consider splitting multi-tensor
      storages, as above.
    - `parametric` (default false): write the offset programs of pools
      with storages whose sizes depend on the dims, as above.
    """

    name = "usmp"

    scope: PlanningScope = "function"
    replan: bool = False
    split_storages: bool = True
    parametric: bool = False

    def __post_init__(self) -> None:
        check_options(self, non_negative=self.NON_NEGATIVE)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.apply_providing_lifetimes(ctx, op)

    def apply_providing_lifetimes(self, ctx: Context, op: ModuleOp) -> ModuleLifetimes | None:
        """``apply``, returning the lifetime analysis of ``op`` as the pass
        leaves it when it has one (the pass changed the IR only by pinning
        storages after that analysis, and pins are read from the ops), for
        `plan` to hand to `verify-plan` (``passes.analysis.handoff``)."""
        warn_value_semantic(op, self.name)
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
                    drop_program(storage)
        prepinned = {
            storage
            for storage in op.walk()
            if isinstance(storage, AllocStorageOp) and storage.pinned is not None
        }
        budget = Budget(self.budget, self.timeout)
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
        plan = self._plan(lifetimes, components, budget, 2 if splits else 1)
        final: ModuleLifetimes | None = lifetimes
        if splits and not _split_cannot_win(plan, lifetimes, splits, components):
            plan, final = self._plan_split(op, splits, plan, components, budget)
        for function in lifetimes.functions:
            if function.func.sym_name.data in plan.timed_out:
                emit_remark(
                    function.func,
                    f"usmp: @{function.func.sym_name.data}: timeout={self.timeout} cut the "
                    "search short: the plan depends on machine speed and load (without "
                    f"timeout the search stops on budget={self.budget}, the same everywhere)",
                )
        failures = [
            plan.failures[component]
            for component in [*dict.fromkeys(components.values()), None]
            if component in plan.failures
        ]
        if failures:
            raise failures[0].exception()
        for storage, placement in plan.placements.items():
            # Offsets and `used` are i64: a pool past 2^63-1 bytes has no plan.
            size = storage.byte_size or storage.size_bound or 0
            if placement.offset + size > MAX_BYTES:
                raise at_op(
                    PassFailedException(
                        f"usmp: storage {describe(storage.storage)} ({size} bytes) at offset "
                        f"{placement.offset} of @{placement.pool} ends at byte "
                        f"{placement.offset + size}, which exceeds 2^63-1 bytes"
                    ),
                    storage,
                )
            storage.pin(placement.pool, placement.offset)
        for pool in op.ops:
            if isinstance(pool, PoolOp):
                pool.properties["used"] = IntegerAttr(plan.used.get(pool.pool_name, 0), 64)
        placed = set(plan.placements) - prepinned
        if placed and any(SLOT_ATTR in storage.attributes for storage in prepinned):
            forget_stale_programs(final or analyze_module(op), placed)
        if self.parametric:
            final = final or analyze_module(op)

            def solver(problem: Problem, fraction: float) -> Solution:
                share = budget.part(fraction)
                solution = solve(problem, self.algorithm, self.plan_options().within(share))
                share.absorb(solution.stats)
                return solution

            write_parametric(op, final, prepinned, solver)
        return final

    def _plan_split(
        self,
        module: ModuleOp,
        splits: list[StorageSplit],
        whole: Plan,
        components: dict[str, str],
        budget: Budget,
    ) -> tuple[Plan, ModuleLifetimes | None]:
        """Plan with the multi-tensor storages split; keep the split where it pays.

        The split form is planned on ``module`` itself, split in place (the
        splits were found on the module as it is: no copy, no second search
        for them). Then, pool component by component, the better of the two
        plans is kept. When the split wins everywhere the module stays split
        and the analysis of the split form is returned with the plan (it is
        the analysis of the module as it leaves the pass, pins aside);
        otherwise every split is undone, op for op, and only the storages of
        the components where the split plan is strictly better are split
        again, and no analysis is returned.
        """
        edits = SplitEdits()
        fragments = apply_splits(module, splits, edits)
        split_lifetimes = analyze_module(module)
        split = self._plan(split_lifetimes, components, budget, 1)
        component_pools = _pools_by_component(components)
        whole.timed_out |= split.timed_out
        chosen = {
            component
            for component, names in component_pools.items()
            if split.cost(component, names) < whole.cost(component, names)
        }
        # The storages the split plan placed, to the ones in the module.
        now: dict[AllocStorageOp, AllocStorageOp] = {}
        analysis: ModuleLifetimes | None = None
        if chosen == set(component_pools):
            edits.commit()
            analysis = split_lifetimes
        else:
            edits.undo()
            if not chosen:
                return whole, None
            pools = pools_of(module)
            selected = [
                index
                for index, storage_split in enumerate(splits)
                if _component_of(storage_split.storage, pools, components) in chosen
            ]
            kept = apply_splits(module, [splits[index] for index in selected])
            for index, new_storages in zip(selected, kept):
                now.update(zip(fragments[index], new_storages, strict=True))
        plan = Plan(used=dict(whole.used), timed_out=whole.timed_out)
        for storage, placement in whole.placements.items():
            if components[placement.pool] not in chosen:
                plan.placements[storage] = placement
        for storage, placement in split.placements.items():
            if components[placement.pool] in chosen:
                plan.placements[now.get(storage, storage)] = placement
        for pool, component in components.items():
            if component in chosen:
                plan.used[pool] = split.used.get(pool, 0)
        for component in [*component_pools, None]:
            source = split if component in chosen else whole
            if component in source.failures:
                plan.fail(component, source.unplaced[component], source.failures[component])
        return plan, analysis

    def _plan(
        self,
        lifetimes: ModuleLifetimes,
        components: dict[str, str],
        budget: Budget,
        rounds: int,
    ) -> Plan:
        """Plan every group of the analysed module (the IR is not changed).

        ``rounds`` is how many whole-module plans (this one included) still
        share what is left of ``budget``; each search is charged to it.
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
            share = budget.part(1 / max(left, 1))
            options = self.plan_options().within(share)
            solution = solve(group.problem, self.algorithm, options)
            share.absorb(solution.stats)
            if solution.stats.get("stopped_by") == "timeout":
                plan.timed_out.update(f.func.sym_name.data for f in group.functions)
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
                    invalid_plan_diagnostic(group, solution, findings),
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
            message += "\n  the exact search proved that no plan fits the pool sizes"
        elif solution.stats.get("reason") == "pool-choice":
            # The search is complete for offsets only once pools are chosen.
            message += (
                "\n  no offsets fit the pools candidate priority chose (largest storages"
                " kept first); other choices are not searched, so this is no proof:"
                " `pools [...]` on a storage fixes its choice"
            )
        elif solution.status == "unknown" and "stopped_by" in solution.stats:
            stopped = solution.stats.get("stopped_by")
            limit = f"timeout={self.timeout}" if stopped == "timeout" else f"budget={self.budget}"
            message += f"\n  the search found no plan within {limit}"
        elif self.algorithm != "exact":
            message += (
                "\n  (a heuristic's failure is no proof: algorithm=exact searches every plan)"
            )
        return Failure(message, failure.op)


def _split_cannot_win(
    whole: Plan, lifetimes: ModuleLifetimes, splits: list[StorageSplit], components: dict[str, str]
) -> bool:
    """Can no plan of the split form be strictly smaller than ``whole``?

    So when every pool component is one pool in which ``whole`` places
    everything within a lower bound of the split form: the peak of live
    bytes per function (``split_form_bound_buffers``). Then the split form,
    whose plan would be thrown away, is not planned, and the module is left
    as it is (its analysis goes on to `verify-plan`).
    """
    if None in whole.failures:
        return False
    split_of = {split.storage: split for split in splits}
    bounds: dict[Component, int] = {}
    for function in lifetimes.functions:
        buffers: dict[Component, list[Buffer]] = {}
        for storage in function.static_storages:
            placement = whole.placements.get(storage.alloc)
            component = (
                components[placement.pool]
                if placement is not None
                else _component_of(storage, lifetimes.pools, components)
            )
            buffers.setdefault(component, []).extend(
                split_form_bound_buffers(storage, split_of.get(storage))
            )
        for component, members in buffers.items():
            bounds[component] = max(bounds.get(component, 0), buffers_lower_bound(members))
    return all(
        len(pools) == 1
        and not whole.unplaced.get(component, 0)
        and whole.used.get(pools[0], 0) <= bounds.get(component, 0)
        for component, pools in _pools_by_component(components).items()
    )


def _pools_by_component(components: dict[str, str]) -> dict[str, list[str]]:
    """Each pool component's pools, in module order."""
    pools: dict[str, list[str]] = {}
    for pool, component in components.items():
        pools.setdefault(component, []).append(pool)
    return pools


def _component_of(
    storage: StorageLifetime, pools: tuple[Pool, ...], components: dict[str, str]
) -> Component:
    """The pool component of a storage: that of its first usable candidate pool."""
    buffer = storage.buffer()
    candidates = Problem((buffer,), pools).candidate_pools(buffer)
    return components[candidates[0].name] if candidates else None
