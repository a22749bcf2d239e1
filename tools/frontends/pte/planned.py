"""One method of an ExecuTorch program in the `memory` dialect, as the
program itself planned it (``memplan-import --planned``), so that
``verify-plan`` checks the program's own offsets.

The form is the one ``manifest-alloc,insert-kills,usmp`` gives a
value-semantic import, with the program's places instead of memplan's:

* each memory id that holds a placed tensor is a pool ``@pte_mem<ID>``
  whose ``size`` is the program's ``non_const_buffer_sizes[ID]`` and whose
  ``align`` is 16 (ExecuTorch's planning default), or the largest power of
  two dividing every offset of that memory when that is less (a program
  planned with a smaller alignment);
* each placed tensor (``AllocationDetails``) is a ``memory.alloc_storage``
  of its bytes pinned ``at @pte_mem<ID>[offset]`` with that alignment,
  allocated before the first instruction that names it, and a
  ``memory.alloc_tensor`` of it (``%v<index>_storage``, ``%v<index>``);
* each ``KernelCall`` is a ``memory.invoke`` of a kernel declaration
  (``@pte.<namespace>.<operator>.<overload>``: ins, then outs, as
  ``manifest-alloc`` leaves them; its scalars and lists
  ``memory.pte.args``, as in the value-semantic import);
* ``memory.kill`` of a tensor, then of its storage, follows the last
  instruction that names it (``pte.lifetimes``, the rule
  ``memplan-export pte`` re-plans with); the method's outputs are returned
  and never killed;
* a placed method input is copied (``memref.copy``) from ``@main``'s
  argument ``%v<index>_arg`` into its place before the first instruction,
  as ExecuTorch's ``set_input`` does; constants are data-less
  ``memref.global``s, tensors the program does not place are ``@main``'s
  arguments where they are inputs;
* a tensor placed inside the bytes of another one live at the same time
  (``pte.lifetimes.storage_views``) is a ``memref.reinterpret_cast`` view
  of that base, not a storage of its own, and the base's storage lives as
  long as its views;
* the output of an element-wise kernel (``ELEMENTWISE_KERNELS``) placed at
  exactly the place of one of its inputs, of its type, is carved from that
  input's storage at the input's offset, marked ``memory.inplace_of`` with
  the input's operand number; those kernels' declarations list each input
  of the output's type in ``memory.inplace``. ``verify-plan`` accepts that
  sharing only when the input is not used after the kernel (docs/design.md,
  "Going below the order's lower bound"), and reports any other sharing of
  live tensors' bytes, naming both.

Refused by name (``PteImportError``): besides what the value-semantic
import refuses, a ``MoveCall``, a tensor an instruction writes that the
program does not place, a placed tensor past its memory's size, and a view
whose element type or offset a ``memref`` view cannot express.
"""

from __future__ import annotations

from math import gcd
from typing import Any

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from memplan.dialect.ops import (
    INPLACE_ATTR,
    INPLACE_OF_ATTR,
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    KillOp,
    PoolOp,
    offset_alignment,
)
from memplan.dialect.types import element_byte_size
from memplan.tools.frontends.common import KernelDeclarations, UniqueNames
from memplan.tools.frontends.pte.importer import (
    PTE_ATTR_PREFIX,
    call_arguments,
    element_type,
    method_plan,
)
from memplan.tools.frontends.pte.kernels import ELEMENTWISE_KERNELS
from memplan.tools.frontends.pte.lifetimes import (
    VIEW_OPERATORS,
    PlannedTensor,
    extend_over_views,
    method_tensors,
    storage_views,
)
from memplan.tools.frontends.pte.program import PteImportError, executorch_schema

POOL_PREFIX = "pte_mem"
"""Memory id ``N`` of the program is the pool ``@pte_memN``."""

PLANNING_ALIGNMENT = 16
"""ExecuTorch's ``MemoryPlanningPass`` default alignment: the pools' and
storages' unless a memory's offsets keep less."""


def _strides(shape: list[int]) -> list[int]:
    strides: list[int] = []
    step = 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return strides


class _PlannedMethodImporter:
    def __init__(self, plan: Any, schema: Any) -> None:
        self.plan = plan
        self.schema = schema
        self.name = str(plan.name)
        self.symbols = UniqueNames({"main"})
        self.kernels = KernelDeclarations(self.symbols.get)
        self.globals: list[memref.GlobalOp] = []
        self.values: dict[int, SSAValue] = {}
        self.storages: dict[int, SSAValue] = {}
        """Root tensor index -> its storage."""

    def where(self, index: int) -> str:
        return f"method '{self.name}', value {index}"

    def memref_type(self, index: int) -> MemRefType[Attribute]:
        tensor = self.plan.values[index].val
        where = self.where(index)
        if tensor.shape_dynamism == self.schema.TensorShapeDynamism.DYNAMIC_UNBOUND:
            raise PteImportError(f"{where}: a dynamic tensor without an upper bound")
        return MemRefType(element_type(tensor, where), [int(d) for d in tensor.sizes])

    def constant(self, index: int, block: Block, where: str) -> SSAValue:
        """The value of tensor ``index`` when it is a constant (read on first use)."""
        if index in self.values:
            return self.values[index]
        tensor = self.plan.values[index].val
        if tensor.allocation_info is not None or not tensor.data_buffer_idx:
            raise PteImportError(f"{where} reads value {index}, which nothing defines before it")
        memref_type = self.memref_type(index)
        symbol = self.symbols.get(f"constant{index}")
        global_op = memref.GlobalOp.get(
            StringAttr(symbol), memref_type, UnitAttr(), constant=UnitAttr()
        )
        global_op.attributes[PTE_ATTR_PREFIX + "value"] = IntegerAttr(index, i64)
        self.globals.append(global_op)
        get = memref.GetGlobalOp(symbol, memref_type)
        get.memref.name_hint = symbol
        block.add_op(get)
        self.values[index] = get.memref
        return get.memref

    # --- what the program placed ------------------------------------------

    def read_program(self) -> None:
        """Placed tensors, their views, in-place sharers and when each lives."""
        plan, schema = self.plan, self.schema
        self.tensors, self.writes = method_tensors(plan, schema, "memplan-import reads")
        self.instructions = list(plan.chains[0].instructions)  # one chain: checked above
        for position, instruction in enumerate(self.instructions):
            if isinstance(instruction.instr_args, schema.MoveCall):
                raise PteImportError(
                    f"method '{self.name}' moves a value at instruction {position} "
                    "(a MoveCall); memplan-import --planned reads methods without moves"
                )
        self.by_index = {t.index: t for t in self.tensors}
        self.holder: dict[int, int] = {}
        """An in-place output -> the tensor whose storage holds it."""
        self.inplace_of: dict[int, int] = {}
        """An in-place output -> the operand number of the input it overwrites."""
        for position, instruction in enumerate(self.instructions):
            if isinstance(instruction.instr_args, schema.KernelCall):
                self.find_in_place(instruction.instr_args, position)
        self.views = storage_views(
            [t for t in self.tensors if t.index not in self.holder], self.written_as_view
        )
        for out, held in list(self.holder.items()):
            if held in self.views:  # written over a view: a view of its base too
                self.views[out] = self.views[held]
                del self.holder[out], self.inplace_of[out]
        for index, (base, offset) in list(self.views.items()):
            # A view of bytes an in-place chain shares reads its last output before it.
            view = self.by_index[index]
            chain = [
                self.by_index[out]
                for out, held in self.holder.items()
                if held == base.index and self.by_index[out].first <= view.first
            ]
            if chain:
                self.views[index] = (max(chain, key=lambda t: t.first), offset)
        extend_over_views(self.tensors, self.views, len(self.instructions))
        sizes = [int(s) for s in plan.non_const_buffer_sizes]
        offsets: dict[int, int] = {}
        for tensor in self.tensors:
            if tensor.index in self.views:
                continue
            memory = tensor.memory_id
            size = sizes[memory] if 0 < memory < len(sizes) else 0
            if tensor.offset + tensor.size > size:
                raise PteImportError(
                    f"{self.where(tensor.index)}: placed at bytes [{tensor.offset}, "
                    f"{tensor.offset + tensor.size}) of memory {memory}, past its {size} bytes "
                    "(non_const_buffer_sizes)"
                )
            offsets[memory] = gcd(offsets.get(memory, 0), tensor.offset)
        self.pool_sizes = {memory: sizes[memory] for memory in offsets}
        self.alignments = {
            memory: offset_alignment(PLANNING_ALIGNMENT, common)
            for memory, common in offsets.items()
        }
        # When each tensor value and each storage dies (-1: before instruction 0).
        self.tensor_end: dict[int, int] = {}
        self.storage_end: dict[int, int] = {}
        for tensor in self.tensors:
            if tensor.index in self.views:
                continue
            root = self.holder.get(tensor.index, tensor.index)
            self.tensor_end[tensor.index] = tensor.last
            self.storage_end[root] = max(self.storage_end.get(root, -1), tensor.last)
        # The same, by instruction (-1: before instruction 0), in the orders above.
        self.starting: dict[int, list[PlannedTensor]] = {}
        for tensor in self.tensors:
            self.starting.setdefault(tensor.first, []).append(tensor)
        self.kills_at: dict[int, list[tuple[dict[int, SSAValue], int]]] = {}
        for values, ends in ((self.values, self.tensor_end), (self.storages, self.storage_end)):
            for index, end in ends.items():
                self.kills_at.setdefault(end, []).append((values, index))

    def written_as_view(self, tensor: PlannedTensor) -> bool:
        """Is ``tensor`` written first by a view operator (``VIEW_OPERATORS``)?"""
        if tensor.written is None or tensor.written < 0:
            return False
        args = self.instructions[tensor.written].instr_args
        if not isinstance(args, self.schema.KernelCall):
            return False
        operator = self.plan.operators[args.op_index]
        return (str(operator.name), str(operator.overload)) in VIEW_OPERATORS

    def call_operands(self, args: Any) -> tuple[list[int], list[int], dict[str, Attribute]]:
        """A ``KernelCall``'s tensors read and written and its other arguments."""
        return call_arguments(self.plan, self.schema, args, self.writes[args.op_index])

    def find_in_place(self, args: Any, position: int) -> None:
        """Record the output of an element-wise call placed exactly where one
        of its inputs of its type is (see the module docstring)."""
        operator = self.plan.operators[args.op_index]
        if (str(operator.name), str(operator.overload)) not in ELEMENTWISE_KERNELS:
            return
        ins, outs, _ = self.call_operands(args)
        if len(outs) != 1:
            return
        out = self.by_index.get(outs[0])
        if out is None or out.written != position or out.first != position:
            return
        for operand, index in enumerate(ins):
            source = self.by_index.get(index)
            if (
                source is not None
                and source is not out
                and source.memory_id == out.memory_id
                and source.offset == out.offset
                and self.memref_type(index) == self.memref_type(out.index)
            ):
                self.holder[out.index] = self.holder.get(index, index)
                self.inplace_of[out.index] = operand
                return

    # --- emission ------------------------------------------------------------

    def allocate(self, position: int, block: Block) -> None:
        """The storages, tensors and views that start living at ``position``."""
        starting = self.starting.get(position, [])
        for tensor in starting:
            index = tensor.index
            if index in self.views or index in self.holder:
                continue
            pool = f"{POOL_PREFIX}{tensor.memory_id}"
            storage = AllocStorageOp(
                tensor.size,
                alignment=self.alignments[tensor.memory_id],
                pin=(pool, tensor.offset),
            )
            storage.storage.name_hint = f"v{index}_storage"
            view = AllocTensorOp(storage, 0, self.memref_type(index))
            view.tensor.name_hint = f"v{index}"
            block.add_ops([storage, view])
            self.storages[index] = storage.storage
            self.values[index] = view.tensor
        for tensor in starting:
            index = tensor.index
            if index not in self.holder:
                continue
            storage = self.storages[self.holder[index]]
            sharer = AllocTensorOp(storage, 0, self.memref_type(index))
            sharer.attributes[INPLACE_OF_ATTR] = IntegerAttr(self.inplace_of[index], i64)
            sharer.tensor.name_hint = f"v{index}"
            block.add_op(sharer)
            self.values[index] = sharer.tensor
        for tensor in starting:
            if tensor.index in self.views:
                block.add_op(self.view(tensor))

    def view(self, tensor: PlannedTensor) -> Operation:
        """``tensor`` as a ``memref.reinterpret_cast`` of its base."""
        base, offset = self.views[tensor.index]
        base_type = self.memref_type(base.index)
        view_type = self.memref_type(tensor.index)
        element = view_type.element_type
        element_bytes = element_byte_size(view_type)
        if element != base_type.element_type or offset % element_bytes:
            raise PteImportError(
                f"{self.where(tensor.index)} is placed inside value {base.index}'s bytes "
                f"(at byte {offset}) as a view of another element type or at a part of an "
                "element; memplan-import --planned imports views of the base's element type"
            )
        shape = list(view_type.get_shape())
        strides = _strides(shape)
        elements = offset // element_bytes
        if elements:
            view_type = MemRefType(element, shape, StridedLayoutAttr(strides, elements))
        cast = memref.ReinterpretCastOp.from_dynamic(
            self.values[base.index], [elements], shape, strides, view_type
        )
        cast.result.name_hint = f"v{tensor.index}"
        self.values[tensor.index] = cast.result
        return cast

    def kill(self, position: int, block: Block) -> None:
        """The kills of the tensors and storages whose last instruction is ``position``."""
        for values, index in self.kills_at.get(position, []):
            block.add_op(KillOp(values[index]))

    def invoke(self, args: Any, position: int, block: Block) -> None:
        operator = self.plan.operators[args.op_index]
        where = f"method '{self.name}', instruction {position} ({operator.name})"
        ins, outs, attributes = self.call_operands(args)
        operands = [self.values.get(i) or self.constant(i, block, where) for i in ins]
        for index in outs:
            if index not in self.values:
                raise PteImportError(
                    f"{where} writes value {index}, which the program does not place "
                    "(no AllocationDetails); memplan-import --planned imports programs "
                    "whose written tensors are placed"
                )
        results = [self.values[i] for i in outs]
        name = f"{operator.name}.{operator.overload}" if operator.overload else str(operator.name)
        declared: dict[str, Attribute] = {
            PTE_ATTR_PREFIX + "operator": StringAttr(name),
            PTE_ATTR_PREFIX + "args": DictionaryAttr(attributes),
        }
        if (str(operator.name), str(operator.overload)) in ELEMENTWISE_KERNELS and len(outs) == 1:
            pairs = [
                number
                for operand, value in enumerate(operands)
                if value.type == results[0].type
                for number in (0, operand)
            ]
            if pairs:
                declared[INPLACE_ATTR] = DenseArrayBase.from_list(i64, pairs)
        declaration = self.kernels.declare(
            "pte." + name.replace("::", "."),
            declared,
            [v.type for v in operands] + [v.type for v in results],
            [],
            view=False,
            inplace_candidate=False,
        )
        block.add_op(InvokeOp(declaration.sym_name.data, operands, results))

    def module(self) -> ModuleOp:
        self.read_program()
        plan = self.plan
        inputs = [int(i) for i in plan.inputs]
        block = Block(arg_types=[self.memref_type(i) for i in inputs])
        self.allocate(-1, block)
        for index, argument in zip(inputs, block.args):
            if index in self.by_index:
                argument.name_hint = f"v{index}_arg"
                block.add_op(memref.CopyOp(argument, self.values[index]))
            else:
                argument.name_hint = f"v{index}"
                self.values[index] = argument
        self.kill(-1, block)
        for position, instruction in enumerate(self.instructions):
            args = instruction.instr_args
            self.allocate(position, block)
            if isinstance(args, self.schema.KernelCall):
                self.invoke(args, position, block)
            self.kill(position, block)
        outputs = [int(i) for i in plan.outputs]
        where = f"method '{self.name}', output"
        returned = [self.values.get(i) or self.constant(i, block, where) for i in outputs]
        block.add_op(func.ReturnOp(*returned))
        main = func.FuncOp(
            "main", ([a.type for a in block.args], [v.type for v in returned]), Region(block)
        )
        main.attributes[PTE_ATTR_PREFIX + "method"] = StringAttr(self.name)
        main.attributes[PTE_ATTR_PREFIX + "inputs"] = ArrayAttr(IntegerAttr(i, i64) for i in inputs)
        main.attributes[PTE_ATTR_PREFIX + "outputs"] = ArrayAttr(
            IntegerAttr(i, i64) for i in outputs
        )
        pools = [
            PoolOp(
                f"{POOL_PREFIX}{memory}",
                size=self.pool_sizes[memory],
                alignment=self.alignments[memory],
            )
            for memory in sorted(self.pool_sizes)
        ]
        return ModuleOp([*pools, *self.globals, main, *self.kernels.declarations])


def import_planned(program: Any, method: str = "forward") -> ModuleOp:
    """Method ``method`` of ``program`` (a ``schema.Program``) in the
    `memory` dialect as the program planned it (see the module docstring)."""
    schema = executorch_schema()
    return _PlannedMethodImporter(method_plan(program, method), schema).module()
