// RUN: not memplan-opt %s --plan --split-input-file 2>&1 | filecheck %s
// RUN: not memplan-opt %s --manifest-alloc --insert-kills --coalesce=overlap=false --usmp --split-input-file 2>&1 | filecheck %s

// Byte counts are i64 (sizes, offsets, a pool's `used`): a program whose
// plan would need more than 2^63-1 bytes gets an error saying so, never a
// negative `used` or an unexplained i64 range error.

// One tensor of 2^62 f32 elements is 2^64 bytes: the error points at the
// kernel declaration whose result type it is.
func.func private @k(tensor<4xf32>) -> tensor<4611686018427387904xf32>
func.func @one_tensor(%x: tensor<4xf32>) -> tensor<4611686018427387904xf32> {
  %a = func.call @k(%x) : (tensor<4xf32>) -> tensor<4611686018427387904xf32>
  func.return %a : tensor<4611686018427387904xf32>
}
// CHECK: plan-sizes-beyond-i64.mlir:[[# @LINE - 5]]:1: error: kernel @k: result #0: memref<4611686018427387904xf32> holds 18446744073709551616 bytes, which exceeds 2^63-1 bytes

// -----

// Two tensors of 2^62 bytes live together in one pool: the second ends at
// byte 2^63. coalesce leaves them unmerged (no storage type holds 2^63
// bytes) and usmp reports the storage.
func.func private @k(tensor<4xf32>) -> tensor<1152921504606846976xf32>
func.func private @u(tensor<1152921504606846976xf32>, tensor<1152921504606846976xf32>) -> tensor<4xf32>
func.func @two_tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @k(%x) : (tensor<4xf32>) -> tensor<1152921504606846976xf32>
  %b = func.call @k(%x) : (tensor<4xf32>) -> tensor<1152921504606846976xf32>
  %c = func.call @u(%a, %b) : (tensor<1152921504606846976xf32>, tensor<1152921504606846976xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: error: usmp: storage %b_storage (4611686018427387904 bytes) at offset 4611686018427387904 of @workspace_cpu ends at byte 9223372036854775808, which exceeds 2^63-1 bytes
// CHECK-NOT: used must be non-negative
