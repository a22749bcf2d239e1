// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not memplan-opt %s --split-input-file --debug 2>&1 | filecheck %s --check-prefix=DEBUG
// RUN: memplan-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

// A verifier error prints as mlir-opt's: `file:line:col: error: message`, the
// op's line with a caret under its start, and `note:` lines for related ops;
// exit 1, no Python traceback, no dump of the module (that comes only with
// --debug). Each chunk is checked on its own, so every bad chunk is reported.

// CHECK-NOT:   Traceback
// CHECK:       verify-error.mlir:[[# @LINE + 4]]:3: error: storage %s: alignment must be a power of two, got 48
// CHECK-NEXT:    %s = memory.alloc_storage align 48 : !memory.storage<64>
// CHECK-NEXT:    ^
func.func @bad_alignment() {
  %s = memory.alloc_storage align 48 : !memory.storage<64>
  func.return
}

// -----

// A value killed twice: the error is at the second kill, a note at the first.
// CHECK:       verify-error.mlir:[[# @LINE + 10]]:3: error: %t is killed twice on one path
// CHECK-NEXT:    memory.kill %t : memref<4xf32>
// CHECK-NEXT:    ^
// CHECK-NEXT:  verify-error.mlir:[[# @LINE + 6]]:3: note: first kill here
// CHECK-NEXT:    memory.kill %t : memref<4xf32>
// CHECK-NEXT:    ^
func.func @killed_twice() {
  %s = memory.alloc_storage : !memory.storage<16>
  %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.kill %t : memref<4xf32>
  memory.kill %t : memref<4xf32>
  func.return
}

// -----

// A use after the kill: the error is at the use, a note at the kill.
// CHECK:       verify-error.mlir:[[# @LINE + 11]]:3: error: %t is used by memory.invoke after its kill
// CHECK-NEXT:    memory.invoke @k outs(%t : memref<4xf32>)
// CHECK-NEXT:    ^
// CHECK-NEXT:  verify-error.mlir:[[# @LINE + 7]]:3: note: %t is killed here
// CHECK-NEXT:    memory.kill %t : memref<4xf32>
// CHECK-NEXT:    ^
func.func private @k(memref<4xf32>)
func.func @used_after_kill() {
  %s = memory.alloc_storage : !memory.storage<16>
  %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.kill %t : memref<4xf32>
  memory.invoke @k outs(%t : memref<4xf32>)
  func.return
}

// --debug adds the traceback and the module with the failing op marked.
// DEBUG:       Traceback
// DEBUG:       | Operation does not verify: storage %s: alignment must be a power of two, got 48
// DEBUG:       verify-error.mlir:{{[0-9]+}}:3: error: storage %s: alignment must be a power of two, got 48

// --verify-diagnostics keeps xDSL's behaviour: the message on stdout, exit 0.
// DIAG:        storage %s: alignment must be a power of two, got 48
// DIAG:        %t is killed twice on one path
// DIAG:        %t is used by memory.invoke after its kill
