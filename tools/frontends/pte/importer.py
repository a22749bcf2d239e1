"""One method of an ExecuTorch program as the value-semantic IR.

A ``.pte`` method is a list of values (``EValue``s: tensors, scalars,
lists) and a chain of instructions over their indices. The import:

* the method's inputs are ``@main``'s arguments and its outputs its
  results (``memory.pte.inputs`` / ``memory.pte.outputs`` record their
  value indices);
* a tensor with constant data (a ``data_buffer_idx``, no planned place) is
  a data-less ``memref.global`` read where it is used; its data stays in
  the program;
* a ``KernelCall`` is a ``func.call`` of a kernel declaration
  ``@pte.<namespace>.<operator>.<overload>``: the tensors it reads are the
  operands (a tensor list's tensors in order), the tensors it writes (its
  ``out`` arguments, from the operator's ATen schema) the results, each a
  new SSA value for its index; its other arguments are the declaration's
  ``memory.pte.args`` (by position: integers, floats, booleans, their
  lists, strings, ``none``), and ``memory.pte.operator`` names it;
* a ``MoveCall`` makes its target index name the moved value; a
  ``FreeCall`` ends nothing the SSA uses do not.

Every kernel copies (no `memory.view` or in-place pair is claimed: the
program does not say which out-variant may share its input's bytes).
Refused by name: delegates, control flow (jumps, several chains), dynamic
tensors without a bound, and a tensor read before anything defines it.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from memplan.tools.frontends.common import KernelDeclarations, UniqueNames
from memplan.tools.frontends.pte.program import (
    PteImportError,
    executorch_schema,
    operator_writes,
    straight_line,
)

PTE_ATTR_PREFIX = "memory.pte."

_ELEMENT_TYPES: dict[int, Attribute] = {
    0: IntegerType(8, Signedness.UNSIGNED),  # BYTE
    1: i8,  # CHAR
    2: i16,  # SHORT
    3: i32,  # INT
    4: i64,  # LONG
    5: Float16Type(),  # HALF
    6: Float32Type(),  # FLOAT
    7: Float64Type(),  # DOUBLE
    11: i1,  # BOOL
    15: BFloat16Type(),  # BFLOAT16
}


def element_type(tensor: Any, where: str) -> Attribute:
    """The element type of a ``schema.Tensor``; ``PteImportError`` naming
    ``where`` for a scalar type memplan has none for."""
    scalar = int(tensor.scalar_type)
    if scalar not in _ELEMENT_TYPES:
        raise PteImportError(f"{where}: scalar type {tensor.scalar_type} has no memplan type")
    return _ELEMENT_TYPES[scalar]


def call_arguments(
    plan: Any, schema: Any, args: Any, flags: list[bool]
) -> tuple[list[int], list[int], dict[str, Attribute]]:
    """A ``KernelCall``'s tensors read and written (by value index, tensor
    lists expanded, each written tensor once) and its other arguments as
    attributes by argument position; ``flags`` says which arguments the
    operator writes (``operator_writes``)."""
    reads: list[int] = []
    writes: list[int] = []
    attributes: dict[str, Attribute] = {}
    for slot, index in enumerate(args.args):
        index = int(index)
        value = plan.values[index].val
        members = (
            [int(i) for i in value.items if int(i) >= 0]
            if isinstance(value, schema.TensorList | schema.OptionalTensorList)
            else [index]
            if isinstance(value, schema.Tensor)
            else []
        )
        if slot < len(flags) and flags[slot]:
            writes.extend(i for i in members if i not in writes)
        elif members:
            reads.extend(members)
        else:
            attributes[str(slot)] = argument_attribute(value, plan.values, schema)
    return reads, writes, attributes


def argument_attribute(value: Any, values: Any, schema: Any) -> Attribute:
    """A non-tensor ``EValue`` as an attribute (an ``IntList`` holds the
    indices of its ``Int`` values in ``values``)."""
    if isinstance(value, schema.Bool):
        return IntegerAttr(int(value.bool_val), i1)
    if isinstance(value, schema.Int):
        return IntegerAttr(int(value.int_val), i64)
    if isinstance(value, schema.Double):
        return FloatAttr(float(value.double_val), Float64Type())
    if isinstance(value, schema.IntList):
        return ArrayAttr([IntegerAttr(int(values[int(v)].val.int_val), i64) for v in value.items])
    if isinstance(value, schema.DoubleList):
        return ArrayAttr([FloatAttr(float(v), Float64Type()) for v in value.items])
    if isinstance(value, schema.BoolList):
        return ArrayAttr([IntegerAttr(int(v), i1) for v in value.items])
    if isinstance(value, schema.String):
        return StringAttr(str(value.string_val))
    return UnitAttr()  # None, and what a kernel reads without memplan needing it


class _MethodImporter:
    def __init__(self, plan: Any, schema: Any) -> None:
        self.plan = plan
        self.schema = schema
        self.symbols = UniqueNames({"main"})
        self.kernels = KernelDeclarations(self.symbols.get)
        self.globals: list[memref.GlobalOp] = []
        self.values: dict[int, SSAValue] = {}

    def tensor_type(self, index: int) -> TensorType[Attribute]:
        tensor = self.plan.values[index].val
        where = f"method '{self.plan.name}', value {index}"
        if tensor.shape_dynamism == self.schema.TensorShapeDynamism.DYNAMIC_UNBOUND:
            raise PteImportError(f"{where}: a dynamic tensor without an upper bound")
        return TensorType(element_type(tensor, where), [int(d) for d in tensor.sizes])

    def read(self, index: int, block: Block, where: str) -> SSAValue:
        """The value of tensor ``index`` (a constant is read on first use)."""
        if index in self.values:
            return self.values[index]
        tensor = self.plan.values[index].val
        if tensor.allocation_info is not None or not tensor.data_buffer_idx:
            raise PteImportError(f"{where} reads value {index}, which nothing defines before it")
        tensor_type = self.tensor_type(index)
        symbol = self.symbols.get(f"constant{index}")
        memref_type = MemRefType(tensor_type.element_type, tensor_type.get_shape())
        global_op = memref.GlobalOp.get(
            StringAttr(symbol), memref_type, UnitAttr(), constant=UnitAttr()
        )
        global_op.attributes[PTE_ATTR_PREFIX + "value"] = IntegerAttr(index, i64)
        self.globals.append(global_op)
        get = memref.GetGlobalOp(symbol, memref_type)
        to_tensor = bufferization.ToTensorOp(get.memref, restrict=True)
        get.memref.name_hint = to_tensor.tensor.name_hint = symbol
        block.add_ops([get, to_tensor])
        self.values[index] = to_tensor.tensor
        return to_tensor.tensor

    def call(self, args: Any, writes: list[list[bool]], position: int, block: Block) -> None:
        operator = self.plan.operators[args.op_index]
        where = f"method '{self.plan.name}', instruction {position} ({operator.name})"
        reads, results, attributes = call_arguments(
            self.plan, self.schema, args, writes[args.op_index]
        )
        operands = [self.read(i, block, where) for i in reads]
        result_types = [self.tensor_type(i) for i in results]
        name = f"{operator.name}.{operator.overload}" if operator.overload else str(operator.name)
        declaration = self.kernels.declare(
            "pte." + name.replace("::", "."),
            {
                PTE_ATTR_PREFIX + "operator": StringAttr(name),
                PTE_ATTR_PREFIX + "args": DictionaryAttr(attributes),
            },
            [o.type for o in operands],
            result_types,
            view=False,
            inplace_candidate=False,
        )
        op = func.CallOp(declaration.sym_name.data, operands, result_types)
        block.add_op(op)
        for index, result in zip(results, op.results):
            result.name_hint = f"v{index}"
            self.values[index] = result

    def module(self) -> ModuleOp:
        plan, schema = self.plan, self.schema
        name = plan.name
        instructions = straight_line(plan, schema, "memplan-import reads")
        inputs = [int(i) for i in plan.inputs]
        block = Block(arg_types=[self.tensor_type(i) for i in inputs])
        for index, argument in zip(inputs, block.args):
            argument.name_hint = f"v{index}"
            self.values[index] = argument
        writes = operator_writes(plan)
        for position, instruction in enumerate(instructions):
            args = instruction.instr_args
            if isinstance(args, schema.KernelCall):
                self.call(args, writes, position, block)
            elif isinstance(args, schema.MoveCall):
                source = f"method '{name}', instruction {position} (move)"
                self.values[int(args.move_to)] = self.read(int(args.move_from), block, source)
        outputs = [int(i) for i in plan.outputs]
        returned = [self.read(i, block, f"method '{name}', output") for i in outputs]
        block.add_op(func.ReturnOp(*returned))
        main = func.FuncOp(
            "main", ([a.type for a in block.args], [v.type for v in returned]), Region(block)
        )
        main.attributes[PTE_ATTR_PREFIX + "method"] = StringAttr(name)
        main.attributes[PTE_ATTR_PREFIX + "inputs"] = ArrayAttr(IntegerAttr(i, i64) for i in inputs)
        main.attributes[PTE_ATTR_PREFIX + "outputs"] = ArrayAttr(
            IntegerAttr(i, i64) for i in outputs
        )
        return ModuleOp([*self.globals, main, *self.kernels.declarations])


def method_plan(program: Any, method: str) -> Any:
    """The ``schema.ExecutionPlan`` of method ``method`` of ``program``;
    ``PteImportError`` listing the methods when it has none of that name."""
    plans = {plan.name: plan for plan in program.execution_plan}
    if method not in plans:
        raise PteImportError(
            f"the program has no method '{method}' (methods: {', '.join(sorted(plans))})"
        )
    return plans[method]


def import_program(program: Any, method: str = "forward") -> ModuleOp:
    """Method ``method`` of ``program`` (a ``schema.Program``) as IR."""
    schema = executorch_schema()
    return _MethodImporter(method_plan(program, method), schema).module()
