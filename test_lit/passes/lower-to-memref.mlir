// RUN: memplan-opt %s --lower-to-memref --split-input-file --verify-diagnostics | filecheck %s
// RUN: memplan-opt %s --lower-to-memref='pool-mode=alloc' --split-input-file --verify-diagnostics | filecheck %s
// RUN: memplan-opt %s --lower-to-memref='pool-mode=arg' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ARG
// RUN: memplan-opt %s --lower-to-memref='pool-mode=global' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=GLOBAL

// A bounded pool becomes one memref<1024xi8> buffer (its size). Its
// alignment is 64: the largest of the pool's 16 and its storages' 64. Each
// tensor is a memref.view at storage offset + tensor offset: %t at 128 + 64 =
// 192, %u at 128 + 0. Invokes become destination-passing calls (ins, then
// outs) keeping their attributes; kills vanish. alloc mode: allocated at
// entry, freed before the return. arg mode: a leading argument carrying the
// pool's name and alignment. global mode: a private memref.global named like
// the pool, read at entry.
memory.pool @sram size 1024
func.func private @relu(memref<16xf32>, memref<16xf32>)
func.func @pinned(%x: memref<16xf32>) {
  %s = memory.alloc_storage at @sram[128] : !memory.storage<128>
  %t = memory.alloc_tensor %s[64] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @relu ins(%x : memref<16xf32>) outs(%t : memref<16xf32>) {alpha = 2 : i64}
  %u = memory.alloc_tensor %s[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @relu ins(%t : memref<16xf32>) outs(%u : memref<16xf32>)
  memory.kill %t : memref<16xf32>
  memory.kill %s : !memory.storage<128>
  func.return
}

// CHECK-NOT:   memory.pool
// CHECK-LABEL: func.func @pinned(%x: memref<16xf32>) {
// CHECK-NEXT:    %sram = memref.alloc() {alignment = 64 : i64} : memref<1024xi8>
// CHECK-NEXT:    %0 = arith.constant 192 : index
// CHECK-NEXT:    %t = memref.view %sram[%0][] : memref<1024xi8> to memref<16xf32>
// CHECK-NEXT:    func.call @relu(%x, %t) {alpha = 2 : i64} : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    %1 = arith.constant 128 : index
// CHECK-NEXT:    %u = memref.view %sram[%1][] : memref<1024xi8> to memref<16xf32>
// CHECK-NEXT:    func.call @relu(%t, %u) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %sram : memref<1024xi8>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// ARG-LABEL:   func.func @pinned(%sram: memref<1024xi8> {memory.pool = "sram", llvm.align = 64 : i64}, %x: memref<16xf32>) {
// ARG-NEXT:      %0 = arith.constant 192 : index
// ARG-NEXT:      %t = memref.view %sram[%0][] : memref<1024xi8> to memref<16xf32>
// ARG-NEXT:      func.call @relu(%x, %t) {alpha = 2 : i64} : (memref<16xf32>, memref<16xf32>) -> ()
// ARG-NEXT:      %1 = arith.constant 128 : index
// ARG-NEXT:      %u = memref.view %sram[%1][] : memref<1024xi8> to memref<16xf32>
// ARG-NEXT:      func.call @relu(%t, %u) : (memref<16xf32>, memref<16xf32>) -> ()
// ARG-NEXT:      func.return
// ARG-NEXT:    }

// GLOBAL:        "memref.global"() <{sym_name = "sram", type = memref<1024xi8>, initial_value, sym_visibility = "private", alignment = 64 : i64}> : () -> ()
// GLOBAL-LABEL:  func.func @pinned(%x: memref<16xf32>) {
// GLOBAL-NEXT:     %sram = memref.get_global @sram : memref<1024xi8>
// GLOBAL-NEXT:     %0 = arith.constant 192 : index
// GLOBAL-NEXT:     %t = memref.view %sram[%0][] : memref<1024xi8> to memref<16xf32>

// -----

// A dynamic storage with a `max` bound pinned in a pool becomes a view at
// its static offset (1024) with its run-time dims, after a `cf.assert` that
// the size is within the 4096 bytes the plan reserved.
memory.pool @sram size 8192
func.func private @fill(memref<?xf32>)
func.func @bounded(%n: index) {
  %c4 = arith.constant 4 : index
  %bytes = arith.muli %n, %c4 : index
  %d = memory.alloc_storage(%bytes) max 4096 at @sram[1024] : !memory.storage<?>
  %t = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @fill outs(%t : memref<?xf32>)
  memory.kill %d : !memory.storage<?>
  func.return
}

// CHECK-LABEL: func.func @bounded(%n: index) {
// CHECK-NEXT:    %sram = memref.alloc() {alignment = 64 : i64} : memref<8192xi8>
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %bytes = arith.muli %n, %c4 : index
// CHECK-NEXT:    %[[BOUND:.*]] = arith.constant 4096 : index
// CHECK-NEXT:    %[[FITS:.*]] = arith.cmpi ule, %bytes, %[[BOUND]] : index
// CHECK-NEXT:    cf.assert %[[FITS]], "storage %d exceeds its bound of 4096 bytes"
// CHECK-NEXT:    %[[OFFSET:.*]] = arith.constant 1024 : index
// CHECK-NEXT:    %t = memref.view %sram[%[[OFFSET]]][%n] : memref<8192xi8> to memref<?xf32>
// CHECK-NEXT:    func.call @fill(%t) : (memref<?xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %sram : memref<8192xi8>

// -----

// An unbounded pool's buffer has the `used` size (3072 B); its own alignment
// (256) wins over the storage's 64. Two functions using it each get their own
// buffer in alloc mode; a function with several returns frees it before each.
// A dynamic tensor offset is added to the storage's (512 + %off); dynamic
// dims become the view's sizes.
memory.pool @dram align 256 used 3072
func.func @unbounded(%off: index, %n: index, %c: i1) {
  %s = memory.alloc_storage at @dram[512] : !memory.storage<2048>
  %t = memory.alloc_tensor %s[%off](%n) : !memory.storage<2048> -> memref<?xf32>
  "test.op"(%t) : (memref<?xf32>) -> ()
  cf.cond_br %c, ^a, ^b
^a:
  func.return
^b:
  func.return
}
func.func @other() {
  %s = memory.alloc_storage at @dram[0] : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  "test.op"(%t) : (memref<16xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @unbounded(%off: index, %n: index, %c: i1) {
// CHECK-NEXT:    %dram = memref.alloc() {alignment = 256 : i64} : memref<3072xi8>
// CHECK-NEXT:    %0 = arith.constant 512 : index
// CHECK-NEXT:    %1 = arith.addi %0, %off : index
// CHECK-NEXT:    %t = memref.view %dram[%1][%n] : memref<3072xi8> to memref<?xf32>
// CHECK-NEXT:    "test.op"(%t) : (memref<?xf32>) -> ()
// CHECK-NEXT:    cf.cond_br %c, ^a, ^b
// CHECK-NEXT:  ^a:
// CHECK-NEXT:    memref.dealloc %dram : memref<3072xi8>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  ^b:
// CHECK-NEXT:    memref.dealloc %dram : memref<3072xi8>
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @other() {
// CHECK-NEXT:    %dram = memref.alloc() {alignment = 256 : i64} : memref<3072xi8>

// GLOBAL:        "memref.global"() <{sym_name = "dram", type = memref<3072xi8>, initial_value, sym_visibility = "private", alignment = 256 : i64}> : () -> ()

// -----

// Storages that are not pinned get their own allocation of i8 with their
// alignment; the view is at the tensor's own offset. A dynamic storage is
// freed at its kill. Without a kill: freed before the terminator of its
// block (%l before the scf.for body's yield; %e before the return, after
// every use of it and of %y, which may be it), unless a view of it flows
// through that terminator (%a is yielded out of the scf.if: not freed, as
// the memref.alloc it came from would not be). A static storage that was
// never pinned (no usmp ran) is lowered the same way.
func.func @own_allocations(%n: index, %c: i1, %lb: index, %ub: index) {
  %d = memory.alloc_storage(%n) align 32 : !memory.storage<?>
  %dt = memory.alloc_tensor %d[16] : !memory.storage<?> -> memref<4xf32>
  "test.op"(%dt) : (memref<4xf32>) -> ()
  memory.kill %d : !memory.storage<?>
  %e = memory.alloc_storage(%n) : !memory.storage<?>
  %et = memory.alloc_tensor %e[0](%n) : !memory.storage<?> -> memref<?xi8>
  "test.op"(%et) : (memref<?xi8>) -> ()
  scf.for %i = %lb to %ub step %lb {
    %l = memory.alloc_storage(%n) : !memory.storage<?>
    %lt = memory.alloc_tensor %l[0](%n) : !memory.storage<?> -> memref<?xi8>
    "test.op"(%lt) : (memref<?xi8>) -> ()
  }
  %y = scf.if %c -> (memref<?xi8>) {
    %a = memory.alloc_storage(%n) : !memory.storage<?>
    %at = memory.alloc_tensor %a[0](%n) : !memory.storage<?> -> memref<?xi8>
    scf.yield %at : memref<?xi8>
  } else {
    scf.yield %et : memref<?xi8>
  }
  "test.op"(%y) : (memref<?xi8>) -> ()
  %u = memory.alloc_storage align 128 : !memory.storage<256>
  %ut = memory.alloc_tensor %u[0] : !memory.storage<256> -> memref<64xf32>
  "test.op"(%ut) : (memref<64xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @own_allocations(%n: index, %c: i1, %lb: index, %ub: index) {
// CHECK-NEXT:    %d = memref.alloc(%n) {alignment = 32 : i64} : memref<?xi8>
// CHECK-NEXT:    %0 = arith.constant 16 : index
// CHECK-NEXT:    %dt = memref.view %d[%0][] : memref<?xi8> to memref<4xf32>
// CHECK-NEXT:    "test.op"(%dt) : (memref<4xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %d : memref<?xi8>
// CHECK-NEXT:    %e = memref.alloc(%n) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %1 = arith.constant 0 : index
// CHECK-NEXT:    %et = memref.view %e[%1][%n] : memref<?xi8> to memref<?xi8>
// CHECK-NEXT:    "test.op"(%et) : (memref<?xi8>) -> ()
// CHECK-NEXT:    scf.for %i = %lb to %ub step %lb {
// CHECK-NEXT:      %l = memref.alloc(%n) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:      %2 = arith.constant 0 : index
// CHECK-NEXT:      %lt = memref.view %l[%2][%n] : memref<?xi8> to memref<?xi8>
// CHECK-NEXT:      "test.op"(%lt) : (memref<?xi8>) -> ()
// CHECK-NEXT:      memref.dealloc %l : memref<?xi8>
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = scf.if %c -> (memref<?xi8>) {
// CHECK-NEXT:      %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:      %3 = arith.constant 0 : index
// CHECK-NEXT:      %at = memref.view %a[%3][%n] : memref<?xi8> to memref<?xi8>
// CHECK-NEXT:      scf.yield %at : memref<?xi8>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %et : memref<?xi8>
// CHECK-NEXT:    }
// CHECK-NEXT:    "test.op"(%y) : (memref<?xi8>) -> ()
// CHECK-NEXT:    %u = memref.alloc() {alignment = 128 : i64} : memref<256xi8>
// CHECK-NEXT:    %4 = arith.constant 0 : index
// CHECK-NEXT:    %ut = memref.view %u[%4][] : memref<256xi8> to memref<64xf32>
// CHECK-NEXT:    "test.op"(%ut) : (memref<64xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %e : memref<?xi8>
// CHECK-NEXT:    memref.dealloc %u : memref<256xi8>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// -----

// %e is returned: not freed (its owner is the caller), in every mode. In alloc mode the
// returned pinned storage %r cannot live in the function's buffer, which is
// freed at exit: it gets its own allocation (owned by the caller) and the
// pool's buffer is not even created. arg and global mode keep it in the pool.
memory.pool @sram size 256
func.func @returned(%n: index) -> (memref<16xf32>, memref<?xi8>) {
  %r = memory.alloc_storage at @sram[64] : !memory.storage<64>
  %rt = memory.alloc_tensor %r[0] : !memory.storage<64> -> memref<16xf32>
  %e = memory.alloc_storage(%n) : !memory.storage<?>
  %et = memory.alloc_tensor %e[0](%n) : !memory.storage<?> -> memref<?xi8>
  func.return %rt, %et : memref<16xf32>, memref<?xi8>
}

// CHECK-LABEL: func.func @returned(%n: index) -> (memref<16xf32>, memref<?xi8>) {
// CHECK-NEXT:    %r = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK-NEXT:    %0 = arith.constant 0 : index
// CHECK-NEXT:    %rt = memref.view %r[%0][] : memref<64xi8> to memref<16xf32>
// CHECK-NEXT:    %e = memref.alloc(%n) {alignment = 64 : i64} : memref<?xi8>
// CHECK-NEXT:    %1 = arith.constant 0 : index
// CHECK-NEXT:    %et = memref.view %e[%1][%n] : memref<?xi8> to memref<?xi8>
// CHECK-NEXT:    func.return %rt, %et : memref<16xf32>, memref<?xi8>

// ARG-LABEL:   func.func @returned(%sram: memref<256xi8> {memory.pool = "sram", llvm.align = 64 : i64}, %n: index) -> (memref<16xf32>, memref<?xi8>) {
// ARG-NEXT:      %0 = arith.constant 64 : index
// ARG-NEXT:      %rt = memref.view %sram[%0][] : memref<256xi8> to memref<16xf32>
// ARG-NEXT:      %e = memref.alloc(%n) {alignment = 64 : i64} : memref<?xi8>

// GLOBAL-LABEL: func.func @returned(%n: index) -> (memref<16xf32>, memref<?xi8>) {
// GLOBAL-NEXT:    %sram = memref.get_global @sram : memref<256xi8>
// GLOBAL-NEXT:    %0 = arith.constant 64 : index
// GLOBAL-NEXT:    %rt = memref.view %sram[%0][] : memref<256xi8> to memref<16xf32>

// -----

// Kernel signatures. @dps already takes (ins, outs) but with a dynamic dim:
// the operands are cast. @value is a value-semantic private declaration used
// only by invokes: it is rewritten to the destination-passing signature
// (scalars stay in `ins`).
func.func private @dps(memref<?xf32>, memref<?xf32>)
func.func private @value(tensor<4xf32>, i32) -> tensor<4xf32>
func.func @kernels(%x: memref<4xf32>, %y: memref<4xf32>, %k: i32) {
  memory.invoke @dps ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  memory.invoke @value ins(%x, %k : memref<4xf32>, i32) outs(%y : memref<4xf32>)
  func.return
}

// CHECK:       func.func private @dps(memref<?xf32>, memref<?xf32>) -> ()
// CHECK-NEXT:  func.func private @value(memref<4xf32>, i32, memref<4xf32>) -> ()
// CHECK-LABEL: func.func @kernels(%x: memref<4xf32>, %y: memref<4xf32>, %k: i32) {
// CHECK-NEXT:    %0 = "memref.cast"(%x) : (memref<4xf32>) -> memref<?xf32>
// CHECK-NEXT:    %1 = "memref.cast"(%y) : (memref<4xf32>) -> memref<?xf32>
// CHECK-NEXT:    func.call @dps(%0, %1) : (memref<?xf32>, memref<?xf32>) -> ()
// CHECK-NEXT:    func.call @value(%x, %k, %y) : (memref<4xf32>, i32, memref<4xf32>) -> ()
// CHECK-NEXT:    func.return

// -----

// arg mode: @caller pins nothing but calls @callee, which uses @a and @b, so
// it takes both (in module order, @a first) and passes them on; @leaf uses no
// pool and is unchanged. Existing argument attributes are kept.
memory.pool @a size 64
memory.pool @b size 64
func.func @callee(%x: memref<4xf32> {test.keep}) {
  %s = memory.alloc_storage at @b[0] : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  %p = memory.alloc_storage at @a[0] : !memory.storage<64>
  %q = memory.alloc_tensor %p[0] : !memory.storage<64> -> memref<16xf32>
  "test.op"(%t, %q) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}
func.func @leaf() {
  func.return
}
func.func @caller(%x: memref<4xf32>) {
  func.call @callee(%x) : (memref<4xf32>) -> ()
  func.call @leaf() : () -> ()
  func.return
}

// ARG-LABEL:   func.func @callee(%a: memref<64xi8> {memory.pool = "a", llvm.align = 64 : i64}, %b: memref<64xi8> {memory.pool = "b", llvm.align = 64 : i64}, %x: memref<4xf32> {test.keep}) {
// ARG-LABEL:   func.func @leaf() {
// ARG-LABEL:   func.func @caller(%a: memref<64xi8> {memory.pool = "a", llvm.align = 64 : i64}, %b: memref<64xi8> {memory.pool = "b", llvm.align = 64 : i64}, %x: memref<4xf32>) {
// ARG-NEXT:      func.call @callee(%a, %b, %x) : (memref<64xi8>, memref<64xi8>, memref<4xf32>) -> ()
// ARG-NEXT:      func.call @leaf() : () -> ()

// CHECK-LABEL: func.func @caller(%x: memref<4xf32>) {
// CHECK-NEXT:    func.call @callee(%x) : (memref<4xf32>) -> ()

// -----

// A caller that pins storages in a pool and calls a function using the same
// pool. The plan is module-wide (the callee's storage at 64 does not overlap
// the caller's at 0), so arg and global mode share one buffer; alloc mode
// gives each call its own.
memory.pool @ws used 128
func.func @inner() {
  %s = memory.alloc_storage at @ws[64] : !memory.storage<64>
  func.return
}
func.func @outer() {
  %s = memory.alloc_storage at @ws[0] : !memory.storage<64>
  func.call @inner() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @inner() {
// CHECK-NEXT:    %ws = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK-NEXT:    memref.dealloc %ws : memref<128xi8>
// CHECK-LABEL: func.func @outer() {
// CHECK-NEXT:    %ws = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK-NEXT:    func.call @inner() : () -> ()
// CHECK-NEXT:    memref.dealloc %ws : memref<128xi8>

// ARG-LABEL:   func.func @outer(%ws: memref<128xi8> {memory.pool = "ws", llvm.align = 64 : i64}) {
// ARG-NEXT:      func.call @inner(%ws) : (memref<128xi8>) -> ()

// GLOBAL-LABEL: func.func @inner() {
// GLOBAL-NEXT:    %ws = memref.get_global @ws : memref<128xi8>
// GLOBAL-LABEL: func.func @outer() {
// GLOBAL-NEXT:    %ws = memref.get_global @ws : memref<128xi8>
// GLOBAL-NEXT:    func.call @inner() : () -> ()

// -----

// An unbounded pool that was never planned has no size to allocate.
memory.pool @dram
func.func @unplanned() {
  %s = memory.alloc_storage at @dram[0] : !memory.storage<64>
  func.return
}

// CHECK: pool @dram has neither a size nor a used size: run usmp first, or give the pool a size
// ARG: pool @dram has neither a size nor a used size: run usmp first, or give the pool a size

// -----

// A storage pinned past what the plan says the pool uses (a stale plan):
// the alloc_storage verifier refuses it before the pass runs.
memory.pool @dram used 128
func.func @stale() {
  %s = memory.alloc_storage at @dram[128] : !memory.storage<64>
  func.return
}

// CHECK: storage %s: bytes [128, 192) run past the used size of pool @dram (128 bytes)

// -----

// A kernel with a body whose signature does not take (ins, outs).
func.func @not_dps(%x: memref<4xf32>) -> memref<4xf32> {
  func.return %x : memref<4xf32>
}
func.func @bad_kernel(%x: memref<4xf32>, %y: memref<4xf32>) {
  memory.invoke @not_dps ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  func.return
}

// CHECK: invoke of @not_dps passes 2 operands (ins then outs) but @not_dps has type (memref<4xf32>) -> memref<4xf32>

// -----

// Two invokes of one value-semantic declaration that disagree on its
// destination-passing signature.
func.func private @k(tensor<4xf32>) -> tensor<4xf32>
func.func @disagree(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<8xf32>) {
  memory.invoke @k ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  memory.invoke @k ins(%x : memref<4xf32>) outs(%z : memref<8xf32>)
  func.return
}

// CHECK: invokes of @k disagree on the kernel's signature: (memref<4xf32>, memref<8xf32>) -> () vs (memref<4xf32>, memref<4xf32>) -> ()

// -----

// Invoke of a symbol that is not a function.
func.func @missing(%x: memref<4xf32>) {
  memory.invoke @nowhere ins(%x : memref<4xf32>)
  func.return
}

// CHECK: invoke of @nowhere: no func.func @nowhere in the module

// -----

// A storage used by an op this pass cannot rewrite.
func.func @foreign_use() {
  %s = memory.alloc_storage : !memory.storage<64>
  "test.op"(%s) : (!memory.storage<64>) -> ()
  func.return
}

// CHECK: storage %s is used by test.op, which lower-to-memref cannot rewrite
