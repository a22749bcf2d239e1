// An MLP (three dense layers, ReLU) in linalg on tensors, planned by memplan
// and run by mlir-runner. The printed results must equal those of the same
// program lowered without memplan, and @mlp's one arena must not exceed the
// allocations it replaces.
//
// REQUIRES: mlir
// RUN: %mlir_bin/mlir-opt %s %bufferize > %t.buffers.mlir
// RUN: %mlir_bin/mlir-opt %t.buffers.mlir %lower_to_llvm | %mlir_runner | %strip_addresses > %t.expected
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --lower-to-memref > %t.planned.mlir
// RUN: %mlir_bin/mlir-opt %t.planned.mlir --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses > %t.actual
// RUN: diff %t.expected %t.actual
// RUN: filecheck %s --input-file %t.actual --check-prefix=OUT
// RUN: %python %S/Inputs/arena_report.py %t.buffers.mlir %t.planned.mlir | filecheck %s --check-prefix=ARENA
// The same pipeline printed in generic form also lowers and runs.
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --lower-to-memref --print-op-generic | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses | diff %t.expected -
// Bufferized but not converted to loops: memplan plans around linalg ops on
// memrefs (their operands are uses), mlir-opt converts them afterwards.
// RUN: %mlir_bin/mlir-opt %s --one-shot-bufferize=bufferize-function-boundaries --mlir-print-op-generic > %t.linalg.mlir
// RUN: memplan-opt %t.linalg.mlir --allow-unregistered-dialect --import-memref --insert-kills --usmp --lower-to-memref | %mlir_bin/mlir-opt --verify-each --convert-linalg-to-loops %lower_to_llvm | %mlir_runner | %strip_addresses | diff %t.expected -
// pool-mode=global: the pool is one memref.global; same results.
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --lower-to-memref='pool-mode=global' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses | diff %t.expected -
// pool-mode=arg: @mlp and its caller @main take the pool as a leading
// argument (so @main is no longer an entry point mlir-runner can call); the
// module still verifies and lowers to LLVM.
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --lower-to-memref='pool-mode=arg' > %t.arg.mlir
// RUN: filecheck %s --input-file %t.arg.mlir --check-prefix=ARG
// RUN: %mlir_bin/mlir-opt %t.arg.mlir --verify-each %lower_to_llvm > /dev/null
// The planned, unlowered module in generic form is valid MLIR for mlir-opt.
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --print-op-generic | %mlir_bin/mlir-opt --allow-unregistered-dialect --verify-each > /dev/null
// @mlp planned on its own (no caller): its four 1024-byte buffers are never
// more than two live at once, and the plan reaches that lower bound, 2048 B.
// Called from @main (ARENA above) it gets the same arena: the lifetime
// analysis lays @mlp out inline at its call, and @main holds no planned
// buffer across it.
// RUN: %mlir_bin/mlir-opt %t.buffers.mlir --symbol-privatize=exclude=mlp --symbol-dce --mlir-print-op-generic > %t.alone.mlir
// RUN: memplan-opt %t.alone.mlir --import-memref --insert-kills --usmp --lower-to-memref > %t.alone.planned.mlir
// RUN: %python %S/Inputs/arena_report.py %t.alone.mlir %t.alone.planned.mlir | filecheck %s --check-prefix=ALONE

#map = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (0, j)>

// x[i, j] = (((7i + 3j) mod 11) - 5) * scale: small, varied values.
func.func @ramp(%rows: index, %cols: index, %scale: f32) -> tensor<?x?xf32> {
  %empty = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%empty : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c7 = arith.constant 7 : index
    %c3 = arith.constant 3 : index
    %c11 = arith.constant 11 : index
    %c5 = arith.constant 5 : i64
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %j, %c3 : index
    %s = arith.addi %a, %b : index
    %m = arith.remui %s, %c11 : index
    %mi = arith.index_cast %m : index to i64
    %centered = arith.subi %mi, %c5 : i64
    %f = arith.sitofp %centered : i64 to f32
    %v = arith.mulf %f, %scale : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Three layers: 4x32 -> 4x64 -> 4x64 -> 4x16. Each hidden layer is a
// zero-filled accumulator (1024 B) and a bias+ReLU result (1024 B): four
// imported allocations, 4096 B, of which at most two are live at once.
func.func @mlp(%x: tensor<4x32xf32>, %w1: tensor<32x64xf32>, %b1: tensor<1x64xf32>,
               %w2: tensor<64x64xf32>, %b2: tensor<1x64xf32>, %w3: tensor<64x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x64xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<4x32xf32>, tensor<32x64xf32>) outs(%z1 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %e2 = tensor.empty() : tensor<4x64xf32>
  %h1 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%m1, %b1 : tensor<4x64xf32>, tensor<1x64xf32>) outs(%e2 : tensor<4x64xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  %e3 = tensor.empty() : tensor<4x64xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %m2 = linalg.matmul ins(%h1, %w2 : tensor<4x64xf32>, tensor<64x64xf32>) outs(%z3 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %e4 = tensor.empty() : tensor<4x64xf32>
  %h2 = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%m2, %b2 : tensor<4x64xf32>, tensor<1x64xf32>) outs(%e4 : tensor<4x64xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  %e5 = tensor.empty() : tensor<4x16xf32>
  %z5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %out = linalg.matmul ins(%h2, %w3 : tensor<4x64xf32>, tensor<64x16xf32>) outs(%z5 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %out : tensor<4x16xf32>
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %half = arith.constant 0.5 : f32
  %tenth = arith.constant 0.1 : f32
  %x0 = call @ramp(%c4, %c32, %half) : (index, index, f32) -> tensor<?x?xf32>
  %x = tensor.cast %x0 : tensor<?x?xf32> to tensor<4x32xf32>
  %w10 = call @ramp(%c32, %c64, %tenth) : (index, index, f32) -> tensor<?x?xf32>
  %w1 = tensor.cast %w10 : tensor<?x?xf32> to tensor<32x64xf32>
  %b10 = call @ramp(%c1, %c64, %tenth) : (index, index, f32) -> tensor<?x?xf32>
  %b1 = tensor.cast %b10 : tensor<?x?xf32> to tensor<1x64xf32>
  %w20 = call @ramp(%c64, %c64, %tenth) : (index, index, f32) -> tensor<?x?xf32>
  %w2 = tensor.cast %w20 : tensor<?x?xf32> to tensor<64x64xf32>
  %b20 = call @ramp(%c1, %c64, %half) : (index, index, f32) -> tensor<?x?xf32>
  %b2 = tensor.cast %b20 : tensor<?x?xf32> to tensor<1x64xf32>
  %w30 = call @ramp(%c64, %c16, %tenth) : (index, index, f32) -> tensor<?x?xf32>
  %w3 = tensor.cast %w30 : tensor<?x?xf32> to tensor<64x16xf32>
  %y = call @mlp(%x, %w1, %b1, %w2, %b2, %w3) : (tensor<4x32xf32>, tensor<32x64xf32>, tensor<1x64xf32>, tensor<64x64xf32>, tensor<1x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  %u = tensor.cast %y : tensor<4x16xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(tensor<*xf32>)

// OUT: rank = 2 offset = 0 sizes = [4, 16] strides = [16, 1] data =
// OUT-NEXT: [
// ARENA: @mlp: 5 allocations (4352 B) -> 1 arena of 2048 B + 1 kept (256 B); 4 imported (4096 B), 2048 B saved
// ALONE: @mlp: 5 allocations (4352 B) -> 1 arena of 2048 B + 1 kept (256 B); 4 imported (4096 B), 2048 B saved
// ARG: func.func @mlp(%workspace_cpu: memref<{{[0-9]+}}xi8> {memory.pool = "workspace_cpu", llvm.align = 64 : i64}, %arg0: memref<4x32xf32
// ARG: func.func @main(%workspace_cpu: memref<{{[0-9]+}}xi8> {memory.pool = "workspace_cpu", llvm.align = 64 : i64}) {
// ARG: func.call @mlp(%workspace_cpu,
