"""memplan-export-tflite, proved by TensorFlow Lite Micro: the planned model
runs in TFLM with the outputs of TFLM's own planner, bit for bit, and TFLM's
head is the size memplan promises; a corrupted offset is caught."""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tflite
from fixtures.tflite import make_fixtures as fx

from memplan.tools import memplan_export
from memplan.tools.exporters.tflm.offline_plan import (
    OFFLINE_METADATA,
    OfflinePlan,
    model_inputs,
    write_model,
)
from memplan.tools.exporters.tflm.planning import DEFAULT_PIPELINES, best_plan
from memplan.tools.exporters.tflm.runner import TflmRun, run_tflm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
BIN = Path(sys.executable).parent


def sine_model() -> bytes:
    """TFLM's own example model, shipped in the tflite-micro package."""
    import tflite_micro

    return (
        Path(tflite_micro.__file__).parent / "python/tflite_micro/sine_float.tflite"
    ).read_bytes()


def convnet_model() -> bytes:
    """fp16 weights DEQUANTIZEd, CONV_2D (SAME, RELU), ADD in place, RESHAPE
    (a view), FULLY_CONNECTED, LOGISTIC in place, and MAX_POOL_2D of the
    ADD: two outputs, a tensor no operator touches."""
    rng = np.random.default_rng(7)
    kernel = rng.standard_normal((4, 3, 3, 3)).astype(np.float16)
    weights = rng.standard_normal((8, 256)).astype(np.float32) / 16
    f32 = fx.F32
    tensors = [
        fx.TensorSpec("image", [1, 8, 8, 3], f32),  # 0
        fx.TensorSpec("conv/kernel_fp16", [4, 3, 3, 3], fx.F16, kernel.tobytes()),  # 1
        fx.TensorSpec("conv/kernel", [4, 3, 3, 3], f32),  # 2
        fx.TensorSpec("conv/bias", [4], f32, np.arange(4, dtype=np.float32).tobytes()),  # 3
        fx.TensorSpec("conv", [1, 8, 8, 4], f32),  # 4
        fx.TensorSpec("twice", [1, 8, 8, 4], f32),  # 5
        fx.TensorSpec("flat_shape", [2], fx.I32, np.asarray([1, 256], np.int32).tobytes()),
        fx.TensorSpec("flat", [1, 256], f32),  # 7
        fx.TensorSpec("fc/weights", [8, 256], f32, weights.tobytes()),  # 8
        fx.TensorSpec("fc", [1, 8], f32),  # 9
        fx.TensorSpec("scores", [1, 8], f32),  # 10
        fx.TensorSpec("pooled", [1, 4, 4, 4], f32),  # 11
        fx.TensorSpec("unused", [1, 16], f32),  # 12
    ]
    conv = {"Padding": tflite.Padding.SAME, "StrideW": 1, "StrideH": 1}
    conv["FusedActivationFunction"] = tflite.ActivationFunctionType.RELU
    pool = {"Padding": tflite.Padding.VALID, "StrideW": 2, "StrideH": 2}
    pool |= {"FilterWidth": 2, "FilterHeight": 2}
    operators = [
        fx.OperatorSpec("DEQUANTIZE", [1], [2]),
        fx.OperatorSpec("CONV_2D", [0, 2, 3], [4], options=("Conv2DOptions", conv)),
        fx.OperatorSpec("ADD", [4, 4], [5], options=("AddOptions", {})),
        fx.OperatorSpec("RESHAPE", [5, 6], [7]),
        fx.OperatorSpec("FULLY_CONNECTED", [7, 8, -1], [9], options=("FullyConnectedOptions", {})),
        fx.OperatorSpec("LOGISTIC", [9], [10]),
        fx.OperatorSpec("MAX_POOL_2D", [5], [11], options=("Pool2DOptions", pool)),
    ]
    return fx.build_model([fx.SubgraphSpec(tensors, operators, [0], [10, 11], "main")])


def reduce_model() -> bytes:
    """MEAN over H and W (TFLM's kernel asks for two scratch buffers, an
    int per input dim and per axis), FULLY_CONNECTED, and REDUCE_MAX (two
    more) of the input, an output read at the end."""
    rng = np.random.default_rng(11)
    f32 = fx.F32
    weights = rng.standard_normal((16, 8)).astype(np.float32)
    tensors = [
        fx.TensorSpec("features", [1, 6, 6, 8], f32),  # 0
        fx.TensorSpec("axes", [2], fx.I32, np.asarray([1, 2], np.int32).tobytes()),  # 1
        fx.TensorSpec("mean", [1, 8], f32),  # 2
        fx.TensorSpec("fc/weights", [16, 8], f32, weights.tobytes()),  # 3
        fx.TensorSpec("logits", [1, 16], f32),  # 4
        fx.TensorSpec("peak", [1, 8], f32),  # 5
    ]
    operators = [
        fx.OperatorSpec("MEAN", [0, 1], [2], options=("ReducerOptions", {"KeepDims": False})),
        fx.OperatorSpec("FULLY_CONNECTED", [2, 3, -1], [4], options=("FullyConnectedOptions", {})),
        fx.OperatorSpec("REDUCE_MAX", [0, 1], [5], options=("ReducerOptions", {"KeepDims": False})),
    ]
    return fx.build_model([fx.SubgraphSpec(tensors, operators, [0], [4, 5], "main")])


def stateful_model() -> bytes:
    """A streaming model's shape (pymicro-wakeword's): CALL_ONCE runs an
    init subgraph that sets a resource variable, subgraph 0 reads it
    (READ_VARIABLE), adds the input and writes the sum back
    (ASSIGN_VARIABLE); two subgraphs, RESOURCE handles TFLM gives no bytes."""
    f32, resource = fx.F32, tflite.TensorType.RESOURCE
    handle = ("VarHandleOptions", {"SharedName": "state"})
    main = fx.SubgraphSpec(
        [
            fx.TensorSpec("x", [1, 4], f32),  # 0
            fx.TensorSpec("handle", [], resource),  # 1
            fx.TensorSpec("state", [1, 4], f32),  # 2
            fx.TensorSpec("sum", [1, 4], f32),  # 3
            fx.TensorSpec("out", [1, 4], f32),  # 4
        ],
        [
            fx.OperatorSpec(
                "CALL_ONCE", [], [], options=("CallOnceOptions", {"InitSubgraphIndex": 1})
            ),
            fx.OperatorSpec("VAR_HANDLE", [], [1], options=handle),
            fx.OperatorSpec("READ_VARIABLE", [1], [2]),
            fx.OperatorSpec("ADD", [0, 2], [3], options=("AddOptions", {})),
            fx.OperatorSpec("ASSIGN_VARIABLE", [1, 3], []),
            fx.OperatorSpec("MUL", [3, 3], [4], options=("MulOptions", {})),
        ],
        [0],
        [4],
        "main",
    )
    start = np.full((1, 4), 0.5, np.float32).tobytes()
    init = fx.SubgraphSpec(
        [fx.TensorSpec("handle", [], resource), fx.TensorSpec("start", [1, 4], f32, start)],
        [
            fx.OperatorSpec("VAR_HANDLE", [], [0], options=handle),
            fx.OperatorSpec("ASSIGN_VARIABLE", [0, 1], []),
        ],
        [],
        [],
        "init",
    )
    return fx.build_model([main, init])


MODELS = {
    "sine_float": sine_model,
    "convnet": convnet_model,
    "reduce": reduce_model,
    "if_else": lambda: (FIXTURES / "if_else.tflite").read_bytes(),
    "while_tensor": lambda: (FIXTURES / "while_tensor.tflite").read_bytes(),
    "stateful": stateful_model,
    "shared_branches": lambda: _shared_branches_model(),
    "nested_shared": lambda: _nested_shared_model(),
}
"""One subgraph, then IF and WHILE (three subgraphs), CALL_ONCE with
resource variables, two IFs running the same branches, a subgraph run from
two subgraphs."""


@functools.cache
def planned(name: str) -> OfflinePlan:
    """The default plan of ``MODELS[name]`` (planned once per test session)."""
    return best_plan(MODELS[name](), name, DEFAULT_PIPELINES, fold_dequantize=True)


def _proof(
    model: bytes, plan: OfflinePlan, inputs: list[np.ndarray] | None = None
) -> tuple[TflmRun, TflmRun]:
    """TFLM on the same model under its own planner, then under memplan's plan."""
    inputs = model_inputs(model, seed=1) if inputs is None else inputs
    own = run_tflm(write_model(model, plan, offsets=False), inputs)
    by_plan = run_tflm(write_model(model, plan), inputs)
    assert own.error is None and by_plan.error is None, (own.error, by_plan.error)
    return own, by_plan


@pytest.mark.parametrize("name", sorted(MODELS))
def test_tflm_runs_the_plan_bit_identically_at_the_promised_head(name: str) -> None:
    model, plan = MODELS[name](), planned(name)
    own, by_plan = _proof(model, plan)
    assert len(by_plan.outputs) == len(own.outputs) > 0
    for mine, theirs in zip(by_plan.outputs, own.outputs):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
    assert by_plan.head == plan.head
    assert own.head is not None and plan.head <= own.head


def test_the_plan_holds_every_tensor_tflm_allocates() -> None:
    plan = planned("convnet")
    offsets = dict(zip(plan.tensor_names, plan.offsets))
    # Constants (the folded kernel too) and the untouched tensor are TFLM's.
    assert [name for name, offset in offsets.items() if offset < 0] == [
        "conv/kernel_fp16",
        "conv/kernel",
        "conv/bias",
        "flat_shape",
        "fc/weights",
        "unused",
    ]
    assert plan.runtime_planned == {12: "no operator reads or writes it"}
    # LOGISTIC's result takes its operand's bytes (in place), the RESHAPE's
    # output is its input's bytes (a view).
    assert offsets["scores"] == offsets["fc"]
    assert offsets["flat"] == offsets["twice"]
    assert plan.folded_operators == [(0, 0)]


def test_kernel_scratch_is_planned_with_the_tensors() -> None:
    """TFLM places MEAN's and REDUCE_MAX's scratch around the offline plan:
    memplan plans a storage of each buffer's size live during the call, so
    the promise (TFLM's head, checked above) includes them."""
    plan = planned("reduce")
    assert plan.scratch == [16, 8, 16, 8]
    ends = [
        offset + -(-size // 16) * 16
        for offset, size in zip(plan.offsets, (1152, 0, 32, 0, 64, 32))
        if offset >= 0
    ]
    assert max(ends) < plan.head


def test_a_corrupted_offset_changes_the_outputs() -> None:
    """The proof can fail: CONV_2D's output moved onto its input (live while
    it runs) makes TFLM compute something else."""
    model, plan = convnet_model(), planned("convnet")
    own, by_plan = _proof(model, plan)
    offsets = list(plan.offsets)
    offsets[4] = offsets[0]
    assert offsets != plan.offsets
    corrupted = dataclasses.replace(plan, offsets=offsets)
    broken = run_tflm(write_model(model, corrupted), model_inputs(model, seed=1))
    assert broken.error is not None or not all(
        np.array_equal(a, b) for a, b in zip(broken.outputs, own.outputs)
    )
    assert all(np.array_equal(a, b) for a, b in zip(by_plan.outputs, own.outputs))


def _block(plan: OfflinePlan, subgraph: int, tensor: int) -> tuple[int, int]:
    """(offset, end) of a tensor of ``if_else.tflite`` (all [2, 4] f32 but the flag)."""
    start = sum(len(part.offsets) for part in plan.subgraphs[:subgraph])
    offset = plan.offsets[start + tensor]
    return offset, offset + (16 if (subgraph, tensor) == (0, 0) else 32)


def test_subgraphs_run_in_the_block_of_their_operator() -> None:
    """TFLM reads one offset list over all subgraphs' tensors (subgraph 0's
    first, ``n`` their total); then and else start at the IF's block, which
    overlaps none of the IF's operands and results."""
    plan = planned("if_else")
    assert [len(part.offsets) for part in plan.subgraphs] == [4, 4, 3]
    words = write_model(MODELS["if_else"](), plan)
    model: Any = tflite.Model.GetRootAs(words, 0)
    entry = model.Buffers(model.Metadata(model.MetadataLength() - 1).Buffer())
    assert entry.DataAsNumpy().view("<i4").tolist() == [0, 0, 11, *plan.offsets]
    base = plan.subgraphs[0].callee_blocks[0]
    block_end = base + max(plan.subgraphs[1].head, plan.subgraphs[2].head)
    branch_tensors = [(1, 0), (1, 1), (1, 3), (2, 0), (2, 2)]
    assert min(_block(plan, *t)[0] for t in branch_tensors) == base
    assert max(_block(plan, *t)[1] for t in branch_tensors) == block_end <= plan.head
    for tensor in (0, 1, 2):  # flag, x, chosen: live through the IF
        start, end = _block(plan, 0, tensor)
        assert end <= base or start >= block_end
    assert plan.offsets[4 + 2] == plan.offsets[8 + 1] == -1  # the branches' constants


@pytest.mark.parametrize("flag", [True, False])
def test_both_branches_run_bit_identically(flag: bool) -> None:
    model, plan = MODELS["if_else"](), planned("if_else")
    inputs = [np.asarray(flag), np.random.default_rng(3).uniform(-1, 1, (2, 4)).astype(np.float32)]
    own, by_plan = _proof(model, plan, inputs)
    assert [o.tolist() for o in by_plan.outputs] == [o.tolist() for o in own.outputs]
    assert by_plan.head == plan.head


def test_a_branch_tensor_on_a_live_operand_changes_the_outputs() -> None:
    """The then branch's MUL result moved onto subgraph 0's x, which the ADD
    after the IF reads: TFLM computes something else (the block matters)."""
    model, plan = MODELS["if_else"](), planned("if_else")
    inputs = [np.asarray(True), np.random.default_rng(3).uniform(-1, 1, (2, 4)).astype(np.float32)]
    own, _ = _proof(model, plan, inputs)
    offsets = list(plan.offsets)
    assert offsets[4 + 1] != offsets[1]
    offsets[4 + 1] = offsets[1]
    broken = run_tflm(write_model(model, dataclasses.replace(plan, offsets=offsets)), inputs)
    assert broken.error is not None or not np.array_equal(broken.outputs[0], own.outputs[0])


@pytest.mark.parametrize("flag", [True, False])
def test_two_operators_running_one_subgraph_share_its_block(flag: bool) -> None:
    """TFLM gives a subgraph's tensors one offset, live from its first call to
    its last: the two IFs share one block, which overlaps neither IF's
    operands nor results (x dies at the first IF, its result at the second)."""
    model, plan = MODELS["shared_branches"](), planned("shared_branches")
    blocks = plan.subgraphs[0].callee_blocks
    assert blocks[0] == blocks[1]
    size = max(plan.subgraphs[1].head, plan.subgraphs[2].head)
    for tensor, bytes_ in ((0, 16), (1, 32), (2, 32), (3, 32)):  # flag, x, once, twice
        offset = plan.offsets[tensor]
        assert offset + bytes_ <= blocks[0] or offset >= blocks[0] + size
    inputs = [np.asarray(flag), np.random.default_rng(5).uniform(-1, 1, (2, 4)).astype(np.float32)]
    own, by_plan = _proof(model, plan, inputs)
    assert [o.tolist() for o in by_plan.outputs] == [o.tolist() for o in own.outputs]


@pytest.mark.parametrize("flag", [True, False])
def test_a_subgraph_run_from_two_subgraphs_has_a_region_of_its_own(flag: bool) -> None:
    """Subgraph 2 runs from subgraph 0's IF and from the IF inside subgraph
    1: it is placed above everything else (its tensors share no bytes with
    any other at any time), subgraph 1 in its IF's block; either branch runs
    bit-identically."""
    model, plan = MODELS["nested_shared"](), planned("nested_shared")
    parts = plan.subgraphs
    region = -(-parts[0].head // 16) * 16
    assert [max(part.offsets) >= 0 for part in parts] == [True] * 4
    assert min(o for o in parts[2].offsets if o >= 0) == region
    assert plan.head == region + parts[2].head
    inputs = [np.asarray(flag), np.random.default_rng(9).uniform(-1, 1, (2, 4)).astype(np.float32)]
    own, by_plan = _proof(model, plan, inputs)
    assert [o.tolist() for o in by_plan.outputs] == [o.tolist() for o in own.outputs]
    assert by_plan.head == plan.head


def test_resource_handles_are_left_to_tflm() -> None:
    """VAR_HANDLE points its output at the kernel's resource id in Prepare:
    TFLM gives it no arena bytes, so the handles get -1 and VAR_HANDLE stays
    in the model in its place; the variable is in TFLM's tail."""
    plan = planned("stateful")
    assert [len(part.offsets) for part in plan.subgraphs] == [5, 2]
    assert plan.offsets[1] == plan.offsets[5] == plan.offsets[6] == -1
    assert plan.subgraphs[0].order == [0, 1, 2, 3, 4, 5]
    assert plan.subgraphs[1].head == 0 and plan.subgraphs[0].callee_blocks == {}


def _export(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "memplan-export-tflite"), *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_writes_the_plan_and_prints_the_head(tmp_path: Path) -> None:
    source = tmp_path / "convnet.tflite"
    source.write_bytes(convnet_model())
    output = tmp_path / "planned.tflite"
    result = _export(source, "-o", output, "--fold-dequantize")
    assert result.returncode == 0, result.stderr
    plan = planned("convnet")
    assert result.stdout == (
        f"{output}: TFLM head {plan.head} bytes (memplan's plan, pipeline {plan.pipeline}); "
        "7 tensors at planned offsets, 1 left to TFLM (no operator reads or writes it), "
        "1 operators folded\n"
    )
    written = output.read_bytes()
    assert written == write_model(source.read_bytes(), plan)
    # The model keeps its description, buffers and the rest; one metadata entry more.
    model: Any = tflite.Model.GetRootAs(written, 0)
    assert model.Description() == b"memplan test fixture"
    assert [model.Metadata(i).Name() for i in range(model.MetadataLength())] == [
        OFFLINE_METADATA.encode()
    ]
    words = model.Buffers(model.Metadata(0).Buffer()).DataAsNumpy().view("<i4")
    assert words.tolist() == [0, 0, 13, *plan.offsets]


def test_the_command_plans_every_subgraph(tmp_path: Path) -> None:
    output = tmp_path / "planned.tflite"
    result = _export(FIXTURES / "if_else.tflite", "-o", output)
    assert result.returncode == 0, result.stderr
    plan = planned("if_else")
    assert result.stdout == (
        f"{output}: TFLM head {plan.head} bytes (memplan's plan, pipeline {plan.pipeline}); "
        f"{plan.planned_count} tensors at planned offsets in 3 subgraphs\n"
    )
    assert output.read_bytes() == write_model(MODELS["if_else"](), plan)


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, model: Path, *options: str) -> str:
    output = tmp_path / "out.tflite"
    status = memplan_export.main(
        [str(model), "-o", str(output), *options], prog="memplan-export-tflite", target="tflm"
    )
    captured = capsys.readouterr()
    assert (status, captured.out, output.exists()) == (1, "", False)
    assert captured.err.count("\n") == 1, captured.err
    return captured.err


def _branch(builtin: str, options: str) -> Any:
    f32 = fx.F32
    return fx.SubgraphSpec(
        [fx.TensorSpec("x", [2, 4], f32), fx.TensorSpec("y", [2, 4], f32)],
        [fx.OperatorSpec(builtin, [0, 0], [1], options=(options, {}))],
        [0],
        [1],
    )


def _if(inputs: list[int], outputs: list[int], then: int, otherwise: int) -> Any:
    options = ("IfOptions", {"ThenSubgraphIndex": then, "ElseSubgraphIndex": otherwise})
    return fx.OperatorSpec("IF", inputs, outputs, options=options)


def _nested_shared_model(inner_then: int = 2) -> bytes:
    """Subgraph 2 run by subgraph 0's IF (its else branch) and by the IF in
    subgraph 1 (its then branch, ``inner_then``: 1 makes subgraph 1 run itself)."""
    boolean, f32 = tflite.TensorType.BOOL, fx.F32
    main = fx.SubgraphSpec(
        [
            fx.TensorSpec("flag", [], boolean),
            fx.TensorSpec("x", [2, 4], f32),
            fx.TensorSpec("y", [2, 4], f32),
        ],
        [_if([0, 1], [2], 1, 2)],
        [0, 1],
        [2],
    )
    then_branch = fx.SubgraphSpec(
        [
            fx.TensorSpec("x", [2, 4], f32),
            fx.TensorSpec("yes", [], boolean, np.bool_(True).tobytes()),
            fx.TensorSpec("y", [2, 4], f32),
        ],
        [_if([1, 0], [2], inner_then, 3)],
        [0],
        [2],
    )
    return fx.build_model(
        [main, then_branch, _branch("MUL", "MulOptions"), _branch("ADD", "AddOptions")]
    )


def _shared_branches_model() -> bytes:
    """Two IFs running the same then and else subgraphs."""
    boolean = tflite.TensorType.BOOL
    f32 = fx.F32
    options = ("IfOptions", {"ThenSubgraphIndex": 1, "ElseSubgraphIndex": 2})
    main = fx.SubgraphSpec(
        [
            fx.TensorSpec("flag", [], boolean),
            fx.TensorSpec("x", [2, 4], f32),
            fx.TensorSpec("once", [2, 4], f32),
            fx.TensorSpec("twice", [2, 4], f32),
        ],
        [
            fx.OperatorSpec("IF", [0, 1], [2], options=options),
            fx.OperatorSpec("IF", [0, 2], [3], options=options),
        ],
        [0, 1],
        [3],
        "main",
    )
    return fx.build_model([main, _branch("MUL", "MulOptions"), _branch("ADD", "AddOptions")])


def test_bad_input_is_one_line_and_no_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recursive = tmp_path / "recursive.tflite"
    recursive.write_bytes(_nested_shared_model(inner_then=1))
    assert _refused(capsys, tmp_path, recursive) == (
        f"memplan-export-tflite: error: {recursive}: subgraph 1 operator 0 (IF) runs "
        "subgraph 1, which is already running (subgraphs 0 -> 1 -> 1)\n"
    )
    call = tmp_path / "call.tflite"
    f32 = fx.F32
    call.write_bytes(
        fx.build_model(
            [
                fx.SubgraphSpec(
                    [fx.TensorSpec("x", [4], f32), fx.TensorSpec("y", [4], f32)],
                    [fx.OperatorSpec("CALL", [0], [1], options=("CallOptions", {"Subgraph": 1}))],
                    [0],
                    [1],
                ),
                fx.SubgraphSpec(
                    [fx.TensorSpec("x", [4], f32), fx.TensorSpec("y", [4], f32)],
                    [fx.OperatorSpec("RELU", [0], [1])],
                    [0],
                    [1],
                ),
            ]
        )
    )
    assert _refused(capsys, tmp_path, call) == (
        f"memplan-export-tflite: error: {call}: operator 0 (CALL) runs another subgraph, "
        "which TFLM has no kernel for\n"
    )
    exported = tmp_path / "planned.tflite"
    source = tmp_path / "sine.tflite"
    source.write_bytes(sine_model())
    assert memplan_export.main([str(source), "-o", str(exported)], target="tflm") == 0
    capsys.readouterr()
    assert _refused(capsys, tmp_path, exported) == (
        f"memplan-export-tflite: error: {exported} already holds an {OFFLINE_METADATA} plan "
        "(metadata entry 2); memplan plans a model without one\n"
    )
    assert _refused(capsys, tmp_path, source, "--pipeline", "manifest-alloc,insert-kills").endswith(
        "is in a storage the pipeline leaves unpinned (no 'at @pool[offset]'): TFLM needs "
        "every tensor at an offset (end the pipeline with usmp)\n"
    )
    assert _refused(capsys, tmp_path, FIXTURES / "quantized.tflite") == (
        "memplan-export-tflite: error: operator 0 (DEQUANTIZE) computes a constant that "
        "memplan keeps as a constant (as TFLite folds it at Prepare) but TFLM would hold in "
        "its arena: pass --fold-dequantize to write it as a constant\n"
    )
    assert _refused(capsys, tmp_path, FIXTURES / "not_tflite.tflite") == (
        f"memplan-export-tflite: error: {FIXTURES / 'not_tflite.tflite'} is not a TFLite "
        "model (no 'TFL3' file identifier)\n"
    )


def test_the_c_header_names_tensors_after_the_model(tmp_path: Path) -> None:
    """Names that end in ``_<digits>`` lose the suffix as SSA names (xDSL
    strips it) but not in the header: the importer records the model's
    names on each call (``memory.source_names``); duplicates after
    sanitizing get ``_2``."""
    f32 = fx.F32
    tensors = [
        fx.TensorSpec("x", [1, 4], f32),
        fx.TensorSpec("block/act", [1, 4], f32),
        fx.TensorSpec("block/act_1", [1, 4], f32),
        fx.TensorSpec("block.act_1", [1, 4], f32),
    ]
    operators = [
        fx.OperatorSpec("RELU", [0], [1]),
        fx.OperatorSpec("LOGISTIC", [1], [2]),
        fx.OperatorSpec("TANH", [2], [3]),
    ]
    source = tmp_path / "names.tflite"
    source.write_bytes(fx.build_model([fx.SubgraphSpec(tensors, operators, [0], [3], "main")]))
    imported = tmp_path / "names.mlir"
    done = subprocess.run(
        [str(BIN / "memplan-import-tflite"), str(source), "-o", str(imported)], check=False
    )
    assert done.returncode == 0
    header = subprocess.run(
        [
            str(BIN / "memplan-opt"),
            str(imported),
            "-p",
            "manifest-alloc{inplace=false},insert-kills,usmp,plan-report{format=c-header}",
            "-o",
            os.devnull,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    defines = [
        line.split()[1]
        for line in header.splitlines()
        if line.endswith(("_OFFSET 0", "_OFFSET 64"))
    ]
    assert defines == [
        "MEMPLAN_MAIN_BLOCK_ACT_STORAGE_OFFSET",
        "MEMPLAN_MAIN_BLOCK_ACT_OFFSET",
        "MEMPLAN_MAIN_BLOCK_ACT_1_STORAGE_OFFSET",
        "MEMPLAN_MAIN_BLOCK_ACT_1_OFFSET",
        "MEMPLAN_MAIN_BLOCK_ACT_1_STORAGE_2_OFFSET",
        "MEMPLAN_MAIN_BLOCK_ACT_1_2_OFFSET",
    ]
    # The SSA names are the IR's: the second "block_act" prints as %block_act_1.
    assert (
        "/* tensor %block_act_1 (model tensor 2 'block/act_1') in %block_act_storage_1 at +0"
        in header
    )
    assert "/* tensor %block.act (model tensor 3 'block.act_1') in" in header
