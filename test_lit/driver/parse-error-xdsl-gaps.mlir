// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s

// Inputs xDSL 0.74's parser lets through as Python exceptions, accepts,
// or takes minutes on (docs/known-limits.md); memplan-opt reports each as a
// parse error at the offending token, exit 1, never an internal error.

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

// -----

// A use written above its definition in the same block: xDSL takes it as a
// forward reference and verifies the function.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 4]]:25: error: operand %t does not dominate its use
// CHECK-NEXT:    memory.invoke @k outs(%t : memref<4xf32>)
func.func private @k(memref<4xf32>)
func.func @use_above_definition(%s: !memory.storage<16>) {
  memory.invoke @k outs(%t : memref<4xf32>)
  %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  func.return
}

// -----

// A use outside the region that defines the value: the module-level op
// reads a value of @inner's body.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 2]]:23: error: operand %t does not dominate its use
func.func private @k(memref<4xf32>)
memory.invoke @k outs(%t : memref<4xf32>)
func.func @inner(%s: !memory.storage<16>) {
  %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  func.return
}

// -----

// A string left open on a long line: xDSL's string pattern backtracks
// exponentially on it (minutes); memplan's lexer answers at once.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 2]]:8: error: End of file reached before closing string literal.
func.func @open_string() {
  %s = "memory.alloc_storage : !memory.storage<16> -> memref<4xf32> some more words here
  func.return
}

// -----

// A linalg named op without operands: xDSL's custom parser indexes the
// empty operand list.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 2]]:3: error: malformed 'linalg.add' op (IndexError: list index out of range)
func.func @named_op_without_operands() {
  linalg.add
  func.return
}

// -----

// A float literal beyond f32's range.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 2]]:3: error: a float literal does not fit in its type
func.func @float_out_of_range() -> f32 {
  %c = arith.constant -1.0e60 : f32
  func.return %c : f32
}

// -----

// A storage of the `then` branch does not exist in the `else` branch: the
// use is reported at the use (xDSL reports the end of the input). The
// verifier's own message for IR built by a pass is checked in
// tests/dialect/test_dialect.py.
// CHECK:       parse-error-xdsl-gaps.mlir:[[# @LINE + 8]]:29: error: use of undefined value %t
func.func private @read(memref<16xf32>)
func.func @cross_branch(%c : i1) {
  scf.if %c {
    %s = memory.alloc_storage : !memory.storage<64>
    %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
    scf.yield
  } else {
    memory.invoke @read ins(%t : memref<16xf32>)
    scf.yield
  }
  func.return
}
