"""import-memref: bufferized MLIR (``memref.alloc``/``dealloc``) -> ``memory`` dialect.

The pass and its options are documented on the pass class below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    FixedBitwidthType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from memplan.dialect.op_model import is_function, runs_one_instance_at_a_time
from memplan.dialect.ops import (
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
)
from memplan.dialect.types import default_alignment, element_byte_size
from memplan.passes.analysis.memref_flow import trace_flow


def unsupported_type_reason(alloc: memref.AllocOp) -> str | None:
    """Why the allocated type cannot be a tensor of a storage, or ``None``."""
    memref_type = alloc.memref.type
    if not isinstance(memref_type, MemRefType):
        return "not a ranked memref"
    if not isinstance(memref_type.layout, NoneAttr):
        return "non-identity layout"
    if not isinstance(memref_type.memory_space, NoneAttr):
        return "memory space"
    if alloc.symbol_operands:
        return "symbol operands"
    if not isinstance(memref_type.get_element_type(), FixedBitwidthType):
        return "element type without a fixed bit width"
    if any(dim == 0 for dim in memref_type.get_shape()):
        return "zero bytes"
    return None


def placement_reason(alloc: memref.AllocOp) -> str | None:
    """Why the allocation's position forbids a static address, or ``None``."""
    parent = alloc.parent_op()
    while parent is not None and not is_function(parent):
        # Nested only in ops running one instance at a time: one static address.
        if not runs_one_instance_at_a_time(parent):
            return f"nested in {parent.name}, whose regions may run in parallel"
        parent = parent.parent_op()
    return None


def _index_constant(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def _import_alloc(alloc: memref.AllocOp, deallocs: list[memref.DeallocOp]) -> None:
    memref_type = alloc.memref.type
    assert isinstance(memref_type, MemRefType)
    # Bytes of the static part; each dynamic dim multiplies it at run time.
    static_bytes = element_byte_size(memref_type) * math.prod(
        dim for dim in memref_type.get_shape() if dim >= 0
    )

    # memref.alloc's verifier already requires a positive power of two.
    if alloc.alignment is None:
        alignment = default_alignment(memref_type)
    else:
        alignment = alloc.alignment.value.data

    new_ops: list[Operation] = []
    if not alloc.dynamic_sizes:
        storage = AllocStorageOp(static_bytes, alignment=alignment)
    else:
        # bytes = element bytes * static dims * each dynamic dim
        size: SSAValue | None = None
        if static_bytes != 1:
            constant = _index_constant(static_bytes)
            new_ops.append(constant)
            size = constant.result
        for dim in alloc.dynamic_sizes:
            if size is None:
                size = dim
                continue
            product = arith.MuliOp(size, dim)
            new_ops.append(product)
            size = product.result
        assert size is not None
        storage = AllocStorageOp(size, alignment=alignment)
    tensor = AllocTensorOp(storage, 0, memref_type, list(alloc.dynamic_sizes))
    if new_ops:
        Rewriter.insert_op(new_ops, InsertPoint.before(alloc))
    hint = alloc.memref.name_hint
    if hint is not None:
        storage.storage.name_hint = f"{hint}_storage"
    Rewriter.replace_op(alloc, [storage, tensor], [tensor.tensor])
    for dealloc in deallocs:
        Rewriter.replace_op(dealloc, KillOp(storage))


@dataclass(frozen=True)
class ImportMemrefPass(ModulePass):
    """Turn the plannable ``memref.alloc``/``memref.dealloc`` of every function
    into ``memory.alloc_storage`` + ``memory.alloc_tensor`` / ``memory.kill``.

    Every ``memref.alloc`` that memplan can plan becomes one
    ``memory.alloc_storage`` of the allocation's byte size (dynamic sizes are
    computed with ``arith`` from the size operands) and one
    ``memory.alloc_tensor`` at offset 0 that replaces the allocated memref, so
    every ``memref.load``/``store``/``scf.for``... that used it keeps working on
    the same typed memref. A ``memref.dealloc`` of such an allocation (or of a
    view of it) becomes a ``memory.kill`` of its storage. Allocations without a
    dealloc (as ``one-shot-bufferize`` leaves them) get no kill: their lifetime
    is the one definition of docs/design.md (to the last use of the value or of any
    alias), and ``insert-kills`` makes it explicit.

    The storage's alignment is the alloc's ``alignment`` when present, else the
    dialect default max(64, element bytes) (TVM's rule). Its device is the
    default ``"cpu"`` and it has no candidate pools, so ``usmp`` puts it in the
    module's pools (or in the ``@workspace_cpu`` pool it creates).

    Left alone (kept as ``memref.alloc``, with the reason as a comment in the
    code below; all are unsafe or impossible to place at a static offset):

    - allocations that escape the function: returned (directly, through views,
      ``scf.if`` results, calls or ops memplan does not know), or stored into
      memory as a value, or whose address is taken
      (``memref.extract_aligned_pointer_as_index``, ``extract_strided_metadata``,
      ``!llvm.ptr`` results);
    - allocations inside a loop (``scf.for``/``while``, ``affine.for``, a CFG
      cycle) whose value is carried out of the iteration (yielded, passed to an
      iteration argument or branched back): every iteration would reuse the
      same static address while the previous iteration's buffer is still live;
    - allocations nested in a region memplan does not know to run sequentially
      (``scf.parallel``, ``scf.forall``, ``linalg.generic`` bodies, ``gpu``/``omp``
      ops, unknown ops): parallel instances would share one static address;
    - allocations freed by anything but a ``memref.dealloc`` of the allocation
      or of a view of it (a dealloc of a block argument or a call result,
      ``bufferization.dealloc``): no single storage kill expresses that;
    - non-identity layouts, memory spaces, ``symbol_operands``, element types
      without a fixed bit width (``index``), zero-byte allocations;
    - ``memref.alloca``, ``memref.global`` and function arguments are never
      touched.

    Ops memplan does not know (parsed with ``--allow-unregistered-dialect``)
    count as uses of their memref operands, and their memref results are taken
    to alias those operands, as are the memref results of ``func.call``; both
    choices are conservative.

    Options: none.

    Example:

    ```mlir
    %a = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
    ...
    memref.dealloc %a : memref<4x16xf32>
    ```

    becomes

    ```mlir
    %a_storage = memory.alloc_storage : !memory.storage<256>
    %a = memory.alloc_tensor %a_storage[0] : !memory.storage<256> -> memref<4x16xf32>
    ...
    memory.kill %a_storage : !memory.storage<256>
    ```
    """

    name = "import-memref"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]
        for function in functions:
            allocs = [a for a in function.walk() if isinstance(a, memref.AllocOp)]
            # Decide for every allocation first: importing one must not change
            # the verdict on another.
            plan: list[tuple[memref.AllocOp, list[memref.DeallocOp]]] = []
            for alloc in allocs:
                if unsupported_type_reason(alloc) or placement_reason(alloc):
                    continue
                flow = trace_flow([alloc.memref], alloc)
                if not flow.blockers:
                    plan.append((alloc, flow.deallocs))
            for alloc, deallocs in plan:
                _import_alloc(alloc, deallocs)
