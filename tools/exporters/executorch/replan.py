"""Re-planning a built ExecuTorch program (``.pte``) with memplan.

A ``.pte`` holds, per method (``execution_plan``), every value of the
method (``values``), the instructions that run it (``chains``) and, for
each tensor the planner placed, its memory id and byte offset
(``AllocationDetails``); ``non_const_buffer_sizes[i]`` is the size of
memory ``i`` (0 is the constants' and never planned). ``replan`` reads that,
recovers each planned tensor's lifetime from the instructions and plans the
tensors again with memplan's planning core, one pool per memory id, and
writes the same program with memplan's offsets and sizes.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memplan.passes.planning.algorithms import DEFAULT_BUDGET
from memplan.tools.executorch import MemplanPlanningError, live_bytes_bound, plan_memory
from memplan.tools.exporters.protocol import ExportError
from memplan.tools.frontends.protocol import FrontendError
from memplan.tools.frontends.pte.program import (
    executorch_schema,
    executorch_serializer,
    load_pte,
    operator_writes,
    straight_line,
)

ALIGNMENT = 16
"""ExecuTorch's ``MemoryPlanningPass`` default: every planned offset a multiple of it."""

ELEMENTWISE_KERNELS = frozenset(
    {
        *(
            (f"aten::{name}", "out")
            for name in (
                "abs", "add", "clamp", "div", "exp", "gelu", "hardsigmoid", "hardswish",
                "hardtanh", "leaky_relu", "mul", "neg", "relu", "rsqrt", "sigmoid", "silu",
                "sqrt", "sub", "tanh",
            )
        ),
        ("aten::pow", "Tensor_Scalar_out"),
    }
)  # fmt: skip
"""ExecuTorch's portable kernels (operator name, overload) that compute each
output element from the input elements at the same index (broadcast inputs
aside): an input of the output's shape may hold the output. Checked by
running every benchmark model bit-identical with and without it
(``benchmarks/executorch_models.py``)."""


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


@dataclass
class _Tensor:
    index: int
    value: Any
    memory_id: int
    offset: int
    size: int
    first: int
    last: int
    written: int | None
    """The first instruction that writes it (None: none does)."""


def _offset(details: Any) -> int:
    return int(details.memory_offset_low) + (int(details.memory_offset_high) << 32)


def _byte_size(tensor: Any, where: str) -> int:
    """The bytes of a contiguous ``schema.Tensor`` (ExecuTorch's own rule)."""
    import torch

    exir_tensor = executorch_serializer().tensor
    get_scalar_type = exir_tensor.get_scalar_type
    num_bytes_from_shape_and_dtype = exir_tensor.num_bytes_from_shape_and_dtype
    try:
        dtype = get_scalar_type(tensor.scalar_type)
    except KeyError:
        raise PteError(
            f"{where}: tensor of scalar type {tensor.scalar_type} has no known size"
        ) from None
    return int(num_bytes_from_shape_and_dtype(torch.Size(tensor.sizes), dtype))


def _uses(instruction: Any, values: Sequence[Any], schema: Any) -> list[int]:
    """The value indices an instruction names, tensor lists expanded."""
    args = instruction.instr_args
    if isinstance(args, schema.KernelCall):
        named = list(args.args)
    elif isinstance(args, schema.MoveCall):
        named = [args.move_from, args.move_to]
    elif isinstance(args, schema.FreeCall):
        named = []
    else:
        named = []
    found: list[int] = []
    for index in named:
        found.append(index)
        value = values[index].val
        if isinstance(value, schema.TensorList | schema.OptionalTensorList):
            found.extend(int(i) for i in value.items if int(i) >= 0)
    return found


def _method_tensors(plan: Any, schema: Any) -> tuple[list[_Tensor], list[list[bool]]]:
    """The planned tensors of one method with their lifetimes (see the module
    docstring), and ``operator_writes(plan)``."""
    name = plan.name
    try:
        instructions = straight_line(plan, schema, "memplan-export-pte plans")
        writes = operator_writes(plan)
    except FrontendError as error:
        raise PteError(str(error)) from None
    values = plan.values
    uses: dict[int, list[int]] = {}
    written: dict[int, int] = {int(index): -1 for index in plan.inputs}
    for position, instruction in enumerate(instructions):
        args = instruction.instr_args
        if isinstance(args, schema.KernelCall):
            for index, flag in zip(args.args, writes[args.op_index]):
                if flag:
                    targets = [index]
                    value = values[index].val
                    if isinstance(value, schema.TensorList):
                        targets += [int(i) for i in value.items]
                    for target in targets:
                        written.setdefault(int(target), position)
        elif isinstance(args, schema.MoveCall):
            written.setdefault(int(args.move_to), position)
        for index in _uses(instruction, values, schema):
            uses.setdefault(index, []).append(position)
    for index in plan.inputs:
        uses.setdefault(int(index), []).append(-1)
    for index in plan.outputs:
        uses.setdefault(int(index), []).append(len(instructions))
    tensors: list[_Tensor] = []
    for index, value in enumerate(values):
        tensor = value.val
        if not isinstance(tensor, schema.Tensor) or tensor.allocation_info is None:
            continue
        where = f"method '{name}', value {index}"
        if tensor.shape_dynamism == schema.TensorShapeDynamism.DYNAMIC_UNBOUND:
            raise PteError(f"{where}: a dynamic tensor without an upper bound has no static place")
        # Placed but never named: live before the first instruction, as an input.
        times = uses.get(index) or [-1]
        details = tensor.allocation_info
        tensors.append(
            _Tensor(
                index,
                tensor,
                int(details.memory_id),
                _offset(details),
                _byte_size(tensor, where),
                min(times),
                max(times),
                written.get(index),
            )
        )
    return tensors, writes


def _views(tensors: list[_Tensor]) -> dict[int, tuple[_Tensor, int]]:
    """Tensors that are views of another one's bytes in the program: index ->
    (base, offset in it). A tensor is a view when the program places it
    inside a tensor live at the same time (ExecuTorch's storage-backed
    tensors), or when it is read before anything writes it: then it reads
    what was written into the tensor that holds its bytes, the one written
    last before that read."""
    found: dict[int, tuple[_Tensor, int]] = {}
    by_memory: dict[int, list[_Tensor]] = {}
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
