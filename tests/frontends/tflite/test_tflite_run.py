"""memplan-run on `.tflite` models: every NumPy kernel against TFLite's own
interpreter (ai-edge-litert), through the real entry point: each case is a
one-operator model built with TFLite's schema, imported, planned, run
planned and unplanned (bit-identical) and compared with TFLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import tflite
from fixtures.tflite import make_fixtures as fx

from memplan.tools import memplan_run, runs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite"

F32, I32 = tflite.TensorType.FLOAT32, tflite.TensorType.INT32
SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID
RELU6 = tflite.ActivationFunctionType.RELU6
rng = np.random.default_rng(0)


def _weights(*shape: int) -> bytes:
    return rng.standard_normal(shape).astype(np.float32).tobytes()


def _ints(*values: int) -> bytes:
    return np.asarray(values, np.int32).tobytes()


def one_op(
    builtin: str,
    x: list[int],
    out: list[int] | list[list[int]],
    constants: list[tuple[list[int], int, bytes]] = [],  # noqa: B006 - never mutated
    options: tuple[str, dict[str, Any]] | None = None,
    extra_inputs: int = 0,
    x_type: int = F32,
    out_type: int = F32,
) -> bytes:
    """A model computing ``builtin`` of input ``x`` (and ``extra_inputs``
    more inputs of the same shape and type) and ``constants``; ``out`` is
    the result's shape, or a list of shapes for several results."""
    tensors = [fx.TensorSpec(f"x{i}", x, x_type) for i in range(1 + extra_inputs)]
    for index, (shape, kind, data) in enumerate(constants):
        tensors.append(fx.TensorSpec(f"c{index}", shape, kind, data))
    operands = list(range(len(tensors)))
    outs = cast(list[list[int]], out if out and isinstance(out[0], list) else [out])
    for index, shape in enumerate(outs):
        tensors.append(fx.TensorSpec(f"y{index}", shape, out_type))
    results = list(range(len(operands), len(tensors)))
    operator = fx.OperatorSpec(builtin, operands, results, options=options)
    inputs = list(range(1 + extra_inputs))
    return fx.build_model([fx.SubgraphSpec(tensors, [operator], inputs, results)])


def _conv(padding: int, stride: int, dilation: int = 1) -> dict[str, int]:
    return {
        "Padding": padding,
        "StrideW": stride,
        "StrideH": stride,
        "DilationWFactor": dilation,
        "DilationHFactor": dilation,
        "FusedActivationFunction": RELU6,
    }


def _pool(padding: int, stride: int, size: int) -> dict[str, int]:
    return {
        "Padding": padding,
        "StrideW": stride,
        "StrideH": stride,
        "FilterWidth": size,
        "FilterHeight": size,
    }


CASES: dict[str, bytes] = {
    "conv same stride 2": one_op(
        "CONV_2D",
        [1, 9, 9, 3],
        [1, 5, 5, 4],
        [([4, 3, 3, 3], F32, _weights(4, 3, 3, 3)), ([4], F32, _weights(4))],
        ("Conv2DOptions", _conv(SAME, 2)),
    ),
    "conv valid dilated": one_op(
        "CONV_2D",
        [1, 9, 9, 3],
        [1, 5, 5, 2],
        [([2, 3, 3, 3], F32, _weights(2, 3, 3, 3)), ([2], F32, _weights(2))],
        ("Conv2DOptions", _conv(VALID, 1, 2)),
    ),
    "depthwise multiplier 2": one_op(
        "DEPTHWISE_CONV_2D",
        [1, 8, 8, 3],
        [1, 8, 8, 6],
        [([1, 3, 3, 6], F32, _weights(1, 3, 3, 6)), ([6], F32, _weights(6))],
        ("DepthwiseConv2DOptions", _conv(SAME, 1) | {"DepthMultiplier": 2}),
    ),
    "max pool same": one_op(
        "MAX_POOL_2D", [1, 7, 7, 2], [1, 4, 4, 2], options=("Pool2DOptions", _pool(SAME, 2, 3))
    ),
    "average pool same": one_op(
        "AVERAGE_POOL_2D", [1, 7, 7, 2], [1, 4, 4, 2], options=("Pool2DOptions", _pool(SAME, 2, 3))
    ),
    "fully connected": one_op(
        "FULLY_CONNECTED",
        [2, 8],
        [2, 5],
        [([5, 8], F32, _weights(5, 8)), ([5], F32, _weights(5))],
        ("FullyConnectedOptions", {}),
    ),
    "add broadcast": one_op("ADD", [1, 4, 4, 3], [1, 4, 4, 3], [([3], F32, _weights(3))]),
    "mul": one_op("MUL", [1, 4, 4, 3], [1, 4, 4, 3], extra_inputs=1),
    "sub": one_op("SUB", [2, 3], [2, 3], extra_inputs=1),
    "prelu": one_op("PRELU", [1, 4, 4, 3], [1, 4, 4, 3], [([1, 1, 3], F32, _weights(1, 1, 3))]),
    "relu": one_op("RELU", [2, 5], [2, 5]),
    "relu6": one_op("RELU6", [2, 5], [2, 5]),
    "logistic": one_op("LOGISTIC", [2, 5], [2, 5]),
    "tanh": one_op("TANH", [2, 5], [2, 5]),
    "hard swish": one_op("HARD_SWISH", [2, 5], [2, 5]),
    "leaky relu": one_op(
        "LEAKY_RELU", [2, 3, 4], [2, 3, 4], options=("LeakyReluOptions", {"Alpha": 0.2})
    ),
    "sin": one_op("SIN", [2, 3, 4], [2, 3, 4]),
    "transpose": one_op("TRANSPOSE", [2, 3, 4], [4, 2, 3], [([3], I32, _ints(2, 0, 1))]),
    "transpose nhwc to nchw": one_op(
        "TRANSPOSE", [1, 4, 5, 3], [1, 3, 4, 5], [([4], I32, _ints(0, 3, 1, 2))]
    ),
    "pad": one_op(
        "PAD", [1, 3, 3, 2], [1, 5, 4, 2], [([4, 2], I32, _ints(0, 0, 1, 1, 0, 1, 0, 0))]
    ),
    "strided slice": one_op(
        "STRIDED_SLICE",
        [1, 6, 6, 4],
        [1, 3, 2, 4],
        [
            ([4], I32, _ints(0, 0, 1, 0)),
            ([4], I32, _ints(1, 6, 5, 4)),
            ([4], I32, _ints(1, 2, 2, 1)),
        ],
        ("StridedSliceOptions", {"BeginMask": 9, "EndMask": 9}),
    ),
    "resize bilinear half pixel": one_op(
        "RESIZE_BILINEAR",
        [1, 3, 4, 2],
        [1, 6, 8, 2],
        [([2], I32, _ints(6, 8))],
        ("ResizeBilinearOptions", {"HalfPixelCenters": True}),
    ),
    "resize bilinear align corners": one_op(
        "RESIZE_BILINEAR",
        [1, 3, 4, 2],
        [1, 5, 7, 2],
        [([2], I32, _ints(5, 7))],
        ("ResizeBilinearOptions", {"AlignCorners": True}),
    ),
    "concatenation": one_op(
        "CONCATENATION",
        [1, 2, 2, 3],
        [1, 2, 2, 6],
        options=("ConcatenationOptions", {"Axis": 3}),
        extra_inputs=1,
    ),
    "mean": one_op(
        "MEAN",
        [1, 4, 4, 3],
        [1, 1, 1, 3],
        [([2], I32, _ints(1, 2))],
        ("ReducerOptions", {"KeepDims": True}),
    ),
    "maximum": one_op("MAXIMUM", [2, 3, 4], [2, 3, 4], extra_inputs=1),
    "maximum int32": one_op("MAXIMUM", [2, 3], [2, 3], extra_inputs=1, x_type=I32, out_type=I32),
    "mirror pad reflect": one_op(
        "MIRROR_PAD",
        [1, 4, 5, 2],
        [1, 6, 9, 2],
        [([4, 2], I32, _ints(0, 0, 1, 1, 2, 2, 0, 0))],
        ("MirrorPadOptions", {"Mode": tflite.MirrorPadMode.REFLECT}),
    ),
    "mirror pad symmetric": one_op(
        "MIRROR_PAD",
        [1, 1, 7],
        [1, 1, 12],
        [([3, 2], I32, _ints(0, 0, 0, 0, 3, 2))],
        ("MirrorPadOptions", {"Mode": tflite.MirrorPadMode.SYMMETRIC}),
    ),
    "neg": one_op("NEG", [2, 5], [2, 5]),
    "abs": one_op("ABS", [2, 5], [2, 5]),
    "exp": one_op("EXP", [2, 5], [2, 5]),
    "square": one_op("SQUARE", [2, 5], [2, 5]),
    "div": one_op("DIV", [2, 5], [2, 5], extra_inputs=1, options=("DivOptions", {})),
    "floor div int32": one_op(
        "FLOOR_DIV", [2, 5], [2, 5], [([1], I32, _ints(3))], x_type=I32, out_type=I32
    ),
    "sum": one_op(
        "SUM",
        [2, 3, 4],
        [2, 1, 1],
        [([2], I32, _ints(1, -1))],
        ("ReducerOptions", {"KeepDims": True}),
    ),
    "reduce max": one_op(
        "REDUCE_MAX", [2, 3, 4], [3], [([2], I32, _ints(0, 2))], ("ReducerOptions", {})
    ),
    "reduce min": one_op(
        "REDUCE_MIN", [2, 3, 4], [2, 4], [([1], I32, _ints(1))], ("ReducerOptions", {})
    ),
    "reduce prod": one_op(
        "REDUCE_PROD", [2, 3, 4], [2, 3], [([1], I32, _ints(2))], ("ReducerOptions", {})
    ),
    "pack": one_op(
        "PACK",
        [2, 3],
        [2, 2, 3],
        options=("PackOptions", {"ValuesCount": 2, "Axis": 1}),
        extra_inputs=1,
    ),
    "split v": one_op(
        "SPLIT_V",
        [2, 7],
        [[2, 2], [2, 4], [2, 1]],
        [([3], I32, _ints(2, -1, 1)), ([], I32, _ints(1))],
        ("SplitVOptions", {"NumSplits": 3}),
    ),
    "gather": one_op(
        "GATHER", [3, 4, 2], [3, 3, 2], [([3], I32, _ints(3, 0, 3))], ("GatherOptions", {"Axis": 1})
    ),
    "batch matmul adj y": one_op(
        "BATCH_MATMUL",
        [2, 3, 4],
        [2, 3, 3],
        options=("BatchMatMulOptions", {"AdjY": True}),
        extra_inputs=1,
    ),
    "reverse v2": one_op("REVERSE_V2", [2, 3, 4], [2, 3, 4], [([1], I32, _ints(1))]),
    "select v2": one_op(
        "SELECT_V2",
        [2, 3],
        [2, 3],
        [([2, 3], F32, _weights(2, 3)), ([3], F32, _weights(3))],
        x_type=tflite.TensorType.BOOL,
    ),
    "shape": one_op(
        "SHAPE", [2, 3, 4], [3], options=("ShapeOptions", {"OutType": I32}), out_type=I32
    ),
    "cast int32 to float": one_op("CAST", [2, 3], [2, 3], x_type=I32),
    "depth to space": one_op(
        "DEPTH_TO_SPACE",
        [1, 2, 3, 8],
        [1, 4, 6, 2],
        options=("DepthToSpaceOptions", {"BlockSize": 2}),
    ),
}


def _positive(*shape: int) -> np.ndarray:
    return rng.uniform(0.1, 4.0, shape).astype(np.float32)


INPUT_CASES: dict[str, tuple[bytes, dict[str, np.ndarray]]] = {
    # Operators of a positive input (okay_nabu's RSQRT of a variance).
    "rsqrt": (one_op("RSQRT", [2, 3, 4], [2, 3, 4]), {"x0": _positive(2, 3, 4)}),
    "sqrt": (one_op("SQRT", [2, 5], [2, 5]), {"x0": _positive(2, 5)}),
    "log": (one_op("LOG", [2, 5], [2, 5]), {"x0": _positive(2, 5)}),
    "pow": (
        one_op("POW", [2, 5], [2, 5], extra_inputs=1),
        {"x0": _positive(2, 5), "x1": _positive(2, 5)},
    ),
    # A RANGE whose length the model records: start 1, limit 9, delta 2.
    "range": (
        one_op(
            "RANGE", [], [4], [([], I32, _ints(9)), ([], I32, _ints(2))], x_type=I32, out_type=I32
        ),
        {"x0": np.array(1, np.int32)},
    ),
}
"""One-operator models and the inputs they need (random ones would not do)."""


@pytest.mark.parametrize("case", sorted(INPUT_CASES))
def test_kernel_on_given_inputs_matches_tflite(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, inputs = INPUT_CASES[case]
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    np.savez(tmp_path / "inputs.npz", **cast(dict[str, Any], inputs))
    arguments = [str(path), "--inputs", str(tmp_path / "inputs.npz")]
    code = memplan_run.main([*arguments, "--atol", "1e-5", "--rtol", "1e-6"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "bit-identical" in out and "result: OK" in out


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_matches_tflite(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(CASES[case])
    code = memplan_run.main([str(path), "--atol", "1e-5", "--rtol", "1e-6"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "bit-identical" in out and "result: OK" in out


def test_a_wrong_kernel_is_caught_by_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The comparison with TFLite can fail: a kernel off by one ulp-scale
    # amount is reported as beyond the tolerance, exit 1.
    from memplan.tools.frontends.tflite import kernels as tflite_kernels

    monkeypatch.setitem(tflite_kernels.KERNELS, "RELU", lambda ins, options: ins[0] * 1.001)
    path = tmp_path / "relu.tflite"
    path.write_bytes(CASES["relu"])
    assert memplan_run.main([str(path)]) == 1
    assert "> tolerance" in capsys.readouterr().out


def test_model_with_a_custom_op_says_why_it_cannot_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = memplan_run.main([str(FIXTURES / "convnet.tflite"), "--no-reference"])
    assert code == 1
    err = capsys.readouterr().err
    assert "no kernel for TFLite operator MyCustom" in err


def test_the_formats_own_options_reach_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    """memplan-run takes TFLite's options from the front-end registry:
    --inputs-in-arena copies the input first (one more kernel call, run
    bit-identical at every size), and a subgraph other than the one the
    reference interpreter runs is refused in one line."""
    model = str(FIXTURES / "dynamic.tflite")
    assert memplan_run.main([model, "--upper-bound", "x:0=4", "--inputs-in-arena"]) == 0
    out = capsys.readouterr().out
    assert out.count("kernel calls: 9 unplanned, 8 planned") == 3
    assert out.count("result: OK") == 3
    assert memplan_run.main([str(FIXTURES / "while.tflite"), "--subgraph", "1"]) == 1
    assert capsys.readouterr().err == (
        "memplan-run: error: --subgraph 1: memplan-run runs subgraph 0 "
        "(the one TFLite's interpreter runs as the reference)\n"
    )


@pytest.mark.parametrize("rows", [[1, 7, 12], [12]])
def test_dynamic_batch_runs_at_every_size_under_one_plan(rows: list[int]) -> None:
    """dynamic.tflite under x:0 <= 12: one plan, one pool size at every row
    count, bit-identical to the unplanned run and within tolerance of
    TFLite's interpreter resized to the same rows."""
    reports = runs.run_tflite(
        str(FIXTURES / "dynamic.tflite"),
        "manifest-alloc,insert-kills,usmp",
        upper_bounds={("x", 0): 12},
        dim_values={"x:0": rows},
    )
    assert [label for label, _ in reports] == [f"x:0={n}" for n in rows]
    for (_, report), n in zip(reports, rows):
        assert report.ok, report.format()
        assert report.outputs[0].shape == (n, 4, 4)
        assert report.pool_bytes == {"workspace_cpu": 2 * 12 * 16 * 4}
        assert report.unpinned_bytes == 0


def test_input_smaller_than_the_window_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model saved with placeholder input sizes (pyopen-wakeword's
    melspectrogram: [1, 1] for audio the package feeds as [1, 1760]): its
    convolution's window does not fit, which TFLite refuses when it
    prepares the model; memplan-run names the sizes and the option."""
    path = tmp_path / "model.tflite"
    path.write_bytes(
        one_op(
            "CONV_2D",
            [1, 2, 2, 1],
            [1, 1, 1, 1],
            [([1, 3, 3, 1], F32, _weights(1, 3, 3, 1))],
            ("Conv2DOptions", _conv(VALID, 1)),
        )
    )
    assert memplan_run.main([str(path), "--no-reference"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith(
        "kernel @tfl.CONV_2D failed: a 2x2 input (padded 2x2) is smaller than the 3x3 window; "
        "if the model's input sizes are placeholders, give them with --input-shape"
    )


def test_quantized_operator_names_the_kernel_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """memplan-run computes float32 (pymicro-wakeword's int8 models): an
    int8 ADD with a scale is one line naming the kernel it lacks."""
    int8 = tflite.TensorType.INT8
    tensors = [
        fx.TensorSpec(name, [2, 3], int8, scale=[0.5], zero_point=[1]) for name in ("a", "b", "y")
    ]
    operator = fx.OperatorSpec("ADD", [0, 1], [2], options=("AddOptions", {}))
    path = tmp_path / "quantized_add.tflite"
    path.write_bytes(fx.build_model([fx.SubgraphSpec(tensors, [operator], [0, 1], [2])]))
    assert memplan_run.main([str(path), "--no-reference"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        "memplan-run: error: unplanned run: kernel @tfl.ADD failed: memplan-run has no kernel "
        "for TFLite operator ADD on quantized int8 (@tfl.ADD): its kernels compute float32 and "
        "complex64, and unquantized integers where TFLite is exact"
    )


I8, U8 = tflite.TensorType.INT8, tflite.TensorType.UINT8


def int8_op(
    builtin: str,
    x: tuple[list[int], float, int],
    out: tuple[list[int], float, int],
    weight: tuple[list[int], list[float], int] | None = None,
    options: tuple[str, dict[str, Any]] | None = None,
    out_type: int = I8,
    second_input: bool = False,
) -> bytes:
    """A quantized model: ``builtin`` of int8 input ``x`` (shape, scale, zero
    point), with an int8 ``weight`` (shape, per-channel scales, quantized
    dimension) and its int32 bias when given (bias scale: input scale x
    weight scale, as TFLite's converter writes it); ``out``: the result's
    shape, scale and zero point."""
    rng8 = np.random.default_rng(8)
    tensors = [fx.TensorSpec("x", x[0], I8, scale=[x[1]], zero_point=[x[2]])]
    if second_input:
        tensors.append(fx.TensorSpec("x1", x[0], I8, scale=[x[1]], zero_point=[x[2]]))
    if weight is not None:
        shape, scales, axis = weight
        data = rng8.integers(-127, 128, shape, dtype=np.int8).tobytes()
        tensors.append(
            fx.TensorSpec("w", shape, I8, data, scales, [0] * len(scales), quantized_dimension=axis)
        )
        channels = shape[axis]
        bias = rng8.integers(-2000, 2000, channels, dtype=np.int32).tobytes()
        bias_scales = [x[1] * s for s in scales] * (channels // len(scales))
        tensors.append(fx.TensorSpec("b", [channels], I32, bias, bias_scales, [0] * channels))
    tensors.append(fx.TensorSpec("y", out[0], out_type, scale=[out[1]], zero_point=[out[2]]))
    inputs = [0, 1] if second_input else [0]
    operator = fx.OperatorSpec(
        builtin, list(range(len(tensors) - 1)), [len(tensors) - 1], options=options
    )
    return fx.build_model([fx.SubgraphSpec(tensors, [operator], inputs, [len(tensors) - 1])])


INT8_CASES: dict[str, bytes] = {
    "conv int8 per channel same stride 2 relu6": int8_op(
        "CONV_2D",
        ([1, 9, 9, 3], 0.05, -3),
        ([1, 5, 5, 4], 0.02, 5),
        ([4, 3, 3, 3], [0.011, 0.007, 0.013, 0.009], 0),
        ("Conv2DOptions", _conv(SAME, 2)),
    ),
    "depthwise int8 per channel": int8_op(
        "DEPTHWISE_CONV_2D",
        ([1, 8, 8, 3], 0.04, 10),
        ([1, 8, 8, 3], 0.03, -7),
        ([1, 3, 3, 3], [0.012, 0.008, 0.01], 3),
        (
            "DepthwiseConv2DOptions",
            _conv(SAME, 1) | {"DepthMultiplier": 1, "FusedActivationFunction": 0},
        ),
    ),
    "fully connected int8": int8_op(
        "FULLY_CONNECTED",
        ([2, 16], 0.05, -128),
        ([2, 5], 0.09, 36),
        ([5, 16], [0.004], 0),
        ("FullyConnectedOptions", {}),
    ),
    "logistic int8": int8_op("LOGISTIC", ([4, 64], 0.0947, 36), ([4, 64], 1 / 256, -128)),
    "quantize int8 to uint8": int8_op(
        "QUANTIZE", ([4, 64], 1 / 256, -128), ([4, 64], 1 / 256, 0), out_type=U8
    ),
    "requantize int8": int8_op("QUANTIZE", ([4, 64], 0.03, 3), ([4, 64], 0.05, -9)),
    "concatenation int8": int8_op(
        "CONCATENATION",
        ([2, 3], 0.1, -128),
        ([2, 6], 0.1, -128),
        options=("ConcatenationOptions", {"Axis": 1}),
        second_input=True,
    ),
}
"""pymicro-wakeword's int8 operators, one model each: memplan-run's integer
kernels against TFLite's, bit for bit."""


@pytest.mark.parametrize("case", sorted(INT8_CASES))
def test_int8_kernel_matches_tflite_bit_for_bit(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(INT8_CASES[case])
    for seed in ("0", "1", "2"):
        code = memplan_run.main([str(path), "--seed", seed, "--atol", "0", "--rtol", "0"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert "bit-identical" in out and "max |diff| 0" in out and "result: OK" in out
