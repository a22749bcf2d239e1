"""memplan's planner as ExecuTorch's memory planning algorithm.

ExecuTorch's ``MemoryPlanningPass`` takes the algorithm that places every
planned tensor (``memory_planning_algo``); this module gives it memplan's::

    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass
    from memplan.tools.exporters.executorch.hook import memplan_algorithm

    config = ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(memory_planning_algo=memplan_algorithm())
    )
    program = edge.to_executorch(config)

ExecuTorch calls the algorithm with ``(alignment, specs, graph_module,
graph_signature, extra_padding)`` once per graph (the control-flow
submodules first, then the graph holding them). Each ``TensorSpec`` is one
planned tensor: ``allocated_memory`` bytes (after ``realign(alignment)``),
live over the inclusive node-index range ``lifetime``, in memory
``mem_id`` (1 when unset; 0 holds constants and is never planned). The
algorithm sets each spec's ``mem_id``, ``mem_offset`` and ``mem_obj_id``
(tensors whose bytes overlap share one ``mem_obj_id``, as ExecuTorch's
``Verifier.verify_storage_reuse`` requires) and returns the size of every
memory, ``[0, size of 1, ...]``.

Here each memory id is one pool of memplan's planning model
(``memplan.passes.planning``), planned by ``algorithm`` within ``budget``
nodes (the same options as ``memplan-solve``; ``capacities`` bounds a
memory). A spec with a ``storage_base`` (a view ExecuTorch keeps on its
base's bytes) is not planned itself: it sits at its base's offset plus
``storage_base_offset``, and its lifetime extends its base's. A submodule's
tensors start above ``graph_module.input_mem_buffer_sizes`` (the bytes the
enclosing graph holds while the submodule runs), as ExecuTorch's own
algorithms do. ``extra_padding`` is added to every planned memory's size.

**In place** (``inplace``, on by default): the output of an element-wise
out-variant kernel (``ELEMENTWISE_KERNELS``) takes the bytes of an input
that dies at that node (its ``lifetime`` ends there) when the two have one
shape, scalar type, dim order, memory and size (``inplace_source``, the one
rule ``memplan-export-pte`` applies too). The output's spec gets that
input's spec as ``storage_base`` (offset 0), as ExecuTorch's own
``_share_alloc_with_arg_idx`` does: the pair is planned as one tensor over
both lifetimes, and ExecuTorch's ``Verifier.verify_storage_reuse`` accepts
a spec inside the storage of one on its ``storage_base`` chain even when
their lifetimes overlap (no ``allow_lifetime_and_storage_overlap`` needed).
Graph inputs, ExecuTorch's storage-backed specs and their bases are never
shared this way. This takes a memory below the order's bound (the peak of
live bytes when no two live tensors share bytes).

**Order**: the algorithm keeps the graph's order. ExecuTorch computes every
spec's ``lifetime`` from the node order before it calls the algorithm
(``update_all_tensors_lifetime`` in ``apply_algo``), its verifier checks
the plan against those lifetimes, and the emitter writes the nodes in graph
order afterwards; the algorithm's contract is offsets, so moving nodes in it
would give a program whose order no lifetime ExecuTorch holds describes.
A memory-aware order is ``memplan-export-pte``'s (it reorders a built
program's instructions and plans with the new order's lifetimes).

Each memory is planned by ``plan_memory`` (``memplan-export-pte`` plans a
built program's memories with it too) and checked by the planning core's
validator. A memory whose tensors do not fit its capacity raises
``MemplanPlanningError`` naming the memory, its capacity and the bytes the
plan needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memplan.passes.planning.algorithms import ALGORITHMS, DEFAULT_BUDGET, PlanOptions, solve
from memplan.passes.planning.bounds import lower_bound
from memplan.passes.planning.model import Buffer, Pool, Problem
from memplan.passes.planning.validate import validate
from memplan.tools.frontends.pte.kernels import ELEMENTWISE_KERNELS


class MemplanPlanningError(ValueError):
    """memplan found no plan for a memory within its capacity (or budget)."""


@dataclass(frozen=True)
class InplaceOperand:
    """What the in-place rule asks of one tensor of a kernel call."""

    shape: tuple[int, ...]
    scalar_type: object
    dim_order: tuple[int, ...]
    memory: int
    size: int
    shareable: bool
    """False for a method (graph) input, a view, a view's base and a tensor
    whose bytes already hold another output: their bytes are never shared."""


def inplace_source(
    kernel: tuple[str, str], out: InplaceOperand, dying: Sequence[InplaceOperand]
) -> int | None:
    """The in-place rule: the position in ``dying`` (the call's inputs whose
    last use is this call, in argument order) of the first input whose bytes
    the call's one output ``out`` may take, or None. ``kernel`` (operator
    name, overload) must be in ``ELEMENTWISE_KERNELS``, both tensors
    shareable, of one shape, scalar type, dim order, memory and size."""
    if kernel not in ELEMENTWISE_KERNELS or not out.shareable:
        return None
    wanted = (out.shape, out.scalar_type, out.dim_order, out.memory, out.size)
    for position, source in enumerate(dying):
        found = (source.shape, source.scalar_type, source.dim_order, source.memory, source.size)
        if source.shareable and found == wanted:
            return position
    return None


@dataclass
class PlanRecord:
    """What one call planned, per memory id: the bytes the plan takes (without
    ``extra_padding``), the peak of live bytes of what was planned (the lower
    bound, in-place pairs counted once), the order's bound (no two live
    tensors sharing bytes) and how many outputs took a dying input's bytes."""

    sizes: dict[int, int] = field(default_factory=dict[int, int])
    bounds: dict[int, int] = field(default_factory=dict[int, int])
    order_bounds: dict[int, int] = field(default_factory=dict[int, int])
    shared: dict[int, int] = field(default_factory=dict[int, int])


@dataclass
class MemplanAlgorithm:
    """A ``memory_planning_algo`` for ExecuTorch (see the module docstring).

    ``algorithm``: one of ``memplan.passes.planning.algorithms.ALGORITHMS``
    (default ``auto``). ``budget``: search nodes per memory. ``capacities``:
    the most bytes each memory id may take (absent: unbounded). ``inplace``:
    element-wise outputs in their dying inputs' bytes. ``records`` collects
    what each call planned, for reports and tests.
    """

    algorithm: str = "auto"
    budget: int = DEFAULT_BUDGET
    capacities: Mapping[int, int] = field(default_factory=dict[int, int])
    records: list[PlanRecord] = field(default_factory=list[PlanRecord])
    inplace: bool = True

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(
                f"memplan: algorithm must be one of {', '.join(ALGORITHMS)} "
                f"(got '{self.algorithm}')"
            )
        if self.budget < 0:
            raise ValueError(f"memplan: budget must be non-negative (got {self.budget})")

    # ExecuTorch looks up the algorithm's name for its logs.
    @property
    def __name__(self) -> str:
        return f"memplan_{self.algorithm}"

    def __call__(
        self,
        alignment: int,
        specs: Iterable[Any],
        graph_module: Any,
        graph_signature: Any = None,
        extra_padding: int = 0,
    ) -> list[int]:
        # ExecuTorch passes its specs in graph order; a set has none: sorted then.
        ordered = list(specs) if isinstance(specs, list | tuple) else sorted(specs, key=_spec_order)
        for spec in ordered:
            if spec.mem_id is None:
                spec.mem_id = 1
            spec.realign(alignment)
        # The order's own lifetimes (views on their bases), before any sharing.
        unshared = [spec for spec in ordered if spec.storage_base is None]
        order_lifetimes = _lifetimes(ordered)
        shared = _share_inplace(ordered, graph_module) if self.inplace else []
        planned = [spec for spec in ordered if spec.storage_base is None]
        views = [spec for spec in ordered if spec.storage_base is not None]
        # A view (or an in-place output) keeps its base's bytes live while it is.
        lifetimes = _lifetimes(ordered)
        base_sizes: list[int] = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
        record = PlanRecord()
        offsets: dict[int, int] = {}
        for mem_id in sorted({spec.mem_id for spec in planned}):
            members = [spec for spec in planned if spec.mem_id == mem_id]
            start = base_sizes[mem_id] if mem_id < len(base_sizes) else 0
            placed, size, bound = self._plan_memory(mem_id, members, lifetimes, alignment, start)
            offsets.update(placed)
            record.sizes[mem_id] = size
            record.bounds[mem_id] = bound
            record.shared[mem_id] = sum(1 for spec in shared if spec.mem_id == mem_id)
            record.order_bounds[mem_id] = bound
            if record.shared[mem_id]:
                record.order_bounds[mem_id] = live_bytes_bound(
                    [
                        (int(spec.allocated_memory), *order_lifetimes[id(spec)])
                        for spec in unshared
                        if spec.mem_id == mem_id
                    ],
                    alignment,
                )
        for spec in planned:
            spec.mem_offset = offsets[id(spec)]
        _number_shared_objects(planned)
        for view in views:
            root, offset = _root(view)
            view.mem_id = root.mem_id
            view.mem_offset = root.mem_offset + offset
            view.mem_obj_id = root.mem_obj_id
        self.records.append(record)
        count = max([1, *record.sizes, len(base_sizes) - 1]) + 1
        sizes = [0] * count
        for mem_id in range(1, count):
            start = base_sizes[mem_id] if mem_id < len(base_sizes) else 0
            if mem_id in record.sizes:
                sizes[mem_id] = start + record.sizes[mem_id] + extra_padding
            else:
                sizes[mem_id] = start
        return sizes

    def _plan_memory(
        self,
        mem_id: int,
        specs: list[Any],
        lifetimes: Mapping[int, tuple[int, int]],
        alignment: int,
        start: int,
    ) -> tuple[dict[int, int], int, int]:
        """Offsets (by ``id(spec)``, from the memory's base), the bytes above
        ``start`` the plan takes, and the lower bound of one memory."""
        capacity = self.capacities.get(mem_id)
        available = None if capacity is None else capacity - start
        if available is not None and available < 0:
            raise MemplanPlanningError(
                f"memory {mem_id}: its capacity of {capacity} bytes is below the "
                f"{start} bytes the enclosing graph holds"
            )
        tensors = [(int(spec.allocated_memory), *lifetimes[id(spec)]) for spec in specs]
        placed = plan_memory(tensors, alignment, available, self.algorithm, self.budget)
        if placed.offsets is None:
            raise MemplanPlanningError(
                f"memory {mem_id}: no plan within its capacity of {capacity} bytes "
                f"({len(specs)} tensors; they need at least {placed.lower_bound + start} bytes, "
                f"status {placed.status})"
            )
        offsets = {id(spec): start + offset for spec, offset in zip(specs, placed.offsets)}
        return offsets, placed.peak, placed.lower_bound


@dataclass(frozen=True)
class PlacedMemory:
    """``plan_memory``'s answer: each tensor's offset (None when no plan fits
    the capacity), the bytes the plan takes, the peak of live bytes and the
    planner's status."""

    offsets: list[int] | None
    peak: int
    lower_bound: int
    status: str


def _buffers(tensors: Sequence[tuple[int, int, int]], alignment: int) -> tuple[Buffer, ...]:
    return tuple(
        Buffer(f"t{index}", size, first, last + 1, alignment=alignment)  # half-open
        for index, (size, first, last) in enumerate(tensors)
    )


def live_bytes_bound(tensors: Sequence[tuple[int, int, int]], alignment: int) -> int:
    """The lower bound ``plan_memory`` reports for ``tensors``, without planning them."""
    problem = Problem(_buffers(tensors, alignment), (Pool("memory", alignment=alignment),))
    return lower_bound(problem)["memory"]


def plan_memory(
    tensors: Sequence[tuple[int, int, int]],
    alignment: int,
    capacity: int | None,
    algorithm: str,
    budget: int,
) -> PlacedMemory:
    """One ExecuTorch memory planned by memplan: ``tensors`` are ``(bytes,
    first, last)`` with ExecuTorch's inclusive lifetimes (two tensors live at
    one index never share bytes), every offset a multiple of ``alignment``,
    within ``capacity`` (None: unbounded, the peak minimised). The plan is
    checked by the planning core's validator before it is returned."""
    buffers = _buffers(tensors, alignment)
    problem = Problem(buffers, (Pool("memory", size=capacity, alignment=alignment),))
    bound = lower_bound(problem)["memory"]
    solution = solve(problem, algorithm, PlanOptions(budget=budget, minimize=capacity is None))
    if solution.unplaced(problem) or solution.status in ("infeasible", "unknown"):
        return PlacedMemory(None, 0, bound, solution.status)
    findings = validate(problem, solution)
    if findings:
        raise MemplanPlanningError(f"memplan's plan is invalid: {findings[0]}")
    offsets = [solution.placements[buffer.id].offset for buffer in buffers]
    return PlacedMemory(offsets, solution.peak(problem), bound, solution.status)


def memplan_algorithm(
    algorithm: str = "auto",
    budget: int = DEFAULT_BUDGET,
    capacities: Mapping[int, int] | None = None,
    inplace: bool = True,
) -> MemplanAlgorithm:
    """memplan's planner for ``MemoryPlanningPass(memory_planning_algo=...)``;
    ``inplace=False`` never lets an element-wise output take its dying
    input's bytes."""
    return MemplanAlgorithm(algorithm, budget, dict(capacities or {}), inplace=inplace)


def _lifetimes(specs: Sequence[Any]) -> dict[int, tuple[int, int]]:
    """By ``id``, the lifetime of every spec without a ``storage_base``,
    extended over the lifetimes of the specs on its bytes."""
    lifetimes = {id(spec): tuple(spec.lifetime) for spec in specs if spec.storage_base is None}
    for spec in specs:
        if spec.storage_base is not None:
            base, _ = _root(spec)
            first, last = lifetimes[id(base)]
            lifetimes[id(base)] = (min(first, spec.lifetime[0]), max(last, spec.lifetime[1]))
    return {key: (int(first), int(last)) for key, (first, last) in lifetimes.items()}


def _operand(spec: Any, shareable: bool) -> InplaceOperand:
    return InplaceOperand(
        tuple(int(d) for d in spec.shape),
        spec.dtype,
        tuple(int(d) for d in spec.dim_order),
        int(spec.mem_id),
        int(spec.allocated_memory),
        shareable,
    )


def _share_inplace(specs: Sequence[Any], graph_module: Any) -> list[Any]:
    """Give each element-wise output that may take a dying input's bytes
    (``inplace_source``) that input's spec as its ``storage_base``; the
    outputs so placed, in graph order."""
    planned = {id(spec) for spec in specs}
    fixed: set[int] = set()  # views, their bases and graph inputs
    for spec in specs:
        if spec.storage_base is not None:
            fixed.add(id(spec))
            base = spec
            while base.storage_base is not None:
                base = base.storage_base
                fixed.add(id(base))
    nodes = list(graph_module.graph.nodes)
    for node in nodes:
        if node.op == "placeholder":
            fixed.add(id(node.meta.get("spec")))
    shared: list[Any] = []
    for index, node in enumerate(nodes):
        schema = getattr(node.target, "_schema", None)
        out = node.meta.get("spec")
        if node.op != "call_function" or schema is None or id(out) not in planned:
            continue
        inputs: list[Any] = []
        for arg in [*node.args, *node.kwargs.values()]:
            spec: Any = getattr(arg, "meta", {}).get("spec")
            if (
                id(spec) in planned
                and spec is not out
                and spec.lifetime[1] == index  # it dies here
                and all(spec is not seen for seen in inputs)
            ):
                inputs.append(spec)
        dying = [_operand(spec, id(spec) not in fixed) for spec in inputs]
        kernel = (str(schema.name), str(schema.overload_name))
        position = inplace_source(kernel, _operand(out, id(out) not in fixed), dying)
        if position is not None:
            out.storage_base, out.storage_base_offset = inputs[position], 0
            shared.append(out)
    return shared


def _number_shared_objects(specs: list[Any]) -> None:
    """``mem_obj_id``: ExecuTorch's "shared object" a tensor sits in. Its
    verifier (``verify_storage_reuse``) wants tensors whose bytes overlap in
    one object: here each maximal run of byte ranges that chain by overlap,
    per memory, is one object."""
    index = -1
    for mem_id in sorted({spec.mem_id for spec in specs}):
        members = sorted(
            (spec for spec in specs if spec.mem_id == mem_id),
            key=lambda spec: (spec.mem_offset, int(spec.allocated_memory)),
        )
        end = None
        for spec in members:
            if end is None or spec.mem_offset >= end:
                index += 1
                end = spec.mem_offset
            spec.mem_obj_id = index
            end = max(end, spec.mem_offset + int(spec.allocated_memory))


def _root(spec: Any) -> tuple[Any, int]:
    """The spec whose bytes ``spec`` views (itself if it views none), and
    where in them it starts."""
    offset = 0
    while spec.storage_base is not None:
        offset += spec.storage_base_offset
        spec = spec.storage_base
    return spec, offset


def _spec_order(spec: Any) -> tuple[int, int, int]:
    """A deterministic order of specs (ExecuTorch hands over a set)."""
    first, last = spec.lifetime
    return (first, last, int(spec.allocated_memory))
