// A parametric plan (offsets that are functions of the dynamic dim N)
// made by usmp{parametric=true}, lowered by lower-to-memref and run under
// mlir-runner at N = 1, 100 and 256 (the upper bound). @run reads N as its
// argument's dim 0, computes every offset and the pool's size with arith
// at its entry, and in alloc mode allocates only the pool at that N. The
// test prints the pool's bytes at each size by reading the buffer's own dim
// before it is freed (a print spliced in with sed); the results equal the
// unplanned program's (every storage its own memref.alloc) in alloc and
// global mode (global: the static buffer of the upper bound, 2048 bytes).
//
// REQUIRES: mlir
// RUN: memplan-opt %s --insert-kills --lower-to-memref | %mlir_bin/mlir-opt %lower_to_llvm | %mlir_runner | %strip_addresses > %t.expected
// RUN: memplan-opt %s --insert-kills --usmp='parametric=true' --verify-plan > %t.plan.mlir
// RUN: memplan-opt %t.plan.mlir --lower-to-memref > %t.alloc.mlir
// RUN: filecheck %s --input-file %t.alloc.mlir --check-prefix=PLAN
// RUN: sed -e 's/^\( *\)\(memref.dealloc %workspace_cpu : memref<?xi8>\)/\1%ws_zero = arith.constant 0 : index\n\1%ws_dim = memref.dim %workspace_cpu, %ws_zero : memref<?xi8>\n\1%ws_i64 = arith.index_cast %ws_dim : index to i64\n\1func.call @printI64(%ws_i64) : (i64) -> ()\n\1func.call @printNewline() : () -> ()\n\1\2/' %t.alloc.mlir | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses > %t.alloc.out
// RUN: filecheck %s --input-file %t.alloc.out --check-prefix=OUT
// RUN: grep -v '^[0-9]*$' %t.alloc.out | diff %t.expected -
// RUN: memplan-opt %t.plan.mlir --lower-to-memref='pool-mode=global' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm | %mlir_runner | %strip_addresses > %t.global.out
// RUN: diff %t.expected %t.global.out
// RUN: memplan-opt %t.plan.mlir --lower-to-memref='pool-mode=arg' | %mlir_bin/mlir-opt --verify-each %lower_to_llvm > /dev/null
//
// A reserve corrupted below the real size (%sa takes 4*N bytes, the IR says
// 2*N): the cf.assert before %sa stops the run at N = 1 with its message
// (MLIR lowers it to puts and abort: the run must fail, its unbuffered
// output must hold the message).
// RUN: sed -e 's/\([%]sa = .*\)memory.reserve = "4\*N"/\1memory.reserve = "2*N"/' %t.plan.mlir | memplan-opt --lower-to-memref | %mlir_bin/mlir-opt %lower_to_llvm > %t.corrupt.mlir
// RUN: %python -c "import subprocess, sys; r = subprocess.run(['stdbuf', '-o0', *sys.argv[1:]], capture_output=True, text=True); print(r.stdout); sys.exit(r.returncode == 0)" %mlir_runner %t.corrupt.mlir | filecheck %s --check-prefix=CORRUPT
//
// N past its range (257 > 256): the dim check at @run's entry stops the run.
// RUN: sed -e 's/arith.constant 256 : index/arith.constant 257 : index/' %t.plan.mlir | memplan-opt --lower-to-memref | %mlir_bin/mlir-opt %lower_to_llvm > %t.range.mlir
// RUN: %python -c "import subprocess, sys; r = subprocess.run(['stdbuf', '-o0', *sys.argv[1:]], capture_output=True, text=True); print(r.stdout); sys.exit(r.returncode == 0)" %mlir_runner %t.range.mlir | filecheck %s --check-prefix=RANGE

// The plan usmp makes: %so (slot 0) and %sb (slot 1) at 0, %sa (slot 2)
// above %sb, %sc (slot 3) above both. At the upper bound (N = 256,
// 1024-byte storages) the offsets are the `at` ones and the pool is the
// static plan's 2048 bytes; at N the pool is align(4*N, 64) + 4*N.
// PLAN-LABEL: func.func @run(%x: memref<?xf32>)
// PLAN:         %N = memref.dim %x, %{{.*}} : memref<?xf32>
// PLAN:         cf.assert %{{.*}}, "dim N (argument 0, axis 0) is outside its range 1..256"
// PLAN:         %sa_offset = arith.muli
// PLAN:         %sc_offset = arith.muli
// PLAN:         %workspace_cpu_bytes = arith.maxui
// PLAN:         %workspace_cpu = memref.alloc(%workspace_cpu_bytes) {alignment = 64 : i64} : memref<?xi8>
// PLAN:         cf.assert %{{.*}}, "storage %sa exceeds its reserve of 4*N bytes"
// PLAN:         %a = memref.view %workspace_cpu[%sa_offset][%n] : memref<?xi8> to memref<?xf32>

// At each N: [sum(c), c[N-1]] with c[i] = 3i, then the pool's bytes: 68 at
// N = 1, 848 at N = 100, 2048 at N = 256.
// OUT:      [0,  0]
// OUT-NEXT: 68
// OUT:      [14850,  297]
// OUT-NEXT: 848
// OUT:      [97920,  765]
// OUT-NEXT: 2048

// CORRUPT: storage %sa exceeds its reserve of 2*N bytes
// RANGE: dim N (argument 0, axis 0) is outside its range 1..256

func.func private @printMemrefF32(memref<*xf32>)
func.func private @printI64(i64)
func.func private @printNewline()

// out[i] = 2 * x[i]
func.func @scale(%x: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %out[%i] : memref<?xf32>
  }
  func.return
}

// out = x + y
func.func @add(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %p = memref.load %x[%i] : memref<?xf32>
    %q = memref.load %y[%i] : memref<?xf32>
    %s = arith.addf %p, %q : f32
    memref.store %s, %out[%i] : memref<?xf32>
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

// a = 2x, b = a + x, c = b + b, o = stats(c)
func.func @run(%x: memref<?xf32>) attributes {memory.dim_ranges = {N = array<i64: 1, 256>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %c4 = arith.constant 4 : index
  %bytes = arith.muli %n, %c4 : index
  %sa = memory.alloc_storage(%bytes) max 1024 {memory.reserve = "4*N"} : !memory.storage<?>
  %a = memory.alloc_tensor %sa[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @scale ins(%x : memref<?xf32>) outs(%a : memref<?xf32>)
  %sb = memory.alloc_storage(%bytes) max 1024 {memory.reserve = "4*N"} : !memory.storage<?>
  %b = memory.alloc_tensor %sb[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @add ins(%a, %x : memref<?xf32>, memref<?xf32>) outs(%b : memref<?xf32>)
  %sc = memory.alloc_storage(%bytes) max 1024 {memory.reserve = "4*N"} : !memory.storage<?>
  %c = memory.alloc_tensor %sc[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @add ins(%b, %b : memref<?xf32>, memref<?xf32>) outs(%c : memref<?xf32>)
  %so = memory.alloc_storage : !memory.storage<8>
  %o = memory.alloc_tensor %so[0] : !memory.storage<8> -> memref<2xf32>
  memory.invoke @stats ins(%c : memref<?xf32>) outs(%o : memref<2xf32>)
  %u = "memref.cast"(%o) : (memref<2xf32>) -> memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  func.return
}

// x[i] = i / 2 for i < n (an input the program does not plan), then @run.
func.func @drive(%n: index) {
  %x = memref.alloc(%n) : memref<?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %v = arith.mulf %f, %half : f32
    memref.store %v, %x[%i] : memref<?xf32>
  }
  func.call @run(%x) : (memref<?xf32>) -> ()
  memref.dealloc %x : memref<?xf32>
  func.return
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %c256 = arith.constant 256 : index
  func.call @drive(%c1) : (index) -> ()
  func.call @drive(%c100) : (index) -> ()
  func.call @drive(%c256) : (index) -> ()
  func.return
}
