"""The `manifest-alloc` pass, in process and through `memplan-opt`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnrankedTensorType,
    f32,
)
from xdsl.ir import Attribute, Block, Region
from xdsl.utils.exceptions import PassFailedException

from memplan.dialect import AllocStorageOp, AllocTensorOp, InvokeOp
from memplan.dialect.op_model import underlying_root
from memplan.passes import get_all_passes
from memplan.passes.manifest_alloc import ManifestAllocPass
from memplan.tools.memplan_opt import main as memplan_opt_main
from memplan_testing import examples, memplan_context, parse_module, run_passes

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
MLIR_OPT = Path("/usr/lib/llvm-22/bin/mlir-opt")


def _all_types(module: ModuleOp) -> list[Attribute]:
    types: list[Attribute] = []
    for op in module.walk():
        types.extend(v.type for v in (*op.operands, *op.results))
        for region in op.regions:
            for block in region.blocks:
                types.extend(block.arg_types)
        if isinstance(op, func.FuncOp):
            types.extend((*op.function_type.inputs, *op.function_type.outputs))
    return types


def _ops(module: ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def test_registered_under_its_name() -> None:
    pass_class = get_all_passes()["manifest-alloc"]()
    assert pass_class is ManifestAllocPass
    assert ManifestAllocPass.name == "manifest-alloc"


@pytest.mark.parametrize(
    ("example", "invokes", "storage_bytes", "views", "globals_"),
    [
        # 6 kernels: 3 x 1x128xf32 (512 B) + 3 x 1x10xf32 (40 B).
        ("mlp.mlir", 6, [512, 512, 512, 40, 40, 40], 0, 2),
        # 12 calls, one of them the `flatten` view: 11 invokes and storages.
        (
            "convnet.mlir",
            11,
            [32768, 32768, 32768, 8192, 16384, 16384, 16384, 4096, 40, 40, 40],
            1,
            4,
        ),
    ],
)
def test_examples(
    example: str, invokes: int, storage_bytes: list[int], views: int, globals_: int
) -> None:
    module = run_passes(parse_module((EXAMPLES / example).read_text()), "manifest-alloc")
    assert len(_ops(module, InvokeOp)) == invokes
    assert [s.byte_size for s in _ops(module, AllocStorageOp)] == storage_bytes
    assert all(s.alignment_value == 64 for s in _ops(module, AllocStorageOp))
    assert len(_ops(module, memref.ReinterpretCastOp)) == views
    assert len(_ops(module, memref.GlobalOp)) == globals_
    assert not any(isinstance(t, TensorType | UnrankedTensorType) for t in _all_types(module))


def test_convnet_view_aliases_the_pool_output() -> None:
    module = run_passes(parse_module((EXAMPLES / "convnet.mlir").read_text()), "manifest-alloc")
    (cast,) = _ops(module, memref.ReinterpretCastOp)
    root = underlying_root(cast.result)
    assert isinstance(root.owner, AllocStorageOp)
    assert root.name_hint == "p2_storage"
    dense = next(op for op in _ops(module, InvokeOp) if op.callee.string_value() == "dense_1024x10")
    assert dense.ins[0] is cast.result


@pytest.mark.parametrize("example", ["mlp.mlir", "convnet.mlir"])
def test_idempotent(example: str) -> None:
    once = str(run_passes(parse_module((EXAMPLES / example).read_text()), "manifest-alloc"))
    twice = str(run_passes(parse_module(once), "manifest-alloc"))
    assert once == twice


@settings(max_examples=examples(60), deadline=None)
@given(
    shape=st.lists(st.integers(1, 9), min_size=0, max_size=4),
    element=st.sampled_from(
        ["i1", "i3", "i8", "i12", "i16", "i32", "i64", "i1024", "f16", "bf16", "f32", "f64"]
    ),
)
def test_storage_size_and_alignment_rule(shape: list[int], element: str) -> None:
    dims = "".join(f"{d}x" for d in shape)
    text = f"""
    func.func private @k() -> tensor<{dims}{element}>
    func.func @f() -> tensor<{dims}{element}> {{
      %y = func.call @k() : () -> tensor<{dims}{element}>
      func.return %y : tensor<{dims}{element}>
    }}
    """
    module = run_passes(parse_module(text), "manifest-alloc")
    (storage,) = _ops(module, AllocStorageOp)
    (tensor,) = _ops(module, AllocTensorOp)
    bits = {"bf16": 16, "f16": 16, "f32": 32, "f64": 64}.get(element) or int(element[1:])
    element_bytes = (bits + 7) // 8
    count = 1
    for dim in shape:
        count *= dim
    assert storage.byte_size == count * element_bytes
    assert storage.alignment_value == max(64, element_bytes)
    assert tensor.static_offset == 0
    assert tensor.tensor_type.get_shape() == tuple(shape)


def test_declaration_attributes_follow_the_arguments() -> None:
    # xDSL 0.74 does not parse argument attributes of declarations, so the
    # declaration is built directly.
    tensor = TensorType(f32, [4])
    kernel = func.FuncOp(
        "k",
        FunctionType.from_lists([tensor, f32], [tensor]),
        Region(),
        "private",
        arg_attrs=ArrayAttr([DictionaryAttr({"kernel.in": StringAttr("x")}), DictionaryAttr({})]),
        res_attrs=ArrayAttr([DictionaryAttr({"kernel.out": StringAttr("y")})]),
    )
    block = Block(arg_types=[tensor, f32])
    call = func.CallOp("k", block.args, [tensor])
    block.add_ops([call, func.ReturnOp(call)])
    caller = func.FuncOp("f", FunctionType.from_lists([tensor, f32], [tensor]), Region(block))
    run_passes(ModuleOp([kernel, caller]), "manifest-alloc")
    memref_type = MemRefType(f32, [4])
    assert kernel.function_type == FunctionType.from_lists([memref_type, f32, memref_type], [])
    assert kernel.res_attrs is None
    assert kernel.arg_attrs is not None
    assert [dict(d.data) for d in kernel.arg_attrs] == [
        {"kernel.in": StringAttr("x")},
        {},
        {"kernel.out": StringAttr("y")},
    ]
    assert caller.function_type == FunctionType.from_lists([memref_type, f32], [memref_type])


BAD_INPUTS = {
    "unknown callee": (
        """
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
          %y = func.call @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """,
        "call to @nowhere: unknown callee",
    ),
    "callee with body": (
        """
        func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
          func.return %x : tensor<4xf32>
        }
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
          %y = func.call @g(%x) : (tensor<4xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """,
        "call to @g: not a kernel declaration",
    ),
    "index elements": (
        """
        func.func private @k(tensor<4xf32>) -> tensor<4xindex>
        func.func @f(%x: tensor<4xf32>) -> tensor<4xindex> {
          %y = func.call @k(%x) : (tensor<4xf32>) -> tensor<4xindex>
          func.return %y : tensor<4xindex>
        }
        """,
        "kernel @k: result #0 has type tensor<4xindex>: element type index has no fixed bit width",
    ),
    "encoding": (
        """
        func.func private @k(tensor<4xf32, "csr">) -> tensor<4xf32>
        func.func @f(%x: tensor<4xf32, "csr">) -> tensor<4xf32> {
          %y = func.call @k(%x) : (tensor<4xf32, "csr">) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """,
        'kernel @k: operand #0 has type tensor<4xf32, "csr">: tensor encodings are not supported',
    ),
    "unranked memref operand": (
        """
        func.func private @k(tensor<4xf32>, memref<*xf32>) -> tensor<4xf32>
        func.func @f(%x: tensor<4xf32>, %m: memref<*xf32>) -> tensor<4xf32> {
          %y = func.call @k(%x, %m) : (tensor<4xf32>, memref<*xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """,
        "kernel @k: operand #1 has type memref<*xf32>, which is neither a ranked tensor, a "
        "memref (memory the plan does not hold, e.g. a mutable global) nor a scalar",
    ),
    "dynamic view": (
        """
        func.func private @v(tensor<?xf32>) -> tensor<2x?xf32> attributes {memory.view}
        func.func @f(%x: tensor<?xf32>) -> tensor<2x?xf32> {
          %y = func.call @v(%x) : (tensor<?xf32>) -> tensor<2x?xf32>
          func.return %y : tensor<2x?xf32>
        }
        """,
        "kernel @v: result #0 of type tensor<2x?xf32> has dynamic dims but @v has no "
        "memory.shape_fn",
    ),
    "tensor through cf branch": (
        """
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
          cf.br ^bb1(%x : tensor<4xf32>)
        ^bb1(%y: tensor<4xf32>):
          func.return %y : tensor<4xf32>
        }
        """,
        "func.func: block argument #0 has tensor type tensor<4xf32>",
    ),
    "shape function returning a tensor": (
        """
        func.func private @k(tensor<4xf32>) -> tensor<4xf32> attributes {memory.shape_fn = @s}
        func.func private @s(tensor<4xf32>) -> tensor<4xf32>
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
          %y = func.call @s(%x) : (tensor<4xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """,
        "@k: shape function @s must return index values only, got (tensor<4xf32>)",
    ),
    "non-string device": (
        """
        func.func private @k(tensor<4xf32>) -> tensor<4xf32> attributes {memory.device = 3 : i64}
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
          %y = func.call @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """,
        'kernel @k: memory.device must be a string like "npu", got 3 : i64',
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_fails_before_any_rewrite(case: str) -> None:
    text, message = BAD_INPUTS[case]
    module = parse_module(text)
    before = str(module)
    with pytest.raises(PassFailedException) as failure:
        ManifestAllocPass().apply(memplan_context(), module)
    assert message in str(failure.value)
    # Every check runs before the first rewrite: the diagnostic shows the input.
    assert str(module) == before


def test_cli_reports_a_diagnostic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.mlir"
    source.write_text(BAD_INPUTS["callee with body"][0])
    assert memplan_opt_main([str(source), "--manifest-alloc"]) == 1
    err = capsys.readouterr().err
    # At the call, as mlir-opt would: file:line:col, the line and a caret.
    assert err.startswith(f"{source}:6:11: error: call to @g: not a kernel declaration")
    assert "          %y = func.call @g(%x)" in err
    assert "Traceback" not in err


def test_cli_flag_runs_the_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert memplan_opt_main([str(EXAMPLES / "mlp.mlir"), "--manifest-alloc"]) == 0
    out = capsys.readouterr().out
    assert (
        "memory.invoke @softmax_10 ins(%h4 : memref<1x10xf32>) outs(%y : memref<1x10xf32>) {axis = 1 : i64}"
        in out
    )
    # Only the globals' initial values (dense<...> : tensor<...>) mention tensors.
    assert all("tensor<" not in line for line in out.splitlines() if "memref.global" not in line)


@pytest.mark.skipif(not MLIR_OPT.exists(), reason="mlir-opt (mlir-22-tools) not installed")
@pytest.mark.parametrize("example", ["mlp.mlir", "convnet.mlir"])
def test_output_is_valid_upstream_mlir(example: str) -> None:
    """Everything but the `memory` ops is upstream MLIR: the signatures, the
    `memref.global`s and the `memref.reinterpret_cast` views verify in
    mlir-opt (the `memory` ops pass as unregistered operations)."""
    module = run_passes(parse_module((EXAMPLES / example).read_text()), "manifest-alloc")
    from io import StringIO

    from xdsl.printer import Printer

    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    result = subprocess.run(
        [str(MLIR_OPT), "--allow-unregistered-dialect"],
        input=stream.getvalue(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "memref.reinterpret_cast" in result.stdout or example == "mlp.mlir"
    assert 'memref.global "private" constant @__constant_main_0' in result.stdout


def test_user_calls_of_a_shape_function_follow_its_new_signature() -> None:
    module = run_passes(
        parse_module(
            """
            func.func private @k(tensor<?xf32>) -> tensor<?xf32> attributes {memory.shape_fn = @k_shape}
            func.func private @k_shape(tensor<?xf32>) -> index
            func.func @f(%x: tensor<?xf32>) -> (tensor<?xf32>, index) {
              %n = func.call @k_shape(%x) : (tensor<?xf32>) -> index
              %y = func.call @k(%x) : (tensor<?xf32>) -> tensor<?xf32>
              func.return %y, %n : tensor<?xf32>, index
            }
            """
        ),
        "manifest-alloc",
    )
    shape_calls = [op for op in _ops(module, func.CallOp) if op.callee.string_value() == "k_shape"]
    # The user's own call plus the one the pass adds for @k's dynamic result.
    assert len(shape_calls) == 2
    assert all(call.arguments.types == (MemRefType(f32, [DYNAMIC_INDEX]),) for call in shape_calls)
    (storage,) = _ops(module, AllocStorageOp)
    assert storage.byte_size is None and storage.dynamic_size is not None
