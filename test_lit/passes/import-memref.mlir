// RUN: memplan-opt %s --import-memref --allow-unregistered-dialect --split-input-file | filecheck %s

// A static allocation becomes a storage of its byte size (4x16xf32 = 256 B)
// with the alloc's alignment (64 is the storage default and is not printed),
// and a tensor at offset 0 that every former use now reads and writes. No
// dealloc: no kill (insert-kills adds it later).
func.func @static(%i: index, %v: f32) -> f32 {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
  memref.store %v, %a[%i, %i] : memref<4x16xf32>
  %r = memref.load %a[%i, %i] : memref<4x16xf32>
  func.return %r : f32
}

// CHECK-LABEL: func.func @static(%i: index, %v: f32) -> f32 {
// CHECK-NEXT:    %a_storage = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0] : !memory.storage<256> -> memref<4x16xf32>
// CHECK-NEXT:    memref.store %v, %a[%i, %i] : memref<4x16xf32>
// CHECK-NEXT:    %r = memref.load %a[%i, %i] : memref<4x16xf32>
// CHECK-NEXT:    func.return %r : f32
// CHECK-NEXT:  }

// -----

// The alloc's alignment is kept (128); without one the dialect's default
// max(64, element bytes) applies: 64 for f64, 128 for the 128-byte i1024
// elements. i1 takes one byte per element (10 B).
func.func @alignments() {
  %a = memref.alloc() {alignment = 128 : i64} : memref<8xf32>
  %b = memref.alloc() : memref<2xf64>
  %c = memref.alloc() : memref<2xi1024>
  %d = memref.alloc() : memref<10xi1>
  "test.op"(%a, %b, %c, %d) : (memref<8xf32>, memref<2xf64>, memref<2xi1024>, memref<10xi1>) -> ()
  func.return
}

// CHECK-LABEL: func.func @alignments() {
// CHECK-NEXT:    %a_storage = memory.alloc_storage align 128 : !memory.storage<32>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0] : !memory.storage<32> -> memref<8xf32>
// CHECK-NEXT:    %b_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %b = memory.alloc_tensor %b_storage[0] : !memory.storage<16> -> memref<2xf64>
// CHECK-NEXT:    %c_storage = memory.alloc_storage align 128 : !memory.storage<256>
// CHECK-NEXT:    %c = memory.alloc_tensor %c_storage[0] : !memory.storage<256> -> memref<2xi1024>
// CHECK-NEXT:    %d_storage = memory.alloc_storage : !memory.storage<10>
// CHECK-NEXT:    %d = memory.alloc_tensor %d_storage[0] : !memory.storage<10> -> memref<10xi1>

// -----

// Dynamic sizes: bytes = (element bytes * static dims) * each dynamic dim,
// here 4 * 16 = 64 times %n, then times %m. A one-byte element with no static
// dim needs no constant: the size is the dim itself.
func.func @dynamic(%n: index, %m: index) {
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x16xf32>
  %b = memref.alloc(%n, %m) : memref<?x4x?xf32>
  %c = memref.alloc(%n) : memref<?xi8>
  "test.op"(%a, %b, %c) : (memref<?x16xf32>, memref<?x4x?xf32>, memref<?xi8>) -> ()
  func.return
}

// CHECK-LABEL: func.func @dynamic(%n: index, %m: index) {
// CHECK-NEXT:    %0 = arith.constant 64 : index
// CHECK-NEXT:    %1 = arith.muli %0, %n : index
// CHECK-NEXT:    %a_storage = memory.alloc_storage(%1) : !memory.storage<?>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0](%n) : !memory.storage<?> -> memref<?x16xf32>
// CHECK-NEXT:    %2 = arith.constant 16 : index
// CHECK-NEXT:    %3 = arith.muli %2, %n : index
// CHECK-NEXT:    %4 = arith.muli %3, %m : index
// CHECK-NEXT:    %b_storage = memory.alloc_storage(%4) : !memory.storage<?>
// CHECK-NEXT:    %b = memory.alloc_tensor %b_storage[0](%n, %m) : !memory.storage<?> -> memref<?x4x?xf32>
// CHECK-NEXT:    %c_storage = memory.alloc_storage(%n) : !memory.storage<?>
// CHECK-NEXT:    %c = memory.alloc_tensor %c_storage[0](%n) : !memory.storage<?> -> memref<?xi8>

// -----

// memref.dealloc becomes a kill of the storage, also when it frees a view
// of the allocation (here a memref.cast). Deallocs in both branches of an
// scf.if are two kills on different paths.
func.func @deallocs(%c: i1) {
  %a = memref.alloc() : memref<16xf32>
  "test.op"(%a) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %cast = "memref.cast"(%b) : (memref<16xf32>) -> memref<?xf32>
  memref.dealloc %cast : memref<?xf32>
  %d = memref.alloc() : memref<16xf32>
  scf.if %c {
    memref.dealloc %d : memref<16xf32>
  } else {
    "test.op"(%d) : (memref<16xf32>) -> ()
    memref.dealloc %d : memref<16xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @deallocs(%c: i1) {
// CHECK-NEXT:    %a_storage = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    "test.op"(%a) : (memref<16xf32>) -> ()
// CHECK-NEXT:    memory.kill %a_storage : !memory.storage<64>
// CHECK-NEXT:    %b_storage = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:    %b = memory.alloc_tensor %b_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    %cast = "memref.cast"(%b) : (memref<16xf32>) -> memref<?xf32>
// CHECK-NEXT:    memory.kill %b_storage : !memory.storage<64>
// CHECK-NEXT:    %d_storage = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:    %d = memory.alloc_tensor %d_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    scf.if %c {
// CHECK-NEXT:      memory.kill %d_storage : !memory.storage<64>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      "test.op"(%d) : (memref<16xf32>) -> ()
// CHECK-NEXT:      memory.kill %d_storage : !memory.storage<64>
// CHECK-NEXT:    }

// -----

// Allocations that leave the function are left alone: returned directly,
// through a view, through an scf.if result, through a call that may return
// its argument, through an op memplan does not know, or stored as a value.
// The one that only flows into a call with no memref result is imported.
func.func private @id(memref<8xf32>) -> memref<8xf32>
func.func private @consume(memref<8xf32>)
func.func @escapes(%c: i1, %box: memref<memref<8xf32>>) -> (memref<8xf32>, memref<?xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %bv = "memref.cast"(%b) : (memref<8xf32>) -> memref<?xf32>
  %d = memref.alloc() : memref<8xf32>
  %e = memref.alloc() : memref<8xf32>
  %r = scf.if %c -> (memref<8xf32>) {
    scf.yield %d : memref<8xf32>
  } else {
    scf.yield %e : memref<8xf32>
  }
  %f = memref.alloc() : memref<8xf32>
  %fr = func.call @id(%f) : (memref<8xf32>) -> memref<8xf32>
  %g = memref.alloc() : memref<8xf32>
  %gr = "unknown.wrap"(%g) : (memref<8xf32>) -> memref<8xf32>
  %h = memref.alloc() : memref<8xf32>
  memref.store %h, %box[] : memref<memref<8xf32>>
  %k = memref.alloc() : memref<8xf32>
  func.call @consume(%k) : (memref<8xf32>) -> ()
  func.return %a, %bv, %r, %fr, %gr : memref<8xf32>, memref<?xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>
}

// CHECK-LABEL: func.func @escapes(
// CHECK-NEXT:    %a = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %b = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %bv = "memref.cast"(%b) : (memref<8xf32>) -> memref<?xf32>
// CHECK-NEXT:    %d = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %e = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %r = scf.if %c -> (memref<8xf32>) {
// CHECK-NEXT:      scf.yield %d : memref<8xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %e : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %f = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %fr = func.call @id(%f) : (memref<8xf32>) -> memref<8xf32>
// CHECK-NEXT:    %g = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %gr = "unknown.wrap"(%g) : (memref<8xf32>) -> memref<8xf32>
// CHECK-NEXT:    %h = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    memref.store %h, %box[] : memref<memref<8xf32>>
// CHECK-NEXT:    %k_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:    %k = memory.alloc_tensor %k_storage[0] : !memory.storage<32> -> memref<8xf32>
// CHECK-NEXT:    func.call @consume(%k) : (memref<8xf32>) -> ()

// -----

// scf.if results do not stop an import: the branch allocations are yielded
// out of their region but not out of the function (the lifetime analysis
// keeps them live to the end of the function).
func.func @branches(%c: i1) {
  %r = scf.if %c -> (memref<8xf32>) {
    %a = memref.alloc() : memref<8xf32>
    scf.yield %a : memref<8xf32>
  } else {
    %b = memref.alloc() : memref<8xf32>
    scf.yield %b : memref<8xf32>
  }
  "test.op"(%r) : (memref<8xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @branches(%c: i1) {
// CHECK-NEXT:    %r = scf.if %c -> (memref<8xf32>) {
// CHECK-NEXT:      %a_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:      %a = memory.alloc_tensor %a_storage[0] : !memory.storage<32> -> memref<8xf32>
// CHECK-NEXT:      scf.yield %a : memref<8xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %b_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:      %b = memory.alloc_tensor %b_storage[0] : !memory.storage<32> -> memref<8xf32>
// CHECK-NEXT:      scf.yield %b : memref<8xf32>
// CHECK-NEXT:    }

// -----

// Inside an scf.for, an allocation used only within the iteration is
// imported (one static address serves every iteration); one carried to the
// next iteration through the iteration argument is left alone, because the
// next iteration's allocation would take the same address while it is live.
// An allocation outside the loop that is carried through it is imported.
func.func @loops(%lb: index, %ub: index, %st: index) {
  %init = memref.alloc() : memref<8xf32>
  %res = scf.for %i = %lb to %ub step %st iter_args(%acc = %init) -> (memref<8xf32>) {
    %tmp = memref.alloc() : memref<8xf32>
    "test.op"(%acc, %tmp) : (memref<8xf32>, memref<8xf32>) -> ()
    %next = memref.alloc() : memref<8xf32>
    "test.op"(%tmp, %next) : (memref<8xf32>, memref<8xf32>) -> ()
    scf.yield %next : memref<8xf32>
  }
  "test.op"(%res) : (memref<8xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @loops(
// CHECK-NEXT:    %init_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:    %init = memory.alloc_tensor %init_storage[0] : !memory.storage<32> -> memref<8xf32>
// CHECK-NEXT:    %res = scf.for %i = %lb to %ub step %st iter_args(%acc = %init) -> (memref<8xf32>) {
// CHECK-NEXT:      %tmp_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:      %tmp = memory.alloc_tensor %tmp_storage[0] : !memory.storage<32> -> memref<8xf32>
// CHECK-NEXT:      "test.op"(%acc, %tmp) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:      %next = memref.alloc() : memref<8xf32>

// -----

// Loop-carried through a control-flow cycle: %a reaches ^loop's argument and
// ^loop branches back to the block that allocates, so it is left alone. %b,
// allocated before the cycle, is imported.
func.func @cfg_cycle(%c: i1) {
  %b = memref.alloc() : memref<4xf32>
  cf.br ^loop
^loop:
  %a = memref.alloc() : memref<4xf32>
  cf.br ^body(%a : memref<4xf32>)
^body(%x: memref<4xf32>):
  "test.op"(%x, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  cf.cond_br %c, ^loop, ^exit
^exit:
  func.return
}

// CHECK-LABEL: func.func @cfg_cycle(%c: i1) {
// CHECK-NEXT:    %b_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %b = memory.alloc_tensor %b_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    cf.br ^loop
// CHECK-NEXT:  ^loop:
// CHECK-NEXT:    %a = memref.alloc() : memref<4xf32>

// -----

// Regions that may run in parallel (scf.parallel, ops memplan does not
// know) would share one static address between instances: left alone.
func.func @parallel(%lb: index, %ub: index, %st: index) {
  "scf.parallel"(%lb, %ub, %st) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %a = memref.alloc() : memref<4xf32>
    "test.op"(%a) : (memref<4xf32>) -> ()
    "scf.reduce"() : () -> ()
  }) : (index, index, index) -> ()
  "unknown.region"() ({
    %b = memref.alloc() : memref<4xf32>
    "test.op"(%b) : (memref<4xf32>) -> ()
  }) : () -> ()
  func.return
}

// CHECK-LABEL: func.func @parallel(
// CHECK:           %a = memref.alloc() : memref<4xf32>
// CHECK:           %b = memref.alloc() : memref<4xf32>

// -----

// Left alone for their type or for how they are freed: a layout, a memory
// space, an element without a fixed bit width, zero bytes, a dealloc of a
// value that may be either of two buffers, a dealloc memplan does not model
// (bufferization.dealloc), an address taken as an index. memref.alloca and
// memref.global are never touched.
"memref.global"() <{sym_name = "g", sym_visibility = "private", type = memref<4xf32>, initial_value}> : () -> ()
func.func @unsupported(%c: i1) -> index {
  %l = memref.alloc() : memref<4x4xf32, strided<[8, 1]>>
  %s = memref.alloc() : memref<4xf32, 1>
  %x = memref.alloc() : memref<4xindex>
  %z = memref.alloc() : memref<0xf32>
  %p = memref.alloc() : memref<4xf32>
  %q = memref.alloc() : memref<4xf32>
  %pq = arith.select %c, %p, %q : memref<4xf32>
  memref.dealloc %pq : memref<4xf32>
  %o = memref.alloc() : memref<4xf32>
  "bufferization.dealloc"(%o, %c) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<4xf32>, i1) -> ()
  %t = memref.alloc() : memref<4xf32>
  %ptr = "memref.extract_aligned_pointer_as_index"(%t) : (memref<4xf32>) -> index
  %stack = memref.alloca() : memref<4xf32>
  %glob = memref.get_global @g : memref<4xf32>
  "test.op"(%l, %s, %x, %z, %stack, %glob) : (memref<4x4xf32, strided<[8, 1]>>, memref<4xf32, 1>, memref<4xindex>, memref<0xf32>, memref<4xf32>, memref<4xf32>) -> ()
  func.return %ptr : index
}

// CHECK-LABEL: func.func @unsupported(
// CHECK-NOT:     memory.
// CHECK:         func.return

// -----

// The generic form mlir-opt 22 prints (`--mlir-print-op-generic`, with
// memref.alloc's two operand segments) is imported the same way.
"func.func"() <{function_type = (index) -> (), sym_name = "generic"}> ({
^bb0(%arg0: index):
  %0 = "memref.alloc"() <{alignment = 64 : i64, operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<4x16xf32>
  %1 = "memref.alloc"(%arg0) <{alignment = 64 : i64, operandSegmentSizes = array<i32: 1, 0>}> : (index) -> memref<?xf32>
  "test.op"(%0, %1) : (memref<4x16xf32>, memref<?xf32>) -> ()
  "memref.dealloc"(%1) : (memref<?xf32>) -> ()
  "func.return"() : () -> ()
}) : () -> ()

// CHECK-LABEL: func.func @generic(%arg0: index) {
// CHECK-NEXT:    %0 = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %1 = memory.alloc_tensor %0[0] : !memory.storage<256> -> memref<4x16xf32>
// CHECK-NEXT:    %2 = arith.constant 4 : index
// CHECK-NEXT:    %3 = arith.muli %2, %arg0 : index
// CHECK-NEXT:    %4 = memory.alloc_storage(%3) : !memory.storage<?>
// CHECK-NEXT:    %5 = memory.alloc_tensor %4[0](%arg0) : !memory.storage<?> -> memref<?xf32>
// CHECK-NEXT:    "test.op"(%1, %5) : (memref<4x16xf32>, memref<?xf32>) -> ()
// CHECK-NEXT:    memory.kill %4 : !memory.storage<?>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
