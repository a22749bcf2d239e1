"""memplan-run and the NumPy interpreter: plans proven by execution."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from memplan.dialect import AllocStorageOp, PoolOp
from memplan.dialect.arrays import NoNumpyDtype, numpy_dtype
from memplan.dialect.interpreter import (
    ExecutionError,
    KernelRegistry,
    run_function,
)
from memplan.tools import runs
from memplan.tools.frontends.onnx.importer import global_data, import_model_and_constants
from memplan.tools.memplan_run import main
from memplan.tools.progress import Progress as CliProgress
from memplan.tools.run_compare import RunReport, compare, view_kernel_names
from memplan.tools.runs import CallCounter, default_kernels, execute, plan, run_onnx
from memplan_testing import parse_module

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "onnx"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
PIPELINES = [
    "manifest-alloc,insert-kills,usmp",
    "manifest-alloc,insert-kills,coalesce,usmp",
    "manifest-alloc,insert-kills,reuse",
]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("model", ["mlp", "convnet", "int_ops"])
def test_fixture_plans_are_bit_identical(model: str, pipeline: str) -> None:
    """Planned, unplanned and the ONNX reference agree on every fixture."""
    [(_, report)] = run_onnx(str(FIXTURES / f"{model}.onnx"), pipeline, atol=0.0)
    assert report.ok, report.format()
    assert report.trace_problem is None
    assert all(o.identical and o.planned_vs_reference == 0.0 for o in report.outputs)
    if "usmp" in pipeline:
        assert set(report.pool_bytes) == {"workspace_cpu"}
        assert report.unpinned_bytes == 0
    else:
        assert report.pool_bytes == {} and report.unpinned_bytes > 0


def test_light_squeezenet_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's claim: squeezenet planned by usmp runs bit-identical to
    the unplanned module and matches the ONNX reference."""
    code = main(
        [str(LIGHT / "light_squeezenet.onnx"), "--pipeline=manifest-alloc,insert-kills,usmp"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "kernel calls: 66 unplanned, 65 planned; every planned call read the same bytes" in out
    assert "softmaxout_1  float32[1,1000,1,1]  bit-identical         max |diff| 0" in out
    assert "pools: @workspace_cpu " in out and out.rstrip().endswith("result: OK")


def test_light_shufflenet_scheduled_below_its_given_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The README's claim: `schedule` reorders shufflenet's calls so the
    arena drops from 3,110,912 to 2,885,120 bytes, and the reordered plan
    runs bit-identical to the unplanned module (calls matched as multisets)."""
    pipeline = "--pipeline=schedule,manifest-alloc,insert-kills,usmp"
    code = main([str(LIGHT / "light_shufflenet.onnx"), pipeline])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "every planned call read the same bytes" in out
    assert "pools: @workspace_cpu 2885120 bytes" in out
    assert "gpu_0/softmax_1  float32[1,1000]  bit-identical" in out


def _manifest(name: str) -> tuple[ModuleOp, ModuleOp, dict[str, np.ndarray]]:
    model = onnx.load(FIXTURES / f"{name}.onnx")
    module, constants = import_model_and_constants(model)
    # One storage per result (no in-place sharing): the tests pin them by name.
    return module, plan(module, "manifest-alloc{inplace=false},insert-kills"), constants


def _pin_sequentially(module: ModuleOp, overlap: tuple[str, str] | None = None) -> None:
    """Pin every storage in a new pool @arena, one after the other (a plan
    with no reuse, trivially correct), optionally putting the storage named
    ``overlap[0]`` at the offset of ``overlap[1]``."""
    first = module.body.block.first_op
    assert first is not None
    module.body.block.insert_op_before(PoolOp("arena"), first)
    offsets: dict[str, int] = {}
    offset = 0
    storages = [op for op in module.walk() if isinstance(op, AllocStorageOp)]
    for storage in storages:
        size = storage.byte_size
        assert size is not None
        offsets[storage.storage.name_hint or ""] = offset
        storage.pin("arena", offset)
        offset += -(-size // 64) * 64
    if overlap is not None:
        moved = next(s for s in storages if s.storage.name_hint == overlap[0])
        moved.pin("arena", offsets[overlap[1]])
    module.verify()


def _compare(
    unplanned: ModuleOp,
    planned: ModuleOp,
    constants: dict[str, np.ndarray],
    poison: bool = True,
) -> RunReport:
    kernels = default_kernels()
    inputs = runs.make_inputs(unplanned, seed=3)
    before = execute(unplanned, inputs, kernels, global_data(unplanned, constants), "unplanned")
    after = execute(
        planned, inputs, kernels, global_data(planned, constants), "planned", poison=poison
    )
    names = runs.output_names(unplanned)
    return compare(names, before, after, None, view_kernel_names(unplanned), 0.0)


def _compare_without_poison(
    unplanned: ModuleOp, planned: ModuleOp, constants: dict[str, np.ndarray]
) -> RunReport:
    return _compare(unplanned, planned, constants, poison=False)


def test_a_correct_manual_plan_passes_and_a_clobbering_one_fails() -> None:
    """The check can fail: the same plan with one buffer moved onto a live
    one is caught, naming the kernel call that read clobbered bytes."""
    unplanned, planned, constants = _manifest("convnet")
    good = planned.clone()
    _pin_sequentially(good)
    report = _compare(unplanned, good, constants)
    assert report.ok, report.format()
    assert report.pool_bytes["arena"] > 0

    # %e1 (expand1x1's output) on top of %s2, its input (which expand3x3
    # reads too): allocating %e1 already poisons %s2 before expand1x1 reads it.
    bad = planned.clone()
    _pin_sequentially(bad, overlap=("e1_storage", "s2_storage"))
    report = _compare(unplanned, bad, constants)
    assert not report.ok
    assert report.trace_problem == "call #0 of @onnx.Conv_2 read different bytes in input 0"
    assert not report.outputs[0].identical
    assert "DIVERGED" in report.format() and report.format().endswith("result: MISMATCH")


def test_allocation_poisons_bytes_still_in_use() -> None:
    """%r1 on top of %c1 would go unnoticed without poisoning (the reference
    Relu reads all of c1 before writing r1, an in-place update); allocating
    r1's storage poisons c1 while it is live, so the Relu reads NaNs."""
    unplanned, planned, constants = _manifest("convnet")
    bad = planned.clone()
    _pin_sequentially(bad, overlap=("r1_storage", "c1_storage"))
    report = _compare(unplanned, bad, constants)
    assert report.trace_problem == "call #0 of @onnx.Relu read different bytes in input 0"
    unpoisoned = _compare_without_poison(unplanned, bad, constants)
    assert unpoisoned.ok


HAND_WRITTEN = """
memory.pool @p
func.func private @twice(memref<4xf32>, memref<4xf32>) -> ()
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %s = memory.alloc_storage at @p[0] : !memory.storage<16>
  %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @twice ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
  %s2 = memory.alloc_storage at @p[64] : !memory.storage<16>
  %u = memory.alloc_tensor %s2[0] : !memory.storage<16> -> memref<4xf32>
  KILL_EARLY
  memory.invoke @twice ins(%t : memref<4xf32>) outs(%u : memref<4xf32>)
  KILL_LATE
  func.return %u : memref<4xf32>
}
"""


def _twice_registry() -> KernelRegistry:
    registry = KernelRegistry()

    @registry.register("twice")
    def twice(ins, outs, attributes) -> None:  # type: ignore[no-untyped-def]
        np.multiply(ins[0], 2, out=outs[0])

    return registry


def test_python_kernels_by_name_and_kill_poisoning() -> None:
    x = np.arange(4, dtype=np.float32)
    late = parse_module(
        HAND_WRITTEN.replace("KILL_EARLY", "").replace(
            "KILL_LATE", "memory.kill %s : !memory.storage<16>"
        )
    )
    late.verify()
    result = run_function(late, [x], kernels=_twice_registry())
    np.testing.assert_array_equal(result.outputs[0], 4 * x)
    assert result.pool_bytes == {"p": 80}  # up to the end of the storage at 64

    # A kill before the last use (the verifier rejects it; the interpreter
    # does not verify) poisons %t: the second kernel reads NaNs.
    early = parse_module(
        HAND_WRITTEN.replace("KILL_EARLY", "memory.kill %s : !memory.storage<16>").replace(
            "KILL_LATE", ""
        )
    )
    result = run_function(early, [x], kernels=_twice_registry())
    assert np.isnan(result.outputs[0]).all()
    without_poison = run_function(early, [x], kernels=_twice_registry(), poison=False)
    np.testing.assert_array_equal(without_poison.outputs[0], 4 * x)


def test_kernel_lookup() -> None:
    """Names win over resolvers; an unknown kernel is an error naming it."""
    module = parse_module(HAND_WRITTEN.replace("KILL_EARLY", "").replace("KILL_LATE", ""))
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(
        ExecutionError,
        match=r'no kernel for @twice: register one with KernelRegistry.register\("twice", ...\)',
    ):
        run_function(module, [x], kernels=KernelRegistry())

    registry = KernelRegistry()
    registry.add_resolver(lambda decl: lambda ins, outs, attrs: outs[0].fill(7.0))
    assert run_function(module, [x], kernels=registry).outputs[0].tolist() == [7.0] * 4
    registry.register("twice", lambda ins, outs, attrs: outs[0].fill(1.0))
    assert registry.names() == ["twice"]
    assert run_function(module, [x], kernels=registry).outputs[0].tolist() == [1.0] * 4

    with pytest.raises(
        ExecutionError, match=r"argument #0 of @main is memref<4xf32>, got float64\[4\]"
    ):
        run_function(module, [np.ones(4)], kernels=registry)


def test_numpy_dtypes() -> None:
    from xdsl.dialects.builtin import IntegerType, Signedness, f16, f64, i1, i8, i64

    assert numpy_dtype(IntegerType(8, Signedness.UNSIGNED)) == np.uint8
    assert [numpy_dtype(t) for t in (f16, f64, i1, i8, i64)] == [
        np.float16,
        np.float64,
        np.bool_,
        np.int8,
        np.int64,
    ]
    with pytest.raises(NoNumpyDtype, match="element type i3 has no NumPy equivalent"):
        numpy_dtype(IntegerType(3))


def test_custom_kernels_file_and_npz_io(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A project's own op runs with a kernel from --kernels; inputs and outputs
    go through .npz files."""
    kernels = tmp_path / "kernels.py"
    kernels.write_text(
        "import numpy as np\n\n\n"
        "def register_kernels(registry):\n"
        "    def scale(ins, outs, attributes):\n"
        "        factor = attributes['memory.onnx.factor'].value.data\n"
        "        np.multiply(ins[0], np.float32(factor), out=outs[0])\n\n"
        "    registry.register('onnx.com.example.Scale', scale)\n"
    )
    x = np.array([[-1.0, 2.0, 3.0], [4.0, -5.0, 0.5]], dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    args = [
        str(FIXTURES / "custom_op.onnx"),
        "--pipeline=manifest-alloc,insert-kills,usmp",
        "--no-reference",
        "--inputs",
        str(tmp_path / "in.npz"),
        "--save-outputs",
        str(tmp_path / "out.npz"),
    ]
    assert main([*args, "--kernels", str(kernels)]) == 0, capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_array_equal(saved["y"], -3 * np.maximum(x, 0))
    capsys.readouterr()

    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "memplan-run: error: unplanned run: kernel @onnx.com.example.Scale failed:"
    )


def test_mlir_input_with_weights_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An imported module runs from text, with the weights read from the model."""
    from memplan.tools.memplan_import import main as import_main

    mlir = tmp_path / "mlp.mlir"
    assert import_main([str(FIXTURES / "mlp.onnx"), "-o", str(mlir)]) == 0
    assert main([str(mlir), "--weights-from", str(FIXTURES / "mlp.onnx")]) == 0
    assert capsys.readouterr().out == "y: float32[2,4] sum 2\n"  # softmax rows sum to 1

    assert (
        main(
            [
                str(mlir),
                "--weights-from",
                str(FIXTURES / "mlp.onnx"),
                "--pipeline=manifest-alloc,insert-kills,usmp",
            ]
        )
        == 0
    )
    assert "result: OK" in capsys.readouterr().out

    assert main([str(mlir)]) == 1
    assert capsys.readouterr().err == (
        "memplan-run: error: the run: global @w1 has no initial value and no data was given "
        "for it (for an imported ONNX model, pass --weights-from MODEL.onnx)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["missing.mlir"],
            "memplan-run: error: cannot read missing.mlir: No such file or directory",
        ),
        (
            ["mlp.onnx", "--pipeline=nope"],
            "memplan-run: error: in --pipeline 'nope': unknown pass 'nope'",
        ),
        # The same pipeline parser and messages as memplan-opt's, never a traceback.
        (
            ["mlp.onnx", "--pipeline=manifest-alloc,usmp{"],
            "memplan-run: error: in --pipeline 'manifest-alloc,usmp{': malformed pass pipeline at column 21",
        ),
        (
            ["mlp.onnx", "--pipeline=manifest-alloc insert-kills"],
            "memplan-run: error: in --pipeline 'manifest-alloc insert-kills': malformed pass pipeline at column 15",
        ),
        (
            ["mlp.onnx", "--pipeline=manifest-aloc"],
            "memplan-run: error: in --pipeline 'manifest-aloc': unknown pass 'manifest-aloc' (did you mean 'manifest-alloc'?)",
        ),
        (
            ["mlp.onnx", "--pipeline=usmp{algorithm=fast}"],
            "memplan-run: error: in --pipeline 'usmp{algorithm=fast}': usmp: algorithm must be one of greedy-by-size, greedy-by-conflicts, hill-climb, exact, auto (got 'fast')",
        ),
        (
            ["truncated.onnx"],
            "memplan-run: error: truncated.onnx is not an ONNX model (or is truncated)",
        ),
        (
            ["dynamic_batch.onnx"],
            "memplan-run: error: tensor 'x' (graph input) has symbolic dim 'N'",
        ),
        (
            ["dynamic_batch.onnx", "--upper-bound", "N=8", "--dim-values", "N=two"],
            "memplan-run: error: --dim-values 'N=two' must look like SYMBOL=1,32,64",
        ),
        (
            ["dynamic_batch.onnx", "--upper-bound", "N=8", "--dim-values", "M=1"],
            "memplan-run: error: --dim-values names 'M', which has no --upper-bound",
        ),
        (
            ["dynamic_batch.onnx", "--upper-bound", "N=8", "--dim-values", "N=0"],
            "memplan-run: error: --dim-values N=0: outside 1..8 (its --upper-bound)",
        ),
        (["mlp.onnx", "--inputs", "missing.npz"], "memplan-run: error: --inputs missing.npz:"),
        (
            ["mlp.onnx", "--kernels", "missing.py"],
            "memplan-run: error: --kernels missing.py: not a Python file",
        ),
    ],
)
def test_run_errors(
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(FIXTURES)
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(message), captured.err
    assert "Traceback" not in captured.err


def test_dynamic_batch_with_input_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([str(FIXTURES / "dynamic_batch.onnx"), "--input-shape", "x=5x8"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "y       float32[5,4]  bit-identical" in out


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_bounded_plan_runs_at_every_size(pipeline: str) -> None:
    """Planned once under N <= 16: one pool of the same size at every N (with
    usmp: nothing outside it), bit-identical to the unplanned run and exact against the reference."""
    reports = run_onnx(
        str(FIXTURES / "dynamic_batch.onnx"),
        pipeline,
        upper_bounds={"N": 16},
        dim_values={"N": [1, 5, 16]},
        atol=0.0,
    )
    assert [label for label, _ in reports] == ["N=1", "N=5", "N=16"]
    for (_, report), rows in zip(reports, (1, 5, 16)):
        assert report.ok, report.format()
        assert report.outputs[0].shape == (rows, 4)
        if "usmp" in pipeline:
            assert report.unpinned_bytes == 0
    assert len({tuple(r.pool_bytes.items()) for _, r in reports}) == 1


def test_size_above_the_bound_fails_at_run_time() -> None:
    """A plan reserves the bound: a larger input is caught before any byte
    of a neighbour is overwritten."""
    model = onnx.load(FIXTURES / "dynamic_batch.onnx")
    module, constants = import_model_and_constants(model, upper_bounds={"N": 4})
    planned = plan(module, "manifest-alloc,insert-kills,usmp")
    x = np.ones((5, 8), np.float32)
    with pytest.raises(
        ExecutionError, match=r"storage %h1_storage of 320 bytes exceeds its bound max 256"
    ):
        run_function(
            planned, [x], kernels=default_kernels(), globals_data=global_data(module, constants)
        )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_counts_kernel_calls() -> None:
    """The run's counter names the call it is at as the terminal line's
    stage: shown only after the delay, then erased."""
    stream = _Terminal()
    call = func.CallOp("k", [], [])
    with CliProgress("memplan-run", stream, delay=3600).running() as progress:
        counter = CallCounter(progress, "planned run", 2)
        counter.did_interpret_op(call, ())
    assert stream.getvalue() == ""
    with CliProgress("memplan-run", stream, delay=0).running() as progress:
        counter = CallCounter(progress, "planned run", 2)
        counter.did_interpret_op(call, ())
        counter.did_interpret_op(call, ())
    assert "\r\x1b[Kmemplan-run: planned run: 2/2 kernel calls, " in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_scalars_bools_external_data_and_constant_outputs(tmp_path: Path) -> None:
    """0-d tensors stay 0-d, booleans run, weights in an external data file
    load, and a graph output that is a folded constant is returned."""
    from onnx import TensorProto, helper, numpy_helper

    from memplan.dialect.printer import module_text
    from memplan.tools.frontends.onnx.importer import import_onnx

    weights = np.arange(2000, dtype=np.float32).reshape(40, 50) / 1000
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["y"]),
            helper.make_node("Add", ["y", "one"], ["z"]),
            helper.make_node("Add", ["one", "one"], ["two"]),
            helper.make_node("Equal", ["x", "x"], ["eq"]),
            helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
            helper.make_node("Mul", ["sum", "one"], ["scaled"]),
        ],
        "edges",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 40])],
        [
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 50]),
            helper.make_tensor_value_info("two", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("eq", TensorProto.BOOL, [2, 40]),
            helper.make_tensor_value_info("scaled", TensorProto.FLOAT, []),
        ],
        initializer=[
            numpy_helper.from_array(weights, "w"),
            numpy_helper.from_array(np.array(1, dtype=np.float32), "one"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "edges.onnx"
    onnx.save(model, path, save_as_external_data=True, location="edges.data", size_threshold=100)
    assert (tmp_path / "edges.data").exists()

    text = module_text(import_onnx(path, weights="inline"))
    assert (
        'sym_name = "one", type = memref<f32>, initial_value = dense<1.000000e+00> : tensor<f32>'
        in text
    )
    assert 'sym_name = "w", type = memref<40x50xf32>, initial_value = dense<"0x' in text
    [(_, report)] = run_onnx(str(path), "manifest-alloc,insert-kills,usmp", atol=0.0)
    assert report.ok, report.format()
    assert [(o.name, o.shape, o.dtype) for o in report.outputs] == [
        ("z", (2, 50), "float32"),
        ("two", (), "float32"),
        ("eq", (2, 40), "bool"),
        ("scaled", (), "float32"),
    ]
    assert report.planned_outputs[1] == 2.0


def test_dynamic_storages_and_arith() -> None:
    """Sizes computed with arith at run time, dynamic dims, dense constants;
    bytes no kernel wrote read as poison."""
    module = parse_module(
        """
        func.func private @head(tensor<2xf32>, memref<?xf32>) -> ()
        func.func @main() -> memref<?xf32> {
          %n = arith.constant 3 : index
          %c4 = arith.constant 4 : index
          %bytes = arith.muli %n, %c4 : index
          %s = memory.alloc_storage(%bytes) : !memory.storage<?>
          %t = memory.alloc_tensor %s[0](%n) : !memory.storage<?> -> memref<?xf32>
          %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
          memory.invoke @head ins(%c : tensor<2xf32>) outs(%t : memref<?xf32>)
          func.return %t : memref<?xf32>
        }
        """
    )
    module.verify()
    registry = KernelRegistry()
    registry.register("head", lambda ins, outs, attrs: outs[0].__setitem__(slice(0, 2), ins[0]))
    result = run_function(module, [], kernels=registry)
    assert result.outputs[0][:2].tolist() == [1.0, 2.0] and np.isnan(result.outputs[0][2])
    assert result.unpinned_bytes == 12
    quiet = run_function(module, [], kernels=registry, poison=False)
    assert quiet.outputs[0].tolist() == [1.0, 2.0, 0.0]


def test_resolved_kernels_are_per_declaration() -> None:
    """One registry, two modules declaring @k with different attributes: each
    call gets the kernel resolved for its own declaration."""
    text = """
    func.func private @k(memref<2xf32>) -> () attributes {value = VALUE : f32}
    func.func @main() -> memref<2xf32> {
      %s = memory.alloc_storage : !memory.storage<8>
      %t = memory.alloc_tensor %s[0] : !memory.storage<8> -> memref<2xf32>
      memory.invoke @k outs(%t : memref<2xf32>)
      func.return %t : memref<2xf32>
    }
    """
    registry = KernelRegistry()

    def fill_with_value(declaration: func.FuncOp):  # type: ignore[no-untyped-def]
        value = declaration.attributes["value"].value.data  # type: ignore[union-attr]
        return lambda ins, outs, attrs: outs[0].fill(value)

    registry.add_resolver(fill_with_value)
    one = run_function(parse_module(text.replace("VALUE", "1.0")), [], kernels=registry)
    two = run_function(parse_module(text.replace("VALUE", "2.0")), [], kernels=registry)
    assert one.outputs[0].tolist() == [1.0, 1.0] and two.outputs[0].tolist() == [2.0, 2.0]


def test_pipeline_failure_points_at_the_input_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """memplan-run reports a verifier or pass error as memplan-opt does: at the
    op's line in the input (the plan runs on a copy; the copy's ops map back)."""
    source = tmp_path / "twice.mlir"
    source.write_text(
        "func.func @main() {\n"
        "  %s = memory.alloc_storage : !memory.storage<16>\n"
        "  memory.kill %s : !memory.storage<16>\n"
        "  memory.kill %s : !memory.storage<16>\n"
        "  func.return\n"
        "}\n"
    )
    assert main([str(source), "--pipeline=usmp"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[:4] == [
        f"{source}:4:3: error: %s is killed twice on one path",
        "  memory.kill %s : !memory.storage<16>",
        "  ^",
        f"{source}:3:3: note: first kill here",
    ]


BOUNDED = """
func.func private @grow(tensor<4xf32>, index) -> tensor<?xf32> attributes {memory.shape_fn = @grow_shape}
func.func @grow_shape(%x: tensor<4xf32>, %n: index) -> index {
  func.return %n : index
}
func.func private @stats(tensor<?xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %y = func.call @grow(%x, %n) {memory.max_shapes = [array<i64: 1024>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  %s = func.call @stats(%y) : (tensor<?xf32>) -> tensor<4xf32>
  %z = func.call @grow(%s, %n) {memory.max_shapes = [array<i64: 1024>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  %t = func.call @stats(%z) : (tensor<?xf32>) -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}
"""


def _bounded_registry() -> KernelRegistry:
    registry = KernelRegistry()

    @registry.register("grow")
    def grow(ins, outs, attributes) -> None:  # type: ignore[no-untyped-def]
        n = outs[0].shape[0]
        outs[0][:] = np.resize(ins[0], n) * np.arange(1, n + 1, dtype=np.float32)

    @registry.register("stats")
    def stats(ins, outs, attributes) -> None:  # type: ignore[no-untyped-def]
        y = ins[0]
        outs[0][:] = [y.sum(), y.max(), y.min(), y[-1]]

    return registry


@pytest.mark.parametrize("length", [1, 512, 1024])
def test_bounded_dynamic_storages_run_in_one_static_arena(length: int) -> None:
    """Planned at their `max` bound (1024 x f32 = 4096 bytes each), the two
    dynamic storages share one static arena: every length up to the bound
    computes what the unplanned program (fresh buffers) computes."""
    module = parse_module(BOUNDED)
    unplanned = plan(module, "manifest-alloc,insert-kills")
    planned = plan(module, "manifest-alloc,insert-kills,usmp")
    x = np.array([1.0, -2.0, 3.0, 0.5], dtype=np.float32)
    n = length
    before = run_function(unplanned, [x, n], kernels=_bounded_registry())
    after = run_function(planned, [x, n], kernels=_bounded_registry())
    assert before.pool_bytes == {}
    # %y dies at the first @stats, so %z reuses its offset: 4096 + 16 bytes.
    assert after.pool_bytes == {"workspace_cpu": 4112}
    np.testing.assert_array_equal(after.outputs[0], before.outputs[0])


def test_a_dynamic_size_over_its_bound_is_an_execution_error() -> None:
    planned = plan(parse_module(BOUNDED), "manifest-alloc,insert-kills,usmp")
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(
        ExecutionError, match=r"storage %y_storage of 4100 bytes exceeds its bound max 4096"
    ):
        run_function(planned, [x, 1025], kernels=_bounded_registry())


BROKEN_INPLACE_PROMISE = """
func.func private @widen(tensor<?xf32>, index) -> tensor<?xf32> attributes {memory.shape_fn = @widen_shape, memory.inplace = array<i64: 0, 0>}
func.func @widen_shape(%x: tensor<?xf32>, %n: index) -> index {
  func.return %n : index
}
func.func @main(%x: tensor<?xf32>, %n: index) -> tensor<?xf32> {
  %y = func.call @widen(%x, %n) {memory.max_shapes = [array<i64: 16>]} : (tensor<?xf32>, index) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
"""


@pytest.mark.parametrize("pipeline", ["manifest-alloc", "manifest-alloc,insert-kills,usmp"])
def test_a_dynamic_inplace_pair_of_two_shapes_is_an_execution_error(pipeline: str) -> None:
    """A dynamic in-place pair promises the result's run-time shape is the
    operand's; NumPy copies overlapping operands, so only this check shows a
    kernel that broke it (its result 8 floats, its operand 4)."""
    registry = KernelRegistry()

    @registry.register("widen")
    def widen(ins, outs, attributes) -> None:  # type: ignore[no-untyped-def]
        outs[0][:] = np.resize(ins[0], outs[0].shape)

    module = plan(parse_module(BROKEN_INPLACE_PROMISE), pipeline)
    x = np.ones(4, dtype=np.float32)
    assert run_function(module, [x, 4], kernels=registry).outputs[0].shape == (4,)
    with pytest.raises(
        ExecutionError,
        match=r"kernel @widen: result 0 has shape \[8\] at run time, operand 0 \[4\]; "
        r"its memory.inplace pair promises one shape",
    ):
        run_function(module, [x, 8], kernels=registry)


@pytest.mark.parametrize(
    ("op", "shape", "attributes"),
    [
        ("GlobalMaxPool", [1, 4, 6], {}),  # magika's [1, 512, 256] -> [1, 512, 1]
        ("GlobalMaxPool", [1, 2, 3, 4, 5], {}),
        ("GlobalMaxPool", [2, 3, 4, 5], {}),
        ("GlobalAveragePool", [1, 4, 6], {}),
        ("GlobalLpPool", [1, 4, 6], {}),
        ("GlobalLpPool", [1, 2, 3, 4], {"p": 3}),
    ],
)
def test_global_pools_keep_every_spatial_axis(
    op: str, shape: list[int], attributes: dict[str, Any], tmp_path: Path
) -> None:
    """Global pools reduce axes 2 on and keep them as 1s, whatever the rank:
    onnx.reference's GlobalMaxPool reduced the last two axes (a [1, 4, 6]
    input pooled to [1, 1]) and it has no GlobalLpPool."""
    from onnx import TensorProto, helper

    out_shape = shape[:2] + [1] * (len(shape) - 2)
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], **attributes)],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
    )
    path = tmp_path / "pool.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    [(_, report)] = run_onnx(str(path), "manifest-alloc,insert-kills,usmp", inputs={"x": x})
    assert report.ok, report.format()
    axes = tuple(range(2, len(shape)))
    p = attributes.get("p", 2)
    expected = {
        "GlobalMaxPool": lambda: x.max(axis=axes, keepdims=True),
        "GlobalAveragePool": lambda: x.mean(axis=axes, keepdims=True),
        "GlobalLpPool": lambda: (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1 / p),
    }[op]()
    np.testing.assert_allclose(report.planned_outputs[0], expected, rtol=1e-6)
    assert main([str(path)]) == 0


PARAMETRIC_CALLEE = """
memory.pool @p align 64 used 2048
func.func private @double(memref<?xf32>, memref<?xf32>) -> ()
func.func private @add(memref<?xf32>, memref<?xf32>, memref<?xf32>) -> ()
func.func @inner(%x: memref<?xf32>, %out: memref<?xf32>) attributes {memory.dim_ranges = {N = array<i64: 1, 256>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %c4 = arith.constant 4 : index
  %bytes = arith.muli %n, %c4 : index
  %a_s = memory.alloc_storage(%bytes) max 1024 at @p[0] {memory.reserve = "4*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %a = memory.alloc_tensor %a_s[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @double ins(%x : memref<?xf32>) outs(%a : memref<?xf32>)
  %b_s = memory.alloc_storage(%bytes) max 1024 at @p[1024] {memory.reserve = "4*N", memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<?>
  %b = memory.alloc_tensor %b_s[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @double ins(%a : memref<?xf32>) outs(%b : memref<?xf32>)
  memory.invoke @add ins(%a, %b : memref<?xf32>, memref<?xf32>) outs(%out : memref<?xf32>)
  memory.kill %a_s : !memory.storage<?>
  memory.kill %b_s : !memory.storage<?>
  func.return
}
func.func @main(%x: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
  func.call @inner(%x, %out) : (memref<?xf32>, memref<?xf32>) -> ()
  func.return %out : memref<?xf32>
}
"""


def _parametric_registry() -> KernelRegistry:
    registry = KernelRegistry()

    @registry.register("double")
    def double(ins, outs, attributes) -> None:  # type: ignore[no-untyped-def]
        np.multiply(ins[0], 2, out=outs[0])

    @registry.register("add")
    def add(ins, outs, attributes) -> None:  # type: ignore[no-untyped-def]
        np.add(ins[0], ins[1], out=outs[0])

    return registry


@pytest.mark.parametrize("rows", [1, 16, 256])
def test_a_called_function_runs_its_parametric_plan_in_exactly_its_pool(rows: int) -> None:
    """The callee's dims are read from its arguments when it is called: %b
    sits at align(4*N, 64), not at its `at` offset 1024, and the pool holds
    exactly the program's bytes; the run without pins agrees."""
    module = parse_module(PARAMETRIC_CALLEE)
    x = np.arange(rows, dtype=np.float32)
    out = np.zeros(rows, dtype=np.float32)
    planned = run_function(module, [x, out], kernels=_parametric_registry())
    unpinned = run_function(module, [x, out], kernels=_parametric_registry(), pinned=False)
    np.testing.assert_array_equal(planned.outputs[0], 6 * x)
    np.testing.assert_array_equal(unpinned.outputs[0], 6 * x)
    assert planned.pool_bytes == {"p": -(-4 * rows // 64) * 64 + 4 * rows}
    assert (unpinned.pool_bytes, unpinned.unpinned_bytes) == ({}, 8 * rows)


def test_a_called_function_outside_its_range_or_below_its_program_is_caught() -> None:
    """A size outside the callee's range is refused at its entry; a program
    that puts %b on %a's bytes (above no slot) changes the output."""
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(
        ExecutionError,
        match=r"dim N=300 \(argument #0's axis 0 of @inner\): outside 1\.\.256 "
        r"\(its memory.dim_ranges\)",
    ):
        run_function(
            parse_module(PARAMETRIC_CALLEE),
            [np.zeros(300, np.float32), np.zeros(300, np.float32)],
            kernels=_parametric_registry(),
        )
    overlapping = parse_module(
        PARAMETRIC_CALLEE.replace("memory.above = array<i64: 0>", "memory.above = array<i64>")
    )
    result = run_function(overlapping, [x, np.zeros(4, np.float32)], kernels=_parametric_registry())
    assert result.pool_bytes == {"p": 16}
    assert not np.array_equal(result.outputs[0], 6 * x)


def test_dim_values_need_a_placed_dim_in_an_mlir_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An .mlir input runs at sizes only where @main places its ranged dims."""
    from memplan.tools.memplan_import import main as import_main

    mlir = tmp_path / "mlp.mlir"
    assert import_main([str(FIXTURES / "mlp.onnx"), "-o", str(mlir)]) == 0
    weights = ["--weights-from", str(FIXTURES / "mlp.onnx")]
    assert main([str(mlir), *weights, "--dim-values", "N=1,2"]) == 1
    assert capsys.readouterr().err == (
        "memplan-run: error: --dim-values names 'N', which is not in @main's "
        "memory.dim_ranges (with memory.dim_symbols placing it on an argument)\n"
    )
