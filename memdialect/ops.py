"""Operations of the ``memory`` dialect.

Every op has a pretty form (shown in its docstring), declared with xDSL's
``assembly_format`` and the custom directives below, and round-trips through
the generic form. Verifiers that need the enclosing function or module (pool
lookups, cross-branch uses) live in each op's ``verify_`` so that xDSL's
verify-after-each-pass checks every pass's output. Whether a use follows a
kill on some path is a property of paths, checked once per module by
``memdialect/kill_order.py`` (in ``memplan-opt``'s verification and in
``verify-plan``), not per kill.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    VariadicOperandVariable,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from memplan.dialect.op_model import is_function, is_loop, transitive_views, underlying_root
from memplan.dialect.regions import (
    ancestor_in_region,
    common_exclusive_op,
    reachable_blocks,
    symbol_table_of,
)
from memplan.dialect.size_expr import SizeExprError, parse_size_expr
from memplan.dialect.types import MAX_BYTES, StorageType, element_byte_size, static_byte_size
from memplan.dialect.xdsl_speedups.irdl_caches import (
    build_with_segments,
    decode_segments_once,
    irdl_op_definition_verified_once,
    printed_plain_first,
)
from memplan.dialect.xdsl_speedups.plain_syntax import ALLOC_TENSOR, INVOKE, KILL

DEFAULT_STORAGE_ALIGNMENT = 64
DEFAULT_POOL_ALIGNMENT = 16
DEFAULT_DEVICE = "cpu"

# Attributes of kernel declarations (`func.func private`) that memplan reads.
VIEW_ATTR = "memory.view"
"""Unit attribute of a view kernel: its one result aliases its one tensor
operand (`manifest-alloc` makes calls of it a `memref.reinterpret_cast`)."""
DEVICE_ATTR = "memory.device"
"""The device a kernel's results are allocated on (`on "npu"`)."""
SHAPE_FN_ATTR = "memory.shape_fn"
"""The function giving a kernel's dynamic result dims as `index` values."""
INPLACE_ATTR = "memory.inplace"
"""`array<i64: out, in, ...>`, (result, operand) index pairs: the kernel is
correct when that result occupies exactly the bytes of that operand (same
storage, same offset; the result no larger). `manifest-alloc` then lets the
result take the operand's storage when the operand dies at the call."""
MAX_SHAPES_ATTR = "memory.max_shapes"
"""On a kernel call with dynamic result dims: `[array<i64: ...>, ...]`, one
upper-bound shape per result (static dims repeated). `manifest-alloc` gives
each dynamic result's storage the bytes of its bound as `max`."""
DIM_RANGES_ATTR = "memory.dim_ranges"
"""On `@main` of an import given ranges: `{H = array<i64: 32, 640>, ...}`,
the range every bounded dynamic dim of the inputs takes, by the name the
importer's `--upper-bound` gives it (the lower end 1 unless
`--lower-bound` raises it; the ONNX importer records it with any
`--upper-bound`, the TFLite importer with `--lower-bound`). Plans hold for
every size in it; `memplan-run` refuses a size outside it."""
DIM_SYMBOLS_ATTR = "memory.dim_symbols"
"""On `@main` beside `memory.dim_ranges`: `{H = array<i64: ARG, AXIS>,
...}`, where each ranged dim is read at run time: dim ``AXIS`` of argument
``ARG`` (the first graph input and axis that carries it)."""
DIM_EXPRS_ATTR = "memory.dim_exprs"
"""On a value-semantic kernel call with dynamic results: `[["N", "16"],
...]`, one array per result holding one size expression
(`memplan.dialect.size_expr`'s text form) per dim, equal to that dim at run
time for every dim value in `memory.dim_ranges`. Present only when every
dim of every result has one."""
RESERVE_ATTR = "memory.reserve"
"""On a dynamic `memory.alloc_storage` with `max`: `"4*N*16"`, the bytes of
the storage as a size expression of the dims of the enclosing function's
`memory.dim_ranges`, at least its size operand at run time and, at the
ranges' upper ends, at most its `max` (monotone, so at most `max`
everywhere in the ranges)."""
SOURCE_NAMES_ATTR = "memory.source_names"
"""On a kernel call (and the `memory.invoke` `manifest-alloc` makes of it):
`["conv2d/Relu", ...]`, the name each result has in the model it was
imported from. Reports name tensors and storages after them (the SSA names
lose the model's `_1` suffixes when IR is printed and parsed again)."""
SOURCE_IDS_ATTR = "memory.source_ids"
"""Alongside `memory.source_names`: `array<i64: ...>`, each result's index
in the source model (a TFLite tensor index)."""
INPLACE_OF_ATTR = "memory.inplace_of"
"""On a `memory.alloc_tensor` `manifest-alloc` carved in place: the operand
index of the invoke whose bytes it takes (`verify-plan` checks it)."""


@lru_cache(maxsize=4096)
def i64_attr(value: int) -> IntegerAttr:
    """``IntegerAttr(value, 64)``, shared."""
    # Attributes are immutable, and building one runs xDSL's checks: a plan
    # has few distinct offsets, sizes and alignments, so share them.
    return IntegerAttr(value, 64)


def inplace_pairs(decl: Operation | None) -> tuple[tuple[int, int], ...]:
    """The (result, operand) pairs a kernel declaration's `memory.inplace`
    lists, in order (none without the attribute or a declaration)."""
    attr = decl.attributes.get(INPLACE_ATTR) if decl is not None else None
    if not isinstance(attr, DenseArrayBase):
        return ()
    values = [int(v) for v in attr.get_values()]
    return tuple(zip(values[::2], values[1::2]))


def _parse_byte_count(parser: Parser, what: str, signed: bool) -> IntegerAttr:
    start = parser.pos
    value = parser.parse_integer(allow_negative=signed, allow_boolean=False)
    if not -MAX_BYTES - 1 <= value <= MAX_BYTES:
        parser.raise_error(f"{what} {value} exceeds 2^63-1 bytes", start, parser.pos)
    return i64_attr(value)


@irdl_custom_directive
class ByteCount(CustomDirective):
    """`custom<ByteCount>($prop)`: an i64 property written as a bare integer
    (a size, offset, alignment or `used`, in bytes).

    Beyond 2^63-1 is an error at the literal, not a wrapped negative number
    (xDSL's `IntegerAttr` wraps a signless i64 above 2^63-1). Sizes and
    alignments take no sign; `max` and offsets may be negative, for the
    verifier to report with the value's name.
    """

    value: AttributeVariable

    # Property -> (what the error calls it, whether a sign is accepted).
    MEANINGS: ClassVar[dict[str, tuple[str, bool]]] = {
        "size": ("pool size", False),
        "alignment": ("alignment", False),
        "align": ("alignment", False),
        "used": ("used", False),
        "max_size": ("max", True),
        "offset": ("offset", True),
    }

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.value.is_present(op)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, _parse_byte_count(parser, *self.MEANINGS[self.value.name]))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.value.get(op)
        if not isinstance(attr, IntegerAttr):
            return
        state.print_whitespace(printer)
        printer.print_int(attr.value.data)


@irdl_custom_directive
class AccessMode(CustomDirective):
    """`custom<AccessMode>($access)`: a pool's access mode, the bare word `rw` or `ro`."""

    access: AttributeVariable

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.access.is_present(op)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        mode = parser.expect(
            lambda: parser.parse_optional_keyword_in(("rw", "ro")),
            "expected access mode 'rw' or 'ro'",
        )
        self.access.set(state, StringAttr(mode))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.access.get(op)
        if not isinstance(attr, StringAttr):
            return
        state.print_whitespace(printer)
        printer.print_string(attr.data)


@irdl_custom_directive
class StringLiteral(CustomDirective):
    """`custom<StringLiteral>($prop)`: a string property, which must be written
    as a string literal (a generic attribute would take `5 : !memory.storage<64>`
    as one typed integer)."""

    value: AttributeVariable

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.value.is_present(op)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, StringAttr(parser.parse_str_literal()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.value.get(op)
        if not isinstance(attr, StringAttr):
            return
        state.print_whitespace(printer)
        printer.print_string_literal(attr.data)


@irdl_custom_directive
class TypedOperands(CustomDirective):
    """`custom<TypedOperands>($ops, type($ops))`: `%a, %b : t1, t2`, one type per
    operand; a count mismatch is an error where the list ends, naming the group."""

    operands: VariadicOperandVariable
    types: TypeDirective

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return bool(self.operands.get(op))

    def set_empty(self, state: ParsingState) -> None:
        self.operands.set(state, ())
        self.types.set(state, ())

    def parse(self, parser: Parser, state: ParsingState) -> None:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(operands):
            parser.raise_error(
                f"{self.operands.name}: {len(operands)} operands but {len(types)} types",
                parser.pos,
            )
        self.operands.set(state, operands)
        self.types.set(state, types)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        operands = self.operands.get(op)
        if not operands:
            return
        state.print_whitespace(printer)
        printer.print_list(operands, printer.print_operand)
        printer.print_string(" : ")
        printer.print_list(operands.types, printer.print_attribute)


@irdl_custom_directive
class Pin(CustomDirective):
    """`custom<Pin>($pool, $offset)`: where a planned storage is, `@pool[offset]`."""

    pool: AttributeVariable
    offset: AttributeVariable

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.pool.is_present(op)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.pool.set(state, SymbolRefAttr(parser.parse_symbol_name()))
        parser.parse_punctuation("[")
        self.offset.set(state, _parse_byte_count(parser, *ByteCount.MEANINGS["offset"]))
        parser.parse_punctuation("]")
        # The generic form lists properties in their definition order (as
        # MLIR's does): `max` is written before `at` but defined after it.
        max_size = state.properties.pop("max_size", None)
        if max_size is not None:
            state.properties["max_size"] = max_size

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        pool, offset = self.pool.get(op), self.offset.get(op)
        if pool is None or not isinstance(offset, IntegerAttr):
            return
        state.print_whitespace(printer)
        printer.print_attribute(pool)
        printer.print_string(f"[{offset.value.data}]")


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def offset_alignment(base_alignment: int, offset: int) -> int:
    """The alignment ``offset`` bytes past a ``base_alignment``-aligned address is sure to have.

    The base's alignment, or the largest power of two dividing ``offset`` if
    that is smaller (``base_alignment`` itself at offset 0).
    """
    if offset == 0:
        return base_alignment
    return min(base_alignment, offset & -offset)


def describe(value: SSAValue) -> str:
    """A short name for ``value`` in diagnostics: ``%name`` or its producer."""
    if value.name_hint:
        return f"%{value.name_hint}"
    if isinstance(value, BlockArgument):
        return f"block argument #{value.index}"
    assert isinstance(value, OpResult)
    return f"result #{value.index} of {value.owner.name}"


def in_symbol_table(op: Operation) -> bool:
    """True when ``op`` sits inside a symbol table (a module): detached ops
    skip the checks that look symbols up."""
    return symbol_table_of(op) is not None


def lookup_pool(op: Operation, name: SymbolRefAttr | str) -> PoolOp | None:
    """The pool ``name`` seen from ``op``; ``None`` when there is none or
    ``op`` is not inside a symbol table.

    ``SymbolTable.lookup_symbol``'s answer for a flat name, without building
    a ``SymbolRefAttr``: the verifiers ask once per pinned output of every
    invoke."""
    table = symbol_table_of(op)
    if table is None:
        return None
    if isinstance(name, SymbolRefAttr):
        if name.nested_references.data:
            found = SymbolTable.lookup_symbol(op, name)
            return found if isinstance(found, PoolOp) else None
        name = name.root_reference.data
    for candidate in table.regions[0].block.ops:
        symbol = candidate.get_trait(SymbolOpInterface)
        if symbol is None:
            continue
        sym_name = symbol.get_sym_attr_name(candidate)
        if sym_name is not None and sym_name.data == name:
            return candidate if isinstance(candidate, PoolOp) else None
    return None


# ---------------------------------------------------------------------------
# memory.pool
# ---------------------------------------------------------------------------


@irdl_op_definition
class PoolOp(IRDLOperation):
    """A named memory that storages are planned into (USMP's PoolInfo).

    `size` absent means unbounded: the planner reports what it used. `align`
    (default 16) is the alignment of the pool's base address; every offset in
    it is a multiple of it. `targets` lists the devices that may access the
    pool (absent: all). `access` is `rw` (default) or `ro`: read-only pools
    hold constants only. After planning the op carries `used N`.

    Example:

    ```mlir
    memory.pool @sram size 262144 align 16 targets ["cpu", "npu"]
    memory.pool @flash align 16 access ro
    memory.pool @dram align 64 used 1048576
    ```
    """

    name = "memory.pool"

    sym_name = prop_def(SymbolNameConstraint())
    size = opt_prop_def(IntegerAttr[I64])
    alignment = opt_prop_def(
        IntegerAttr[I64], default_value=IntegerAttr(DEFAULT_POOL_ALIGNMENT, 64)
    )
    targets = opt_prop_def(ArrayAttr[StringAttr])
    access = opt_prop_def(StringAttr, default_value=StringAttr("rw"))
    used = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(SymbolOpInterface(), HasParent(ModuleOp))

    assembly_format = (
        "$sym_name (`size` custom<ByteCount>($size)^)? (`align` custom<ByteCount>($alignment)^)?"
        " (`targets` $targets^)? (`access` custom<AccessMode>($access)^)?"
        " (`used` custom<ByteCount>($used)^)? attr-dict"
    )
    custom_directives = (ByteCount, AccessMode)

    def __init__(
        self,
        sym_name: str,
        *,
        size: int | None = None,
        alignment: int | None = None,
        targets: Sequence[str] | None = None,
        access: str | None = None,
        used: int | None = None,
    ) -> None:
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "size": None if size is None else i64_attr(size),
                "alignment": None if alignment is None else i64_attr(alignment),
                "targets": None if targets is None else ArrayAttr(StringAttr(t) for t in targets),
                "access": None if access is None else StringAttr(access),
                "used": None if used is None else i64_attr(used),
            }
        )

    @property
    def pool_name(self) -> str:
        return self.sym_name.data

    @property
    def byte_size(self) -> int | None:
        return None if self.size is None else self.size.value.data

    @property
    def alignment_value(self) -> int:
        return self.alignment.value.data

    @property
    def target_names(self) -> tuple[str, ...] | None:
        return None if self.targets is None else tuple(t.data for t in self.targets)

    @property
    def is_read_only(self) -> bool:
        return self.access.data == "ro"

    def accepts_device(self, device: str) -> bool:
        names = self.target_names
        return names is None or device in names

    def verify_(self) -> None:
        name = f"pool @{self.pool_name}"
        if not _is_power_of_two(self.alignment_value):
            raise VerifyException(
                f"{name}: alignment must be a power of two, got {self.alignment_value}"
            )
        if self.size is not None and self.size.value.data <= 0:
            raise VerifyException(f"{name}: size must be positive, got {self.size.value.data}")
        if self.access.data not in ("rw", "ro"):
            raise VerifyException(f'{name}: access must be rw or ro, got "{self.access.data}"')
        if self.used is not None:
            used = self.used.value.data
            if used < 0:
                raise VerifyException(f"{name}: used must be non-negative, got {used}")
            if self.size is not None and used > self.size.value.data:
                raise VerifyException(
                    f"{name}: used {used} bytes exceeds its size of {self.size.value.data} bytes"
                )


# ---------------------------------------------------------------------------
# memory.alloc_storage
# ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _storage_type(size: int) -> StorageType:
    """``!memory.storage<size>`` (-1: ``?``), built once per size: types are immutable."""
    return StorageType(size)


def int_pairs(attr: Attribute | None) -> dict[str, tuple[int, int]]:
    """A dictionary of `array<i64: A, B>` entries (`memory.dim_ranges`,
    `memory.dim_symbols`) as pairs by name; entries of another form are
    left out (empty for a missing attribute)."""
    if not isinstance(attr, DictionaryAttr):
        return {}
    pairs: dict[str, tuple[int, int]] = {}
    for name, pair in attr.data.items():
        if isinstance(pair, DenseArrayBase):
            values = pair.get_values()
            if len(values) == 2 and all(isinstance(v, int) for v in values):
                pairs[name] = (int(values[0]), int(values[1]))
    return pairs


def _enclosing_dim_upper_ends(op: Operation) -> dict[str, int]:
    """The upper ends of the `memory.dim_ranges` of the function holding
    ``op`` (empty without one)."""
    parent = op.parent_op()
    while parent is not None and not is_function(parent):
        parent = parent.parent_op()
    if parent is None:
        return {}
    ranges = int_pairs(parent.attributes.get(DIM_RANGES_ATTR))
    return {name: upper for name, (_, upper) in ranges.items()}


@irdl_op_definition_verified_once
class AllocStorageOp(IRDLOperation):
    """Allocates one untyped byte buffer.

    The size is the result type's (`!memory.storage<N>`) or, for
    `!memory.storage<?>`, the `index` operand. `align` (default 64, a power of
    two) is the alignment of the buffer's address. `on` names the device that
    owns it (default "cpu"). `pools [...]` lists candidate pools in priority
    order; without it the candidates are all pools whose targets include the
    device, in module order. `at @pool[offset]` means the storage is pinned
    (planned) at that byte offset of the pool.

    `max N` bounds a dynamic size: the operand is at most N bytes at run
    time (checked when the op runs), so the planner can pin the storage at a
    static offset reserving N bytes, as TVM Relax plans symbolic shapes under
    `tir_var_upper_bound`. A dynamic storage without `max` is never pinned:
    it gets its own allocation at run time.

    Example:

    ```mlir
    %s  = memory.alloc_storage align 64 on "cpu" : !memory.storage<4096>
    %s2 = memory.alloc_storage(%n) align 64 : !memory.storage<?>
    %s4 = memory.alloc_storage(%n) max 16384 at @sram[0] : !memory.storage<?>
    %s3 = memory.alloc_storage align 64 pools [@dtcm, @sram] : !memory.storage<512>
    %p  = memory.alloc_storage align 64 at @sram[8192] : !memory.storage<4096>
    ```
    """

    name = "memory.alloc_storage"

    dynamic_size = opt_operand_def(IndexType())
    alignment = opt_prop_def(
        IntegerAttr[I64], default_value=IntegerAttr(DEFAULT_STORAGE_ALIGNMENT, 64)
    )
    device = opt_prop_def(StringAttr, default_value=StringAttr(DEFAULT_DEVICE))
    pools = opt_prop_def(ArrayAttr[SymbolRefAttr])
    pool = opt_prop_def(SymbolRefAttr)
    offset = opt_prop_def(IntegerAttr[I64])
    max_size = opt_prop_def(IntegerAttr[I64])
    storage = result_def(StorageType)

    traits = traits_def(MemoryAllocEffect())

    assembly_format = (
        "(`(` $dynamic_size^ `)`)? (`max` custom<ByteCount>($max_size)^)?"
        " (`align` custom<ByteCount>($alignment)^)? (`on` custom<StringLiteral>($device)^)? (`pools` $pools^)?"
        " (`at` custom<Pin>($pool, $offset)^)? attr-dict `:` type($storage)"
    )
    custom_directives = (ByteCount, StringLiteral, Pin)

    def __init__(
        self,
        size: int | SSAValue | Operation,
        *,
        alignment: int | None = None,
        device: str | None = None,
        pools: Sequence[str] | None = None,
        pin: tuple[str, int] | None = None,
        max_size: int | None = None,
    ) -> None:
        if isinstance(size, int):
            operands: list[SSAValue] = []
            result_type = _storage_type(size)
        else:
            operands = [SSAValue.get(size)]
            result_type = _storage_type(-1)
        properties = self._properties(alignment, device, pools, pin, max_size)
        # `Operation.__init__`, as `IRDLOperation.__init__` ends up calling it
        # for these arguments without its generic checks (a tenth of
        # `manifest-alloc`): absent properties stay absent, as there.
        Operation.__init__(
            self,
            operands=operands,
            result_types=[result_type],
            properties={name: value for name, value in properties.items() if value is not None},
        )

    @staticmethod
    def _properties(
        alignment: int | None,
        device: str | None,
        pools: Sequence[str] | None,
        pin: tuple[str, int] | None,
        max_size: int | None = None,
    ) -> dict[str, Attribute | None]:
        return {
            "alignment": None if alignment is None else i64_attr(alignment),
            "device": None if device is None else StringAttr(device),
            "pools": None if pools is None else ArrayAttr(SymbolRefAttr(p) for p in pools),
            "pool": None if pin is None else SymbolRefAttr(pin[0]),
            "offset": None if pin is None else i64_attr(pin[1]),
            "max_size": None if max_size is None else i64_attr(max_size),
        }

    @property
    def storage_type(self) -> StorageType:
        storage_type = self.results[0].type  # `storage`, without the accessor's cost
        assert isinstance(storage_type, StorageType)
        return storage_type

    @property
    def byte_size(self) -> int | None:
        return self.storage_type.byte_size

    @property
    def size_bound(self) -> int | None:
        """Bytes a plan reserves: the static size, else the `max` bound (``None``
        for an unbounded dynamic storage)."""
        if self.byte_size is not None:
            return self.byte_size
        return None if self.max_size is None else self.max_size.value.data

    @property
    def alignment_value(self) -> int:
        return self.alignment.value.data

    @property
    def device_name(self) -> str:
        return self.device.data

    @property
    def candidate_pools(self) -> tuple[str, ...]:
        return () if self.pools is None else tuple(p.root_reference.data for p in self.pools)

    @property
    def pinned(self) -> tuple[str, int] | None:
        """``(pool, offset)`` when the storage is planned, else ``None``."""
        if self.pool is None or self.offset is None:
            return None
        return self.pool.root_reference.data, self.offset.value.data

    def pin(self, pool: str, offset: int) -> None:
        """Pins this storage at ``offset`` in ``pool`` (the planner's output)."""
        self.pool = SymbolRefAttr(pool)
        self.offset = i64_attr(offset)

    def verify_(self) -> None:
        name = f"storage {describe(self.storage)}"
        align = self.alignment_value
        if not _is_power_of_two(align):
            raise VerifyException(f"{name}: alignment must be a power of two, got {align}")
        if self.storage_type.is_dynamic and self.dynamic_size is None:
            raise VerifyException(f"{name}: dynamic type !memory.storage<?> needs a size operand")
        if not self.storage_type.is_dynamic and self.dynamic_size is not None:
            raise VerifyException(f"{name}: static type {self.storage_type} takes no size operand")
        if (self.pool is None) != (self.offset is None):
            raise VerifyException(f"{name}: a pinned storage needs both a pool and an offset")
        if self.max_size is not None:
            bound = self.max_size.value.data
            if bound < 0:
                raise VerifyException(f"{name}: max {bound} must be non-negative")
            static = self.byte_size
            if static is not None and static > bound:
                raise VerifyException(
                    f"{name}: max {bound} is below its static size of {static} bytes"
                )
        pinned = self.pinned
        if pinned is not None:
            if self.size_bound is None:
                raise VerifyException(
                    f"{name}: a dynamic-size storage can only be pinned with a `max` bound"
                )
            pool_name, offset = pinned
            if offset < 0:
                raise VerifyException(f"{name}: negative offset {offset} in @{pool_name}")
            if offset % align:
                raise VerifyException(
                    f"{name}: offset {offset} in @{pool_name} is not a multiple of "
                    f"its alignment {align}"
                )
        self._verify_reserve()
        self._verify_pools()
        self._verify_uses_stay_in_region()

    def _verify_reserve(self) -> None:
        """`memory.reserve`: a size expression of the enclosing function's
        ranged dims, on a dynamic storage, at most `max` at the upper ends."""
        reserve = self.attributes.get(RESERVE_ATTR)
        if reserve is None:
            return
        name = f"storage {describe(self.storage)}"
        if not isinstance(reserve, StringAttr):
            raise VerifyException(f"{name}: {RESERVE_ATTR} must be a string, got {reserve}")
        if not self.storage_type.is_dynamic:
            raise VerifyException(
                f"{name}: {RESERVE_ATTR} is only for a dynamic storage, not {self.storage_type}"
            )
        try:
            expression = parse_size_expr(reserve.data)
        except SizeExprError as error:
            where = ""
            if error.column is not None and "column" not in str(error):
                where = f" at column {error.column + 1}"
            raise VerifyException(f"{name}: {RESERVE_ATTR}: {error}{where}") from None
        upper = _enclosing_dim_upper_ends(self)
        unknown = sorted(expression.symbols() - upper.keys())
        if unknown:
            known = ", ".join(f"'{s}'" for s in sorted(upper)) or "none"
            raise VerifyException(
                f"{name}: {RESERVE_ATTR} '{reserve.data}' reads dim '{unknown[0]}', which "
                f"is not in the function's {DIM_RANGES_ATTR} (dims: {known})"
            )
        if self.max_size is None:
            raise VerifyException(f"{name}: {RESERVE_ATTR} needs a `max` bound")
        bound = self.max_size.value.data
        largest = expression.evaluate(upper)
        if largest > bound:
            at = ", ".join(f"{s}={upper[s]}" for s in sorted(expression.symbols()))
            raise VerifyException(
                f"{name}: {RESERVE_ATTR} '{reserve.data}' is {largest} bytes at {at}, "
                f"above its max {bound}"
            )

    def _verify_pools(self) -> None:
        name = f"storage {describe(self.storage)}"
        references = list(self.pools.data) if self.pools is not None else []
        if self.pool is not None:
            references.append(self.pool)
        if not in_symbol_table(self):
            return
        pools: dict[SymbolRefAttr, PoolOp] = {}
        for reference in references:
            found = SymbolTable.lookup_symbol(self, reference)
            if not isinstance(found, PoolOp):
                raise VerifyException(f"{name}: unknown pool {reference}")
            pool = pools[reference] = found
            if not pool.accepts_device(self.device_name):
                raise VerifyException(
                    f'{name}: device "{self.device_name}" is not among the targets '
                    f"{list(pool.target_names or ())} of pool @{pool.pool_name}"
                )
        pinned = self.pinned
        if pinned is None or self.pool is None:
            return
        pool = pools[self.pool]
        offset = pinned[1]
        if offset % pool.alignment_value:
            raise VerifyException(
                f"{name}: offset {offset} is not a multiple of the alignment "
                f"{pool.alignment_value} of pool @{pool.pool_name}"
            )
        size = self.size_bound
        assert size is not None  # checked in verify_
        if pool.byte_size is not None and offset + size > pool.byte_size:
            raise VerifyException(
                f"{name}: {size} bytes at offset {offset} overflow pool "
                f"@{pool.pool_name} of {pool.byte_size} bytes"
            )
        # `used` is what a runtime allocates for the pool.
        if pool.used is not None and offset + size > pool.used.value.data:
            raise VerifyException(
                f"{name}: bytes [{offset}, {offset + size}) run past the used size of pool "
                f"@{pool.pool_name} ({pool.used.value.data} bytes)"
            )

    def _verify_uses_stay_in_region(self) -> None:
        region = self.parent_region()
        if region is None:
            return
        for value in transitive_views(self.storage):
            for use in value.uses:
                if ancestor_in_region(use.operation, region) is not None:
                    continue
                where = common_exclusive_op(self, use.operation)
                if where is not None:
                    raise VerifyException(
                        f"storage {describe(self.storage)} defined in one {where.name} branch "
                        f"is used in the other (by {use.operation.name})"
                    )
                raise VerifyException(
                    f"storage {describe(self.storage)} is used by {use.operation.name} "
                    "outside the region that defines it"
                )


# ---------------------------------------------------------------------------
# memory.alloc_tensor
# ---------------------------------------------------------------------------


@decode_segments_once
@printed_plain_first(ALLOC_TENSOR)
@irdl_op_definition_verified_once
class AllocTensorOp(IRDLOperation):
    """Carves a typed tensor (an identity-layout memref) out of a storage.

    The tensor starts at a byte offset of the storage, given as an integer or
    an `index` value. Dynamic dimensions of the result follow in parentheses.
    The offset must be a multiple of the element's byte size, and the tensor
    must fit in a static storage.

    `align N` (optional, a power of two) is the address alignment the tensor
    needs, when that is less than its place in the storage guarantees: a
    pass that moves the tensor into a more aligned storage (`coalesce`,
    `reuse`) records the alignment the tensor had, so that `usmp` can later
    give it a storage of its own aligned only that much. It must be
    guaranteed where the tensor is: `N` divides the storage's alignment and
    a static offset. Absent, the tensor needs what its place guarantees.

    Example:

    ```mlir
    %t = memory.alloc_tensor %s[1024] : !memory.storage<4096> -> memref<16x16xf32>
    %u = memory.alloc_tensor %s2[0](%d0) : !memory.storage<?> -> memref<?x64xf32>
    %v = memory.alloc_tensor %s2[%off] : !memory.storage<?> -> memref<8xf32>
    %w = memory.alloc_tensor %s[64] align 16 : !memory.storage<4096> -> memref<4xf32>
    ```
    """

    name = "memory.alloc_tensor"

    storage = operand_def(StorageType)
    dynamic_offset = opt_operand_def(IndexType())
    dynamic_dims = var_operand_def(IndexType())
    offset = opt_prop_def(IntegerAttr[I64])
    align = opt_prop_def(IntegerAttr[I64])
    tensor = result_def(base(MemRefType))

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryAllocEffect())

    assembly_format = (
        "$storage `[` ($dynamic_offset^) : (custom<ByteCount>($offset))? `]`"
        " (`` `(` $dynamic_dims^ `)`)? (`align` custom<ByteCount>($align)^)? attr-dict"
        " `:` type($storage) `->` type($tensor)"
    )
    custom_directives = (ByteCount,)

    def __init__(
        self,
        storage: SSAValue | Operation,
        offset: int | SSAValue | Operation,
        tensor_type: MemRefType,
        dynamic_dims: Sequence[SSAValue | Operation] = (),
        *,
        align: int | None = None,
    ) -> None:
        static = isinstance(offset, int)
        build_with_segments(
            self,
            [
                [SSAValue.get(storage)],
                [] if static else [SSAValue.get(offset)],
                [SSAValue.get(d) for d in dynamic_dims],
            ],
            [tensor_type],
            {
                "offset": i64_attr(offset) if isinstance(offset, int) else None,
                "align": None if align is None else i64_attr(align),
            },
        )

    @property
    def tensor_type(self) -> MemRefType:
        tensor_type = self.results[0].type  # `tensor`, without the accessor's cost
        assert isinstance(tensor_type, MemRefType)
        return tensor_type

    @property
    def static_offset(self) -> int | None:
        offset = self.offset
        return None if offset is None else offset.value.data

    def set_static_offset(self, offset: int) -> None:
        self.offset = i64_attr(offset)

    @property
    def required_alignment(self) -> int | None:
        """The `align` the tensor's address needs, or ``None`` when not given."""
        return None if self.align is None else self.align.value.data

    @property
    def address_alignment(self) -> int | None:
        """The alignment the tensor's address is sure to have where it is.

        The storage's alignment, or less at an offset that is a smaller
        power of two (``offset_alignment``); ``None`` for a dynamic offset or
        a storage that is not a ``memory.alloc_storage`` result.
        """
        owner = self.storage.owner
        offset = self.static_offset
        if offset is None or not isinstance(owner, AllocStorageOp):
            return None
        return offset_alignment(owner.alignment_value, offset)

    def set_required_alignment(self, align: int | None) -> None:
        """Sets (or, with ``None``, removes) the tensor's `align`."""
        self.align = None if align is None else i64_attr(align)

    def verify_(self) -> None:
        name = f"tensor {describe(self.tensor)}"
        memref = self.tensor_type
        if not isinstance(memref.layout, NoneAttr):
            raise VerifyException(f"{name}: {memref} must have the identity layout")
        element_bytes = element_byte_size(memref)
        dynamic_count = sum(1 for d in memref.get_shape() if d < 0)
        if dynamic_count != len(self.dynamic_dims):
            raise VerifyException(
                f"{name}: {memref} has {dynamic_count} dynamic dims but "
                f"{len(self.dynamic_dims)} dim operands are given"
            )
        if (self.offset is None) == (self.dynamic_offset is None):
            raise VerifyException(f"{name}: needs exactly one offset, static or dynamic")
        self._verify_align()
        offset = self.static_offset
        if offset is None:
            return
        if offset < 0:
            raise VerifyException(f"{name}: negative offset {offset}")
        if offset % element_bytes:
            raise VerifyException(
                f"{name}: offset {offset} is not a multiple of the element size "
                f"{element_bytes} of {memref.get_element_type()}"
            )
        storage_type = self.storage.type
        assert isinstance(storage_type, StorageType)
        tensor_bytes = static_byte_size(memref)
        storage_bytes = storage_type.byte_size
        if tensor_bytes is None or storage_bytes is None:
            return
        if offset + tensor_bytes > storage_bytes:
            raise VerifyException(
                f"{name}: tensor of {tensor_bytes} bytes at offset {offset} "
                f"overflows storage of {storage_bytes} bytes"
            )

    def _verify_align(self) -> None:
        """`align` is a power of two that the tensor's place guarantees."""
        align = self.required_alignment
        if align is None:
            return
        name = f"tensor {describe(self.tensor)}"
        if not _is_power_of_two(align):
            raise VerifyException(f"{name}: align must be a power of two, got {align}")
        offset = self.static_offset
        if offset is not None and offset % align:
            raise VerifyException(f"{name}: offset {offset} is not a multiple of its align {align}")
        # The address is the storage's plus the offset: only the storage's
        # alignment is known of the former, whatever the offset.
        owner = self.storage.owner
        if isinstance(owner, AllocStorageOp) and owner.alignment_value % align:
            raise VerifyException(
                f"{name}: align {align} is not guaranteed by the alignment "
                f"{owner.alignment_value} of its storage {describe(self.storage)}"
            )


# ---------------------------------------------------------------------------
# memory.invoke
# ---------------------------------------------------------------------------


@decode_segments_once
@printed_plain_first(INVOKE)
@irdl_op_definition_verified_once
class InvokeOp(IRDLOperation):
    """Destination-passing call of a kernel.

    The callee is a `func.func` declaration. `ins` are read (tensors or
    scalars), `outs` are written. Extra attributes (kernel parameters) follow
    in an attribute dictionary. Writing a tensor that lives in a read-only pool
    is an error.

    Example:

    ```mlir
    memory.invoke @conv2d ins(%x, %w : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>)
                          outs(%t : memref<1x4x6x6xf32>) {strides = [1, 1]}
    ```
    """

    name = "memory.invoke"

    callee = prop_def(SymbolRefAttr)
    ins = var_operand_def()
    outs = var_operand_def(base(MemRefType))

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    assembly_format = (
        "$callee (`ins` `(` custom<TypedOperands>($ins, type($ins))^ `)`)?"
        " (`outs` `(` custom<TypedOperands>($outs, type($outs))^ `)`)? attr-dict"
    )
    custom_directives = (TypedOperands,)

    def __init__(
        self,
        callee: str | SymbolRefAttr,
        ins: Sequence[SSAValue | Operation],
        outs: Sequence[SSAValue | Operation],
        attributes: dict[str, Attribute] | None = None,
    ) -> None:
        build_with_segments(
            self,
            [[SSAValue.get(v) for v in ins], [SSAValue.get(v) for v in outs]],
            [],
            {"callee": callee if isinstance(callee, SymbolRefAttr) else SymbolRefAttr(callee)},
            attributes,
        )

    def verify_(self) -> None:
        for out in self.outs:
            root = underlying_root(out)
            owner = root.owner
            if not isinstance(owner, AllocStorageOp):
                continue
            pinned = owner.pinned
            if pinned is None:
                continue
            pool = lookup_pool(self, pinned[0])
            if pool is not None and pool.is_read_only:
                raise VerifyException(
                    f"invoke of {self.callee} writes {describe(out)} in read-only pool "
                    f"@{pool.pool_name}"
                )


# ---------------------------------------------------------------------------
# memory.kill
# ---------------------------------------------------------------------------


@printed_plain_first(KILL)
@irdl_op_definition_verified_once
class KillOp(IRDLOperation):
    """Marks a storage or a tensor dead: no use may follow on any path.

    Killing a storage also ends every tensor carved from it. Killing a value
    twice on one path, killing a function argument, using a value (or a view
    of it) after its kill, and killing inside a loop a value defined outside
    it are errors. The verifier checks the kill alone (an argument, a loop);
    the paths after it are checked once per module by ``verify_kill_order``
    (``memplan-opt`` runs it with the verifier, and so does ``verify-plan``).

    Example:

    ```mlir
    memory.kill %t : memref<16x16xf32>
    memory.kill %s : !memory.storage<4096>
    ```
    """

    name = "memory.kill"

    # Any type here, checked in verify_: with the declarative format a
    # constraint would be checked before the operand's type is, so
    # `memory.kill %t : i32` of a memref %t would say "Unexpected attribute
    # i32" instead of naming the mismatch at %t.
    value = operand_def()

    traits = traits_def(MemoryFreeEffect())

    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue | Operation) -> None:
        super().__init__(operands=[SSAValue.get(value)])

    def verify_(self) -> None:
        # Only what the kill alone decides: uses and kills on the paths after
        # it are checked once per module by `verify_kill_order` (linear), which
        # memplan-opt's verification and verify-plan run.
        value = self.value
        if not isinstance(value.type, StorageType | MemRefType):
            raise VerifyException(
                f"cannot kill {describe(value)} of type {value.type}: "
                "only storages and memrefs are killed"
            )
        if isinstance(value, BlockArgument):
            parent = value.block.parent_op()
            if parent is not None and is_function(parent):
                raise VerifyException(f"cannot kill function argument {describe(value)}")
        owner = value.owner
        definition_block = owner if isinstance(owner, Block) else owner.parent_block()
        self._verify_not_in_loop(definition_block)

    def _verify_not_in_loop(self, definition_block: Block | None) -> None:
        # Walk out from the kill to the op holding the definition: a loop in
        # between re-runs the kill on a value that was defined only once.
        container = definition_block.parent_op() if definition_block else None
        current = self.parent_op()
        while current is not None and current is not container:
            if is_loop(current):
                raise VerifyException(
                    f"{describe(self.value)} is killed inside {current.name} but defined "
                    "outside it: the next iteration would use it after its kill"
                )
            current = current.parent_op()
        # The same for a CFG loop: a block that reaches itself again without
        # passing the definition runs the kill once per trip.
        if definition_block is None or definition_block.parent is None:
            return
        anchor = ancestor_in_region(self, definition_block.parent)
        anchor_block = anchor.parent_block() if anchor is not None else None
        if anchor_block is None or anchor_block is definition_block:
            return
        if anchor_block in reachable_blocks(anchor_block, definition_block):
            raise VerifyException(
                f"{describe(self.value)} is killed inside a cf loop but defined "
                "outside it: the next trip would kill it again"
            )
