"""Run a value-semantic module directly: the reference for every plan.

The form `manifest-alloc` takes — `func.call`s of bodiless kernel
declarations on tensors, `scf.if` / `scf.for` / `scf.while` on values, view
kernels (`memory.view`), dense constants, `memref.get_global` read through
`bufferization.to_tensor`, `tensor.dim` / `tensor.extract` /
`tensor.from_elements` — has a meaning that needs no memory plan: every
value is an immutable array. `run_reference` executes exactly that, with no
storages, no in-place sharing, no loop buffers and no kills, so a planned
module (`manifest-alloc` and everything after it) can be checked against
the *original* program rather than against the unplanned manifest, which
carries manifest-alloc's own decisions (and mistakes) with it.

It reuses the kernels of `memdialect.interpreter` (a `KernelRegistry`:
the same Python kernels `memory.invoke` calls) and its interpreter for
constants, globals and shape functions, and differs from it in what makes
a reference:

* every tensor value is read-only: a kernel gets read-only inputs and fresh
  outputs (filled with `POISON_BYTE`, as a fresh storage is), and its
  outputs become read-only once it returns, so a kernel that writes an
  operand fails here instead of silently changing a value;
* a view kernel is a reshape of its operand's array, shared (values never
  change, so sharing cannot be observed) and not a kernel call: planned
  modules lower views to casts, so traces of the two line up call for call;
* a mutable `memref.global` (a TFLite variable) is the one piece of
  memory: kernels read it through a memref operand and
  `bufferization.materialize_in_destination` writes it, on the run's own
  copy of its data;
* a module that is not value-semantic (a `memory.alloc_storage`,
  `memory.invoke`, `memory.kill`, `memref.alloc`... in a function body) is
  refused up front with an `ExecutionError` naming the op.

With ``trace=True`` every kernel call records a digest of each input, in
call order (`KernelCall`); a planned run traced by `run_function` must
record the same list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import prod
from typing import Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.ir import Operation

from memplan.dialect.arrays import numpy_dtype
from memplan.dialect.interpreter import (
    ExecutionError,
    ExecutionResult,
    KernelCall,
    KernelRegistry,
    MemoryFunctions,
    checked_arguments,
    interpret,
)
from memplan.dialect.ops import VIEW_ATTR, describe


def _read_only(array: Any) -> Any:
    """``array`` as a read-only view (scalars pass through)."""
    if not isinstance(array, np.ndarray):
        return array
    view = array.view()
    view.flags.writeable = False
    return view


@register_impls
class ReferenceFunctions(MemoryFunctions):
    """`MemoryFunctions` for value-semantic modules (see the module
    docstring): kernel calls on immutable arrays, views as shared reshapes.
    The memory-dialect implementations it inherits never run:
    `run_reference` refuses modules that contain those ops."""

    @impl(func.CallOp)
    def run_call(
        self, interpreter: Interpreter, op: func.CallOp, args: PythonValues
    ) -> PythonValues:
        declaration = self._declaration(op, op.callee)
        if declaration is None or VIEW_ATTR not in declaration.attributes:
            # The inherited impl is wrapped by @impl: it returns an OpImplResult.
            called = super().run_call(interpreter, op, tuple(_read_only(a) for a in args))
            return tuple(_read_only(r) for r in called.values)
        dims = iter(self._dynamic_dims(interpreter, op, declaration, args))
        name = declaration.sym_name.data
        sources = [
            a for a, t in zip(args, op.arguments.types) if isinstance(t, TensorType | MemRefType)
        ]
        result_type = op.results[0].type if len(op.results) == 1 else None
        if len(sources) != 1 or not isinstance(result_type, TensorType):
            raise ExecutionError(f"view kernel @{name} must take one tensor and return one tensor")
        shape = tuple(d if d >= 0 else int(next(dims)) for d in result_type.get_shape())
        source = np.asarray(sources[0])
        dtype = numpy_dtype(result_type.get_element_type())
        if source.dtype != dtype or source.size != prod(shape):
            raise ExecutionError(
                f"view kernel @{name}: {source.dtype}{list(source.shape)} cannot be viewed as "
                f"{result_type}"
            )
        return (_read_only(source.reshape(shape)),)


def _first_non_value_op(module: ModuleOp) -> Operation | None:
    """The first op in a function body that belongs to a planned module."""
    for function in module.ops:
        if not isinstance(function, func.FuncOp):
            continue
        for op in function.body.walk():
            if isinstance(op, memref.GetGlobalOp):
                continue  # a constant the importers keep in a global
            if op.name.startswith(("memory.", "memref.")):
                return op
    return None


def run_reference(
    module: ModuleOp,
    inputs: Sequence[Any],
    *,
    kernels: KernelRegistry,
    name: str = "main",
    globals_data: Mapping[str, np.ndarray] | None = None,
    trace: bool = False,
    listeners: Iterable[Interpreter.Listener] = (),
) -> ExecutionResult:
    """Run ``@name`` of value-semantic ``module`` on ``inputs`` (see the
    module docstring). The outputs are copies; `pool_bytes` is empty and
    `unpinned_bytes` 0, since nothing is planned."""
    found = _first_non_value_op(module)
    if found is not None:
        value = f" ({describe(found.results[0])})" if found.results else ""
        raise ExecutionError(
            f"the reference runs value-semantic modules only: {found.name}{value} "
            "belongs to a planned module"
        )
    function, checked = checked_arguments(module, name, inputs)
    # Values are immutable: a kernel writing its operand fails loudly.
    arguments = [_read_only(v) if isinstance(v, np.ndarray) else v for v in checked]
    calls: list[KernelCall] | None = [] if trace else None
    values = ReferenceFunctions(kernels, globals_data or {}, True, calls)
    outputs = interpret(module, function, arguments, values, listeners)
    return ExecutionResult(outputs, calls, {})


__all__ = ["ReferenceFunctions", "run_reference"]
