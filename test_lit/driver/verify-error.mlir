// RUN: not memplan-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: memplan-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

// A verifier error prints the verifier's message first, then the IR with the
// failing op marked, and exits 1 without a Python traceback. Each chunk is
// checked on its own, so both bad storages are reported.

// CHECK-NOT:   Traceback
// CHECK:       memplan-opt: error: storage %s: alignment must be a power of two, got 48
// CHECK:       ^^^^
// CHECK-NEXT:  | Operation does not verify: storage %s: alignment must be a power of two, got 48
func.func @bad_alignment() {
  %s = memory.alloc_storage align 48 : !memory.storage<64>
  func.return
}

// -----

// CHECK:       memplan-opt: error: storage %t: alignment must be a power of two, got 0
func.func @zero_alignment() {
  %t = memory.alloc_storage align 0 : !memory.storage<64>
  func.return
}

// --verify-diagnostics keeps xDSL's behaviour: the message on stdout, exit 0.
// DIAG:        storage %s: alignment must be a power of two, got 48
// DIAG:        storage %t: alignment must be a power of two, got 0
