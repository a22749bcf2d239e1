// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s

// Lines the parser reads in one step (a `func.call` or a `memory` op whose
// types were spelled before: memdialect/xdsl_speedups/plain_syntax.py)
// give the diagnostics, at the same line and column, that xDSL's parser
// gives for the same line, and print back as written.

// The second call uses %a (a tensor<4xf32>) as a tensor<2xf32>: both types
// were spelled on the lines above, so the line is read in one step.
// CHECK-NOT:   Traceback
// CHECK:       one-step-lines.mlir:[[# @LINE + 3]]:21: error: operand is used with type tensor<2xf32>, but has been previously used or defined with type tensor<4xf32>
func.func @call_type_mismatch(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  %0 = func.call @k(%b) : (tensor<2xf32>) -> tensor<4xf32>
  %1 = func.call @k(%a) : (tensor<2xf32>) -> tensor<4xf32>
  func.return
}

// -----

// %x is defined nowhere: the error is at its use.
// CHECK:       one-step-lines.mlir:[[# @LINE + 2]]:25: error: use of undefined value %x
func.func @call_of_undefined_value(%a: tensor<4xf32>) {
  %0 = func.call @k(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// A kill whose type is not its value's.
// CHECK:       one-step-lines.mlir:[[# @LINE + 4]]:15: error: operand is used with type !memory.storage<64>, but has been previously used or defined with type memref<4xf32>
func.func @kill_type_mismatch(%x: memref<4xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<4xf32>
  memory.kill %t : !memory.storage<64>
  func.return
}

// -----

// An invoke naming two outs but one type is left to the format, which
// reports the count; %y, undefined, is not resolved first.
// CHECK:       one-step-lines.mlir:[[# @LINE + 4]]:71: error: outs: 2 operands but 1 types
func.func @invoke_count_mismatch(%x: memref<4xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<4xf32>
  memory.invoke @k ins(%y : memref<4xf32>) outs(%t, %x : memref<4xf32>)
  func.return
}

// -----

// Planned lines print back as written (the plain printers), the invoke
// whose `outs` follow on the next line on one line.
// CHECK-LABEL: func.func @planned_lines
// CHECK-NEXT:    %s = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:    %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<4xf32>
// CHECK-NEXT:    %u = memory.alloc_tensor %s[16] align 16 {k = 1 : i64} : !memory.storage<64> -> memref<4xf32>
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
// CHECK-NEXT:    memory.invoke @k ins(%t : memref<4xf32>) outs(%u : memref<4xf32>) {k = 1 : i64}
// CHECK-NEXT:    memory.kill %t : memref<4xf32>
// CHECK-NEXT:    memory.kill %s : !memory.storage<64>
func.func @planned_lines(%x: memref<4xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<4xf32>
  %u = memory.alloc_tensor %s[16] align 16 {k = 1 : i64} : !memory.storage<64> -> memref<4xf32>
  memory.invoke @k ins(%x : memref<4xf32>)
      outs(%t : memref<4xf32>)
  memory.invoke @k ins(%t : memref<4xf32>) outs(%u : memref<4xf32>) {k = 1 : i64}
  memory.kill %t : memref<4xf32>
  memory.kill %s : !memory.storage<64>
  func.return
}
