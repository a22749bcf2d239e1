"""memplan-import-tflite beyond the lit tests: folded constant values, and
every kind of damaged model it must refuse with a message naming the part."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tflite
from fixtures.tflite import make_fixtures as fx

from memplan.dialect.printer import module_text
from memplan.tools import memplan_import
from memplan.tools.frontends.tflite.importer import fold_constants, import_tflite
from memplan.tools.frontends.tflite.model import TfliteImportError, load_model, read_subgraph
from memplan.tools.memplan_opt import main as memplan_opt_main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite"


def test_fixtures_are_what_make_fixtures_writes() -> None:
    # The committed .tflite files are the generator's output.
    assert (FIXTURES / "convnet.tflite").read_bytes() == fx.convnet()
    assert (FIXTURES / "quantized.tflite").read_bytes() == fx.quantized()
    assert (FIXTURES / "while.tflite").read_bytes() == fx.while_loop()


def test_dequantize_of_constants_is_folded_with_values() -> None:
    subgraph = read_subgraph(*load_model(FIXTURES / "convnet.tflite"))
    folded = fold_constants(subgraph)
    fp16 = np.frombuffer(subgraph.tensors[1].data or b"", np.float16).reshape(4, 3, 3, 3)
    np.testing.assert_array_equal(folded.values[2], fp16.astype(np.float32))
    assert folded.folded_operators == {0}

    subgraph = read_subgraph(*load_model(FIXTURES / "quantized.tflite"))
    folded = fold_constants(subgraph)
    # Per-channel: row i scaled by scale[i] (quantized dimension 0).
    weight = np.arange(-8, 8, dtype=np.float32).reshape(4, 4)
    expected = weight * np.asarray([0.1, 0.2, 0.3, 0.4], np.float32)[:, None]
    np.testing.assert_allclose(folded.values[2], expected, rtol=1e-6)
    # The DEQUANTIZE of the input runs every invocation: not folded.
    assert folded.folded_operators == {0}


def _model(
    tensors: list[fx.TensorSpec],
    operators: list[fx.OperatorSpec],
    inputs: list[int],
    outputs: list[int],
) -> bytes:
    return fx.build_model([fx.SubgraphSpec(tensors, operators, inputs, outputs)])


F32 = tflite.TensorType.FLOAT32

DAMAGED: dict[str, tuple[bytes, str]] = {
    "buffer size": (
        _model(
            [fx.TensorSpec("x", [1, 4], F32), fx.TensorSpec("w", [4], F32, b"\0" * 12)]
            + [fx.TensorSpec("y", [1, 4], F32)],
            [fx.OperatorSpec("ADD", [0, 1], [2])],
            [0],
            [2],
        ),
        "tensor 1 'w' [4] x FLOAT32 needs 16 bytes, but its buffer 1 holds 12",
    ),
    "unknown builtin": (
        _model(
            [fx.TensorSpec("x", [4], F32), fx.TensorSpec("y", [4], F32)],
            [fx.OperatorSpec(4000, [0], [1])],
            [0],
            [1],
        ),
        "operator 0 has builtin code 4000, which this TFLite schema does not know",
    ),
    "string tensor": (
        _model(
            [fx.TensorSpec("words", [2], tflite.TensorType.STRING), fx.TensorSpec("y", [2], F32)],
            [fx.OperatorSpec("ADD", [0, 0], [1])],
            [0],
            [1],
        ),
        "tensor 0 'words' has element type STRING, which memplan does not import",
    ),
    "tensor index": (
        _model(
            [fx.TensorSpec("x", [4], F32), fx.TensorSpec("y", [4], F32)],
            [fx.OperatorSpec("ADD", [0, 7], [1])],
            [0],
            [1],
        ),
        "operator 0 (ADD) input 1 is tensor 7, but the subgraph has 2 tensors",
    ),
    "read before written": (
        _model(
            [fx.TensorSpec("x", [4], F32), fx.TensorSpec("a", [4], F32)]
            + [fx.TensorSpec("b", [4], F32)],
            [fx.OperatorSpec("ADD", [0, 2], [1]), fx.OperatorSpec("ADD", [0, 0], [2])],
            [0],
            [1],
        ),
        "operator 0 (ADD) reads tensor 2 'b', which no earlier operator writes",
    ),
    "negative dimension": (
        _model(
            [fx.TensorSpec("x", [-1, 4], F32), fx.TensorSpec("y", [4], F32)],
            [fx.OperatorSpec("ADD", [0, 0], [1])],
            [0],
            [1],
        ),
        "tensor 0 'x' has a negative dimension [-1, 4]",
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_models_are_refused_naming_the_part(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, message = DAMAGED[case]
    with pytest.raises(TfliteImportError) as error:
        import_tflite(data)
    assert message in str(error.value)
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    output = tmp_path / "out.mlir"
    assert (
        memplan_import.main(
            [str(path), "-o", str(output)], prog="memplan-import-tflite", format_key="tflite"
        )
        == 1
    )
    assert not output.exists()
    assert capsys.readouterr().err == f"memplan-import-tflite: error: {error.value}\n"


def test_every_cut_of_a_model_is_refused_or_imported() -> None:
    # flatbuffers reads lazily: every prefix of the file must give either a
    # TfliteImportError or, when the cut only lost the builder's trailing
    # padding, the whole model; never another exception.
    data = (FIXTURES / "convnet.tflite").read_bytes()
    whole = module_text(import_tflite(data))
    imported = []
    for end in range(len(data)):
        try:
            text = module_text(import_tflite(data[:end]))
        except TfliteImportError:
            continue
        assert text == whole
        imported.append(end)
    assert imported and min(imported) > len(data) - 16


def test_imported_model_plans_through_memplan_opt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "convnet.mlir"
    assert memplan_import.main([str(FIXTURES / "convnet.tflite"), "-o", str(output)]) == 0
    assert memplan_opt_main([str(output), "--plan", "--verify-plan"]) == 0
    planned = capsys.readouterr().out
    assert "memory.pool @workspace_cpu" in planned
    assert "func.call @tfl.CONV_2D" not in planned  # calls became memory.invoke


def test_densify_follows_the_sparse_levels() -> None:
    # A 3x4 matrix, dense rows and a CSR column level: row 0 holds columns
    # 1 and 3, row 1 nothing, row 2 column 0.
    from memplan.tools.frontends.tflite.model import (
        SparseFormat,
        SparseLevel,
        TfliteTensor,
        densify,
    )

    levels = (SparseLevel(3), SparseLevel(None, (0, 2, 2, 3), (1, 3, 0)))
    values = np.asarray([1.5, 2.5, 3.5], np.float32)
    tensor = TfliteTensor(
        0,
        "w",
        (3, 4),
        "FLOAT32",
        values.tobytes(),
        True,
        SparseFormat((0, 1), (), levels),
        (),
        (),
        0,
    )
    expected = np.zeros((3, 4), np.float32)
    expected[0, 1], expected[0, 3], expected[2, 0] = 1.5, 2.5, 3.5
    np.testing.assert_array_equal(densify(tensor), expected)
    # Indices past the data: an import error naming the tensor.
    short = TfliteTensor(
        0,
        "w",
        (3, 4),
        "FLOAT32",
        values[:2].tobytes(),
        True,
        SparseFormat((0, 1), (), levels),
        (),
        (),
        0,
    )
    with pytest.raises(TfliteImportError, match="tensor 0 'w': its sparse data holds fewer values"):
        densify(short)
