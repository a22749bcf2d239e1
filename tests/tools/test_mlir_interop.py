"""MLIR interop: ``import-memref`` and ``lower-to-memref``.

Properties of the two passes on generated bufferized functions (sizes,
alignments, dynamic size arithmetic, import-then-lower round trip, the full
pipeline giving one arena no larger than the allocations it replaces), the
diagnostics through ``memplan-opt``, and upstream ``mlir-opt`` accepting the
output (skipped when MLIR 22 is not installed; lit's e2e suite runs it too).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.parser import Parser

from memplan.dialect.context import memplan_context
from memplan.dialect.ops import AllocStorageOp, AllocTensorOp, KillOp
from memplan.passes.import_memref import ImportMemrefPass
from memplan.passes.insert_kills import InsertKillsPass
from memplan.passes.lower_to_memref import LowerToMemrefPass
from memplan.passes.usmp import UsmpPass
from memplan.passes.verify_plan import VerifyPlanPass
from memplan.tools.memplan_opt import main
from memplan_testing import examples

MLIR_OPT = Path("/usr/lib/llvm-22/bin/mlir-opt")
needs_mlir = pytest.mark.skipif(not MLIR_OPT.exists(), reason="MLIR 22 is not installed")

ELEMENTS = {"i1": 1, "i8": 1, "f16": 2, "i32": 4, "f32": 4, "f64": 8}


def parse(text: str) -> ModuleOp:
    return Parser(memplan_context(allow_unregistered=True), text).parse_module()


def ops_named(module: ModuleOp, name: str) -> list[Operation]:
    return [op for op in module.walk() if op.name == name]


shapes = st.lists(st.integers(1, 6), min_size=0, max_size=3)
alignments = st.one_of(st.none(), st.sampled_from([1, 8, 16, 64, 128, 256]))


@settings(max_examples=examples(60), deadline=None)
@given(shape=shapes, element=st.sampled_from(sorted(ELEMENTS)), alignment=alignments)
def test_import_sizes_and_alignments(shape: list[int], element: str, alignment: int | None) -> None:
    """A static alloc becomes a storage of prod(shape) * element bytes, with the
    alloc's alignment or else max(64, element bytes)."""
    memref_type = f"memref<{'x'.join(map(str, shape))}{'x' if shape else ''}{element}>"
    attr = "" if alignment is None else f" {{alignment = {alignment} : i64}}"
    module = parse(
        f"""func.func @f() {{
  %a = memref.alloc(){attr} : {memref_type}
  "test.op"(%a) : ({memref_type}) -> ()
  func.return
}}"""
    )
    ImportMemrefPass().apply(memplan_context(allow_unregistered=True), module)
    module.verify()
    (storage,) = [op for op in module.walk() if isinstance(op, AllocStorageOp)]
    (tensor,) = [op for op in module.walk() if isinstance(op, AllocTensorOp)]
    count = 1
    for dim in shape:
        count *= dim
    assert storage.byte_size == count * ELEMENTS[element]
    assert storage.alignment_value == (alignment if alignment is not None else 64)
    assert tensor.static_offset == 0
    assert str(tensor.tensor_type) == memref_type
    assert not ops_named(module, "memref.alloc")


def _evaluate(value: SSAValue, arguments: dict[BlockArgument, int]) -> int:
    """The integer an index value computed by arith.constant/muli holds."""
    if isinstance(value, BlockArgument):
        return arguments[value]
    owner = value.owner
    if isinstance(owner, arith.ConstantOp):
        assert isinstance(owner.value, IntegerAttr)
        return owner.value.value.data
    assert isinstance(owner, arith.MuliOp), owner
    return _evaluate(owner.lhs, arguments) * _evaluate(owner.rhs, arguments)


@settings(max_examples=examples(60), deadline=None)
@given(
    dims=st.lists(st.one_of(st.none(), st.integers(1, 5)), min_size=1, max_size=3).filter(
        lambda dims: None in dims
    ),
    element=st.sampled_from(sorted(ELEMENTS)),
    values=st.lists(st.integers(0, 9), min_size=3, max_size=3),
)
def test_dynamic_size_is_bytes_of_the_runtime_shape(
    dims: list[int | None], element: str, values: list[int]
) -> None:
    """The size operand of an imported dynamic alloc evaluates to the bytes of
    the shape the dims take at run time."""
    dynamic = [i for i, dim in enumerate(dims) if dim is None]
    text_dims = "x".join("?" if dim is None else str(dim) for dim in dims)
    memref_type = f"memref<{text_dims}x{element}>"
    names = ", ".join(f"%d{i}" for i in range(len(dynamic)))
    module = parse(
        f"""func.func @f(%d0: index, %d1: index, %d2: index) {{
  %a = memref.alloc({names}) : {memref_type}
  "test.op"(%a) : ({memref_type}) -> ()
  func.return
}}"""
    )
    ImportMemrefPass().apply(memplan_context(allow_unregistered=True), module)
    module.verify()
    (storage,) = [op for op in module.walk() if isinstance(op, AllocStorageOp)]
    function = next(op for op in module.walk() if op.name == "func.func")
    arguments = dict(zip(function.regions[0].blocks[0].args, values))
    assert storage.dynamic_size is not None
    expected = ELEMENTS[element]
    runtime = iter(values)
    for dim in dims:
        expected *= next(runtime) if dim is None else dim
    assert _evaluate(storage.dynamic_size, arguments) == expected


@st.composite
def straight_line_programs(draw: st.DrawFn) -> tuple[str, int, list[tuple[str, int]]]:
    """A function allocating buffers, using them, and deallocating some of them
    after their last use: its text, the number of deallocs, and each
    buffer's (type, bytes)."""
    count = draw(st.integers(1, 6))
    buffers = [
        (f"memref<{draw(st.integers(1, 8))}x{element}>", element)
        for element in draw(
            st.lists(st.sampled_from(sorted(ELEMENTS)), min_size=count, max_size=count)
        )
    ]
    lines: list[str] = []
    live: list[int] = []
    deallocs = 0
    for index, (memref_type, _) in enumerate(buffers):
        lines.append(f"  %b{index} = memref.alloc() : {memref_type}")
        live.append(index)
        for used in draw(st.lists(st.sampled_from(live), max_size=3)):
            lines.append(f'  "test.op"(%b{used}) : ({buffers[used][0]}) -> ()')
        if draw(st.booleans()):
            freed = draw(st.sampled_from(live))
            live.remove(freed)
            lines.append(f"  memref.dealloc %b{freed} : {buffers[freed][0]}")
            deallocs += 1
    text = "func.func @f() {\n" + "\n".join(lines) + "\n  func.return\n}\n"
    sizes = []
    for memref_type, element in buffers:
        elements = int(memref_type.split("<")[1].split("x")[0])
        sizes.append((memref_type, elements * ELEMENTS[element]))
    return text, deallocs, sizes


@settings(max_examples=examples(60), deadline=None)
@given(program=straight_line_programs())
def test_import_then_lower_gives_the_same_allocations(
    program: tuple[str, int, list[tuple[str, int]]],
) -> None:
    """Without a plan, import-memref then lower-to-memref turns each alloc of
    T into an alloc of its bytes viewed as T, and each dealloc into a dealloc
    of those bytes at the same place; nothing else changes."""
    text, deallocs, sizes = program
    module = parse(text)
    original_users = [op.name for op in module.walk()]
    ImportMemrefPass().apply(memplan_context(allow_unregistered=True), module)
    module.verify()
    assert len([op for op in module.walk() if isinstance(op, KillOp)]) == deallocs
    LowerToMemrefPass().apply(memplan_context(allow_unregistered=True), module)
    module.verify()
    assert not [op for op in module.walk() if op.name.startswith("memory.")]
    allocs = [op for op in module.walk() if isinstance(op, memref.AllocOp)]
    views = [op for op in module.walk() if isinstance(op, memref.ViewOp)]
    assert [str(op.memref.type) for op in allocs] == [f"memref<{b}xi8>" for _, b in sizes]
    assert [str(op.result.type) for op in views] == [t for t, _ in sizes]
    for alloc, view in zip(allocs, views):
        assert view.source is alloc.memref
        assert alloc.alignment is not None and alloc.alignment.value.data == 64
    # Same op sequence once the view and its offset constant are folded away;
    # a buffer never deallocated is freed at the end of the function.
    lowered_users = [
        op.name for op in module.walk() if op.name not in ("memref.view", "arith.constant")
    ]
    never_freed = len(sizes) - deallocs
    assert lowered_users == [
        *original_users[:-1],
        *["memref.dealloc"] * never_freed,
        "func.return",
    ]


BUFFERIZED_CHAIN = """\
func.func @chain(%x: memref<64xf32>, %i: index) -> f32 {
  %a = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %v0 = memref.load %x[%i] : memref<64xf32>
  memref.store %v0, %a[%i] : memref<64xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %v1 = memref.load %a[%i] : memref<64xf32>
  memref.store %v1, %b[%i] : memref<64xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %v2 = memref.load %b[%i] : memref<64xf32>
  memref.store %v2, %c[%i] : memref<64xf32>
  %d = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %v3 = memref.load %c[%i] : memref<64xf32>
  memref.store %v3, %d[%i] : memref<64xf32>
  %r = memref.load %d[%i] : memref<64xf32>
  func.return %r : f32
}
"""


def test_pipeline_gives_one_arena_at_the_lower_bound() -> None:
    """import-memref, insert-kills, usmp, verify-plan, lower-to-memref on a
    chain of four 256-byte buffers, each read once by the next: one arena of
    two buffers (512 B), every view in it, no memory op left."""
    module = parse(BUFFERIZED_CHAIN)
    ctx = memplan_context(allow_unregistered=True)
    for pipeline_pass in (
        ImportMemrefPass(),
        InsertKillsPass(),
        UsmpPass(),
        VerifyPlanPass(),
        LowerToMemrefPass(),
    ):
        pipeline_pass.apply(ctx, module)
        module.verify()
    (arena,) = [op for op in module.walk() if isinstance(op, memref.AllocOp)]
    assert str(arena.memref.type) == "memref<512xi8>"
    views = [op for op in module.walk() if isinstance(op, memref.ViewOp)]
    assert len(views) == 4 and all(view.source is arena.memref for view in views)
    assert len(ops_named(module, "memref.dealloc")) == 1
    assert not [op for op in module.walk() if op.name.startswith("memory.")]


def _memplan_opt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *flags: str
) -> tuple[int, str, str]:
    source = tmp_path / "input.mlir"
    source.write_text(text)
    code = main([str(source), *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_unplanned_pool_is_a_diagnostic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _memplan_opt(
        capsys,
        tmp_path,
        "memory.pool @dram\nfunc.func @f() {\n"
        "  %s = memory.alloc_storage at @dram[0] : !memory.storage<64>\n  func.return\n}\n",
        "--lower-to-memref",
    )
    assert code == 1
    assert "pool @dram has neither a size nor a used size: run usmp first" in err
    assert "Traceback" not in err


def test_pool_mode_option_is_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _memplan_opt(
        capsys, tmp_path, "func.func @f() {\n  func.return\n}\n", "--lower-to-memref=pool-mode=heap"
    )
    assert code == 1
    assert "heap" in err and "Traceback" not in err


def test_import_is_idempotent(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, once, _ = _memplan_opt(capsys, tmp_path, BUFFERIZED_CHAIN, "--import-memref")
    assert code == 0
    code, twice, _ = _memplan_opt(
        capsys, tmp_path, BUFFERIZED_CHAIN, "--import-memref", "--import-memref"
    )
    assert code == 0 and once == twice


def test_lower_leaves_ir_without_memory_ops_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, before, _ = _memplan_opt(capsys, tmp_path, BUFFERIZED_CHAIN)
    code2, after, _ = _memplan_opt(capsys, tmp_path, BUFFERIZED_CHAIN, "--lower-to-memref")
    assert code == code2 == 0 and before == after


@needs_mlir
@pytest.mark.parametrize("mode", ["alloc", "arg", "global"])
@pytest.mark.parametrize("form", ["pretty", "generic"])
def test_lowered_pipeline_verifies_with_mlir_opt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mode: str, form: str
) -> None:
    """The planned and lowered chain passes mlir-opt 22 --verify-each."""
    flags = ["--import-memref", "--insert-kills", "--usmp", f"--lower-to-memref=pool-mode={mode}"]
    if form == "generic":
        flags.append("--print-op-generic")
    code, out, err = _memplan_opt(capsys, tmp_path, BUFFERIZED_CHAIN, *flags)
    assert code == 0, err
    result = subprocess.run(
        [str(MLIR_OPT), "--verify-each", "-"], input=out, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "memref.view" in result.stdout


@needs_mlir
def test_planned_unlowered_generic_module_is_accepted_by_mlir_opt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _memplan_opt(
        capsys,
        tmp_path,
        BUFFERIZED_CHAIN,
        "--import-memref",
        "--insert-kills",
        "--usmp",
        "--print-op-generic",
    )
    assert code == 0, err
    assert '"memory.alloc_storage"' in out
    result = subprocess.run(
        [str(MLIR_OPT), "--allow-unregistered-dialect", "--verify-each", "-"],
        input=out,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
