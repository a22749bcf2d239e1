// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s

// Three inputs xDSL 0.74's parser lets through as Python exceptions
// (docs/known-limits.md); memplan-opt reports each as a parse error at the
// offending token, exit 1, never an internal error.

// CHECK-NOT:   internal error
// CHECK-NOT:   Traceback

// An operand defined only later, inside the region of the op that uses it:
// the linalg.generic's custom parser builds the op after its body, so the
// definition never replaces the use.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 3]]:154: error: operand %empty does not dominate its use
// CHECK-NEXT:    %0 = linalg.generic
func.func @dominance(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%empty : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %empty = tensor.empty() : tensor<4xf32>
    linalg.yield %in : f32
  } -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// An integer literal too large for its element type, in a dense attribute
// (the caret is under the literal) and as a plain integer attribute.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 4]]:29: error: integer 99999999999999999999 does not fit in i64
// CHECK-NEXT:    %c = arith.constant dense<99999999999999999999> : tensor<2xi64>
// CHECK-NEXT:                              ^^^^^^^^^^^^^^^^^^^^
func.func @dense_out_of_range() -> tensor<2xi64> {
  %c = arith.constant dense<99999999999999999999> : tensor<2xi64>
  func.return %c : tensor<2xi64>
}

// -----

// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 2]]:3: error: integer 99999999999999999999 does not fit in i64
func.func @integer_out_of_range() -> i64 {
  %c = arith.constant 99999999999999999999 : i64
  func.return %c : i64
}

// -----

// A block label defined twice in one region.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 6]]:1: error: block ^bb1 defined twice
// CHECK-NEXT:  ^bb1:
func.func @duplicate_block() {
  cf.br ^bb1
^bb1:
  cf.br ^bb1
^bb1:
  func.return
}
