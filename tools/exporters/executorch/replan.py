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
  kernel (``ELEMENTWISE_KERNELS``) whose input dies at its call, with the
  output's shape, scalar type and memory, writes its output into that
  input's bytes: the two are planned as one tensor. Each output element is
  computed from the input elements at its own index, so every element is
  read before it is overwritten. Method inputs, views and their bases are
  never shared this way. This is what takes a plan below the order's
  bound (the peak of live bytes when no two live tensors share bytes).
- **Left as they are**: tensors without ``AllocationDetails`` (constants,
  and what the runtime allocates itself).
- **Refused** (one line each, ``PteError``): a file that is not a ``.pte``;
  a method with delegates (their memory is not in the program), control
  flow (jumps, several chains), or a dynamic tensor without an upper bound
  that the program placed; a capacity too small (``--capacity MEM_ID=BYTES``).

Each memory is planned and checked as the hook plans it
(``memplan.tools.executorch.plan_memory``: the planning core, then its
independent validator on the lifetimes read from the program) before the
program is written. The program is written back by ExecuTorch's own serializer: every field but
the offsets and ``non_const_buffer_sizes`` is as it was (the flatbuffer is
laid out anew, so the bytes differ).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memplan.passes.planning.algorithms import DEFAULT_BUDGET
from memplan.tools.executorch import MemplanPlanningError, live_bytes_bound, plan_memory
from memplan.tools.exporters.protocol import ExportError
from memplan.tools.frontends.protocol import FrontendError
from memplan.tools.frontends.pte.lifetimes import ELEMENTWISE_KERNELS, method_tensors
from memplan.tools.frontends.pte.lifetimes import PlannedTensor as _Tensor
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


@dataclass
class Replanned:
    """``replan``'s result: the new program's bytes and what was planned."""

    data: bytes
    memories: list[MemoryPlan] = field(default_factory=list[MemoryPlan])


def _method_tensors(plan: Any, schema: Any) -> tuple[list[_Tensor], list[list[bool]]]:
    """The planned tensors of one method with their lifetimes
    (``pte.lifetimes.method_tensors``), and ``operator_writes(plan)``."""
    try:
        return method_tensors(plan, schema, "memplan-export-pte plans")
    except FrontendError as error:
        raise PteError(str(error)) from None


def _inplace_pairs(
    plan: Any,
    schema: Any,
    writes: list[list[bool]],
    tensors: list[_Tensor],
    views: dict[int, tuple[_Tensor, int]],
) -> dict[int, int]:
    """Output tensor index -> the input tensor index whose bytes it takes
    (``ELEMENTWISE_KERNELS``; see the module docstring), in program order;
    ``writes`` is ``operator_writes(plan)``."""
    by_index = {tensor.index: tensor for tensor in tensors}
    shared_bytes = set(views) | {base.index for base, _ in views.values()}
    instructions = plan.chains[0].instructions  # one chain: `_method_tensors` checked
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for position, instruction in enumerate(instructions):
        args = instruction.instr_args
        if not isinstance(args, schema.KernelCall):
            continue
        operator = plan.operators[args.op_index]
        if (str(operator.name), str(operator.overload)) not in ELEMENTWISE_KERNELS:
            continue
        flags = writes[args.op_index]
        written = {int(i) for i, flag in zip(args.args, flags) if flag}
        read = [int(i) for i, flag in zip(args.args, flags) if not flag and int(i) not in written]
        if len(written) != 1:
            continue
        out = by_index.get(next(iter(written)))
        if out is None or out.index in shared_bytes or out.first != position:
            continue
        for index in read:
            source = by_index.get(index)
            if (
                source is not None
                and source.index not in shared_bytes
                and source.index not in taken
                and source.first >= 0  # a method input is the caller's
                and source.last == position  # it dies here
                and source.memory_id == out.memory_id
                and source.size == out.size
                and list(source.value.sizes) == list(out.value.sizes)
                and source.value.scalar_type == out.value.scalar_type
            ):
                pairs[out.index] = source.index
                taken.add(source.index)
                break
    return pairs


def replan(
    data: bytes,
    label: str,
    *,
    algorithm: str = "auto",
    budget: int = DEFAULT_BUDGET,
    capacities: Mapping[int, int] | None = None,
    alignment: int = ALIGNMENT,
    inplace: bool = True,
) -> Replanned:
    """``data`` (a ``.pte``) with every planned tensor at memplan's offset
    (and, with ``inplace``, element-wise outputs in their dying inputs' bytes)."""
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
        by_index = {tensor.index: tensor for tensor in tensors}
        views = _views(tensors)
        for index, (base, _) in views.items():
            view = by_index[index]
            base.first, base.last = min(base.first, view.first), max(base.last, view.last)
        roots = [t for t in tensors if t.index not in views]
        # Shifted by one: the inputs live from before instruction 0.
        lives = {t.index: (t.size, t.first + 1, t.last + 1) for t in roots}
        pairs = _inplace_pairs(plan, schema, writes, tensors, views) if inplace else {}
        holder: dict[int, int] = {}  # a shared output -> the tensor whose bytes hold it
        for out, source in pairs.items():
            held = holder.get(source, source)
            holder[out] = held
            size, first, last = lives[held]
            lives[held] = (size, first, max(last, lives.pop(out)[2]))
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
            # The order's bound is the planned lives' own unless tensors share.
            order_bound = placed.lower_bound
            if shared:
                order_bound = live_bytes_bound(
                    [(t.size, t.first + 1, t.last + 1) for t in roots if t.memory_id == memory_id],
                    alignment,
                )
            before = sizes[memory_id] if memory_id < len(sizes) else 0
            if memory_id < len(sizes):
                sizes[memory_id] = placed.peak
            result.memories.append(
                MemoryPlan(
                    plan.name,
                    memory_id,
                    before,
                    placed.peak,
                    order_bound,
                    len(members) + len(shared),
                    len(shared),
                )
            )
        for index, (base, offset) in views.items():
            by_index[index].offset = base.offset + offset
        for tensor in tensors:
            details = tensor.value.allocation_info
            details.memory_offset_low = tensor.offset & 0xFFFFFFFF
            details.memory_offset_high = tensor.offset >> 32
        plan.non_const_buffer_sizes = sizes
    result.data = bytes(serialize_pte_binary(pte))
    return result
