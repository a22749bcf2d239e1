// A small conv net (two 3x3 convolutions with ReLU, 2x2 max pooling, a dense
// layer) in linalg on tensors, planned by memplan and run by mlir-runner. The
// printed results must equal those of the same program lowered without
// memplan, and @convnet's one arena must not exceed the allocations it
// replaces.
//
// REQUIRES: mlir
// RUN: %mlir_bin/mlir-opt %s %bufferize > %t.buffers.mlir
// RUN: %mlir_bin/mlir-opt %t.buffers.mlir %lower_to_llvm | %mlir_runner | %strip_addresses > %t.expected
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --lower-to-memref > %t.planned.mlir
// RUN: %mlir_bin/mlir-opt %t.planned.mlir --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses > %t.actual
// RUN: diff %t.expected %t.actual
// RUN: filecheck %s --input-file %t.actual --check-prefix=OUT
// RUN: %python %S/Inputs/arena_report.py %t.buffers.mlir %t.planned.mlir | filecheck %s --check-prefix=ARENA
// The planned, unlowered module in generic form is valid MLIR for mlir-opt.
// RUN: memplan-opt %t.buffers.mlir --import-memref --insert-kills --usmp --print-op-generic | %mlir_bin/mlir-opt --allow-unregistered-dialect --verify-each > /dev/null
// @convnet planned on its own (no caller): the peak is the first
// convolution's output and its ReLU, 2 x 6272 B, and the plan reaches that
// lower bound, 12544 B. Called from @main (ARENA) the arena is the same: the
// lifetime analysis lays @convnet out inline at its call.
// RUN: %mlir_bin/mlir-opt %t.buffers.mlir --symbol-privatize=exclude=convnet --symbol-dce --mlir-print-op-generic > %t.alone.mlir
// RUN: memplan-opt %t.alone.mlir --import-memref --insert-kills --usmp --lower-to-memref > %t.alone.planned.mlir
// RUN: %python %S/Inputs/arena_report.py %t.alone.mlir %t.alone.planned.mlir | filecheck %s --check-prefix=ALONE

#map2 = affine_map<(i, j) -> (i, j)>
#map4 = affine_map<(n, c, h, w) -> (n, c, h, w)>

// t[i, j, k, l] = (((7i + 5j + 3k + l) mod 11) - 5) * scale.
func.func @ramp4(%d0: index, %d1: index, %d2: index, %d3: index, %scale: f32) -> tensor<?x?x?x?xf32> {
  %empty = tensor.empty(%d0, %d1, %d2, %d3) : tensor<?x?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#map4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%empty : tensor<?x?x?x?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %l = linalg.index 3 : index
    %c7 = arith.constant 7 : index
    %c5 = arith.constant 5 : index
    %c3 = arith.constant 3 : index
    %c11 = arith.constant 11 : index
    %c5i = arith.constant 5 : i64
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %j, %c5 : index
    %c = arith.muli %k, %c3 : index
    %ab = arith.addi %a, %b : index
    %abc = arith.addi %ab, %c : index
    %s = arith.addi %abc, %l : index
    %m = arith.remui %s, %c11 : index
    %mi = arith.index_cast %m : index to i64
    %centered = arith.subi %mi, %c5i : i64
    %f = arith.sitofp %centered : i64 to f32
    %v = arith.mulf %f, %scale : f32
    linalg.yield %v : f32
  } -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// 1x3x16x16 -> conv 8x3x3x3 -> 1x8x14x14 (6272 B) -> ReLU (6272 B) -> conv
// 8x8x3x3 -> 1x8x12x12 (4608 B) -> ReLU (4608 B) -> 2x2/2 max pool (window
// 16 B, result 1152 B) -> flatten (a view) -> dense 288x10 -> 1x10 (returned).
func.func @convnet(%input: tensor<1x3x16x16xf32>, %k1: tensor<8x3x3x3xf32>, %k2: tensor<8x8x3x3xf32>, %w: tensor<288x10xf32>) -> tensor<1x10xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.0e38 : f32
  %e1 = tensor.empty() : tensor<1x8x14x14xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%input, %k1 : tensor<1x3x16x16xf32>, tensor<8x3x3x3xf32>) outs(%z1 : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %e2 = tensor.empty() : tensor<1x8x14x14xf32>
  %r1 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1 : tensor<1x8x14x14xf32>) outs(%e2 : tensor<1x8x14x14xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x14x14xf32>
  %e3 = tensor.empty() : tensor<1x8x12x12xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x8x12x12xf32>) -> tensor<1x8x12x12xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%r1, %k2 : tensor<1x8x14x14xf32>, tensor<8x8x3x3xf32>) outs(%z3 : tensor<1x8x12x12xf32>) -> tensor<1x8x12x12xf32>
  %e4 = tensor.empty() : tensor<1x8x12x12xf32>
  %r2 = linalg.generic {indexing_maps = [#map4, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c2 : tensor<1x8x12x12xf32>) outs(%e4 : tensor<1x8x12x12xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x12x12xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %e5 = tensor.empty() : tensor<1x8x6x6xf32>
  %z5 = linalg.fill ins(%lowest : f32) outs(%e5 : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%r2, %window : tensor<1x8x12x12xf32>, tensor<2x2xf32>) outs(%z5 : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %flat = tensor.collapse_shape %pool [[0], [1, 2, 3]] : tensor<1x8x6x6xf32> into tensor<1x288xf32>
  %e6 = tensor.empty() : tensor<1x10xf32>
  %z6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<1x10xf32>) -> tensor<1x10xf32>
  %out = linalg.matmul ins(%flat, %w : tensor<1x288xf32>, tensor<288x10xf32>) outs(%z6 : tensor<1x10xf32>) -> tensor<1x10xf32>
  return %out : tensor<1x10xf32>
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %c16 = arith.constant 16 : index
  %c288 = arith.constant 288 : index
  %half = arith.constant 0.5 : f32
  %tenth = arith.constant 0.1 : f32
  %hundredth = arith.constant 0.01 : f32
  %x0 = call @ramp4(%c1, %c3, %c16, %c16, %half) : (index, index, index, index, f32) -> tensor<?x?x?x?xf32>
  %x = tensor.cast %x0 : tensor<?x?x?x?xf32> to tensor<1x3x16x16xf32>
  %k10 = call @ramp4(%c8, %c3, %c3, %c3, %tenth) : (index, index, index, index, f32) -> tensor<?x?x?x?xf32>
  %k1 = tensor.cast %k10 : tensor<?x?x?x?xf32> to tensor<8x3x3x3xf32>
  %k20 = call @ramp4(%c8, %c8, %c3, %c3, %tenth) : (index, index, index, index, f32) -> tensor<?x?x?x?xf32>
  %k2 = tensor.cast %k20 : tensor<?x?x?x?xf32> to tensor<8x8x3x3xf32>
  %w0 = call @ramp4(%c1, %c1, %c288, %c10, %hundredth) : (index, index, index, index, f32) -> tensor<?x?x?x?xf32>
  %w = tensor.collapse_shape %w0 [[0, 1, 2], [3]] : tensor<?x?x?x?xf32> into tensor<?x?xf32>
  %ws = tensor.cast %w : tensor<?x?xf32> to tensor<288x10xf32>
  %y = call @convnet(%x, %k1, %k2, %ws) : (tensor<1x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8x8x3x3xf32>, tensor<288x10xf32>) -> tensor<1x10xf32>
  %u = tensor.cast %y : tensor<1x10xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(tensor<*xf32>)

// OUT: rank = 2 offset = 0 sizes = [1, 10] strides = [10, 1] data =
// OUT-NEXT: [
// ARENA: @convnet: 6 allocations (22952 B) -> 1 arena of 12544 B + 1 kept (40 B); 5 imported (22912 B), 10368 B saved
// ALONE: @convnet: 6 allocations (22952 B) -> 1 arena of 12544 B + 1 kept (40 B); 5 imported (22912 B), 10368 B saved
