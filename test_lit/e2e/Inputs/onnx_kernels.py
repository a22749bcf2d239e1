"""Make a lowered ONNX import runnable under mlir-runner.

Reads a module that ``memplan-opt --lower-to-memref`` wrote from a
``memplan-import-onnx`` import (kernels are private declarations
``@onnx.<Op>`` in destination-passing style over memrefs, with shape
functions ``@onnx.<Op>.shape`` returning one ``index`` per dynamic dim of
the result) and prints it with:

- a body for each kernel declaration of an op type it knows (MatMul of two
  rank-2 operands, Add with numpy broadcasting, Relu, Softmax over the last
  axis; f32 only), in scf/memref/arith/math, replacing the declaration;
- a body for each shape function left as a declaration (the result's
  dynamic dims from the operands' dims);
- ``@entry``, which for each size given with ``--dim-values`` allocates
  ``@main``'s arguments, fills each with ``x[k] = k % 7 - 3`` (k the
  row-major element index, as f32), calls ``@main``, prints each result with
  ``printMemrefF32`` and frees the buffers;
- with ``--print-pools``, before each pool ``@main`` frees (a
  ``memref.dealloc`` of a rank-1 ``i8`` memref), a ``printI64`` of its bytes
  read with ``memref.dim``: the pool the run really allocated.

A kernel of another op type, or of other element types or ranks, is an
error (one line, exit 1). Usage::

    python onnx_kernels.py LOWERED.mlir --dim-values N=1,32,64 [--print-pools]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import StringIO

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float32Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation

from memplan.dialect.context import memplan_context
from memplan.dialect.printer import MemplanPrinter
from memplan.passes.analysis.parametric import function_dims
from memplan.tools.memplan_run import parse_dim_values
from memplan.tools.runs import RunError, parse_module

DYNAMIC = DYNAMIC_INDEX


class KernelError(Exception):
    """A declaration this script cannot give a body."""


@dataclass(frozen=True)
class Operand:
    """A memref argument of a generated function: its SSA name and type."""

    name: str
    type: MemRefType[Attribute]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def text(self) -> str:
        return str(self.type)


def _memref(attr: Attribute, where: str) -> MemRefType[Attribute]:
    if not isinstance(attr, MemRefType) or not isinstance(attr.element_type, Float32Type):
        raise KernelError(f"{where}: {attr} is not a memref of f32")
    return attr  # pyright: ignore[reportUnknownVariableType]


class Emitter:
    """MLIR text with fresh SSA names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.depth = 1

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def const(self, value: int) -> str:
        name = self.fresh("c")
        self.line(f"{name} = arith.constant {value} : index")
        return name

    def dim(self, operand: Operand, axis: int) -> str:
        if operand.shape[axis] != DYNAMIC:
            return self.const(operand.shape[axis])
        name = self.fresh("d")
        self.line(f"{name} = memref.dim {operand.name}, {self.const(axis)} : {operand.text}")
        return name

    def loops(self, bounds: Sequence[str], body: Callable[[list[str]], None]) -> None:
        """Nested scf.for over [0, bound) for each bound; body gets the ivs."""
        zero, one = self.const(0), self.const(1)
        ivs: list[str] = []
        for bound in bounds:
            iv = self.fresh("i")
            self.line(f"scf.for {iv} = {zero} to {bound} step {one} {{")
            self.depth += 1
            ivs.append(iv)
        body(ivs)
        for _ in bounds:
            self.depth -= 1
            self.line("}")


def _broadcast_indices(e: Emitter, operand: Operand, out_ivs: list[str]) -> list[str]:
    """The indices of ``operand`` for the output element at ``out_ivs``
    (numpy broadcasting: dims aligned on the right, a dim of 1 repeats)."""
    rank = len(operand.shape)
    indices: list[str] = []
    for axis, size in enumerate(operand.shape):
        iv = out_ivs[len(out_ivs) - rank + axis]
        if size == 1:
            indices.append(e.const(0))
        elif size == DYNAMIC:
            one = e.dim(operand, axis)
            is_one = e.fresh("b")
            e.line(f"{is_one} = arith.cmpi eq, {one}, {e.const(1)} : index")
            index = e.fresh("j")
            e.line(f"{index} = arith.select {is_one}, {e.const(0)}, {iv} : index")
            indices.append(index)
        else:
            indices.append(iv)
    return indices


def _load(e: Emitter, operand: Operand, indices: Sequence[str]) -> str:
    value = e.fresh("v")
    e.line(f"{value} = memref.load {operand.name}[{', '.join(indices)}] : {operand.text}")
    return value


def _store(e: Emitter, value: str, operand: Operand, indices: Sequence[str]) -> None:
    e.line(f"memref.store {value}, {operand.name}[{', '.join(indices)}] : {operand.text}")


def _elementwise(e: Emitter, ins: list[Operand], out: Operand, op: str) -> None:
    def body(ivs: list[str]) -> None:
        values = [_load(e, operand, _broadcast_indices(e, operand, ivs)) for operand in ins]
        result = e.fresh("r")
        if op == "relu":
            zero = e.fresh("z")
            e.line(f"{zero} = arith.constant 0.0 : f32")
            e.line(f"{result} = arith.maximumf {values[0]}, {zero} : f32")
        else:
            e.line(f"{result} = arith.{op} {values[0]}, {values[1]} : f32")
        _store(e, result, out, ivs)

    e.loops([e.dim(out, axis) for axis in range(len(out.shape))], body)


def _matmul(e: Emitter, ins: list[Operand], out: Operand) -> None:
    a, b = ins
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise KernelError("MatMul: only rank-2 operands")
    m, k, n = e.dim(a, 0), e.dim(a, 1), e.dim(b, 1)

    def body(ivs: list[str]) -> None:
        i, j = ivs
        zero, one, start = e.fresh("z"), e.const(1), e.const(0)
        e.line(f"{zero} = arith.constant 0.0 : f32")
        total, p, acc = e.fresh("s"), e.fresh("p"), e.fresh("acc")
        e.line(
            f"{total} = scf.for {p} = {start} to {k} step {one} iter_args({acc} = {zero}) -> (f32) {{"
        )
        e.depth += 1
        x, y = _load(e, a, [i, p]), _load(e, b, [p, j])
        xy, s = e.fresh("m"), e.fresh("a")
        e.line(f"{xy} = arith.mulf {x}, {y} : f32")
        e.line(f"{s} = arith.addf {acc}, {xy} : f32")
        e.line(f"scf.yield {s} : f32")
        e.depth -= 1
        e.line("}")
        _store(e, total, out, [i, j])

    e.loops([m, n], body)


def _softmax(e: Emitter, ins: list[Operand], out: Operand, axis: int) -> None:
    (x,) = ins
    rank = len(x.shape)
    if axis not in (-1, rank - 1):
        raise KernelError(f"Softmax: only the last axis (axis {axis})")
    last = e.dim(x, rank - 1)

    def reduce(outer: list[str], init: str, step: Callable[[str, str], str]) -> str:
        zero, one = e.const(0), e.const(1)
        result, iv, acc = e.fresh("s"), e.fresh("k"), e.fresh("acc")
        e.line(
            f"{result} = scf.for {iv} = {zero} to {last} step {one} iter_args({acc} = {init}) -> (f32) {{"
        )
        e.depth += 1
        e.line(f"scf.yield {step(acc, _load(e, x, [*outer, iv]))} : f32")
        e.depth -= 1
        e.line("}")
        return result

    def body(outer: list[str]) -> None:
        lowest, zero = e.fresh("f"), e.fresh("z")
        e.line(f"{lowest} = arith.constant 0xFF800000 : f32")
        e.line(f"{zero} = arith.constant 0.0 : f32")

        def maximum(acc: str, value: str) -> str:
            result = e.fresh("mx")
            e.line(f"{result} = arith.maximumf {acc}, {value} : f32")
            return result

        def shifted_exp(value: str, peak: str) -> str:
            diff, result = e.fresh("df"), e.fresh("ex")
            e.line(f"{diff} = arith.subf {value}, {peak} : f32")
            e.line(f"{result} = math.exp {diff} : f32")
            return result

        peak = reduce(outer, lowest, maximum)

        def add_exp(acc: str, value: str) -> str:
            result = e.fresh("sm")
            e.line(f"{result} = arith.addf {acc}, {shifted_exp(value, peak)} : f32")
            return result

        total = reduce(outer, zero, add_exp)

        def normalize(ivs: list[str]) -> None:
            (iv,) = ivs
            quotient = e.fresh("q")
            e.line(
                f"{quotient} = arith.divf {shifted_exp(_load(e, x, [*outer, iv]), peak)}, {total} : f32"
            )
            _store(e, quotient, out, [*outer, iv])

        e.loops([last], normalize)

    e.loops([e.dim(x, axis) for axis in range(rank - 1)], body)


def _kernel_body(e: Emitter, op_type: str, ins: list[Operand], out: Operand, axis: int) -> None:
    if op_type == "MatMul":
        _matmul(e, ins, out)
    elif op_type == "Add" and len(ins) == 2:
        _elementwise(e, ins, out, "addf")
    elif op_type == "Relu" and len(ins) == 1:
        _elementwise(e, ins, out, "relu")
    elif op_type == "Softmax" and len(ins) == 1:
        _softmax(e, ins, out, axis)
    else:
        raise KernelError(f"no kernel for {op_type} with {len(ins)} operands")


def _shape_body(
    e: Emitter, op_type: str, ins: list[Operand], out_type: MemRefType[Attribute]
) -> list[str]:
    """The result's dynamic dims from the operands' (one per dynamic dim)."""
    out_shape = tuple(out_type.get_shape())
    dims: list[str] = []
    for axis, size in enumerate(out_shape):
        if size != DYNAMIC:
            continue
        if op_type == "MatMul":
            dims.append(e.dim(ins[0], 0) if axis == 0 else e.dim(ins[1], 1))
            continue
        # Elementwise (broadcast) and Softmax: the largest aligned dim.
        aligned = [(o, axis - len(out_shape) + len(o.shape)) for o in ins]
        values = [e.dim(o, a) for o, a in aligned if a >= 0]
        result = values[0]
        for value in values[1:]:
            bigger = e.fresh("mx")
            e.line(f"{bigger} = arith.maxui {result}, {value} : index")
            result = bigger
        dims.append(result)
    return dims


def _string(attrs: dict[str, Attribute], key: str) -> str | None:
    value = attrs.get(key)
    return value.data if isinstance(value, StringAttr) else None


def _kernels(module: ModuleOp) -> tuple[list[str], list[func.FuncOp]]:
    """Function texts replacing the declarations, and those declarations."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    texts: list[str] = []
    replaced: list[func.FuncOp] = []
    for name, op in functions.items():
        op_type = _string(op.attributes, "memory.onnx.op_type")
        if op_type is None or not op.is_declaration or "memory.view" in op.attributes:
            continue
        inputs = [_memref(t, f"@{name}") for t in op.function_type.inputs.data]
        ins = [Operand(f"%in{i}", t) for i, t in enumerate(inputs[:-1])]
        out = Operand("%out", inputs[-1])
        axis_attr = op.attributes.get("memory.onnx.axis")
        axis = axis_attr.value.data if isinstance(axis_attr, IntegerAttr) else -1
        e = Emitter()
        _kernel_body(e, op_type, ins, out, axis)
        params = ", ".join(f"{o.name}: {o.text}" for o in [*ins, out])
        texts.append(
            "\n".join([f"func.func private @{name}({params}) {{", *e.lines, "  func.return", "}"])
        )
        replaced.append(op)
        shape_fn = op.attributes.get("memory.shape_fn")
        if isinstance(shape_fn, SymbolRefAttr):
            shape = functions.get(shape_fn.root_reference.data)
            if shape is None or not shape.is_declaration:
                continue
            e = Emitter()
            dims = _shape_body(e, op_type, ins, out.type)
            results = ", ".join("index" for _ in dims)
            texts.append(
                "\n".join(
                    [
                        f"func.func private @{shape.sym_name.data}({params.rsplit(', %out', 1)[0]}) -> ({results}) {{",
                        *e.lines,
                        f"  func.return {', '.join(dims)} : {results}",
                        "}",
                    ]
                )
            )
            replaced.append(shape)
    return texts, replaced


def _driver(main: func.FuncOp, dim_values: dict[str, list[int]]) -> str:
    """``@entry``: ``@main`` at each size, its results printed."""
    symbols = {
        (dim.argument, dim.axis): name
        for name, dim in function_dims(main).items()
        if dim.argument is not None and dim.axis is not None
    }
    inputs = [_memref(t, "@main") for t in main.function_type.inputs.data]
    outputs = [_memref(t, "@main") for t in main.function_type.outputs.data]
    sizes = list(dim_values)
    e = Emitter()
    args: list[str] = []
    for index, t in enumerate(inputs):
        operand = Operand(e.fresh("arg"), t)
        extents: list[str] = []
        for axis, size in enumerate(operand.shape):
            if size != DYNAMIC:
                extents.append(e.const(size))
            elif (index, axis) in symbols and symbols[(index, axis)] in dim_values:
                extents.append(f"%{symbols[(index, axis)]}")
            else:
                raise KernelError(
                    f"@main's argument {index} axis {axis}: no dim symbol with --dim-values"
                )
        dynamic = [x for x, size in zip(extents, operand.shape, strict=True) if size == DYNAMIC]
        e.line(f"{operand.name} = memref.alloc({', '.join(dynamic)}) : {operand.text}")

        def fill(ivs: list[str], operand: Operand = operand, extents: list[str] = extents) -> None:
            flat = ivs[0]
            for iv, extent in zip(ivs[1:], extents[1:], strict=True):
                scaled, summed = e.fresh("l"), e.fresh("l")
                e.line(f"{scaled} = arith.muli {flat}, {extent} : index")
                e.line(f"{summed} = arith.addi {scaled}, {iv} : index")
                flat = summed
            rem, shifted, as_int, value = e.fresh("l"), e.fresh("l"), e.fresh("l"), e.fresh("x")
            e.line(f"{rem} = arith.remui {flat}, {e.const(7)} : index")
            e.line(f"{shifted} = arith.subi {rem}, {e.const(3)} : index")
            e.line(f"{as_int} = arith.index_cast {shifted} : index to i64")
            e.line(f"{value} = arith.sitofp {as_int} : i64 to f32")
            _store(e, value, operand, ivs)

        e.loops(extents, fill)
        args.append(operand.name)
    results = [e.fresh("res") for _ in outputs]
    in_types = ", ".join(str(t) for t in inputs)
    out_types = ", ".join(str(t) for t in outputs)
    call = f"func.call @main({', '.join(args)}) : ({in_types}) -> ({out_types})"
    e.line(f"{', '.join(results)} = {call}" if results else call)
    for result, t in zip(results, outputs, strict=True):
        unranked = e.fresh("u")
        e.line(f"{unranked} = memref.cast {result} : {t} to memref<*xf32>")
        e.line(f"func.call @printMemrefF32({unranked}) : (memref<*xf32>) -> ()")
        e.line(f"memref.dealloc {result} : {t}")
    for arg, t in zip(args, inputs, strict=True):
        e.line(f"memref.dealloc {arg} : {t}")
    params = ", ".join(f"%{symbol}: index" for symbol in sizes)
    run = "\n".join([f"func.func @run({params}) {{", *e.lines, "  func.return", "}"])
    calls: list[str] = []
    count = len(next(iter(dim_values.values())))
    for k in range(count):
        values = [f"%{symbol}_{k}" for symbol in sizes]
        for symbol, value in zip(sizes, values, strict=True):
            calls.append(f"  {value} = arith.constant {dim_values[symbol][k]} : index")
        calls.append(
            f"  func.call @run({', '.join(values)}) : ({', '.join('index' for _ in sizes)}) -> ()"
        )
    entry = "\n".join(["func.func @entry() {", *calls, "  func.return", "}"])
    return f"{run}\n\n{entry}"


def _print_pools(main: func.FuncOp) -> None:
    """A printI64 of each pool's bytes before @main frees it."""
    for op in list(main.walk()):
        if not isinstance(op, memref.DeallocOp):
            continue
        pool = op.memref
        if (
            not isinstance(pool.type, MemRefType)
            or pool.type.get_num_dims() != 1
            or pool.type.element_type != i8
        ):
            continue
        zero = arith.ConstantOp.from_int_and_width(0, IndexType())
        dim = memref.DimOp(pool, zero)
        as_i64 = arith.IndexCastOp(dim, i64)
        printed: list[Operation] = [
            zero,
            dim,
            as_i64,
            func.CallOp("printI64", [as_i64], []),
            func.CallOp("printNewline", [], []),
        ]
        parent = op.parent_block()
        assert parent is not None
        parent.insert_ops_before(printed, op)


def main(argv: list[str] | None = None) -> int:
    """Print the runnable module; one line and exit 1 on an error."""
    parser = argparse.ArgumentParser(prog="onnx_kernels.py", description=__doc__.split("\n")[0])
    parser.add_argument("module", help="the lowered .mlir")
    parser.add_argument(
        "--dim-values", action="append", default=[], help="SYMBOL=V,... (repeatable)"
    )
    parser.add_argument("--print-pools", action="store_true", help="print each pool's bytes")
    args = parser.parse_args(argv)
    try:
        with open(args.module) as file:
            module = parse_module(file.read(), args.module, memplan_context())
        texts, replaced = _kernels(module)
        for op in replaced:
            op.detach()
            op.erase()
        main_fn = next(
            (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"),
            None,
        )
        if main_fn is None:
            raise KernelError("no func.func @main")
        if args.print_pools:
            _print_pools(main_fn)
        dim_values = parse_dim_values(args.dim_values)
        if not dim_values or len({len(v) for v in dim_values.values()}) != 1:
            raise KernelError("--dim-values: give each symbol the same number of values")
        texts.append(_driver(main_fn, dim_values))
        texts.append(
            "func.func private @printMemrefF32(memref<*xf32>)\n"
            "func.func private @printI64(i64)\n"
            "func.func private @printNewline()"
        )
    except (KernelError, RunError, OSError) as error:
        print(f"onnx_kernels.py: error: {error}", file=sys.stderr)
        return 1
    stream = StringIO()
    MemplanPrinter(stream=stream).print_op(module)
    text = stream.getvalue().rstrip()
    assert text.endswith("}")
    body = "\n\n".join(texts)
    print(f"{text[:-1]}{body}\n}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
