"""Writes the invalid ONNX models of invalid-models.test into a directory:
each breaks one rule of the ONNX spec that the importer must refuse.

    python invalid_models.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(out: Path, name: str, nodes, inputs, outputs, inits=(), opset: int = 17) -> None:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(out / f"{name}.onnx"))


def _f32(name: str, shape: list[int], elem: int = TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _loop(out: Path, name: str, trips: int) -> None:
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c_in"], ["c_out"]),
            helper.make_node("Add", ["v_in", "one"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            _f32("v_in", [4]),
        ],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), _f32("v_out", [4])],
        initializer=[numpy_helper.from_array(np.ones(4, np.float32), "one")],
    )
    _save(
        out,
        name,
        [helper.make_node("Loop", ["M", "cond", "x"], ["y"], body=body)],
        [_f32("x", [4])],
        [_f32("y", [4])],
        [
            numpy_helper.from_array(np.array(trips, dtype=np.int64), "M"),
            numpy_helper.from_array(np.array(True), "cond"),
        ],
    )


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    relu = helper.make_node("Relu", ["x"], ["y"])
    _save(
        out,
        "defined_twice",
        [relu, helper.make_node("Neg", ["x"], ["y"])],
        [_f32("x", [4])],
        [_f32("y", [4])],
    )
    shape = numpy_helper.from_array(np.array([3, 5], dtype=np.int64), "s")
    _save(
        out,
        "reshape_count",
        [helper.make_node("Reshape", ["x", "s"], ["y"])],
        [_f32("x", [8])],
        [_f32("y", [3, 5])],
        [shape],
    )
    _save(
        out,
        "mixed_add",
        [helper.make_node("Add", ["x", "z"], ["y"])],
        [_f32("x", [4]), _f32("z", [4], TensorProto.INT64)],
        [_f32("y", [4])],
    )
    weights = numpy_helper.from_array(np.ones(4, np.float32), "x")
    _save(out, "shadowed_input", [relu], [_f32("x", [4])], [_f32("y", [4])], [weights])
    _save(out, "opset_999", [relu], [_f32("x", [4])], [_f32("y", [4])], opset=999)
    _loop(out, "loop_huge", 2**62)
    _loop(out, "loop_negative", -5)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
