"""``verify-plan``: an independent check of the plan written in the IR."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException, VerifyException

from memplan.dialect.diagnostics import at_op, emit_warning, error_notes, error_op
from memplan.dialect.kill_order import verify_kill_order
from memplan.dialect.ops import InvokeOp, PoolOp, describe
from memplan.passes.analysis import (
    FunctionLifetimes,
    ModuleLifetimes,
    StorageLifetime,
    TensorLifetime,
    analyze_module,
)
from memplan.passes.analysis.clobber import Clobber, find_clobbers
from memplan.passes.analysis.forms import value_semantic_functions, value_semantic_message
from memplan.passes.analysis.inplace import declared_in_place
from memplan.passes.analysis.parametric import (
    ParametricLayoutError,
    ParametricPool,
    function_dims,
    parametric_pools,
    storage_reserve,
)
from memplan.passes.analysis.symbols import SymbolCache
from memplan.passes.pass_options import check_options
from memplan.passes.planning.intervals import overlapping_live_pairs
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution
from memplan.passes.planning.parametric import reachable_below
from memplan.passes.planning.validate import validate


@dataclass(frozen=True)
class PlanProblem:
    """One way the plan breaks the rules: the message, the op it is about (the
    first storage or tensor named) and the other one an overlap involves."""

    message: str
    op: Operation
    other: Operation | None = None
    note: str = field(default="the other buffer is here", kw_only=True)


def _describe(label: str, buffer: Buffer, placement: Placement, where: str, lifetime: str) -> str:
    top = placement.offset + buffer.size
    return f"{label} (bytes [{placement.offset}, {top}) of {where}, live {lifetime})"


def _pool_findings(lifetimes: ModuleLifetimes) -> list[PlanProblem]:
    """Pinned storages against the pools: overlaps, alignment, bounds, pool choice."""
    pinned = [
        (function, storage)
        for function, storage in lifetimes.storages()
        if storage.size is not None and storage.pinned is not None
    ]
    if not pinned:
        return []
    owners: dict[str, tuple[FunctionLifetimes, StorageLifetime]] = {}
    buffers: list[Buffer] = []
    for function, storage in pinned:
        # Not pinned in the model: the checker tests the placement against
        # the storage's own candidates instead of taking it as given.
        buffer = lifetimes.module_buffer(function, storage, pin=False)
        owners[buffer.id] = (function, storage)
        buffers.append(buffer)
    problem = Problem(tuple(buffers), lifetimes.pools)
    solution = lifetimes.placements()
    by_id = {buffer.id: buffer for buffer in buffers}
    problems: list[PlanProblem] = []
    for finding in validate(problem, solution):
        ops = [owners[b][1].op for b in finding.buffers if b in owners]
        labels = {
            buffer_id: f"storage {owners[buffer_id][1].label} in @{owners[buffer_id][0].name}"
            for buffer_id in finding.buffers
            if buffer_id in owners
        }
        if finding.kind == "overlap":
            first, second = finding.buffers
            parts = [
                _describe(
                    labels[buffer_id],
                    by_id[buffer_id],
                    solution.placements[buffer_id],
                    f"@{solution.placements[buffer_id].pool}",
                    str(owners[buffer_id][1].interval),
                )
                for buffer_id in (first, second)
            ]
            problems.append(
                PlanProblem(f"{parts[0]} and {parts[1]} are live together but share bytes", *ops)
            )
            continue
        message = finding.message
        for buffer_id, label in labels.items():
            message = message.replace(f"buffer '{buffer_id}'", label)
            message = message.replace(f"'{buffer_id}'", label)
        problems.append(PlanProblem(message, *ops[:2]))
    # Sorted: the validator's order is an implementation detail of its sweep.
    return sorted(problems, key=lambda p: p.message)


def _used_findings(lifetimes: ModuleLifetimes) -> list[PlanProblem]:
    """Pinned storages against their pool's `used`: the bytes a runtime
    allocates for the pool, which every storage in it must end within."""
    used = {
        op.pool_name: op.used.value.data
        for op in lifetimes.module.ops
        if isinstance(op, PoolOp) and op.used is not None
    }
    problems: list[PlanProblem] = []
    for function, storage in lifetimes.storages():
        if storage.size is None or storage.pinned is None:
            continue
        pool, offset = storage.pinned
        if pool in used and offset + storage.size > used[pool]:
            problems.append(
                PlanProblem(
                    f"storage {storage.label} in @{function.name} (bytes [{offset}, "
                    f"{offset + storage.size}) of @{pool}) runs past the pool's used size "
                    f"of {used[pool]} bytes",
                    storage.op,
                )
            )
    return problems


def _reserve_findings(function: FunctionLifetimes) -> list[PlanProblem]:
    """Each `memory.reserve` of ``function`` at the upper ends of its dims'
    ranges against the storage's `max` (sizes are monotone in the dims, so
    the upper ends bound every size in the ranges)."""
    dims = function_dims(function.func)
    upper = {name: dim.upper for name, dim in dims.items()}
    problems: list[PlanProblem] = []
    for storage in function.storages:
        try:
            reserve = storage_reserve(storage.alloc)
        except ParametricLayoutError as error:
            problems.append(
                PlanProblem(f"storage {storage.label} in @{function.name}: {error}", error.op)
            )
            continue
        if reserve is None:
            continue
        where = f"storage {storage.label} in @{function.name}"
        missing = sorted(reserve.symbols() - upper.keys())
        if missing:
            problems.append(
                PlanProblem(
                    f'{where}: memory.reserve "{reserve}" names dim {missing[0]}, which '
                    f"memory.dim_ranges of @{function.name} does not declare",
                    storage.op,
                )
            )
            continue
        top = reserve.evaluate(upper)
        bound = storage.size
        if bound is not None and top > bound:
            at = ", ".join(f"{name}={upper[name]}" for name in sorted(reserve.symbols()))
            problems.append(
                PlanProblem(
                    f'{where}: memory.reserve "{reserve}" is {top} bytes at {at} (the upper '
                    f"ends of the ranges), more than its max of {bound} bytes",
                    storage.op,
                )
            )
    return problems


def _slot_part(
    function: FunctionLifetimes,
    storage: StorageLifetime,
    pool: str,
    place: tuple[ParametricPool, int] | None,
) -> str:
    slot = f"slot {place[1]}" if place is not None else "no slot"
    return (
        f"storage {storage.label} in @{function.name} ({slot} of @{pool}, live {storage.interval})"
    )


def _parametric_findings(lifetimes: ModuleLifetimes) -> list[PlanProblem]:
    """The offset programs (`memory.slot`, `memory.above`) against the
    lifetimes: well formed, every conflicting pair of a pool ordered by
    `above`, `at` offsets equal to the program at the reserved sizes, and
    reserves within `max`."""
    problems: list[PlanProblem] = []
    slotted: dict[StorageLifetime, tuple[ParametricPool, int]] = {}
    for function in lifetimes.functions:
        problems.extend(_reserve_findings(function))
        try:
            programs = parametric_pools(function.func, [s.alloc for s in function.storages])
        except ParametricLayoutError as error:
            problems.append(PlanProblem(f"@{function.name}: {error}", error.op))
            continue
        owner = {storage.alloc: storage for storage in function.storages}
        for program in programs:
            reserved = program.reserved_offsets()
            for entry, offset in zip(program.storages, reserved, strict=True):
                storage = owner[entry.alloc]
                slotted[storage] = (program, entry.slot)
                assert storage.pinned is not None  # parametric_pools checks it
                if storage.pinned[1] != offset:
                    problems.append(
                        PlanProblem(
                            f"storage {storage.label} in @{function.name} is at "
                            f"@{program.pool}[{storage.pinned[1]}] but slot {entry.slot} of "
                            f"the pool's offset program is at {offset} at the reserved sizes",
                            storage.op,
                        )
                    )
    if not slotted:
        return problems
    reach: dict[int, list[int]] = {}
    for program, _ in slotted.values():
        if id(program) in reach:
            continue
        reach[id(program)] = reachable_below(
            range(len(program.storages)), [entry.above for entry in program.storages]
        )
    by_pool: dict[str, list[tuple[FunctionLifetimes, StorageLifetime]]] = {}
    for function, storage in lifetimes.storages():
        if storage.size is not None and storage.pinned is not None:
            by_pool.setdefault(storage.pinned[0], []).append((function, storage))
    for pool, members in by_pool.items():
        if not any(storage in slotted for _, storage in members):
            continue
        buffers = [lifetimes.module_buffer(f, s, pin=False) for f, s in members]
        pairs = overlapping_live_pairs(buffers, [0] * len(buffers))
        for a, b in sorted(tuple(sorted(pair)) for pair in pairs):
            (fa, sa), (fb, sb) = members[a], members[b]
            place_a, place_b = slotted.get(sa), slotted.get(sb)
            if place_a is None and place_b is None:
                continue
            first = _slot_part(fa, sa, pool, place_a)
            second = _slot_part(fb, sb, pool, place_b)

            if place_a is None or place_b is None or place_a[0] is not place_b[0]:
                problems.append(
                    PlanProblem(
                        f"{first} and {second} are live together but are not "
                        "in one offset program of the pool",
                        sa.op,
                        sb.op,
                    )
                )
                continue
            bits = reach[id(place_a[0])]
            ka, kb = place_a[1], place_b[1]
            if not (bits[ka] >> kb) & 1 and not (bits[kb] >> ka) & 1:
                problems.append(
                    PlanProblem(
                        f"{first} and {second} are live together but their "
                        "offsets are not ordered by memory.above",
                        sa.op,
                        sb.op,
                    )
                )
    return problems


def _storage_findings(
    function: FunctionLifetimes, storage: StorageLifetime, symbols: SymbolCache
) -> list[PlanProblem]:
    """Tensors of one static storage: overlaps of conflicting tensors, bounds, alignment."""
    size = storage.size
    assert size is not None
    placed: list[TensorLifetime] = [
        tensor
        for tensor in storage.tensors
        if tensor.offset is not None and tensor.size is not None
    ]
    if not placed:
        return []
    pool = Pool(name=storage.name, size=size)
    buffers = {tensor.name: tensor.buffer() for tensor in placed}
    solution = Solution(
        {tensor.name: Placement(storage.name, tensor.offset) for tensor in placed}  # type: ignore[misc]
    )
    by_name = {tensor.name: tensor for tensor in placed}
    where = f"storage {storage.label} in @{function.name}"
    problems: list[PlanProblem] = []
    for finding in validate(Problem(tuple(buffers.values()), (pool,)), solution):
        ops = [by_name[name].op for name in finding.buffers if name in by_name] or [storage.op]
        if finding.kind == "overlap" and len(finding.buffers) == 2:
            first, second = (by_name[name] for name in finding.buffers)
            numbering = function.numbering
            if declared_in_place(first, second, symbols, numbering) or declared_in_place(
                second, first, symbols, numbering
            ):
                continue
        if finding.kind == "overlap":
            parts = [
                _describe(
                    f"tensor {by_name[name].label}",
                    buffers[name],
                    solution.placements[name],
                    where,
                    str(by_name[name].interval),
                )
                for name in finding.buffers
            ]
            problems.append(
                PlanProblem(f"{parts[0]} and {parts[1]} are live together but share bytes", *ops)
            )
            continue
        message = finding.message.replace(f"@{storage.name}", where)
        for name in finding.buffers:
            message = message.replace(f"buffer '{name}'", f"tensor {by_name[name].label}")
        problems.append(PlanProblem(message, *ops[:2]))
    return sorted(problems, key=lambda p: p.message)


def _op_label(op: Operation, number: int) -> str:
    if isinstance(op, InvokeOp):
        return f"memory.invoke @{op.callee.string_value()} (op {number})"
    return f"{op.name} (op {number})"


def _clobber_findings(function: FunctionLifetimes) -> list[PlanProblem]:
    """Writes over bytes that hold a value still read later (any alias, any path)."""
    problems: list[PlanProblem] = []
    index = function.numbering.index
    for clobber in find_clobbers(function.func, function.numbering):
        reader = None if clobber.reader is clobber.write.op else clobber.reader
        problems.append(
            PlanProblem(
                _clobber_message(clobber, index, function.name),
                clobber.write.op,
                reader,
                note=f"{describe(clobber.value)} is read here",
            )
        )
    return problems


def _clobber_message(clobber: Clobber, index: dict[Operation, int], function: str) -> str:
    writer = _op_label(clobber.write.op, index[clobber.write.op])
    written = describe(clobber.write.value)
    value = describe(clobber.value)
    where = clobber.atom.where()
    if clobber.reader is clobber.write.op:
        assert isinstance(clobber.reader, InvokeOp)
        result = list(clobber.reader.outs).index(clobber.write.value)
        return (
            f"{writer} in @{function} writes {written} over {value} ({where}), which it "
            f"reads as operand #{clobber.position}: memory.inplace of "
            f"@{clobber.reader.callee.string_value()} does not declare operand "
            f"#{clobber.position} shareable with result #{result} at the same offset"
        )
    reader = _op_label(clobber.reader, index[clobber.reader])
    return (
        f"{writer} in @{function} writes {written} over the bytes of {value} ({where}), "
        f"which {reader} reads later: a value still needed is overwritten"
    )


def plan_problems(lifetimes: ModuleLifetimes, *, require_pinned: bool = False) -> list[PlanProblem]:
    """Every way the plan in the IR breaks the rules, with the ops involved."""
    problems = (
        _pool_findings(lifetimes)
        + _used_findings(lifetimes)
        + sorted(_parametric_findings(lifetimes), key=lambda p: p.message)
    )
    symbols = SymbolCache()
    for function in lifetimes.functions:
        for storage in function.static_storages:
            if require_pinned and storage.pinned is None:
                problems.append(
                    PlanProblem(
                        f"storage {storage.label} in @{function.name} ({storage.size} bytes) "
                        "is not pinned to a pool",
                        storage.op,
                    )
                )
            if storage.pinned is not None and storage.carried_across_iterations:
                problems.append(PlanProblem(function.carried_diagnostic(storage), storage.op))
            problems.extend(_storage_findings(function, storage, symbols))
    if not problems:
        # Overlapping buffers clobber too; the overlap names the cause better.
        for function in lifetimes.functions:
            problems.extend(_clobber_findings(function))
    return problems


@dataclass(frozen=True)
class VerifyPlanPass(ModulePass):
    """Check the memory plan in the IR, independently of the planner that made it.

    Lifetimes come from the one lifetime definition (`passes.analysis`);
    the rules are `passes.planning.validate`'s. Four checks:

    - Pools: pinned storages (`at @pool[offset]`) of the whole module, on
      the module time line (functions one after another; a called function
      laid out inline at its first call, `passes.analysis`). Two storages
      that conflict (live together and not in different regions of one
      `scf.if`) must not share bytes of a pool;
      each offset is a multiple of the storage's and the pool's alignment;
      it fits a bounded pool, and ends within the pool's `used` size when
      the pool has one (what a runtime allocates for it); the pool is one
      of the storage's candidates
      (`pools [...]`), accepts its device, and is `rw` unless the storage is
      never written.
    - Storages: tensors carved at static offsets of one static storage must
      not share bytes while they conflict, and must fit. A pinned storage
      allocated inside a loop and carried to its next iteration
      (`carried_across_iterations`) is an error: two instances live at once
      cannot share its one place.
    - Clobbers (`passes.analysis.clobber`, which trusts no lifetime): the
      function is run abstractly on the bytes the plan gives each tensor
      (pool and offset when pinned, else its storage). No write (an invoke's
      `outs`, a `memref.copy` or `memref.store` target) may land on bytes
      holding a value that is read later, on some path, directly or through
      a value that may be it (views, `scf.if` results, `scf.for`/`scf.while`
      iteration arguments and results); the error names the value, the
      write, the value written and the reader. An invoke's `outs` may
      overlap its `ins` only as a `memory.inplace` pair at the same offset.
      The manifest form is read as value semantics: a write through `%r`
      ends the content of every other value on its bytes, so writing
      through an `scf.if` result that may be `%a` and then reading `%a` is
      reported even in unplanned IR (docs/known-limits.md).
      Reported when the other checks find nothing (an overlap clobbers
      too). Not checked: functions with multi-block regions, tensors at
      dynamic offsets, unpinned storages allocated inside loops.
    - Parametric plans (`passes.analysis.parametric`; `usmp{parametric=true}`
      writes them): a pool whose storages in a function carry `memory.slot`
      and `memory.above` has offsets that are functions of the dims. For
      every size in the declared ranges, without sampling, the checks are:
      (a) the program is well formed (slots 0..n-1 of the pool, each
      `above` naming smaller slots only, on pinned bounded storages);
      (b) every two pinned storages of the pool that conflict (the lifetimes
      and conflict rule of the pool check above) are in one program and
      ordered by the transitive closure of `above`; (c) each `at` offset is
      the program at the reserved sizes (each storage at its `max`, or its
      static size); (d) each `memory.reserve` at the upper ends of the
      ranges is at most the storage's `max`, and names only declared dims.
      Why that is enough: size expressions only add, multiply, take maxima,
      divide by constants rounding and align, so every one is monotone
      non-decreasing in each dim, and (d) at the upper ends gives
      `reserve(d) <= max` at every `d` in the ranges. If slot K is above J,
      directly or through other slots, then `offset(K, d) >= offset(J, d) +
      size(J, d)` at every `d` by the program's definition (a maximum over
      the slots below, then rounded up), so by (b) two conflicting storages
      never share bytes at any size. The program is monotone in the sizes
      too, so at every `d` each offset and end is at most its value at the
      reserved sizes, which by (c) is the `at` plan that the pool check
      verifies within the pool's size and `used`; and every offset is a
      multiple of the storage's and the pool's alignment by construction.
      That a dynamic storage's size at run time stays within its reserve
      is the contract of `memory.reserve`, a run-time fact not checked here.

    First, no value (or view of it) is used or killed again on a path after
    its `memory.kill` (`memplan.dialect.kill_order`).

    Unpinned storages are not checked against pools unless `require-pinned`
    is set, which makes each of them an error. A function still in
    value-semantic form (kernels on tensors, no storage) has no plan to
    check: a warning, and an error under `require-pinned`. Tensors with a dynamic offset
    or shape, and dynamic-size storages, are skipped.

    Each diagnostic names both values, their byte ranges and their lifetimes
    (op numbers of their function). All problems are reported together and
    the pass fails (non-zero exit). The IR is never changed.

    Options:
    - `require-pinned` (bool, default false): every static storage must be pinned.
    """

    name = "verify-plan"

    require_pinned: bool = False

    @property
    def kill_order_checked(self) -> bool:
        """The pass checks the kill order (``verify_kill_order``) of the module
        it leaves, unchanged: `memplan-opt` need not check it again after it."""
        return True

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self._check(op, None)

    def apply_with_lifetimes(self, ctx: Context, op: ModuleOp, lifetimes: ModuleLifetimes) -> None:
        """``apply``, with ``lifetimes`` = ``analyze_module(op)`` computed by the
        pass before (`plan` hands over `usmp`'s: ``passes.analysis.handoff``)."""
        self._check(op, lifetimes)

    def _check(self, op: ModuleOp, lifetimes: ModuleLifetimes | None) -> None:
        try:
            verify_kill_order(op)
        except VerifyException as error:
            # Located at the use or second kill, as memplan-opt's verifier shows it.
            located = error_op(error)
            assert located is not None
            failure = PassFailedException(f"verify-plan: {error}")
            raise at_op(failure, located, *error_notes(error)) from None
        unplanned = value_semantic_functions(op)
        if unplanned and self.require_pinned:
            # Nothing pinned because nothing is allocated: not a plan at all.
            function = unplanned[0]
            message = value_semantic_message(function, self.name)
            raise at_op(PassFailedException(message), function)
        for function in unplanned:
            emit_warning(function, value_semantic_message(function, self.name))
        if lifetimes is None:
            lifetimes = analyze_module(op)
        problems = plan_problems(lifetimes, require_pinned=self.require_pinned)
        if not problems:
            return
        # The diagnostic points at the first problem's op (and the other
        # buffer of an overlap); the message lists every problem.
        first = problems[0]
        notes = () if first.other is None else ((first.other, first.note),)
        if len(problems) == 1:
            raise at_op(PassFailedException(f"verify-plan: {first.message}"), first.op, *notes)
        listing = "\n".join(f"  {problem.message}" for problem in problems)
        raise at_op(
            PassFailedException(f"verify-plan: {len(problems)} problems:\n{listing}"),
            first.op,
            *notes,
        )
