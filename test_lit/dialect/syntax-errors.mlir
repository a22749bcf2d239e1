// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s
// Plain upstream xdsl-opt reports every case as memplan-opt does (the
// errors come from the dialect's formats and types, not from memplan-opt).
// RUN: xdsl-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file > %t.xdsl
// RUN: memplan-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | diff %t.xdsl -

// Malformed `memory` syntax: each error is at the token, names what is
// wrong, and exits 1 without a traceback. The ops' declarative formats
// (memdialect/ops.py) keep these through their custom directives.

// CHECK-NOT:   Traceback

// An offset beyond 2^63-1 in `at @pool[offset]`, at the literal.
// CHECK:       syntax-errors.mlir:[[# @LINE + 3]]:38: error: offset 9223372036854775808 exceeds 2^63-1 bytes
memory.pool @sram
func.func @pin_offset_too_large() {
  %s = memory.alloc_storage at @sram[9223372036854775808] : !memory.storage<64>
  func.return
}

// -----

// A `max` beyond 2^63-1.
// CHECK:       syntax-errors.mlir:[[# @LINE + 2]]:37: error: max 9223372036854775808 exceeds 2^63-1 bytes
func.func @max_too_large(%n : index) {
  %s = memory.alloc_storage(%n) max 9223372036854775808 : !memory.storage<?>
  func.return
}

// -----

// A tensor offset beyond 2^63-1.
// CHECK:       syntax-errors.mlir:[[# @LINE + 3]]:31: error: offset 9223372036854775808 exceeds 2^63-1 bytes
func.func @tensor_offset_too_large() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[9223372036854775808] : !memory.storage<64> -> memref<4xf32>
  func.return
}

// -----

// A device is a string literal: `on 5` is an error at the `5`, not a typed
// integer `5 : !memory.storage<64>`.
// CHECK:       syntax-errors.mlir:[[# @LINE + 2]]:32: error: string literal expected
func.func @device_not_a_string() {
  %s = memory.alloc_storage on 5 : !memory.storage<64>
  func.return
}

// -----

// A pinned storage names its pool as a symbol.
// CHECK:       syntax-errors.mlir:[[# @LINE + 2]]:32: error: expect symbol name
func.func @pin_without_symbol() {
  %s = memory.alloc_storage at sram[0] : !memory.storage<64>
  func.return
}

// -----

// One type per operand in `ins(...)` and `outs(...)`: the error is at the
// group's `)` and names the group.
// CHECK:       syntax-errors.mlir:[[# @LINE + 3]]:47: error: outs: 2 operands but 1 types
func.func private @k(memref<4xf32>)
func.func @outs_count(%t : memref<4xf32>) {
  memory.invoke @k outs(%t, %t : memref<4xf32>)
  func.return
}

// -----

// CHECK:       syntax-errors.mlir:[[# @LINE + 3]]:57: error: ins: 1 operands but 2 types
func.func private @k(memref<4xf32>, memref<4xf32>)
func.func @ins_count(%t : memref<4xf32>) {
  memory.invoke @k ins(%t : memref<4xf32>, memref<4xf32>) outs(%t : memref<4xf32>)
  func.return
}

// -----

// A kill's type must be its operand's: the error is at the operand.
// CHECK:       syntax-errors.mlir:[[# @LINE + 2]]:15: error: operand is used with type i32, but has been previously used or defined with type memref<4xf32>
func.func @kill_type_mismatch(%t : memref<4xf32>) {
  memory.kill %t : i32
  func.return
}

// -----

// Only storages and memrefs are killed.
// CHECK:       syntax-errors.mlir:[[# @LINE + 2]]:3: error: cannot kill %x of type i32: only storages and memrefs are killed
func.func @kill_scalar(%x : i32) {
  memory.kill %x : i32
  func.return
}
