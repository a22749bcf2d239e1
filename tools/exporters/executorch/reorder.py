"""A memory-aware order of a built ExecuTorch method's instructions.

A method's chain is a list of instructions over the method's values (by
index). Each instruction reads and writes *locations*: a value, or for a
tensor placed inside another one's bytes (a view, ``replan``'s
``_views``), that base tensor; a tensor list stands for its items. An
order runs the same computation when every access to a location sees the
same number of writes to it before it as in the program's order: each read
sees the same write (read after write), no write lands before a read of the
contents it replaces (write after read), and writes keep their order
(write after write). ``same_dataflow`` checks exactly that.

Barriers stay where they are, and no instruction crosses one: every
instruction but a ``KernelCall`` (``MoveCall`` aliases values, ``FreeCall``
releases memory), a kernel whose schema returns an alias of an argument it
does not write (a view), and a kernel tagged ``nondeterministic_seeded``
(its random state is not a value). Between two barriers the instructions
form a DAG of those dependencies, ordered by the planning core's
schedulers (``memplan.passes.planning.execution_order``: the program's
order, XLA's list and DFS schedulers and ``best_schedule``, which adds an
exact search): a node allocates the bytes of the planned tensors it writes
first, and frees them when their last reader has run; tensors read after
the segment stay live to its end. The candidates are whole-chain orders,
one per scheduler; ``replan`` keeps the one whose lifetimes give the lowest
peak of live bytes, the program's own order on a tie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from memplan.passes.planning.execution_order import (
    HEURISTICS,
    SCHEDULERS,
    ScheduleProblem,
    best_schedule,
    is_topological,
)
from memplan.tools.frontends.pte.lifetimes import with_items
from memplan.tools.frontends.pte.program import operator_overload


@dataclass(frozen=True)
class Step:
    """One instruction's accesses: the locations it reads and writes, and
    whether it is a barrier."""

    reads: tuple[int, ...]
    writes: tuple[int, ...]
    barrier: bool


def _unordered_operators(plan: Any) -> list[bool]:
    """Per operator of ``plan``: whether a call of it is a barrier (its schema
    returns an alias it does not write, or it draws random numbers)."""
    import torch

    flags: list[bool] = []
    for operator in plan.operators:
        overload = operator_overload(operator)
        if overload is None:
            flags.append(True)  # unknown: `operator_writes` refuses it first
            continue
        schema = overload._schema
        aliases = [a.alias_info for a in [*schema.arguments, *schema.returns]]
        viewing = any(alias is not None and not alias.is_write for alias in aliases)
        seeded = torch.Tag.nondeterministic_seeded in getattr(overload, "tags", ())
        flags.append(viewing or seeded)
    return flags


def instruction_steps(
    plan: Any,
    schema: Any,
    instructions: Sequence[Any],
    writes: Sequence[Sequence[bool]],
    location: Mapping[int, int],
) -> list[Step]:
    """The ``Step`` of each instruction; ``writes`` is ``operator_writes(plan)``
    and ``location`` maps a view's value index to its base's."""
    values = plan.values
    barrier_operators = _unordered_operators(plan)
    steps: list[Step] = []
    for instruction in instructions:
        args = instruction.instr_args
        read: list[int] = []
        written: list[int] = []
        if isinstance(args, schema.KernelCall):
            barrier = barrier_operators[args.op_index]
            for index, flag in zip(args.args, writes[args.op_index]):
                (written if flag else read).extend(with_items(int(index), values, schema))
        else:
            barrier = True
            if isinstance(args, schema.MoveCall):
                read, written = [int(args.move_from)], [int(args.move_to)]
            elif isinstance(args, schema.FreeCall):
                written = [int(args.value_index)]
        steps.append(
            Step(
                tuple(dict.fromkeys(location.get(i, i) for i in read)),
                tuple(dict.fromkeys(location.get(i, i) for i in written)),
                barrier,
            )
        )
    return steps


def _segment_problem(
    steps: Sequence[Step],
    segment: range,
    sizes: Mapping[int, int],
    first_writer: Mapping[int, int],
    needed_after: Set[int],
) -> ScheduleProblem:
    """The DAG of ``segment``'s instructions (positions in ``steps``) for the
    schedulers: node ``k`` is instruction ``segment[k]``."""
    last_writer: dict[int, int] = {}
    readers_since: dict[int, list[int]] = {}
    node_sizes: list[int] = []
    predecessors: list[tuple[int, ...]] = []
    kept: set[int] = set()
    for node, position in enumerate(segment):
        step = steps[position]
        before: list[int] = []
        for read in step.reads:
            if read in last_writer:
                before.append(last_writer[read])
        for write in step.writes:
            if write in last_writer:
                before.append(last_writer[write])
            before.extend(readers_since.get(write, ()))
        for read in step.reads:
            readers_since.setdefault(read, []).append(node)
        for write in step.writes:
            last_writer[write] = node
            readers_since[write] = []
        predecessors.append(tuple(dict.fromkeys(p for p in before if p != node)))
        node_sizes.append(
            sum(sizes.get(w, 0) for w in step.writes if first_writer.get(w) == position)
        )
        if any(w in needed_after for w in step.writes):
            kept.add(node)
    return ScheduleProblem(
        tuple(node_sizes), tuple(predecessors), (None,) * len(node_sizes), frozenset(kept)
    )


def candidate_orders(
    steps: Sequence[Step], sizes: Mapping[int, int], outputs: Set[int]
) -> list[tuple[str, list[int]]]:
    """Whole-chain orders (positions in ``steps``), each named by its
    scheduler, the program's own first (``post-order``), without repeats.

    ``sizes`` gives the bytes of each location the plan places (not the
    method's inputs); ``outputs`` the locations the method returns."""
    first_writer: dict[int, int] = {}
    for position, step in enumerate(steps):
        for write in step.writes:
            first_writer.setdefault(write, position)
    segments: list[range] = []
    start = 0
    for position, step in enumerate(steps):
        if step.barrier:
            segments.append(range(start, position))
            start = position + 1
    segments.append(range(start, len(steps)))
    names = [*HEURISTICS, "best"]
    orders: dict[str, list[int]] = {name: [] for name in names}
    for segment in segments:
        later: set[int] = set(outputs)
        for step in steps[segment.stop :]:
            later.update(step.reads)
            later.update(step.writes)
        problem = _segment_problem(steps, segment, sizes, first_writer, later)
        for name in names:
            if name == "best":
                order, _, _ = best_schedule(problem)
            else:
                order = SCHEDULERS[name](problem)
            assert is_topological(problem, order)
            orders[name].extend(segment[node] for node in order)
        if segment.stop < len(steps):
            for name in names:
                orders[name].append(segment.stop)  # the barrier
    found: list[tuple[str, list[int]]] = []
    for name in names:
        if all(order != orders[name] for _, order in found):
            found.append((name, orders[name]))
    return found


def same_dataflow(steps: Sequence[Step], order: Sequence[int]) -> bool:
    """Whether running ``steps`` in ``order`` (a permutation of their
    positions) gives every access to a location the same number of writes to
    it before it as the given order, with barriers in place."""
    if sorted(order) != list(range(len(steps))):
        return False

    def versions(sequence: Sequence[int]) -> dict[tuple[int, int, bool], int]:
        written: dict[int, int] = {}
        seen: dict[tuple[int, int, bool], int] = {}
        for position in sequence:
            step = steps[position]
            for read in step.reads:
                seen[(position, read, False)] = written.get(read, 0)
            for write in step.writes:
                seen[(position, write, True)] = written.get(write, 0)
                written[write] = written.get(write, 0) + 1
        return seen

    segment_of: list[int] = []
    barriers = 0
    for step in steps:
        segment_of.append(barriers)
        barriers += step.barrier
    in_place = all(
        segment_of[moved] == segment_of[position]
        and (moved == position or not steps[moved].barrier)
        for position, moved in enumerate(order)
    )
    return in_place and versions(order) == versions(range(len(steps)))
