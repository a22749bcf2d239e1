"""memplan-import-onnx: every light model, the fixtures, attributes, errors."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import warnings
from math import prod
from pathlib import Path
from typing import Any, cast

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper
from xdsl.dialects import arith, bufferization, func, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)

from memplan.dialect.arrays import dense_array, numpy_dtype
from memplan.dialect.ops import VIEW_ATTR
from memplan.tools import memplan_import
from memplan.tools.frontends.onnx import importer
from memplan.tools.frontends.onnx import model as onnx_model
from memplan.tools.frontends.onnx import shapes as onnx_shapes
from memplan.tools.memplan_opt import main as memplan_opt_main
from memplan_testing import parse_module

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "onnx"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.stem for p in LIGHT.glob("light_*.onnx"))

# What the importer makes of each light model: kernel calls, calls of view
# kernels, and constant globals. The weights of these models come from
# ConstantOfShape nodes, which fold into globals (e.g. resnet50: 53 conv
# weights + 53 x 4 batch-norm parameters + fc weight and bias = 267), as do
# the Unsqueeze of constants (densenet121, inception_v2) and the Reshape of
# inception_v1's classifier weight; shape tensors read only by views vanish.
GOLDEN = {
    "light_bvlc_alexnet": (24, 3, 16),
    "light_densenet121": (668, 0, 848),
    "light_inception_v1": (143, 2, 116),
    "light_inception_v2": (371, 1, 485),
    "light_resnet50": (176, 1, 267),
    "light_shufflenet": (203, 33, 248),
    "light_squeezenet": (66, 1, 52),
    "light_vgg19": (46, 3, 38),
    "light_zfnet512": (22, 1, 16),
}


ON_CONFORMANCE_WORKER = pytest.mark.xdist_group("onnx-conformance")
"""For the tests that read ONNX's conformance cases: on one pytest worker
(run_tests.sh distributes by group), so that ONNX builds the cases (about
4 s) once, not on every worker."""


def _import_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = memplan_import.main(args, prog="memplan-import-onnx", format_key="onnx")
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _refused(model: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``model`` through ``memplan-import-onnx``: it must fail with exit code
    1 and print nothing on stdout; the stderr it printed, stripped."""
    path = tmp_path / "refused.onnx"
    path.write_bytes(model.SerializeToString())
    code, out, err = _import_cli([str(path)], capsys)
    assert code == 1 and out == ""
    return err.strip()


def _main(module: ModuleOp) -> func.FuncOp:
    main = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    return main


def _declarations(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.is_declaration
    }


def _calls(module: ModuleOp) -> list[func.CallOp]:
    return [op for op in _main(module).walk() if isinstance(op, func.CallOp)]


def _tensor_bytes(type_: TensorType) -> int:  # type: ignore[type-arg]
    return prod(type_.get_shape()) * numpy_dtype(type_.get_element_type()).itemsize


def _independent_plan_facts(module: ModuleOp) -> tuple[int, int, int, int]:
    """Buffers manifest-alloc must create, their bytes, and the peak of live
    bytes (raw and rounded up to 64), from the value-semantic module alone.

    Straight-line liveness: a kernel result is live from its call to the last
    use of it or of a view of it (both ends included: a kernel reads its
    inputs while writing its outputs); returned values live to the end.
    """
    declarations = _declarations(module)
    body = list(_main(module).body.block.ops)
    position = {op: i for i, op in enumerate(body)}
    root: dict[object, object] = {}
    sizes: dict[object, int] = {}
    start: dict[object, int] = {}
    end: dict[object, int] = {}
    for op in body:
        if not isinstance(op, func.CallOp):
            continue
        if VIEW_ATTR in declarations[op.callee.string_value()].attributes:
            root[op.results[0]] = root.get(op.arguments[0], op.arguments[0])
            continue
        for result in op.results:
            root[result] = result
            sizes[result] = _tensor_bytes(result.type)  # type: ignore[arg-type]
            start[result] = end[result] = position[op]
    for op in body:
        for operand in op.operands:
            buffer = root.get(operand)
            if buffer in sizes:
                end[buffer] = (
                    len(body) if isinstance(op, func.ReturnOp) else max(end[buffer], position[op])
                )
    raw_peak = rounded_peak = 0
    for time in range(len(body) + 1):
        live = [b for b in sizes if start[b] <= time <= end[b]]
        raw_peak = max(raw_peak, sum(sizes[b] for b in live))
        rounded_peak = max(rounded_peak, sum(-(-sizes[b] // 64) * 64 for b in live))
    return len(sizes), sum(sizes.values()), raw_peak, rounded_peak


@pytest.mark.parametrize(
    "name",
    # DenseNet-121 takes about 10 s on 2 cores.
    [
        pytest.param(n, marks=pytest.mark.slow) if n == "light_densenet121" else n
        for n in LIGHT_MODELS
    ],
)
def test_light_model_imports_and_plans(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every light model imports, and manifest-alloc + insert-kills + plan-report
    agree with buffer counts, bytes and peaks computed here independently."""
    assert len(LIGHT_MODELS) == 9
    imported = tmp_path / f"{name}.mlir"
    code, _, err = _import_cli([str(LIGHT / f"{name}.onnx"), "-o", str(imported)], capsys)
    assert code == 0, err
    module = parse_module(imported.read_text())
    calls = _calls(module)
    declarations = _declarations(module)
    views = [c for c in calls if VIEW_ATTR in declarations[c.callee.string_value()].attributes]
    globals_ = [op for op in module.ops if isinstance(op, memref.GlobalOp)]
    assert (len(calls), len(views), len(globals_)) == GOLDEN[name]
    assert all(isinstance(g.initial_value, UnitAttr) for g in globals_)

    report = tmp_path / "report.json"
    planned = tmp_path / "planned.mlir"

    def unplanned_pool(manifest: str) -> dict[str, int]:
        code = memplan_opt_main(
            [
                str(imported),
                manifest,
                "--insert-kills",
                f'--plan-report=format=json output="{report}"',
                "-o",
                str(planned),
            ]
        )
        assert code == 0, capsys.readouterr().err
        [function] = json.loads(report.read_text())["functions"]
        [pool] = function["pools"]
        assert pool["name"] == "(unplanned)"
        assert pool["buffer_count"] == len(function["buffers"])
        return pool

    # The facts computed here assume one storage per kernel result: no
    # in-place sharing.
    pool = unplanned_pool("--manifest-alloc=inplace=false")
    count, total, raw_peak, rounded_peak = _independent_plan_facts(module)
    assert pool["buffer_count"] == count
    assert pool["used"] == total
    assert raw_peak <= pool["lower_bound"] <= rounded_peak
    assert pool["lower_bound"] < total
    # In place, results share their operands' storages: never more bytes.
    shared = unplanned_pool("--manifest-alloc")
    assert shared["buffer_count"] <= count
    assert shared["lower_bound"] <= pool["lower_bound"]


def test_convnet_constants_fold_into_globals(capsys: pytest.CaptureFixture[str]) -> None:
    """Initializers, a Constant node, a ConstantOfShape and a Reshape+Transpose
    of a weight all become globals; no kernel computes a constant."""
    code, out, err = _import_cli([str(FIXTURES / "convnet.onnx")], capsys)
    assert code == 0, err
    module = parse_module(out)
    ops = {d.attributes["memory.onnx.op_type"].data for d in _declarations(module).values()}  # type: ignore[union-attr]
    assert not ops & {"Constant", "ConstantOfShape", "Reshape", "Transpose"}
    globals_ = {op.sym_name.data: op for op in module.ops if isinstance(op, memref.GlobalOp)}
    assert sorted(globals_) == sorted(
        ["conv1_w", "conv1_b", "squeeze_w", "e1_w", "e1_b", "e3_w", "scale", "bias", "fc_w", "fc_b"]
    )
    assert str(globals_["e3_w"].type) == "memref<8x4x3x3xf32>"
    for op in globals_.values():
        assert op.constant is not None and op.sym_visibility.data == "private"
        assert op.attributes["memory.onnx.name"] == StringAttr(op.sym_name.data)
    # Each global is read once, through get_global + to_tensor.
    reads = [op for op in _main(module).walk() if isinstance(op, bufferization.ToTensorOp)]
    assert len(reads) == len(globals_)
    assert all(isinstance(r.memref.owner, memref.GetGlobalOp) for r in reads)


def test_views_unused_outputs_and_slots(capsys: pytest.CaptureFixture[str]) -> None:
    """View kernels keep only their data operand; Dropout's unused mask is
    dropped so Dropout is a view; Clip's empty min input is recorded."""
    module = parse_module(_import_cli([str(FIXTURES / "convnet.onnx")], capsys)[1])
    declarations = _declarations(module)
    views = {
        name: decl.attributes["memory.onnx.op_type"].data  # type: ignore[union-attr]
        for name, decl in declarations.items()
        if VIEW_ATTR in decl.attributes
    }
    assert sorted(views.values()) == ["Dropout", "Flatten", "Identity", "Squeeze", "Unsqueeze"]
    for call in _calls(module):
        if call.callee.string_value() in views:
            assert len(call.arguments) == 1 and len(call.results) == 1
    mlp = parse_module(_import_cli([str(FIXTURES / "mlp.onnx")], capsys)[1])
    assert not any(
        op.sym_name.data == "shape3d" for op in mlp.ops if isinstance(op, memref.GlobalOp)
    )

    int_ops = parse_module(_import_cli([str(FIXTURES / "int_ops.onnx")], capsys)[1])
    clip = _declarations(int_ops)["onnx.Clip"]
    assert str(clip.attributes["memory.onnx.input_slots"]) == "array<i64: 0, 2>"
    assert str(clip.function_type) == "(tensor<3x6xf32>, tensor<f32>) -> tensor<3x6xf32>"
    types = {str(t) for c in _calls(int_ops) for t in c.result_types}
    assert {"tensor<3x6xi1>", "tensor<3x6xi32>", "tensor<3x6xui8>", "tensor<3xi32>"} <= types


def test_kernel_declarations_carry_the_node(capsys: pytest.CaptureFixture[str]) -> None:
    """One declaration per signature; op type, domain, opset and attributes."""
    module = parse_module(_import_cli([str(FIXTURES / "convnet.onnx")], capsys)[1])
    declarations = _declarations(module)
    conv = declarations["onnx.Conv"]
    assert conv.attributes["memory.onnx.op_type"] == StringAttr("Conv")
    assert conv.attributes["memory.onnx.domain"] == StringAttr("")
    assert str(conv.attributes["memory.onnx.opset"]) == "13 : i64"
    assert str(conv.attributes["memory.onnx.pads"]) == "array<i64: 1, 1, 1, 1>"
    assert str(declarations["onnx.Gemm"].attributes["memory.onnx.transB"]) == "1 : i64"
    relu_calls = [c for c in _calls(module) if c.callee.string_value() == "onnx.Relu"]
    assert len(relu_calls) == 3  # relu1, relu_e1, relu_e3 share one signature
    assert not any(c.attributes for c in _calls(module))


def test_inline_weights_are_bit_exact(capsys: pytest.CaptureFixture[str]) -> None:
    """`--weights inline` embeds every constant exactly; a splat stays a splat."""
    code, out, err = _import_cli([str(FIXTURES / "convnet.onnx"), "--weights", "inline"], capsys)
    assert code == 0, err
    assert "initial_value = dense<2.500000e-01> : tensor<1x16x1x1xf32>" in out
    module = parse_module(out)
    constants = importer.constant_values(onnx.load(FIXTURES / "convnet.onnx"))
    for op in module.ops:
        if not isinstance(op, memref.GlobalOp):
            continue
        assert isinstance(op.initial_value, DenseIntOrFPElementsAttr)
        data = dense_array(op.initial_value)
        expected = np.asarray(constants[op.attributes["memory.onnx.name"].data])  # type: ignore[union-attr]
        assert (
            data.dtype == expected.dtype
            and data.tobytes() == np.asarray(expected, order="C").tobytes()
        )


def test_input_shape_fixes_symbolic_dims(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _import_cli(
        [str(FIXTURES / "dynamic_batch.onnx"), "--input-shape", "x=3x8"], capsys
    )
    assert code == 0, err
    assert "func.func @main(%x: tensor<3x8xf32>) -> tensor<3x4xf32>" in out
    assert "tensor<3x4x4xf32>" in out  # the Reshape to [-1, 4, 4] follows the batch


def test_import_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    first = _import_cli([str(LIGHT / "light_inception_v1.onnx")], capsys)[1]
    second = _import_cli([str(LIGHT / "light_inception_v1.onnx")], capsys)[1]
    assert first == second


def test_tensor_names_that_are_printer_suffixes_stay_distinct(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Initializers ``w`` and ``w_1:0`` (openWakeWord's embedding model has
    ``ReadVariableOp`` and ``ReadVariableOp_1:0``): each global's memref and
    tensor are named after it, so the second ``w`` value and ``w_1:0`` both
    want ``%w_1``. Every value is defined once, and the text plans."""
    weights = [
        helper.make_tensor(name, TensorProto.FLOAT, [4], [float(i)] * 4)
        for i, name in enumerate(["w", "w_1:0", "w_1_0"])
    ]
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "w"], ["a"]),
            helper.make_node("Add", ["a", "w_1:0"], ["b"]),
            helper.make_node("Add", ["b", "w_1_0"], ["y"]),
        ],
        "suffixes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        weights,
    )
    path = tmp_path / "suffixes.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    code, out, err = _import_cli([str(path)], capsys)
    assert code == 0, err
    defined = re.findall(r"(%[\w.$-]+) = ", out)
    assert len(defined) == len(set(defined)), sorted(defined)
    mlir = tmp_path / "suffixes.mlir"
    mlir.write_text(out)
    assert memplan_opt_main([str(mlir), "--plan", "-o", os.devnull]) == 0, capsys.readouterr().err


def test_custom_domain_op_typed_by_value_info(capsys: pytest.CaptureFixture[str]) -> None:
    """ONNX cannot infer a project's own op; the model's value_info types it,
    and without that the error names the tensor and the inference problem."""
    code, out, err = _import_cli([str(FIXTURES / "custom_op.onnx")], capsys)
    assert code == 0, err
    scale = _declarations(parse_module(out))["onnx.com.example.Scale"]
    assert scale.attributes["memory.onnx.domain"] == StringAttr("com.example")
    assert str(scale.attributes["memory.onnx.factor"]) == "3.000000e+00 : f32"

    model = onnx.load(FIXTURES / "custom_op.onnx")
    del model.graph.value_info[:]
    message = (
        r"tensor 's' \(output of node 'scale' \(Scale\)\) has no type after shape "
        r"inference; only tensors with static shapes can be imported \(ONNX has no "
        r"shape function for com.example.Scale: give its outputs a value_info\)"
    )
    with pytest.raises(importer.OnnxImportError, match=message):
        importer.import_model(model)


@pytest.mark.parametrize(
    "attribute",
    [
        helper.make_attribute("i", 7),
        helper.make_attribute("f", 0.1),
        helper.make_attribute("s", "SAME_UPPER"),
        helper.make_attribute("ints", [1, -2, 3]),
        helper.make_attribute("floats", [0.5, 1e-7]),
        helper.make_attribute("strings", ["a", "b"]),
        helper.make_attribute("empty", [], attr_type=AttributeProto.INTS),
        helper.make_attribute("empty_floats", [], attr_type=AttributeProto.FLOATS),
        helper.make_attribute(
            "t", helper.make_tensor("v", TensorProto.INT32, [2, 2], [1, 2, 3, 4])
        ),
        helper.make_attribute("splat", helper.make_tensor("v", TensorProto.FLOAT, [1], [0.02])),
        helper.make_attribute("scalar", helper.make_tensor("v", TensorProto.FLOAT, [], [0.5])),
    ],
    ids=lambda a: a.name,
)
def test_attributes_round_trip(attribute: AttributeProto) -> None:
    """ONNX attribute -> builtin attribute -> ONNX attribute is the identity
    (what the runtime kernels rebuild their one-node models from)."""
    encoded = importer.encode_attribute(attribute, "node")
    # Through the printer and parser too, as an attribute of a declaration.
    decl = func.FuncOp.external("k", [], [])
    decl.attributes["memory.onnx.x"] = encoded
    reparsed = parse_module(str(ModuleOp([decl]))).body.block.first_op
    assert isinstance(reparsed, func.FuncOp)
    decoded = importer.decode_attribute(attribute.name, reparsed.attributes["memory.onnx.x"])
    if attribute.type == AttributeProto.TENSOR:
        assert (
            onnx.numpy_helper.to_array(decoded.t).tobytes()
            == onnx.numpy_helper.to_array(attribute.t).tobytes()
        )
        assert decoded.t.data_type == attribute.t.data_type
        assert list(decoded.t.dims) == list(attribute.t.dims)
    else:
        assert decoded == attribute


def test_graph_attributes_round_trip_and_graph_lists_are_rejected() -> None:
    """A GRAPH attribute a kernel runs inside is kept byte for byte (its
    serialized GraphProto); GRAPHS (lists of graphs) are rejected."""
    body = helper.make_graph(
        [helper.make_node("Neg", ["s"], ["t"])],
        "score_mod",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])],
    )
    attribute = helper.make_attribute("score_mod", body)
    decoded = importer.decode_attribute(
        "score_mod", importer.encode_attribute(attribute, "node #0 (FlexAttention)")
    )
    assert decoded.SerializeToString() == attribute.SerializeToString()
    graphs = helper.make_attribute("branches", [body, body])
    with pytest.raises(
        importer.OnnxImportError, match="attribute 'branches' of type GRAPHS is not supported"
    ):
        importer.encode_attribute(graphs, "node 'x' (X)")


def _scan_model(**scan_attributes: Any) -> onnx.ModelProto:
    """``scan.onnx`` (a running sum), its Scan node given ``scan_attributes``."""
    model = onnx.load(FIXTURES / "scan.onnx")
    for name, value in scan_attributes.items():
        model.graph.node[0].attribute.append(helper.make_attribute(name, value))
    return model


def test_scan_runs_as_scf_for(tmp_path: Path) -> None:
    """Scan over x's 3 rows: the state carried, row i read with Gather, the
    stacked output written by ScatterND; bit-identical to the unplanned run
    and equal to ONNX's reference."""
    module = importer.import_model(_scan_model())
    [loop] = [op for op in _main(module).walk() if op.name == "scf.for"]
    assert loop.operands[1].owner.value == IntegerAttr(3, IndexType())  # type: ignore[union-attr]
    callees = [c.callee.root_reference.data for c in _calls(module)]
    assert callees == ["onnx.Gather", "onnx.Add", "onnx.Mul", "onnx.Unsqueeze", "onnx.ScatterND"]
    report = _run_model(
        _scan_model(),
        tmp_path,
        {
            "s0": np.array([1.0, -1.0], np.float32),
            "x": np.arange(6, dtype=np.float32).reshape(3, 2),
        },
    )
    assert re.search(r"\ns +float32\[2\] +bit-identical +max \|diff\| 0\n", report)
    assert re.search(r"\nsquares +float32\[3,2\] +bit-identical +max \|diff\| 0\n", report)


def test_scan_other_than_axis_0_forward_is_a_clear_error() -> None:
    with pytest.raises(
        importer.OnnxImportError,
        match=r"node 'scan' \(Scan\): scan_input_directions \[1\] is not supported "
        r"\(only axis 0, forward\)",
    ):
        importer.import_model(_scan_model(scan_input_directions=[1]))


def _loop_model(
    body_nodes: list[onnx.NodeProto],
    keep_going: str = "cond_in",
    condition: str = "go",
    trips: int = 3,
    inner: onnx.NodeProto | None = None,
    trip_count: str = "trips",
) -> onnx.ModelProto:
    """``y = Loop(trips, condition, x)`` carrying ``v: f32[2]`` through
    ``body_nodes`` (``v_in`` -> ``v_out``), the body's condition output
    ``keep_going``."""
    body = helper.make_graph(
        [*body_nodes, *([inner] if inner is not None else [])],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info(keep_going, TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", [trip_count, condition, "x"], ["y"], name="loop", body=body)],
        "loop",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[
            onnx.numpy_helper.from_array(np.array(trips, dtype=np.int64), "trips"),
            onnx.numpy_helper.from_array(np.array(True), "go"),
            onnx.numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
            onnx.numpy_helper.from_array(np.array(2, dtype=np.int64), "two"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _run_model(model: onnx.ModelProto, tmp_path: Path, inputs: dict[str, np.ndarray]) -> str:
    """memplan-run's report on ``model`` given ``inputs`` (exit 0 asserted)."""
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    np.savez(tmp_path / "inputs.npz", **cast(dict[str, Any], inputs))
    run = subprocess.run(
        [sys.executable, "-m", "memplan.tools.memplan_run", str(path)]
        + ["--inputs", str(tmp_path / "inputs.npz")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_nested_loops_run(tmp_path: Path) -> None:
    """A Loop in a Loop (the inner one carrying the outer's value, its body
    reading the outer iteration number): ONNX types carried values by
    element type only, so the importer's inference declares them round by
    round. Planned and unplanned runs are bit-identical and equal ONNX's
    reference evaluator."""
    inner_body = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["w_in", "half"], ["w_half"]),
            helper.make_node("Add", ["w_half", "i_f"], ["w_out"]),
        ],
        "inner",
        [
            helper.make_tensor_value_info("j", TensorProto.INT64, []),
            helper.make_tensor_value_info("inner_cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("w_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("inner_cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("w_out", TensorProto.FLOAT, None),
        ],
    )
    inner = helper.make_node("Loop", ["trips", "go", "t"], ["v_out"], name="inner", body=inner_body)
    model = _loop_model([helper.make_node("Tanh", ["v_in"], ["t"])], inner=inner)
    module = importer.import_model(model)
    loops = [op for op in _main(module).walk() if op.name == "scf.for"]
    assert len(loops) == 2
    inputs = {"x": np.array([0.5, -2.0], np.float32), "c": np.array(True)}
    report = _run_model(model, tmp_path, inputs)
    # 3 outer iterations of Tanh and 3 inner ones of Cast, Mul and Add.
    assert "kernel calls: 30 unplanned, 30 planned" in report
    assert re.search(r"\ny +float32\[2\] +bit-identical +max \|diff\| 0\n", report)


def _fibonacci_loop_model() -> onnx.ModelProto:
    """``Loop(n, go, a, b)`` with ``n`` a graph input and ``go`` a constant
    true: ``(a, b) -> (b, a + b)``, ``b`` passed on through an ``Identity``
    (a view). (An empty condition would do for ONNX, but its reference
    evaluator then runs no iteration.)"""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["b_in"], ["a_out"]),
            helper.make_node("Add", ["a_in", "b_in"], ["b_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("a_in", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b_in", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("a_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b_out", TensorProto.FLOAT, [2]),
        ],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "go", "a", "b"], ["y", "z"], name="loop", body=body)],
        "fibonacci",
        [
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2]),
        ],
        initializer=[onnx.numpy_helper.from_array(np.array(True), "go")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize(
    ("model", "inputs"),
    [
        (
            _loop_model(
                [
                    helper.make_node("Neg", ["v_in"], ["v_out"]),
                    helper.make_node("Less", ["i", "two"], ["more"]),
                ],
                keep_going="more",
            ),
            {"x": np.array([0.5, -2.0], np.float32), "c": np.array(True)},
        ),
        (
            _loop_model([helper.make_node("Neg", ["v_in"], ["v_out"])], condition="c"),
            {"x": np.array([0.5, -2.0], np.float32), "c": np.array(True)},
        ),
        (
            _loop_model([helper.make_node("Neg", ["v_in"], ["v_out"])], condition="c"),
            {"x": np.array([0.5, -2.0], np.float32), "c": np.array(False)},
        ),
        (
            _fibonacci_loop_model(),
            {
                "n": np.array(5, np.int64),
                "a": np.array([0.0, 1.0], np.float32),
                "b": np.array([1.0, 0.5], np.float32),
            },
        ),
    ],
    ids=["stops-early", "runtime-condition-true", "runtime-condition-false", "runtime-trips"],
)
def test_loop_decided_at_run_time_runs_as_scf_while(
    model: onnx.ModelProto,
    inputs: dict[str, np.ndarray],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A Loop whose body computes its condition, whose condition is a graph
    input or whose trip count is one imports as scf.while (i < M and cond
    decided in its first region), plans with memplan-opt, and memplan-run
    gives planned bit-identical to unplanned and to ONNX's reference
    evaluator."""
    from onnx.reference import ReferenceEvaluator

    from memplan.tools.memplan_run import main as run_main

    path = tmp_path / "loop.onnx"
    path.write_bytes(model.SerializeToString())
    imported = tmp_path / "loop.mlir"
    code, _, err = _import_cli([str(path), "-o", str(imported)], capsys)
    assert code == 0, err
    text = imported.read_text()
    assert "scf.while" in text and "scf.condition(" in text and "scf.for" not in text
    assert memplan_opt_main([str(imported), "--plan", "-o", str(tmp_path / "planned.mlir")]) == 0
    np.savez(tmp_path / "inputs.npz", **cast(dict[str, Any], inputs))
    saved = tmp_path / "outputs.npz"
    argv = [str(path), "--inputs", str(tmp_path / "inputs.npz"), "-o", str(saved)]
    assert run_main([*argv, "--atol", "0", "--rtol", "0"]) == 0
    out = capsys.readouterr().out
    assert "bit-identical" in out and "result: OK" in out
    expected = ReferenceEvaluator(model).run(None, inputs)
    for output, want in zip(model.graph.output, expected):
        np.testing.assert_array_equal(np.load(saved)[output.name], want)


def test_fibonacci_loop_double_buffers_what_it_swaps(tmp_path: Path) -> None:
    """(a, b) -> (b, a + b) through scf.while: b's new value is written while
    the old one is read (a spare, forwarded by scf.condition), a's is a view
    of b copied into its spare; the trip count is read with memref.load."""
    module = importer.import_model(_fibonacci_loop_model())
    source = tmp_path / "fibonacci.mlir"
    source.write_text(str(module))
    planned = tmp_path / "planned.mlir"
    assert memplan_opt_main([str(source), "--plan", "-o", str(planned)]) == 0
    text = planned.read_text()
    assert "%n_scalar = memref.load %n[] : memref<i64>" in text
    assert "%runs_again = arith.andi %below_trip_count, %keep_going : i1" in text
    assert (
        "scf.condition(%runs_again) %a_in, %b_in, %iteration, %keep_going, "
        "%a_in_spare, %b_in_spare :" in text
    )
    assert (
        "memory.invoke @onnx.Add ins(%a_in_1, %b_in_1 : memref<2xf32>, memref<2xf32>) "
        "outs(%b_in_spare_1 : memref<2xf32>)" in text
    )
    assert '"memref.copy"(%a_out, %a_in_spare_1)' in text
    assert (
        "scf.yield %a_in_spare_1, %b_in_spare_1, %next_iteration, %keep_going_1, %a_in_1, %b_in_1 :"
        in text
    )


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            _loop_model([helper.make_node("Concat", ["v_in", "v_in"], ["v_out"], axis=0)]),
            r"tensor 'y' \(output of node 'loop' \(Loop\)\) has an unknown rank after shape "
            r"inference; it starts as tensor<2xf32> and the body gives 'v_out' \[4\]; a "
            "carried value needs one static shape",
        ),
        (
            _loop_model(
                [helper.make_node("Neg", ["v_in"], ["v_out"])], condition="", trip_count=""
            ),
            r"node 'loop' \(Loop\): it has neither a trip count nor a condition and the "
            r"body's condition 'cond_in' is ignored: it never stops",
        ),
    ],
    ids=["growing-carried-value", "never-stops"],
)
def test_unsupported_loop_is_a_clear_error(model: onnx.ModelProto, message: str) -> None:
    with pytest.raises(importer.OnnxImportError, match=message):
        importer.import_model(model)


@ON_CONFORMANCE_WORKER
def test_scan_output_of_a_loop_decided_at_run_time_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ONNX's test_loop11: its trip count is a graph input, so its scan
    output's length depends on data: one line saying so."""
    err = _refused(_conformance_cases()["test_loop11"].model, tmp_path, capsys)
    assert err.splitlines()[-1].endswith(
        "node #0 (Loop): its trip count 'trip_count' is computed at run time, so its scan "
        "output 'scan_out' (a row per iteration) has a length that depends on data, with no "
        "bound"
    )


def test_loop_that_never_runs(tmp_path: Path) -> None:
    """A constant false condition: the loop runs 0 times and gives back its
    initial value (copied into its carried storage)."""
    model = _loop_model([helper.make_node("Neg", ["v_in"], ["v_out"])])
    model.graph.initializer[1].CopyFrom(onnx.numpy_helper.from_array(np.array(False), "go"))
    module = importer.import_model(model)
    [loop] = [op for op in _main(module).walk() if op.name == "scf.for"]
    assert isinstance(loop.operands[1].owner, arith.ConstantOp)
    assert loop.operands[1].owner.value == IntegerAttr(0, IndexType())
    report = _run_model(
        model, tmp_path, {"x": np.array([1.0, -1.0], np.float32), "c": np.array(True)}
    )
    assert re.search(r"\ny +float32\[2\] +bit-identical +max \|diff\| 0\n", report)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["truncated.onnx"], "truncated.onnx is not an ONNX model (or is truncated)"),
        (["not_onnx.onnx"], "not_onnx.onnx is not an ONNX model (or is truncated)"),
        (["missing.onnx"], "cannot read"),
        (
            ["string_input.onnx"],
            "tensor 'words' has element type STRING: its elements have no fixed size",
        ),
        (
            ["dynamic_batch.onnx"],
            "tensor 'x' (graph input) has symbolic dim 'N' at axis 0; fix it with "
            "--input-shape, e.g. --input-shape x=1x8",
        ),
        (
            ["dynamic_batch.onnx", "--input-shape", "N=2"],
            "--input-shape names 'N', which is not a graph input (inputs: x)",
        ),
        (
            ["dynamic_batch.onnx", "--input-shape", "x=2x8x1"],
            "--input-shape gives input 'x' rank 3, the model says rank 2",
        ),
        (
            ["mlp.onnx", "--input-shape", "x=2x9"],
            "--input-shape gives input 'x' size 9 at axis 1, the model fixes it to 8",
        ),
        (
            ["mlp.onnx", "--input-shape", "x=2xeight"],
            "--input-shape 'x=2xeight': dims must be positive integers (or '?') separated by 'x'",
        ),
        (["mlp.onnx", "--input-shape", "x"], "--input-shape 'x' must look like NAME=1x3x224x224"),
        (
            ["dynamic_batch.onnx", "--upper-bound", "N=0"],
            "--upper-bound 'N=0': the bound must be a positive integer",
        ),
        (
            ["dynamic_batch.onnx", "--upper-bound", "64"],
            "--upper-bound '64' must look like SYMBOL=N or INPUT:AXIS=N",
        ),
        (
            ["dynamic_batch.onnx", "--input-shape", "x=?x8"],
            "tensor 'x' (graph input) has symbolic dim 'N' at axis 0",
        ),
        (["mlp.onnx", "--weights", "embedded"], "argument --weights: invalid choice: 'embedded'"),
    ],
)
def test_bad_input_is_one_line_error(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1, `memplan-import-onnx: error: ...`, no traceback, no output file."""
    out = tmp_path / "out.mlir"
    argv = [str(FIXTURES / args[0]), *args[1:], "-o", str(out)]
    try:
        code, stdout, err = _import_cli(argv, capsys)
    except SystemExit as exit_:  # argparse errors
        code, captured = exit_.code, capsys.readouterr()
        stdout, err = captured.out, captured.err
    assert code == 1
    last = err.splitlines()[-1]  # argparse errors print the usage first
    assert last.startswith("memplan-import-onnx: error: ") and message in last
    assert "Traceback" not in err and stdout == ""
    assert not out.exists()


def test_console_entry_point_reports_without_traceback(tmp_path: Path) -> None:
    """The module as a program (what the console script runs)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memplan.tools.memplan_import",
            str(FIXTURES / "truncated.onnx"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("memplan-import: error: ")
    assert "Traceback" not in result.stderr


def test_model_local_functions_are_inlined(tmp_path: Path) -> None:
    """A node calling a model-local function becomes the function's nodes:
    kernels memplan can plan and run (the reference evaluator runs the
    original model, function and all)."""
    body = [
        helper.make_node("Mul", ["a", "a"], ["squared"]),
        helper.make_node("Relu", ["squared"], ["out"]),
    ]
    function = helper.make_function(
        "local", "SquareRelu", ["a"], ["out"], body, [helper.make_opsetid("", 13)]
    )
    graph = helper.make_graph(
        [
            helper.make_node("SquareRelu", ["x"], ["h"], name="call", domain="local"),
            helper.make_node("Neg", ["h"], ["y"], name="neg"),
        ],
        "functions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)],
        functions=[function],
    )
    module = importer.import_model(model)
    assert [call.callee.root_reference.data for call in _calls(module)] == [
        "onnx.Mul",
        "onnx.Relu",
        "onnx.Neg",
    ]
    path = tmp_path / "functions.onnx"
    path.write_bytes(model.SerializeToString())
    run = subprocess.run(
        [sys.executable, "-m", "memplan.tools.memplan_run", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "y       float32[2,3]  bit-identical         max |diff| 0" in run.stdout


def _nested_if_model() -> onnx.ModelProto:
    """``If sum(x) > 0`` whose then-branch holds ``If max(x) > 1``; the inner
    branches read ``x`` (two graphs out) and ``t`` (one graph out)."""
    inner_then = helper.make_graph(
        [helper.make_node("Mul", ["t", "x"], ["big"])],
        "inner_then",
        [],
        [helper.make_tensor_value_info("big", TensorProto.FLOAT, [4])],
    )
    inner_else = helper.make_graph(
        [helper.make_node("Sub", ["t", "x"], ["small"])],
        "inner_else",
        [],
        [helper.make_tensor_value_info("small", TensorProto.FLOAT, [4])],
    )
    outer_then = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["t"]),
            helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
            helper.make_node("Greater", ["top", "one"], ["large"]),
            helper.make_node(
                "If", ["large"], ["inner"], then_branch=inner_then, else_branch=inner_else
            ),
        ],
        "outer_then",
        [],
        [helper.make_tensor_value_info("inner", TensorProto.FLOAT, [4])],
    )
    outer_else = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["negated"])],
        "outer_else",
        [],
        [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [4])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
            helper.make_node("Greater", ["sum", "zero"], ["positive"]),
            helper.make_node(
                "If", ["positive"], ["y"], then_branch=outer_then, else_branch=outer_else
            ),
        ],
        "nested",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        initializer=[
            onnx.numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
            onnx.numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize(
    ("x", "calls"),
    [
        ([3.0, 1.0, -1.0, 0.5], 6),  # outer then, inner then (Mul)
        ([0.5, 0.2, 0.1, 0.0], 6),  # outer then, inner else (Sub)
        ([-3.0, 1.0, -1.0, 0.5], 3),  # outer else (Neg)
    ],
)
def test_nested_if_runs_every_path(tmp_path: Path, x: list[float], calls: int) -> None:
    """Nested `scf.if`s plan and run: each path bit-identical to the
    unplanned run and equal to ONNX's reference evaluator."""
    module = importer.import_model(_nested_if_model())
    [outer] = [op for op in _main(module).body.ops if op.name == "scf.if"]
    assert [op.name for op in outer.walk() if op.name == "scf.if"] == ["scf.if", "scf.if"]
    path = tmp_path / "nested.onnx"
    path.write_bytes(_nested_if_model().SerializeToString())
    np.savez(tmp_path / "x.npz", x=np.array(x, dtype=np.float32))
    run = subprocess.run(
        [sys.executable, "-m", "memplan.tools.memplan_run", str(path)]
        + ["--inputs", str(tmp_path / "x.npz")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert f"kernel calls: {calls} unplanned, {calls} planned" in run.stdout
    assert re.search(r"\ny +float32\[4\] +bit-identical +max \|diff\| 0\n", run.stdout)


def _if_model(condition: int, else_outputs: int = 1, else_branch: bool = True) -> onnx.ModelProto:
    """``If`` on input ``c`` whose branches negate or keep ``x``."""
    then = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["n"])],
        "then",
        [],
        [helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])],
    )
    other = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"])],
        "else",
        [],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])] * else_outputs,
    )
    node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then)
    if else_branch:
        node.attribute.append(helper.make_attribute("else_branch", other))
    graph = helper.make_graph(
        [node],
        "bad_if",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("c", condition, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            _if_model(TensorProto.FLOAT),
            r"node 'choose' \(If\): condition 'c' is tensor<f32>; an If needs one bool element",
        ),
        (
            _if_model(TensorProto.BOOL, else_branch=False),
            r"node 'choose' \(If\) must hold a then_branch and an else_branch graph",
        ),
        (
            _if_model(TensorProto.BOOL, else_outputs=2),
            r"node 'choose' \(If\): else_branch has 2 outputs, the If 1",
        ),
    ],
    ids=["float-condition", "one-branch", "output-count"],
)
def test_malformed_if_is_a_clear_error(model: onnx.ModelProto, message: str) -> None:
    with pytest.raises(importer.OnnxImportError, match=message):
        importer.import_model(model)


def _symbolic_model(nodes: list[onnx.NodeProto], output: str, dims: list[Any]) -> onnx.ModelProto:
    """``x: f32[n, 4]`` and ``y: f32[n, 4]`` through ``nodes`` to ``output``."""
    graph = helper.make_graph(
        nodes,
        "symbolic",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4]),
        ],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, dims)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("y_dims", "inplace"),
    [
        # y's rows are another symbol: either operand may broadcast.
        (["m", 4], None),
        # y is one row: it broadcasts, x is the result's shape.
        ([1, 4], "array<i64: 0, 0>"),
        # y has x's rows, one symbol: the result is either's shape.
        (["n", 4], "array<i64: 0, 0>"),
    ],
    ids=["other-symbol", "broadcast-row", "same-symbol"],
)
def test_dynamic_inplace_pairs_follow_the_symbols(y_dims: list[Any], inplace: str | None) -> None:
    """A dynamic result takes an operand's bytes only when the model's
    symbols say it has that operand's shape at run time."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["s"])],
        "symbols",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims),
        ],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    bounds = {"n": 8, **({"m": 8} if "m" in y_dims else {})}
    module = importer.import_model(model, upper_bounds=bounds)
    add = _declarations(module)["onnx.Add"]
    assert str(add.attributes.get("memory.inplace")) == str(inplace)


def test_symbols_the_model_declares_say_nothing_about_run_time_sizes() -> None:
    """A symbol on a value_info is the model's word only: ONNX's inference
    prefers it to the shape it derives and checks nothing. ``a`` is
    declared ``[n, 4]`` although it has twice ``x``'s rows; the types the
    in-place rule reads give it a symbol of its own."""
    graph = helper.make_graph(
        [
            helper.make_node("Concat", ["x", "x"], ["a"], axis=0),
            helper.make_node("Relu", ["a"], ["r"]),
        ],
        "declared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)],
        value_info=[helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folded = onnx_model.fold_constants(model)
    declared = onnx_shapes.infer_types(model, folded).types["a"]
    assert declared.tensor_type.shape.dim[0].dim_param == "n"
    run_time = onnx_shapes.run_time_types(model, folded)["a"]
    assert run_time.tensor_type.shape.dim[0].dim_param not in ("", "n")
    assert run_time.tensor_type.shape.dim[1].dim_value == 4


def _planned_bytes(
    tmp_path: Path, name: str, options: list[str], capsys: pytest.CaptureFixture[str]
) -> int:
    """The pool bytes of ``--plan`` of hardswish_hw.onnx imported with ``options``."""
    source = tmp_path / f"{name}.mlir"
    code, _, err = _import_cli(
        [str(FIXTURES / "hardswish_hw.onnx"), *options, "-o", str(source)], capsys
    )
    assert code == 0, err
    report = tmp_path / f"{name}.json"
    args = [str(source), "--plan", f"--plan-report=format=json output={report}"]
    assert memplan_opt_main([*args, "-o", str(tmp_path / f"{name}.planned.mlir")]) == 0
    (pool,) = json.loads(report.read_text())["functions"][0]["pools"]
    return pool["used"]


def test_a_bounded_plan_at_its_bound_is_no_larger_than_the_static_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """hardswish_hw.onnx with H, W, P, Q <= 16 plans to the bytes of the
    same model fixed at 16x16 (16384: two [1, 8, 16, 16] floats): the
    HardSwish's Mul of two dynamic tensors is in place, as in the static
    plan (ONNX's inference gives them one shape). Without it, the bounded
    plan held three such tensors (24576)."""
    static = _planned_bytes(
        tmp_path, "static", ["--input-shape", "x=1x4x16x16", "--input-shape", "z=1x8x16x16"], capsys
    )
    bounds = [f"{symbol}=16" for symbol in "HWPQ"]
    bounded = _planned_bytes(
        tmp_path, "bounded", [arg for b in bounds for arg in ("--upper-bound", b)], capsys
    )
    assert static == 16384
    assert bounded <= static


def test_upper_bound_keeps_symbolic_dims_dynamic() -> None:
    """`?` in --input-shape keeps the model's symbol; each dynamic result gets
    its shape at the bound, each kernel a shape function; an element-wise op
    whose other operand is dynamic too is in place: both are [n, 4], one
    symbol, so neither broadcasts the result past the other."""
    model = _symbolic_model(
        [
            helper.make_node("Add", ["x", "y"], ["s"]),
            helper.make_node("Relu", ["s"], ["r"]),
            helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
        ],
        "t",
        [4, "n"],
    )
    module = importer.import_model(model, {"x": (-1, 4)}, upper_bounds={"n": 100})
    main = _main(module)
    assert [str(t) for t in main.function_type.inputs.data] == [
        "tensor<?x4xf32>",
        "tensor<?x4xf32>",
    ]
    bounds = [str(c.attributes["memory.max_shapes"]) for c in _calls(module)]
    assert bounds == [
        "[array<i64: 100, 4>]",
        "[array<i64: 100, 4>]",
        "[array<i64: 4, 100>]",
    ]
    declarations = _declarations(module)
    assert str(declarations["onnx.Add"].attributes["memory.inplace"]) == "array<i64: 0, 0>"
    assert "memory.inplace" in declarations["onnx.Relu"].attributes
    shape_fn = declarations["onnx.Transpose.shape"]
    assert shape_fn.is_declaration
    assert [str(t) for t in shape_fn.function_type.outputs.data] == ["index"]


def test_data_dependent_dim_cannot_be_bounded() -> None:
    """NonZero's count depends on the data, not on the bound: a clear error."""
    model = _symbolic_model(
        [
            helper.make_node("NonZero", ["x"], ["nz"]),
            helper.make_node("Cast", ["nz"], ["out"], to=TensorProto.FLOAT),
        ],
        "out",
        [2, "k"],
    )
    with pytest.raises(
        importer.OnnxImportError,
        match=r"tensor 'nz' \(output of node #0 \(NonZero\)\) has symbolic dim .* at axis 1, "
        r"with no static size even when the graph inputs are at their upper bounds "
        r"\(\[2,unk__0\] there\): its size depends on data",
    ):
        importer.import_model(model, upper_bounds={"n": 8})


@functools.cache
def _conformance_cases() -> dict[str, Any]:
    """ONNX's own node conformance cases (built in memory by the `onnx`
    package), by name; their generators warn about NaN and inf on purpose."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {case.name: case for case in collect_testcases(None)}


CONFORMANCE_PIPELINE = "manifest-alloc,insert-kills,coalesce{budget=200},usmp{budget=200}"
"""The sweep asks that every model plans, not how well: a small search
budget still runs every stage of the default algorithm (greedy, then the
exact search until the budget is spent), in a fraction of the time the
default budget takes (the search's quality has tests of its own)."""


@ON_CONFORMANCE_WORKER
@pytest.mark.slow
def test_every_conformance_case_imports_or_is_refused_cleanly() -> None:
    """Every one of ONNX's ~1,900 node test models either imports or gets an
    OnnxImportError (which the CLI prints as one line): never another
    exception, which would be a traceback. Every model that imports also
    plans (zero-element tensors included)."""
    from memplan.tools.runs import plan

    crashed: list[str] = []
    cases = sorted(_conformance_cases().items())
    assert len(cases) > 1800
    for name, case in cases:
        try:
            module = importer.import_model(case.model)
        except importer.OnnxImportError:
            continue
        except Exception as error:  # noqa: BLE001 - what this test looks for
            crashed.append(f"{name}: {type(error).__name__}: {error}")
            continue
        try:
            plan(module, CONFORMANCE_PIPELINE)
        except Exception as error:  # noqa: BLE001 - what this test looks for
            crashed.append(f"{name} (planning): {type(error).__name__}: {error}")
    assert not crashed, "\n".join(crashed)


def _array(value: Any) -> np.ndarray:
    """A conformance case's input or output (an array, or a TensorProto for
    the types NumPy lacks) as an array (ml_dtypes for those)."""
    return value if isinstance(value, np.ndarray) else onnx.numpy_helper.to_array(value)


@ON_CONFORMANCE_WORKER
@pytest.mark.parametrize(
    "name",
    [
        "test_cast_FLOAT_to_BFLOAT16",
        "test_cast_FLOAT_to_FLOAT8E4M3FN",
        "test_cast_FLOAT_to_FLOAT8E5M2FNUZ",
        "test_cast_e8m0_FLOAT_to_FLOAT8E8M0",
        "test_cast_FLOAT_to_INT4",
        "test_cast_UINT4_to_FLOAT",
        "test_cast_FLOAT_to_INT2",
        "test_cast_FLOAT4E2M1_to_FLOAT",
        "test_attention_4d_causal_bf16",
        "test_split_zero_size_splits_opset13",
        "test_triu_zero",
        "test_shape_start_greater_than_end",
    ],
)
def test_fixed_size_element_type_cases_run(name: str, tmp_path: Path) -> None:
    """Conformance models with bfloat16, 8-, 4- and 2-bit element types
    import, plan and run (through ml_dtypes) on their own inputs, and models
    with zero-element tensors (0-byte storages) plan and run: planned
    bit-identical to unplanned and to the outputs ONNX publishes."""
    from memplan.tools.runs import run_onnx

    case = _conformance_cases()[name]
    inputs, expected = case.data_sets[0]
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(case.model.SerializeToString())
    names = [i.name for i in case.model.graph.input]
    [(_, report)] = run_onnx(
        str(path),
        "manifest-alloc,insert-kills,usmp",
        inputs={n: _array(v) for n, v in zip(names, inputs)},
    )
    assert report.ok, report.format()
    for output, want in zip(report.planned_outputs, expected):
        want = _array(want)
        assert output.dtype == want.dtype and output.shape == want.shape
        assert output.tobytes() == want.tobytes()


@ON_CONFORMANCE_WORKER
@pytest.mark.parametrize(
    "name", ["test_if", "test_scan9_sum", "test_scan9_multi_state", "test_scan9_scalar"]
)
def test_control_flow_conformance_cases_run(name: str, tmp_path: Path) -> None:
    """ONNX's If and Scan conformance models, on their own inputs: planned
    bit-identical to unplanned, and equal to the outputs ONNX publishes."""
    from memplan.tools.runs import run_onnx

    case = _conformance_cases()[name]
    inputs, expected = case.data_sets[0]
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(case.model.SerializeToString())
    names = [i.name for i in case.model.graph.input]
    [(_, report)] = run_onnx(
        str(path), "manifest-alloc,insert-kills,usmp", inputs=dict(zip(names, inputs))
    )
    assert report.ok, report.format()
    for output, want in zip(report.planned_outputs, expected):
        np.testing.assert_allclose(output, want, rtol=1e-6)


def _conformance_case_through_the_command_lines(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: bool = True
) -> str:
    """Conformance case ``name`` through memplan-import-onnx, memplan-opt
    --plan and memplan-run on its own inputs: planned bit-identical to
    unplanned, and the outputs those ONNX publishes (float outputs within
    1e-5). ``reference``: memplan-run also runs ONNX's reference evaluator.
    Returns the imported IR."""
    from memplan.tools.memplan_run import main as run_main

    case = _conformance_cases()[name]
    inputs, expected = case.data_sets[0]
    model = tmp_path / f"{name}.onnx"
    model.write_bytes(case.model.SerializeToString())
    imported = tmp_path / f"{name}.mlir"
    code, _, err = _import_cli([str(model), "-o", str(imported)], capsys)
    assert code == 0, err
    planned = tmp_path / f"{name}.planned.mlir"
    assert memplan_opt_main([str(imported), "--plan", "-o", str(planned)]) == 0, (
        capsys.readouterr().err
    )
    names = [i.name for i in case.model.graph.input]
    arrays = tmp_path / "inputs.npz"
    np.savez(arrays, **cast(dict[str, Any], {n: _array(v) for n, v in zip(names, inputs)}))
    saved = tmp_path / "outputs.npz"
    argv = [str(model), "--inputs", str(arrays), "-o", str(saved), "--atol", "0", "--rtol", "0"]
    code = run_main(argv if reference else [*argv, "--no-reference"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "bit-identical" in out and "result: OK" in out
    outputs = np.load(saved)
    for output, want in zip(case.model.graph.output, expected):
        got, want = outputs[output.name], _array(want)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return imported.read_text()


@ON_CONFORMANCE_WORKER
@pytest.mark.parametrize(
    "name",
    [
        "test_unique_sorted_without_axis",
        "test_unique_not_sorted_without_axis",
        "test_unique_sorted_with_axis",
        "test_unique_sorted_with_axis_3d",
        "test_unique_sorted_with_negative_axis",
        "test_unique_length_1",
    ],
)
def test_unique_outputs_are_dynamic_within_their_bound(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unique's unique count depends on the data but is at most the input's
    element count (no axis) or its dim along the axis: Y, indices and counts
    are dynamic dims planned at that bound, inverse_indices is static, and
    the conformance case runs on its own inputs (its outputs below their
    bounds) as ONNX publishes them."""
    case = _conformance_cases()[name]
    [node] = case.model.graph.node
    [x] = case.model.graph.input
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    axis = next((a.i for a in node.attribute if a.name == "axis"), None)
    bound = int(np.prod(shape)) if axis is None else shape[axis]
    y_bound = (
        [bound]
        if axis is None
        else [*shape[: axis % len(shape)], bound, *shape[axis % len(shape) + 1 :]]
    )
    text = _conformance_case_through_the_command_lines(name, tmp_path, capsys)
    max_shapes = ", ".join(
        f"array<i64: {', '.join(map(str, dims))}>" for dims in [y_bound, [bound], [bound], [bound]]
    )
    assert f"memory.max_shapes = [{max_shapes}]" in text
    assert f"tensor<{bound}xi64>, tensor<?xi64>)" in text


@pytest.mark.parametrize(
    "name",
    [
        "test_flexattention_causal_mask",
        "test_flexattention_prob_mod",
        "test_flexattention_relative_positional",
        "test_flexattention_score_mod",
        "test_flexattention_soft_cap",
    ],
)
def test_kernels_holding_graphs_import_plan_and_run(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FlexAttention's score_mod / prob_mod / mask_mod graphs run inside the
    kernel: each is kept on the declaration as its serialized GraphProto,
    which memplan-run hands back to ONNX's reference evaluator."""
    text = _conformance_case_through_the_command_lines(name, tmp_path, capsys)
    assert "func.call @onnx.ai.onnx.preview.FlexAttention" in text
    assert re.search(r"memory\.onnx\.\w+_mod = \{onnx_graph = \"[A-Za-z0-9+/=]+\"\}", text)


def test_scan_before_opset_9_runs_per_batch_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ONNX's test_scan_sum (opset 8: a batch dim first): an scf.for over
    the batch rows around the opset-9 scf.for, each row's results written
    into the outputs by ScatterND. ONNX's reference evaluator runs only
    opset-9 Scan, so the published outputs are the reference; without
    --no-reference memplan-run says its evaluator failed, in one line."""
    from memplan.tools.memplan_run import main as run_main

    text = _conformance_case_through_the_command_lines(
        "test_scan_sum", tmp_path, capsys, reference=False
    )
    assert "scf.for %batch = %c0 to %batch_size step %c1" in text
    assert "scf.for %iteration = %c0_1 to %trips step %c1_1" in text
    assert run_main([str(tmp_path / "test_scan_sum.onnx")]) == 1
    [line] = capsys.readouterr().err.splitlines()[-1:]
    assert line.startswith("memplan-run: error: reference run: ")
    assert line.endswith("(ONNX's reference evaluator failed; --no-reference skips it)")


@ON_CONFORMANCE_WORKER
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "test_hannwindow_expanded",
            "tensor 'HannWindow_test_hannwindow_expanded_function_Range' (output of node #16 "
            "(Range)) has symbolic dim 'unk__0' at axis 0; every graph input has a static "
            "shape, so its size depends on the values of integer input 'x' (--input-value "
            "x=V[,V...] binds one)",
        ),
    ],
)
def test_shapes_that_depend_on_data_are_refused_with_the_reason(
    name: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With every graph input static, a dim inference leaves open follows
    from values: an integer input's (a size, axes) that --input-value can
    bind, or the data's."""
    err = _refused(_conformance_cases()[name].model, tmp_path, capsys)
    assert err.splitlines()[-1].endswith(reason)


def test_unique_of_a_bounded_input_runs_at_each_size(tmp_path: Path) -> None:
    """Under --upper-bound the input of Unique is dynamic too: every output
    (inverse_indices with it) is bounded by the input's bound, and the
    model runs planned == unplanned at sizes 1, 3 and 6."""
    from memplan.tools.runs import run_onnx

    names = ["y", "indices", "inverse", "counts"]
    graph = helper.make_graph(
        [helper.make_node("Unique", ["x"], names, sorted=1)],
        "unique",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [
            helper.make_tensor_value_info(
                n, TensorProto.FLOAT if n == "y" else TensorProto.INT64, None
            )
            for n in names
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    text = str(importer.import_model(model, upper_bounds={"n": 6}))
    assert (
        "memory.max_shapes = [array<i64: 6>, array<i64: 6>, array<i64: 6>, array<i64: 6>]" in text
    )
    path = tmp_path / "unique.onnx"
    path.write_bytes(model.SerializeToString())
    runs = run_onnx(str(path), "manifest-alloc,insert-kills,usmp", upper_bounds={"n": 6})
    assert [label for label, _ in runs] == ["n=1", "n=3", "n=6"]
    for label, report in runs:
        assert report.ok, (label, report.format())


def test_shape_from_the_data_with_no_bound_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shape made from a float input's values (Cast, ConstantOfShape) has
    no bound (unlike Unique's count): the import is refused, saying so."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["shape"], to=TensorProto.INT64),
            helper.make_node("ConstantOfShape", ["shape"], ["y"]),
        ],
        "from_data",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    err = _refused(model, tmp_path, capsys)
    assert err.splitlines()[-1].endswith(
        "tensor 'y' (output of node #1 (ConstantOfShape)) has symbolic dim 'unk__0' at axis 0; "
        "every graph input has a static shape, so its size depends on the data, with no bound "
        "memplan knows"
    )


@ON_CONFORMANCE_WORKER
def test_a_sequence_result_is_refused_for_its_type_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sequence is refused for being a sequence: no advice about sizes
    that depend on data (the inputs are static, but no size is at issue)."""
    case = _conformance_cases()["test_split_to_sequence_nokeepdims"]
    err = _refused(case.model, tmp_path, capsys)
    assert "has a sequence_type type after shape inference" in err
    assert "depends on" not in err and "--input-value" not in err


@ON_CONFORMANCE_WORKER
def test_batched_scan_with_sequence_lengths_is_refused() -> None:
    model = onnx.ModelProto()
    model.CopyFrom(_conformance_cases()["test_scan_sum"].model)
    model.graph.node[0].input[0] = "lengths"
    model.graph.input.append(helper.make_tensor_value_info("lengths", TensorProto.INT32, [1]))
    with pytest.raises(
        importer.OnnxImportError,
        match=r"node #0 \(Scan\): sequence_lens 'lengths' is not supported \(every batch row "
        r"must scan the whole sequence\)",
    ):
        importer.import_model(model)


def test_a_graph_attribute_reading_the_enclosing_graph_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A graph a kernel runs inside that reads a tensor of the enclosing
    graph would hide an operand from the plan: one line naming it."""
    score_mod = helper.make_graph(
        [helper.make_node("Add", ["scores", "bias"], ["scores_out"])],
        "score_mod",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("scores_out", TensorProto.FLOAT, [1, 1, 2, 2])],
    )
    attention = helper.make_node(
        "FlexAttention", ["q", "q", "q"], ["y"], domain="ai.onnx.preview", score_mod=score_mod
    )
    spec = [1, 1, 2, 2]
    graph = helper.make_graph(
        [attention],
        "flex",
        [
            helper.make_tensor_value_info("q", TensorProto.FLOAT, spec),
            helper.make_tensor_value_info("bias", TensorProto.FLOAT, spec),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, spec)],
    )
    opsets = [helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)]
    err = _refused(helper.make_model(graph, opset_imports=opsets), tmp_path, capsys)
    assert err.splitlines()[-1].endswith(
        "node #0 (FlexAttention): a graph attribute of FlexAttention reads 'bias' of the "
        "enclosing graph; only If (scf.if), Loop and Scan (scf.for, scf.while) may hold "
        "graphs that do"
    )


def _dynamic_quantize_lstm_model(path: Path) -> None:
    """ONNX Runtime's dynamically quantized LSTM (com.microsoft), as in
    ddddocr's common_old.onnx: X [5, 1, 8], bidirectional, hidden 4, then
    Y [5, 2, 1, 4] reshaped to [5, 8]; the graph output declared [1,
    seqlen], a symbol no input has and a rank its node contradicts."""
    rng = np.random.default_rng(0)
    weights = [
        helper.make_tensor("W", TensorProto.INT8, [2, 8, 16], rng.integers(-9, 9, 256).tolist()),
        helper.make_tensor("R", TensorProto.INT8, [2, 4, 16], rng.integers(-9, 9, 128).tolist()),
        helper.make_tensor("B", TensorProto.FLOAT, [2, 32], [0.0] * 64),
        helper.make_tensor("W_scale", TensorProto.FLOAT, [2], [0.01, 0.02]),
        helper.make_tensor("W_zero_point", TensorProto.INT8, [2], [0, 0]),
        helper.make_tensor("R_scale", TensorProto.FLOAT, [2], [0.01, 0.02]),
        helper.make_tensor("R_zero_point", TensorProto.INT8, [2], [0, 0]),
        helper.make_tensor("shape", TensorProto.INT64, [2], [5, -1]),
    ]
    lstm = helper.make_node(
        "DynamicQuantizeLSTM",
        ["x", "W", "R", "B", "", "", "", "", "W_scale", "W_zero_point", "R_scale", "R_zero_point"],
        ["Y", "Y_h", "Y_c"],
        domain="com.microsoft",
        direction="bidirectional",
        hidden_size=4,
    )
    graph = helper.make_graph(
        [lstm, helper.make_node("Reshape", ["Y", "shape"], ["y"])],
        "quantized_lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seqlen"])],
        weights,
    )
    opsets = [helper.make_opsetid("", 12), helper.make_opsetid("com.microsoft", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)


def test_onnx_runtime_contrib_lstm_imports_and_runs_with_onnx_runtimes_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """com.microsoft.DynamicQuantizeLSTM's outputs are typed by ONNX
    Runtime's shape function; memplan-run runs the operator, which
    onnx.reference lacks, with ONNX Runtime's kernel in planned memory (and
    the whole model in ONNX Runtime as the reference); without onnxruntime
    it names the kernel it lacks and what would give it."""
    from memplan.tools.memplan_run import main as run_main

    path = tmp_path / "quantized_lstm.onnx"
    _dynamic_quantize_lstm_model(path)
    code, out, err = _import_cli([str(path)], capsys)
    assert code == 0, err
    assert "-> (tensor<5x2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>)" in out
    assert "func.func @main(%x: tensor<5x1x8xf32>) -> tensor<5x8xf32>" in out
    assert run_main([str(path)]) == 0
    report = capsys.readouterr().out
    assert "y       float32[5,8]  bit-identical         max |diff| 0" in report
    assert report.endswith("result: OK\n")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    assert run_main([str(path), "--no-reference"]) == 1
    [line] = capsys.readouterr().err.splitlines()[-1:]
    assert line == (
        "memplan-run: error: unplanned run: kernel @onnx.com.microsoft.DynamicQuantizeLSTM "
        "failed: memplan-run has no kernel for ONNX operator com.microsoft.DynamicQuantizeLSTM "
        "(onnx.reference: Node type 'DynamicQuantizeLSTM' from domain 'com.microsoft' is "
        "unknown, known functions: [].); install onnxruntime to run it with ONNX Runtime's "
        "kernel, or give one with --kernels FILE.py"
    )
