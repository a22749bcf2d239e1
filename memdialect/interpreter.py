"""Run functions of a memory-dialect module with NumPy.

This is the engine behind `memplan-run`, built on xDSL's interpreter
(`xdsl.interpreter.Interpreter`): `MemoryFunctions` implements the `memory`
ops and the few `memref`/`bufferization`/`func` ops that planned and
unplanned modules contain; `arith`, `scf` and `cf` come from upstream xDSL.

Values are NumPy arrays:

* a pool is one `uint8` array (its size is its `used`, else its `size`, else
  the end of the highest storage pinned in it; a pool with a parametric
  plan takes the bytes its offset program gives at the run's dims, see
  below);
* a storage is a `uint8` array: a slice of its pool when it is pinned
  (`at @pool[offset]`), its own array otherwise (and when the run is
  ``pinned=False``: each storage its own allocation, the plan ignored
  (pins, offset programs, reserves): the module as it was before pools
  were assigned);
* `memory.alloc_tensor` is a typed, shaped view of its storage's bytes at the
  offset, so tensors sharing bytes really share them;
* `memory.invoke` calls a Python kernel from a `KernelRegistry` with the `ins`
  values and the `outs` views, which the kernel writes in place;
* a value-semantic `func.call` of a kernel declaration (the form before
  `manifest-alloc`) allocates fresh result arrays and calls the same kernel;
  dynamic result dims come from the kernel's `memory.shape_fn`, run as a
  function when it has a body, else as a kernel;
* a `func.call` of a declaration whose results are scalars (a shape
  function) calls its kernel with one 0-d array per result to fill.

Dynamic dims: at the entry of a function with `memory.dim_ranges`, each
dim that `memory.dim_symbols` places (an argument and an axis) is read
from the arguments; where the function has a parametric plan, each must
lie in its range. A pool with a parametric plan (`memory.slot` and
`memory.above`, read by `memplan.passes.analysis.parametric`) places each
of its storages at the offset its program gives at those dims, not at its
`at` offset, and its buffer holds exactly the program's bytes at those
dims, so an access past them fails. A pinned storage with
`memory.reserve` whose dims are known must get at most the reserve's
value at those dims from its size operand. The pool's buffer is allocated
at its first storage, at the dims of the programs entered so far: a
function whose program is entered later must fit the buffer then.

Poisoning: memory is filled with `POISON_BYTE` (0xFF: NaN in every float
type, -1 in signed integers) when it is allocated (a storage pinned in a
pool included) and when it is killed (`memory.kill` of a storage or of a
tensor). A plan that hands live bytes to
another buffer, or a kill placed before a use, therefore changes what the
kernels read, and the result. With `trace=True` every kernel call records a
digest of each input, so two runs can be compared call by call even when the
final outputs happen to hide a difference.

Kernels are looked up by the declaration's symbol name first
(`KernelRegistry.register`), then by resolvers (`add_resolver`), which map
whole families of declarations (e.g. everything the ONNX importer emits) to
kernels. A kernel is ``kernel(ins, outs, attributes) -> None``: ``ins`` are
arrays or Python scalars, ``outs`` arrays to fill, ``attributes`` the
declaration's attributes overridden by the call's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any, overload

import numpy as np
from xdsl.dialects import arith, bufferization, func, memref, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.cf import CfFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Attribute, Operation
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from memplan.dialect.arrays import NoNumpyDtype, dense_array, numpy_dtype
from memplan.dialect.ops import (
    SHAPE_FN_ATTR,
    VIEW_ATTR,
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    KillOp,
    PoolOp,
    describe,
    inplace_pairs,
)
from memplan.dialect.size_expr import SizeExpr
from memplan.passes.analysis.parametric import (
    RESERVE_ATTR,
    SLOT_ATTR,
    Dim,
    ParametricLayoutError,
    ParametricPool,
    function_dims,
    parametric_pools,
    storage_reserve,
)

POISON_BYTE = 0xFF
"""Fills fresh and killed memory: NaN in floats, -1 in signed integers."""


Kernel = Callable[[Sequence[Any], Sequence[np.ndarray], Mapping[str, Attribute]], None]
"""``kernel(ins, outs, attributes)``: reads ``ins``, writes ``outs`` in place."""

KernelResolver = Callable[[func.FuncOp], Kernel | None]
"""Maps a kernel declaration to a kernel, or ``None`` when it does not apply."""


def kernel_of_shape_function(declaration: func.FuncOp) -> func.FuncOp | None:
    """The declaration in ``declaration``'s module whose `memory.shape_fn` names it."""
    module = declaration.parent_op()
    if module is None:
        return None
    name = declaration.sym_name.data
    for op in module.walk():
        if (
            isinstance(op, func.FuncOp)
            and isinstance(ref := op.attributes.get(SHAPE_FN_ATTR), SymbolRefAttr)
            and ref.root_reference.data == name
        ):
            return op
    return None


def shape_function_kernel(
    declaration: func.FuncOp,
    kernel: func.FuncOp,
    result_shapes: Callable[[Sequence[Any]], Sequence[Sequence[int]]],
) -> Kernel:
    """The kernel of ``declaration``, the shape function of ``kernel``:
    ``result_shapes`` gives the shapes of the kernel's results on some
    operands, and the shape function writes the dims the kernel's result
    types leave dynamic (in result then dim order) into its 0-d outputs.
    ``kernel`` may be value-semantic or destination-passing (its results the
    arguments after the shape function's operands)."""
    operand_count = len(declaration.function_type.inputs.data)
    types = kernel.function_type.outputs.data or kernel.function_type.inputs.data[operand_count:]

    def shape_function(
        ins: Sequence[Any], outs: Sequence[np.ndarray], _: Mapping[str, Attribute]
    ) -> None:
        dims = [
            actual
            for shape, type_ in zip(result_shapes(ins), types)
            if isinstance(type_, TensorType | MemRefType)
            for actual, declared in zip(shape, type_.get_shape())
            if declared < 0
        ]
        if len(dims) != len(outs):
            raise ValueError(
                f"shape function @{declaration.sym_name.data} has {len(outs)} results, "
                f"the results of @{kernel.sym_name.data} have {len(dims)} dynamic dims"
            )
        for out, dim in zip(outs, dims):
            out[...] = dim

    return shape_function


class ExecutionError(Exception):
    """A module that cannot be run: missing kernel, bad input, bad kernel output."""


def _check_dynamic_inplace(
    name: str, declaration: func.FuncOp, ins: Sequence[Any], outs: Sequence[np.ndarray]
) -> None:
    """A `memory.inplace` pair with a dynamic result promises that the
    result's run-time shape is the operand's (a plan holds the result in
    the operand's bytes): a run where it is not is an error, planned or not,
    since no comparison of values would show it (NumPy copies overlapping
    operands before it writes)."""
    # A value-semantic kernel returns its results; a destination-passing
    # one (after manifest-alloc) takes them after its operands.
    signature = declaration.function_type
    results = (
        signature.outputs.data if signature.outputs.data else signature.inputs.data[len(ins) :]
    )
    for result, operand in inplace_pairs(declaration):
        if (
            result >= min(len(outs), len(results))
            or operand >= len(ins)
            or not isinstance(ins[operand], np.ndarray)
        ):
            continue
        result_type = results[result]
        if not isinstance(result_type, TensorType | MemRefType) or result_type.has_static_shape():
            continue
        if outs[result].shape != ins[operand].shape:
            raise ExecutionError(
                f"kernel @{name}: result {result} has shape {list(outs[result].shape)} at run "
                f"time, operand {operand} {list(ins[operand].shape)}; its memory.inplace pair "
                "promises one shape (the plan holds the result in the operand's bytes)"
            )


def _dtype(element_type: Attribute) -> np.dtype[Any]:
    try:
        return numpy_dtype(element_type)
    except NoNumpyDtype as error:
        raise ExecutionError(str(error)) from None


def _dense_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    try:
        return dense_array(attr)
    except NoNumpyDtype as error:
        raise ExecutionError(str(error)) from None


def _shaped_spec(value_type: Attribute) -> tuple[np.dtype[Any], tuple[int, ...]] | None:
    if isinstance(value_type, MemRefType | TensorType):
        return _dtype(value_type.get_element_type()), tuple(value_type.get_shape())
    return None


def _element(array: np.ndarray, indices: Sequence[Any]) -> Any:
    """One element of ``array`` as a Python scalar (what ``arith`` and ``scf`` take)."""
    return np.asarray(array)[tuple(int(i) for i in indices)].item()


def _shape_of(shaped_type: MemRefType | TensorType, dynamic: Iterable[Any] = ()) -> tuple[int, ...]:
    """The shape of ``shaped_type`` with each ``?`` taken from ``dynamic`` in order."""
    dims = iter(int(d) for d in dynamic)
    return tuple(d if d >= 0 else next(dims) for d in shaped_type.get_shape())


def _typed_view(buffer: np.ndarray, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """The first ``prod(shape)`` elements of byte ``buffer`` as a ``dtype`` array of ``shape``."""
    return buffer[: prod(shape) * dtype.itemsize].view(dtype).reshape(shape)


def _describe_array(array: np.ndarray) -> str:
    return f"{array.dtype}[{', '.join(str(d) for d in array.shape)}]"


def digest(array: Any) -> str:
    """A short content hash of ``array`` (dtype, shape and bytes)."""
    data = np.asarray(array, order="C")
    hasher = hashlib.blake2b(digest_size=12)
    hasher.update(f"{data.dtype}{data.shape}".encode())
    hasher.update(data.reshape(-1).view(np.uint8).tobytes() if data.size else b"")
    return hasher.hexdigest()


@dataclass
class KernelRegistry:
    """Python kernels for kernel declarations.

    ``register(name, kernel)`` (or ``@registry.register(name)``) binds one
    declaration symbol; resolvers added with ``add_resolver`` are asked in
    order for declarations no name matches, once per declaration.
    """

    _by_name: dict[str, Kernel] = field(default_factory=dict)
    _resolvers: list[KernelResolver] = field(default_factory=list)
    _resolved: dict[func.FuncOp, Kernel] = field(default_factory=dict)

    @overload
    def register(self, name: str, kernel: Kernel) -> Kernel: ...

    @overload
    def register(self, name: str, kernel: None = None) -> Callable[[Kernel], Kernel]: ...

    def register(
        self, name: str, kernel: Kernel | None = None
    ) -> Callable[[Kernel], Kernel] | Kernel:
        """Bind ``kernel`` to declarations called ``@name``; usable as a decorator."""
        if kernel is not None:
            self._by_name[name] = kernel
            return kernel

        def decorate(function: Kernel) -> Kernel:
            self._by_name[name] = function
            return function

        return decorate

    def add_resolver(self, resolver: KernelResolver) -> None:
        """Ask ``resolver`` about declarations that no registered name matches."""
        self._resolvers.append(resolver)

    def names(self) -> list[str]:
        """The registered symbol names, sorted."""
        return sorted(self._by_name)

    def lookup(self, declaration: func.FuncOp) -> Kernel:
        """The kernel for ``declaration``, or ``ExecutionError`` naming it."""
        name = declaration.sym_name.data
        kernel = self._by_name.get(name) or self._resolved.get(declaration)
        if kernel is not None:
            return kernel
        for resolver in self._resolvers:
            kernel = resolver(declaration)
            if kernel is not None:
                # Per declaration, not per name: another module may declare
                # the same name with other attributes.
                self._resolved[declaration] = kernel
                return kernel
        raise ExecutionError(
            f"no kernel for @{name}: register one with KernelRegistry.register("
            f'"{name}", ...) (memplan-run --kernels FILE.py)'
        )


@dataclass(frozen=True)
class KernelCall:
    """One kernel call of a traced run: the callee and a digest per input."""

    callee: str
    input_digests: tuple[str, ...]


@dataclass
class ExecutionResult:
    """What ``run_function`` returns: the results (copied out of the pools),
    the kernel calls (when traced), the bytes of every pool it used and of
    the storages it allocated outside pools."""

    outputs: list[np.ndarray]
    calls: list[KernelCall] | None
    pool_bytes: dict[str, int]
    unpinned_bytes: int = 0
    """Bytes of the storages allocated outside pools (each allocation counted)."""


def _poison(array: np.ndarray) -> None:
    """Overwrite every byte of ``array`` (a storage, a tensor or a view of one)."""
    if not array.size:
        return
    if array.flags.c_contiguous:
        array.reshape(-1).view(np.uint8).fill(POISON_BYTE)  # a view, never a copy
    else:
        pattern = bytes([POISON_BYTE]) * array.dtype.itemsize
        array[...] = np.frombuffer(pattern, dtype=array.dtype)[0]


@register_impls
class MemoryFunctions(InterpreterFunctions):
    """Interpreter implementations of the memory dialect (see the module docstring)."""

    def __init__(
        self,
        kernels: KernelRegistry,
        globals_data: Mapping[str, np.ndarray],
        poison: bool,
        trace: list[KernelCall] | None,
        pinned: bool = True,
    ) -> None:
        self.kernels = kernels
        self.globals_data = globals_data
        self.poison = poison
        self.trace = trace
        self.pinned = pinned
        """False: every storage its own allocation, its pin ignored."""
        self.pools: dict[str, np.ndarray] = {}
        self.globals: dict[str, np.ndarray] = {}
        self.pool_extents: dict[str, int] | None = None
        self.static_extents: dict[str, int] = {}
        """Per pool, the end of its highest pinned storage outside offset programs."""
        self.unpinned_bytes = 0
        # Symbol lookup scans the module's ops: once per callee, not per call.
        self.callees: dict[Attribute, func.FuncOp | None] = {}
        self.bodies: dict[Attribute, func.FuncOp] = {}
        self.ranged_dims: dict[func.FuncOp, dict[str, Dim]] = {}
        """Each entered function's ``memory.dim_ranges``, read at its first entry."""
        self.dims: dict[func.FuncOp, dict[str, int]] = {}
        """Each entered function's dims at its latest entry."""
        self.placements: dict[AllocStorageOp, int] = {}
        """Offsets the parametric plans give at the current dims."""
        self.parametric_bytes: dict[str, int] = {}
        """Per pool, the most bytes its offset programs took at the dims so far."""
        self.programs: dict[func.FuncOp, list[ParametricPool]] = {}
        self.reserves: dict[AllocStorageOp, tuple[SizeExpr, func.FuncOp] | None] = {}

    # -- helpers -----------------------------------------------------------

    def _fresh(self, size: int) -> np.ndarray:
        if self.poison:
            return np.full(size, POISON_BYTE, dtype=np.uint8)
        return np.zeros(size, dtype=np.uint8)

    def _fresh_array(self, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
        return _typed_view(self._fresh(prod(shape) * dtype.itemsize), dtype, shape)

    def _pool(self, op: AllocStorageOp, name: str) -> np.ndarray:
        if name in self.pools:
            return self.pools[name]
        pool = SymbolTable.lookup_symbol(op, name)
        if not isinstance(pool, PoolOp):
            raise ExecutionError(f"storage pinned in unknown pool @{name}")
        if name in self.parametric_bytes:
            # Exactly what the programs take at these dims (and what static
            # storages of the pool outside them reach).
            self._pinned_extent(op, name)
            size = max(self.parametric_bytes[name], self.static_extents.get(name, 0))
        elif pool.used is not None:
            size = pool.used.value.data
        elif pool.byte_size is not None:
            size = pool.byte_size
        else:
            size = self._pinned_extent(op, name)
        self.pools[name] = self._fresh(size)
        return self.pools[name]

    def _pinned_extent(self, op: Operation, name: str) -> int:
        if self.pool_extents is None:
            self.pool_extents = {}
            module = op
            while (parent := module.parent_op()) is not None:
                module = parent
            for storage in module.walk():
                if isinstance(storage, AllocStorageOp) and storage.pinned is not None:
                    pool, offset = storage.pinned
                    end = offset + (storage.size_bound or 0)
                    self.pool_extents[pool] = max(self.pool_extents.get(pool, 0), end)
                    if SLOT_ATTR not in storage.attributes:
                        self.static_extents[pool] = max(self.static_extents.get(pool, 0), end)
        return self.pool_extents.get(name, 0)

    # -- dynamic dims and parametric plans -----------------------------------

    def enter_function(self, function: func.FuncOp, arguments: Sequence[Any]) -> None:
        """Read ``function``'s dims from ``arguments`` (each dim of its
        `memory.dim_ranges` that `memory.dim_symbols` places); when it has
        offset programs, check the dims against their ranges (a static
        plan's `max` bounds already guard every size) and, in a pinned run,
        place the programs' storages at those dims."""
        if function not in self.ranged_dims:
            self.ranged_dims[function] = function_dims(function)
        dims = self.ranged_dims[function]
        if not dims:
            return
        name = function.sym_name.data
        values: dict[str, int] = {}
        outside: str | None = None
        for dim in dims.values():
            if dim.argument is None or dim.axis is None:
                continue
            where = f"argument #{dim.argument}'s axis {dim.axis} of @{name}"
            if not 0 <= dim.argument < len(arguments):
                raise ExecutionError(
                    f"dim {dim.name} is read from {where} (memory.dim_symbols), "
                    f"and @{name} has {len(arguments)} arguments"
                )
            shape = np.shape(arguments[dim.argument])
            if not 0 <= dim.axis < len(shape):
                raise ExecutionError(
                    f"dim {dim.name} is read from {where} (memory.dim_symbols), "
                    f"and that argument has rank {len(shape)}"
                )
            value = int(shape[dim.axis])
            if outside is None and not dim.lower <= value <= dim.upper:
                outside = (
                    f"dim {dim.name}={value} ({where}): outside {dim.lower}..{dim.upper} "
                    "(its memory.dim_ranges)"
                )
            values[dim.name] = value
        self.dims[function] = values
        programs = self._programs(function)
        if programs and outside is not None:
            raise ExecutionError(outside)
        if not self.pinned:
            return
        for program in programs:
            missing = sorted(program.symbols() - values.keys())
            if missing:
                raise ExecutionError(
                    f"the parametric plan of pool @{program.pool} in @{name} reads dim "
                    f"{missing[0]}, which no memory.dim_symbols entry of @{name} places"
                )
            for storage, offset in zip(program.storages, program.offsets(values)):
                self.placements[storage.alloc] = offset
            size = program.size(values)
            self.parametric_bytes[program.pool] = max(
                size, self.parametric_bytes.get(program.pool, 0)
            )

    def _programs(self, function: func.FuncOp) -> list[ParametricPool]:
        if function not in self.programs:
            storages = [op for op in function.walk() if isinstance(op, AllocStorageOp)]
            try:
                self.programs[function] = parametric_pools(function, storages)
            except ParametricLayoutError as error:
                raise ExecutionError(_layout_error(error)) from None
        return self.programs[function]

    def _reserve(self, op: AllocStorageOp) -> tuple[SizeExpr, func.FuncOp] | None:
        """``op``'s `memory.reserve` and the function whose dims it reads."""
        if op not in self.reserves:
            found = None
            if RESERVE_ATTR in op.attributes:
                try:
                    reserve = storage_reserve(op)
                except ParametricLayoutError as error:
                    raise ExecutionError(_layout_error(error)) from None
                function = op.parent_op()
                while function is not None and not isinstance(function, func.FuncOp):
                    function = function.parent_op()
                if reserve is not None and function is not None:
                    found = (reserve, function)
            self.reserves[op] = found
        return self.reserves[op]

    def _check_reserve(self, op: AllocStorageOp, size: int) -> None:
        """A storage's size operand may not exceed its reserve at the dims.
        Without the dims (no `memory.dim_symbols` entry places one) there is
        nothing to check against: a static plan reserves `max`, which the
        bound check guards, and an offset program needs its dims at entry."""
        found = self._reserve(op)
        if found is None:
            return
        reserve, function = found
        dims = self.dims.get(function, {})
        if not reserve.symbols() <= dims.keys():
            return
        value = reserve.evaluate(dims)
        if size > value:
            at = ", ".join(f"{s}={dims[s]}" for s in sorted(reserve.symbols()))
            raise ExecutionError(
                f"storage {describe(op.storage)} of {size} bytes exceeds its {RESERVE_ATTR} "
                f"'{reserve}' = {value} bytes" + (f" at {at}" if at else "")
            )

    def _declaration(self, op: Operation, callee: Attribute) -> func.FuncOp | None:
        """The kernel declaration ``callee`` names, ``None`` for a function with a body."""
        if callee not in self.callees:
            target = SymbolTable.lookup_symbol(op, callee)  # type: ignore[arg-type]
            if not isinstance(target, func.FuncOp):
                raise ExecutionError(f"{op.name}: {callee} is not a func.func")
            self.callees[callee] = target if target.is_declaration else None
            if not target.is_declaration:
                self.bodies[callee] = target
        return self.callees[callee]

    def _call_kernel(
        self,
        op: Operation,
        declaration: func.FuncOp,
        ins: Sequence[Any],
        outs: Sequence[np.ndarray],
    ) -> None:
        name = declaration.sym_name.data
        kernel = self.kernels.lookup(declaration)
        if self.trace is not None:
            self.trace.append(KernelCall(name, tuple(digest(x) for x in ins)))
        _check_dynamic_inplace(name, declaration, ins, outs)
        attributes = {**declaration.attributes, **op.attributes}
        try:
            kernel(ins, outs, attributes)
        except ExecutionError:
            raise
        except Exception as error:
            raise ExecutionError(f"kernel @{name} failed: {error}") from error

    # -- memory dialect ------------------------------------------------------

    @impl(AllocStorageOp)
    def run_alloc_storage(
        self, interpreter: Interpreter, op: AllocStorageOp, args: PythonValues
    ) -> PythonValues:
        size = op.byte_size if op.byte_size is not None else int(args[0])
        bound = op.size_bound
        if bound is not None and size > bound:
            raise ExecutionError(
                f"storage {describe(op.storage)} of {size} bytes exceeds its bound max {bound}"
            )
        pinned = op.pinned
        if pinned is None or not self.pinned:
            self.unpinned_bytes += size
            return (self._fresh(size),)
        self._check_reserve(op, size)
        pool_name, offset = pinned
        offset = self.placements.get(op, offset)
        pool = self._pool(op, pool_name)
        if offset + size > pool.size:
            raise ExecutionError(
                f"storage of {size} bytes at offset {offset} overflows pool "
                f"@{pool_name} of {pool.size} bytes"
            )
        storage = pool[offset : offset + size]
        if self.poison:
            # The bytes belong to no live buffer in a correct plan; in a wrong
            # one, this clobbers the buffer that still holds them.
            storage.fill(POISON_BYTE)
        return (storage,)

    @impl(AllocTensorOp)
    def run_alloc_tensor(
        self, interpreter: Interpreter, op: AllocTensorOp, args: PythonValues
    ) -> PythonValues:
        storage: np.ndarray = args[0]
        rest = list(args[1:])
        offset = op.static_offset if op.static_offset is not None else int(rest.pop(0))
        shape = _shape_of(op.tensor_type, rest)
        dtype = _dtype(op.tensor_type.get_element_type())
        nbytes = prod(shape) * dtype.itemsize
        if offset + nbytes > storage.size:
            raise ExecutionError(
                f"tensor of {nbytes} bytes at offset {offset} overflows its storage "
                f"of {storage.size} bytes"
            )
        return (_typed_view(storage[offset:], dtype, shape),)

    @impl(InvokeOp)
    def run_invoke(
        self, interpreter: Interpreter, op: InvokeOp, args: PythonValues
    ) -> PythonValues:
        declaration = self._declaration(op, op.callee)
        if declaration is None:
            raise ExecutionError(f"memory.invoke of {op.callee}: not a kernel declaration")
        count = len(op.ins)
        self._call_kernel(op, declaration, args[:count], args[count:])
        return ()

    @impl(KillOp)
    def run_kill(self, interpreter: Interpreter, op: KillOp, args: PythonValues) -> PythonValues:
        if self.poison:
            _poison(args[0])
        return ()

    # -- value-semantic kernel calls, constants ------------------------------

    @impl(func.CallOp)
    def run_call(
        self, interpreter: Interpreter, op: func.CallOp, args: PythonValues
    ) -> PythonValues:
        declaration = self._declaration(op, op.callee)
        if declaration is None:
            self.enter_function(self.bodies[op.callee], args)
            return interpreter.call_op(op.callee, args)
        if all(_shaped_spec(t) is None for t in op.result_types):
            return tuple(self._scalar_call(op, declaration, args, len(op.results)))
        dims = iter(self._dynamic_dims(interpreter, op, declaration, args))
        if VIEW_ATTR in declaration.attributes:
            return (self._view_call(op, declaration, args, dims),)
        outs: list[np.ndarray] = []
        for result in op.results:
            spec = _shaped_spec(result.type)
            if spec is None:
                raise ExecutionError(
                    f"call of @{declaration.sym_name.data}: result type {result.type} "
                    "is not a tensor"
                )
            assert isinstance(result.type, TensorType | MemRefType)
            outs.append(self._fresh_array(spec[0], _shape_of(result.type, dims)))
        self._call_kernel(op, declaration, args, outs)
        return tuple(outs)

    def _dynamic_dims(
        self,
        interpreter: Interpreter,
        op: func.CallOp,
        declaration: func.FuncOp,
        args: PythonValues,
    ) -> list[int]:
        """The dynamic dims of the results of kernel call ``op``, from the
        kernel's `memory.shape_fn` (none when every result is static)."""
        if not any(
            isinstance(t, TensorType | MemRefType) and not t.has_static_shape()
            for t in op.result_types
        ):
            return []
        name = declaration.sym_name.data
        ref = declaration.attributes.get(SHAPE_FN_ATTR)
        if not isinstance(ref, SymbolRefAttr):
            raise ExecutionError(
                f"call of @{name}: a result has dynamic dims and @{name} has no {SHAPE_FN_ATTR}"
            )
        shape_fn = self._declaration(op, ref)
        if shape_fn is None:
            return [int(d) for d in interpreter.call_op(ref.root_reference.data, args)]
        return self._scalar_call(op, shape_fn, args, len(shape_fn.function_type.outputs.data))

    def _scalar_call(
        self, op: Operation, declaration: func.FuncOp, args: PythonValues, count: int
    ) -> list[int]:
        """Call the kernel of ``declaration`` (a shape function: scalar
        results) with one 0-d array per result to fill; their values."""
        scalars = [np.zeros((), np.int64) for _ in range(count)]
        self._call_kernel(op, declaration, args, scalars)
        return [int(s) for s in scalars]

    def _view_call(
        self,
        op: func.CallOp,
        declaration: func.FuncOp,
        args: PythonValues,
        dims: Iterable[int],
    ) -> np.ndarray:
        """A view kernel in value semantics: a copy of its one tensor, reshaped."""
        name = declaration.sym_name.data
        sources = [
            a for a, t in zip(args, op.arguments.types) if isinstance(t, TensorType | MemRefType)
        ]
        result_type = op.results[0].type if len(op.results) == 1 else None
        spec = _shaped_spec(result_type) if result_type is not None else None
        if len(sources) != 1 or spec is None:
            raise ExecutionError(f"view kernel @{name} must take one tensor and return one tensor")
        assert isinstance(result_type, TensorType | MemRefType)
        spec = (spec[0], _shape_of(result_type, dims))
        source = np.asarray(sources[0])
        if source.dtype != spec[0] or source.size != prod(spec[1]):
            raise ExecutionError(
                f"view kernel @{name}: {_describe_array(source)} cannot be viewed as "
                f"{op.results[0].type}"
            )
        if self.trace is not None:
            self.trace.append(KernelCall(name, (digest(source),)))
        return np.array(source, copy=True).reshape(spec[1])

    @impl(arith.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues
    ) -> PythonValues:
        if isinstance(op.value, DenseIntOrFPElementsAttr):
            return (_dense_array(op.value),)
        # The upstream impl is wrapped by @impl: it returns an OpImplResult.
        return ArithFunctions.run_constant(ArithFunctions(), interpreter, op, args).values

    @impl(memref.GetGlobalOp)
    def run_get_global(
        self, interpreter: Interpreter, op: memref.GetGlobalOp, args: PythonValues
    ) -> PythonValues:
        name = op.name_.root_reference.data
        if name not in self.globals:
            self.globals[name] = self._global_value(op, name)
        return (self.globals[name],)

    def _global_value(self, op: memref.GetGlobalOp, name: str) -> np.ndarray:
        symbol = SymbolTable.lookup_symbol(op, op.name_)
        if not isinstance(symbol, memref.GlobalOp):
            raise ExecutionError(f"memref.get_global: @{name} is not a memref.global")
        memref_type = symbol.type
        dtype, shape = _dtype(memref_type.get_element_type()), tuple(memref_type.get_shape())
        if name in self.globals_data:
            array = np.asarray(self.globals_data[name])
        elif isinstance(symbol.initial_value, DenseIntOrFPElementsAttr):
            array = _dense_array(symbol.initial_value)
        else:
            raise ExecutionError(
                f"global @{name} has no initial value and no data was given for it "
                "(for an imported ONNX model, pass --weights-from MODEL.onnx)"
            )
        if array.dtype != dtype or array.shape != shape:
            raise ExecutionError(
                f"data for global @{name} is {_describe_array(array)}, its type is {memref_type}"
            )
        if symbol.constant is None:
            # A mutable global (a TFLite variable): this run's own copy, so
            # that two runs (planned, unplanned) each start from its data.
            return np.array(array, order="C", copy=True)
        if not array.flags.c_contiguous or array.flags.writeable:
            # One private, read-only copy: a kernel writing a constant fails
            # instead of changing the caller's data (splats materialise here).
            array = np.array(array, order="C", copy=True)
            array.flags.writeable = False
        return array

    @impl(bufferization.ToTensorOp)
    def run_to_tensor(
        self, interpreter: Interpreter, op: bufferization.ToTensorOp, args: PythonValues
    ) -> PythonValues:
        return (args[0],)

    @impl(tensor.ExtractOp)
    def run_tensor_extract(
        self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues
    ) -> PythonValues:
        return (_element(args[0], args[1:]),)

    @impl(tensor.FromElementsOp)
    def run_from_elements(
        self, interpreter: Interpreter, op: tensor.FromElementsOp, args: PythonValues
    ) -> PythonValues:
        spec = _shaped_spec(op.result.type)
        assert spec is not None
        dtype, shape = spec
        return (np.array(args, dtype=dtype).reshape(shape),)

    # -- memref ops that planned modules may contain -------------------------

    @impl(memref.LoadOp)
    def run_memref_load(
        self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues
    ) -> PythonValues:
        return (_element(args[0], args[1:]),)

    @impl(memref.StoreOp)
    def run_memref_store(
        self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues
    ) -> PythonValues:
        value, target, *indices = args
        target[tuple(int(i) for i in indices)] = value
        return ()

    @impl(memref.AllocOp)
    def run_memref_alloc(
        self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues
    ) -> PythonValues:
        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        dtype = _dtype(memref_type.get_element_type())
        return (self._fresh_array(dtype, _shape_of(memref_type, args)),)

    @impl(memref.DeallocOp)
    def run_memref_dealloc(
        self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues
    ) -> PythonValues:
        if self.poison:
            _poison(args[0])
        return ()

    @impl(memref.CopyOp)
    def run_memref_copy(
        self, interpreter: Interpreter, op: memref.CopyOp, args: PythonValues
    ) -> PythonValues:
        np.copyto(args[1], args[0])
        return ()

    @impl(bufferization.MaterializeInDestinationOp)
    def run_materialize_in_destination(
        self,
        interpreter: Interpreter,
        op: bufferization.MaterializeInDestinationOp,
        args: PythonValues,
    ) -> PythonValues:
        # The value-semantic form of a write into a memref (a TFLite variable).
        np.copyto(args[1], args[0])
        return ()

    @impl(memref.CastOp)
    def run_memref_cast(
        self, interpreter: Interpreter, op: memref.CastOp, args: PythonValues
    ) -> PythonValues:
        return (args[0],)

    @impl(memref.CollapseShapeOp)
    def run_collapse_shape(
        self, interpreter: Interpreter, op: memref.CollapseShapeOp, args: PythonValues
    ) -> PythonValues:
        return (_reshape_view(args[0], op.result.type),)

    @impl(memref.ExpandShapeOp)
    def run_expand_shape(
        self, interpreter: Interpreter, op: memref.ExpandShapeOp, args: PythonValues
    ) -> PythonValues:
        return (_reshape_view(args[0], op.result.type, [int(d) for d in args[1:]]),)

    @impl(memref.ReinterpretCastOp)
    def run_reinterpret_cast(
        self, interpreter: Interpreter, op: memref.ReinterpretCastOp, args: PythonValues
    ) -> PythonValues:
        source: np.ndarray = args[0]
        values = iter(int(v) for v in args[1:])
        offsets, shape, strides = (
            [d if d != DYNAMIC_INDEX else next(values) for d in static.get_values()]
            for static in (op.static_offsets, op.static_sizes, op.static_strides)
        )
        # Strides of a zero-element shape are immaterial (MLIR gives [0, 0, 1]).
        if offsets != [0] or (prod(shape) and strides != _row_major(shape)):
            raise ExecutionError(
                f"memref.reinterpret_cast: offset {offsets} strides {strides} for sizes "
                f"{shape}: only zero-offset, row-major casts run"
            )
        return (source.reshape(-1)[: prod(shape)].reshape(shape),)

    @impl(memref.DimOp)
    def run_memref_dim(
        self, interpreter: Interpreter, op: memref.DimOp, args: PythonValues
    ) -> PythonValues:
        return (np.shape(args[0])[int(args[1])],)

    @impl(tensor.DimOp)
    def run_tensor_dim(
        self, interpreter: Interpreter, op: tensor.DimOp, args: PythonValues
    ) -> PythonValues:
        return (np.shape(args[0])[int(args[1])],)

    @impl(memref.ViewOp)
    def run_view(
        self, interpreter: Interpreter, op: memref.ViewOp, args: PythonValues
    ) -> PythonValues:
        source: np.ndarray = args[0]
        shift = int(args[1])
        memref_type = op.result.type
        assert isinstance(memref_type, MemRefType)
        dtype = _dtype(memref_type.get_element_type())
        shape = _shape_of(memref_type, args[2:])
        return (_typed_view(source.reshape(-1)[shift:], dtype, shape),)


def _layout_error(error: ParametricLayoutError) -> str:
    """A parametric plan that does not make an offset program, naming the storage."""
    if isinstance(error.op, AllocStorageOp):
        return f"storage {describe(error.op.storage)}: {error}"
    return str(error)


def _row_major(shape: Sequence[int]) -> list[int]:
    strides: list[int] = []
    running = 1
    for dim in reversed(shape):
        strides.append(running)
        running *= max(dim, 1)
    return list(reversed(strides))


def _reshape_view(
    source: np.ndarray, result_type: Attribute, dynamic: Sequence[int] = ()
) -> np.ndarray:
    assert isinstance(result_type, MemRefType)
    view = source.view()
    view.shape = _shape_of(result_type, dynamic)  # raises instead of copying if no view is possible
    return view


def _check_argument(index: int, value: Any, value_type: Attribute, name: str) -> Any:
    spec = _shaped_spec(value_type)
    if spec is None:
        return value
    array = np.asarray(value)
    dtype, shape = spec
    if (
        array.dtype != dtype
        or len(array.shape) != len(shape)
        or any(d >= 0 and d != a for d, a in zip(shape, array.shape))
    ):
        raise ExecutionError(
            f"argument #{index} of @{name} is {value_type}, got {_describe_array(array)}"
        )
    return np.array(array, order="C", copy=True)


def checked_arguments(
    module: ModuleOp, name: str, inputs: Sequence[Any]
) -> tuple[func.FuncOp, list[Any]]:
    """``@name`` of ``module`` and ``inputs`` checked against its argument
    types (C-ordered copies of the arrays), or an ``ExecutionError``."""
    function = SymbolTable.lookup_symbol(module, name)
    if not isinstance(function, func.FuncOp) or function.is_declaration:
        raise ExecutionError(f"the module has no function @{name} with a body")
    argument_types = function.function_type.inputs.data
    if len(inputs) != len(argument_types):
        raise ExecutionError(
            f"@{name} takes {len(argument_types)} arguments, {len(inputs)} were given"
        )
    return function, [
        _check_argument(i, v, t, name) for i, (v, t) in enumerate(zip(inputs, argument_types))
    ]


def interpret(
    module: ModuleOp,
    function: func.FuncOp,
    arguments: Sequence[Any],
    functions: InterpreterFunctions,
    listeners: Iterable[Interpreter.Listener] = (),
) -> list[Any]:
    """Call ``function`` with xDSL's func/arith/scf/cf implementations and
    ``functions`` (memplan's ops and kernels) over them; copies of the results.
    An xDSL diagnostic becomes a one-line ``ExecutionError``."""
    interpreter = Interpreter(module, index_bitwidth=64, listeners=tuple(listeners))
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(CfFunctions())
    interpreter.register_implementations(functions, override=True)
    try:
        results = interpreter.call_op(function, tuple(arguments))
    except ExecutionError:
        raise
    except DiagnosticException as error:
        message = str(error).strip().splitlines()
        raise ExecutionError(message[0] if message else type(error).__name__) from error
    return [np.array(r, copy=True) if isinstance(r, np.ndarray) else r for r in results]


def run_function(
    module: ModuleOp,
    inputs: Sequence[Any],
    *,
    kernels: KernelRegistry,
    name: str = "main",
    globals_data: Mapping[str, np.ndarray] | None = None,
    poison: bool = True,
    trace: bool = False,
    pinned: bool = True,
    listeners: Iterable[Interpreter.Listener] = (),
) -> ExecutionResult:
    """Run ``@name`` of ``module`` on ``inputs``.

    ``globals_data`` gives the data of `memref.global`s by symbol (it wins
    over an initial value). With ``pinned=False`` every storage is its own
    allocation, its pin ignored (the planned module as it was before pools
    were assigned). The results are copies, safe to keep after the pools
    are gone.
    """
    function, arguments = checked_arguments(module, name, inputs)
    calls: list[KernelCall] | None = [] if trace else None
    memory = MemoryFunctions(kernels, globals_data or {}, poison, calls, pinned)
    memory.enter_function(function, arguments)
    outputs = interpret(module, function, arguments, memory, listeners)
    return ExecutionResult(
        outputs,
        calls,
        {pool: array.size for pool, array in sorted(memory.pools.items())},
        memory.unpinned_bytes,
    )


__all__ = [
    "POISON_BYTE",
    "ExecutionError",
    "ExecutionResult",
    "Kernel",
    "KernelCall",
    "KernelRegistry",
    "KernelResolver",
    "MemoryFunctions",
    "checked_arguments",
    "digest",
    "interpret",
    "kernel_of_shape_function",
    "run_function",
    "shape_function_kernel",
]
