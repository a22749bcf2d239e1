// A dynamic-size storage with a `max` bound, in the memory dialect: usmp
// pins it at a static offset of one arena reserving its 4096 bytes, and the
// program runs under mlir-runner for lengths 1, 512 and 1024 (the bound)
// with the results of the unplanned program (its own memref.alloc per call).
// Past the bound, the cf.assert lower-to-memref puts before the storage
// stops the run (MLIR lowers it to an abort, so the last RUN line only
// asks for a failing exit).
//
// REQUIRES: mlir
// RUN: memplan-opt %s --insert-kills --lower-to-memref | %mlir_bin/mlir-opt %lower_to_llvm | %mlir_runner | %strip_addresses > %t.expected
// RUN: memplan-opt %s --insert-kills --usmp --lower-to-memref > %t.planned.mlir
// RUN: filecheck %s --input-file %t.planned.mlir --check-prefix=PLAN
// RUN: %mlir_bin/mlir-opt %t.planned.mlir --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses > %t.actual
// RUN: diff %t.expected %t.actual
// RUN: filecheck %s --input-file %t.actual --check-prefix=OUT
// RUN: sed -e 's/arith.constant 1024 : index/arith.constant 1025 : index/' %t.planned.mlir | %mlir_bin/mlir-opt %lower_to_llvm > %t.over.mlir
// RUN: %python -c "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:], capture_output=True).returncode == 0)" %mlir_runner %t.over.mlir

// One arena: the bound (4096) plus the 8-byte result above it.
// PLAN:       %workspace_cpu = memref.alloc() {alignment = 64 : i64} : memref<4104xi8>
// PLAN:       cf.assert %{{.*}}, "storage %d exceeds its bound of 4096 bytes"
// PLAN:       %t = memref.view %workspace_cpu[%{{.*}}][%n] : memref<4104xi8> to memref<?xf32>

// sum(i / 2 for i < n) and the last element, for n = 1, 512, 1024.
// OUT:      [0,  0]
// OUT:      [65408,  255.5]
// OUT:      [261888,  511.5]

func.func private @printMemrefF32(memref<*xf32>)

// t[i] = i * 0.5 for i < n
func.func @ramp(%t: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %t, %c0 : memref<?xf32>
  %half = arith.constant 0.5 : f32
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %v = arith.mulf %f, %half : f32
    memref.store %v, %t[%i] : memref<?xf32>
  }
  func.return
}

// o = [sum(t), t[n-1]]
func.func @stats(%t: memref<?xf32>, %o: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %t, %c0 : memref<?xf32>
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %t[%i] : memref<?xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  memref.store %s, %o[%c0] : memref<2xf32>
  %last = arith.subi %n, %c1 : index
  %l = memref.load %t[%last] : memref<?xf32>
  memref.store %l, %o[%c1] : memref<2xf32>
  func.return
}

func.func @run(%n: index) {
  %c4 = arith.constant 4 : index
  %bytes = arith.muli %n, %c4 : index
  %d = memory.alloc_storage(%bytes) max 4096 : !memory.storage<?>
  %t = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @ramp outs(%t : memref<?xf32>)
  %os = memory.alloc_storage : !memory.storage<8>
  %o = memory.alloc_tensor %os[0] : !memory.storage<8> -> memref<2xf32>
  memory.invoke @stats ins(%t : memref<?xf32>) outs(%o : memref<2xf32>)
  memory.kill %d : !memory.storage<?>
  %u = "memref.cast"(%o) : (memref<2xf32>) -> memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memory.kill %os : !memory.storage<8>
  func.return
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  func.call @run(%c1) : (index) -> ()
  func.call @run(%c512) : (index) -> ()
  func.call @run(%c1024) : (index) -> ()
  func.return
}
