"""What a method's instructions say about the tensors its program placed:
their lifetimes, and which of them are views of another one's bytes.

``memplan-import --planned`` imports a program's own plan with these rules
and ``memplan-export pte`` re-plans the tensors with them, so the plan a
program holds and the plan memplan writes are read the same way.

- **Lifetimes** (``method_tensors``): a tensor is live from the first
  instruction that names it (as an argument, directly or in a tensor list)
  to the last, inclusive; the method's inputs from before the first
  instruction (``-1``), its outputs to after the last (the instruction
  count). A placed tensor that no instruction names is live before the
  first instruction only, as an input.
- **Views** (``storage_views``): a tensor is a view of another one's bytes
  when the program places it inside a tensor live at the same time
  (ExecuTorch's storage-backed tensors), or when it is read before anything
  writes it: then it reads what was written into the tensor holding its
  bytes, the one written last before that read.
- **What views imply** (``extend_over_views``): a base lives as long as
  its views, and a tensor that is no view and is read before anything
  writes it (what a previous run left: a mutable buffer) lives over the
  whole method.
- **View operators** (``VIEW_OPERATORS``): what writes a view a checker
  accepts as one, rather than as a tensor sharing a live one's bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memplan.tools.frontends.pte.program import (
    PteImportError,
    executorch_serializer,
    operator_writes,
    straight_line,
)


@dataclass
class PlannedTensor:
    """A tensor the program placed (``AllocationDetails``): its value index,
    its ``schema.Tensor``, its memory id and byte offset there, its bytes,
    and the first and last instruction that name it."""

    index: int
    value: Any
    memory_id: int
    offset: int
    size: int
    first: int
    last: int
    written: int | None
    """The first instruction that writes it (``-1``: a method input; None: none does)."""


def placed_offset(details: Any) -> int:
    """The byte offset an ``AllocationDetails`` gives."""
    return int(details.memory_offset_low) + (int(details.memory_offset_high) << 32)


def byte_size(tensor: Any, where: str) -> int:
    """The bytes of a contiguous ``schema.Tensor`` (ExecuTorch's own rule)."""
    import torch

    exir_tensor = executorch_serializer().tensor
    try:
        dtype = exir_tensor.get_scalar_type(tensor.scalar_type)
    except KeyError:
        raise PteImportError(
            f"{where}: tensor of scalar type {tensor.scalar_type} has no known size"
        ) from None
    return int(exir_tensor.num_bytes_from_shape_and_dtype(torch.Size(tensor.sizes), dtype))


def with_items(index: int, values: Sequence[Any], schema: Any) -> list[int]:
    """``index`` and, for a tensor list, its items."""
    found = [index]
    value = values[index].val
    if isinstance(value, schema.TensorList | schema.OptionalTensorList):
        found.extend(int(i) for i in value.items if int(i) >= 0)
    return found


def instruction_uses(instruction: Any, values: Sequence[Any], schema: Any) -> list[int]:
    """The value indices an instruction names, tensor lists expanded."""
    args = instruction.instr_args
    if isinstance(args, schema.KernelCall):
        named = list(args.args)
    elif isinstance(args, schema.MoveCall):
        named = [args.move_from, args.move_to]
    else:
        named = []
    return [found for index in named for found in with_items(index, values, schema)]


def method_tensors(
    plan: Any, schema: Any, tool: str, writes: list[list[bool]] | None = None
) -> tuple[list[PlannedTensor], list[list[bool]]]:
    """The placed tensors of method ``plan`` with their lifetimes (see the
    module docstring), and ``operator_writes(plan)`` (``writes`` when the
    caller has read it already: a re-plan trying several orders of one
    method reads the operators' schemas once). ``PteImportError``
    for what ``straight_line`` refuses (``tool`` says what takes
    straight-line methods only) and a placed dynamic tensor without a bound."""
    name = plan.name
    instructions = straight_line(plan, schema, tool)
    if writes is None:
        writes = operator_writes(plan)
    values = plan.values
    uses: dict[int, list[int]] = {}
    written: dict[int, int] = {int(index): -1 for index in plan.inputs}
    for position, instruction in enumerate(instructions):
        args = instruction.instr_args
        if isinstance(args, schema.KernelCall):
            for index, flag in zip(args.args, writes[args.op_index]):
                if flag:
                    for target in with_items(int(index), values, schema):
                        written.setdefault(target, position)
        elif isinstance(args, schema.MoveCall):
            written.setdefault(int(args.move_to), position)
        for index in instruction_uses(instruction, values, schema):
            uses.setdefault(index, []).append(position)
    for index in plan.inputs:
        uses.setdefault(int(index), []).append(-1)
    for index in plan.outputs:
        uses.setdefault(int(index), []).append(len(instructions))
    tensors: list[PlannedTensor] = []
    for index, value in enumerate(values):
        tensor = value.val
        if not isinstance(tensor, schema.Tensor) or tensor.allocation_info is None:
            continue
        where = f"method '{name}', value {index}"
        if tensor.shape_dynamism == schema.TensorShapeDynamism.DYNAMIC_UNBOUND:
            raise PteImportError(
                f"{where}: a dynamic tensor without an upper bound has no static place"
            )
        # Placed but never named: live before the first instruction, as an input.
        times = uses.get(index) or [-1]
        details = tensor.allocation_info
        tensors.append(
            PlannedTensor(
                index,
                tensor,
                int(details.memory_id),
                placed_offset(details),
                byte_size(tensor, where),
                min(times),
                max(times),
                written.get(index),
            )
        )
    return tensors, writes


VIEW_OPERATORS = frozenset({("executorch_prim::et_view", "default")})
"""ExecuTorch's operators (name, overload) whose output is a view of their
input's bytes: the emitter keeps ``et_view`` for a view of a dynamic shape
(a static one has no instruction), its output placed where its input is."""


def extend_over_views(
    tensors: Sequence[PlannedTensor], views: dict[int, tuple[PlannedTensor, int]], count: int
) -> None:
    """The lifetimes ``views`` (``storage_views``) imply, set on ``tensors``
    (a method of ``count`` instructions): each base lives as long as its
    views; a tensor that is no view and is read before anything writes it
    lives from before the first instruction to after the last."""
    by_index = {tensor.index: tensor for tensor in tensors}
    for index, (base, _) in views.items():
        view = by_index[index]
        base.first, base.last = min(base.first, view.first), max(base.last, view.last)
    for tensor in tensors:
        if tensor.index in views or tensor.first < 0:
            continue
        if tensor.written is None or tensor.written > tensor.first:
            tensor.first, tensor.last = -1, count


def storage_views(
    tensors: list[PlannedTensor],
    written_as_view: Callable[[PlannedTensor], bool] | None = None,
) -> dict[int, tuple[PlannedTensor, int]]:
    """Tensors that are views of another one's bytes in the program: index ->
    (base, offset in it), a chain of views pointing at its root (see the
    module docstring). ``written_as_view``, when given, says which written
    tensors placed inside a live one are views (the others are not views
    whatever their place: a checker asks it, where a planner trusts the
    program's places)."""
    found: dict[int, tuple[PlannedTensor, int]] = {}
    by_memory: dict[int, list[PlannedTensor]] = {}
    for tensor in tensors:
        by_memory.setdefault(tensor.memory_id, []).append(tensor)
    for members in by_memory.values():
        members.sort(key=lambda t: (t.offset, -t.size, t.index))
        for tensor in members:
            if tensor.size == 0:
                continue
            holders = [
                other
                for other in members
                if other is not tensor
                and other.offset <= tensor.offset
                and tensor.offset + tensor.size <= other.offset + other.size
                and (other.size, -other.index) > (tensor.size, -tensor.index)
            ]
            read_first = tensor.written is None or tensor.written > tensor.first
            if read_first:
                # The holder written last before the tensor is first read.
                earlier = [
                    h for h in holders if h.written is not None and h.written <= tensor.first
                ]
                base = max(earlier, key=lambda h: (h.written, h.size), default=None)
            elif written_as_view is not None and not written_as_view(tensor):
                base = None
            else:
                live = [h for h in holders if h.first <= tensor.last and tensor.first <= h.last]
                base = max(live, key=lambda h: h.size, default=None)
            if base is not None:
                found[tensor.index] = (base, tensor.offset - base.offset)
    # A chain of views points at its root.
    for index, (base, offset) in list(found.items()):
        while base.index in found:
            base, extra = found[base.index]
            offset += extra
        found[index] = (base, offset)
    return found
