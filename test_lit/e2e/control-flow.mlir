// A program with control flow in linalg on tensors: an scf.if whose branches
// allocate (and yield their results out), an scf.for whose body allocates a
// temporary each iteration, and a tensor whose size is only known at run
// time. Planned by memplan and run by mlir-runner for both branches; the
// printed results must equal those of the same program lowered without
// memplan, and @branchy's one arena must not exceed the static allocations
// it replaces (the dynamic one gets its own allocation).
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
// @branchy planned on its own (no caller): at most three 256-byte buffers
// are live at once (the square and the two of the then branch, or the
// square, the branch result and the loop's temporary; the two branches share
// bytes), and the 4-byte sum fits in a dead one's place: 768 B. Called twice
// from @main (ARENA) the arena is the same: @branchy is laid out inline at
// its first call, and @main holds no planned buffer across either call.
// RUN: %mlir_bin/mlir-opt %t.buffers.mlir --symbol-privatize=exclude=branchy --symbol-dce --mlir-print-op-generic > %t.alone.mlir
// RUN: memplan-opt %t.alone.mlir --import-memref --insert-kills --usmp --lower-to-memref > %t.alone.planned.mlir
// RUN: %python %S/Inputs/arena_report.py %t.alone.mlir %t.alone.planned.mlir | filecheck %s --check-prefix=ALONE

#id = affine_map<(i) -> (i)>
#all = affine_map<(i) -> ()>

// x[i] = (((7i) mod 11) - 5) * 0.25
func.func @ramp(%n: index) -> tensor<?xf32> {
  %empty = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%empty : tensor<?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %c7 = arith.constant 7 : index
    %c11 = arith.constant 11 : index
    %c5 = arith.constant 5 : i64
    %scale = arith.constant 0.25 : f32
    %a = arith.muli %i, %c7 : index
    %m = arith.remui %a, %c11 : index
    %mi = arith.index_cast %m : index to i64
    %centered = arith.subi %mi, %c5 : i64
    %f = arith.sitofp %centered : i64 to f32
    %v = arith.mulf %f, %scale : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// Static allocations (64xf32 = 256 B each): the square, two in the then
// branch, one in the else branch, one per loop iteration, the result
// (returned, left alone); plus the 4-byte sum. The prefix of length %len is
// the dynamic allocation.
func.func @branchy(%x: tensor<64xf32>, %flag: i1, %n: index, %len: index) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %sq = linalg.mul ins(%x, %x : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = scf.if %flag -> tensor<64xf32> {
    %e1 = tensor.empty() : tensor<64xf32>
    %a = linalg.add ins(%sq, %x : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
    %e2 = tensor.empty() : tensor<64xf32>
    %b = linalg.mul ins(%a, %x : tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %b : tensor<64xf32>
  } else {
    %e1 = tensor.empty() : tensor<64xf32>
    %a = linalg.sub ins(%sq, %x : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %a : tensor<64xf32>
  }
  %loop = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %r) -> tensor<64xf32> {
    %e3 = tensor.empty() : tensor<64xf32>
    %t = linalg.add ins(%acc, %x : tensor<64xf32>, tensor<64xf32>) outs(%e3 : tensor<64xf32>) -> tensor<64xf32>
    %u = linalg.mul ins(%t, %x : tensor<64xf32>, tensor<64xf32>) outs(%acc : tensor<64xf32>) -> tensor<64xf32>
    scf.yield %u : tensor<64xf32>
  }
  %prefix = tensor.extract_slice %sq[0] [%len] [1] : tensor<64xf32> to tensor<?xf32>
  %ed = tensor.empty(%len) : tensor<?xf32>
  %scaled = linalg.add ins(%prefix, %prefix : tensor<?xf32>, tensor<?xf32>) outs(%ed : tensor<?xf32>) -> tensor<?xf32>
  %es = tensor.empty() : tensor<f32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%scaled : tensor<?xf32>) outs(%zs : tensor<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %e5 = tensor.empty() : tensor<64xf32>
  %out = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel"]} ins(%loop, %sum : tensor<64xf32>, tensor<f32>) outs(%e5 : tensor<64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %w = arith.addf %v, %s : f32
    linalg.yield %w : f32
  } -> tensor<64xf32>
  return %out : tensor<64xf32>
}

func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c9 = arith.constant 9 : index
  %c64 = arith.constant 64 : index
  %true = arith.constant true
  %false = arith.constant false
  %x0 = call @ramp(%c64) : (index) -> tensor<?xf32>
  %x = tensor.cast %x0 : tensor<?xf32> to tensor<64xf32>
  %then = call @branchy(%x, %true, %c3, %c5) : (tensor<64xf32>, i1, index, index) -> tensor<64xf32>
  %u1 = tensor.cast %then : tensor<64xf32> to tensor<*xf32>
  call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  %else = call @branchy(%x, %false, %c2, %c9) : (tensor<64xf32>, i1, index, index) -> tensor<64xf32>
  %u2 = tensor.cast %else : tensor<64xf32> to tensor<*xf32>
  call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(tensor<*xf32>)

// OUT: rank = 1 offset = 0 sizes = [64] strides = [1] data =
// OUT-NEXT: [
// OUT: rank = 1 offset = 0 sizes = [64] strides = [1] data =
// OUT-NEXT: [
// ARENA: @branchy: 7 allocations (1540 B) -> 1 arena of 768 B + 1 kept (256 B); 6 imported (1284 B), 516 B saved
// ALONE: @branchy: 7 allocations (1540 B) -> 1 arena of 768 B + 1 kept (256 B); 6 imported (1284 B), 516 B saved
