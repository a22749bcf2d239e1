"""`memory.dim_exprs` of the ONNX importer: at sizes inside the ranges,
each expression equals the dim ONNX's own shape inference gives with the
inputs fixed at those sizes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr

from memplan.dialect.ops import DIM_EXPRS_ATTR, DIM_SYMBOLS_ATTR
from memplan.dialect.size_expr import parse_size_expr
from memplan.tools.frontends.onnx import importer

pytest.importorskip("onnxruntime")
pytest.importorskip("sympy")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "onnx"


def _windows() -> onnx.ModelProto:
    """Windows of several strides, pads and roundings over x: f32[1, 2, H, W]."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Conv", ["c1", "w2"], ["c2"], kernel_shape=[2, 2], strides=[3, 3]),
        helper.make_node(
            "MaxPool", ["c2"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1
        ),
        helper.make_node("AveragePool", ["c1"], ["a"], kernel_shape=[3, 3], strides=[2, 2]),
    ]
    graph = helper.make_graph(
        nodes,
        "windows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "H", "W"])],
        [
            helper.make_tensor_value_info("p", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
        ],
        initializer=[
            numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "w1"),
            numpy_helper.from_array(rng.standard_normal((4, 4, 2, 2)).astype(np.float32), "w2"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _transposed() -> onnx.ModelProto:
    """ConvTransposes of x: f32[1, 2, H, W] with each way of padding."""
    rng = np.random.default_rng(1)

    def up(output: str, weights: str, **attributes: Any) -> onnx.NodeProto:
        return helper.make_node("ConvTranspose", ["x", weights], [output], **attributes)

    nodes = [
        up("same", "w3", strides=[2, 2], auto_pad="SAME_UPPER"),
        # ONNX's inference pads 0 here and makes H 3*(H - 1) + 1, not 3*H.
        up("same_short", "w1", strides=[3, 3], auto_pad="SAME_LOWER"),
        helper.make_node("Relu", ["same_short"], ["after_short"]),
        up("valid", "w2", strides=[3, 3], auto_pad="VALID", output_padding=[1, 2], group=2),
        up("dilated", "w3", strides=[2, 2], dilations=[2, 1], pads=[1, 1, 1, 0]),
        up("shaped", "w3", strides=[2, 2], output_shape=[20, 24]),
    ]
    graph = helper.make_graph(
        nodes,
        "transposed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "H", "W"])],
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
            for name in ("same", "after_short", "valid", "dilated", "shaped")
        ],
        initializer=[
            numpy_helper.from_array(rng.standard_normal((2, 3, k, k)).astype(np.float32), f"w{k}")
            for k in (1, 2, 3)
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _model(name: str) -> onnx.ModelProto:
    built = {"windows": _windows, "transposed": _transposed}.get(name)
    return built() if built is not None else onnx.load(FIXTURES / f"{name}.onnx")


def _dim_exprs(module: Any) -> dict[str, list[str]]:
    """Each call result's expressions, by its ONNX name."""
    found: dict[str, list[str]] = {}
    for op in module.walk():
        attr = op.attributes.get(DIM_EXPRS_ATTR)
        if isinstance(op, func.CallOp) and isinstance(attr, ArrayAttr):
            for result, dims in zip(op.results, attr.data):
                assert isinstance(dims, ArrayAttr) and result.name_hint
                found[result.name_hint] = [
                    text.data for text in dims.data if isinstance(text, StringAttr)
                ]
    return found


def _inferred(model: onnx.ModelProto, sizes: Mapping[str, int]) -> dict[str, list[int]]:
    """ONNX's shape inference with the inputs' symbols at ``sizes``."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    for graph_input in fixed.graph.input:
        for dim in graph_input.type.tensor_type.shape.dim:
            if dim.dim_param in sizes:
                dim.dim_value = sizes[dim.dim_param]
    inferred = onnx.shape_inference.infer_shapes(fixed, strict_mode=True)
    return {
        info.name: [d.dim_value for d in info.type.tensor_type.shape.dim]
        for info in [*inferred.graph.value_info, *inferred.graph.output]
    }


CASES = [
    ("windows", {"H": 64, "W": 48}, {"H": 8, "W": 8}, [(8, 8), (9, 13), (31, 17), (64, 48)]),
    ("dynamic_batch", {"N": 64}, {}, [(1,), (7,), (64,)]),
    ("transposed", {"H": 40, "W": 48}, {"H": 4, "W": 4}, [(4, 4), (9, 10), (17, 31), (40, 48)]),
    (
        "conv_transpose",
        {"H": 64, "W": 64},
        {"H": 8, "W": 8},
        [(8, 8), (9, 15), (33, 50), (64, 64)],
    ),
    (
        "hardswish_hw",
        {"H": 16, "W": 16, "P": 16, "Q": 16},
        {"H": 2, "W": 2},
        [(3, 1, 5, 5), (5, 5, 1, 7)],
    ),
]


@pytest.mark.parametrize(("name", "upper", "lower", "points"), CASES, ids=[c[0] for c in CASES])
def test_expressions_equal_onnx_shape_inference_inside_the_range(
    name: str, upper: dict[str, int], lower: dict[str, int], points: list[tuple[int, ...]]
) -> None:
    model = _model(name)
    module = importer.import_model(model, upper_bounds=upper, lower_bounds=lower)
    exprs = _dim_exprs(module)
    assert exprs, "no call got expressions"
    for point in points:
        sizes = dict(zip(sorted(upper), point))
        inferred = _inferred(model, sizes)
        for tensor, texts in exprs.items():
            values = [parse_size_expr(text).evaluate(sizes) for text in texts]
            assert values == inferred[tensor], (tensor, texts, sizes)


def test_windows_round_as_their_attributes_say() -> None:
    """Strides round up or down as ONNX says; a subtraction that does not
    fold leaves the tensor without an expression."""
    module = importer.import_model(
        _windows(), upper_bounds={"H": 64, "W": 48}, lower_bounds={"H": 8, "W": 8}
    )
    exprs = _dim_exprs(module)
    assert exprs["c1"][2:] == ["ceildiv(H, 2)", "ceildiv(W, 2)"]
    # floor((c1 - 2) / 3) + 1: the subtraction folds into the division.
    assert exprs["c2"][2] == "floordiv(ceildiv(H, 2) + 1, 3)"
    assert exprs["p"][2] == "ceildiv(floordiv(ceildiv(H, 2) + 1, 3), 2)"
    # floor((c1 - 3) / 2) + 1 keeps one: no expression, the storage keeps its max.
    assert "a" not in exprs
    main = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    symbols = main.attributes[DIM_SYMBOLS_ATTR]
    assert isinstance(symbols, DictionaryAttr) and set(symbols.data) == {"H", "W"}


def test_conv_transposes_scale_as_their_attributes_say() -> None:
    """A ConvTranspose's dim is s*d plus what its kernel, pads and
    output_padding add; a dim ONNX's inference and the operator disagree on
    (auto_pad SAME with a kernel shorter than the stride) gets none, nor does
    anything computed from it; output_shape makes the dims static."""
    module = importer.import_model(
        _transposed(), upper_bounds={"H": 40, "W": 48}, lower_bounds={"H": 4, "W": 4}
    )
    exprs = _dim_exprs(module)
    assert exprs["same"] == ["1", "3", "2*H", "2*W"]
    # 2 groups of 3 channels each.
    assert exprs["valid"] == ["1", "6", "3*H", "3*W + 1"]
    # 2*(H - 1) + (3 - 1)*2 + 1 - 2 and 2*(W - 1) + 3 - 1.
    assert exprs["dilated"] == ["1", "3", "2*H + 1", "2*W"]
    assert "same_short" not in exprs and "after_short" not in exprs
    assert "shaped" not in exprs


def test_an_import_without_ranges_loads_no_onnxruntime() -> None:
    probe = (
        "import sys\n"
        "from memplan.tools.frontends.onnx import importer\n"
        f"importer.import_onnx({str(FIXTURES / 'mlp.onnx')!r})\n"
        "print(sorted(m for m in ('onnxruntime', 'sympy') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_an_import_with_ranges_loads_no_torch() -> None:
    """ONNX Runtime's ``tools`` package imports torch when it is installed;
    the symbolic inference is loaded without it."""
    probe = (
        "import sys\n"
        "from memplan.tools.frontends.onnx import importer\n"
        f"module = importer.import_onnx({str(FIXTURES / 'dynamic_batch.onnx')!r},"
        " upper_bounds={'N': 64})\n"
        "assert 'memory.reserve' not in str(module) and 'memory.dim_exprs' in str(module)\n"
        "print(sorted(m for m in ('torch', 'onnxruntime.tools', 'sympy') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "['sympy']"
