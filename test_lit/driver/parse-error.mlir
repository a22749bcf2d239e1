// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: memplan-opt %s --split-input-file --parsing-diagnostics | filecheck %s --check-prefix=DIAG

// A parse error names the input file, the line and column (counted from the
// start of the file, not of the chunk), shows the line and points at the
// token. Every chunk is processed: the valid chunk after the broken ones
// still prints, and the exit code is 1.

// CHECK-NOT:   Traceback
// CHECK:       parse-error.mlir:[[# @LINE + 4]]:19: error: operand is used with type i64, but has been previously used or defined with type i32
// CHECK-NEXT:    %1 = arith.addi %0, %0 : i64
func.func @type_mismatch() {
  %0 = arith.constant 1 : i32
  %1 = arith.addi %0, %0 : i64
  func.return
}

// -----

// CHECK:       parse-error.mlir:[[# @LINE + 1]]:14: error: Operation nosuch.op is not registered
  "nosuch.op"() : () -> ()

// -----

// CHECK:       func.func @still_printed
func.func @still_printed() {
  func.return
}

// --parsing-diagnostics prints xDSL's own form on stdout and exits 0.
// DIAG:        parse-error.mlir:{{[0-9]+}}:19
// DIAG:        operand is used with type i64
// DIAG:        func.func @still_printed
