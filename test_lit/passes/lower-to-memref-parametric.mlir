// RUN: memplan-opt %s --lower-to-memref --split-input-file --verify-diagnostics | filecheck %s
// RUN: memplan-opt %s --lower-to-memref='pool-mode=arg' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ARG
// RUN: memplan-opt %s --lower-to-memref='pool-mode=global' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=GLOBAL

// An offset program (usmp{parametric=true}'s form): %a (slot 0, 64*N
// bytes) and %y (slot 1, 16*N) at 0, %b (slot 2) above both. At entry: N
// is read as dim 0 of argument 0 and checked against 1..64, each reserve
// is computed once (16*N serves %b and %y), %b's offset is
// align(max(64*N, 16*N), 64), and in alloc mode the pool is allocated at
// max(64*N, 16*N, offset(b) + 16*N) bytes. Before each dynamic storage a
// cf.assert checks its size operand against its reserve; each view is at
// its storage's run-time offset (plus the tensor's own, here 16).
memory.pool @ws used 5120
func.func private @k(memref<?x16xf32>, memref<?x4xf32>)
func.func @batch(%x: memref<?x8xf32>, %n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 64>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %c64 = arith.constant 64 : index
  %abytes = arith.muli %n, %c64 : index
  %sa = memory.alloc_storage(%abytes) max 4096 at @ws[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %a = memory.alloc_tensor %sa[0](%n) : !memory.storage<?> -> memref<?x16xf32>
  %c16 = arith.constant 16 : index
  %bbytes = arith.muli %n, %c16 : index
  %sb = memory.alloc_storage(%bbytes) max 1024 at @ws[4096] {memory.reserve = "16*N", memory.slot = 2 : i64, memory.above = array<i64: 0, 1>} : !memory.storage<?>
  %b = memory.alloc_tensor %sb[0](%n) : !memory.storage<?> -> memref<?x4xf32>
  memory.invoke @k ins(%a : memref<?x16xf32>) outs(%b : memref<?x4xf32>)
  memory.kill %sa : !memory.storage<?>
  %sy = memory.alloc_storage(%bbytes) max 1024 at @ws[0] {memory.reserve = "16*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
  %y = memory.alloc_tensor %sy[16](%n) : !memory.storage<?> -> memref<?x4xf32>
  "test.op"(%b, %y) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  memory.kill %sb : !memory.storage<?>
  memory.kill %sy : !memory.storage<?>
  func.return
}

// CHECK-LABEL: func.func @batch(%x: memref<?x8xf32>, %n: index)
// CHECK-NEXT:    %0 = arith.constant 0 : index
// CHECK-NEXT:    %N = memref.dim %x, %0 : memref<?x8xf32>
// CHECK-NEXT:    %1 = arith.constant 64 : index
// CHECK-NEXT:    %2 = arith.cmpi ule, %N, %1 : index
// CHECK-NEXT:    %3 = arith.constant 1 : index
// CHECK-NEXT:    %4 = arith.cmpi uge, %N, %3 : index
// CHECK-NEXT:    %5 = arith.andi %4, %2 : i1
// CHECK-NEXT:    cf.assert %5, "dim N (argument 0, axis 0) is outside its range 1..64"
// CHECK-NEXT:    %6 = arith.muli %1, %N : index
// CHECK-NEXT:    %7 = arith.constant 16 : index
// CHECK-NEXT:    %8 = arith.muli %7, %N : index
// CHECK-NEXT:    %9 = arith.maxui %6, %8 : index
// CHECK-NEXT:    %10 = arith.ceildivui %9, %1 : index
// CHECK-NEXT:    %sb_offset = arith.muli %10, %1 : index
// CHECK-NEXT:    %11 = arith.addi %sb_offset, %8 : index
// CHECK-NEXT:    %ws_bytes = arith.maxui %9, %11 : index
// CHECK-NEXT:    %ws = memref.alloc(%ws_bytes) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %c64 = arith.constant 64 : index
// CHECK-NEXT:    %abytes = arith.muli %n, %c64 : index
// CHECK-NEXT:    %12 = arith.cmpi ule, %abytes, %6 : index
// CHECK-NEXT:    cf.assert %12, "storage %sa exceeds its reserve of 64*N bytes"
// CHECK-NEXT:    %a = memref.view %ws[%0][%n] : memref<?xi8> to memref<?x16xf32>
// CHECK-NEXT:    %c16 = arith.constant 16 : index
// CHECK-NEXT:    %bbytes = arith.muli %n, %c16 : index
// CHECK-NEXT:    %13 = arith.cmpi ule, %bbytes, %8 : index
// CHECK-NEXT:    cf.assert %13, "storage %sb exceeds its reserve of 16*N bytes"
// CHECK-NEXT:    %b = memref.view %ws[%sb_offset][%n] : memref<?xi8> to memref<?x4xf32>
// CHECK-NEXT:    func.call @k(%a, %b) : (memref<?x16xf32>, memref<?x4xf32>) -> ()
// CHECK-NEXT:    %14 = arith.cmpi ule, %bbytes, %8 : index
// CHECK-NEXT:    cf.assert %14, "storage %sy exceeds its reserve of 16*N bytes"
// CHECK-NEXT:    %15 = arith.constant 16 : index
// CHECK-NEXT:    %16 = arith.addi %0, %15 : index
// CHECK-NEXT:    %y = memref.view %ws[%16][%n] : memref<?xi8> to memref<?x4xf32>
// CHECK-NEXT:    "test.op"(%b, %y) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %ws : memref<?xi8>
// CHECK-NEXT:    func.return

// arg and global mode: the buffer is the static `used` (the pool at the
// upper bound); the offsets are computed the same way and the pool's size
// is not (nothing takes it). The dim is read from the original argument 0,
// behind the pool's argument.
// ARG-LABEL: func.func @batch(%ws: memref<5120xi8> {memory.pool = "ws", llvm.align = 64 : i64}, %x: memref<?x8xf32>, %n: index)
// ARG-NEXT:    %0 = arith.constant 0 : index
// ARG-NEXT:    %N = memref.dim %x, %0 : memref<?x8xf32>
// ARG:         %sb_offset = arith.muli %{{.*}}, %{{.*}} : index
// ARG-NOT:     arith.maxui
// ARG:         %b = memref.view %ws[%sb_offset][%n] : memref<5120xi8> to memref<?x4xf32>

// GLOBAL-LABEL: func.func @batch(
// GLOBAL:         %sb_offset = arith.muli
// GLOBAL-NEXT:    %ws = memref.get_global @ws : memref<5120xi8>
// GLOBAL:         %b = memref.view %ws[%sb_offset][%n] : memref<5120xi8> to memref<?x4xf32>

// -----

// Every operator of a size expression: + (addi), * (muli), max (maxui),
// ceildiv (ceildivui), floordiv (divui), align (ceildivui then muli). A dim
// whose range starts at 0 is checked against its upper end only; dims are
// read in the order of memory.dim_ranges, from any argument and axis. A
// static storage in the program (%s, 8 bytes) takes its size; a storage
// with alignment 1 (%t) is not rounded.
memory.pool @ws align 1 used 4096
func.func @exprs(%m: memref<4x?xf32>, %v: memref<?xi8>, %n: index) attributes {memory.dim_ranges = {M = array<i64: 0, 16>, K = array<i64: 2, 8>}, memory.dim_symbols = {M = array<i64: 0, 1>, K = array<i64: 1, 0>}} {
  %d = memory.alloc_storage(%n) max 1024 at @ws[0] {memory.reserve = "max(ceildiv(M, 3), floordiv(K*M, 2)) + align(K, 16) + 4", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %s = memory.alloc_storage at @ws[1024] {memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<8>
  %t = memory.alloc_storage(%n) max 100 align 1 at @ws[1032] {memory.reserve = "K + 4", memory.slot = 2 : i64, memory.above = array<i64: 1>} : !memory.storage<?>
  %dt = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?xi8>
  %st = memory.alloc_tensor %s[0] : !memory.storage<8> -> memref<8xi8>
  %tt = memory.alloc_tensor %t[%n] : !memory.storage<?> -> memref<4xi8>
  "test.op"(%dt, %st, %tt) : (memref<?xi8>, memref<8xi8>, memref<4xi8>) -> ()
  func.return
}

// CHECK-LABEL: func.func @exprs(
// CHECK-NEXT:    %0 = arith.constant 1 : index
// CHECK-NEXT:    %M = memref.dim %m, %0 : memref<4x?xf32>
// CHECK-NEXT:    %1 = arith.constant 16 : index
// CHECK-NEXT:    %2 = arith.cmpi ule, %M, %1 : index
// CHECK-NEXT:    cf.assert %2, "dim M (argument 0, axis 1) is outside its range 0..16"
// CHECK-NEXT:    %3 = arith.constant 0 : index
// CHECK-NEXT:    %K = memref.dim %v, %3 : memref<?xi8>
// CHECK-NEXT:    %4 = arith.constant 8 : index
// CHECK-NEXT:    %5 = arith.cmpi ule, %K, %4 : index
// CHECK-NEXT:    %6 = arith.constant 2 : index
// CHECK-NEXT:    %7 = arith.cmpi uge, %K, %6 : index
// CHECK-NEXT:    %8 = arith.andi %7, %5 : i1
// CHECK-NEXT:    cf.assert %8, "dim K (argument 1, axis 0) is outside its range 2..8"
// CHECK-NEXT:    %9 = arith.ceildivui %K, %1 : index
// CHECK-NEXT:    %10 = arith.muli %9, %1 : index
// CHECK-NEXT:    %11 = arith.constant 3 : index
// CHECK-NEXT:    %12 = arith.ceildivui %M, %11 : index
// CHECK-NEXT:    %13 = arith.muli %K, %M : index
// CHECK-NEXT:    %14 = arith.divui %13, %6 : index
// CHECK-NEXT:    %15 = arith.maxui %12, %14 : index
// CHECK-NEXT:    %16 = arith.constant 4 : index
// CHECK-NEXT:    %17 = arith.addi %10, %15 : index
// CHECK-NEXT:    %18 = arith.addi %17, %16 : index
// CHECK-NEXT:    %19 = arith.constant 64 : index
// CHECK-NEXT:    %20 = arith.ceildivui %18, %19 : index
// CHECK-NEXT:    %s_offset = arith.muli %20, %19 : index
// CHECK-NEXT:    %21 = arith.addi %K, %16 : index
// CHECK-NEXT:    %t_offset = arith.addi %s_offset, %4 : index
// CHECK-NEXT:    %22 = arith.addi %t_offset, %21 : index
// CHECK-NEXT:    %23 = arith.maxui %18, %t_offset : index
// CHECK-NEXT:    %ws_bytes = arith.maxui %23, %22 : index
// CHECK-NEXT:    %ws = memref.alloc(%ws_bytes) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %24 = arith.cmpi ule, %n, %18 : index
// CHECK-NEXT:    cf.assert %24, "storage %d exceeds its reserve of max(ceildiv(M, 3), floordiv(K*M, 2)) + align(K, 16) + 4 bytes"
// CHECK-NEXT:    %25 = arith.cmpi ule, %n, %21 : index
// CHECK-NEXT:    cf.assert %25, "storage %t exceeds its reserve of K + 4 bytes"
// CHECK-NEXT:    %dt = memref.view %ws[%3][%n] : memref<?xi8> to memref<?xi8>
// CHECK-NEXT:    %st = memref.view %ws[%s_offset][] : memref<?xi8> to memref<8xi8>
// CHECK-NEXT:    %26 = arith.addi %t_offset, %n : index
// CHECK-NEXT:    %tt = memref.view %ws[%26][] : memref<?xi8> to memref<4xi8>

// -----

// A pool with a program whose storages have no reserve: every value is a
// constant (operations on constants are folded), no dim is read.
memory.pool @ws used 128
func.func @constant_program() {
  %a = memory.alloc_storage at @ws[0] {memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<64>
  %b = memory.alloc_storage at @ws[64] {memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<64>
  %at = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %bt = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  "test.op"(%at, %bt) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @constant_program() {
// CHECK-NEXT:    %0 = arith.constant 64 : index
// CHECK-NEXT:    %1 = arith.constant 0 : index
// CHECK-NEXT:    %2 = arith.constant 128 : index
// CHECK-NEXT:    %ws = memref.alloc(%2) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %at = memref.view %ws[%1][] : memref<?xi8> to memref<16xf32>
// CHECK-NEXT:    %bt = memref.view %ws[%0][] : memref<?xi8> to memref<16xf32>

// -----

// The dim has a range but no place to be read from.
memory.pool @ws used 64
func.func @no_symbol(%n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}} {
  %d = memory.alloc_storage(%n) max 64 at @ws[0] {memory.reserve = "16*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  func.return
}
// CHECK: dim 'N' of @no_symbol has no memory.dim_symbols entry: lower-to-memref cannot read it at run time

// -----

// The dim's place is not an axis of a memref argument.
memory.pool @ws used 64
func.func @not_memref(%n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %d = memory.alloc_storage(%n) max 64 at @ws[0] {memory.reserve = "16*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  func.return
}
// CHECK: dim 'N' of @not_memref is read from argument 0, axis 0, which is not an axis of a memref argument

// -----

// A storage pinned in a pool that has a program, but outside it.
memory.pool @ws used 128
func.func @outside(%x: memref<?xf32>, %n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %d = memory.alloc_storage(%n) max 64 at @ws[0] {memory.reserve = "16*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %s = memory.alloc_storage at @ws[64] : !memory.storage<64>
  func.return
}
// CHECK: storage %s is pinned in pool @ws, which has an offset program in @outside, but has no memory.slot

// -----

// An ill-formed program (slot 1 without slot 0).
memory.pool @ws used 64
func.func @gap(%x: memref<?xf32>, %n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %d = memory.alloc_storage(%n) max 64 at @ws[0] {memory.reserve = "16*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
  func.return
}
// CHECK: the slots of pool @ws in @gap are not 0..0: slot 0 is missing

// -----

// The `at` offsets fit the pool's 128 bytes, but the program does not (it
// puts %b above %a, at 64 when N = 4): alloc mode allocates what the
// program asks for; arg and global mode, which keep the static buffer,
// refuse it.
memory.pool @ws used 128
func.func @program_overflow(%x: memref<?xf32>, %n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %a = memory.alloc_storage(%n) max 64 at @ws[0] {memory.reserve = "16*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %b = memory.alloc_storage(%n) max 64 at @ws[0] {memory.reserve = "16*N", memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<?>
  %c = memory.alloc_storage at @ws[64] {memory.slot = 2 : i64, memory.above = array<i64: 1>} : !memory.storage<64>
  func.return
}
// CHECK-LABEL: func.func @program_overflow(
// CHECK:         %ws = memref.alloc(%ws_bytes) {alignment = 64 : i64} : memref<?xi8>
// ARG: the offset program of pool @ws in @program_overflow takes 192 bytes at the upper bounds, more than the pool's 128
// GLOBAL: the offset program of pool @ws in @program_overflow takes 192 bytes at the upper bounds, more than the pool's 128
