// RUN: not memplan-opt %s --manifest-alloc --split-input-file 2>&1 | filecheck %s

// A result index out of range.
// CHECK: manifest-alloc-inplace-invalid.mlir:[[# @LINE + 1]]:1: error: kernel @bad_result: memory.inplace pair (1, 0): result 1 out of range (1 results)
func.func private @bad_result(tensor<16xf32>) -> tensor<16xf32> attributes {memory.inplace = array<i64: 1, 0>}
func.func @f(%x: tensor<16xf32>) -> tensor<16xf32> {
  %y = func.call @bad_result(%x) : (tensor<16xf32>) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// -----

// An operand that is a scalar, not a tensor.
// CHECK: error: kernel @bad_operand: memory.inplace pair (0, 1): operand 1 is not a tensor operand of kernel @bad_operand
func.func private @bad_operand(tensor<16xf32>, i32) -> tensor<16xf32> attributes {memory.inplace = array<i64: 0, 1>}
func.func @f(%x: tensor<16xf32>, %n: i32) -> tensor<16xf32> {
  %y = func.call @bad_operand(%x, %n) : (tensor<16xf32>, i32) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// -----

// A result larger than the operand whose bytes it would take: 64 > 32.
// CHECK: error: kernel @grows: memory.inplace pair (0, 0): result tensor<16xf32> (64 bytes) does not fit in operand tensor<8xf32> (32 bytes)
func.func private @grows(tensor<8xf32>) -> tensor<16xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func @f(%x: tensor<8xf32>) -> tensor<16xf32> {
  %y = func.call @grows(%x) : (tensor<8xf32>) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// -----

// Not index pairs: an odd count.
// CHECK: error: kernel @odd: memory.inplace must be array<i64: result, operand, ...> (index pairs), got array<i64: 0>
func.func private @odd(tensor<8xf32>) -> tensor<8xf32> attributes {memory.inplace = array<i64: 0>}
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = func.call @odd(%x) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// An operand in two pairs: its bytes can go to one result only. (A result
// may list several operands.)
// CHECK: error: kernel @twice: memory.inplace pair (1, 0): each operand may appear in one pair
func.func private @twice(tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) attributes {memory.inplace = array<i64: 0, 0, 1, 0>}
func.func @f(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %y:2 = func.call @twice(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  func.return %y#0, %y#1 : tensor<8xf32>, tensor<8xf32>
}
