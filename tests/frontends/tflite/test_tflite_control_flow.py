"""TFLite control flow and input shapes through the real command lines:
`IF` and `WHILE` import as `scf.if` / `scf.while` and memplan-run shows
them bit-identical to TFLite's own interpreter (ai-edge-litert);
`--input-shape` fixes the dims a model leaves dynamic (-1 in its
``shape_signature``), and bad specs are one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite
from fixtures.tflite import make_fixtures as fx

from memplan.tools import memplan_import, memplan_run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite"

F32, I32, BOOL = tflite.TensorType.FLOAT32, tflite.TensorType.INT32, tflite.TensorType.BOOL


def _import(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = memplan_import.main(argv, prog="memplan-import-tflite", format_key="tflite")
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = memplan_run.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fixtures_are_what_make_fixtures_writes() -> None:
    assert (FIXTURES / "if_else.tflite").read_bytes() == fx.if_else()
    assert (FIXTURES / "while_tensor.tflite").read_bytes() == fx.while_tensor()


# ---------------------------------------------------------------------------
# IF and WHILE
# ---------------------------------------------------------------------------


def test_if_imports_as_scf_if_with_both_branches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _import([str(FIXTURES / "if_else.tflite")], capsys)
    assert code == 0, err
    assert out.count("scf.if") == 1 and "tensor.extract" in out
    # then: MUL and ADD with its own constant; else: SUB with its own.
    body = out[out.index("scf.if") :]
    then_part, else_part = body.split("} else {", 1)
    assert "@tfl.MUL" in then_part and "@tfl.ADD" in then_part and "@half" in then_part
    assert "@tfl.SUB" in else_part and "@quarter" in else_part
    assert "memory.tflite.subgraph = 1 : i64" in out and "memory.tflite.subgraph = 2 : i64" in out


def test_while_with_a_constant_trip_count_imports_as_scf_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # i from 0 while i < 3, i += 1: three trips known at import time; the
    # condition subgraph is not emitted.
    code, out, err = _import([str(FIXTURES / "while_tensor.tflite")], capsys)
    assert code == 0, err
    assert "%trips = arith.constant 3 : index" in out
    assert "scf.for %iteration = %c0 to %trips step %c1 iter_args(" in out
    assert "scf.while" not in out and "@tfl.LESS" not in out


def test_while_decided_at_run_time_imports_as_scf_while(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # while.tflite counts an input to 10: condition and body as regions.
    code, out, err = _import([str(FIXTURES / "while.tflite")], capsys)
    assert code == 0, err
    assert "scf.while" in out and "scf.condition" in out and "tensor.extract" in out
    assert out.index("@tfl.LESS") < out.index("scf.condition") < out.index("@tfl.ADD")
    # Planned like scf.for: %i carried in one buffer allocated before the
    # loop, the ADD writing over it; bit-identical to TFLite.
    code, out, err = _run([str(FIXTURES / "while.tflite"), "--atol", "0", "--rtol", "0"], capsys)
    assert code == 0, out + err
    assert "bit-identical" in out and "result: OK" in out


@pytest.mark.parametrize("flag", [True, False])
def test_if_runs_bit_identical_to_tflite(
    flag: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "inputs.npz"
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    np.savez(inputs, flag=np.asarray(flag), x=x)
    saved = tmp_path / "out.npz"
    argv = [str(FIXTURES / "if_else.tflite"), "--inputs", str(inputs), "-o", str(saved)]
    code, out, err = _run([*argv, "--atol", "0", "--rtol", "0"], capsys)
    assert code == 0, out + err
    assert "bit-identical" in out and "result: OK" in out
    expected = (x * x + np.float32(0.5) if flag else x - np.float32(0.25)) + x
    np.testing.assert_array_equal(np.load(saved)["y"], expected)


def test_while_runs_bit_identical_to_tflite(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        [str(FIXTURES / "while_tensor.tflite"), "--atol", "0", "--rtol", "0"], capsys
    )
    assert code == 0, out + err
    assert "bit-identical" in out and "result: OK" in out


def _loop_model(body: int, body_inputs: int = 1, body_type: int = F32) -> bytes:
    """``WHILE`` over ``x: f32[4]`` with condition subgraph 1 and body
    subgraph ``body`` (2 is well formed; 0 runs the main graph again)."""
    main = fx.SubgraphSpec(
        [fx.TensorSpec("x", [4], F32), fx.TensorSpec("x_out", [4], F32)],
        [
            fx.OperatorSpec(
                "WHILE",
                [0],
                [1],
                options=("WhileOptions", {"CondSubgraphIndex": 1, "BodySubgraphIndex": body}),
            )
        ],
        [0],
        [1],
    )
    condition = fx.SubgraphSpec(
        [fx.TensorSpec("x", [4], F32), fx.TensorSpec("stop", [], BOOL)],
        [fx.OperatorSpec("CUSTOM", [0], [1], custom_code="Stop")],
        [0],
        [1],
    )
    tensors = [fx.TensorSpec(f"in{i}", [4], body_type) for i in range(body_inputs)]
    tensors.append(fx.TensorSpec("next", [4], body_type))
    loop_body = fx.SubgraphSpec(
        tensors,
        [fx.OperatorSpec("RELU", [0], [body_inputs])],
        list(range(body_inputs)),
        [body_inputs],
    )
    return fx.build_model([main, condition, loop_body])


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            _loop_model(body=0),
            "operator 0 (WHILE): its body is subgraph 0, which is already running "
            "(subgraphs 0 -> 0): recursion is not supported",
        ),
        (
            _loop_model(body=2, body_inputs=2),
            "operator 0 (WHILE): its body (subgraph 2) takes 2 inputs, it is given 1",
        ),
        (
            _loop_model(body=2, body_type=I32),
            "operator 0 (WHILE): input 0 'in0' of its body (subgraph 2) is tensor<4xi32>, "
            "it is given tensor<4xf32>",
        ),
        (
            _loop_model(body=7),
            "operator 0 (WHILE): its body: ",
        ),
    ],
)
def test_bad_control_flow_is_one_line(
    model: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    output = tmp_path / "out.mlir"
    code, _, err = _import([str(path), "-o", str(output)], capsys)
    assert code == 1
    assert err.startswith(f"memplan-import-tflite: error: {message}"), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not output.exists()


_HANDLE = ("VarHandleOptions", {"SharedName": "state"})
_RESOURCE = tflite.TensorType.RESOURCE


def _variable_model(init_operators: list[fx.OperatorSpec], call_once: bool = True) -> bytes:
    """A model reading variable 'state' (f32[4]) after a CALL_ONCE of an
    init subgraph running ``init_operators`` on a handle (tensor 0), a
    constant (1) and a result (2)."""
    main = fx.SubgraphSpec(
        [
            fx.TensorSpec("x", [4], F32),
            fx.TensorSpec("handle", [], _RESOURCE),
            fx.TensorSpec("state", [4], F32),
            fx.TensorSpec("y", [4], F32),
        ],
        [
            *(
                [
                    fx.OperatorSpec(
                        "CALL_ONCE", [], [], options=("CallOnceOptions", {"InitSubgraphIndex": 1})
                    )
                ]
                if call_once
                else []
            ),
            fx.OperatorSpec("VAR_HANDLE", [], [1], options=_HANDLE),
            fx.OperatorSpec("READ_VARIABLE", [1], [2]),
            fx.OperatorSpec("ADD", [0, 2], [3], options=("AddOptions", {})),
        ],
        [0],
        [3],
    )
    start = np.zeros(4, np.float32).tobytes()
    init = fx.SubgraphSpec(
        [
            fx.TensorSpec("init_handle", [], _RESOURCE),
            fx.TensorSpec("start", [4], F32, start),
            fx.TensorSpec("doubled", [4], F32),
        ],
        init_operators,
        [],
        [],
    )
    return fx.build_model([main, init])


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            _variable_model(
                [
                    fx.OperatorSpec("VAR_HANDLE", [], [0], options=_HANDLE),
                    fx.OperatorSpec("ADD", [1, 1], [2], options=("AddOptions", {})),
                    fx.OperatorSpec("ASSIGN_VARIABLE", [0, 2], []),
                ]
            ),
            "operator 0 (CALL_ONCE): its init subgraph 1 runs operator 1 (ADD); memplan "
            "imports an init subgraph that only assigns constants to resource variables "
            "(VAR_HANDLE, ASSIGN_VARIABLE)",
        ),
        (
            _variable_model([fx.OperatorSpec("VAR_HANDLE", [], [0], options=_HANDLE)], False),
            "operator 0 (VAR_HANDLE): resource variable 'state' is given its initial value by "
            "no CALL_ONCE before it; memplan imports variables a CALL_ONCE subgraph initialises",
        ),
        (
            _variable_model(
                [
                    fx.OperatorSpec("VAR_HANDLE", [], [0], options=_HANDLE),
                    fx.OperatorSpec("ASSIGN_VARIABLE", [0, 1], []),
                    fx.OperatorSpec("ASSIGN_VARIABLE", [0, 1], []),
                ]
            ),
            "operator 0 (CALL_ONCE): resource variable 'state' is assigned twice",
        ),
    ],
    ids=["init-computes", "no-init", "assigned-twice"],
)
def test_refused_variables_are_one_line(
    model: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "variable.tflite"
    path.write_bytes(model)
    output = tmp_path / "out.mlir"
    code, _, err = _import([str(path), "-o", str(output)], capsys)
    assert code == 1
    assert err == f"memplan-import-tflite: error: {message}\n"
    assert not output.exists()


def test_variable_initialised_by_call_once_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The init subgraph's constant is the variable's data (memplan-run
    reads it from the model): x + 0 on the first invocation."""
    path = tmp_path / "variable.tflite"
    path.write_bytes(
        _variable_model(
            [
                fx.OperatorSpec("VAR_HANDLE", [], [0], options=_HANDLE),
                fx.OperatorSpec("ASSIGN_VARIABLE", [0, 1], []),
            ]
        )
    )
    code, out, _ = _import([str(path)], capsys)
    assert code == 0
    assert 'memory.tflite.variable = "state"' in out
    assert "func.call @tfl.READ_VARIABLE(%handle)" in out


# ---------------------------------------------------------------------------
# --input-shape
# ---------------------------------------------------------------------------


def test_input_shape_fixes_a_dynamic_batch(capsys: pytest.CaptureFixture[str]) -> None:
    # dynamic.tflite records x: [1, 8] with shape_signature [-1, 8].
    code, out, err = _import([str(FIXTURES / "dynamic.tflite"), "--input-shape", "x=5x8"], capsys)
    assert code == 0, err
    assert "func.func @main(%x: tensor<5x8xf32>) -> tensor<5x4x4xf32>" in out
    assert "?" not in out.split("func.func @main", 1)[1]


def test_memplan_run_takes_the_input_shape(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(FIXTURES / "dynamic.tflite"), "--input-shape", "x=3x8"]
    code, out, err = _run(argv, capsys)
    assert code == 0, out + err
    assert "result: OK" in out and "float32[3,4,4]  bit-identical" in out


def test_input_shape_with_an_upper_bound_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    # '?' keeps the model's dynamic dim, which --upper-bound then bounds.
    argv = [str(FIXTURES / "dynamic.tflite"), "--input-shape", "x=?x8", "--upper-bound", "x:0=6"]
    code, out, err = _import(argv, capsys)
    assert code == 0, err
    assert "tensor<?x8xf32>" in out and "memory.max_shapes" in out


def _framing_model() -> bytes:
    """BirdNET's framing in four operators: x [1, 8] (shape_signature
    [-1, 8]); ``STRIDED_SLICE(x, [0, 0], FLOOR_DIV(SHAPE(x), 1), [1, 1])``,
    whose end is computed by an operator TFLite does not evaluate when it
    prepares the model, so it sizes the slice only when it runs it (the
    model records a placeholder [1, 1]); a ``RESHAPE`` of that to
    [1, -1, 2] (recorded [1, 1, 2])."""
    tensors = [
        fx.TensorSpec("x", [1, 8], F32, shape_signature=[-1, 8]),
        fx.TensorSpec("shape", [2], I32, shape_signature=[2]),
        fx.TensorSpec("one", [], I32, np.ones((), np.int32).tobytes()),
        fx.TensorSpec("end", [2], I32, shape_signature=[2]),
        fx.TensorSpec("begin", [2], I32, np.zeros(2, np.int32).tobytes()),
        fx.TensorSpec("strides", [2], I32, np.ones(2, np.int32).tobytes()),
        fx.TensorSpec("frames", [1, 1], F32, shape_signature=[-1, -1]),
        fx.TensorSpec("new_shape", [3], I32, np.array([1, -1, 2], np.int32).tobytes()),
        fx.TensorSpec("pairs", [1, 1, 2], F32, shape_signature=[-1, -1, 2]),
    ]
    operators = [
        fx.OperatorSpec("SHAPE", [0], [1], options=("ShapeOptions", {"OutType": I32})),
        fx.OperatorSpec("FLOOR_DIV", [1, 2], [3]),
        fx.OperatorSpec("STRIDED_SLICE", [0, 4, 3, 5], [6], options=("StridedSliceOptions", {})),
        fx.OperatorSpec("RESHAPE", [6, 7], [8], options=("ReshapeOptions", {})),
    ]
    return fx.build_model([fx.SubgraphSpec(tensors, operators, [0], [8])])


def test_placeholder_sizes_take_tflites_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sizes computed from other tensors' values are what TFLite computes
    when it runs the model, found as TFLite finds them: at the inputs'
    recorded sizes without a flag (BirdNET as shipped), at --input-shape's
    with one."""
    path = tmp_path / "framing.tflite"
    path.write_bytes(_framing_model())
    for flags in ([], ["--input-shape", "x=1x8"]):
        code, out, err = _import([str(path), *flags], capsys)
        assert code == 0, err
        assert "-> tensor<1x4x2xf32>" in out
        code, out, err = _run([str(path), *flags], capsys)
        assert code == 0, out + err
        assert "float32[1,4,2]  bit-identical" in out and "result: OK" in out
    code, out, err = _import([str(path), "--input-shape", "x=3x8"], capsys)
    assert code == 0, err
    assert "-> tensor<1x12x2xf32>" in out  # frames [3, 8] as pairs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--input-shape", "y=5x8"],
            "--input-shape names 'y', which is not an input of subgraph 0 (inputs: x [-1, 8])",
        ),
        (["--input-shape", "x=5"], "--input-shape x=5: input 'x' [-1, 8] has 2 dims, not 1"),
        (
            ["--input-shape", "x=5x9"],
            "--input-shape x=5x9: axis 1 of input 'x' [-1, 8] is 8 in the model; only its -1 "
            "dims (shape_signature) can be set",
        ),
        (["--input-shape", "x5x8"], "--input-shape 'x5x8' must look like NAME=1x3x224x224"),
        (
            ["--input-shape", "x=5x8", "--upper-bound", "x:0=6"],
            "--upper-bound x:0=6: --input-shape fixes axis 0 of input 'x' to 5 (give '?' "
            "there to bound it)",
        ),
    ],
)
def test_bad_input_shape_is_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.mlir"
    code, _, err = _import([str(FIXTURES / "dynamic.tflite"), *argv, "-o", str(output)], capsys)
    assert code == 1
    assert err == f"memplan-import-tflite: error: {message}\n"
    assert not output.exists()
    code, _, err = _run([str(FIXTURES / "dynamic.tflite"), *argv], capsys)
    assert code == 1
    assert err == f"memplan-run: error: {message}\n"


# ---------------------------------------------------------------------------
# --upper-bound on two dims of one view
# ---------------------------------------------------------------------------


def test_a_view_with_two_dynamic_dims_imports_as_a_copy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # EXPAND_DIMS of x: [-1, -1]: a view's shape function derives one dim
    # from the element count, so it becomes a kernel whose shape function
    # runs it; the ADD after it stays in place.
    bounds = ["--upper-bound", "x:0=4", "--upper-bound", "x:1=5"]
    code, out, err = _import([str(FIXTURES / "dynamic_view.tflite"), *bounds], capsys)
    assert code == 0, err
    [declaration] = [
        line for line in out.splitlines() if "func.func private @tfl.EXPAND_DIMS(" in line
    ]
    assert "memory.view" not in declaration and "memory.shape_fn" in declaration
    assert "tensor<?x?x1xf32>" in declaration
    code, out, err = _run(
        [
            str(FIXTURES / "dynamic_view.tflite"),
            *bounds,
            "--dim-values",
            "x:0=1,4",
            "--dim-values",
            "x:1=5,2",
            "--atol",
            "0",
            "--rtol",
            "0",
        ],
        capsys,
    )
    assert code == 0, out + err
    assert out.count("result: OK") == 2 and "at x:0=4, x:1=2" in out


# ---------------------------------------------------------------------------
# Kernels of conditions and counters: comparisons, int32 and bool
# ---------------------------------------------------------------------------


def _binary_model(builtin: str, operand: int, result: int) -> bytes:
    tensors = [
        fx.TensorSpec("a", [2, 3], operand),
        fx.TensorSpec("b", [2, 3], operand),
        fx.TensorSpec("y", [2, 3], result),
    ]
    return fx.build_model(
        [fx.SubgraphSpec(tensors, [fx.OperatorSpec(builtin, [0, 1], [2])], [0, 1], [2])]
    )


@pytest.mark.parametrize(
    ("builtin", "operand", "result"),
    [
        ("LESS", F32, BOOL),
        ("GREATER_EQUAL", F32, BOOL),
        ("NOT_EQUAL", I32, BOOL),
        ("ADD", I32, I32),
        ("MAXIMUM", I32, I32),
        ("LOGICAL_AND", BOOL, BOOL),
    ],
)
def test_condition_and_counter_kernels_match_tflite(
    builtin: str, operand: int, result: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(_binary_model(builtin, operand, result))
    code, out, err = _run([str(path), "--atol", "0", "--rtol", "0"], capsys)
    assert code == 0, out + err
    assert "bit-identical" in out and "result: OK" in out
