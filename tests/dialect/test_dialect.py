"""Builders, accessors and verifiers of the ``memory`` dialect."""

from __future__ import annotations

from io import StringIO

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import arith, func, scf, test
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.ir import Block, Operation, Region
from xdsl.irdl import IRDLOperation, OpDef, traits_def
from xdsl.irdl.declarative_assembly_format import FormatProgram
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent
from xdsl.utils.exceptions import ParseError, VerifyException

from memplan.dialect import (
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    KillOp,
    Memory,
    PoolOp,
    StorageType,
)
from memplan.dialect.context import memplan_context
from memplan.dialect.types import default_alignment, element_byte_size, static_byte_size
from memplan.dialect.xdsl_speedups.irdl_caches import irdl_op_definition_verified_once
from memplan.tools.locations import parse_located


def _module_with(body: list, pools: list[PoolOp] | None = None) -> ModuleOp:
    """A module holding ``pools`` and one function whose body is ``body``."""
    function = func.FuncOp("f", ((), ()))
    function.body.block.add_ops([*body, func.ReturnOp()])
    return ModuleOp([*(pools or []), function])


def test_storage_type_sizes() -> None:
    assert StorageType(4096).byte_size == 4096
    assert StorageType(-1).is_dynamic
    assert StorageType(-1).byte_size is None
    assert StorageType(0).byte_size == 0  # a zero-element tensor's storage
    with pytest.raises(VerifyException, match="storage size must be non-negative, got -2"):
        StorageType(-2)


def test_byte_sizes_follow_tvm_rules() -> None:
    assert static_byte_size(MemRefType(f32, [16, 16])) == 1024
    assert static_byte_size(MemRefType(i1, [9])) == 9
    assert static_byte_size(MemRefType(f32, [-1, 4])) is None
    assert element_byte_size(MemRefType(i8, [3])) == 1
    assert default_alignment(MemRefType(f32, [3])) == 64
    with pytest.raises(VerifyException, match="no fixed bit width"):
        element_byte_size(MemRefType(IndexType(), [3]))


def test_builders_and_accessors() -> None:
    storage = AllocStorageOp(4096, alignment=128, device="npu", pools=["sram"])
    tensor = AllocTensorOp(storage, 1024, MemRefType(f32, [16, 16]))
    kill = KillOp(tensor)
    pool = PoolOp("sram", size=8192, targets=["cpu", "npu"])
    module = _module_with([storage, tensor, kill], [pool])
    module.verify()

    assert storage.byte_size == 4096
    assert storage.alignment_value == 128
    assert storage.device_name == "npu"
    assert storage.candidate_pools == ("sram",)
    assert storage.pinned is None
    storage.pin("sram", 4096)
    assert storage.pinned == ("sram", 4096)
    module.verify()
    assert tensor.static_offset == 1024
    assert pool.byte_size == 8192 and pool.target_names == ("cpu", "npu")
    assert pool.alignment_value == 16 and not pool.is_read_only


def test_tensor_align_builder_and_accessors() -> None:
    storage = AllocStorageOp(4096, alignment=128)
    plain = AllocTensorOp(storage, 96, MemRefType(f32, [4]))
    aligned = AllocTensorOp(storage, 0, MemRefType(f32, [4]), align=16)
    module = _module_with([storage, plain, aligned])
    module.verify()
    assert plain.required_alignment is None and plain.address_alignment == 32
    assert aligned.required_alignment == 16 and aligned.address_alignment == 128
    assert str(aligned).endswith("[0] align 16 : !memory.storage<4096> -> memref<4xf32>")
    assert "align" not in str(plain)
    aligned.set_required_alignment(None)
    assert aligned.required_alignment is None and "align" not in aligned.properties
    plain.set_required_alignment(64)
    with pytest.raises(VerifyException, match="offset 96 is not a multiple of its align 64"):
        module.verify()


@pytest.mark.parametrize(
    ("offset", "align", "message"),
    [
        (0, 24, "align must be a power of two, got 24"),
        (32, 64, "offset 32 is not a multiple of its align 64"),
        (256, 256, "align 256 is not guaranteed by the alignment 128 of its storage"),
    ],
)
def test_tensor_align_is_verified(offset: int, align: int, message: str) -> None:
    storage = AllocStorageOp(4096, alignment=128)
    tensor = AllocTensorOp(storage, offset, MemRefType(f32, [4]), align=align)
    with pytest.raises(VerifyException, match=message):
        _module_with([storage, tensor]).verify()


def test_default_properties_are_elided() -> None:
    storage = AllocStorageOp(64)
    assert storage.alignment_value == 64 and storage.device_name == "cpu"
    assert str(storage) == "%0 = memory.alloc_storage : !memory.storage<64>"


def test_dynamic_storage_builder() -> None:
    size = test.TestOp(result_types=[IndexType()])
    storage = AllocStorageOp(size)
    dims = test.TestOp(result_types=[IndexType()])
    tensor = AllocTensorOp(storage, 0, MemRefType(f32, [-1, 64]), [dims])
    _module_with([size, storage, dims, tensor]).verify()
    assert storage.byte_size is None


def test_tensor_overflow_message_names_numbers() -> None:
    storage = AllocStorageOp(4096)
    tensor = AllocTensorOp(storage, 3584, MemRefType(f32, [256]))
    with pytest.raises(
        VerifyException,
        match="tensor of 1024 bytes at offset 3584 overflows storage of 4096 bytes",
    ):
        _module_with([storage, tensor]).verify()


def test_pinning_past_pool_end_is_rejected() -> None:
    storage = AllocStorageOp(4096)
    storage.pin("sram", 8192)
    module = _module_with([storage], [PoolOp("sram", size=8192)])
    with pytest.raises(VerifyException, match="4096 bytes at offset 8192 overflow pool @sram"):
        module.verify()


def test_built_ops_read_their_operand_segments() -> None:
    """The builders share one segment-size array per shape and the named
    operands read it decoded once (``memdialect.ops``): what they give must
    be what the op holds, also after its sizes are set anew."""
    storage = AllocStorageOp(64)
    dims = [arith.ConstantOp.from_int_and_width(n, IndexType()) for n in (2, 4)]
    tensor = AllocTensorOp(storage, 0, MemRefType(f32, [-1, -1]), dims)
    other = AllocTensorOp(storage, 32, MemRefType(f32, [4]))
    invoke = InvokeOp("add", [tensor, other], [other])
    assert tensor.storage is storage.storage and tensor.dynamic_offset is None
    assert list(tensor.dynamic_dims) == [d.result for d in dims]
    assert other.properties["operandSegmentSizes"] == DenseArrayBase.from_list(i32, [1, 0, 0])
    assert list(invoke.ins) == [tensor.tensor, other.tensor]
    assert list(invoke.outs) == [other.tensor]
    invoke.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, [1, 2])
    assert list(invoke.ins) == [tensor.tensor]
    assert list(invoke.outs) == [other.tensor, other.tensor]
    module = _module_with([storage, *dims, tensor, other, invoke])
    with pytest.raises(VerifyException):  # the sizes no longer match the operands
        invoke.properties["operandSegmentSizes"] = DenseArrayBase.from_list(i32, [1, 1, 1])
        module.verify()


def test_generic_form_operand_segments_read_as_written() -> None:
    """A segment array parsed from the generic form (its own `i32`, not the
    one xDSL builds with) is read as written, not through the cache."""
    ctx = Context()
    ctx.load_dialect(Memory)
    ctx.load_dialect(func.Func)
    ctx.load_dialect(test.Test)
    text = """
    %a, %b = "test.op"() : () -> (memref<4xf32>, memref<4xf32>)
    "memory.invoke"(%a, %b, %a) <{callee = @k, operandSegmentSizes = array<i32: 2, 1>}> : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    "memory.invoke"(%a, %b, %a) <{callee = @k, operandSegmentSizes = array<i32: 1, 2>}> : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    """
    module = Parser(ctx, text).parse_module()
    values, first, second = module.ops
    a, b = values.results
    assert isinstance(first, InvokeOp) and isinstance(second, InvokeOp)
    assert (list(first.ins), list(first.outs)) == ([a, b], [a])
    assert (list(second.ins), list(second.outs)) == ([a], [b, a])


def test_invoke_into_read_only_pool_is_rejected() -> None:
    storage = AllocStorageOp(64)
    storage.pin("flash", 0)
    tensor = AllocTensorOp(storage, 0, MemRefType(f32, [16]))
    invoke = InvokeOp("fill", [], [tensor])
    module = _module_with([storage, tensor, invoke], [PoolOp("flash", access="ro")])
    with pytest.raises(VerifyException, match="read-only pool @flash"):
        module.verify()


def test_cross_branch_use_is_rejected() -> None:
    """Built by hand: the parser's scoping would refuse this program."""
    condition = test.TestOp(result_types=[i1])
    storage = AllocStorageOp(64)
    tensor = AllocTensorOp(storage, 0, MemRefType(f32, [16]))
    use = InvokeOp("read", [tensor], [])
    branch = scf.IfOp(
        condition,
        [],
        Region(Block([storage, tensor, scf.YieldOp()])),
        Region(Block([use, scf.YieldOp()])),
    )
    module = _module_with([condition, branch])
    with pytest.raises(VerifyException, match="defined in one scf.if branch is used in the other"):
        module.verify()


def test_kill_after_use_in_same_block_is_fine() -> None:
    storage = AllocStorageOp(64)
    tensor = AllocTensorOp(storage, 0, MemRefType(f32, [16]))
    use = InvokeOp("read", [tensor], [])
    _module_with([storage, tensor, use, KillOp(tensor), KillOp(storage)]).verify()


def test_kill_loop_defined_inside_is_fine() -> None:
    """A storage allocated and killed in one iteration is not killed twice."""
    lower = arith.ConstantOp(IntegerAttr(0, IndexType()))
    upper = arith.ConstantOp(IntegerAttr(4, IndexType()))
    step = arith.ConstantOp(IntegerAttr(1, IndexType()))
    body = Block(arg_types=[IndexType()])
    with ImplicitBuilder(body):
        storage = AllocStorageOp(64)
        KillOp(storage)
        scf.YieldOp()
    loop = scf.ForOp(lower, upper, step, [], body)
    _module_with([lower, upper, step, loop]).verify()


def test_parse_and_generic_round_trip() -> None:
    ctx = Context()
    ctx.load_dialect(Memory)
    ctx.load_dialect(func.Func)
    text = """
    memory.pool @sram size 1024 align 32 targets ["cpu"] access rw used 192
    func.func @f() {
      %s = memory.alloc_storage align 128 pools [@sram] at @sram[128] : !memory.storage<64>
      %t = memory.alloc_tensor %s[4] : !memory.storage<64> -> memref<4xf32>
      memory.kill %s : !memory.storage<64>
      func.return
    }
    """
    module = Parser(ctx, text).parse_module()
    module.verify()
    pool = next(op for op in module.ops if isinstance(op, PoolOp))
    assert pool.used is not None and pool.used.value.data == 192
    assert isinstance(pool.sym_name, StringAttr)
    storage = next(op for op in module.walk() if isinstance(op, AllocStorageOp))
    assert storage.pinned == ("sram", 128)
    tensor = next(op for op in module.walk() if isinstance(op, AllocTensorOp))
    segments = tensor.properties["operandSegmentSizes"]
    assert isinstance(segments, DenseArrayBase)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"alignment": 64},
        {"alignment": 16, "device": "npu", "pools": ["sram", "dram"]},
        {"pin": ("sram", 128)},
        {"max_size": 4096},
    ],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_alloc_storage_builder_matches_the_generic_one(options: dict, dynamic: bool) -> None:
    # The builder skips IRDLOperation.__init__'s generic path: it must build
    # what that path builds from the same arguments.
    size_value = test.TestOp(result_types=[IndexType()]).results[0]
    built = AllocStorageOp(size_value if dynamic else 256, **options)
    generic = AllocStorageOp.__new__(AllocStorageOp)
    IRDLOperation.__init__(
        generic,
        operands=[[size_value] if dynamic else []],
        result_types=[StorageType(-1 if dynamic else 256)],
        properties=AllocStorageOp._properties(
            options.get("alignment"),
            options.get("device"),
            options.get("pools"),
            options.get("pin"),
            options.get("max_size"),
        ),
    )
    assert (built.operands, built.result_types, built.properties, built.attributes) == (
        generic.operands,
        generic.result_types,
        generic.properties,
        generic.attributes,
    )


def _parsed(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Memory)
    ctx.load_dialect(func.Func)
    ctx.load_dialect(test.Test)
    return Parser(ctx, text).parse_module()


def test_definition_is_checked_once_per_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ops alike in operand and result types, properties and attributes are
    checked against their IRDL definition once; an op that differs in any
    of them is checked again. (The type is one no other test uses: the
    signatures checked are kept across modules.)"""
    checked: list[str] = []
    check = OpDef.verify

    def counted(definition: OpDef, op: Operation) -> None:
        checked.append(op.name)
        check(definition, op)

    monkeypatch.setattr(OpDef, "verify", counted)
    module = _parsed("""
    %a, %b = "test.op"() : () -> (memref<3x5x7x11xf16>, memref<3x5x7x11xf16>)
    memory.kill %a : memref<3x5x7x11xf16>
    memory.kill %b : memref<3x5x7x11xf16>
    memory.kill %a : memref<3x5x7x11xf16>
    "memory.kill"(%a) {note = "other"} : (memref<3x5x7x11xf16>) -> ()
    """)
    module.verify()
    assert checked.count("memory.kill") == 2


def test_definition_failure_after_alike_op_is_reported() -> None:
    """An op whose segment sizes do not match its operands fails with
    xDSL's diagnostic, also right after an op with the same operand and
    result types passed (the sizes are a property: part of the signature)."""
    module = _parsed("""
    %s = "test.op"() : () -> !memory.storage<64>
    %t = "memory.alloc_tensor"(%s) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!memory.storage<64>) -> memref<4xf32>
    %u = "memory.alloc_tensor"(%s) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!memory.storage<64>) -> memref<4xf32>
    """)
    with pytest.raises(
        VerifyException, match=r"operand count \(1\) does not match with the total size \(2\)"
    ):
        module.verify()


def test_region_on_op_without_regions_is_reported_after_alike_op() -> None:
    """A region on an op defined without one is xDSL's error, also right
    after an op alike in everything else passed (the region count is part
    of the signature)."""
    module = _parsed("""
    %a = "test.op"() : () -> memref<13x3xi8>
    "memory.kill"(%a) : (memref<13x3xi8>) -> ()
    "memory.kill"(%a) ({
    }) : (memref<13x3xi8>) -> ()
    """)
    with pytest.raises(VerifyException, match="Expected 0 regions, but got 1"):
        module.verify()


def test_definition_checked_once_refuses_context_dependent_ops() -> None:
    """A trait that checks something (here `HasParent`) depends on more than
    the op's signature: the decorator refuses such a definition."""

    class PlacedOp(IRDLOperation):
        name = "memory.test_placed"
        traits = traits_def(HasParent(ModuleOp))

    with pytest.raises(TypeError, match="PlacedOp: its definition depends on more than"):
        irdl_op_definition_verified_once(PlacedOp)


def _generic_text(module: ModuleOp) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    return stream.getvalue()


_FORMATTED = """
func.func @f(%n: index) {
  %s = memory.alloc_storage : !memory.storage<64>
  %d = memory.alloc_storage(%n) : !memory.storage<?>
  %a = memory.alloc_tensor %s[0] {tag} : !memory.storage<64> -> memref<4xf32>
  %b = memory.alloc_tensor %s[16] : !memory.storage<64> -> memref<4xf32>
  %v = memory.alloc_tensor %d[%n](%n) align 32 : !memory.storage<?> -> memref<?xf32>
  memory.invoke @k ins(%a, %n : memref<4xf32>, index) outs(%b, %v : memref<4xf32>, memref<?xf32>)
  memory.invoke @k outs(%a : memref<4xf32>) {note = 1}
  func.return
}
"""


def test_format_parser_builds_ops_as_xdsl_builder_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """`memory.alloc_tensor` and `memory.invoke` parsed from their pretty
    form are built without xDSL's generic builder (segment arrays shared):
    the ops are the ones xDSL's builder makes, and ops of one operand
    layout share one segment array."""
    fast = _parsed(_FORMATTED)
    fast.verify()
    tensors = [op for op in fast.walk() if isinstance(op, AllocTensorOp)]
    assert (
        tensors[0].properties["operandSegmentSizes"] is tensors[1].properties["operandSegmentSizes"]
    )
    for op_class in (AllocTensorOp, InvokeOp):
        monkeypatch.setattr(op_class, "build", classmethod(IRDLOperation.build.__func__))
    generic = _parsed(_FORMATTED)
    assert _generic_text(fast) == _generic_text(generic)


def test_build_falls_back_to_xdsl_builder() -> None:
    """What the shared-segment builder does not take as it is (a bare value
    for an operand) goes to xDSL's builder, which also reports misuse."""
    storage = AllocStorageOp(64)
    tensor = AllocTensorOp.build(
        operands=[storage.storage, None, []],
        result_types=[MemRefType(f32, [4])],
        properties={"offset": IntegerAttr(0, 64)},
    )
    assert tensor.storage is storage.storage and tensor.static_offset == 0
    with pytest.raises(ValueError, match="Expected 3 operand, but got 1"):
        AllocTensorOp.build(operands=[[storage.storage]], result_types=[[MemRefType(f32, [4])]])


# Plain syntax (`memplan.dialect.xdsl_speedups.plain_syntax`): each op's
# plain printer must print what its assembly format prints, or leave the op
# to the format, and its reader must build what the format builds.

_PLAIN_ATTRIBUTES = [{}, {"note": IntegerAttr(1, 64)}, {"memory.inplace_of": IntegerAttr(0, 64)}]


@st.composite
def _printable_ops(draw: st.DrawFn) -> ModuleOp:
    """A module of `memory` ops in forms the plain printers take and forms they leave."""
    storage = AllocStorageOp(256)
    index = arith.ConstantOp.from_int_and_width(8, IndexType())
    body: list[Operation] = [storage, index]
    tensors: list[AllocTensorOp] = []
    for _ in range(draw(st.integers(1, 4))):
        dynamic = draw(st.sampled_from(["no", "offset", "dims"]))
        offset = draw(st.sampled_from([0, 4, 64, -4]))
        tensor = AllocTensorOp(
            storage,
            index if dynamic == "offset" else offset,
            MemRefType(f32, [DYNAMIC_INDEX, 4] if dynamic == "dims" else [4]),
            [index] if dynamic == "dims" else [],
            align=draw(st.sampled_from([None, 4, 16])),
        )
        tensor.attributes.update(draw(st.sampled_from(_PLAIN_ATTRIBUTES)))
        tensors.append(tensor)
        body.append(tensor)
    for _ in range(draw(st.integers(0, 3))):
        ins = draw(st.lists(st.sampled_from([*tensors, index]), max_size=3))
        outs = draw(st.lists(st.sampled_from(tensors), max_size=2))
        body.append(InvokeOp("k", ins, outs, dict(draw(st.sampled_from(_PLAIN_ATTRIBUTES)))))
    kill = KillOp(draw(st.sampled_from([*tensors, storage])))
    kill.attributes.update(draw(st.sampled_from(_PLAIN_ATTRIBUTES)))
    body.append(kill)
    return _module_with(body)


def _printed(module: ModuleOp) -> str:
    stream = StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


@given(_printable_ops())
def test_plain_printing_is_the_assembly_formats(module: ModuleOp) -> None:
    plain = _printed(module)
    with pytest.MonkeyPatch.context() as patch:
        for op_class in (AllocTensorOp, InvokeOp, KillOp):
            program = FormatProgram.from_str(
                op_class.assembly_format or "", op_class.get_irdl_definition()
            )
            patch.setattr(op_class, "print", lambda op, printer, p=program: p.print(printer, op))
        assert plain == _printed(module)


@given(_printable_ops())
def test_memory_lines_parse_as_the_assembly_formats(module: ModuleOp) -> None:
    """The plain readers read what the plain printers print (and
    leaves other forms to the format): the ops are the format's."""
    text = _printed(module)
    located = parse_located(memplan_context(), text, "in.mlir")[0]
    assert _generic_text(located) == _generic_text(Parser(memplan_context(), text).parse_module())


def test_memory_lines_are_read_in_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once its types were spelled, each common line skips the format's parser."""
    text = """
    func.func @f(%x: memref<4xf32>) {
      %s = memory.alloc_storage : !memory.storage<64>
      %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<4xf32>
      %u = memory.alloc_tensor %s[16] align 16 {k = 1 : i64} : !memory.storage<64> -> memref<4xf32>
      memory.invoke @k ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
      memory.invoke @k ins(%t : memref<4xf32>) outs(%u : memref<4xf32>) {k = 1 : i64}
      memory.kill %t : memref<4xf32>
      memory.kill %s : !memory.storage<64>
      func.return
    }
    """
    for op_class in (AllocTensorOp, InvokeOp, KillOp):
        monkeypatch.setattr(op_class, "parse", classmethod(_refuse_format))
    # The dictionary `{k = 1 : i64}` is first spelled on the second tensor:
    # the readers take dictionaries parsed before, so that one line is left.
    with pytest.raises(ParseError, match="memory.alloc_tensor went to its format's parser"):
        parse_located(memplan_context(), text, "in.mlir")
    text = text.replace("{k = 1 : i64} :", ":", 1).replace(
        "outs(%u : memref<4xf32>) {k = 1 : i64}", "outs(%u : memref<4xf32>)"
    )
    module = parse_located(memplan_context(), text, "in.mlir")[0]
    assert len([op for op in module.walk() if op.name.startswith("memory.")]) == 7


def _refuse_format(cls: type[Operation], parser: Parser) -> Operation:
    raise AssertionError(f"{cls.name} went to its format's parser")


@pytest.mark.parametrize(
    "rest",
    ["\n      outs(%t : memref<4xf32>)", "\n      // note\n      {k = 1 : i64}", " // note"],
)
def test_memory_line_going_on_after_a_break_is_the_formats(rest: str) -> None:
    """An invoke whose `outs` or dictionary follow on the next line (as the
    format allows) is not cut at the line's end."""
    text = f"""
    func.func @f(%x: memref<4xf32>) {{
      %s = memory.alloc_storage : !memory.storage<64>
      %t = memory.alloc_tensor %s[0] {{k = 1 : i64}} : !memory.storage<64> -> memref<4xf32>
      memory.invoke @k ins(%x : memref<4xf32>){rest}
      func.return
    }}
    """
    located = parse_located(memplan_context(), text, "in.mlir")[0]
    assert _generic_text(located) == _generic_text(Parser(memplan_context(), text).parse_module())
