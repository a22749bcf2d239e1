// RUN: memplan-opt %s --plan > %t.mlir
// RUN: filecheck %s --input-file %t.mlir
// RUN: memplan-opt %t.mlir --plan | diff %t.mlir -
// RUN: memplan-opt %t.mlir --insert-kills | diff %t.mlir -

// `--plan` is idempotent: planning a planned module changes nothing. Here
// coalesce merges %v23 and %v26 of the scf.if branch (in an scf.while) into
// one storage, which is not killed (%v26 is yielded), and usmp splits it
// again: %v23's storage carries no kill, but its one tensor does, so the
// storage is dead after it and a second insert-kills (a second `--plan`)
// adds no kill (it used to add `memory.kill %v23_storage`). Found by the
// random-program campaign (tests/fuzz/programs.py), reduced.
func.func private @k_5(tensor<3x3xf16>, tensor<8xi32>, tensor<3x3xf16>) -> tensor<2xf16> attributes {memory.inplace = array<i64: 0, 2>}
func.func private @k_8(tensor<3x3xf16>) -> tensor<3x3xi8> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @k_10(tensor<2xf16>) -> tensor<8xi8>
func.func private @k_16(tensor<16x2xi8>) -> tensor<13xi8> attributes {memory.inplace = array<i64: 0, 0>}
func.func @main(%cond: i1, %v1: tensor<8x3x16xi32>, %v2: tensor<16x2xi8>, %v3: tensor<8xi32>) -> (tensor<16x2xi8>, tensor<16x2xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %true = arith.constant true
  %ncond = arith.xori %cond, %true : i1
  %v5 = arith.constant dense<0.5> : tensor<3x3xf16>
  %w9 = scf.while (%wi10 = %c0) : (index) -> index {
    %w9_go = arith.cmpi slt, %wi10, %c0 : index
    scf.condition(%w9_go) %wi10 : index
  } do {
  ^bb0(%wj11: index):
    %w9_next = arith.addi %wj11, %c1 : index
    scf.yield %w9_next : index
  }
  %v14 = func.call @k_5(%v5, %v3, %v5) : (tensor<3x3xf16>, tensor<8xi32>, tensor<3x3xf16>) -> tensor<2xf16>
  %w15 = scf.while (%wi16 = %c0) : (index) -> index {
    %w15_go = arith.cmpi slt, %wi16, %c3 : index
    scf.condition(%w15_go) %wi16 : index
  } do {
  ^bb0(%wj17: index):
    %v20, %v21 = scf.if %ncond -> (tensor<8xi8>, tensor<8x3x16xi32>) {
      %v23 = func.call @k_8(%v5) : (tensor<3x3xf16>) -> tensor<3x3xi8>
      %v26 = func.call @k_10(%v14) : (tensor<2xf16>) -> tensor<8xi8>
      scf.yield %v26, %v1 : tensor<8xi8>, tensor<8x3x16xi32>
    } else {
      %v27 = func.call @k_10(%v14) : (tensor<2xf16>) -> tensor<8xi8>
      scf.yield %v27, %v1 : tensor<8xi8>, tensor<8x3x16xi32>
    }
    %w15_next = arith.addi %wj17, %c1 : index
    scf.yield %w15_next : index
  }
  %v35 = arith.constant dense<1> : tensor<16x2xi8>
  %v39 = func.call @k_16(%v35) : (tensor<16x2xi8>) -> tensor<13xi8>
  %v40 = arith.constant dense<1> : tensor<16x2xi8>
  func.return %v40, %v40 : tensor<16x2xi8>, tensor<16x2xi8>
}

// CHECK-LABEL: func.func @main(
// CHECK:         %v23_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<9>
// CHECK-NEXT:    %v23 = memory.alloc_tensor %v23_storage[0] : !memory.storage<9> -> memref<3x3xi8>
// CHECK-NEXT:    memory.invoke @k_8
// CHECK-NEXT:    memory.kill %v23 : memref<3x3xi8>
// CHECK-NEXT:    %v26_storage = memory.alloc_storage
