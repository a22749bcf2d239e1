"""Re-planning a built ExecuTorch program (``.pte``) with memplan.

A ``.pte`` holds, per method (``execution_plan``), every value of the
method (``values``), the instructions that run it (``chains``) and, for
each tensor the planner placed, its memory id and byte offset
(``AllocationDetails``); ``non_const_buffer_sizes[i]`` is the size of
memory ``i`` (0 is the constants' and never planned). ``replan`` reads that,
recovers each planned tensor's lifetime from the instructions and plans the
tensors again with memplan's planning core, one pool per memory id, and
writes the same program with memplan's offsets and sizes. Lifetimes and
views are read by ``memplan.tools.frontends.pte.lifetimes``, which
``memplan-import --planned`` shares to import a program's own plan.

- **Lifetimes**: a tensor is live from the first instruction that names it
  (as an argument, directly or in a tensor list) to the last, inclusive;
  the method's inputs from before the first instruction, its outputs to
  after the last. Two tensors live at one instruction never share bytes.
- **Views**: a planned tensor that the program places inside another
  one's bytes while both are live (ExecuTorch's storage-backed tensors) keeps
  its place relative to that base, whose lifetime grows to cover it.
- **In place** (``inplace``, on by default): an element-wise out-variant
  kernel (``memplan.tools.frontends.pte.kernels.ELEMENTWISE_KERNELS``) whose input
  dies at its call, with the output's shape, scalar type, dim order and
  memory, writes its output into that input's bytes: the two are planned
  as one tensor (``inplace_source``, the rule the ExecuTorch hook applies
  too). Each output element is computed from the input elements at its
  own index, so every element is read before it is overwritten. Method
  inputs, views and their bases are never shared this way. This takes a
  plan below the order's bound (the peak of live bytes when no two live
  tensors share bytes).
- **Order** (``reorder``, on by default): the method's instructions may run
  in another order that keeps every dependency (``reorder``: each read sees
  the same write, no write before a read of what it replaces, writes in
  their order, on values and on the bytes views share; barriers fixed).
  The planning core's schedulers propose whole-chain orders; the one whose
  lifetimes give the lowest peak of live bytes (with in-place pairs counted
  once, then without) is planned and written as the method's chain, the
  program's own order on a tie. Views are read from the program's order
  (a reorder moves no tensor into another one's bytes). A tensor read
  before anything writes it that is no view (state a previous run left,
  as a mutable buffer) is live over the whole method in any order.
- **Left as they are**: tensors without ``AllocationDetails`` (constants,
  and what the runtime allocates itself).
- **Refused** (one line each, ``PteError``): a file that is not a ``.pte``;
  a method with delegates (their memory is not in the program), control
  flow (jumps, several chains), or a dynamic tensor without an upper bound
  that the program placed; a capacity too small (``--capacity MEM_ID=BYTES``).

Each memory is planned and checked as the hook plans it
(``memplan.tools.exporters.executorch.hook.plan_memory``: the planning core, then its
independent validator on the lifetimes read from the program) before the
program is written. The program is written back by ExecuTorch's own serializer: every field but
the offsets and ``non_const_buffer_sizes`` is as it was (the flatbuffer is
laid out anew, so the bytes differ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from memplan.passes.planning.algorithms import DEFAULT_BUDGET
from memplan.tools.exporters.executorch.hook import (
    InplaceOperand,
    MemplanPlanningError,
    inplace_source,
    live_bytes_bound,
    plan_memory,
)
from memplan.tools.exporters.executorch.reorder import (
    candidate_orders,
    instruction_steps,
    same_dataflow,
)
from memplan.tools.exporters.protocol import ExportError
from memplan.tools.frontends.protocol import FrontendError
from memplan.tools.frontends.pte.lifetimes import PlannedTensor as _Tensor
from memplan.tools.frontends.pte.lifetimes import extend_over_views, method_tensors
from memplan.tools.frontends.pte.lifetimes import storage_views as _views
from memplan.tools.frontends.pte.program import (
    executorch_schema,
    executorch_serializer,
    load_pte,
)

ALIGNMENT = 16
"""ExecuTorch's ``MemoryPlanningPass`` default: every planned offset a multiple of it."""


class PteError(ExportError):
    """A program `memplan-export pte` refuses, or a plan it cannot make (one line)."""


@dataclass
class MemoryPlan:
    """One memory of one method: the program's size and memplan's, the
    lower bound (peak of live bytes), and how many tensors were planned."""

    method: str
    memory_id: int
    before: int
    after: int
    lower_bound: int
    """The peak of live bytes of the order the program runs, no two live
    tensors sharing bytes: what a plan without in-place sharing cannot go
    below."""
    tensors: int
    shared: int = 0
    """Tensors written into a dying input's bytes (``inplace``)."""
    program_order_bound: int | None = None
    """The bound of the program's own order (``reorder``; None without)."""
    reordered: bool = False
    """Whether the method's instructions run in a new order."""


@dataclass
class Replanned:
    """``replan``'s result: the new program's bytes and what was planned."""

    data: bytes
    memories: list[MemoryPlan] = field(default_factory=list[MemoryPlan])


def _method_tensors(
    plan: Any, schema: Any, writes: list[list[bool]] | None = None
) -> tuple[list[_Tensor], list[list[bool]]]:
    """The planned tensors of one method with their lifetimes
    (``pte.lifetimes.method_tensors``), and ``operator_writes(plan)``
    (``writes`` when given)."""
    try:
        return method_tensors(plan, schema, "memplan-export-pte plans", writes)
    except FrontendError as error:
        raise PteError(str(error)) from None


def _inplace_pairs(
    plan: Any,
    schema: Any,
    instructions: Sequence[Any],
    writes: list[list[bool]],
    tensors: list[_Tensor],
    views: Mapping[int, tuple[_Tensor, int]],
) -> dict[int, int]:
    """Output tensor index -> the input tensor index whose bytes it takes
    (``inplace_source``; see the module docstring), in the order of
    ``instructions``; ``writes`` is ``operator_writes(plan)``."""
    by_index = {tensor.index: tensor for tensor in tensors}
    fixed = set(views) | {base.index for base, _ in views.values()}
    pairs: dict[int, int] = {}
    taken: set[int] = set()

    def operand(tensor: _Tensor) -> InplaceOperand:
        return InplaceOperand(
            tuple(int(d) for d in tensor.value.sizes),
            tensor.value.scalar_type,
            tuple(int(d) for d in tensor.value.dim_order),
            tensor.memory_id,
            tensor.size,
            tensor.index not in fixed and tensor.index not in taken and tensor.first >= 0,
        )

    for position, instruction in enumerate(instructions):
        args = instruction.instr_args
        if not isinstance(args, schema.KernelCall):
            continue
        operator = plan.operators[args.op_index]
        flags = writes[args.op_index]
        written = {int(i) for i, flag in zip(args.args, flags) if flag}
        if len(written) != 1:
            continue
        out = by_index.get(next(iter(written)))
        if out is None or out.first != position:
            continue
        dying = [
            by_index[index]
            for index in dict.fromkeys(
                int(i) for i, flag in zip(args.args, flags) if not flag and int(i) not in written
            )
            if index in by_index and by_index[index].last == position
        ]
        kernel = (str(operator.name), str(operator.overload))
        found = inplace_source(kernel, operand(out), [operand(t) for t in dying])
        if found is not None:
            pairs[out.index] = dying[found].index
            taken.add(dying[found].index)
    return pairs


@dataclass
class _Layout:
    """One order of a method's instructions and the tensors' lives in it:
    ``lives`` gives each planned tensor's ``(bytes, first, last)`` (shifted
    by one: the inputs live from before instruction 0), an in-place output's
    merged into the tensor whose bytes hold it (``holder``); offsets are
    multiples of ``alignment``."""

    order: list[int]
    instructions: list[Any]
    tensors: list[_Tensor]
    views: dict[int, tuple[_Tensor, int]]
    roots: list[_Tensor]
    lives: dict[int, tuple[int, int, int]]
    holder: dict[int, int]
    alignment: int

    @cached_property
    def bounds(self) -> dict[int, tuple[int, int]]:
        """Per memory id: the peak of live bytes with in-place pairs counted
        once, and without (the order's bound)."""
        alignment = self.alignment
        found: dict[int, tuple[int, int]] = {}
        for memory_id in sorted({t.memory_id for t in self.roots}):
            members = [t for t in self.roots if t.memory_id == memory_id]
            merged = [self.lives[t.index] for t in members if t.index in self.lives]
            apart = [(t.size, t.first + 1, t.last + 1) for t in members]
            order = live_bytes_bound(apart, alignment)
            shared = live_bytes_bound(merged, alignment) if len(merged) < len(apart) else order
            found[memory_id] = (shared, order)
        return found


def _ordered_tensors(
    plan: Any, schema: Any, instructions: Sequence[Any], writes: list[list[bool]], order: list[int]
) -> list[_Tensor]:
    """The tensors of ``plan`` and their lives when it runs ``instructions`` in ``order``."""
    reordered = [instructions[i] for i in order]
    ordered_plan = replace(plan, chains=[replace(plan.chains[0], instructions=reordered)])
    return _method_tensors(ordered_plan, schema, writes)[0]


def _layout(
    plan: Any,
    schema: Any,
    instructions: Sequence[Any],
    writes: list[list[bool]],
    order: list[int],
    tensors: list[_Tensor],
    program_views: Mapping[int, tuple[_Tensor, int]],
    alignment: int,
    inplace: bool,
) -> _Layout:
    """The tensors' lives when ``plan`` runs ``instructions`` in ``order``;
    ``writes`` is ``operator_writes(plan)``, ``tensors`` are read in
    ``order`` (``_ordered_tensors``), ``program_views`` are the views
    read from the program's own order (a reorder moves no tensor into
    another one's bytes)."""
    reordered = [instructions[i] for i in order]
    by_index = {tensor.index: tensor for tensor in tensors}
    views = {
        index: (by_index[base.index], offset) for index, (base, offset) in program_views.items()
    }
    extend_over_views(tensors, views, len(reordered))
    roots = [t for t in tensors if t.index not in views]
    lives = {t.index: (t.size, t.first + 1, t.last + 1) for t in roots}
    pairs = _inplace_pairs(plan, schema, reordered, writes, tensors, views) if inplace else {}
    holder: dict[int, int] = {}  # a shared output -> the tensor whose bytes hold it
    for out, source in pairs.items():
        held = holder.get(source, source)
        holder[out] = held
        size, first, last = lives[held]
        lives[held] = (size, first, max(last, lives.pop(out)[2]))
    return _Layout(order, reordered, tensors, views, roots, lives, holder, alignment)


def _reordered(
    plan: Any,
    schema: Any,
    instructions: list[Any],
    writes: list[list[bool]],
    program: _Layout,
    inplace: bool,
) -> _Layout:
    """The layout of the candidate order (``reorder.candidate_orders``)
    with the lowest peaks of live bytes (with in-place sharing, then
    without, summed over the memories), ``program``'s on a tie; ``writes``
    is ``operator_writes(plan)``."""
    location = {index: base.index for index, (base, _) in program.views.items()}
    steps = instruction_steps(plan, schema, instructions, writes, location)
    inputs = {int(i) for i in plan.inputs}
    sizes = {t.index: t.size for t in program.roots if t.index not in inputs}
    outputs = {location.get(int(i), int(i)) for i in plan.outputs}

    def score(layout: _Layout) -> tuple[int, int]:
        bounds = layout.bounds.values()
        return sum(b[0] for b in bounds), sum(b[1] for b in bounds)

    best, best_score = program, score(program)
    for _, order in candidate_orders(steps, sizes, outputs):
        if order == program.order:
            continue
        if not same_dataflow(steps, order):
            raise AssertionError(f"method '{plan.name}': a reorder broke a dependency")
        tensors = _ordered_tensors(plan, schema, instructions, writes, order)
        layout = _layout(
            plan,
            schema,
            instructions,
            writes,
            order,
            tensors,
            program.views,
            program.alignment,
            inplace,
        )
        if score(layout) < best_score:
            best, best_score = layout, score(layout)
    return best


def replan(
    data: bytes,
    label: str,
    *,
    algorithm: str = "auto",
    budget: int = DEFAULT_BUDGET,
    capacities: Mapping[int, int] | None = None,
    alignment: int = ALIGNMENT,
    inplace: bool = True,
    reorder: bool = True,
) -> Replanned:
    """``data`` (a ``.pte``) with every planned tensor at memplan's offset
    (with ``inplace``, element-wise outputs in their dying inputs' bytes;
    with ``reorder``, its instructions in the order of lowest peak)."""
    try:
        schema = executorch_schema()
        pte = load_pte(data, label)
    except FrontendError as error:
        raise PteError(str(error)) from None
    serialize_pte_binary = executorch_serializer().serialize_pte_binary

    result = Replanned(b"")
    capacities = dict(capacities or {})
    for plan in pte.program.execution_plan:
        tensors, writes = _method_tensors(plan, schema)
        instructions = list(plan.chains[0].instructions)
        identity = list(range(len(instructions)))
        layout = program = _layout(
            plan,
            schema,
            instructions,
            writes,
            identity,
            tensors,
            _views(tensors),
            alignment,
            inplace,
        )
        if reorder:
            layout = _reordered(plan, schema, instructions, writes, program, inplace)
        by_index = {tensor.index: tensor for tensor in layout.tensors}
        roots, lives, holder = layout.roots, layout.lives, layout.holder
        sizes = list(plan.non_const_buffer_sizes)
        for memory_id in sorted({t.memory_id for t in roots}):
            members = [t for t in roots if t.memory_id == memory_id and t.index in lives]
            capacity = capacities.get(memory_id)
            try:
                placed = plan_memory(
                    [lives[t.index] for t in members], alignment, capacity, algorithm, budget
                )
            except MemplanPlanningError as error:
                raise PteError(f"method '{plan.name}', memory {memory_id}: {error}") from None
            if placed.offsets is None:
                raise PteError(
                    f"method '{plan.name}', memory {memory_id}: no plan within "
                    f"{capacity} bytes (its tensors need at least {placed.lower_bound}; status "
                    f"{placed.status})"
                )
            for tensor, offset in zip(members, placed.offsets):
                tensor.offset = offset
            shared = [t for t in roots if t.memory_id == memory_id and t.index in holder]
            for tensor in shared:
                tensor.offset = by_index[holder[tensor.index]].offset
            before = sizes[memory_id] if memory_id < len(sizes) else 0
            if memory_id < len(sizes):
                sizes[memory_id] = placed.peak
            result.memories.append(
                MemoryPlan(
                    plan.name,
                    memory_id,
                    before,
                    placed.peak,
                    layout.bounds[memory_id][1],
                    len(members) + len(shared),
                    len(shared),
                    program.bounds[memory_id][1] if reorder else None,
                    layout is not program,
                )
            )
        for index, (base, offset) in layout.views.items():
            by_index[index].offset = base.offset + offset
        for tensor in layout.tensors:
            details = tensor.value.allocation_info
            details.memory_offset_low = tensor.offset & 0xFFFFFFFF
            details.memory_offset_high = tensor.offset >> 32
        plan.non_const_buffer_sizes = sizes
        if layout is not program:
            chain = plan.chains[0]
            chain.instructions = layout.instructions
            if chain.stacktrace is not None:
                chain.stacktrace = [chain.stacktrace[i] for i in layout.order]
    result.data = bytes(serialize_pte_binary(pte))
    return result
