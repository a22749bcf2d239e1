// memplan's own front door to upstream MLIR: the example programs (kernel
// calls on tensors) go through manifest-alloc, insert-kills, usmp and
// lower-to-memref in each pool mode; mlir-opt 22 verifies the result and
// lowers it to the LLVM dialect (the kernels stay external declarations).
//
// REQUIRES: mlir
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --usmp --lower-to-memref | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | filecheck %s --check-prefix=LLVM
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --usmp --lower-to-memref='pool-mode=arg' --print-op-generic | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | filecheck %s --check-prefix=LLVM
// RUN: memplan-opt %repo/examples/mlp.mlir --manifest-alloc --insert-kills --usmp --lower-to-memref='pool-mode=global' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | filecheck %s --check-prefix=LLVM
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --usmp --lower-to-memref | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | filecheck %s --check-prefix=LLVM
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --usmp --lower-to-memref='pool-mode=arg' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | filecheck %s --check-prefix=LLVM
// RUN: memplan-opt %repo/examples/convnet.mlir --manifest-alloc --insert-kills --usmp --lower-to-memref='pool-mode=global' --print-op-generic | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | filecheck %s --check-prefix=LLVM

// LLVM: llvm.func @main(
// LLVM-NOT: memref.
