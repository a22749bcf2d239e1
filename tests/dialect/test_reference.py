"""The value-semantic reference interpreter (`memplan.dialect.reference`):
it runs the original program, and a planned run can be checked against it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from memplan.dialect.interpreter import ExecutionError, KernelRegistry, run_function
from memplan.dialect.reference import run_reference
from memplan_testing import parse_module, run_passes

PROGRAM = """
func.func private @add(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @twice(tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @square(tensor<4xf32>) -> tensor<2x2xf32> attributes {memory.view}
func.func private @sum(tensor<2x2xf32>) -> tensor<1xf32>
func.func @main(%x: tensor<4xf32>, %c: i1) -> (tensor<4xf32>, tensor<4xf32>, tensor<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %a = func.call @add(%x, %one) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) {
    scf.yield %a : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  %l = scf.for %i = %c0 to %c3 step %c1 iter_args(%it = %a) -> (tensor<4xf32>) {
    %n = func.call @twice(%it) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  %w = scf.while (%j = %c0) : (index) -> index {
    %go = arith.cmpi slt, %j, %c1 : index
    scf.condition(%go) %j : index
  } do {
  ^bb0(%k: index):
    %t = func.call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %next = arith.addi %k, %c1 : index
    scf.yield %next : index
  }
  %v = func.call @square(%r) : (tensor<4xf32>) -> tensor<2x2xf32>
  %s = func.call @sum(%v) : (tensor<2x2xf32>) -> tensor<1xf32>
  func.return %r, %l, %s : tensor<4xf32>, tensor<4xf32>, tensor<1xf32>
}
"""


def _kernels() -> KernelRegistry:
    registry = KernelRegistry()

    @registry.register("add")
    def add(ins: Sequence[Any], outs: Sequence[np.ndarray], _: Mapping[str, Any]) -> None:
        np.add(ins[0], ins[1], out=outs[0])

    @registry.register("twice")
    def twice(ins: Sequence[Any], outs: Sequence[np.ndarray], _: Mapping[str, Any]) -> None:
        np.multiply(ins[0], 2, out=outs[0])

    @registry.register("sum")
    def total(ins: Sequence[Any], outs: Sequence[np.ndarray], _: Mapping[str, Any]) -> None:
        outs[0][...] = np.sum(ins[0])

    return registry


X = np.array([1, 2, 3, 4], dtype=np.float32)


@pytest.mark.parametrize("condition", [False, True])
def test_reference_computes_the_value_semantics(condition: bool) -> None:
    """scf.if yielding an outer value, a loop carrying one, an scf.while,
    a view and a constant: what NumPy computes by hand."""
    module = parse_module(PROGRAM, verify=True)
    result = run_reference(module, [X, condition], kernels=_kernels(), trace=True)
    r, loop, total = result.outputs
    expected_r = X + 1 if condition else X
    np.testing.assert_array_equal(r, expected_r)
    np.testing.assert_array_equal(loop, (X + 1) * 8)
    np.testing.assert_array_equal(total, [expected_r.sum()])
    # The view is no kernel call: add, three twice, one twice in the
    # while, sum.
    assert result.calls is not None
    assert [c.callee for c in result.calls] == ["add", *["twice"] * 4, "sum"]
    assert result.pool_bytes == {} and result.unpinned_bytes == 0


@pytest.mark.parametrize("condition", [False, True])
def test_planned_run_traces_the_reference_call_for_call(condition: bool) -> None:
    """The plan of the program runs the same kernel calls on the same bytes."""
    module = parse_module(PROGRAM, verify=True)
    reference = run_reference(module, [X, condition], kernels=_kernels(), trace=True)
    planned = run_passes(parse_module(PROGRAM), "plan,verify-plan")
    run = run_function(planned, [X, condition], kernels=_kernels(), trace=True)
    assert run.calls == reference.calls
    for got, want in zip(run.outputs, reference.outputs):
        assert got.tobytes() == want.tobytes()


def test_reference_sees_what_a_wrong_plan_clobbers() -> None:
    """A hand-made plan that carves %b over %a while %a is still read: the
    unplanned-style run computes garbage, the reference does not."""
    original = parse_module(
        """
func.func private @twice(tensor<4xf32>) -> tensor<4xf32>
func.func private @add(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %c = func.call @add(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
""",
        verify=True,
    )
    wrong = parse_module(
        """
func.func private @twice(memref<4xf32>, memref<4xf32>) -> ()
func.func private @add(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %s = memory.alloc_storage : !memory.storage<16>
  %a = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @twice ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  %b = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @twice ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  %t = memory.alloc_storage : !memory.storage<16>
  %c = memory.alloc_tensor %t[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @add ins(%a, %b : memref<4xf32>, memref<4xf32>) outs(%c : memref<4xf32>)
  func.return %c : memref<4xf32>
}
""",
        verify=True,
    )
    reference = run_reference(original, [X], kernels=_kernels(), trace=True)
    planned = run_function(wrong, [X], kernels=_kernels(), trace=True)
    np.testing.assert_array_equal(reference.outputs[0], X * 2 + X * 4)
    assert planned.outputs[0].tobytes() != reference.outputs[0].tobytes()
    assert planned.calls != reference.calls  # @add read other bytes for %a


def test_kernel_writing_an_operand_fails() -> None:
    """Values are immutable: a kernel that writes its operand is an error,
    not a silent change of the value."""
    module = parse_module(
        """
func.func private @bad(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @bad(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
""",
        verify=True,
    )
    registry = KernelRegistry()

    @registry.register("bad")
    def bad(ins: Sequence[Any], outs: Sequence[np.ndarray], _: Mapping[str, Any]) -> None:
        ins[0][0] = 0.0
        outs[0][...] = ins[0]

    with pytest.raises(ExecutionError, match="kernel @bad failed: .*read-only"):
        run_reference(module, [X], kernels=registry)


def test_planned_module_is_refused() -> None:
    planned = run_passes(parse_module(PROGRAM), "plan")
    with pytest.raises(
        ExecutionError,
        match=r"value-semantic modules only: memory.alloc_storage \(%a_storage\) belongs to a "
        "planned module",
    ):
        run_reference(planned, [X, True], kernels=_kernels())


def test_arguments_are_checked() -> None:
    module = parse_module(PROGRAM, verify=True)
    with pytest.raises(ExecutionError, match=r"argument #0 of @main is tensor<4xf32>, got int64"):
        run_reference(module, [np.arange(4), True], kernels=_kernels())
    with pytest.raises(ExecutionError, match="@main takes 2 arguments, 1 were given"):
        run_reference(module, [X], kernels=_kernels())
