// lower-to-memref on a hand-written plan, independent of the planner: the
// output verifies with mlir-opt (pretty and generic), lowers to LLVM and
// runs with the expected values in alloc and global mode; in arg mode it
// verifies and lowers. verify-plan first checks that the plan is sound.
//
// REQUIRES: mlir
// RUN: memplan-opt %s --verify-plan > /dev/null
// RUN: memplan-opt %s --lower-to-memref | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | filecheck %s
// RUN: memplan-opt %s --lower-to-memref --print-op-generic | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | filecheck %s
// RUN: memplan-opt %s --lower-to-memref='pool-mode=global' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | filecheck %s
// RUN: memplan-opt %s --lower-to-memref='pool-mode=global' --print-op-generic | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | filecheck %s
// RUN: memplan-opt %s --lower-to-memref='pool-mode=arg' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm > /dev/null
// RUN: memplan-opt %s --lower-to-memref='pool-mode=arg' --print-op-generic | %mlir_bin/mlir-opt --verify-each %lower_to_llvm > /dev/null

// The plan: %a at [0, 64) until its kill; %bc (two tensors: %c at +0, %b at
// +64) at [64, 192); %d reuses %a's bytes [0, 64) once %a is dead. %n holds
// a dynamic storage of 4 * %len bytes with a tensor at byte 0.
memory.pool @ws size 256

// Kernels with bodies in destination-passing style.
func.func @fill(%v: f32, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    memref.store %v, %out[%i] : memref<16xf32>
  }
  func.return
}
func.func @add(%x: memref<16xf32>, %y: memref<16xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %p = memref.load %x[%i] : memref<16xf32>
    %q = memref.load %y[%i] : memref<16xf32>
    %s = arith.addf %p, %q : f32
    memref.store %s, %out[%i] : memref<16xf32>
  }
  func.return
}

func.func @main() {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %len = arith.constant 16 : index
  %s_a = memory.alloc_storage at @ws[0] : !memory.storage<64>
  %a = memory.alloc_tensor %s_a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @fill ins(%one : f32) outs(%a : memref<16xf32>)
  %s_bc = memory.alloc_storage at @ws[64] : !memory.storage<128>
  %b = memory.alloc_tensor %s_bc[64] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @fill ins(%two : f32) outs(%b : memref<16xf32>)
  %c = memory.alloc_tensor %s_bc[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @add ins(%a, %b : memref<16xf32>, memref<16xf32>) outs(%c : memref<16xf32>)
  memory.kill %s_a : !memory.storage<64>
  %s_d = memory.alloc_storage at @ws[0] : !memory.storage<64>
  %d = memory.alloc_tensor %s_d[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @add ins(%c, %c : memref<16xf32>, memref<16xf32>) outs(%d : memref<16xf32>)
  %bytes = arith.constant 64 : index
  %s_n = memory.alloc_storage(%bytes) : !memory.storage<?>
  %n = memory.alloc_tensor %s_n[0] : !memory.storage<?> -> memref<16xf32>
  memory.invoke @add ins(%d, %b : memref<16xf32>, memref<16xf32>) outs(%n : memref<16xf32>)
  %pc = "memref.cast"(%c) : (memref<16xf32>) -> memref<*xf32>
  func.call @printMemrefF32(%pc) : (memref<*xf32>) -> ()
  %pd = "memref.cast"(%d) : (memref<16xf32>) -> memref<*xf32>
  func.call @printMemrefF32(%pd) : (memref<*xf32>) -> ()
  %pn = "memref.cast"(%n) : (memref<16xf32>) -> memref<*xf32>
  func.call @printMemrefF32(%pn) : (memref<*xf32>) -> ()
  memory.kill %s_n : !memory.storage<?>
  memory.kill %s_d : !memory.storage<64>
  memory.kill %s_bc : !memory.storage<128>
  func.return
}
func.func private @printMemrefF32(memref<*xf32>)

// c = 1 + 2, d = c + c, n = d + b.
// CHECK:      sizes = [16] strides = [1] data =
// CHECK-NEXT: [3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3]
// CHECK:      sizes = [16] strides = [1] data =
// CHECK-NEXT: [6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6]
// CHECK:      sizes = [16] strides = [1] data =
// CHECK-NEXT: [8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8,  8]
